-- FP8 tensor-core GEMM (sm_89+), C (f32) = A * B^T (A: M x K, B: N x K, both
-- float8_e4m3fn, row-major, i.e. K-major): a 2 x 2-warp tiled MMA of mma.sync
-- m16n8k32 e4m3 -> f32 over 64 x 64 block tiles, A and B staged in shared
-- memory in K steps of 32 (examples/mma_gemm_lib.lua).  The host converts the
-- random f32 inputs to e4m3 (cute.from_host, as the device's cvt); the
-- reference multiplies the same e4m3 values, so the result matches to the
-- accumulation's rounding.  The PTX asks for ISA 8.4 (fp8 mma).
--   cuteluajit examples/gemm_fp8.lua [M] [N] [K]      (any sizes; default 200 136 200)
local cute = require("cute")
local dir = arg[0]:match("(.*/)") or "./"
local ex = dofile(dir .. "common.lua")
local lib = dofile(dir .. "mma_gemm_lib.lua")
local dt = require("cute.dtype")
local e4m3, f32 = cute.float8_e4m3fn, cute.float32

local m, n, k = lib.sizes(arg, 200, 136, 200)
local op = cute.nvgpu.warp.MmaFP8Op{ ab_dtype = e4m3, acc_dtype = f32, shape_mnk = { 16, 8, 32 } }
local o = { tiled_mma = cute.make_tiled_mma(op, { 2, 2, 1 }), a = e4m3, b = e4m3, c = f32,
            bm = 64, bn = 64, bk = 32, name = "gemm_fp8" }
local gemm = lib.kernel(o)
if CUTE_EXAMPLE_LIB then return { kernel = gemm, opts = o, launch = function(...) return lib.launch(gemm, o, ...) end } end

local function compile_only(why)
  print(why)
  local dyn = function(s) return cute.dynamic(s) end
  local r = gemm:with({ arch = "sm_89" }):compile(dyn(cute.tensor_spec({ m, k }, e4m3)),
    dyn(cute.tensor_spec({ n, k }, e4m3)), dyn(cute.tensor_spec({ m, n }, f32)),
    cute.Int32(m), cute.Int32(n), cute.Int32(k), cute.Int32(1))
  local _, count = r.ptx:gsub("mma%.sync%.aligned%.m16n8k32%.row%.col%.f32%.e4m3%.e4m3%.f32", "")
  print(("gemm_fp8: compiled for sm_89 (%d mma.sync m16n8k32 e4m3 per K tile)"):format(count))
end
if not ex.gpu() then return compile_only("run on an sm_89+ GPU to check") end
local arch = require("cute.compile").device_arch()
if not require("cute.target_cpu").active and (tonumber(arch and arch:match("^sm_(%d+)")) or 0) < 89 then
  return compile_only("gemm_fp8: this GPU is " .. tostring(arch) .. "; fp8 mma needs sm_89 or newer")
end

local ha, hb = ex.rand_floats(m * k, -4, 4), ex.rand_floats(n * k, -4, 4)
local ta, tb = {}, {}
for i = 0, m * k - 1 do ta[i + 1] = ha[i] end
for i = 0, n * k - 1 do tb[i + 1] = hb[i] end
local A, B = cute.from_host(ta, e4m3, { m, k }), cute.from_host(tb, e4m3, { n, k })
local C = cute.empty({ m, n }, f32)
C:fill(0 / 0)
lib.launch(gemm, o, A, B, C, m, n, k)
local err = lib.check(C:to_host(), ha, hb, m, n, k, function(x) return dt.f8e4m3_to_float(dt.float_to_f8e4m3(x)) end)
ex.check(("gemm_fp8 %dx%dx%d"):format(m, n, k), err, 1e-2)
