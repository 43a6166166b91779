-- bench/gemm_compile.lua: the bf16 GEMM's compile time from a cold process:
-- trace -> IR -> LLVM -> PTX -> cubin (ptxas, or the driver's JIT) -> loaded.
--   cuteluajit bench/gemm_compile.lua [ptxas|jit]   (run each in a fresh process;
--   CUDA_CACHE_DISABLE=1 keeps the driver's own cache out of the JIT figure)
-- Target (issue 10): <= 150 ms; Triton's first matmul call: 589 ms.
local t0 = require("cute").now_us()
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local mode = arg[1] or "ptxas"
local m = dofile(here .. "../examples/common.lua").load("gemm_bf16_arch")
local g = m.make_gemm{ bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 }
local k = g.kernel:with{ use_ptxas = mode == "ptxas", cache = false } -- (the compile, not the disk cache: bench/cache.lua)
local dyn = function(t) return cute.dynamic(t, { index_bits = 32 }) end
local have_gpu = cute.available()
local n = 512
local A = have_gpu and cute.zeros({ n, n }, cute.bfloat16) or cute.tensor_spec({ n, n }, cute.bfloat16)
local t1 = cute.now_us()
-- k:compile traces and compiles (cached: the k:entry after it only loads)
local res = k:compile(dyn(A), dyn(A), dyn(A), cute.Float32(1), cute.Float32(0))
local tc = cute.now_us()
if have_gpu then k:entry(dyn(A), dyn(A), dyn(A), cute.Float32(1), cute.Float32(0)) end
local t2 = cute.now_us()
print(("gemm compile (%s%s): %.1f ms trace -> loaded (%.1f ms including require \"cute\" and the example)")
  :format(mode, have_gpu and "" or ", no GPU: up to the cubin", (t2 - t1) / 1e3, (t2 - t0) / 1e3))
local parts, staged = {}, 0
for _, s in ipairs({ "verify", "lower", "link", "optimise", "emit_ptx", "assemble" }) do
  if res.times[s] then
    parts[#parts + 1] = ("%s %.1f"):format(s, res.times[s] / 1e3)
    staged = staged + res.times[s]
  end
end
print(("  trace %.1f ms, stages (ms): %s; load %.1f ms"):format(((tc - t1) - staged) / 1e3,
  table.concat(parts, ", "), (t2 - tc) / 1e3))
