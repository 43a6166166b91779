-- Row softmax of an (R, 4096) fp32 matrix: one block per row, the row kept in
-- registers (16-byte loads), max and sum reduced with warp shuffles and shared
-- memory, fast exp2.
--   cuteluajit examples/softmax.lua [rows] [cols]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local _ = cute._

local R, N = tonumber(arg[1]) or 8192, tonumber(arg[2]) or 4096
local THREADS = 256
local VEC = 4
local PER = N / (THREADS * VEC) -- float4 chunks per thread
assert(PER % 1 == 0, "cols must be a multiple of 1024")
local WARPS = THREADS / 32
local LOG2E = 1.4426950408889634

local function block_reduce(x, op, scratch, lane, warp)
  for k in cute.range_constexpr(0, 5) do
    x = op(x, cute.arch.shuffle_sync_bfly(x, 2 ^ (4 - k)))
  end
  cute.if_then(lane == 0, function() scratch[warp] = x end)
  cute.arch.sync_threads()
  local y = scratch[0]
  for w in cute.range_constexpr(1, WARPS) do y = op(y, scratch[w]) end
  cute.arch.sync_threads()
  return y
end

local softmax = cute.kernel(function(X, Y)
  local tid = cute.arch.thread_idx()
  local row = cute.arch.block_idx()
  local lane, warp = cute.arch.lane_idx(), cute.div(tid, 32)
  -- this row as (VEC, chunks): chunk c = elements 4c..4c+3; thread t owns chunks t, t+THREADS, ...
  local xr = cute.zipped_divide(X[{ row, _ }], { VEC })
  local yr = cute.zipped_divide(Y[{ row, _ }], { VEC })
  local v = cute.make_fragment(cute.make_layout({ VEC, PER }), cute.float32)
  for p in cute.range_constexpr(PER) do
    cute.copy(xr[{ _, tid + p * THREADS }], v[{ _, p }])
  end
  local scratch = cute.make_shared_tensor(WARPS, cute.float32)
  local m = v[0]
  for i in cute.range_constexpr(1, VEC * PER) do m = cute.max(m, v[i]) end
  m = block_reduce(m, cute.max, scratch, lane, warp)
  local s = 0.0
  local mscaled = m * LOG2E
  for i in cute.range_constexpr(VEC * PER) do
    local e = cute.math.exp2(v[i] * LOG2E - mscaled, true)
    v[i] = e
    s = s + e
  end
  s = block_reduce(s, function(a, b) return a + b end, scratch, lane, warp)
  local inv = 1.0 / s
  for i in cute.range_constexpr(VEC * PER) do v[i] = v[i] * inv end
  for p in cute.range_constexpr(PER) do
    cute.copy(v[{ _, p }], yr[{ _, tid + p * THREADS }])
  end
end)

-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = softmax } end

if not ex.gpu() then
  print(softmax:ptx(cute.tensor_spec({ R, N }, cute.float32), cute.tensor_spec({ R, N }, cute.float32)))
  return
end

local hx = ex.rand_floats(R * N, -4, 4)
local X = cute.from_host(hx, cute.float32, { R, N })
local Y = cute.empty({ R, N }, cute.float32)
Y:fill(0 / 0)
softmax:launch{ grid = R, block = THREADS }(X, Y)
local hy = Y:to_host()
-- CPU reference in double precision, rows checked: all
local num, den = 0, 0
for r = 0, R - 1 do
  local base = r * N
  local mx = -math.huge
  for j = 0, N - 1 do mx = math.max(mx, hx[base + j]) end
  local sum = 0
  for j = 0, N - 1 do sum = sum + math.exp(hx[base + j] - mx) end
  for j = 0, N - 1 do
    local ref = math.exp(hx[base + j] - mx) / sum
    local d = hy[base + j] - ref
    if hy[base + j] ~= hy[base + j] then num = math.huge end
    num = num + d * d; den = den + ref * ref
  end
end
ex.check("softmax", math.sqrt(num / den), 1e-5)
local ms = ex.time_ms(function() softmax:launch{ grid = R, block = THREADS }(X, Y) end)
print(("softmax %dx%d: %.3f ms, %.0f GB/s"):format(R, N, ms, 2 * 4 * R * N / ms / 1e6))
