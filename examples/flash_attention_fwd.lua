-- FlashAttention-2 forward (bf16 in, f32 accumulators, bf16 out) with the
-- CuTe vocabulary: a TiledMMA of m16n8k16 bf16 -> f32 atoms, ldmatrix
-- TiledCopies from swizzled shared memory into retiled register fragments,
-- cute.gemm, cp.async through a TiledCopy of CopyG2SOp atoms into double
-- buffers, and the online softmax written with TensorSSA values
-- (docs/TENSORCORE.md, "Walk-through: FlashAttention-2 forward").
--
--   O = softmax(Q K^T * scale [+ causal mask]) V,  Q, K, V, O: (B*H, S, D)
--
-- One CTA of W warps (by default 8 for D = 128, 4 for D = 64) per (batch*head,
-- block of BM = 128 query rows); warp w owns rows 16 w + 16 W i (i < MI = BM / 16 W)
-- of the block, as the TiledMMA {W, 1, 1} places them. Q, K and V tiles live
-- in shared memory on K_SW128 swizzle atoms (cp.async writes and ldmatrix
-- reads without bank conflicts); Q is read into registers once (ldmatrix.x4);
-- K and V have two buffers each, block j + 1 in flight while block j is used
-- (one barrier per block).
-- For each block of BN = 64 keys: S = Q K^T in f32 C fragments (K's B
-- fragments by ldmatrix.x4), the running row max / row sum updated with quad
-- shuffles, P = exp2(S*scale*log2e - m) rounded to bf16 and used directly as
-- the A fragment of O += P V (the C fragment of m16n8k16 is the A fragment of
-- the next one; V's B fragments by ldmatrix.x4.trans), O rescaled by
-- exp2(m_old - m_new).
--
--   cuteluajit examples/flash_attention_fwd.lua [B] [H] [S] [D] [causal: 0/1]
-- Without a GPU it prints the PTX of the kernel for those sizes.
local cute = require("cute")
local ex = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")
local _ = cute._
local bf16, f32 = cute.bfloat16, cute.float32

local M = {}
local LOG2E = 1.4426950408889634
local BN = 64 -- keys per step
local ADD, MAX = cute.ReductionOp.ADD, cute.ReductionOp.MAX

-- the configuration for head dimension d: BM query rows per CTA (128 by
-- default), W warps (by default BM / 16 for d = 128: one 16-row MMA block per
-- warp; 4 for d = 64: two blocks per warp, half the K and V reads per MMA), Q
-- kept in registers (q_regs, default true) or read from shared memory per
-- k-block, and a launch bound min_blocks (CTAs per SM; none by default)
function M.config(opts, level)
  level = level or 2
  local d = opts.d or 64
  if d ~= 64 and d ~= 128 then
    error("flash_attention_fwd: head dimension d = " .. tostring(d) .. " (64 or 128)", level)
  end
  local bm = opts.block_m or 128
  if bm ~= 64 and bm ~= 128 then error("flash_attention_fwd: block_m = " .. tostring(bm) .. " (64 or 128)", level) end
  local w = opts.warps or (d == 64 and 4 or bm / 16)
  if (w ~= 4 and w ~= 8) or bm % (16 * w) ~= 0 then
    error(("flash_attention_fwd: warps = %s (4 or 8, and block_m = %d a multiple of 16 x warps)"):format(
      tostring(w), bm), level)
  end
  local q_regs = opts.q_regs
  if q_regs == nil then q_regs = true end
  local mb = opts.min_blocks
  if mb ~= nil and (type(mb) ~= "number" or mb % 1 ~= 0 or mb < 1 or mb > 32) then
    error("flash_attention_fwd: min_blocks = " .. tostring(mb) .. " (CTAs per SM at least: an integer 1..32)", level)
  end
  return { d = d, bm = bm, warps = w, mi = bm / (16 * w), causal = opts.causal and true or false,
    scale = opts.scale or 1 / math.sqrt(d), q_regs = q_regs and true or false,
    min_blocks = opts.min_blocks }
end

-- the fragment layouts of the softmax and of the FA2 trick for MI 16-row
-- blocks per warp and BN keys
function M.layouts(MI)
  local NI = BN / 8
  return {
    -- a row statistic (shape (2, MI): C-fragment value mode 1 = row + 8, MMA_M)
    -- seen at every element ((2,2), MI, n) of a C fragment: broadcast along v0 and n
    row_view = function(n) return cute.make_layout({ { 1, 2 }, MI, n }, { { 0, 1 }, 2, 0 }) end,
    -- S's C fragment ((2,2), MI, NI) with NI split as (2, NI/2): slicing key block kb
    PK = cute.make_layout({ { 2, 2 }, MI, { 2, NI / 2 } }, { { 1, 2 }, 4, { 4 * MI, 8 * MI } }),
    -- ... and that slice ((2,2), MI, 2) as the A fragment ((2,2,2), MI, 1) of m16n8k16:
    -- a0 a1 (row g, cols 2t, 2t+1), a2 a3 (row g+8), a4..a7 (cols + 8) = c0..c3 of n blocks 2kb, 2kb+1
    AFR = cute.make_layout({ { 2, 2, 2 }, MI, 1 }, { { 1, 2, 4 * MI }, 4, 0 }),
  }
end
M.BN = BN

-- the TiledMMA of the kernel: W warps along M, bf16 m16n8k16 -> f32, N
-- permuted to 16 (in order) so that one ldmatrix.x4 feeds two n8 MMAs
function M.tiled_mma(warps)
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } }
  return cute.make_tiled_mma(op, { warps or 8, 1, 1 }, { _, 16, _ })
