-- bench/gemm_sweep.lua: tile configurations of a bf16 GEMM example, timed alike.
--   cuteluajit bench/gemm_sweep.lua [gemm_bf16|gemm_bf16_arch] [N]
-- Each line: bm x bn, warps, stages, TFLOP/s at N^3 (bench/timing.lua).
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local timing = dofile(here .. "timing.lua")
if not timing.gpu() then return end
local name, n = arg[1] or "gemm_bf16", tonumber(arg[2]) or 8192
local m = ex.load(name)
local A, B, Cm = ex.square_operands(n, cute.bfloat16)
local tm = timing.new({ min_rounds = 20, min_ms = 200, warm_ms = 100 })
for _, c in ipairs({ { 128, 256, 2, 4, 4 }, { 128, 256, 2, 4, 3 }, { 256, 128, 4, 2, 4 }, { 256, 128, 4, 2, 3 },
                     { 128, 128, 2, 2, 3 }, { 128, 128, 2, 2, 4 }, { 128, 128, 2, 2, 5 }, { 128, 256, 4, 2, 3 } }) do
  local ok, g = pcall(m.make_gemm, { bm = c[1], bn = c[2], warps_m = c[3], warps_n = c[4], stages = c[5] })
  if ok then
    local ok2, r = pcall(function() return tm:time("g", function() g.launch(A, B, Cm, 1, 0) end) end)
    if ok2 then
      print(("%s %dx%d warps %dx%d stages %d: %.1f TFLOP/s"):format(name, c[1], c[2], c[3], c[4], c[5],
        2 * n ^ 3 / r.ms.median / 1e9))
    else
      print(("%s %dx%d warps %dx%d stages %d: %s"):format(name, c[1], c[2], c[3], c[4], c[5], tostring(r):sub(1, 200)))
    end
  else
    print(("%s %dx%d: %s"):format(name, c[1], c[2], tostring(g):sub(1, 200)))
  end
  io.stdout:flush()
end
