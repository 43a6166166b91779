-- TF32 tensor-core GEMM, C = A * B^T in f32 (A: M x K, B: N x K, both
-- row-major, i.e. K-major): a 2 x 2-warp tiled MMA of mma.sync m16n8k8 tf32
-- over 64 x 64 block tiles, A and B staged in shared memory in K steps of 32
-- by one 4-byte cp.async per element, zero-filled past the matrix
-- (examples/mma_gemm_lib.lua).  A and B are f32 in memory; filling the tf32
-- register fragments rounds them with cvt.rna.tf32.f32 (to nearest, ties
-- away from zero), as CuTe does.  The reference rounds its inputs the same
-- way (cute.dtype.float_to_tf32), so the result matches to f32 accumulation.
--   cuteluajit examples/gemm_tf32.lua [M] [N] [K]     (any sizes; default 200 136 100)
local cute = require("cute")
local dir = arg[0]:match("(.*/)") or "./"
local ex = dofile(dir .. "common.lua")
local lib = dofile(dir .. "mma_gemm_lib.lua")
local dt = require("cute.dtype")
local f32 = cute.float32

local m, n, k = lib.sizes(arg, 200, 136, 100)
local o = { tiled_mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaTF32Op({ 16, 8, 8 }), { 2, 2, 1 }),
            a = f32, b = f32, c = f32, bm = 64, bn = 64, bk = 32, cp_async = true, name = "gemm_tf32" }
local gemm = lib.kernel(o)
if CUTE_EXAMPLE_LIB then return { kernel = gemm, opts = o, launch = function(...) return lib.launch(gemm, o, ...) end } end

if not ex.gpu() then
  local dyn = function(s) return cute.dynamic(s) end
  local r = gemm:with({ arch = "sm_80" }):compile(dyn(cute.tensor_spec({ m, k }, f32)),
    dyn(cute.tensor_spec({ n, k }, f32)), dyn(cute.tensor_spec({ m, n }, f32)),
    cute.Int32(m), cute.Int32(n), cute.Int32(k), cute.Int32(1))
  local _, count = r.ptx:gsub("mma%.sync%.aligned%.m16n8k8%.row%.col%.f32%.tf32%.tf32%.f32", "")
  print(("gemm_tf32: compiled for sm_80 (%d mma.sync m16n8k8 tf32 per K tile); run on a GPU to check"):format(count))
  return
end

local ha, hb = ex.rand_floats(m * k), ex.rand_floats(n * k)
local A, B = cute.from_host(ha, f32, { m, k }), cute.from_host(hb, f32, { n, k })
local C = cute.empty({ m, n }, f32)
C:fill(0 / 0)
lib.launch(gemm, o, A, B, C, m, n, k)
local hc = C:to_host()
-- max |C - ref| / sum_k |a b| with the reference's inputs rounded to tf32
local err = lib.check(hc, ha, hb, m, n, k, function(x) return dt.tf32_to_float(dt.float_to_tf32(x)) end)
ex.check(("gemm_tf32 %dx%dx%d"):format(m, n, k), err, 1e-4)
