-- bench/gemm_tc.lua: tensor-core benchmarks (issue 10) against the baselines
-- bench/tc_baselines.py measured on the same GPU in the same run.
--   cuteluajit bench/gemm_tc.lua tc_baselines.json [sizes...]
-- Each line: our TFLOP/s (TOP/s for int8), the baseline, the ratio, the target.
-- Timing: bench/timing.lua (warm >= 200 ms, L2 flushed, medians).
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local timing = dofile(here .. "timing.lua")

if not timing.gpu() then return end
local base, sizes = timing.gemm_args(arg)
timing.gemm_header("benchmark (TFLOP/s; int8: TOP/s)")
local row = timing.row
local tm = timing.new()

-- bf16 GEMM, cute.arch version, C = A B^T (K-major A and B), the best tile of the sweep
local arch = ex.load("gemm_bf16_arch")
for _, n in ipairs(sizes) do
  local A, B, Cm = ex.square_operands(n, cute.bfloat16)
  for _, cfg in ipairs({ { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 },
                         { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 } }) do
    local g = arch.make_gemm(cfg)
    local t = tm:tflops("arch", n, function() g.launch(A, B, Cm, 1, 0) end)
    local label = ("bf16 %d^3 arch %dx%dx64 s%d"):format(n, cfg.bm, cfg.bn, cfg.stages)
    row(label, t, "cuBLAS (torch.matmul)", base["bf16_" .. n], ">= 0.6x")
    if cfg.bm == 128 and cfg.bn == 128 then row(label, t, "Triton 128x128x64 s4", base["triton_bf16_" .. n], ">= 1.0x") end
  end
  A:free(); B:free(); Cm:free()
end

-- bf16 GEMM, CuTe vocabulary (examples/gemm_bf16.lua: run-time M, N, K, one compile for all sizes)
local cutev = ex.load("gemm_bf16")
for _, n in ipairs(sizes) do
  local A, B, Cm = ex.square_operands(n, cute.bfloat16)
  local g = cutev.make_gemm{ bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 }
  local t = tm:tflops("cute", n, function() g.launch(A, B, Cm, 1, 0) end)
  row(("bf16 %d^3 CuTe TiledMMA 128x256x64 s4"):format(n), t, "cuBLAS (torch.matmul)", base["bf16_" .. n], ">= 0.6x")
  A:free(); B:free(); Cm:free()
end

-- tf32 and int8: the multistage GEMMs (examples/gemm_multistage.lua through
-- gemm_tf32_multistage.lua / gemm_int8_multistage.lua; static shapes, one compile
-- per size and tile).  tf32 reads f32 A and B (the tensor core truncates them to
-- tf32), int8 is int8 x int8 -> int32 as torch._int_mm.
local TILES = { { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 },
                { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 },
                { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4, prefetch_across = true } }
local function tile_name(c)
  return ("%dx%d s%d%s"):format(c.bm, c.bn, c.stages, c.prefetch_across and " pf" or "")
end
local tf32 = ex.load("gemm_tf32_multistage")
for _, n in ipairs(sizes) do
  local A, B, Cm = ex.square_operands(n, cute.float32)
  for _, cfg in ipairs(TILES) do
    local g = tf32.make_gemm(cfg)
    local t = tm:tflops("tf32", n, function() g.launch(A, B, Cm, 1, 0) end)
    row(("tf32 %d^3 multistage %s"):format(n, tile_name(cfg)), t, "cuBLAS tf32", base["tf32_" .. n], "")
  end
  A:free(); B:free(); Cm:free()
end
local int8 = ex.load("gemm_int8_multistage")
for _, n in ipairs(sizes) do
  local A, B = cute.zeros({ n, n }, cute.int8), cute.zeros({ n, n }, cute.int8)
  local Cm = cute.zeros({ n, n }, cute.int32)
  for ti = 1, 2 do -- (int8 with prefetch_across spills: its byte fragments cross the loop edge)
    local cfg = TILES[ti]
    local g = int8.make_gemm(cfg)
    local t = tm:tflops("int8", n, function() g.launch(A, B, Cm, 1, 0) end)
    row(("int8 %d^3 TOP/s multistage %s"):format(n, tile_name(cfg)), t, "torch._int_mm", base["int8_" .. n], "")
  end
  A:free(); B:free(); Cm:free()
end
