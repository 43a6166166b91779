-- The multistage tensor-core GEMM of examples/gemm_bf16.lua (docs/TENSORCORE.md,
-- "Walk-through: a multistage bf16 GEMM"), parameterised by the MMA and the
-- dtypes: C = alpha * A * B^T + beta * C, A: M x K, B: N x K (both K-major,
-- CuTe's "TN"), C: M x N row-major.
--
--   kind   MMA atom                         A, B in memory      acc, C    BK   alpha, beta
--   bf16   MmaF16BF16Op m16n8k16            bfloat16            f32, bf16  64   Float32
--   tf32   MmaTF32Op m16n8k8                float32             f32, f32   32   Float32
--   int8   MmaI8Op m16n8k32 (.satfinite)    int8, int8 or uint8 i32, i32  128   Int32
--
-- Every kind has the same shape because a shared-memory row is 128 bytes in all
-- of them (BK elements of A or B): K_SW128 swizzled stages, 16-byte cp.async.cg
-- copies (8, 4 or 16 elements) predicated with identity tensors, ldmatrix.x4
-- TiledCopies (for tf32 and int8 the 8 x 8 b16 matrices are 8 rows of 4 f32 or
-- of 16 int8: exactly the m16n8k8 tf32 / m16n8k32 int8 fragments) read one
-- k-block ahead of the MMAs, 4 k-blocks per k-tile, and an epilogue staged in
-- shared memory with 16-byte stores.
--
-- tf32 rounding: ldmatrix brings the f32 bits as they are and the tensor core
-- uses the 10 high mantissa bits (the 13 low ones are ignored: truncation
-- toward zero), as CuTe C++'s tf32 GEMMs on f32 data do; there is no
-- cvt.rna.tf32.f32.  Each product a b then has a relative error below 2^-9
-- (2^-10 per factor) instead of 2^-10 with round-to-nearest inputs
-- (tf32_round = "rna" rounds in registers instead, one cvt per value).
--
-- Shapes are compile-time constants (one compile per M, N, K, as gemm_bf16.lua);
-- M and N are arbitrary, K must be a multiple of 16 bytes' worth of elements
-- (8 bf16, 4 f32, 16 int8): the predicate of a 16-byte copy is that of its first
-- element.  Used by examples/gemm_tf32_multistage.lua and gemm_int8_multistage.lua.
--   make_gemm{kind = "tf32", bm, bn, warps_m, warps_n, stages, b_dtype} -> {kernel, launch, ...}
local cute = require("cute")
local _ = cute._
local bf16, f32, i8, i32 = cute.bfloat16, cute.float32, cute.int8, cute.int32

local M = {}

-- per kind: the MMA op, dtypes in memory, accumulators, the alpha/beta scalar type
local function kind_info(kind, b_dtype)
  if kind == "bf16" then
    return { op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } },
      a = bf16, b = bf16, c = bf16, acc = f32, scalar = cute.Float32, mma_k = 16 }
  elseif kind == "tf32" then
    return { op = cute.nvgpu.warp.MmaTF32Op{ shape_mnk = { 16, 8, 8 } },
      a = f32, b = f32, c = f32, acc = f32, scalar = cute.Float32, mma_k = 8 }
  elseif kind == "int8" then
    local b = b_dtype or i8
    if b ~= i8 and b ~= cute.uint8 then
      error(("gemm_multistage: b_dtype = %s: must be cute.int8 or cute.uint8"):format(tostring(b and b.name or b)), 3)
    end
    return { op = cute.nvgpu.warp.MmaI8Op{ a_dtype = i8, b_dtype = b, acc_dtype = i32, shape_mnk = { 16, 8, 32 } },
      a = i8, b = b, c = i32, acc = i32, scalar = cute.Int32, mma_k = 32 }
  end
  error(("gemm_multistage: kind = %s: expected \"bf16\", \"tf32\" or \"int8\""):format(tostring(kind)), 3)
end
M.kind_info = kind_info

