-- bench/autotune_sweep.lua: issue 13's 24-config sweep of the tensor-core bf16
-- GEMM (examples/gemm_bf16.lua make_gemm{bm, bn, warps_m, warps_n, stages};
-- its tile K is 64, one 128-byte swizzled row of bf16) through cute.autotune.
--   cuteluajit bench/autotune_sweep.lua [N] [workers]
-- Prints, with the disk cache off (CUTE_CACHE=0: every config compiles):
--   * the compile stage with 1 worker and with `workers` (default: all cores):
--     wall time of trace + compile, the sum of the per-config compile times,
--     and the speed-up;
--   * per-config trace and compile times (ms);
--   * with a GPU: the whole sweep end to end (trace, compile, load, check,
--     time), its total wall time, the results table and the best config's
--     TFLOP/s at N x N x N.  Without a GPU: the compile stage only (specs).
-- Machine-readable lines start with "AUTOTUNE " (tools/gpu_autotune.sh keeps them).
local ffi = require("ffi")
pcall(ffi.cdef, "int setenv(const char *, const char *, int);")
if os.getenv("CUTE_CACHE") == nil then ffi.C.setenv("CUTE_CACHE", "0", 1) end -- (before any cute.kernel is made)
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local N = tonumber(arg[1]) or 8192
local WORKERS = tonumber(arg[2]) or require("cute.ffi").C.cute_compile_pool_cpus()

local ex = dofile(here .. "../examples/common.lua")
local gemm = ex.load("gemm_bf16")

-- 2 x 2 x 3 x 2 = 24 configs
local CONFIGS = {}
for _, bm in ipairs({ 128, 256 }) do
  for _, bn in ipairs({ 128, 256 }) do
    for _, w in ipairs({ { 2, 2 }, { 2, 4 }, { 4, 2 } }) do
      for _, stages in ipairs({ 3, 4 }) do
        CONFIGS[#CONFIGS + 1] = { bm = bm, bn = bn, warps_m = w[1], warps_n = w[2], stages = stages }
      end
    end
  end
end

local gpu = cute.available()
local bf16 = cute.bfloat16
local args
if gpu then
  local A, B, Cm = ex.square_operands(N, bf16)
  args = { A, B, Cm, 1, 0 }
else
  args = { cute.tensor_spec({ N, N }, bf16), cute.tensor_spec({ N, N }, bf16), cute.tensor_spec({ N, N }, bf16), 1, 0 }
end
-- the launch as gemm_bf16.lua makes it (run-time shapes: one compile per config)
local function run(g, _, A, B, Cm, alpha, beta) return g.launch(A, B, Cm, alpha, beta) end

local function stage(workers)
  local r = cute.autotune{ kernel = gemm.make_gemm, run = run, configs = CONFIGS, args = args, workers = workers,
    compile_only = true }
  local sum_c, sum_t, ok = 0, 0, 0
  for _, x in ipairs(r.results) do
    sum_c = sum_c + (x.compile_ms or 0)
    sum_t = sum_t + (x.trace_ms or 0)
    if x.status == "compiled" then ok = ok + 1 end
  end
  return r, sum_c, sum_t, ok
end

print(("bench/autotune_sweep.lua: %d configs of gemm_bf16 (bm, bn, warps, stages; BK 64), N = %d, %s, %d CPUs")
  :format(#CONFIGS, N, gpu and "GPU" or "no GPU (compile stage only)", require("cute.ffi").C.cute_compile_pool_cpus()))
io.stdout:flush()
local r1, c1, t1, ok1 = stage(1)
local rp, cp, tp, okp = stage(WORKERS)
for i = 1, #CONFIGS do
  assert(r1.results[i].status == rp.results[i].status, "the same configs compile with 1 and " .. WORKERS .. " workers")
  local a, b = r1.results[i].kernels, rp.results[i].kernels
  if a and b then assert(a[1].ptx_sha256 == b[1].ptx_sha256, "the same PTX with 1 and " .. WORKERS .. " workers") end
end
print(("compile stage (trace + compile), 1 worker:  %8.0f ms wall; traces %.0f ms, compiles %.0f ms summed; %d/%d compiled")
  :format(r1.compile_wall_ms, t1, c1, ok1, #CONFIGS))
print(("compile stage (trace + compile), %d workers: %8.0f ms wall; traces %.0f ms, compiles %.0f ms summed; %d/%d compiled")
  :format(WORKERS, rp.compile_wall_ms, tp, cp, okp, #CONFIGS))
print(("speed-up of the compile stage: %.2fx with %d workers (sequential trace+compile one after another: %.0f ms)")
  :format(r1.compile_wall_ms / rp.compile_wall_ms, WORKERS, t1 + c1))
print(("AUTOTUNE compile_wall_ms_1=%.1f compile_wall_ms_%d=%.1f speedup=%.3f sum_compile_ms=%.1f sum_trace_ms=%.1f")
  :format(r1.compile_wall_ms, WORKERS, rp.compile_wall_ms, r1.compile_wall_ms / rp.compile_wall_ms, c1, t1))
print("per config (1 worker): trace ms, compile ms, status")
for _, x in ipairs(r1.results) do
  local c = x.config
  print(("  %3dx%3d warps %dx%d stages %d: %7.1f %8.1f  %s%s"):format(c.bm, c.bn, c.warps_m, c.warps_n, c.stages,
    x.trace_ms or 0, x.compile_ms or 0, x.status, x.reason and (" (" .. x.reason .. ")") or ""))
end
io.stdout:flush()

if gpu then
  local wall0 = ffi.C.cute_cuda_now_us()
  local r = cute.autotune{ kernel = gemm.make_gemm, run = run, configs = CONFIGS, args = args, workers = WORKERS,
    outputs = { 3 }, rtol = 0.05, atol = 0.5, warmup_ms = 100, reps = 20, flops = 2 * N ^ 3,
    csv = os.getenv("OUT") and (os.getenv("OUT") .. "/autotune_sweep.csv") or nil }
  local wall = (ffi.C.cute_cuda_now_us() - wall0) / 1e3
  print(r:table())
  print(("whole sweep (trace, compile, load, check, time %d configs): %.0f ms; compile stage %.0f ms, benchmark %.0f ms")
    :format(#CONFIGS, wall, r.compile_wall_ms, r.bench_ms or 0))
  if r.best then
    local b = r.results[r.best_index]
    print(("best: bm %d bn %d warps %dx%d stages %d: %.4f ms, %.1f TFLOP/s"):format(r.best.bm, r.best.bn,
      r.best.warps_m, r.best.warps_n, r.best.stages, b.ms, b.tflops))
    print(("AUTOTUNE sweep_ms=%.1f best_ms=%.4f best_tflops=%.2f"):format(wall, b.ms, b.tflops))
  end
end
