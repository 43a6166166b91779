-- Shared memory (issue 8, item 7): dynamic shared tensors are successive
-- aligned regions of one buffer whose total is recorded (IR, compile result,
-- launch entry) and checked at launch; static shared memory is checked
-- against 48 KiB at trace time.  IR and PTX text only: no GPU needed.
local cute = require("cute")
local kernel = require("cute.kernel")
local f16, f32, u8, f64 = cute.float16, cute.float32, cute.uint8, cute.float64

local function has(s, pat) return s:find(pat, 1, true) ~= nil end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end
local this_file = debug.getinfo(1, "S").short_src
local spec = cute.tensor_spec({ 256 }, f32)

describe("dynamic shared memory", function()
  it("two dynamic shared tensors (f32 then f16) are successive regions; the total is recorded", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s1 = cute.make_dynamic_shared_tensor(cute.make_layout(64), f32)  -- bytes 0..255
      local s2 = cute.make_dynamic_shared_tensor(cute.make_layout(32), f16)  -- bytes 256..319
      s1[0] = A[t]
      s2[0] = A[t]
      cute.arch.sync_threads()
      A[t] = s1[1] + s2[1]
    end)
    local ir = k:ir(spec)
    assert.is_true(has(ir, "dynsmem=320"), ir)
    local r = k:compile(spec)
    assert.are.equal(320, r.info.smem_dynamic)
    -- s2[0] is 256 bytes in, s2[1] 258: never s1's bytes
    assert.is_true(has(r.ptx, "[cute_dyn_smem+256]"), r.ptx)
    assert.is_true(has(r.ptx, "[cute_dyn_smem+258]"), r.ptx)
    assert.is_true(has(r.ptx, "[cute_dyn_smem]"), r.ptx)
    assert.is_true(has(r.ptx, "[cute_dyn_smem+4]"), r.ptx)
  end)

  it("regions are aligned (16 bytes by default, or as asked), the element size at least", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local b = cute.make_dynamic_shared_tensor(cute.make_layout(3), u8)           -- 0..2
      local w = cute.make_dynamic_shared_tensor(cute.make_layout(2), f32)          -- 16..23
      local d = cute.make_dynamic_shared_tensor(cute.make_layout(4), f64, 128)     -- 128..159
      local h = cute.make_dynamic_shared_tensor(cute.make_layout(1), f16, 1)       -- 160..161
      b[2] = 1; w[1] = A[t]; d[3] = A[t]; h[0] = A[t]
    end)
    local r = k:compile(spec)
    assert.are.equal(162, r.info.smem_dynamic)
    assert.is_true(has(r.ptx, "[cute_dyn_smem+2]"), r.ptx)
    assert.is_true(has(r.ptx, "[cute_dyn_smem+20]"), r.ptx)
    assert.is_true(has(r.ptx, "[cute_dyn_smem+152]"), r.ptx)
    assert.is_true(has(r.ptx, "[cute_dyn_smem+160]"), r.ptx)
    assert.is_true(r.ptx:find("%.align 128 %.b8 cute_dyn_smem") ~= nil, r.ptx)
    local k2 = cute.kernel(function() cute.make_dynamic_shared_tensor(cute.make_layout(4), f32, 24) end)
    local e = err_of(k2.ir, k2)
    assert.is_true(has(e, this_file), e)
    assert.is_true(has(e, "alignment 24"), e)
  end)

  it("more than 227 KiB of dynamic shared memory is an error at the allocation", function()
    local line
    local k = cute.kernel(function()
      cute.make_dynamic_shared_tensor(cute.make_layout(40 * 1024), f32) -- 160 KiB
      line = debug.getinfo(1, "l").currentline + 1
      cute.make_dynamic_shared_tensor(cute.make_layout(20 * 1024), f32) -- +80 KiB
    end)
    local e = err_of(k.ir, k)
    assert.is_true(has(e, this_file .. ":" .. line), e)
    assert.is_true(has(e, "81920 bytes"), e)
    assert.is_true(has(e, "245760 bytes"), e)
    -- 200 KiB in one is fine (launch checks the device's limit)
    local k2 = cute.kernel(function() cute.make_dynamic_shared_tensor(cute.make_layout(50 * 1024), f32) end)
    assert.is_true(has(k2:ir(), "dynsmem=204800"))
  end)

  it("the launch size: omitted means the kernel's need; less than the need is an error at the user's line", function()
    local k = cute.kernel(function() end, { name = "needs_smem" })
    local entry = { dyn_smem = 1024 }
    assert.are.equal(1024, kernel.launch_smem(k, entry, {}))
    assert.are.equal(4096, kernel.launch_smem(k, entry, { smem = 4096 }))
    assert.are.equal(1024, kernel.launch_smem(k, entry, { smem = 1024 }))
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(kernel.launch_smem, k, entry, { smem = 0 })
    assert.is_false(ok)
    assert.is_true(has(e, this_file .. ":" .. line), e)
    assert.is_true(has(e, "needs_smem"), e)
    assert.is_true(has(e, "smem = 0 bytes"), e)
    assert.is_true(has(e, "1024 bytes"), e)
    e = err_of(kernel.launch_smem, k, entry, { smem = "lots" })
    assert.is_true(has(e, "lots"), e)
  end)
end)

