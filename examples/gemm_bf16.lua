-- Multistage bf16 GEMM in CuTe's vocabulary (docs/TENSORCORE.md, "Walk-through:
-- a multistage bf16 GEMM"):  C = alpha * A * B^T + beta * C
--   A: M x K, B: N x K (both K-major, CuTe's "TN"), C: M x N, bf16; f32 accumulators.
-- * a TiledMMA of m16n8k16 atoms over WM x WN warps;
-- * shared memory: STAGES k-tiles of A and B on K_SW128 layout atoms
--   (Sw<3,3,3> o (8,64):(64,1)) tiled with cute.tile_to_shape;
-- * global -> shared: a TiledCopy of 16-byte cp.async.cg atoms, predicated with
--   an identity tensor and cute.elem_less (zero fill past M, N or K);
-- * shared -> registers: ldmatrix TiledCopies made from the TiledMMA
--   (make_tiled_copy_A/B) and retiled register fragments, one k-block ahead of
--   the MMAs;
-- * epilogue: the accumulators are staged through shared memory (f32), then
--   each thread reads 8 consecutive values, applies alpha and beta and writes 16
--   bytes of C at a time (element by element on the matrix's right edge).
-- Shapes are run-time values (cute.dynamic(t, {divisibility = 8}): one compile
-- serves every M, N, K; the tails need not be tile multiples, K must be a
-- multiple of 8, checked at the launch); a C whose N is not a multiple of 8 gets
-- the kernel with element-wise stores on its right edge.
-- examples/gemm_bf16_arch.lua is the same kernel on cute.arch.
--   cuteluajit examples/gemm_bf16.lua [M] [N] [K]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local _ = cute._
local bf16, f32 = cute.bfloat16, cute.float32

local M_, N_, K_ = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096, tonumber(arg[3]) or 4096

-- cfg: bm, bn, warps_m, warps_n, stages (defaults: 128 x 256, 2 x 4 warps, 4 stages)
local function make_gemm(cfg)
  cfg = cfg or {}
  local BM, BN, BK = cfg.bm or 128, cfg.bn or 256, 64
  local WM, WN, STAGES = cfg.warps_m or 2, cfg.warps_n or 4, cfg.stages or 4
  local THREADS = 32 * WM * WN
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } }
  -- N permuted to 16 per warp so that one ldmatrix.x4 feeds two n8 MMAs
  local tiled_mma = cute.make_tiled_mma(op, { WM, WN, 1 }, { _, WN * 16, _ })
  local LdM = cute.nvgpu.warp.LdMatrix8x8x16bOp
  local s2r_A = cute.make_tiled_copy_A(cute.make_copy_atom(LdM{ transpose = false, num_matrices = 4 }, bf16), tiled_mma)
  local s2r_B = cute.make_tiled_copy_B(cute.make_copy_atom(LdM{ transpose = false, num_matrices = 4 }, bf16), tiled_mma)
  local g2s = cute.make_tiled_copy_tv(
    cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp{ cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL },
      bf16, { num_bits_per_copy = 128 }),
    cute.make_layout({ THREADS / 8, 8 }, { 8, 1 }), cute.make_layout({ 1, 8 }, { 8, 1 }))
  local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, bf16)
  local sA_layout = cute.tile_to_shape(atom, { BM, BK, STAGES }, { 1, 2, 3 })
  local sB_layout = cute.tile_to_shape(atom, { BN, BK, STAGES }, { 1, 2, 3 })
  local CP = BN + 8 -- padded rows of the epilogue's staging tile
  local A_ELEMS, B_ELEMS = BM * BK * STAGES, BN * BK * STAGES
  local SMEM_ELEMS = math.max(A_ELEMS + B_ELEMS, BM * CP)
  local KB = BK / 16
  local st_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), bf16, { num_bits_per_copy = 128 })

  -- wide: C's rows are 16-byte aligned (N % 8 == 0; its stride known divisible by 8)
  local function build(wide)
  return cute.kernel(function(A, B, Cm, alpha, beta)
    local M, K = cute.size(A, 0), cute.size(A, 1)
    local N = cute.size(B, 0)
    local tid = cute.arch.thread_idx()
    local bx, by = cute.arch.block_idx()
    local ktiles = cute.div(K + (BK - 1), BK)                                 -- (K known at run time)
    local gA = cute.local_tile(A, { BM, BK }, { by, _ })                      -- (BM, BK, k)
    local gB = cute.local_tile(B, { BN, BK }, { bx, _ })                      -- (BN, BK, k)
    local cA = cute.local_tile(cute.make_identity_tensor({ M, K }), { BM, BK }, { by, _ })
    local cB = cute.local_tile(cute.make_identity_tensor({ N, K }), { BN, BK }, { bx, _ })
    -- one shared buffer: the A and B stages during the main loop, the output
    -- tile (plain row-major, rows padded by 8 elements) in the epilogue
    local smem = cute.make_dynamic_shared_tensor(cute.make_layout(SMEM_ELEMS), bf16, 1024)
    local sA = cute.make_tensor(smem, sA_layout)                              -- (BM, BK, STAGES), swizzled
    local sB = cute.make_tensor(cute.make_tensor(smem, cute.make_layout({ B_ELEMS, 2 }, { 1, A_ELEMS }))[{ _, 1 }],
      sB_layout)                                                              -- (from element A_ELEMS on)

    -- global -> shared
    local thr_g2s = g2s:get_slice(tid)
    -- one predicate per 16-byte copy: is its first element inside the matrix?
    local function group_preds(coords, n, bound)
      local p = {}
      for g = 0, n - 1 do p[g] = cute.elem_less(coords[g * 8], bound) end
      return p
    end
    local function load_tile(kt, stage)
      local tAcA, tBcB = thr_g2s:partition_S(cA[{ _, _, kt }]), thr_g2s:partition_S(cB[{ _, _, kt }])
      local pa, pb = group_preds(tAcA, BM * 8 / THREADS, { M, K }), group_preds(tBcB, BN * 8 / THREADS, { N, K })
      cute.copy(g2s, thr_g2s:partition_S(gA[{ _, _, kt }]), thr_g2s:partition_D(sA[{ _, _, stage }]), { pred = pa })
      cute.copy(g2s, thr_g2s:partition_S(gB[{ _, _, kt }]), thr_g2s:partition_D(sB[{ _, _, stage }]), { pred = pb })
    end

    -- the MMA's register fragments and their ldmatrix views
    local thr_mma = tiled_mma:get_slice(tid)
    local tCrA = thr_mma:partition_fragment_A(sA[{ _, _, 0 }])               -- (MMA, MMA_M, MMA_K)
    local tCrB = thr_mma:partition_fragment_B(sB[{ _, _, 0 }])
    local gC = cute.local_tile(Cm, { BM, BN }, { by, bx })
    local acc = thr_mma:partition_fragment_C(gC)                             -- (MMA, MMA_M, MMA_N) f32
    acc:fill(0)
    local thr_A, thr_B = s2r_A:get_slice(tid), s2r_B:get_slice(tid)
    local tXrA, tXrB = thr_A:retile(tCrA), thr_B:retile(tCrB)               -- (CPY, CPY_M, CPY_K)
    local function load_frags(stage, kk)
      cute.copy(s2r_A, thr_A:partition_S(sA[{ _, _, stage }])[{ _, _, kk }], tXrA[{ _, _, kk }])
      cute.copy(s2r_B, thr_B:partition_S(sB[{ _, _, stage }])[{ _, _, kk }], tXrB[{ _, _, kk }])
    end

    for s in cute.range_constexpr(STAGES - 1) do
      load_tile(s, s)
      cute.arch.cp_async_commit_group()
    end
    cute.arch.cp_async_wait_group(STAGES - 2)
    cute.arch.sync_threads()
    load_frags(0, 0)
    for kt in cute.range(ktiles) do
      local st = kt % STAGES
      for kk in cute.range_constexpr(KB) do
        if kk == KB - 1 then
          -- the next k-tile's first k-block is read before this one's last MMAs
          cute.arch.cp_async_wait_group(STAGES - 2)
          cute.arch.sync_threads()
          load_frags((kt + 1) % STAGES, 0)
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
    -- 2. D = alpha acc + beta C, to bf16, into the shared tile (the stages are free: every
    --    cp.async has landed); C read one value at a time where it exists
    local sC = cute.make_tensor(smem, cute.make_layout({ BM, BN }, { CP, 1 }))
    local tCsC = thr_mma:partition_C(sC)
    if beta ~= 0 then
      for e = 0, #acc - 1 do -- (kernel code: `#` is the size)
        local d = acc[e] * alpha
        if cute.elem_less(tCcC[e], { M, N }) then
          tCsC[e] = (d + tCgC[e]:to(f32) * beta):to(bf16) -- each C value used where it is read
        else
          tCsC[e] = d:to(bf16)
        end
      end
    else
      local tCrD = cute.make_fragment_like(acc, bf16)
      tCrD:store((acc:load() * alpha):to(bf16))
      cute.copy(tCrD, tCsC)
    end
    cute.arch.sync_threads()
    -- 3. shared -> global, 8 values (16 bytes) per copy where the row has them
    local row_chunks = BN / 8
    for i in cute.range_constexpr(BM * BN / 8 / THREADS) do
      local ch = tid + i * THREADS
      local r, c8 = cute.div(ch, row_chunks), (ch % row_chunks) * 8
      local gr, gc = by * BM + r, bx * BN + c8
      if gr < M then
        if wide and gc < N then
          cute.copy(st_atom, cute.local_tile(sC[{ r, _ }], { 8 }, { ch % row_chunks }),
            cute.local_tile(gC[{ r, _ }], { 8 }, { ch % row_chunks }))
        elseif not wide then
          for e in cute.range_constexpr(8) do
            if gc + e < N then gC[{ r, c8 + e }] = sC[{ r, c8 + e }] end
          end
        end
      end
    end
  end, { name = wide and "gemm_bf16" or "gemm_bf16_narrow" })
  end
  local k, k_narrow = build(true), build(false)
  -- run-time shapes: rows of A, B (and C when N % 8 == 0) are multiples of 8
  -- elements (16 bytes), checked at each launch; 32-bit offsets
  local D8 = { divisibility = 8, index_bits = 32 }
  return { kernel = k, kernel_narrow = k_narrow, tiled_mma = tiled_mma,
    cfg = { bm = BM, bn = BN, bk = BK, stages = STAGES, threads = THREADS },
    launch = function(A, B, Cm, alpha, beta)
      local wide = Cm.shape[2] % 8 == 0
      return (wide and k or k_narrow):launch{ grid = { math.ceil(B.shape[1] / BN), math.ceil(A.shape[1] / BM) },
        block = THREADS }(cute.dynamic(A, D8), cute.dynamic(B, D8), cute.dynamic(Cm, wide and D8 or { index_bits = 32 }),
        cute.Float32(alpha), cute.Float32(beta))
    end }
