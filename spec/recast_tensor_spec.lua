-- cute.recast_tensor (lua/cute/recast.lua): a kernel tensor's memory seen as another
-- dtype, with CuTe's recast_layout (upcast to wider elements, downcast to narrower);
-- the layouts, the element addresses (byte offsets) they give, the errors at the
-- user's line, and on the GPU (#gpu) bytes written as int8 read back as int32.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local layout = require("cute.layout")
local THIS = "spec/recast_tensor_spec.lua"
local i8, u8, i32, f32, f16 = cute.int8, cute.uint8, cute.int32, cute.float32, cute.float16

local function traced(f)
  local k = cute.kernel(function(X) f(X) end, { name = "recast" })
  return k, k:ir(cute.tensor_spec({ 64 }, i32))
end
local function expect_at(marker, f, ...)
  local e = util.err_of(f)
  assert.truthy(e:find(THIS .. ":" .. util.line_of(THIS, "-- <" .. marker .. ">") .. ": ", 1, true),
    "not at the user's line: " .. e)
  for _, w in ipairs({ ... }) do assert.truthy(e:find(w, 1, true), ("%q not in: %s"):format(w, e)) end
end

describe("cute.recast_tensor", function()
  it("recasts layouts as CuTe's recast_layout, every element at the same bytes", function()
    traced(function()
      local cases = {
        { { 4096 }, { 1 }, i8, i32, "(1024):(1)" },
        { { 64, 128 }, { 128, 1 }, i8, i32, "(64,32):(32,1)" },
        { { 16, 4 }, { 4, 1 }, f32, u8, "(16,16):(16,1)" },
        { { 4, 8 }, { 1, 4 }, f32, i8, "(16,8):(1,16)" },
        { { 8, 8 }, { 8, 1 }, f16, i32, "(8,4):(4,1)" },
        { { 32 }, { 1 }, i8, u8, "(32):(1)" },
        { { 3, 8 }, { 8, 1 }, i8, i32, "(3,2):(2,1)" },
      }
      for _, c in ipairs(cases) do
        local s = cute.make_shared_tensor(cute.make_layout(c[1], c[2]), c[3])
        local r = cute.recast_tensor(s, c[4])
        local L = layout.make_layout(r.layout.shape, r.layout.stride)
        assert.are.equal(c[5], tostring(L))
        assert.are.equal(require("cute.trace").dtype_ir[c[4].name], r.elem)
        -- the new elements cover exactly the old ones' bytes, each byte once
        local Lo = layout.make_layout(c[1], c[2])
        local ob, nb = c[3].size, c[4].size
        local old, new = {}, {}
        for i = 0, layout.size(Lo) - 1 do
          for b = 0, ob - 1 do old[Lo(i) * ob + b] = true end
        end
        local n = 0
        for i = 0, layout.size(L) - 1 do
          for b = 0, nb - 1 do
            assert.is_nil(new[L(i) * nb + b], "a byte twice")
            new[L(i) * nb + b] = true
            n = n + 1
          end
        end
        assert.are.same(old, new)
        assert.are.equal(layout.size(Lo) * ob, n)
      end
    end)
  end)

  it("errors: a swizzled or identity tensor, an unaligned start, a non-dtype", function()
    local function run(f) traced(f) end
    expect_at("R1", function() run(function()
      local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, i8)
      local s = cute.make_shared_tensor(cute.tile_to_shape(atom, { 8, 128 }, { 1, 2 }), i8)
      cute.recast_tensor(s, i32) -- <R1>
    end) end, "cute.recast_tensor:", "is swizzled")
    expect_at("R2", function() run(function()
      cute.recast_tensor(cute.make_identity_tensor({ 4, 4 }), i32) -- <R2>
    end) end, "cute.recast_tensor:", "is not a kernel tensor in memory")
    expect_at("R3", function() run(function()
      local s = cute.make_shared_tensor(cute.make_layout(64), i8)
      local v = cute.make_tensor(s, cute.make_layout({ 32, 2 }, { 1, 1 }))[{ cute._, 1 }]   -- from byte 1
      cute.recast_tensor(v, i32) -- <R3>
    end) end, "cute.recast_tensor:", "only known to be 1-byte aligned: int32 elements need 4 bytes")
    expect_at("R4", function() run(function()
      cute.recast_tensor(cute.make_shared_tensor(cute.make_layout(64), i8), "int33") -- <R4>
    end) end, "cute.recast_tensor: int33 is not a dtype")
    expect_at("R5", function() run(function()
      cute.recast_tensor(cute.make_shared_tensor(cute.make_layout({ 4, 6 }, { 6, 1 }), i8), i32) -- <R5>
    end) end, "cute.recast_tensor: the layout (4,6):(6,1)", "does not recast to int32")
  end)
end)

describe("cute.recast_tensor on the GPU", function()
  util.gpu_it("int8 bytes stored in shared memory read back as int32 words (little-endian)", function()
    local k = cute.kernel(function(X, Y)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(256), i8)
      s[t] = X[t]
      cute.arch.sync_threads()
      local w = cute.recast_tensor(s, i32)
      if t < 64 then Y[t] = w[t] end
    end, { name = "recast_gpu" })
    local hx = {}
    for i = 1, 256 do hx[i] = math.random(-128, 127) end
    local X = cute.from_host(hx, i8, { 256 })
    local Y = cute.zeros({ 64 }, i32)
    k:launch{ grid = 1, block = 256 }(X, Y)
    local y = Y:to_host()
    for i = 0, 63 do
      local w = 0
      for b = 3, 0, -1 do w = w * 256 + (hx[4 * i + b + 1] % 256) end
      assert.are.equal(bit.tobit(w), y[i], "word " .. i)
    end
  end)
end)