end

-- the TiledMMA, TiledCopies and shared-memory layouts of a configuration
function M.parts(cfg)
  local D, W = cfg.d, cfg.warps
  local NT = 32 * W
  local tm = M.tiled_mma(W)
  -- shared -> registers: ldmatrix.x4 for Q (A, K-major) and K (B as N x K,
  -- K-major), ldmatrix.x4.trans for V (B of O += P V as (D, keys): D-contiguous)
  local LdM = cute.nvgpu.warp.LdMatrix8x8x16bOp
  local P = { tiled_mma = tm }
  P.s2r_Q = cute.make_tiled_copy_A(cute.make_copy_atom(LdM{ transpose = false, num_matrices = 4 }, bf16), tm)
  P.s2r_K = cute.make_tiled_copy_B(cute.make_copy_atom(LdM{ transpose = false, num_matrices = 4 }, bf16), tm)
  P.s2r_V = cute.make_tiled_copy_B(cute.make_copy_atom(LdM{ transpose = true, num_matrices = 4 }, bf16), tm)
  -- global -> shared: cp.async 16 bytes (8 bf16) per thread and copy, D / 8 threads per row
  local TPR = D / 8
  P.g2s = cute.make_tiled_copy_tv(
    cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp{ cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL }, bf16,
      { num_bits_per_copy = 128 }),
    cute.make_layout({ NT / TPR, TPR }, { TPR, 1 }), cute.make_layout({ 1, 8 }, { 8, 1 }))
  -- shared memory: K_SW128 atoms (Sw<3,3,3> o (8,64):(64,1)) tiled over Q (BM, D) and
  -- over two buffers of K and of V (BN, D, 2); V^T (D, BN, 2) is a view of V's
  -- layout (the same swizzle on the same memory)
  local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, bf16)
  P.sQ_layout = cute.tile_to_shape(atom, { cfg.bm, D }, { 1, 2 })
  P.sKV_layout = cute.tile_to_shape(atom, { BN, D, 2 }, { 1, 2, 3 })
  P.sVt_inner = cute.composition(cute.inner_layout(P.sKV_layout), cute.make_layout({ D, BN, 2 }, { BN, 1, BN * D }))
  return P
end

