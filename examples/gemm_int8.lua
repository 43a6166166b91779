-- INT8 tensor-core GEMM, C (int32) = A * B^T (A: M x K int8, B: N x K uint8,
-- both row-major, i.e. K-major): a 2 x 2-warp tiled MMA of mma.sync m16n8k32
-- s8.u8 -> s32 (.satfinite) over 64 x 64 block tiles, A and B staged in
-- shared memory in K steps of 32 (examples/mma_gemm_lib.lua).  Each fragment
-- register holds four 8-bit values, the first in the low byte.  Integer
-- arithmetic: the result must equal the CPU's exactly.
--   cuteluajit examples/gemm_int8.lua [M] [N] [K]     (any sizes; default 200 136 200)
local cute = require("cute")
local dir = arg[0]:match("(.*/)") or "./"
local ex = dofile(dir .. "common.lua")
local lib = dofile(dir .. "mma_gemm_lib.lua")
local i8, u8, i32 = cute.int8, cute.uint8, cute.int32

local m, n, k = lib.sizes(arg, 200, 136, 200)
local op = cute.nvgpu.warp.MmaI8Op{ a_dtype = i8, b_dtype = u8, acc_dtype = i32, shape_mnk = { 16, 8, 32 } }
local o = { tiled_mma = cute.make_tiled_mma(op, { 2, 2, 1 }), a = i8, b = u8, c = i32,
            bm = 64, bn = 64, bk = 32, name = "gemm_int8" }
local gemm = lib.kernel(o)
if CUTE_EXAMPLE_LIB then return { kernel = gemm, opts = o, launch = function(...) return lib.launch(gemm, o, ...) end } end

if not ex.gpu() then
  local dyn = function(s) return cute.dynamic(s) end
  local r = gemm:with({ arch = "sm_80" }):compile(dyn(cute.tensor_spec({ m, k }, i8)),
    dyn(cute.tensor_spec({ n, k }, u8)), dyn(cute.tensor_spec({ m, n }, i32)),
    cute.Int32(m), cute.Int32(n), cute.Int32(k), cute.Int32(1))
  local _, count = r.ptx:gsub("mma%.sync%.aligned%.m16n8k32%.row%.col%.satfinite%.s32%.s8%.u8%.s32", "")
  print(("gemm_int8: compiled for sm_80 (%d mma.sync m16n8k32 s8.u8 per K tile); run on a GPU to check"):format(count))
  return
end

-- random int8 / uint8 inputs: 0-based for the check, 1-based for cute.from_host
local ha, hb, ta, tb = {}, {}, {}, {}
for i = 0, m * k - 1 do ha[i] = math.random(-128, 127); ta[i + 1] = ha[i] end
for i = 0, n * k - 1 do hb[i] = math.random(0, 255); tb[i + 1] = hb[i] end
local A, B = cute.from_host(ta, i8, { m, k }), cute.from_host(tb, u8, { n, k })
local C = cute.empty({ m, n }, i32)
C:fill(-1)
lib.launch(gemm, o, A, B, C, m, n, k)
local err = lib.check(C:to_host(), ha, hb, m, n, k)
ex.check(("gemm_int8 %dx%dx%d (exact)"):format(m, n, k), err, 0)
