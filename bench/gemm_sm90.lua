-- bench/gemm_sm90.lua: the Hopper GEMMs (issue 11) against the baselines that
-- bench/tc_baselines.py measured on the same GPU in the same run.
--   python3 bench/tc_baselines.py 4096 8192 > tc_baselines.json
--   cuteluajit bench/gemm_sm90.lua tc_baselines.json [sizes...]
-- Rows: examples/gemm_sm90.lua (bf16, C = A B^T, both K-major) per tile configuration
-- and consumer schedule (cooperative; "pp": ping-pong) vs cuBLAS (torch.matmul) and Triton's autotuned matmul; examples/gemm_fp8_sm90.lua
-- (e4m3 in, bf16 out) vs torch._scaled_mm; then each kernel's cold compile time
-- (trace -> PTX -> cubin, the disk cache off) against Triton's autotuned first call.
-- Timing: bench/timing.lua (warm >= 200 ms, L2 flushed before every sample, medians).
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local timing = dofile(here .. "timing.lua")

if not timing.gpu() then return end
local dev = cute.device(0)
if dev.cc[1] < 9 then
  print(("bench/gemm_sm90.lua needs an sm_90 GPU; this is %s (cc %d.%d)"):format(dev.name, dev.cc[1], dev.cc[2]))
  return
end
local base, sizes = timing.gemm_args(arg)
timing.gemm_header("benchmark (TFLOP/s)")
local row = timing.row
local tm = timing.new()

local function cfg_name(g)
  local c = g.cfg
  return ("%dx%dx%d s%d c%d%s%s"):format(c.bm, c.bn, c.bk, c.stages, c.cluster_m,
    c.schedule == "pingpong" and " pp" or "", c.peel and " peel" or "")
end

-- bf16
local sm90 = ex.load("gemm_sm90")
-- cooperative (both consumer warpgroups on one 128 x BN tile), then ping-pong (one
-- warpgroup per tile, "pp": BM x BN is one warpgroup's tile); "peel": k-tile 0 as a copy
-- before the k-loop (compiles slower, docs/HOPPER.md "Compile time"): its row says whether
-- the default's single loop costs speed
local CONFIGS = { { bn = 256 }, { bn = 128 }, { bn = 256, cluster_m = 1 }, { bn = 256, peel = true },
  { schedule = "pingpong", bm = 64, bn = 256 }, { schedule = "pingpong", bm = 128, bn = 128 },
  { schedule = "pingpong", bm = 64, bn = 256, cluster_m = 1 } }
for _, n in ipairs(sizes) do
  local A, B, Cm = ex.square_operands(n, cute.bfloat16)
  local target = n >= 8192 and ">= 1.0x" or ">= 0.95x"
  for _, cfg in ipairs(CONFIGS) do
    local g = sm90.make_gemm(cfg)
    local t = tm:tflops("sm90", n, function() g.launch(A, B, Cm, 1, 0) end)
    local label = ("bf16 %d^3 sm90 %s"):format(n, cfg_name(g))
    row(label, t, "cuBLAS (torch.matmul)", base["bf16_" .. n], target)
    row(label, t, "Triton autotuned", base["triton_auto_bf16_" .. n], "")
  end
  A:free(); B:free(); Cm:free()
end

-- fp8 e4m3 -> bf16, per-tensor scales (1, 1)
local fp8 = ex.load("gemm_fp8_sm90")
for _, n in ipairs(sizes) do
  local A, B, Cm = ex.square_operands(n, cute.float8_e4m3fn, cute.bfloat16)
  for _, cfg in ipairs({ { bn = 256 }, { bn = 128 }, { bn = 256, cluster_m = 1 }, { bn = 256, peel = true },
    { schedule = "pingpong", bm = 64, bn = 256 }, { schedule = "pingpong", bm = 128, bn = 128 } }) do
    local g = fp8.make_gemm(cfg)
    local t = tm:tflops("fp8", n, function() g.launch(A, B, Cm, 1, 1) end)
    local label = ("fp8 %d^3 sm90 %s"):format(n, cfg_name(g))
    row(label, t, "torch._scaled_mm", base["fp8_" .. n], ">= 0.9x")
    row(label, t, "_scaled_mm fast accum", base["fp8_fast_" .. n], "")
  end
  A:free(); B:free(); Cm:free()
end

-- cold compile: a fresh kernel object (trace -> IR -> LLVM -> PTX -> cubin), no disk cache
local function compile_ms(g)
  local n = 512
  local A = cute.zeros({ n, n }, g.ab_dtype)
  local t0 = cute.now_us()
  local k, _, ta, mA, tb, mB, c, al, be = g.args(A, A, cute.zeros({ n, n }, g.c_dtype), 1, 0)
  -- keep = "ptx": what a launch keeps (no LLVM text printed; k:compile's default prints it)
  local r = k:with{ cache = false, use_ptxas = true, keep = "ptx" }:compile(ta, mA, tb, mB, c, al, be)
  local ms = (cute.now_us() - t0) / 1e3
  A:free()
  return ms, r
end
for _, spec in ipairs({ { "bf16 sm90 128x256", sm90, { bn = 256 } }, { "bf16 sm90 128x256 peel", sm90, { bn = 256, peel = true } },
  { "fp8 sm90 128x256", fp8, { bn = 256 } },
  { "bf16 sm90 pingpong 64x256", sm90, { schedule = "pingpong", bm = 64, bn = 256 } } }) do
  local g = spec[2].make_gemm(spec[3])
  local ms, r = compile_ms(g)
  print(("cold compile %-24s %8.1f ms  (%d registers, %d spill bytes)   target <= 200 ms; Triton autotuned first call %s ms")
    :format(spec[1], ms, r.info.regs or -1, (r.info.spill_stores or 0) + (r.info.spill_loads or 0),
      base.triton_auto_first_call_ms_4096 and ("%.0f"):format(base.triton_auto_first_call_ms_4096) or "-"))
end
