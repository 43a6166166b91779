-- The tiled-MMA GEMM shared by examples/gemm_tf32.lua, gemm_int8.lua and
-- gemm_fp8.lua: C (M x N, row-major) = A (M x K, row-major) * B^T, B given
-- N x K (K-major, CuTe's "TN"), any M, N, K known only at run time.
--
-- Each block computes a BM x BN tile of C.  Per K tile its threads stage the
-- BM x BK tile of A and the BN x BK tile of B in shared memory one element
-- per copy (a 4-byte cp.async with opts.cp_async); elements past M, N or K,
-- found with an identity tensor and cute.elem_less, are zero.  Then every
-- thread copies its partition_A / partition_B of the shared tiles into
-- register fragments and cute.gemm accumulates into its fragment of C, which
-- is written back under the same predicate.  Simple and correct, not fast: no
-- multistage pipeline, no ldmatrix, no swizzle (see the bf16 GEMM for those).
local cute = require("cute")
local M = {}

-- opts: tiled_mma, a, b (dtypes of A and B in memory), c (dtype of C),
-- bm, bn, bk (the block tile), cp_async (stage 32-bit elements with 4-byte
-- cp.async instead of loads and stores)
function M.kernel(o)
  local tm, BM, BN, BK = o.tiled_mma, o.bm, o.bn, o.bk
  local nthr = tm.size
  return cute.kernel(function(A, B, Cm, m, n, k, ktiles)
    local tid = cute.arch.thread_idx()
    local bx, by = cute.arch.block_idx()
    local sA = cute.make_shared_tensor(cute.make_layout({ BM, BK }, { BK, 1 }), o.a)
    local sB = cute.make_shared_tensor(cute.make_layout({ BN, BK }, { BK, 1 }), o.b)
    local thr = tm:get_slice(tid)
    local gC = cute.local_tile(Cm, { BM, BN }, { bx, by })
    local cC = cute.local_tile(cute.make_identity_tensor({ m, n }), { BM, BN }, { bx, by })
    local tCgC, tCcC = thr:partition_C(gC), thr:partition_C(cC)
    local acc = thr:make_fragment_C(tCgC)
    acc:fill(0)
    -- one row-major tile (rows x BK) of X (rows_total x k) into s, zero past the edges
    local function stage(X, s, rows, row0, rows_total, kt)
      for i in cute.range(rows * BK / nthr) do
        local e = tid + i * nthr
        local r, c = cute.div(e, BK), cute.rem(e, BK)
        local gr, gc = row0 + r, kt * BK + c
        local inside = cute.elem_less({ gr, gc }, { rows_total, k })
        if o.cp_async then
          -- one 4-byte cp.async per element; outside, src-size 0 reads nothing and writes zeros
          cute.arch.cp_async(cute.local_tile(s, { 1, 1 }, { r, c }), cute.local_tile(X, { 1, 1 }, { gr, gc }), 4,
            { src_size = inside and 4 or 0 })
        elseif inside then
          s[{ r, c }] = X[{ gr, gc }]
        else
          s[{ r, c }] = 0
        end
      end
    end
    for kt in cute.range(ktiles) do
      stage(A, sA, BM, bx * BM, m, kt)
      stage(B, sB, BN, by * BN, n, kt)
      if o.cp_async then
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
      end
      cute.arch.sync_threads()
      local tCsA, tCsB = thr:partition_A(sA), thr:partition_B(sB)
      local rA, rB = thr:make_fragment_A(tCsA), thr:make_fragment_B(tCsB)
      cute.copy(tCsA, rA) -- f32 -> tf32 fragments round here (cvt.rna.tf32.f32)
      cute.copy(tCsB, rB)
      cute.gemm(tm, acc, rA, rB, acc)
      cute.arch.sync_threads()
    end
    for i = 0, acc:size() - 1 do
      if cute.elem_less(tCcC[i], { m, n }) then tCgC[i] = acc[i] end
    end
  end, { name = o.name })
end

-- launch on device tensors A (m x k), B (n x k), C (m x n)
function M.launch(kern, o, A, B, Cm, m, n, k)
  local grid = { math.ceil(m / o.bm), math.ceil(n / o.bn) }
  kern:launch{ grid = grid, block = o.tiled_mma.size }(cute.dynamic(A), cute.dynamic(B), cute.dynamic(Cm),
    cute.Int32(m), cute.Int32(n), cute.Int32(k), cute.Int32(math.ceil(k / o.bk)))
end

-- sizes from the command line: M N K (defaults given), any positive integers
function M.sizes(args, dm, dn, dk)
  local m, n, k = tonumber(args[1]) or dm, tonumber(args[2]) or dn, tonumber(args[3]) or dk
  assert(m >= 1 and n >= 1 and k >= 1 and m % 1 == 0 and n % 1 == 0 and k % 1 == 0, "M, N, K: positive integers")
  return m, n, k
end

-- max over C of |C - ref| / sum_k |a b| (0-based flat host arrays; round
-- applied to the inputs as the device holds them)
function M.check(hc, ha, hb, m, n, k, round)
  round = round or function(x) return x end
  local worst = 0
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local s, mag = 0, 0
      for kk = 0, k - 1 do
        local p = round(ha[i * k + kk]) * round(hb[j * k + kk])
        s, mag = s + p, mag + math.abs(p)
      end
      local err = math.abs(hc[i * n + j] - s)
      if err > 0 then worst = math.max(worst, mag > 0 and err / mag or math.huge) end
    end
  end
  return worst
end

return M
