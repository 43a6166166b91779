-- The tiled-MMA GEMMs of every atom kind, shared by spec/gemm_atoms_spec.lua
-- (PTX, ptxas, errors) and spec/gemm_atoms_gpu_spec.lua (#gpu): each case
-- names an op, the dtypes of A, B (in global memory) and C, a tiled-MMA
-- layout, how to draw random inputs and the tolerance of the result against
-- a CPU reference whose inputs are rounded as the kernel rounds them.
local cute = require("cute")
local dt = require("cute.dtype")
local warp = cute.nvgpu.warp
local M = {}

local f32, f64, i8, u8, i32 = cute.float32, cute.float64, cute.int8, cute.uint8, cute.int32

local function round_tf32(x) return dt.tf32_to_float(dt.float_to_tf32(x)) end
local function round_f32(x)
  local b = require("ffi").new("float[1]", x)
  return tonumber(b[0])
end
local function round_e4m3(x) return dt.f8e4m3_to_float(dt.float_to_f8e4m3(x)) end
local function round_e5m2(x) return dt.f8e5m2_to_float(dt.float_to_f8e5m2(x)) end

-- name, op, A dtype, B dtype, C dtype, atom layout, random value (per operand),
-- input rounding (nil: exact), tolerance relative to sum |a b| (0: exact),
-- k: the K of the CPU specs' static 64 x 64 x k kernel and of the k tiles (64)
M.cases = {
  { name = "tf32 m16n8k8", op = function() return warp.MmaTF32Op({ 16, 8, 8 }) end, a = f32, b = f32, c = f32,
    layout = { 2, 2, 1 }, value = function() return math.random() * 2 - 1 end, round = round_tf32, tol = 2 ^ -16 },
  { name = "tf32 m16n8k4", op = function() return warp.MmaTF32Op({ 16, 8, 4 }) end, a = f32, b = f32, c = f32,
    layout = { 2, 2, 1 }, value = function() return math.random() * 2 - 1 end, round = round_tf32, tol = 2 ^ -16 },
  { name = "s8 x s8 m16n8k32 satfinite", op = function() return warp.MmaI8Op(i8, i8, i32, { 16, 8, 32 }) end,
    a = i8, b = i8, c = i32, layout = { 2, 2, 1 }, value = function() return math.random(-128, 127) end, tol = 0 },
  { name = "u8 x s8 m16n8k32 wrap", op = function()
      return warp.MmaI8Op(u8, i8, i32, { 16, 8, 32 }, warp.MmaIntOverflow.WRAP)
    end, a = u8, b = i8, c = i32, layout = { 2, 2, 1 },
    value = function(which) return which == "A" and math.random(0, 255) or math.random(-128, 127) end, tol = 0 },
  { name = "s8 x u8 m16n8k16", op = function() return warp.MmaI8Op(i8, u8, i32, { 16, 8, 16 }) end,
    a = i8, b = u8, c = i32, layout = { 2, 2, 1 },
    value = function(which) return which == "B" and math.random(0, 255) or math.random(-128, 127) end, tol = 0 },
  { name = "e4m3 m16n8k32 f32", op = function() return warp.MmaFP8Op("float8_e4m3fn", f32, { 16, 8, 32 }) end,
    a = cute.float8_e4m3fn, b = cute.float8_e4m3fn, c = f32, layout = { 2, 2, 1 }, fp8 = true,
    value = function() return (math.random() * 2 - 1) * 4 end, round = round_e4m3, tol = 2 ^ -8 },
  { name = "e5m2 m16n8k32 f32", op = function() return warp.MmaFP8Op("float8_e5m2", f32, { 16, 8, 32 }) end,
    a = cute.float8_e5m2, b = cute.float8_e5m2, c = f32, layout = { 2, 2, 1 }, fp8 = true,
    value = function() return (math.random() * 2 - 1) * 4 end, round = round_e5m2, tol = 2 ^ -8 },
  { name = "f64 m8n8k4", op = function() return warp.MmaF64Op({ 8, 8, 4 }) end, a = f64, b = f64, c = f64,
    layout = { 2, 2, 1 }, value = function() return math.random() * 2 - 1 end, tol = 2 ^ -45 },
  { name = "universal fma f32", op = function() return cute.nvgpu.MmaUniversalOp(f32) end, a = f32, b = f32,
    c = f32, layout = { 16, 8, 1 }, value = function() return math.random() * 2 - 1 end, round = round_f32,
    tol = 2 ^ -16, k = 16 },
  { name = "universal mad s32", op = function() return cute.nvgpu.MmaUniversalOp(i32) end, a = i32, b = i32,
    c = i32, layout = { 8, 16, 1 }, value = function() return math.random(-1000, 1000) end, tol = 0, k = 16 },
}

function M.tiled_mma(c) return cute.make_tiled_mma(c.op(), c.layout) end

-- C (M x N) = A (M x K) B^T (B: N x K), both K-major, one tiled MMA per block:
-- the static kernel (all of A, B, C partitioned at once)
function M.kernel(tm, name)
  return cute.kernel(function(A, B, Cm)
    local thr = tm:get_slice(cute.arch.thread_idx())
    local tCgA, tCgB, tCgC = thr:partition_A(A), thr:partition_B(B), thr:partition_C(Cm)
    local rA, rB, rC = thr:make_fragment_A(tCgA), thr:make_fragment_B(tCgB), thr:make_fragment_C(tCgC)
    cute.copy(tCgA, rA)
    cute.copy(tCgB, rB)
    rC:fill(0)
    cute.gemm(tm, rC, rA, rB, rC)
    cute.copy(rC, tCgC)
  end, { name = name or "atom_gemm" })
end

-- run-time M, N, K (cute.dynamic tensors, multiples of bm, bn, bk): block
-- (x, y) computes its bm x bn tile of C over ktiles steps of bk
function M.tiled_kernel(tm, bm, bn, bk, name)
  return cute.kernel(function(A, B, Cm, ktiles)
    local bx, by = cute.arch.block_idx()
    local thr = tm:get_slice(cute.arch.thread_idx())
    local tCgC = thr:partition_C(cute.local_tile(Cm, { bm, bn }, { bx, by }))
    local rC = thr:make_fragment_C(tCgC)
    rC:fill(0)
    for kt in cute.range(ktiles) do
      local tCgA = thr:partition_A(cute.local_tile(A, { bm, bk }, { bx, kt }))
      local tCgB = thr:partition_B(cute.local_tile(B, { bn, bk }, { by, kt }))
      local rA, rB = thr:make_fragment_A(tCgA), thr:make_fragment_B(tCgB)
      cute.copy(tCgA, rA)
      cute.copy(tCgB, rB)
      cute.gemm(tm, rC, rA, rB, rC)
    end
    cute.copy(rC, tCgC)
  end, { name = name or "atom_gemm_dyn" })
end

-- reference C[m][n] = sum_k round(A[m][k]) round(B[n][k]) and sum_k |..|
-- (0-based flat row-major tables)
function M.reference(c, A, B, Mm, Nn, Kk)
  local r = c.round or function(x) return x end
  local C, S = {}, {}
  for m = 0, Mm - 1 do
    for n = 0, Nn - 1 do
      local s, a = 0, 0
      for k = 0, Kk - 1 do
        local p = r(A[m * Kk + k]) * r(B[n * Kk + k])
        s, a = s + p, a + math.abs(p)
      end
      C[m * Nn + n], S[m * Nn + n] = s, a
    end
  end
  return C, S
end

return M