-- the kernel for one configuration; Q, K, V, O are (B*H, S, D) bf16 tensors
-- (S and D static: the kernel is specialised per sequence length)
function M.make_kernel(opts)
  local cfg = M.config(opts, 3)
  local D, BM, W, MI, CAUSAL, Q_REGS = cfg.d, cfg.bm, cfg.warps, cfg.mi, cfg.causal, cfg.q_regs
  local NI = BN / 8 -- MMA_N of S
  local KD = D / 16 -- k-blocks of S = Q K^T (16 columns of D each)
  local KN = BN / 16 -- k-blocks of O += P V (16 keys each)
  local RB = 16 * W -- rows between a warp's 16-row blocks
  local SCALE_LOG2 = cfg.scale * LOG2E

  local P = M.parts(cfg)
  local tm, s2r_Q, s2r_K, s2r_V, g2s = P.tiled_mma, P.s2r_Q, P.s2r_K, P.s2r_V, P.g2s
  local sQ_layout, sKV_layout, sVt_inner = P.sQ_layout, P.sKV_layout, P.sVt_inner

  local L = M.layouts(MI)
  local row_view, PK, AFR = L.row_view, L.PK, L.AFR

  -- copy a (rows, D) tile of global memory to shared memory; with cT (the
  -- tile's coordinates) rows at or past S are zero-filled
  local function load_tile(gT, sT, cT, S)
    local thr = g2s:get_slice(cute.arch.thread_idx())
    local src, dst = thr:partition_S(gT), thr:partition_D(sT)
    local pred
    if cT then
      local crd = thr:partition_S(cT)
      pred = {}
      for g = 0, cute.size(src) / 8 - 1 do pred[g] = cute.elem_less(crd[g * 8], { S, D }) end
    end
    cute.copy(g2s, src, dst, pred and { pred = pred } or nil)
  end

  return cute.kernel(function(Q, K, V, O)
    local S = Q.layout.shape[2]
    local tid = cute.arch.thread_idx()
    local bx, bh = cute.arch.block_idx()
    -- causal: the query blocks with the most key blocks are launched first
    -- (block x takes query block nblocks - 1 - x), so the last wave is short
    local mb = bx
    if CAUSAL then mb = math.ceil(S / BM) - 1 - bx end
    local lane, warp = cute.arch.lane_idx(), cute.div(tid, 32)
    local q0 = mb * BM
    local Qh, Kh, Vh, Oh = Q[{ bh, _, _ }], K[{ bh, _, _ }], V[{ bh, _, _ }], O[{ bh, _, _ }]
    local ident = cute.make_identity_tensor({ S, D })

    local sQ = cute.make_dynamic_shared_tensor(sQ_layout, bf16, 1024)
    local sK = cute.make_dynamic_shared_tensor(sKV_layout, bf16, 1024) -- (BN, D, 2)
    local sV = cute.make_dynamic_shared_tensor(sKV_layout, bf16, 1024)
    local sVt = cute.make_tensor(sV, sVt_inner)                         -- (D, BN, 2), same swizzle

    -- key blocks: [0, nfull) need no mask, [nfull, nkv) are masked
    local nkv_all = math.ceil(S / BN)
    local nkv, nfull
    if CAUSAL then
      nkv = cute.min(nkv_all, (mb + 1) * (BM / BN))
      nfull = cute.min(math.floor(S / BN), mb * (BM / BN))
    else
      nkv, nfull = nkv_all, math.floor(S / BN)
    end
    local function kv_tile(T, j) return cute.local_tile(T, { BN, D }, { j, 0 }) end
    -- the coordinates of key block j when it may run past S (its rows then zero-filled)
    local function tail_crd(j) return S % BN ~= 0 and cute.local_tile(ident, { BN, D }, { j, 0 }) or nil end

    -- Q block and K_0 -> shared (one cp.async group), V_0 (a second one)
    load_tile(cute.local_tile(Qh, { BM, D }, { mb, 0 }), sQ,
      S % BM ~= 0 and cute.local_tile(ident, { BM, D }, { mb, 0 }) or nil, S)
    load_tile(kv_tile(Kh, 0), sK[{ _, _, 0 }], tail_crd(0), S)
    cute.arch.cp_async_commit_group()
    load_tile(kv_tile(Vh, 0), sV[{ _, _, 0 }], tail_crd(0), S)
    cute.arch.cp_async_commit_group()

    -- register fragments: Q (A; all of it, read once, or with q_regs = false
    -- one k-block at a time like K), K and V (B), and their ldmatrix views
    local thr = tm:get_slice(tid)
    local cpQ, cpK, cpV = s2r_Q:get_slice(tid), s2r_K:get_slice(tid), s2r_V:get_slice(tid)
    local tQs = cpQ:partition_S(sQ)                             -- ((8,1), MI, KD)
    local tCrQ = Q_REGS and thr:partition_fragment_A(sQ)        -- ((2,2,2), MI, KD)
    -- K and V (and Q without q_regs): two register buffers of one k-block each
    -- (the next one is read while the current one multiplies)
    local tCrK, tKr, tCrV, tVr, tCrQk, tQrk = {}, {}, {}, {}, {}, {}
    for b = 0, 1 do
      tCrK[b] = thr:make_fragment_B({ { 2, 2 }, NI, 1 })
      tCrV[b] = thr:make_fragment_B({ { 2, 2 }, D / 8, 1 })
      tKr[b], tVr[b] = cpK:retile(tCrK[b]), cpV:retile(tCrV[b])
      if not Q_REGS then
        tCrQk[b] = thr:make_fragment_A({ { 2, 2, 2 }, MI, 1 })
        tQrk[b] = cpQ:retile(tCrQk[b])
      end
    end

    cute.arch.cp_async_wait_group(1)
    cute.arch.sync_threads()
    if Q_REGS then cute.copy(s2r_Q, tQs, cpQ:retile(tCrQ)) end

    local acc_S = thr:make_fragment_C({ { 2, 2 }, MI, NI })
    local acc_O = thr:make_fragment_C({ { 2, 2 }, MI, D / 8 })
    local row_max = thr:make_fragment_C({ 2, MI }) -- in log2 units (scores * scale * log2e)
    local row_sum = thr:make_fragment_C({ 2, MI }) -- this thread's part of the row sums
    acc_O:fill(0)
    row_max:fill(-math.huge)
    row_sum:fill(0)

    -- this thread's element (v0 + 2 v1 + 4 mi + 4 MI ni) of S is at row
    -- q0 + rb + RB mi + 8 v1, column j BN + cb + 8 ni + v0
    local rb = warp * 16 + cute.div(lane, 4)
    local cb = cute.rem(lane, 4) * 2

    -- key block j in buffer j % 2; on entry K_j and V_j (issued one block
    -- earlier) are the pending cp.async groups
    local function step(j, masked)
      local st = j % 2
      -- K_j and V_j have landed and every warp is done with block j - 1: its
      -- buffers take K_{j+1} and V_{j+1} (one group, empty after the last
      -- block), which load while block j computes. One barrier per block.
      cute.arch.cp_async_wait_group(0)
      cute.arch.sync_threads()
      cute.if_then(cute.lt(j + 1, nkv), function()
        load_tile(kv_tile(Kh, j + 1), sK[{ _, _, 1 - st }], tail_crd(j + 1), S)
        load_tile(kv_tile(Vh, j + 1), sV[{ _, _, 1 - st }], tail_crd(j + 1), S)
      end)
      cute.arch.cp_async_commit_group()

      -- S = Q K_j^T, K's (and Q's) k-block kk + 1 read while k-block kk multiplies
      local tKs = cpK:partition_S(sK[{ _, _, st }])            -- ((8,1), NI/2, KD)
      local function load_k(kk)
        cute.copy(s2r_K, tKs[{ _, _, kk }], tKr[kk % 2][{ _, _, 0 }])
        if not Q_REGS then cute.copy(s2r_Q, tQs[{ _, _, kk }], tQrk[kk % 2][{ _, _, 0 }]) end
      end
      acc_S:fill(0)
      load_k(0)
      for kk = 0, KD - 1 do
        if kk + 1 < KD then load_k(kk + 1) end
        local a = Q_REGS and tCrQ[{ _, _, kk }] or tCrQk[kk % 2][{ _, _, 0 }]
        cute.gemm(tm, acc_S, a, tCrK[kk % 2][{ _, _, 0 }], acc_S)
      end

      -- mask columns past S and, causal, above the diagonal (masked blocks
      -- exist only when causal or when S is not a multiple of BN)
      if masked then
        local TAIL = S % BN ~= 0
        local dcol = j * BN + cb -- column of element (v0 = 0, ni = 0)
        local drow = dcol - q0 - rb -- column - row of element 0
        for ni = 0, NI - 1 do
          for mi = 0, MI - 1 do
            for v1 = 0, 1 do
              for v0 = 0, 1 do
                local i = v0 + 2 * v1 + 4 * mi + 4 * MI * ni
                -- (a Lua `if` / `and` on a traced condition would become a GPU branch:
                -- the conditions are combined with cute.logical_and, chosen by Lua booleans)
                local ok
                if TAIL then ok = cute.lt(dcol, S - 8 * ni - v0) end
                if CAUSAL then
                  local c = cute.le(drow, RB * mi + 8 * v1 - 8 * ni - v0)
                  if TAIL then ok = cute.logical_and(ok, c) else ok = c end
                end
                acc_S[i] = cute.where(ok, acc_S[i], -math.huge)
              end
            end
          end
        end
      end

      -- online softmax: new row max (quad of lanes 4g..4g+3 shares a row),
      -- P = exp2(S scale log2e - m), O and the row sums rescaled by exp2(m_old - m_new)
      -- (the maximum is taken of the raw scores and then scaled, scale > 0; P in
      -- one fma per element: S scale log2e - m)
      local s = acc_S:load()
      local m_old = row_max:load()
      local m_new = cute.math.max(m_old,
        cute.threadquad_reduce_max(s:reduce(MAX, -math.huge, { { 1, _ }, _, 1 })) * SCALE_LOG2)
      local m_use = cute.where(m_new:eq(-math.huge), 0.0, m_new) -- a row with no key yet: exp2(-inf - 0) = 0
      local p = cute.math.exp2(cute.math.fma(s, SCALE_LOG2, -m_use:compose(row_view(NI))), true)
      local corr = cute.math.exp2(m_old - m_use, true)
      row_max:store(m_new)
      row_sum:store(row_sum:load() * corr + p:reduce(ADD, 0.0, { { 1, _ }, _, 1 }))
      acc_O:store(acc_O:load() * corr:compose(row_view(D / 8)))

      -- O += P V_j, P straight from registers as A fragments
      local tVs = cpV:partition_S(sVt[{ _, _, st }])           -- ((8,1), D/16, KN)
      local pk = p:to(bf16):compose(PK)
      cute.copy(s2r_V, tVs[{ _, _, 0 }], tVr[0][{ _, _, 0 }])
      for kb = 0, KN - 1 do
        if kb + 1 < KN then cute.copy(s2r_V, tVs[{ _, _, kb + 1 }], tVr[(kb + 1) % 2][{ _, _, 0 }]) end
        local a = thr:make_fragment_A({ { 2, 2, 2 }, MI, 1 })
        a:store(pk[{ _, _, { _, kb } }]:compose(AFR))
        cute.gemm(tm, acc_O, a, tCrV[kb % 2][{ _, _, 0 }], acc_O)
      end
    end

    for j in cute.range(0, nfull) do step(j, false) end
    if CAUSAL or nfull < nkv then
      for j in cute.range(nfull, nkv) do step(j, true) end
    end

    -- O = acc_O / row sum, rows past S not written
    local l = cute.threadquad_reduce_sum(row_sum:load())
    local inv = cute.where(l:eq(0.0), 0.0, 1.0 / l)
    local o = (acc_O:load() * inv:compose(row_view(D / 8))):to(bf16)
    local tO = thr:partition_C(cute.local_tile(Oh, { BM, D }, { mb, 0 }))
    local nrow = S - q0 - rb
    for mi = 0, MI - 1 do
      for v1 = 0, 1 do
        local function put()
          for n = 0, D / 8 - 1 do
            for v0 = 0, 1 do
              local i = v0 + 2 * v1 + 4 * mi + 4 * MI * n
              tO[i] = o[i]
            end
          end
        end
        if S % BM ~= 0 then cute.if_then(cute.lt(RB * mi + 8 * v1, nrow), put) else put() end
      end
    end
  end, { name = ("flash_attention_fwd_d%d_bm%d_w%d%s%s"):format(D, BM, W, Q_REGS and "" or "_qs", CAUSAL and "_causal" or ""),
    ftz = true, max_threads_per_block = cfg.min_blocks and 32 * W or 0, min_blocks_per_sm = cfg.min_blocks or 0 })
