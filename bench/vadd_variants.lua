-- bench/vadd_variants.lua: vector add fp32 at 2^28, several schedules, to pick
-- the one examples/vector_add.lua uses.  cuteluajit bench/vadd_variants.lua
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "../examples/common.lua")
local _ = cute._
local f32 = cute.float32
if not cute.available() then print("needs a GPU"); return end

local n = 2 ^ 28
local dev = cute.device(0)

local function body_loop(ILP)
  return cute.kernel(function(A, B, C)
    local tid, bid = cute.arch.thread_idx(), cute.arch.block_idx()
    local bdim, gdim = cute.arch.block_dim(), cute.arch.grid_dim()
    local gA, gB, gC = cute.zipped_divide(A, { 4 }), cute.zipped_divide(B, { 4 }), cute.zipped_divide(C, { 4 })
    local nv = cute.size(gA, 1)
    local stride = gdim * bdim
    local a = cute.make_fragment(cute.make_layout({ 4, ILP }), f32)
    local b = cute.make_fragment(cute.make_layout({ 4, ILP }), f32)
    -- main part: ILP float4s per thread per step, all loads before the stores
    for v in cute.range(bid * bdim + tid, nv, stride * ILP) do
      for u in cute.range_constexpr(ILP) do
        cute.copy(gA[{ _, v + u * stride }], a[{ _, u }])
        cute.copy(gB[{ _, v + u * stride }], b[{ _, u }])
      end
      for i in cute.range_constexpr(4 * ILP) do a[i] = a[i] + b[i] end
      for u in cute.range_constexpr(ILP) do cute.copy(a[{ _, u }], gC[{ _, v + u * stride }]) end
    end
  end, { name = "vadd_ilp" .. ILP })
end

local flat = cute.kernel(function(A, B, C)
  local v = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  local gA, gB, gC = cute.zipped_divide(A, { 4 }), cute.zipped_divide(B, { 4 }), cute.zipped_divide(C, { 4 })
  local a, b = cute.make_fragment(4, f32), cute.make_fragment(4, f32)
  cute.copy(gA[{ _, v }], a)
  cute.copy(gB[{ _, v }], b)
  for i in cute.range_constexpr(4) do a[i] = a[i] + b[i] end
  cute.copy(a, gC[{ _, v }])
end, { name = "vadd_flat" })

local A, B, C = cute.empty({ n }, f32), cute.empty({ n }, f32), cute.empty({ n }, f32)
A:fill(1.0); B:fill(2.0)
local function report(label, fn)
  local ms = ex.time_ms(fn, 20)
  print(("%-40s %8.3f ms %8.0f GB/s"):format(label, ms, 12 * n / ms / 1e6))
end
local example = ex.load_kernel("vector_add")
for _, mult in ipairs({ 8, 32 }) do
  report("example kernel, grid = SMs x " .. mult, function() example:launch{ grid = dev.sm_count * mult, block = 256 }(A, B, C) end)
end
for _, per in ipairs({ 1, 2, 4, 8 }) do
  local g = n / 4 / 256 / per
  report(("example kernel, %d float4 per thread (grid %d)"):format(per, g), function() example:launch{ grid = g, block = 256 }(A, B, C) end)
end
for _, ilp in ipairs({ 2, 4 }) do
  local k = body_loop(ilp)
  -- the main loop assumes n/4 divisible by ILP * grid * block
  for _, g in ipairs({ 512, 1024, 2048 }) do
    if (n / 4) % (ilp * g * 256) == 0 then
      report(("ILP %d, grid %d x 256"):format(ilp, g), function() k:launch{ grid = g, block = 256 }(A, B, C) end)
    end
  end
end
report("one float4 per thread, no loop", function() flat:launch{ grid = n / 4 / 256, block = 256 }(A, B, C) end)
