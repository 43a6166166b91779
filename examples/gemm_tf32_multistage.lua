-- Multistage TF32 tensor-core GEMM, C = alpha * A * B^T + beta * C in f32 (A: M x K,
-- B: N x K, both f32 and K-major; C: M x N f32), on examples/gemm_multistage.lua:
-- mma.sync m16n8k8 tf32 over 2 x 4 warps, 128 x 256 x 32 block tiles, 4 stages of
-- 16-byte cp.async into K_SW128 shared memory, ldmatrix.x4 of the f32 rows straight
-- into the tf32 fragments, a shared-memory-staged epilogue with 16-byte stores.
-- The tensor core reads the f32 bits as tf32 (the 13 low mantissa bits ignored:
-- truncation); TF32_ROUND=rna rounds in registers instead (cvt.rna.tf32.f32).  The
-- check is against a reference whose inputs are rounded as the kernel's, within
-- 2^-16 of sum |alpha a b| + |beta c| per element (f32 accumulation).
-- examples/gemm_tf32.lua is the simple (64 x 64, one stage) version.
--   cuteluajit examples/gemm_tf32_multistage.lua [M] [N] [K]    (K a multiple of 4; default 1000 777 264)
--   environment: BM BN WM WN STAGES (tile), PREFETCH_ACROSS=1|0, TF32_ROUND=rna, CHECK_ROWS (rows checked, default 64)
local cute = require("cute")
local dir = arg[0]:match("(.*/)") or "./"
local ex = dofile(dir .. "common.lua")
local ms = dofile(dir .. "gemm_multistage.lua")
local dt = require("cute.dtype")
local bit = require("bit")
local f32 = cute.float32

local function make_gemm(cfg)
  cfg = cfg or {}
  local c = { kind = "tf32" }
  for k, v in pairs(cfg) do c[k] = v end
  return ms.make_gemm(c)
end
local m, n, k = tonumber(arg[1]) or 1000, tonumber(arg[2]) or 777, tonumber(arg[3]) or 264
local g = make_gemm{ bm = tonumber(os.getenv("BM")), bn = tonumber(os.getenv("BN")), warps_m = tonumber(os.getenv("WM")),
  warps_n = tonumber(os.getenv("WN")), stages = tonumber(os.getenv("STAGES")),
  prefetch_across = os.getenv("PREFETCH_ACROSS") and os.getenv("PREFETCH_ACROSS") == "1", tf32_round = os.getenv("TF32_ROUND") }
if CUTE_EXAMPLE_LIB then return { make_gemm = make_gemm, kernel = g.kernel, launch = g.launch, specs = g.specs } end

if not ex.gpu() then
  local r = g.kernel:with({ arch = "sm_80" }):compile(g.specs(m, n, k))
  local _, count = r.ptx:gsub("mma%.sync%.aligned%.m16n8k8%.row%.col%.f32%.tf32%.tf32%.f32", "")
  print(("gemm_tf32_multistage: compiled for sm_80 (%d mma.sync m16n8k8 tf32 per k-tile and warp, %d registers, %d spill bytes)")
    :format(count, r.info.regs or -1, r.info.spill_stores or 0))
  return
end

assert(k % 4 == 0, "K must be a multiple of 4 (16-byte rows for cp.async)")
-- the f32 inputs as the tensor core sees them
local rna = os.getenv("TF32_ROUND") == "rna"
local u = require("ffi")
local bits = u.new("union { uint32_t u; float f; }")
local function as_tf32(x)
  if rna then return dt.tf32_to_float(dt.float_to_tf32(x)) end
  bits.f = x
  bits.u = bit.band(bits.u, 0xffffe000) % 2 ^ 32 -- (the 13 low bits cleared; the sign stays)
  return bits.f
end
local ha, hb, hc = ex.rand_floats(m * k), ex.rand_floats(n * k), ex.rand_floats(m * n)
local A, B = cute.from_host(ha, f32, { m, k }), cute.from_host(hb, f32, { n, k })
local C = cute.from_host(hc, f32, { m, n })
local alpha, beta = 1.5, -0.5
g.launch(A, B, C, alpha, beta)
local out = C:to_host()
local ta, tb = {}, {}
for i = 0, m * k - 1 do ta[i] = as_tf32(ha[i]) end
for i = 0, n * k - 1 do tb[i] = as_tf32(hb[i]) end
local worst = 0
local step = math.max(1, math.floor(m / (tonumber(os.getenv("CHECK_ROWS")) or 64)))
for i = 0, m - 1, step do
  for j = 0, n - 1 do
    local s, mag = 0, 0
    for kk = 0, k - 1 do
      local p = ta[i * k + kk] * tb[j * k + kk]
      s, mag = s + p, mag + math.abs(p)
    end
    local ref = alpha * s + beta * hc[i * n + j]
    local err = math.abs(out[i * n + j] - ref) / (math.abs(alpha) * mag + math.abs(beta * hc[i * n + j]) + 1e-30)
    if out[i * n + j] ~= out[i * n + j] then err = math.huge end
    worst = math.max(worst, err)
  end
end
ex.check(("gemm_tf32_multistage %dx%dx%d (%s)"):format(m, n, k, rna and "cvt.rna" or "truncated inputs"), worst, 2 ^ -16)
local ms_ = ex.time_ms(function() g.launch(A, B, C, 1, 0) end, 20)
print(("gemm_tf32_multistage %dx%dx%d: %.3f ms, %.1f TFLOP/s"):format(m, n, k, ms_, 2 * m * n * k / ms_ / 1e9))
