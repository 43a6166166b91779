-- Naive SGEMM, C = A * B (fp32, row-major): one thread per output element.
--   cuteluajit examples/sgemm_naive.lua [M] [N] [K]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")

local M_, N_, K_ = tonumber(arg[1]) or 1024, tonumber(arg[2]) or 1024, tonumber(arg[3]) or 1024

local sgemm = cute.kernel(function(A, B, C)
  local tx, ty = cute.arch.thread_idx()
  local bx, by = cute.arch.block_idx()
  local row, col = by * 16 + ty, bx * 16 + tx
  cute.if_then(cute.logical_and(row < M_, col < N_), function()
    local acc = cute.var(0.0, cute.float32)
    for k in cute.range(K_) do
      acc.value = acc.value + A[{ row, k }] * B[{ k, col }]
    end
    C[{ row, col }] = acc.value
  end)
end)

-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = sgemm } end

if not ex.gpu() then
  print(sgemm:ptx(cute.tensor_spec({ M_, K_ }, cute.float32), cute.tensor_spec({ K_, N_ }, cute.float32),
    cute.tensor_spec({ M_, N_ }, cute.float32)))
  return
end

local ha, hb = ex.rand_floats(M_ * K_), ex.rand_floats(K_ * N_)
local A = cute.from_host(ha, cute.float32, { M_, K_ })
local B = cute.from_host(hb, cute.float32, { K_, N_ })
local C = cute.empty({ M_, N_ }, cute.float32)
C:fill(0 / 0)
local cfg = { grid = { math.ceil(N_ / 16), math.ceil(M_ / 16) }, block = { 16, 16 } }
sgemm:launch(cfg)(A, B, C)
local hc = C:to_host()
-- a sample of rows against a double-precision reference
ex.check("sgemm_naive", ex.gemm_error(ha, hb, hc, M_, N_, K_, math.max(1, math.floor(M_ / 64))), 1e-5)
local ms = ex.time_ms(function() sgemm:launch(cfg)(A, B, C) end, 10)
print(("sgemm_naive %dx%dx%d: %.3f ms, %.2f TFLOP/s"):format(M_, N_, K_, ms, 2 * M_ * N_ * K_ / ms / 1e9))
