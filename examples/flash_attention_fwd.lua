-- FlashAttention-2 forward (bf16 in, f32 accumulators, bf16 out) with the
-- CuTe vocabulary: a TiledMMA of m16n8k16 bf16 -> f32 atoms, partition_A/B,
-- cute.gemm, cp.async through a TiledCopy of CopyG2SOp atoms, and the online
-- softmax written with TensorSSA values (docs/TENSORCORE.md, "Walk-through:
-- FlashAttention-2 forward").
--
--   O = softmax(Q K^T * scale [+ causal mask]) V,  Q, K, V, O: (B*H, S, D)
--
-- One CTA of 4 warps per (batch*head, block of BM query rows); warp w owns
-- rows 16 w + 64 i (i < BM / 64) of the block, as the TiledMMA {4, 1, 1}
-- places them. For each block of BN = 64 keys: K and V tiles to shared memory
-- (cp.async, rows past S zero-filled), S = Q K^T in f32 C fragments, the
-- running row max / row sum updated with quad shuffles, P = exp2(S*scale*log2e
-- - m) rounded to bf16 and used directly as the A fragment of O += P V (the C
-- fragment of m16n8k16 is the A fragment of the next one), O rescaled by
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
local NT = 128 -- threads: 4 warps
local ADD, MAX = cute.ReductionOp.ADD, cute.ReductionOp.MAX

-- the configuration for head dimension d: BM query rows per CTA (128 for
-- d = 64; 64 for d = 128, which keeps the O accumulator at 64 registers)
function M.config(opts, level)
  level = level or 2
  local d = opts.d or 64
  if d ~= 64 and d ~= 128 then
    error("flash_attention_fwd: head dimension d = " .. tostring(d) .. " (64 or 128)", level)
  end
  local bm = opts.block_m or (d == 64 and 128 or 64)
  if bm ~= 64 and bm ~= 128 then error("flash_attention_fwd: block_m = " .. tostring(bm) .. " (64 or 128)", level) end
  return { d = d, bm = bm, causal = opts.causal and true or false, scale = opts.scale or 1 / math.sqrt(d) }
end

-- the fragment layouts of the softmax and of the FA2 trick for BM query rows
-- (MI = BM / 64 blocks of 16 rows per warp) and BN keys
function M.layouts(BM)
  local MI, NI = BM / 64, BN / 8
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
M.BN, M.THREADS = BN, NT

-- the TiledMMA of the kernel: 4 warps along M, bf16 m16n8k16 -> f32
function M.tiled_mma()
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } }
  return cute.make_tiled_mma(op, { 4, 1, 1 })
end

