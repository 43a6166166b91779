-- Vector add, C = A + B, fp32: each thread moves 16 bytes (one float4) per
-- step of a grid-stride loop.  Checks against a CPU reference on random data.
--   cuteluajit examples/vector_add.lua [n]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local _ = cute._

local n = tonumber(arg[1]) or 2 ^ 24
assert(n % 4 == 0, "n must be a multiple of 4")

local vadd = cute.kernel(function(A, B, C)
  local tid = cute.arch.thread_idx()
  local bid = cute.arch.block_idx()
  local bdim = cute.arch.block_dim()
  local gdim = cute.arch.grid_dim()
  -- view each vector as (4, n/4): column v holds elements 4v .. 4v+3
  local gA, gB, gC = cute.zipped_divide(A, { 4 }), cute.zipped_divide(B, { 4 }), cute.zipped_divide(C, { 4 })
  local a, b, c = cute.make_fragment(4, cute.float32), cute.make_fragment(4, cute.float32),
    cute.make_fragment(4, cute.float32)
  for v in cute.range(bid * bdim + tid, cute.size(gA, 1), gdim * bdim) do
    cute.copy(gA[{ _, v }], a)          -- one 16-byte load
    cute.copy(gB[{ _, v }], b)
    for i in cute.range_constexpr(4) do c[i] = a[i] + b[i] end
    cute.copy(c, gC[{ _, v }])          -- one 16-byte store
  end
end)

-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = vadd } end

if not ex.gpu() then
  local spec = cute.tensor_spec({ n }, cute.float32)
  local r = vadd:compile(spec, spec, spec)
  print(r.ptx)
  print(("compiled for %s: IR build %.0f us, LLVM opt %.0f us, PTX emit %.0f us"):format(
    r.arch, r.times.lower, r.times.optimise, r.times.emit_ptx))
  return
end

local ha, hb = ex.rand_floats(n), ex.rand_floats(n)
local A = cute.from_host(ha, cute.float32, { n })
local B = cute.from_host(hb, cute.float32, { n })
local C = cute.empty({ n }, cute.float32)
C:fill(0 / 0) -- poison: every element must be written
-- the loop strides by the whole grid; a grid that gives each thread one float4
-- measured fastest on an H100 (docs/BENCHMARKS.md), any grid is correct
local grid = math.min(math.ceil(n / 4 / 256), 2 ^ 31 - 1)

local t0 = cute.now_us()
vadd:launch{ grid = grid, block = 256 }(A, B, C)
cute.synchronize()
print(("first call (trace, compile, load, launch): %.1f ms"):format((cute.now_us() - t0) / 1e3))

local hc = C:to_host()
ex.check("vector_add", ex.rel_error(hc, function(i) return ha[i] + hb[i] end, n), 1e-6)

local ms = ex.time_ms(function() vadd:launch{ grid = grid, block = 256 }(A, B, C) end, 20)
print(("vector_add n=%d: %.3f ms, %.0f GB/s"):format(n, ms, 3 * 4 * n / ms / 1e6))
