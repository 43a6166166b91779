-- Sum reduction of fp32: 16-byte loads in a grid-stride loop, warp shuffles,
-- per-warp partials in shared memory, one atomic add per block.
--   cuteluajit examples/reduce_sum.lua [n]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local _ = cute._

local n = tonumber(arg[1]) or 2 ^ 24
local THREADS = 512

local reduce = cute.kernel(function(X, Out)
  local tid = cute.arch.thread_idx()
  local bid = cute.arch.block_idx()
  local gdim = cute.arch.grid_dim()
  local gX = cute.zipped_divide(X, { 4 })
  local v = cute.make_fragment(4, cute.float32)
  local acc = cute.var(0.0, cute.float32)
  for j in cute.range(bid * THREADS + tid, cute.size(gX, 1), gdim * THREADS) do
    cute.copy(gX[{ _, j }], v)
    acc.value = acc.value + ((v[0] + v[1]) + (v[2] + v[3]))
  end
  -- warp reduce
  local s = acc.value
  for off in cute.range_constexpr(0, 5) do
    s = s + cute.arch.shuffle_sync_bfly(s, 2 ^ (4 - off))
  end
  local partial = cute.make_shared_tensor(THREADS / 32, cute.float32)
  local lane, warp = cute.arch.lane_idx(), cute.div(tid, 32)
  cute.if_then(lane == 0, function() partial[warp] = s end)
  cute.arch.sync_threads()
  cute.if_then(warp == 0, function()
    local t = cute.where(lane < THREADS / 32, partial[cute.min(lane, THREADS / 32 - 1)], 0.0)
    for off in cute.range_constexpr(0, 5) do
      t = t + cute.arch.shuffle_sync_bfly(t, 2 ^ (4 - off))
    end
    cute.if_then(lane == 0, function() cute.arch.atomic_add(Out, 0, t) end)
  end)
end)

-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = reduce } end

if not ex.gpu() then
  print(reduce:ptx(cute.tensor_spec({ n }, cute.float32), cute.tensor_spec({ 1 }, cute.float32)))
  return
end

local hx = ex.rand_floats(n)
local X = cute.from_host(hx, cute.float32, { n })
local Out = cute.zeros({ 1 }, cute.float32)
local grid = cute.device(0).sm_count * 4
reduce:launch{ grid = grid, block = THREADS }(X, Out)
local got = Out:to_host()[0]
local ref, abs = 0, 0
for i = 0, n - 1 do ref = ref + hx[i]; abs = abs + math.abs(hx[i]) end
-- fp32 summation error is relative to the sum of magnitudes
local err = math.abs(got - ref) / abs
print(("sum = %.6f, reference %.6f"):format(got, ref))
ex.check("reduce_sum", err, 1e-6)
local ms = ex.time_ms(function()
  Out:fill(0)
  reduce:launch{ grid = grid, block = THREADS }(X, Out)
end)
print(("reduce_sum n=%d: %.3f ms (incl. a 4-byte memset), %.0f GB/s"):format(n, ms, 4 * n / ms / 1e6))