describe("static shared memory", function()
  it("two 40 KiB buffers are refused at the second, naming both sizes", function()
    local line
    local k = cute.kernel(function(A)
      local a = cute.make_shared_tensor(cute.make_layout(10 * 1024), f32)
      line = debug.getinfo(1, "l").currentline + 1
      local b = cute.make_shared_tensor(cute.make_layout(10 * 1024), f32)
      a[0] = 1.0; b[0] = 2.0
    end)
    local e = err_of(k.ir, k, spec)
    assert.is_true(has(e, this_file .. ":" .. line), e)
    assert.is_true(has(e, "40960 bytes here plus 40960 bytes"), e)
    assert.is_true(has(e, "48 KiB"), e)
  end)

  it("up to 48 KiB in all is accepted; a third buffer crossing it is refused", function()
    local k = cute.kernel(function()
      local a = cute.make_shared_tensor(cute.make_layout(8 * 1024), f32)  -- 32 KiB
      local b = cute.make_shared_tensor(cute.make_layout(8 * 1024), f16)  -- 16 KiB
      a[0] = 1.0; b[0] = 2.0
    end)
    assert.is_true(has(k:ir(), "shared"))
    local k2 = cute.kernel(function()
      cute.make_shared_tensor(cute.make_layout(8 * 1024), f32)
      cute.make_shared_tensor(cute.make_layout(8 * 1024), f16)
      cute.make_shared_tensor(cute.make_layout(1), u8)
    end)
    local e = err_of(k2.ir, k2)
    assert.is_true(has(e, "1 bytes here plus 49152 bytes"), e)
    -- static and dynamic shared memory are counted apart (dynamic goes to 227 KiB)
    local k3 = cute.kernel(function()
      cute.make_shared_tensor(cute.make_layout(8 * 1024), f32)
      cute.make_dynamic_shared_tensor(cute.make_layout(16 * 1024), f32)
    end)
    assert.is_true(has(k3:ir(), "dynsmem=65536"))
  end)
end)

describe("register and local memory", function()
  it("a fragment over 512 KiB is refused at the user's line, naming its size", function()
    local line
    local k = cute.kernel(function()
      line = debug.getinfo(1, "l").currentline + 1
      cute.make_fragment(cute.make_layout(200000), f32)
    end)
    local e = err_of(k.ir, k)
    assert.is_true(has(e, this_file .. ":" .. line), e)
    assert.is_true(has(e, "cute.make_fragment: 200000 elements"), e)
    assert.is_false(has(e, "shared"), e)
  end)
end)