end

-- the tensor specs and launch shape of (B*H, S, D)
function M.specs(bh, s, d)
  local t = cute.tensor_spec({ bh, s, d }, bf16)
  return t, t, t, t
end
function M.launch_cfg(opts, bh, s)
  local cfg = M.config(opts)
  return { grid = { math.ceil(s / cfg.bm), bh, 1 }, block = 32 * cfg.warps }
end

-- the CPU reference (double precision) of one (head, row): out[c], c < d,
-- from host arrays q, k, v of bf16 values as Lua numbers (flat, row-major)
function M.reference_row(q, k, v, h, r, s, d, causal, scale)
  local base = h * s * d
  local last = causal and r or s - 1
  local sc, mx = {}, -math.huge
  for c = 0, last do
    local acc = 0
    for x = 0, d - 1 do acc = acc + q[base + r * d + x] * k[base + c * d + x] end
    sc[c] = acc * scale
    if sc[c] > mx then mx = sc[c] end
  end
  local out, sum = {}, 0
  for x = 0, d - 1 do out[x] = 0 end
  for c = 0, last do
    local p = math.exp(sc[c] - mx)
    sum = sum + p
    for x = 0, d - 1 do out[x] = out[x] + p * v[base + c * d + x] end
  end
  for x = 0, d - 1 do out[x] = out[x] / sum end
  return out
