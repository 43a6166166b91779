-- SAXPY, y = a*x + y, fp32, one element per thread; `a` is a runtime scalar
-- (cute.Float32(a): changing it does not recompile).
--   cuteluajit examples/saxpy.lua [n]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")

local n = tonumber(arg[1]) or 2 ^ 24

local saxpy = cute.kernel(function(a, X, Y)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  cute.if_then(i < cute.size(X), function()
    Y[i] = a * X[i] + Y[i]
  end)
end)

-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = saxpy } end

if not ex.gpu() then
  local spec = cute.tensor_spec({ n }, cute.float32)
  print(saxpy:ptx(cute.Float32(2), spec, spec))
  return
end

local hx, hy = ex.rand_floats(n), ex.rand_floats(n)
local X = cute.from_host(hx, cute.float32, { n })
local Y = cute.from_host(hy, cute.float32, { n })
local a = 1.5
local block = 256
local grid = math.ceil(n / block)
saxpy:launch{ grid = grid, block = block }(cute.Float32(a), X, Y)
local out = Y:to_host()
ex.check("saxpy", ex.rel_error(out, function(i) return a * hx[i] + hy[i] end, n), 1e-6)
-- a second value of `a` reuses the compiled kernel
local traces = saxpy.traces
saxpy:launch{ grid = grid, block = block }(cute.Float32(-0.5), X, Y)
assert(saxpy.traces == traces, "a runtime scalar must not retrace")
local ms = ex.time_ms(function() saxpy:launch{ grid = grid, block = block }(cute.Float32(a), X, Y) end)
print(("saxpy n=%d: %.3f ms, %.0f GB/s"):format(n, ms, 3 * 4 * n / ms / 1e6))
