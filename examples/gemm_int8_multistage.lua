-- Multistage INT8 tensor-core GEMM, C (int32) = alpha * A * B^T + beta * C (A: M x K
-- int8, B: N x K int8 or uint8 (B_UINT8=1), both K-major; alpha, beta int32, wrapping
-- arithmetic), on examples/gemm_multistage.lua: mma.sync m16n8k32 (.satfinite) over
-- 2 x 4 warps, 128 x 256 x 128 block tiles, 4 stages of 16-byte cp.async into K_SW128
-- shared memory (128 int8 per row), ldmatrix.x4 of the int8 rows as b16 pairs (exactly
-- the m16n8k32 fragments), an epilogue staged in shared memory with 16-byte stores.
-- Integer arithmetic: the result must equal the CPU's exactly.
-- examples/gemm_int8.lua is the simple (64 x 64, one stage) version.
--   cuteluajit examples/gemm_int8_multistage.lua [M] [N] [K]   (K a multiple of 16; default 1000 777 272)
--   environment: BM BN WM WN STAGES (tile), PREFETCH_ACROSS=1|0, B_UINT8=1, CHECK_ROWS (rows checked, default 64)
local cute = require("cute")
local dir = arg[0]:match("(.*/)") or "./"
local ex = dofile(dir .. "common.lua")
local ms = dofile(dir .. "gemm_multistage.lua")
local i8, u8, i32 = cute.int8, cute.uint8, cute.int32

local function make_gemm(cfg)
  cfg = cfg or {}
  local c = { kind = "int8" }
  for k, v in pairs(cfg) do c[k] = v end
  return ms.make_gemm(c)
end
local m, n, k = tonumber(arg[1]) or 1000, tonumber(arg[2]) or 777, tonumber(arg[3]) or 272
local unsigned_b = os.getenv("B_UINT8") == "1"
local g = make_gemm{ bm = tonumber(os.getenv("BM")), bn = tonumber(os.getenv("BN")), warps_m = tonumber(os.getenv("WM")),
  warps_n = tonumber(os.getenv("WN")), stages = tonumber(os.getenv("STAGES")),
  prefetch_across = os.getenv("PREFETCH_ACROSS") and os.getenv("PREFETCH_ACROSS") == "1", b_dtype = unsigned_b and u8 or i8 }
if CUTE_EXAMPLE_LIB then return { make_gemm = make_gemm, kernel = g.kernel, launch = g.launch, specs = g.specs } end

if not ex.gpu() then
  local r = g.kernel:with({ arch = "sm_80" }):compile(g.specs(m, n, k))
  local _, count = r.ptx:gsub("mma%.sync%.aligned%.m16n8k32%.row%.col%.satfinite%.s32%.s8%.[su]8%.s32", "")
  print(("gemm_int8_multistage: compiled for sm_80 (%d mma.sync m16n8k32 per k-tile and warp, %d registers, %d spill bytes)")
    :format(count, r.info.regs or -1, r.info.spill_stores or 0))
  return
end

assert(k % 16 == 0, "K must be a multiple of 16 (16-byte rows for cp.async)")
local ha, hb, hc, ta, tb, tc = {}, {}, {}, {}, {}, {}
for i = 0, m * k - 1 do ha[i] = math.random(-128, 127); ta[i + 1] = ha[i] end
for i = 0, n * k - 1 do hb[i] = unsigned_b and math.random(0, 255) or math.random(-128, 127); tb[i + 1] = hb[i] end
for i = 0, m * n - 1 do hc[i] = math.random(-1000, 1000); tc[i + 1] = hc[i] end
local A, B = cute.from_host(ta, i8, { m, k }), cute.from_host(tb, unsigned_b and u8 or i8, { n, k })
local C = cute.from_host(tc, i32, { m, n })
local alpha, beta = 3, -2
g.launch(A, B, C, alpha, beta)
local out = C:to_host()
local bad = 0
local step = math.max(1, math.floor(m / (tonumber(os.getenv("CHECK_ROWS")) or 64)))
for i = 0, m - 1, step do
  for j = 0, n - 1 do
    local s = 0
    for kk = 0, k - 1 do s = s + ha[i * k + kk] * hb[j * k + kk] end
    -- |s| < 2^31 here (K * 128 * 255 for K < 65536): no wrap or saturation
    local ref = bit.tobit(alpha * s + beta * hc[i * n + j])
    if out[i * n + j] ~= ref then
      if bad < 5 then print(("C[%d][%d] = %d, expected %d"):format(i, j, out[i * n + j], ref)) end
      bad = bad + 1
    end
  end
end
ex.check(("gemm_int8_multistage %dx%dx%d, B %s (exact; wrong elements)"):format(m, n, k, unsigned_b and "uint8" or "int8"),
  bad, 0)
local ms_ = ex.time_ms(function() g.launch(A, B, C, 1, 0) end, 20)
print(("gemm_int8_multistage %dx%dx%d: %.3f ms, %.1f TOP/s"):format(m, n, k, ms_, 2 * m * n * k / ms_ / 1e9))