end

if CUTE_EXAMPLE_LIB then return { make_gemm = make_gemm } end

local g = make_gemm{ bm = tonumber(os.getenv("BM")), bn = tonumber(os.getenv("BN")),
  warps_m = tonumber(os.getenv("WM")), warps_n = tonumber(os.getenv("WN")), stages = tonumber(os.getenv("STAGES")) }
if not ex.gpu() then
  local S = function(r, c) return cute.dynamic(cute.tensor_spec({ r, c }, bf16), { divisibility = 8, index_bits = 32 }) end
  local res = g.kernel:compile(S(M_, K_), S(N_, K_), S(M_, N_), cute.Float32(1), cute.Float32(0))
  print(("gemm_bf16: compiled for %s: %d registers, %d spill bytes"):format(res.arch, res.info.regs,
    res.info.spill_stores or 0))
  return
end

assert(K_ % 8 == 0, "K must be a multiple of 8 (16-byte rows for cp.async)")
local A, B, Cm = ex.check_bf16_gemm_tn("gemm_bf16", g.launch, M_, N_, K_, tonumber(os.getenv("CHECK_ROWS")))
local ms = ex.time_ms(function() g.launch(A, B, Cm, 1, 0) end, 20)
print(("gemm_bf16 %dx%dx%d: %.3f ms, %.1f TFLOP/s"):format(M_, N_, K_, ms, 2 * M_ * N_ * K_ / ms / 1e9))
