-- A GEMM through shared memory and ldmatrix, shared by spec/ldmatrix_copy_spec.lua
-- (PTX, ptxas, the placement model) and spec/ldmatrix_copy_gpu_spec.lua (#gpu):
-- one block of 4 warps computes C (M x N) = A (M x K, row-major: K-major) B,
-- B given either N x K row-major (K-major, CuTe's "TN") or K x N row-major
-- (N-major: MN-major, ldmatrix .trans).  A and B are copied element by element
-- into shared memory (of the same majorness), then
--   make_tiled_copy_A/B(ldmatrix atom, tiled_mma):get_slice(tid):partition_S(sX)
--   ...:retile(thr_mma:partition_fragment_X(sX))
--   cute.copy(tiled_copy, tXsX[{_, _, k}], tXrX[{_, _, k}])  for each k
-- then cute.gemm; C is stored either directly (f32) or converted to the
-- input type and written through stmatrix (make_tiled_copy_C) into shared
-- memory, then copied to global memory.
local cute = require("cute")
local M = {}
local _ = cute._

-- 2 x 2 warps of m16n8k16, N permuted to 32: a 32 x 32 x 16 tile, 8 values of
-- A, B and C per thread and tile (ldmatrix.x4 / stmatrix.x4 size)
function M.tiled_mma(ab)
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = ab, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } }
  return cute.make_tiled_mma(op, { 2, 2, 1 }, { cute._, 32, cute._ })
end

-- cfg: ab (cute.bfloat16 / cute.float16), m, n, k (multiples of 32, 32, 16),
-- b_mn_major (B is K x N row-major), nb (ldmatrix matrices for B: 2 or 4,
-- default 4), stmatrix (C is of type ab, stored through stmatrix: sm_90)
function M.kernel(cfg)
  local ab, Mm, Nn, Kk = cfg.ab, cfg.m, cfg.n, cfg.k
  local tm = M.tiled_mma(ab)
  local LdM, StM = cute.nvgpu.warp.LdMatrix8x8x16bOp, cute.nvgpu.warp.StMatrix8x8x16bOp
  local tcA = cute.make_tiled_copy_A(cute.make_copy_atom(LdM{ transpose = false, num_matrices = 4 }, ab), tm)
  local tcB = cute.make_tiled_copy_B(cute.make_copy_atom(LdM{ transpose = cfg.b_mn_major or false,
    num_matrices = cfg.nb or 4 }, ab), tm)
  local tcC = cfg.stmatrix and cute.make_tiled_copy_C(cute.make_copy_atom(StM{ num_matrices = 4 }, ab), tm)
  local nt = tm.size
  local k = cute.kernel(function(A, B, Cm)
    local tid = cute.arch.thread_idx()
    local sA = cute.make_shared_tensor(cute.make_layout({ Mm, Kk }, { Kk, 1 }), ab)
    local sB = cute.make_shared_tensor(cfg.b_mn_major and cute.make_layout({ Nn, Kk }, { 1, Nn })
      or cute.make_layout({ Nn, Kk }, { Kk, 1 }), ab)
    for i = 0, Mm * Kk / nt - 1 do
      local e = tid + i * nt
      local r, c = cute.div(e, Kk), cute.rem(e, Kk)
      sA[{ r, c }] = A[{ r, c }]
    end
    for i = 0, Nn * Kk / nt - 1 do
      local e = tid + i * nt
      if cfg.b_mn_major then
        local kk, n = cute.div(e, Nn), cute.rem(e, Nn)
        sB[{ n, kk }] = B[{ kk, n }]
      else
        local n, kk = cute.div(e, Kk), cute.rem(e, Kk)
        sB[{ n, kk }] = B[{ n, kk }]
      end
    end
    cute.arch.sync_threads()
    local thr = tm:get_slice(tid)
    local tCrA, tCrB = thr:partition_fragment_A(sA), thr:partition_fragment_B(sB)
    local tCgC = thr:partition_C(Cm)
    local tCrC = thr:make_fragment_C(tCgC)
    local cA, cB = tcA:get_slice(tid), tcB:get_slice(tid)
    local tAsA, tArA = cA:partition_S(sA), cA:retile(tCrA)
    local tBsB, tBrB = cB:partition_S(sB), cB:retile(tCrB)
    for kk = 0, Kk / 16 - 1 do
      cute.copy(tcA, tAsA[{ _, _, kk }], tArA[{ _, _, kk }])
      cute.copy(tcB, tBsB[{ _, _, kk }], tBrB[{ _, _, kk }])
    end
    tCrC:fill(0)
    cute.gemm(tm, tCrC, tCrA, tCrB, tCrC)
    if not cfg.stmatrix then
      cute.copy(tCrC, tCgC)
      return
    end
    local tCrD = cute.make_fragment_like(tCrC, ab)
    tCrD:store(tCrC:load():to(ab))
    local sC = cute.make_shared_tensor(cute.make_layout({ Mm, Nn }, { Nn, 1 }), ab)
    local cC = tcC:get_slice(tid)
    cute.copy(tcC, cC:retile(tCrD), cC:partition_D(sC))
    cute.arch.sync_threads()
    for i = 0, Mm * Nn / nt - 1 do
      local e = tid + i * nt
      local r, c = cute.div(e, Nn), cute.rem(e, Nn)
      Cm[{ r, c }] = sC[{ r, c }]
    end
  end, { name = ("ldsm_gemm_%s_%s%s"):format(ab.name, cfg.b_mn_major and "mn" or "k", cfg.stmatrix and "_stsm" or "") })
  return k, tm
end

-- the argument specs of the kernel: A (M x K), B (N x K or K x N), C (M x N)
function M.specs(cfg)
  return cute.tensor_spec({ cfg.m, cfg.k }, cfg.ab),
    cute.tensor_spec(cfg.b_mn_major and { cfg.k, cfg.n } or { cfg.n, cfg.k }, cfg.ab),
    cute.tensor_spec({ cfg.m, cfg.n }, cfg.stmatrix and cfg.ab or cute.float32)
end

-- C = A B (0-based arrays; A M x K, B N x K or K x N by b_mn_major)
local gemm_reference = dofile("spec/support/util.lua").gemm_reference
function M.reference(A, B, Mm, Nn, Kk, b_mn_major)
  return gemm_reference(A, B, nil, Mm, Nn, Kk, b_mn_major)
end

return M
