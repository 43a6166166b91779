-- bench/kernels.lua: the GPU benchmarks of the tracing DSL (issue 4).
--   cuteluajit bench/kernels.lua [baselines.json]
-- Each line prints our figure, the baseline measured in the same run, and the
-- ratio.  Baselines: a raw C cuLaunchKernel loop in this process (launch
-- overhead), our runtime's device-to-device copy (transpose), and, when a JSON
-- file from bench/baselines.py is given, PyTorch's add / sum / softmax / fp32
-- matmul (cuBLAS) timed on the same GPU in the same run.
local cute = require("cute")
local ffi = require("ffi")
local C = require("cute.ffi").C

local here = (arg[0]:match("(.*/)") or "./")
local exdir = here .. "../examples/"
local ex = dofile(exdir .. "common.lua")
local timing = dofile(here .. "timing.lua")

if not timing.gpu() then return end

-- baselines from PyTorch (optional)
local base = timing.json_numbers(arg[1])

local load_example = ex.load_kernel

local rows = {}
-- ratio: ours / baseline for rates (higher is better); for times, also
-- ours / baseline ("1.10x raw" = 10% slower than the baseline)
local function row(name, ours, unit, basename, baseval, target, higher_is_better, ratio)
  ratio = ratio or (baseval and ours / baseval or nil)
  rows[#rows + 1] = { name, ours, unit, basename or "-", baseval, ratio, target }
  print(("%-34s %12.3f %-8s %-26s %12s %8s  %s"):format(name, ours, unit, basename or "-",
    baseval and ("%.3f"):format(baseval) or "-", ratio and ("%.3fx"):format(ratio) or "-", target or ""))
  io.stdout:flush()
end

local dev = cute.device(0)
print(("device: %s, %d SMs, cc %d.%d; %s"):format(dev.name, dev.sm_count, dev.cc[1], dev.cc[2], jit.version))
print(("%-34s %12s %-8s %-26s %12s %8s  %s"):format("benchmark", "ours", "unit", "baseline", "baseline", "ratio", "target"))

---------------------------------------------------------------------------
-- 1. launch overhead: k:launch back to back vs raw C cuLaunchKernel
---------------------------------------------------------------------------
do
  local noop = cute.kernel(function(A, flag)
    local i = cute.arch.thread_idx()
    cute.if_then(i == flag, function() A[0] = 1.0 end)
  end, { name = "noop" })
  local A = cute.zeros({ 16 }, cute.float32)
  local flag = cute.Int32(123456)
  local cfg = { grid = 1, block = 32 }
  noop:launch(cfg)(A, flag)
  cute.synchronize()
  local n = 20000
  local best_lua, best_kept, best_c = math.huge, math.huge, math.huge
  local entry = noop:entry(A, flag)
  if os.getenv("CUTE_JITV") then require("jit.v").on(os.getenv("CUTE_JITV")) end
  for rep = 1, 5 do
    local t0 = cute.now_us()
    for _ = 1, n do noop:launch(cfg)(A, flag) end
    local t1 = cute.now_us()
    cute.synchronize()
    best_lua = math.min(best_lua, (t1 - t0) / n)
    local l = noop:launch(cfg)            -- a launcher kept (each k:launch makes its own)
    t0 = cute.now_us()
    for _ = 1, n do l(A, flag) end
    t1 = cute.now_us()
    cute.synchronize()
    best_kept = math.min(best_kept, (t1 - t0) / n)
    local total, enq = ffi.new("double[1]"), ffi.new("double[1]")
    local err = ffi.new("cute_err[1]")
    assert(C.cute_cuda_bench_raw_launch(entry.fn, n, 1, 1, 1, 32, 1, 1, 0, nil, entry.params, total, enq, err) == 0,
      ffi.string(err[0].msg))
    best_c = math.min(best_c, enq[0] / n)
  end
  if os.getenv("CUTE_JITV") then require("jit.v").off() end
  row("launch overhead k:launch (us)", best_lua, "us", "raw C cuLaunchKernel", best_c, "<= 1.05x raw C")
  row("launch overhead kept launcher (us)", best_kept, "us", "raw C cuLaunchKernel", best_c, "<= 1.05x raw C")
end

-- 2. first-call latency: see bench/first_call.lua (needs a fresh process)

---------------------------------------------------------------------------
-- 3. bandwidth kernels against PyTorch / copy
---------------------------------------------------------------------------
-- bench/timing.lua: warm-up of 200 ms per kernel after the first (compiling)
-- call, L2 flushed before every sample, >= 50 rounds, medians with min..max
local function gbps(bytes, ms) return bytes / ms / 1e6 end
local tm = timing.new()
-- the spread under a row: min..max of the rate over the rounds
local function spread(res, work, unit)
  print(("    %s"):format(timing.line(res, work, unit)))
end
-- the same for a PyTorch baseline (bench/baselines.py writes key_min, key_max)
local function base_spread(key, unit)
  if base[key] and base[key .. "_min"] then
    print(("    %-30s median %.1f %s (min..max %.1f..%.1f, bench/baselines.py)"):format(
      "baseline " .. key, base[key], unit, base[key .. "_min"], base[key .. "_max"]))
  end
end

do -- vector add 2^28 fp32
  local n = 2 ^ 28
  local vadd = load_example("vector_add")
  local A, B, Cc = cute.empty({ n }, cute.float32), cute.empty({ n }, cute.float32), cute.empty({ n }, cute.float32)
  A:fill(1.0); B:fill(2.0)
  local grid = n / 4 / 256 -- one float4 per thread (bench/vadd_variants.lua)
  local r = tm:time("vector add", function() vadd:launch{ grid = grid, block = 256 }(A, B, Cc) end)
  row("vector add 2^28 fp32 (GB/s)", gbps(12 * n, r.ms.median), "GB/s", "torch.add", base.add_gbps, ">= 0.97x", true)
  spread(r, 12 * n / 1e6, "GB/s")
  base_spread("add_gbps", "GB/s")
  A:free(); B:free(); Cc:free()
end

do -- reduction 2^28 fp32
  local n = 2 ^ 28
  local reduce = load_example("reduce_sum")
  local X, Out = cute.empty({ n }, cute.float32), cute.zeros({ 1 }, cute.float32)
  X:fill(1.0)
  local grid = dev.sm_count * 4
  local r = tm:time("sum", function() reduce:launch{ grid = grid, block = 512 }(X, Out) end)
  row("sum 2^28 fp32 (GB/s)", gbps(4 * n, r.ms.median), "GB/s", "torch.sum", base.sum_gbps, ">= 0.9x", true)
  spread(r, 4 * n / 1e6, "GB/s")
  base_spread("sum_gbps", "GB/s")
  X:free()
end

do -- transpose 8192^2 vs device-to-device copy of the same bytes
  local M_, N_ = 8192, 8192
  local tr = load_example("transpose", { M_, N_ })
  local A, B = cute.empty({ M_, N_ }, cute.float32), cute.empty({ N_, M_ }, cute.float32)
  A:fill(1.0)
  -- ours and the copy alternate round by round; the ratio is the median of
  -- the per-round ratios (samples taken milliseconds apart)
  local cfg = { grid = { N_ / 32, M_ / 32 }, block = { 32, 8 } }
  local r = tm:compare({ { "transpose", function() tr:launch(cfg)(A, B) end },
                         { "D2D copy", function() B:copy_from(A) end } })
  local q = timing.ratio(r, 1, 2)
  local state = timing.gpu_state()
  row("transpose 8192^2 fp32 (GB/s)", gbps(8 * M_ * N_, r[1].ms.median), "GB/s", "D2D copy (cuMemcpyDtoD)",
    gbps(8 * M_ * N_, r[2].ms.median), ">= 0.9x", true, q.median)
  spread(r[1], 8 * M_ * N_ / 1e6, "GB/s")
  spread(r[2], 8 * M_ * N_ / 1e6, "GB/s")
  print("    " .. timing.ratio_line(r, 1, 2))
  if state then print("    " .. state) end
  A:free(); B:free()
end

do -- softmax rows of 4096
  local R, N = 16384, 4096
  local sm = load_example("softmax", { R, N })
  local X, Y = cute.empty({ R, N }, cute.float32), cute.empty({ R, N }, cute.float32)
  X:fill(0.5)
  local r = tm:time("softmax", function() sm:launch{ grid = R, block = 256 }(X, Y) end)
  row("softmax 16384x4096 fp32 (GB/s)", gbps(8 * R * N, r.ms.median), "GB/s", "torch.softmax", base.softmax_gbps, ">= 1.0x", true)
  spread(r, 8 * R * N / 1e6, "GB/s")
  base_spread("softmax_gbps", "GB/s")
  X:free(); Y:free()
end

do -- SGEMM 4096^3
  local S = 4096
  local gemm = load_example("sgemm_tiled", { S, S, S })
  local A, B, Cc = cute.empty({ S, S }, cute.float32), cute.empty({ S, S }, cute.float32), cute.empty({ S, S }, cute.float32)
  A:fill(0.5); B:fill(0.25)
  local r = tm:time("sgemm tiled", function() gemm:launch{ grid = { S / 128, S / 128 }, block = 256 }(A, B, Cc) end)
  row("sgemm tiled 4096^3 fp32 (TFLOP/s)", 2 * S ^ 3 / r.ms.median / 1e9, "TFLOP/s", "cuBLAS fp32 (torch.mm)", base.sgemm_tflops,
    ">= 0.85x", true)
  spread(r, 2 * S ^ 3 / 1e9, "TFLOP/s")
  base_spread("sgemm_tflops", "TFLOP/s")
  local naive = load_example("sgemm_naive", { S, S, S })
  local r2 = tm:time("sgemm naive", function() naive:launch{ grid = { S / 16, S / 16 }, block = { 16, 16 } }(A, B, Cc) end,
    { min_rounds = 5, min_ms = 0 })
  row("sgemm naive 4096^3 fp32 (TFLOP/s)", 2 * S ^ 3 / r2.ms.median / 1e9, "TFLOP/s", "cuBLAS fp32 (torch.mm)", base.sgemm_tflops,
    "", true)
  spread(r2, 2 * S ^ 3 / 1e9, "TFLOP/s")
end