end

-- random bf16 Q, K, V of (b*h, s, d) on the device; run(q, k, v, o) launches
-- an attention kernel on them; every output compared with the CPU reference
-- (cfg: d, causal, scale); returns the largest absolute error and the
-- relative error norm.  Shared with examples/flash_attention_sm90.lua.
function M.compare(cfg, b, h, s, run)
  local d, bh = cfg.d, b * h
  local n = bh * s * d
  local dev, host = {}, {}
  for _, name in ipairs({ "q", "k", "v" }) do
    local r, t1 = ex.rand_floats(n, -1, 1), {}
    for i = 0, n - 1 do t1[i + 1] = r[i] end
    dev[name] = cute.from_host(t1, bf16, { bh, s, d }) -- rounded to bf16
    local raw = dev[name]:to_host()
    local t = {}
    for i = 0, n - 1 do t[i] = bf16.to_number(raw[i]) end
    host[name] = t
  end
  local dO = cute.empty({ bh, s, d }, bf16)
  dO:fill(0 / 0)
  run(dev.q, dev.k, dev.v, dO)
  local o = dO:to_host()
  local maxerr, num, den = 0, 0, 0
  for hh = 0, bh - 1 do
    for r = 0, s - 1 do
      local ref = M.reference_row(host.q, host.k, host.v, hh, r, s, d, cfg.causal, cfg.scale)
      for x = 0, d - 1 do
        local got = bf16.to_number(o[(hh * s + r) * d + x])
        local e = math.abs(got - ref[x])
        if got ~= got then e = math.huge end
        if e > maxerr then maxerr = e end
        num, den = num + e * e, den + ref[x] * ref[x]
      end
    end
  end
  for _, t in pairs(dev) do t:free() end
  dO:free()
  return maxerr, math.sqrt(num / den)
end

-- run the kernel on random data and compare every output with the CPU
-- reference; returns the largest absolute error and the relative error norm
function M.check(opts, b, h, s)
  local cfg = M.config(opts)
  return M.compare(cfg, b, h, s, function(q, k, v, o)
    M.make_kernel(opts):launch(M.launch_cfg(opts, b * h, s))(q, k, v, o)
  end)
end

if CUTE_EXAMPLE_LIB then
  M.kernel = M.make_kernel({ d = tonumber(arg and arg[4]) or 64, causal = arg and arg[5] == "1" })
  return M
end

local B, H, S, D = tonumber(arg[1]) or 1, tonumber(arg[2]) or 2, tonumber(arg[3]) or 200, tonumber(arg[4]) or 64
local causal = arg[5] == "1"
if not ex.gpu() then
  print(M.make_kernel({ d = D, causal = causal }):ptx(M.specs(B * H, S, D)))
  return
end
local maxerr, rel = M.check({ d = D, causal = causal }, B, H, S)
print(("flash_attention_fwd B=%d H=%d S=%d D=%d causal=%s: max |err| %.3g, relative error %.3g"):format(
  B, H, S, D, tostring(causal), maxerr, rel))
ex.check("flash_attention_fwd", rel, 1e-2)
