-- Hopper (sm_90a) fp8 GEMM: examples/gemm_sm90.lua with e4m3 inputs.
--   C = scale_a * scale_b * (A * B^T)
--   A: M x K, B: N x K, both float8_e4m3fn and K-major (wgmma's fp8 operands must be);
--   f32 accumulators; C bf16 (default) or f32 (C_DTYPE=f32).
-- The per-tensor scales are the GEMM's alpha (applied to the accumulators in the
-- epilogue). Everything else (TMA into 128-byte-swizzled stages of 128 x 128 bytes,
-- wgmma m64nNk32, warp specialisation, persistent scheduler, 2 x 1 cluster multicast)
-- is gemm_sm90.lua's. K must be a multiple of 16 (16-byte rows for TMA).
-- Accuracy: Hopper's fp8 wgmma accumulates with fewer fraction bits than f32 (cuBLAS's
-- "fast accumulation", torch._scaled_mm(use_fast_accum=True)); on an H100 the error is
-- up to about 2^-13 of alpha * sum |a b| (spec/gemm_sm90_spec.lua checks every element
-- against that bound).  Partial sums are not promoted to f32 registers.
--   cuteluajit examples/gemm_fp8_sm90.lua [M] [N] [K]   (env as gemm_sm90.lua's, C_DTYPE=f32)
local cute = require("cute")
local dir = arg[0]:match("(.*/)") or "./"
local ex = dofile(dir .. "common.lua")
local e4m3 = cute.float8_e4m3fn

local M_, N_, K_ = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096, tonumber(arg[3]) or 4096

local function sm90_lib()
  local saved, was = arg, CUTE_EXAMPLE_LIB
  arg = { [0] = dir .. "gemm_sm90.lua" }
  CUTE_EXAMPLE_LIB = true
  local ok, m = pcall(dofile, arg[0])
  CUTE_EXAMPLE_LIB = was
  arg = saved
  if not ok then error(m, 0) end
  return m
end

-- cfg: gemm_sm90's (schedule, bm, bn, stages, cluster_m, group) and c_dtype (bfloat16 | float32)
local function make_gemm(cfg)
  cfg = cfg or {}
  local c = {}
  for k, v in pairs(cfg) do c[k] = v end
  c.ab_dtype = e4m3
  c.c_dtype = cfg.c_dtype or cute.bfloat16
  c.name = cfg.name or ("gemm_fp8_sm90_" .. c.c_dtype.name)
  local g = sm90_lib().make_gemm(c)
  local gemm_launch = g.launch
  -- C = scale_a * scale_b * A B^T
  g.launch = function(A, B, Cm, scale_a, scale_b) return gemm_launch(A, B, Cm, scale_a * scale_b, 0) end
  return g
end

if CUTE_EXAMPLE_LIB then return { make_gemm = make_gemm } end

local out = os.getenv("C_DTYPE") == "f32" and cute.float32 or cute.bfloat16
local g = make_gemm{ c_dtype = out, bn = tonumber(os.getenv("BN")), stages = tonumber(os.getenv("STAGES")),
  cluster_m = tonumber(os.getenv("CLUSTER")), schedule = os.getenv("SCHEDULE"), bm = tonumber(os.getenv("BM")) }
if not ex.gpu() then
  print("gemm_fp8_sm90: needs an sm_90 GPU to run (spec/gemm_sm90_spec.lua compiles it without one)")
  return
end
-- random e4m3 inputs (converted on the host as the device's cvt does); the reference
-- multiplies the same e4m3 values in double precision
local A = cute.from_host(ex.rand_floats(M_ * K_, -4, 4), e4m3, { M_, K_ })
local B = cute.from_host(ex.rand_floats(N_ * K_, -4, 4), e4m3, { N_, K_ })
local Cm = cute.zeros({ M_, N_ }, out)
local sa, sb = 0.5, 0.125
g.launch(A, B, Cm, sa, sb)
local zero = setmetatable({}, { __index = function() return 0 end })
local rows = tonumber(os.getenv("CHECK_ROWS")) or 64
local err = ex.gemm_tn_compare(ex.host_values(A), ex.host_values(B), zero, ex.host_values(Cm), M_, N_, K_,
  sa * sb, 0, math.max(1, math.floor(M_ / rows)))
ex.check(("gemm_fp8_sm90 %dx%dx%d (%s out)"):format(M_, N_, K_, out.name), err, 1e-2)
local ms = ex.time_ms(function() g.launch(A, B, Cm, sa, sb) end, 20)
print(("gemm_fp8_sm90 %dx%dx%d: %.3f ms, %.1f TFLOP/s"):format(M_, N_, K_, ms, 2 * M_ * N_ * K_ / ms / 1e9))
