-- Loading and launching kernels without a GPU (lua/cute/launch.lua): the
-- whole path runs for real -- trace, compile to PTX, the parameter writer,
-- the generated launchers -- and only the driver is a stub (K._use_driver)
-- that records module loads and unloads, launches and their parameters.
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")
local rt = require("cute.runtime")
local util = dofile("spec/support/util.lua")
local f32 = cute.float32
local THIS = "spec/launch_spec.lua"
local has = util.has
local function line_of(marker) return util.line_of(THIS, marker) end

-- the stub driver
local stub = {}
local function reset_stub()
  stub.loads, stub.unloaded, stub.launches, stub.device, stub.smem_raised = {}, {}, {}, 0, {}
end
reset_stub()
local next_handle = 4096
local driver = {
  available = function() return true end,
  cute_cuda_module_load = function(image, size, is_ptx, out, log, log_size, err)
    next_handle = next_handle + 16
    out[0] = ffi.cast("void*", next_handle)
    stub.loads[#stub.loads + 1] = { handle = next_handle, text = is_ptx == 1 and ffi.string(image, size) or nil }
    return 0
  end,
  cute_cuda_module_get_function = function(mod, name, out, err)
    out[0] = ffi.cast("void*", ffi.cast("uintptr_t", mod) + 1)
    return 0
  end,
  cute_cuda_module_unload = function(h)
    stub.unloaded[tonumber(ffi.cast("uintptr_t", h))] = true
    return 0
  end,
  cute_cuda_launch = function(fn, gx, gy, gz, bx, by, bz, smem, stream, params, err)
    stub.launches[#stub.launches + 1] = { fn = tonumber(ffi.cast("uintptr_t", fn)), grid = { gx, gy, gz },
      block = { bx, by, bz }, smem = smem, stream = stream, params = params }
    return 0
  end,
  cute_cuda_launch_cluster = function(fn, gx, gy, gz, bx, by, bz, cx, cy, cz, smem, stream, params, err)
    stub.launches[#stub.launches + 1] = { fn = tonumber(ffi.cast("uintptr_t", fn)), grid = { gx, gy, gz },
      block = { bx, by, bz }, cluster = { cx, cy, cz }, smem = smem, stream = stream, params = params }
    return 0
  end,
  cute_cuda_func_set_max_dynamic_smem = function(fn, bytes)
    stub.smem_raised[#stub.smem_raised + 1] = bytes
    return 0
  end,
  cute_cuda_get_device = function(out) out[0] = stub.device; return 0 end,
  cute_cuda_set_device = function(i) stub.device = i; return 0 end,
}

setup(function() K._use_driver(driver) end)
teardown(function() K._use_driver(nil) end)
before_each(reset_stub)

local function dev(ptr, n, dt) return { ptr = ptr, shape = { n }, strides = { 1 }, dtype = dt or f32 } end
local function last() return stub.launches[#stub.launches] end
-- how many of the modules loaded since before_each are unloaded
local function unloads()
  local n = 0
  for _, m in ipairs(stub.loads) do if stub.unloaded[m.handle] then n = n + 1 end end
  return n
end
local function same(a, b) return table.concat(a, ",") == table.concat(b, ",") end

local scale = function(A, B)
  local i = cute.arch.thread_idx()
  B[i] = A[i] * 2
end

describe("launchers", function()
  it("every k:launch returns a launcher of its own configuration", function()
    local k = cute.kernel(scale)
    local A, B = dev(4096, 64), dev(8192, 64)
    local l1 = k:launch{ grid = 1, block = 32 }
    local l2 = k:launch{ grid = { 2, 3 }, block = 64 }
    assert.is_false(rawequal(l1, l2))
    l1(A, B); l2(A, B); l1(A, B); l2(A, B)
    assert.equal(4, #stub.launches)
    for i, want in ipairs({ { 1, 1, 1 }, { 2, 3, 1 }, { 1, 1, 1 }, { 2, 3, 1 } }) do
      assert.is_true(same(stub.launches[i].grid, want), i)
    end
    assert.is_true(same(stub.launches[1].block, { 32, 1, 1 }))
    assert.is_true(same(stub.launches[2].block, { 64, 1, 1 }))
    assert.equal(1, k.traces)
  end)

  it("a launcher keeps the configuration it was made with", function()
    local k = cute.kernel(scale)
    local A, B = dev(4096, 64), dev(8192, 64)
    local cfg = { grid = { 4 }, block = 128 }
    local l = k:launch(cfg)
    cfg.grid[1] = 9; cfg.block = 1
    for _ = 1, 3 do l(A, B) end                      -- the miss path, then the fast path
    for _, x in ipairs(stub.launches) do
      assert.is_true(same(x.grid, { 4, 1, 1 })); assert.is_true(same(x.block, { 128, 1, 1 }))
    end
    k(cfg, A, B)                                     -- the direct form reads cfg at the call
    assert.is_true(same(last().grid, { 9, 1, 1 })); assert.is_true(same(last().block, { 1, 1, 1 }))
  end)

  it("smem, stream and cluster reach the driver", function()
    local k = cute.kernel(scale)
    local A, B = dev(4096, 64), dev(8192, 64)
    local h = ffi.cast("void*", 77)
    for _ = 1, 2 do
      k:launch{ grid = 2, block = 32, smem = 1024, stream = h }(A, B)
      assert.equal(1024, last().smem)
      assert.equal(77, tonumber(ffi.cast("uintptr_t", last().stream)))
      k:launch{ grid = 2, block = 32 }(A, B)
      assert.equal(0, last().smem)
      assert.is_true(last().stream == nil)
      k:launch{ grid = 4, block = 32, cluster = 2 }(A, B)
      assert.is_true(same(last().cluster, { 2, 1, 1 }))
    end
    -- a stream object is read at each launch
    local s = setmetatable({ handle = ffi.cast("void*", 5) }, getmetatable(rt.default_stream))
    local l = k:launch{ grid = 1, block = 32, stream = s }
    l(A, B)
    assert.equal(5, tonumber(ffi.cast("uintptr_t", last().stream)))
    s.handle = ffi.cast("void*", 6)
    l(A, B)
    assert.equal(6, tonumber(ffi.cast("uintptr_t", last().stream)))
  end)

  it("dynamic shared memory above 48 KiB raises the kernel's limit once", function()
    local k = cute.kernel(scale)
    local A, B = dev(4096, 64), dev(8192, 64)
    local l = k:launch{ grid = 1, block = 32, smem = 64 * 1024 }
    l(A, B); l(A, B)
    assert.equal(1, #stub.smem_raised)
    assert.equal(64 * 1024, stub.smem_raised[1])
    assert.equal(64 * 1024, last().smem)
    k:launch{ grid = 1, block = 32, smem = 32 * 1024 }(A, B)     -- below the raised limit: the fast path
    assert.equal(1, #stub.smem_raised)
    assert.equal(32 * 1024, last().smem)
  end)

  it("a failed launch is an error at the user's line naming the kernel and the driver's message", function()
    local k = cute.kernel(scale, { name = "scale_k" })
    local A, B = dev(4096, 64), dev(8192, 64)
    local l = k:launch{ grid = 1, block = 32 }
    l(A, B)                                          -- loaded: the next calls take the fast path
    local saved = driver.cute_cuda_launch
    K._use_driver(setmetatable({ cute_cuda_launch = function(...)
      ffi.copy(require("cute.ffi").err[0].msg, "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (1)")
      return 1
    end }, { __index = driver }))
    for _, call in ipairs({ function() l(A, B) end, function() k({ grid = 1, block = 32 }, A, B) end }) do -- MARK-calls
      local ok, e = pcall(call)
      assert.is_false(ok)
      assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-calls") .. ":"), e)
      assert.is_truthy(has(e, "cute.kernel scale_k: launch failed: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"), e)
    end
    K._use_driver(driver)
    assert.equal(saved, driver.cute_cuda_launch)
  end)

  it("a bad configuration is an error at the k:launch line, naming the value", function()
    local k = cute.kernel(scale, { name = "scale_k" })
    local cases = {
      { { grid = 0, block = 32 }, "grid dims must be positive integers, got {0, 1, 1}" },
      { { grid = { 2, 1.5 }, block = 32 }, "grid dims must be positive integers, got {2, 1.5, 1}" },
      { { grid = 1, block = "x" }, "block dims x is not a number" },
      { { grid = 1, block = 32, smem = -1 }, "smem must be a number of bytes, got -1" },
      { { grid = 1, block = 32, stream = 5 }, "stream must be a cute.stream(), got 5" },
      { { grid = 1, block = 32, cluster = 0 }, "cluster dims must be positive integers" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(function()
        local l = k:launch(c[1]) -- MARK-badcfg
        return l
      end)
      assert.is_false(ok)
      assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-badcfg") .. ":"), e)
      assert.is_truthy(has(e, "cute.kernel scale_k launch"), e)
      assert.is_truthy(has(e, c[2]), e)
    end
    assert.equal(0, #stub.launches)
  end)

  it("tostring of a launcher: the kernel and its configuration on one line", function()
    local k = cute.kernel(scale, { name = "scale_k" })
    local s = tostring(k:launch{ grid = { 8, 2 }, block = 256 })
    assert.equal("cute.launcher(scale_k: grid {8,2,1}, block {256,1,1}, smem auto)", s)
    s = tostring(k:launch{ grid = 4, block = 32, cluster = { 2 }, smem = 4096 })
    assert.equal("cute.launcher(scale_k: grid {4,1,1}, block {32,1,1}, cluster {2,1,1}, smem 4096)", s)
  end)
end)

describe("modules", function()
  it("a kernel's binaries load through the runtime and unload when the kernel is collected", function()
    local k = cute.kernel(scale)
    local A, B = dev(4096, 64), dev(8192, 64)
    local l = k:launch{ grid = 1, block = 32 }
    l(A, B); l(A, B)
    l(dev(4096, 128), dev(8192, 128))                 -- another signature: another module
    assert.equal(2, #stub.loads)
    assert.is_truthy(has(stub.loads[1].text, ".entry"), stub.loads[1].text)
    assert.equal(stub.loads[1].handle + 1, stub.launches[1].fn)  -- its function is launched
    collectgarbage(); collectgarbage()
    assert.equal(0, unloads())                     -- still referenced
    k, l = nil, nil
    collectgarbage(); collectgarbage()
    assert.equal(2, unloads())
  end)

  it("an entry held by the caller keeps its module loaded", function()
    local k = cute.kernel(scale)
    local e = k:entry(dev(4096, 64), dev(8192, 64))
    assert.equal(1, #stub.loads)
    k = nil
    collectgarbage(); collectgarbage()
    assert.equal(0, unloads())
    assert.is_truthy(e.module.handle ~= nil)
    e = nil
    collectgarbage(); collectgarbage()
    assert.equal(1, unloads())
  end)
end)

describe("tostring of kernels", function()
  it("names the kernel, its parameters, specialisations, traces and options", function()
    local k = cute.kernel(scale, { name = "scale_k", opt_level = 2 })
    local s0 = tostring(k)
    assert.is_truthy(s0:find("^cute%.kernel scale_k%(A, B%): 0 specialisations, 0 traces, options "), s0)
    assert.is_truthy(has(s0, "opt_level"), s0)
    assert.is_falsy(s0:find("\n"), s0)
    k({ grid = 1, block = 32 }, dev(4096, 64), dev(8192, 64))
    k({ grid = 1, block = 32 }, dev(4096, 32), dev(8192, 32))
    assert.is_truthy(has(tostring(k), "2 specialisations, 2 traces"), tostring(k))
    local kv = cute.kernel(function(A, ...) end, { name = "va" })
    assert.is_truthy(has(tostring(kv), "cute.kernel va(A, ...)"), tostring(kv))
  end)
end)

describe("the cache is per device and per options", function()
  it("another current device (same target) loads again without tracing; going back does not load", function()
    local k = cute.kernel(scale)
    local A, B = dev(4096, 64), dev(8192, 64)
    local l = k:launch{ grid = 1, block = 32 }
    l(A, B); l(A, B)
    assert.equal(1, k.traces)
    cute.set_device(1)
    l(A, B); l(A, B)
    assert.equal(1, k.traces) -- (compiled once per arch, loaded per device: spec/multidevice_spec.lua)
    assert.equal(2, #stub.loads)
    assert.are_not.equal(stub.launches[2].fn, stub.launches[3].fn)
    cute.set_device(0)
    l(A, B)
    assert.equal(1, k.traces)
    assert.equal(2, #stub.loads)
    assert.equal(stub.launches[1].fn, last().fn)
  end)

  it("options changed after cute.kernel are an error at the next new call, not a stale binary", function()
    local k = cute.kernel(scale, { opt_level = 3 })
    k({ grid = 1, block = 32 }, dev(4096, 64), dev(8192, 64))
    local set = pcall(function() k.opts.opt_level = 0 end)
    if not (set and k.opts.opt_level == 0) then
      assert.is_true(not set or k.opts.opt_level == 3)  -- options that cannot change: nothing to go stale
      return
    end
    local ok, e = pcall(function()
      k({ grid = 1, block = 32 }, dev(4096, 32), dev(8192, 32)) -- MARK-opts
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-opts") .. ":"), e)
    assert.is_truthy(has(e, "options changed"), e)
  end)
end)

describe("f16 and bf16 scalar parameters", function()
  local axpy = function(x, y, A)
    local i = cute.arch.thread_idx()
    A[i] = A[i] * cute.Float32(x) + cute.Float32(y)
  end

  it("are f16 / bf16 IR parameters and 16-bit PTX parameters", function()
    local k = cute.kernel(axpy, { name = "axpy16" })
    local S = cute.tensor_spec({ 64 }, f32)
    local ir = k:ir(cute.Float16(2), cute.BFloat16(3), S)
    assert.is_truthy(has(ir, '%1: f16 "'), ir)
    assert.is_truthy(has(ir, '%2: bf16 "'), ir)
    local ptx = k:ptx(cute.Float16(2), cute.BFloat16(3), S)
    assert.is_truthy(has(ptx, ".param .align 2 .b8 axpy16_param_x[2]"), ptx)
    assert.is_truthy(has(ptx, "ld.param.b16"), ptx)
    assert.is_truthy(has(ptx, "cvt.f32.f16"), ptx)
    assert.is_truthy(has(ptx, "cvt.f32.bf16"), ptx)
  end)

  it("are written as their bits, rounded to nearest even; the value is not in the key", function()
    local k = cute.kernel(axpy)
    local A = dev(4096, 64)
    local cases = {  -- value, f16 bits, bf16 bits
      { 1, 0x3C00, 0x3F80 }, { -2, 0xC000, 0xC000 },
      { 65504, 0x7BFF, 0x4780 },                        -- bf16: 0x1.ffcp15 rounds up to 0x1p16
      { 1 + 2 ^ -11, 0x3C00, 0x3F80 },                  -- f16 tie: to even
      { 1 + 3 * 2 ^ -11, 0x3C02, 0x3F80 },              -- f16 tie: up to even
      { 1 + 3 * 2 ^ -8, 0x3C0C, 0x3F82 },               -- bf16 tie: up to even
      { 1 + 2 ^ -8, 0x3C04, 0x3F80 },                   -- bf16 tie: to even
      { 1e-7, 0x0002, 0x33D7 },                         -- f16 subnormal (2^-23 = 1.19e-7 -> 0x0002)
    }
    for _, c in ipairs(cases) do
      k({ grid = 1, block = 64 }, cute.Float16(c[1]), cute.BFloat16(c[1]), A)
      local p = last().params
      local h = ffi.cast("uint16_t*", p[0])[0]
      local b = ffi.cast("uint16_t*", p[1])[0]
      assert.equal(c[2], h, ("f16 of %.17g: 0x%04x"):format(c[1], h))
      assert.equal(c[3], b, ("bf16 of %.17g: 0x%04x"):format(c[1], b))
      assert.equal(4096, tonumber(ffi.cast("uint64_t*", p[2])[0]))
    end
    assert.equal(1, k.traces)
    assert.equal(#cases, #stub.launches)
  end)

  it("a finite value beyond the type's range is an error at the user's line; inf and nan pass", function()
    for _, c in ipairs({ { "Float16", 65520, "65504" }, { "Float16", -1e6, "65504" },
                         { "BFloat16", 3.4e38, "3.3895e38" } }) do
      local ok, e = pcall(function()
        local x = cute[c[1]](c[2]) -- MARK-range
        return x
      end)
      assert.is_false(ok)
      assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-range") .. ":"), e)
      assert.is_truthy(has(e, "cute." .. c[1] .. ": "), e)
      assert.is_truthy(has(e, "beyond the largest " .. c[1] .. " (" .. c[3] .. ")"), e)
    end
    assert.equal(65519, cute.Float16(65519).value)   -- (rounds down to 65504: no overflow)
    assert.equal(math.huge, cute.Float16(math.huge).value)
    local nan = cute.BFloat16(0 / 0).value
    assert.is_true(nan ~= nan)
  end)
end)

describe("switching the driver through cute.runtime", function()
  it("reaches the generated launchers too (a launcher made under a stand-in never calls it afterwards)", function()
    local k = cute.kernel(function(X) X[cute.arch.thread_idx()] = 1.0 end, { name = "driver_switch" })
    local X = dev(0x100000, 32)
    k:launch{ grid = 1, block = 32 }(X) -- (the launcher for 1 argument is made under `driver`)
    assert.equal(1, #stub.launches)
    local other = {}
    for name, f in pairs(driver) do other[name] = f end
    local seen = 0
    other.cute_cuda_launch = function() seen = seen + 1; return 0 end
    rt._use_driver(other) -- (the runtime's switch, as a spec that stubs only cute.runtime does)
    k:launch{ grid = 1, block = 32 }(X) -- (a miss: the device is asked again)
    k:launch{ grid = 1, block = 32 }(X) -- (a hit: the generated launcher)
    rt._use_driver(driver)
    k:launch{ grid = 1, block = 32 }(X)
    k:launch{ grid = 1, block = 32 }(X)
    assert.equal(2, seen)
    assert.equal(3, #stub.launches)
  end)
end)
