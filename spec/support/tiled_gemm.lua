-- A TiledMMA GEMM kernel shared by spec/gemm_tiled_mma_spec.lua (PTX, ptxas)
-- and spec/gemm_tiled_mma_gpu_spec.lua (#gpu): the block computes
-- C (M x N, f32, row-major) = A (M x K, row-major) * B^T, B given N x K
-- (K-major, CuTe's "TN"), with one tiled MMA: partition_A/B/C of the whole
-- tensors, fragments, cute.copy in and out, one cute.gemm.
local cute = require("cute")
local M = {}

-- ab: cute.bfloat16 / cute.float16; k: 16 or 8 (m16n8k16 / m16n8k8);
-- atom_layout: {1,1,1}, {2,2,1}, ...; the kernel adds C0 (beta = 1) when add_c
function M.tiled_mma(ab, k, atom_layout)
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = ab, acc_dtype = cute.float32, shape_mnk = { 16, 8, k } }
  return cute.make_tiled_mma(op, atom_layout)
end

function M.kernel(tm, add_c, name)
  return cute.kernel(function(A, B, Cm)
    local thr = tm:get_slice(cute.arch.thread_idx())
    local tCgA = thr:partition_A(A)
    local tCgB = thr:partition_B(B)
    local tCgC = thr:partition_C(Cm)
    local tCrA = tm:make_fragment_A(tCgA)
    local tCrB = thr:make_fragment_B(tCgB)
    local tCrC = tm:make_fragment_C(tCgC)
    cute.copy(tCgA, tCrA)
    cute.copy(tCgB, tCrB)
    if add_c then cute.copy(tCgC, tCrC) else tCrC:fill(0) end
    cute.gemm(tm, tCrC, tCrA, tCrB, tCrC)
    cute.copy(tCrC, tCgC)
  end, { name = name or "tiled_gemm" })
end

-- the same through shared memory: the block's threads copy A and B into
-- shared tensors (element by element), and partition_A/B take those
function M.smem_kernel(tm, Mm, Nn, Kk, ab, name)
  return cute.kernel(function(A, B, Cm)
    local tid = cute.arch.thread_idx()
    local sA = cute.make_shared_tensor(cute.make_layout({ Mm, Kk }, { Kk, 1 }), ab)
    local sB = cute.make_shared_tensor(cute.make_layout({ Nn, Kk }, { Kk, 1 }), ab)
    for i = 0, Mm * Kk / tm.size - 1 do
      local e = tid + i * tm.size
      sA[{ cute.div(e, Kk), cute.rem(e, Kk) }] = A[{ cute.div(e, Kk), cute.rem(e, Kk) }]
    end
    for i = 0, Nn * Kk / tm.size - 1 do
      local e = tid + i * tm.size
      sB[{ cute.div(e, Kk), cute.rem(e, Kk) }] = B[{ cute.div(e, Kk), cute.rem(e, Kk) }]
    end
    cute.arch.sync_threads()
    local thr = tm:get_slice(tid)
    local tCsA, tCsB, tCgC = thr:partition_A(sA), thr:partition_B(sB), thr:partition_C(Cm)
    local tCrA, tCrB = thr:make_fragment_A(tCsA), thr:make_fragment_B(tCsB)
    local tCrC = thr:make_fragment_C(tCgC)
    cute.copy(tCsA, tCrA)
    cute.copy(tCsB, tCrB)
    tCrC:fill(0)
    cute.gemm(tm, tCrC, tCrA, tCrB, tCrC)
    cute.copy(tCrC, tCgC)
  end, { name = name or "tiled_gemm_smem" })
end

-- runtime M, N, K (multiples of the block tile bm x bn x bk, bm and bn
-- multiples of the tiled MMA's tile): block (x, y) computes the (x, y) tile
-- of C over K / bk steps of a traced loop; the accumulator fragment is
-- carried through the loop, each step partitions its tiles of A and B (tiles
-- of cute.dynamic tensors: static shapes, run-time strides)
function M.tiled_kernel(tm, bm, bn, bk, name)
  return cute.kernel(function(A, B, Cm, ktiles)
    local bx, by = cute.arch.block_idx()
    local thr = tm:get_slice(cute.arch.thread_idx())
    local gC = cute.local_tile(Cm, { bm, bn }, { bx, by })
    local tCgC = thr:partition_C(gC)
    local tCrC = thr:make_fragment_C(tCgC)
    for kt in cute.range(ktiles) do
      local tCgA = thr:partition_A(cute.local_tile(A, { bm, bk }, { bx, kt }))
      local tCgB = thr:partition_B(cute.local_tile(B, { bn, bk }, { by, kt }))
      local tCrA, tCrB = thr:make_fragment_A(tCgA), thr:make_fragment_B(tCgB)
      cute.copy(tCgA, tCrA)
      cute.copy(tCgB, tCrB)
      cute.gemm(tm, tCrC, tCrA, tCrB, tCrC)
    end
    cute.copy(tCrC, tCgC)
  end, { name = name or "tiled_gemm_dyn" })
end

-- C[m][n] = C0[m][n] + sum_k A[m][k] B[n][k] (0-based flat row-major arrays)
local gemm_reference = dofile("spec/support/util.lua").gemm_reference
function M.reference(A, B, C0, Mm, Nn, Kk)
  return gemm_reference(A, B, C0, Mm, Nn, Kk)
end

return M
