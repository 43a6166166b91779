-- Multistage bf16 GEMM written with cute.arch's tensor-core instructions:
--   C = alpha * A * B^T + beta * C      A: M x K, B: N x K (both K-major), C: M x N, bf16
-- f32 accumulation.  The CTA tile is BM x BN x 64; STAGES k-tiles are in flight
-- (cp.async.cg 16-byte copies, zero-filled outside the matrices); shared memory is
-- swizzled by hand (the 16-byte chunk c of row r is stored at chunk c xor (r % 8):
-- CuTe's Swizzle<3,3,3> on 128-byte rows) so that both the cp.async stores and the
-- ldmatrix.x4 reads are free of bank conflicts; each warp computes a 64 x 64 tile
-- with mma.sync.m16n8k16.  M and N are any sizes; K must be a multiple of 8 (16-byte
-- rows).  The CuTe-vocabulary version of the same kernel is examples/gemm_bf16.lua.
--   cuteluajit examples/gemm_bf16_arch.lua [M] [N] [K]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local bf16, f32 = cute.bfloat16, cute.float32
local band, bxor, div, where, lt = cute.band, cute.bxor, cute.div, cute.where, cute.lt

local M_, N_, K_ = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096, tonumber(arg[3]) or 4096

-- cfg: bm, bn (CTA tile), warps_m, warps_n, stages
local function make_gemm(cfg)
  cfg = cfg or {}
  local BM, BN, BK = cfg.bm or 128, cfg.bn or 128, 64
  local WM, WN, STAGES = cfg.warps_m or 2, cfg.warps_n or 2, cfg.stages or 4
  local THREADS = 32 * WM * WN
  local GROUP_M = cfg.group_m or 8
  local TM, TN = BM / WM, BN / WN -- the warp's tile
  local MI, NI = TM / 16, TN / 8   -- m16 and n8 MMA tiles per warp
  assert(TM % 16 == 0 and TN % 16 == 0, "warp tile must be a multiple of 16 x 16")
  local A_ST, B_ST = BM * BK, BN * BK -- elements per stage
  local mma = cute.arch.mma_sync{ shape = "m16n8k16", a_type = bf16, b_type = bf16, c_type = f32, d_type = f32 }

  local k = cute.kernel(function(A, B, Cm, alpha, beta)
    local M, K = cute.size(A, 0), cute.size(A, 1)
    local N = cute.size(B, 0)
    local t = cute.arch.thread_idx()
    local bx0, by0 = cute.arch.block_idx()
    -- rasterise in groups of GROUP_M block rows (better L2 reuse of B's tiles)
    local bx, by = bx0, by0
    if GROUP_M > 1 then
      local _, gm = cute.arch.grid_dim()
      local gn = div(N + (BN - 1), BN)
      local lin = by0 * gn + bx0
      local per_group = GROUP_M * gn
      local grp = div(lin, per_group)
      local first = grp * GROUP_M
      local rows = cute.min(gm - first, GROUP_M)
      local in_grp = lin % per_group
      by = first + in_grp % rows
      bx = div(in_grp, rows)
    end
    local lane, warp = t % 32, div(t, 32)
    local wm, wn = warp % WM, div(warp, WM)
    local sA = cute.make_dynamic_shared_tensor(cute.make_layout(STAGES * A_ST), bf16, 128)
    local sB = cute.make_dynamic_shared_tensor(cute.make_layout(STAGES * B_ST), bf16, 128)
    local m0, n0 = by * BM, bx * BN
    local ktiles = div(K + (BK - 1), BK)

    -- cp.async: thread t copies chunk t % 8 of rows t / 8 + (THREADS / 8) * i
    local RSTEP = THREADS / 8
    local lrow, lchunk = div(t, 8), t % 8
    local sw_off = lrow * BK + bxor(lchunk, lrow % 8) * 8 -- swizzled smem offset of the first row
    local function load_tile(kt, stage)
      local kcol = kt * BK + lchunk * 8
      local kin = lt(kcol, K)
      for i in cute.range_constexpr(BM / RSTEP) do
        local r = m0 + lrow + i * RSTEP
        local ok = cute.logical_and(lt(r, M), kin)
        local src = A:ptr_at({ r, kcol }) -- (src-size 0: nothing is read)
        cute.arch.cp_async(sA:ptr_at(stage * A_ST + sw_off + i * RSTEP * BK), src, 16,
          { cache = "cg", src_size = where(ok, 16, 0) })
      end
      for i in cute.range_constexpr(BN / RSTEP) do
        local r = n0 + lrow + i * RSTEP
        local ok = cute.logical_and(lt(r, N), kin)
        local src = B:ptr_at({ r, kcol })
        cute.arch.cp_async(sB:ptr_at(stage * B_ST + sw_off + i * RSTEP * BK), src, 16,
          { cache = "cg", src_size = where(ok, 16, 0) })
      end
    end

    -- ldmatrix addresses.  A (x4 = a 16 x 16 tile): lane l reads row l % 16, chunk
    -- 2 kk + l / 16; B (x4 = two n8 x k16 tiles): row (l / 16) * 8 + l % 8, chunk
    -- 2 kk + (l / 8) % 2.  Rows are 8-aligned per tile, so the swizzle's row term is l % 8.
    local x8 = lane % 8
    local a_row = wm * TM + lane % 16
    local a_hi = div(lane, 16)
    local b_row = wn * TN + div(lane, 16) * 8 + x8
    local b_hi = div(lane, 8) % 2
    local a_k, b_k = {}, {}
    for kk = 0, BK / 16 - 1 do
      a_k[kk] = bxor(kk * 2 + a_hi, x8) * 8
      b_k[kk] = bxor(kk * 2 + b_hi, x8) * 8
    end

    local acc = {}
    for i = 0, MI - 1 do
      acc[i] = {}
      for j = 0, NI - 1 do acc[i][j] = cute.arch.make_fragment_regs(f32, 4, 0) end
    end

    for s in cute.range_constexpr(STAGES - 1) do
      load_tile(s, s)
      cute.arch.cp_async_commit_group()
    end
    -- register double buffer: the fragments of k-block kk + 1 are read from shared
    -- memory while the MMAs of k-block kk run; the wait and barrier for the next
    -- k-tile come before the last k-block's MMAs, so its first reads overlap them
    local af, bfr = { [0] = {}, [1] = {} }, { [0] = {}, [1] = {} }
    for b = 0, 1 do
      for i = 0, MI - 1 do af[b][i] = cute.arch.make_fragment_regs(cute.uint32, 4) end
      for j = 0, NI / 2 - 1 do bfr[b][j] = cute.arch.make_fragment_regs(cute.uint32, 4) end
    end
    local function load_frags(buf, stage, kk)
      local abase, bbase = stage * A_ST + a_row * BK, stage * B_ST + b_row * BK
      for i = 0, MI - 1 do
        af[buf][i]:set(cute.arch.ldmatrix(sA:ptr_at(abase + i * 16 * BK + a_k[kk]), { num_matrices = 4 }))
      end
      for j = 0, NI / 2 - 1 do
        bfr[buf][j]:set(cute.arch.ldmatrix(sB:ptr_at(bbase + j * 16 * BK + b_k[kk]), { num_matrices = 4 }))
      end
    end
    cute.arch.cp_async_wait_group(STAGES - 2)
    cute.arch.sync_threads()
    load_frags(0, 0, 0)
    local KB = BK / 16
    for kt in cute.range(ktiles) do
      local st = kt % STAGES
      for kk in cute.range_constexpr(KB) do
        if kk == KB - 1 then
          cute.arch.cp_async_wait_group(STAGES - 2)
          cute.arch.sync_threads()
          load_frags((kk + 1) % 2, (kt + 1) % STAGES, 0)
        else
          load_frags((kk + 1) % 2, st, kk + 1)
        end
        if kk == 0 then
          -- refill the stage consumed in the previous k-tile
          local nk = kt + (STAGES - 1)
          if nk < ktiles then load_tile(nk, nk % STAGES) end
          cute.arch.cp_async_commit_group()
        end
        local a, b = af[kk % 2], bfr[kk % 2]
        for i = 0, MI - 1 do
          for j = 0, NI - 1 do
            local b2 = cute.arch.make_fragment_regs(cute.uint32, 2)
            local src = b[div(j, 2)]
            b2[0] = src[(j % 2) * 2]; b2[1] = src[(j % 2) * 2 + 1]
            mma(acc[i][j], a[i], b2, acc[i][j])
          end
        end
      end
    end
    cute.arch.cp_async_wait_group(0)

    -- epilogue: thread holds rows g, g + 8 and columns 2q, 2q + 1 of each m16n8 tile
    local g, q = div(lane, 4), lane % 4
    for i = 0, MI - 1 do
      for h = 0, 1 do
        local r = m0 + wm * TM + i * 16 + h * 8 + g
        if r < M then
          for j = 0, NI - 1 do
            local c = n0 + wn * TN + j * 8 + q * 2
            for e = 0, 1 do
              if c + e < N then
                local old = Cm[{ r, c + e }]
                local v = alpha * acc[i][j][h * 2 + e] + beta * old:to(f32)
                Cm[{ r, c + e }] = v
              end
            end
          end
        end
      end
    end
  end, { name = "gemm_bf16_arch" })
  local function launch(A, B, Cm, alpha, beta)
    local m, n = A.shape[1], B.shape[1]
    return k:launch{ grid = { math.ceil(n / BN), math.ceil(m / BM) }, block = THREADS }(
      cute.dynamic(A, { index_bits = 32 }), cute.dynamic(B, { index_bits = 32 }),
      cute.dynamic(Cm, { index_bits = 32 }), cute.Float32(alpha), cute.Float32(beta))
  end
  return { kernel = k, launch = launch, cfg = { bm = BM, bn = BN, bk = BK, stages = STAGES, threads = THREADS } }
end

if CUTE_EXAMPLE_LIB then return { make_gemm = make_gemm } end

local g = make_gemm{ bm = tonumber(os.getenv("BM")), bn = tonumber(os.getenv("BN")),
  warps_m = tonumber(os.getenv("WM")), warps_n = tonumber(os.getenv("WN")), stages = tonumber(os.getenv("STAGES")),
  group_m = tonumber(os.getenv("GROUP_M")) }
if not ex.gpu() then
  local spec = function(r, c) return cute.dynamic(cute.tensor_spec({ r, c }, bf16), { index_bits = 32 }) end
  local res = g.kernel:compile(spec(M_, K_), spec(N_, K_), spec(M_, N_), cute.Float32(1), cute.Float32(0))
  print(("gemm_bf16_arch: compiled for %s: %d registers, %d spill bytes"):format(res.arch, res.info.regs,
    res.info.spill_stores or 0))
  return
end

assert(K_ % 8 == 0, "K must be a multiple of 8 (16-byte rows for cp.async)")
local A, B, Cm = ex.check_bf16_gemm_tn("gemm_bf16_arch", g.launch, M_, N_, K_, tonumber(os.getenv("CHECK_ROWS")))
local ms = ex.time_ms(function() g.launch(A, B, Cm, 1, 0) end, 20)
print(("gemm_bf16_arch %dx%dx%d: %.3f ms, %.1f TFLOP/s"):format(M_, N_, K_, ms, 2 * M_ * N_ * K_ / ms / 1e9))