-- cfg: kind, bm, bn, warps_m, warps_n, stages (defaults 128 x 256, 2 x 4 warps, 4 stages),
-- b_dtype (int8: cute.int8 or cute.uint8), tf32_round ("truncate": the raw f32
-- bits, the default; "rna": cvt.rna.tf32.f32 on every fragment value after
-- ldmatrix), prefetch_across (read the next k-tile's first k-block before the
-- last MMAs of a k-tile, as gemm_bf16.lua: default on for bf16 only.  Its
-- fragments then live across the loop's back edge: int8's as single bytes,
-- which spill hundreds of bytes; tf32's push the 128 x 128 tile over 255
-- registers at some sizes.  Off, each k-tile reads its first k-block after
-- the barrier.)
function M.make_gemm(cfg)
  cfg = cfg or {}
  local kind = cfg.kind or "tf32"
  local info = kind_info(kind, cfg.b_dtype)
  local BM, BN = cfg.bm or 128, cfg.bn or 256
  local WM, WN, STAGES = cfg.warps_m or 2, cfg.warps_n or 4, cfg.stages or 4
  local THREADS = 32 * WM * WN
  local ab_bits, c_bits = 8 * info.a.size, 8 * info.c.size
  local BK = 1024 / ab_bits                 -- a 128-byte shared-memory row
  local VEC = 128 / ab_bits                 -- elements per 16-byte copy of A / B
  local CVEC = 128 / c_bits                 -- elements per 16-byte store of C
  local KB = BK / info.mma_k                -- k-blocks per k-tile (4)
  if BM % (16 * WM) ~= 0 or BN % (16 * WN) ~= 0 then
    error(("gemm_multistage: bm = %d, bn = %d must be multiples of 16 x warps_m = %d and 16 x warps_n = %d"):format(BM,
      BN, 16 * WM, 16 * WN), 2)
  end
  if (BM * 8) % THREADS ~= 0 or (BN * 8) % THREADS ~= 0 then
    error(("gemm_multistage: bm = %d, bn = %d: the tiles' 16-byte copies (8 per row) do not split over %d threads")
      :format(BM, BN, THREADS), 2)
  end

  -- N permuted to 16 per warp so that one ldmatrix.x4 feeds two n8 MMAs
  local tiled_mma = cute.make_tiled_mma(info.op, { WM, WN, 1 }, { _, WN * 16, _ })
  local LdM = cute.nvgpu.warp.LdMatrix8x8x16bOp
  -- (tf32: f32 atoms fill the tfloat32 fragments with the raw bits)
  local s2r_A = cute.make_tiled_copy_A(cute.make_copy_atom(LdM{ num_matrices = 4 }, info.a), tiled_mma)
  local s2r_B = cute.make_tiled_copy_B(cute.make_copy_atom(LdM{ num_matrices = 4 }, info.b), tiled_mma)
  local function g2s(dt)
    return cute.make_tiled_copy_tv(
      cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp{ cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL },
        dt, { num_bits_per_copy = 128 }),
      cute.make_layout({ THREADS / 8, 8 }, { 8, 1 }), cute.make_layout({ 1, VEC }, { VEC, 1 }))
  end
  local g2s_A, g2s_B = g2s(info.a), g2s(info.b)
  local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, info.a)
  local sA_layout = cute.tile_to_shape(atom, { BM, BK, STAGES }, { 1, 2, 3 })
  local sB_layout = cute.tile_to_shape(atom, { BN, BK, STAGES }, { 1, 2, 3 })
  local CP = BN + CVEC -- padded rows (16 bytes) of the epilogue's staging tile
  local A_ELEMS, B_ELEMS = BM * BK * STAGES, BN * BK * STAGES
  local SMEM_BYTES = math.max((A_ELEMS + B_ELEMS) * ab_bits / 8, BM * CP * c_bits / 8)
  local SMEM_ELEMS = math.ceil(SMEM_BYTES / 16) * 16 / (ab_bits / 8)
  local st_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), info.c, { num_bits_per_copy = 128 })
  local acc_t = info.acc
  -- read the next k-tile's first k-block before the last MMAs of this one
  -- (its fragments then live across the loop's back edge)
  local CROSS = cfg.prefetch_across
  local RNA = cfg.tf32_round == "rna"
  if not (cfg.tf32_round == nil or cfg.tf32_round == "truncate" or (RNA and kind == "tf32")) then
    error(("gemm_multistage: tf32_round = %s: must be \"truncate\" (default) or \"rna\" (kind tf32 only; kind is %s)")
      :format(tostring(cfg.tf32_round), kind), 2)
  end
  if CROSS == nil then CROSS = kind == "bf16" end

  local k = cute.kernel(function(A, B, Cm, alpha, beta)
    local M, K = cute.size(A, 0), cute.size(A, 1)
    local N = cute.size(B, 0)
    local tid = cute.arch.thread_idx()
    local bx, by = cute.arch.block_idx()
    local ktiles = cute.ceil_div(K, BK)
    local gA = cute.local_tile(A, { BM, BK }, { by, _ })                      -- (BM, BK, k)
    local gB = cute.local_tile(B, { BN, BK }, { bx, _ })                      -- (BN, BK, k)
    local cA = cute.local_tile(cute.make_identity_tensor({ M, K }), { BM, BK }, { by, _ })
    local cB = cute.local_tile(cute.make_identity_tensor({ N, K }), { BN, BK }, { bx, _ })
    -- one shared buffer: the A and B stages during the main loop, the output
    -- tile (row-major, rows padded by 16 bytes) in the epilogue
    local smem = cute.make_dynamic_shared_tensor(cute.make_layout(SMEM_ELEMS), info.a, 1024)
    local sA = cute.make_tensor(smem, sA_layout)                              -- (BM, BK, STAGES), swizzled
    local sBbuf = cute.make_tensor(smem, cute.make_layout({ B_ELEMS, 2 }, { 1, A_ELEMS }))[{ _, 1 }]
    if info.b ~= info.a then sBbuf = cute.recast_tensor(sBbuf, info.b) end   -- (int8 x uint8)
    local sB = cute.make_tensor(sBbuf, sB_layout)                             -- (from byte A_ELEMS * size(A) on)

    -- global -> shared, one predicate per 16-byte copy: is its first element inside the matrix?
    local thr_gA, thr_gB = g2s_A:get_slice(tid), g2s_B:get_slice(tid)
    local function group_preds(coords, n, bound)
      local p = {}
      for g = 0, n - 1 do p[g] = cute.elem_less(coords[g * VEC], bound) end
      return p
    end
    local function load_tile(kt, stage)
      local tAcA, tBcB = thr_gA:partition_S(cA[{ _, _, kt }]), thr_gB:partition_S(cB[{ _, _, kt }])
      local pa, pb = group_preds(tAcA, BM * 8 / THREADS, { M, K }), group_preds(tBcB, BN * 8 / THREADS, { N, K })
      cute.copy(g2s_A, thr_gA:partition_S(gA[{ _, _, kt }]), thr_gA:partition_D(sA[{ _, _, stage }]), { pred = pa })
      cute.copy(g2s_B, thr_gB:partition_S(gB[{ _, _, kt }]), thr_gB:partition_D(sB[{ _, _, stage }]), { pred = pb })
    end

    -- the MMA's register fragments and their ldmatrix views
    local thr_mma = tiled_mma:get_slice(tid)
    local tCrA = thr_mma:partition_fragment_A(sA[{ _, _, 0 }])               -- (MMA, MMA_M, MMA_K)
    local tCrB = thr_mma:partition_fragment_B(sB[{ _, _, 0 }])
    local gC = cute.local_tile(Cm, { BM, BN }, { by, bx })
    local acc = thr_mma:partition_fragment_C(gC)                             -- (MMA, MMA_M, MMA_N)
    acc:fill(0)
    local thr_A, thr_B = s2r_A:get_slice(tid), s2r_B:get_slice(tid)
    local tXrA, tXrB = thr_A:retile(tCrA), thr_B:retile(tCrB)               -- (CPY, CPY_M, CPY_K)
    local function load_frags(stage, kk)
      cute.copy(s2r_A, thr_A:partition_S(sA[{ _, _, stage }])[{ _, _, kk }], tXrA[{ _, _, kk }])
      cute.copy(s2r_B, thr_B:partition_S(sB[{ _, _, stage }])[{ _, _, kk }], tXrB[{ _, _, kk }])
      if RNA then -- tf32_round = "rna": each f32 rounded to tf32 in registers (cvt.rna.tf32.f32)
        for _, v in ipairs({ tCrA[{ _, _, kk }], tCrB[{ _, _, kk }] }) do
          for e = 0, #v - 1 do v[e] = cute.Float32(v[e]) end
        end
      end
    end

    for s in cute.range_constexpr(STAGES - 1) do
      load_tile(s, s)
      cute.arch.cp_async_commit_group()
    end
    cute.arch.cp_async_wait_group(STAGES - 2)
    cute.arch.sync_threads()
    if CROSS then load_frags(0, 0) end
    for kt in cute.range(ktiles) do
      local st = kt % STAGES
      if not CROSS then load_frags(st, 0) end
      for kk in cute.range_constexpr(KB) do
        if kk == KB - 1 then
          -- the next k-tile's first k-block is read before this one's last MMAs
          cute.arch.cp_async_wait_group(STAGES - 2)
          cute.arch.sync_threads()
          if CROSS then load_frags((kt + 1) % STAGES, 0) end
        else
          load_frags(st, kk + 1)
        end
        if kk == 0 then
          local nk = kt + (STAGES - 1)
          if nk < ktiles then load_tile(nk, nk % STAGES) end
          cute.arch.cp_async_commit_group()
        end
        cute.gemm(tiled_mma, acc, tCrA[{ _, _, kk }], tCrB[{ _, _, kk }], acc)
      end
    end
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()

    -- epilogue.  1. D = alpha * acc + beta * C in registers (C read where it exists)
    local cC = cute.local_tile(cute.make_identity_tensor({ M, N }), { BM, BN }, { by, bx })
    local tCgC, tCcC = thr_mma:partition_C(gC), thr_mma:partition_C(cC)
    local d = acc:load() * alpha
    if beta ~= 0 then
      local c = cute.make_fragment_like(acc, acc_t)
      for e = 0, #acc - 1 do -- (kernel code: `#` is the size)
        c[e] = 0
        if cute.elem_less(tCcC[e], { M, N }) then c[e] = tCgC[e]:to(acc_t) end
      end
      acc:store(d + c:load() * beta)
    else
      acc:store(d)
    end
    -- 2. registers -> shared (the stages are free: every cp.async has landed)
    local sCbuf = smem
    if info.c ~= info.a then sCbuf = cute.recast_tensor(smem, info.c) end
    local sC = cute.make_tensor(sCbuf, cute.make_layout({ BM, BN }, { CP, 1 }))
    if info.c == acc_t then
      cute.copy(acc, thr_mma:partition_C(sC))
    else
      local tCrD = cute.make_fragment_like(acc, info.c)
      tCrD:store(acc:load():to(info.c))
      cute.copy(tCrD, thr_mma:partition_C(sC))
    end
    cute.arch.sync_threads()
    -- 3. shared -> global, CVEC values (16 bytes) per copy where the row has them
    local row_chunks = BN / CVEC
    local wide = N % CVEC == 0
    for i in cute.range_constexpr(BM * BN / CVEC / THREADS) do
      local ch = tid + i * THREADS
      local r, c0 = cute.div(ch, row_chunks), (ch % row_chunks) * CVEC
      local gr, gc = by * BM + r, bx * BN + c0
      if gr < M then
        if wide and gc < N then
          cute.copy(st_atom, cute.local_tile(sC[{ r, _ }], { CVEC }, { ch % row_chunks }),
            cute.local_tile(gC[{ r, _ }], { CVEC }, { ch % row_chunks }))
        elseif not wide then
          for e in cute.range_constexpr(CVEC) do
            if gc + e < N then gC[{ r, c0 + e }] = sC[{ r, c0 + e }] end
          end
        end
      end
    end
  end, { name = "gemm_" .. kind .. "_multistage" })

  local g = { kernel = k, tiled_mma = tiled_mma, info = info,
    cfg = { kind = kind, bm = BM, bn = BN, bk = BK, stages = STAGES, threads = THREADS, vec = VEC, kb = KB,
      smem_bytes = SMEM_ELEMS * ab_bits / 8 } }
  -- the kernel's argument specs for M, N, K (compile without a GPU)
  function g.specs(m, n, kk)
    local S = function(r, c, dt) return cute.tensor_spec({ r, c }, dt) end
    return S(m, kk, info.a), S(n, kk, info.b), S(m, n, info.c), info.scalar(1), info.scalar(0)
  end
  -- launch on device tensors A (M x K), B (N x K), C (M x N)
  function g.launch(A, B, Cm, alpha, beta)
    local kk = A.shape[2]
    if kk % VEC ~= 0 then
      error(("gemm_%s_multistage: K = %d is not a multiple of %d (16-byte rows for cp.async)"):format(kind, kk, VEC), 2)
    end
    return k:launch{ grid = { math.ceil(B.shape[1] / BN), math.ceil(A.shape[1] / BM) }, block = THREADS }(
      A, B, Cm, info.scalar(alpha or 1), info.scalar(beta or 0))
  end
  return g
end

return M
