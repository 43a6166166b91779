-- The tensor-core GEMMs on the CPU target (docs/CPU_TARGET.md, "Tensor cores"):
-- best of reps single launches, after one that traces and prepares.
--   CUTE_TARGET=cpu taskset -c 0 cuteluajit bench/cpu_tc.lua [n=256] [reps=3]
local cute = require("cute")
local ex = dofile("examples/common.lua")
local n = tonumber(arg[1]) or 256
local reps = tonumber(arg[2]) or 3
for _, name in ipairs({ "gemm_bf16_arch", "gemm_bf16" }) do
  local saved = _G.arg
  _G.arg = { [0] = "examples/" .. name .. ".lua" }
  _G.CUTE_EXAMPLE_LIB = true
  local lib = dofile("examples/" .. name .. ".lua")
  _G.CUTE_EXAMPLE_LIB, _G.arg = nil, saved
  local g = lib.make_gemm {}
  local bf16 = cute.bfloat16
  local A = cute.from_host(ex.rand_floats(n * n), bf16, { n, n })
  local B = cute.from_host(ex.rand_floats(n * n), bf16, { n, n })
  local C = cute.zeros({ n, n }, bf16)
  g.launch(A, B, C, 1, 0)
  local best = math.huge
  for _ = 1, reps do
    local t0 = cute.now_us()
    g.launch(A, B, C, 1, 0)
    best = math.min(best, (cute.now_us() - t0) / 1e6)
  end
  print(("%s %d^3: %.3f s (best of %d), %.0f MFLOP/s"):format(name, n, best, reps, 2 * n ^ 3 / best / 1e6))
end
