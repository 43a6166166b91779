-- Launchers and half-precision scalar parameters on the GPU (lua/cute/launch.lua),
-- checked against CPU references on random data.  Every test is tagged #gpu;
-- without a GPU each one is pending.
local cute = require("cute")
local f32, f16, bf16 = cute.float32, cute.float16, cute.bfloat16
local gpu_it = dofile("spec/support/util.lua").gpu_it

local seed = 4242
local function rand(n)
  local t = {}
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[i] = 2 * seed / 2147483648 - 1
  end
  return t
end

describe("launchers on the GPU", function()
  gpu_it("launchers of one kernel keep their own grids", function()
    local k = cute.kernel(function(Out)
      local b, t = cute.arch.block_idx(), cute.arch.thread_idx()
      Out[b * 32 + t] = b + 1
    end)
    local l2 = k:launch{ grid = 2, block = 32 }
    local l5 = k:launch{ grid = 5, block = 32 }
    local outs = {}
    for i, l in ipairs({ l2, l5, l2, l5 }) do
      outs[i] = cute.zeros({ 8 * 32 }, cute.int32)
      l(outs[i])
    end
    cute.synchronize()
    for i, blocks in ipairs({ 2, 5, 2, 5 }) do
      local h = outs[i]:to_host()
      for j = 0, 8 * 32 - 1 do
        local b = math.floor(j / 32)
        local want = b < blocks and b + 1 or 0
        assert.equal(want, h[j], ("launch %d, element %d"):format(i, j))
      end
    end
    assert.equal(1, k.traces)
  end)

  gpu_it("a kernel collected while its launch may still run: unloaded safely, the result is there", function()
    local n, iters = 256, 200000
    local Out = cute.zeros({ n }, cute.int32)
    local make = function()
      return cute.kernel(function(O, m)
        local i = cute.arch.thread_idx()
        local s = 0
        for j = 1, m do s = (s * 3 + j) % 1000003 end
        O[i] = s + i
      end)
    end
    local k = make()
    k:launch{ grid = 1, block = n }(Out, cute.Int32(iters))
    k = nil
    collectgarbage(); collectgarbage()              -- the module unloads here
    cute.synchronize()
    local want = 0
    for j = 1, iters do want = (want * 3 + j) % 1000003 end
    local h = Out:to_host()
    for i = 0, n - 1 do assert.equal(want + i, h[i], i) end
    -- and kernels made afterwards load and run
    for r = 1, 20 do
      local kr = make()
      kr:launch{ grid = 1, block = n }(Out, cute.Int32(r))
    end
    collectgarbage(); collectgarbage()
    cute.synchronize()
    want = 0
    for j = 1, 20 do want = (want * 3 + j) % 1000003 end
    assert.equal(want + 5, Out:to_host()[5])
  end)

  gpu_it("out[i] = x * a[i] with x a cute.Float16 and a cute.BFloat16 scalar", function()
    local n = 4096
    local k = cute.kernel(function(x, A, Out)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      Out[i] = x * A[i]
    end)
    for _, c in ipairs({ { f16, cute.Float16, cute.float_to_half, cute.half_to_float },
                         { bf16, cute.BFloat16, cute.float_to_bf16, cute.bf16_to_float } }) do
      local dt, ctor, to_bits, from_bits = c[1], c[2], c[3], c[4]
      local a = rand(n)
      local A, Out = cute.from_host(a, dt, { n }), cute.zeros({ n }, dt)
      local ha = A:to_host()
      for _, x in ipairs({ 1.5, -0.3337, 3.14159 }) do
        k:launch{ grid = n / 256, block = 256 }(ctor(x), A, Out)
        local ho = Out:to_host()
        local xr = from_bits(to_bits(x))                      -- x as the kernel sees it
        for i = 0, n - 1 do
          -- the product of two 16-bit values is exact in float32: one rounding
          local want = to_bits(xr * from_bits(ha[i]))
          if ho[i] ~= want then
            error(("%s: x = %g, a[%d] = %g: got bits 0x%04x, want 0x%04x"):format(dt.name, x, i,
              from_bits(ha[i]), ho[i], want))
          end
        end
      end
      assert.equal(c[1] == f16 and 1 or 2, k.traces)
    end
  end)

  gpu_it("f16 and bf16 scalars converted to float32 inside the kernel", function()
    local n = 1024
    local k = cute.kernel(function(x, y, A, Out)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      Out[i] = A[i] * cute.Float32(x) + cute.Float32(y)
    end)
    local a = rand(n)
    local A, Out = cute.from_host(a, f32, { n }), cute.zeros({ n }, f32)
    local ha = A:to_host()
    local x, y = 0.1, -7.3
    k:launch{ grid = n / 128, block = 128 }(cute.Float16(x), cute.BFloat16(y), A, Out)
    local ho = Out:to_host()
    local xr, yr = cute.half_to_float(cute.float_to_half(x)), cute.bf16_to_float(cute.float_to_bf16(y))
    local ref = require("ffi").new("float[3]")
    for i = 0, n - 1 do
      ref[0] = ha[i] * xr                -- mul.rn.f32 (exact in double, one rounding)
      ref[1] = ref[0] + yr               -- add.rn.f32 (or one fused rounding: fma)
      local fused = ha[i] * xr + yr
      ref[2] = fused
      assert.is_true(ho[i] == ref[1] or ho[i] == ref[2], ("element %d: %.9g, want %.9g"):format(i, ho[i], ref[1]))
    end
  end)
end)