-- the kernel for one configuration; Q, K, V, O are (B*H, S, D) bf16 tensors
-- (S and D static: the kernel is specialised per sequence length)
function M.make_kernel(opts)
  local cfg = M.config(opts, 3)
  local D, BM, CAUSAL = cfg.d, cfg.bm, cfg.causal
  local MI = BM / 64 -- MMA_M: 16-row blocks per warp
  local NI = BN / 8 -- MMA_N of S
  local LD = D + 8 -- padded shared-memory rows (elements): 16-byte rows, no bank conflicts across rows
  local SCALE_LOG2 = cfg.scale * LOG2E

  local tm = M.tiled_mma() -- 128 threads, 64 x 8 x 16 per step
  -- cp.async 16 bytes (8 bf16) per thread and copy: D / 8 threads per row
  local TPR = D / 8
  local g2s = cute.make_tiled_copy_tv(
    cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp{ cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL }, bf16,
      { num_bits_per_copy = 128 }),
    cute.make_layout({ NT / TPR, TPR }, { TPR, 1 }), cute.make_layout({ 1, 8 }, { 8, 1 }))

  local L = M.layouts(BM)
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
    local mb, bh = cute.arch.block_idx()
    local lane, warp = cute.arch.lane_idx(), cute.div(tid, 32)
    local q0 = mb * BM
    local Qh, Kh, Vh, Oh = Q[{ bh, _, _ }], K[{ bh, _, _ }], V[{ bh, _, _ }], O[{ bh, _, _ }]
    local ident = cute.make_identity_tensor({ S, D })

    local sQ = cute.make_dynamic_shared_tensor(cute.make_layout({ BM, D }, { LD, 1 }), bf16, 16)
    local sK = cute.make_dynamic_shared_tensor(cute.make_layout({ BN, D }, { LD, 1 }), bf16, 16)
    local sV = cute.make_dynamic_shared_tensor(cute.make_layout({ BN, D }, { LD, 1 }), bf16, 16)
    local sVt = cute.make_tensor(sV, cute.make_layout({ D, BN }, { 1, LD })) -- V^T: (N = D, K = keys)

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

    -- Q block and K_0 -> shared (one cp.async group each); Q -> registers
    -- (A fragments, one per 16 columns of D)
    load_tile(cute.local_tile(Qh, { BM, D }, { mb, 0 }), sQ,
      S % BM ~= 0 and cute.local_tile(ident, { BM, D }, { mb, 0 }) or nil, S)
    cute.arch.cp_async_commit_group()
    load_tile(kv_tile(Kh, 0), sK, tail_crd(0), S)
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(1)
    cute.arch.sync_threads()
    local thr = tm:get_slice(tid)
    local tQ, tK, tV = {}, {}, {}
    for kk = 0, D / 16 - 1 do
      local p = thr:partition_A(cute.local_tile(sQ, { BM, 16 }, { 0, kk }))
      tQ[kk] = thr:make_fragment_A(p)
      cute.copy(p, tQ[kk])
      tK[kk] = thr:partition_B(cute.local_tile(sK, { BN, 16 }, { 0, kk }))
    end
    for kb = 0, BN / 16 - 1 do tV[kb] = thr:partition_B(cute.local_tile(sVt, { D, 16 }, { 0, kb })) end

    local acc_S = thr:make_fragment_C({ { 2, 2 }, MI, NI })
    local acc_O = thr:make_fragment_C({ { 2, 2 }, MI, D / 8 })
    local row_max = thr:make_fragment_C({ 2, MI }) -- in log2 units (scores * scale * log2e)
    local row_sum = thr:make_fragment_C({ 2, MI }) -- this thread's part of the row sums
    acc_O:fill(0)
    row_max:fill(-math.huge)
    row_sum:fill(0)

    -- this thread's element (v0 + 2 v1 + 4 mi + 4 MI ni) of S is at row
    -- q0 + rb + 64 mi + 8 v1, column j BN + cb + 8 ni + v0
    local rb = warp * 16 + cute.div(lane, 4)
    local cb = cute.rem(lane, 4) * 2

    -- key block j; on entry K_j is in flight (the only pending cp.async group)
    local function step(j, masked)
      -- V_j to shared memory once every warp is done with V_{j-1}; wait for K_j only
      cute.arch.sync_threads()
      load_tile(kv_tile(Vh, j), sV, masked and tail_crd(j) or nil, S)
      cute.arch.cp_async_commit_group()
      cute.arch.cp_async_wait_group(1)
      cute.arch.sync_threads()

      -- S = Q K_j^T
      acc_S:fill(0)
      for kk = 0, D / 16 - 1 do
        local b = thr:make_fragment_B(tK[kk])
        cute.copy(tK[kk], b)
        cute.gemm(tm, acc_S, tQ[kk], b, acc_S)
      end
      -- sK is free: prefetch K_{j+1} while the softmax and O += P V_j run
      cute.arch.sync_threads()
      cute.if_then(cute.lt(j + 1, nkv), function() load_tile(kv_tile(Kh, j + 1), sK, tail_crd(j + 1), S) end)
      cute.arch.cp_async_commit_group() -- (an empty group after the last block)

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
                  local c = cute.le(drow, 64 * mi + 8 * v1 - 8 * ni - v0)
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
      local s = acc_S:load() * SCALE_LOG2
      local m_old = row_max:load()
      local m_new = cute.math.max(m_old, cute.threadquad_reduce_max(s:reduce(MAX, -math.huge, { { 1, _ }, _, 1 })))
      local m_use = cute.where(m_new:eq(-math.huge), 0.0, m_new) -- a row with no key yet: exp2(-inf - 0) = 0
      local p = cute.math.exp2(s - m_use:compose(row_view(NI)), true)
      local corr = cute.math.exp2(m_old - m_use, true)
      row_max:store(m_new)
      row_sum:store(row_sum:load() * corr + p:reduce(ADD, 0.0, { { 1, _ }, _, 1 }))
      acc_O:store(acc_O:load() * corr:compose(row_view(D / 8)))

      -- O += P V_j, P straight from registers as A fragments (V_j: all but the newest group)
      cute.arch.cp_async_wait_group(1)
      cute.arch.sync_threads()
      local pk = p:to(bf16):compose(PK)
      for kb = 0, BN / 16 - 1 do
        local a = thr:make_fragment_A({ { 2, 2, 2 }, MI, 1 })
        a:store(pk[{ _, _, { _, kb } }]:compose(AFR))
        local b = thr:make_fragment_B(tV[kb])
        cute.copy(tV[kb], b)
        cute.gemm(tm, acc_O, a, b, acc_O)
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
        if S % BM ~= 0 then cute.if_then(cute.lt(64 * mi + 8 * v1, nrow), put) else put() end
      end
    end
  end, { name = ("flash_attention_fwd_d%d_bm%d%s"):format(D, BM, CAUSAL and "_causal" or ""), ftz = true })
end

-- the tensor specs and launch shape of (B*H, S, D)
function M.specs(bh, s, d)
  local t = cute.tensor_spec({ bh, s, d }, bf16)
  return t, t, t, t
end
function M.launch_cfg(opts, bh, s)
  local cfg = M.config(opts)
  return { grid = { math.ceil(s / cfg.bm), bh, 1 }, block = NT }
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

-- run the kernel on random data and compare every output with the CPU
-- reference; returns the largest absolute error and the relative error norm
function M.check(opts, b, h, s)
  local cfg = M.config(opts)
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
  M.make_kernel(opts):launch(M.launch_cfg(opts, bh, s))(dev.q, dev.k, dev.v, dO)
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
