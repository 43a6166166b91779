-- FlashAttention-3-style forward for Hopper (sm_90a): bf16 in, f32 softmax
-- and accumulators, bf16 out (docs/HOPPER.md, "FlashAttention-3-style forward").
--
--   O = softmax(Q K^T * scale [+ causal mask]) V,  Q, K, V, O: (B*H, S, D), D = 64 or 128
--
-- One CTA of three warpgroups (384 threads) per (batch*head, block of BM = 128
-- query rows):
--   * warpgroup 0 is the producer: it gives registers back
--     (cute.arch.warpgroup_reg_dealloc) and its warp 0 issues the TMA loads:
--     the Q tile once (its own mbarrier), then the key blocks K_j and V_j into
--     two rings of `stages` shared-memory buffers, each guarded by a
--     cute.pipeline.PipelineTmaAsync (full barrier: the TMA bytes have landed;
--     empty barrier: the consumers are done with the buffer);
--   * warpgroups 1 and 2 are the consumers (cute.arch.warpgroup_reg_alloc):
--     each owns 64 query rows of the tile. Per key block of BN = 128 keys:
--     S = Q K_j^T with wgmma (A = Q and B = K from shared memory, both
--     K-major, 128-byte swizzle), the online softmax on the accumulator
--     fragment (row max / row sum across the 4 threads of a row with quad
--     shuffles, as examples/flash_attention_fwd.lua does), P rounded to bf16
--     in registers and used as wgmma's A-from-registers operand of
--     O += P V_j (V read MN-major from the same buffer the TMA wrote: the B
--     operand transposed through the descriptor, no copy).
-- Softmax and tensor cores overlap inside a warpgroup (overlap = true, the
-- default): S_{j+1} = Q K_{j+1}^T is issued, then O += P_j V_j, and the softmax
-- of S_{j+1} runs while P_j V_j is still on the tensor cores; and across the
-- two warpgroups (pingpong = true, the default): they take turns issuing
-- their wgmma on two named barriers, so one's softmax runs under the other's
-- GEMMs.
-- Keys are visited from the last block to the first, so the only masked block
-- (causal diagonal and / or keys past S) is the first one.
-- Q, K and V reach shared memory through TMA (rows past S zero-filled by the
-- tensor map); O goes through shared memory and a TMA store (epilogue = "tma"),
-- or straight from registers (epilogue = "direct"). S is a
-- run-time value: one compile serves every sequence length.
--
--   cuteluajit examples/flash_attention_sm90.lua [B] [H] [S] [D] [causal: 0/1]
-- checks the kernel against a CPU reference (environment: FA3_STAGES,
-- FA3_OVERLAP=0, FA3_PINGPONG=0, FA3_EPILOGUE=direct choose another
-- configuration). Without a GPU it prints the PTX of the kernel for those sizes.
local cute = require("cute")
local ex = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")
local bf16, f32 = cute.bfloat16, cute.float32

local M = {}
local LOG2E = 1.4426950408889634
local BM, BN = 128, 128 -- query rows per CTA (two consumer warpgroups of 64), keys per block
M.BM, M.BN = BM, BN

-- the configuration for head dimension d (64 or 128, default 128): causal,
-- scale (default 1/sqrt(d)), stages of the K and V rings (2), registers of the
-- producer and consumer warpgroups (setmaxnreg: 24, 240), overlap of softmax
-- and wgmma inside a consumer warpgroup (true), ping-pong between the two
-- consumer warpgroups (true), epilogue ("tma" or "direct"), arch; each
-- checked, errors at the caller's line (`level`)
function M.config(opts, level)
  level = level or 2
  opts = opts or {}
  local known = { d = true, causal = true, scale = true, stages = true, producer_regs = true, consumer_regs = true,
    overlap = true, pingpong = true, epilogue = true, arch = true }
  for k in pairs(opts) do
    if not known[k] then
      error(("flash_attention_sm90: unknown option %s (d, causal, scale, stages, producer_regs, consumer_regs, " ..
        "overlap, pingpong, epilogue, arch)"):format(tostring(k)), level)
    end
  end
  local d = opts.d or 128
  if d ~= 64 and d ~= 128 then
    error("flash_attention_sm90: head dimension d = " .. tostring(d) .. " (64 or 128)", level)
  end
  local stages = opts.stages or 2
  -- shared memory: Q (BM x d) + K and V (BN x d each) per stage, bf16, within 227 KiB
  local smem = 2 * d * (BM + 2 * BN * (type(stages) == "number" and stages or 0))
  if type(stages) ~= "number" or stages % 1 ~= 0 or stages < 1 or smem + 1024 > 227 * 1024 then
    error(("flash_attention_sm90: stages = %s (an integer >= 1 whose Q, K and V buffers fit 227 KiB: %d bytes)")
      :format(tostring(stages), smem), level)
  end
  local preg, creg = opts.producer_regs or 24, opts.consumer_regs or 240
  for _, r in ipairs({ { "producer_regs", preg }, { "consumer_regs", creg } }) do
    local v = r[2]
    if type(v) ~= "number" or v % 8 ~= 0 or v < 24 or v > 256 then
      error(("flash_attention_sm90: %s = %s (a multiple of 8 from 24 to 256)"):format(r[1], tostring(v)), level)
    end
  end
  if 128 * preg + 256 * creg > 65536 then
    error(("flash_attention_sm90: producer_regs = %d, consumer_regs = %d: 128 x %d + 256 x %d registers exceed the 65536 of an SM")
      :format(preg, creg, preg, creg), level)
  end
  local epilogue = opts.epilogue or "tma"
  if epilogue ~= "tma" and epilogue ~= "direct" then
    error(("flash_attention_sm90: epilogue = %s (\"tma\": through shared memory and a TMA store, or \"direct\": " ..
      "from registers)"):format(tostring(epilogue)), level)
  end
  local scale = opts.scale or 1 / math.sqrt(d)
  if type(scale) ~= "number" or not (scale > 0 and scale < math.huge) then
    -- (the row maximum is taken of the raw scores, then scaled)
    error(("flash_attention_sm90: scale = %s (a positive finite number)"):format(tostring(scale)), level)
  end
  local overlap, pingpong = opts.overlap, opts.pingpong
  if overlap == nil then overlap = true end
  if pingpong == nil then pingpong = true end
  return { d = d, causal = opts.causal and true or false, scale = scale,
    stages = stages, producer_regs = preg, consumer_regs = creg, overlap = overlap and true or false,
    pingpong = pingpong and true or false, epilogue = epilogue,
    smem = smem }
end

-- shared-memory layouts: Q (BM, D) and the K / V rings (BN, D, stages) on
-- K-major 128-byte swizzle atoms (Sw<3,4,3> on bytes o (8,64):(64,1)),
-- tiled down the rows first: a 64-column slab of all rows, then the next
-- (what TMA writes with a 128-byte box row and what wgmma's descriptors read)
function M.smem_layouts(cfg)
  local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, bf16)
  return {
    q = cute.tile_to_shape(atom, { BM, cfg.d }, { 1, 2 }),
    kv = cute.tile_to_shape(atom, { BN, cfg.d, cfg.stages }, { 1, 2, 3 }),
    kv_stage = cute.tile_to_shape(atom, { BN, cfg.d }, { 1, 2 }),
    o_half = cute.tile_to_shape(atom, { BM / 2, cfg.d }, { 1, 2 }), -- one warpgroup's O tile (TMA store)
  }
end

-- thread t (0..127) of a consumer warpgroup holds element i of an m64nN
-- accumulator at row 16 (t / 32) + (t % 32) / 4 + 8 ((i / 2) % 2), column
-- 8 (i / 4) + 2 (t % 4) + i % 2 (the PTX ISA's wgmma D fragment: mma.sync's
-- m16n8 C fragment repeated over N / 8 column blocks, one 16-row band per warp)
function M.acc_coord(t, i)
  local w, lane = math.floor(t / 32), t % 32
  return 16 * w + math.floor(lane / 4) + 8 * (math.floor(i / 2) % 2),
    8 * math.floor(i / 4) + 2 * (lane % 4) + i % 2
end
-- ... and element e (0..7) of the A fragment of m64nNk16 with A in registers
-- (k-block kb) at row 16 (t/32) + (t%32)/4 + 8 ((e/2)%2), column 16 kb + 8 (e/4)
-- + 2 (t%4) + e%2: accumulator elements 8 kb + e, in order (the FA2 trick,
-- one k16 block of P per wgmma)
function M.a_coord(t, kb, e)
  local w, lane = math.floor(t / 32), t % 32
  return 16 * w + math.floor(lane / 4) + 8 * (math.floor(e / 2) % 2),
    16 * kb + 8 * math.floor(e / 4) + 2 * (lane % 4) + e % 2
end

-- the wgmma operands in shared memory (cute.arch.make_wgmma_desc, 128-byte
-- swizzle): leading / stride byte offsets and the byte offset of each
-- instruction's operand from its buffer's start (the descriptor's start
-- address, before the swizzle the hardware applies to every address):
--   q(c, kk): A of S = Q K^T, K-major: warpgroup c's 64 rows, k16 step kk
--     (32 bytes along a 128-byte row, then the next 64-column slab of BM rows)
--   k(st, kk): B of S = Q K^T, K-major: stage st, k16 step kk
--   v(st, kb): B of O += P V, MN-major: stage st, keys 16 kb .. 16 kb + 15
--     (two 8-key row groups); LBO = the next 64 columns of D (a slab of BN rows)
-- 8-row groups are SBO = 1024 bytes apart in all three
function M.operands(cfg)
  local stage = BN * cfg.d * 2
  return {
    q = { lbo = 16, sbo = 1024, offset = function(c, kk) return c * 64 * 128 + math.floor(kk / 4) * BM * 128 + (kk % 4) * 32 end },
    k = { lbo = 16, sbo = 1024, offset = function(st, kk) return st * stage + math.floor(kk / 4) * BN * 128 + (kk % 4) * 32 end },
    v = { lbo = BN * 128, sbo = 1024, offset = function(st, kb) return st * stage + kb * 2048 end },
  }
end

-- a descriptor moved by `bytes` (a multiple of 16; a Lua number or traced):
-- the start address is the low field, in 16-byte units
local function desc_add(desc, bytes)
  if type(bytes) ~= "number" then return desc + cute.Uint64(cute.div(bytes, 16)) end
  if bytes == 0 then return desc end
  return desc + bytes / 16
end

function M.make_kernel(opts)
  local cfg = M.config(opts, 3)
  local D, CAUSAL, STAGES, OVERLAP, PINGPONG = cfg.d, cfg.causal, cfg.stages, cfg.overlap, cfg.pingpong
  local TMA_STORE = cfg.epilogue == "tma"
  local SCALE_LOG2 = cfg.scale * LOG2E
  local L = M.smem_layouts(cfg)
  local QK_STEPS, PV_STEPS = D / 16, BN / 16
  local OPS = M.operands(cfg)
  local TX_Q, TX_KV = BM * D * 2, BN * D * 2
  local NACC_S, NACC_O = BN / 2, D / 2 -- f32 accumulator registers per thread

  -- the raw warpgroup MMAs: S = Q K^T (A and B K-major from shared memory)
  -- and O += P V (A = P from registers, B = V MN-major from shared memory)
  local wg = cute.nvgpu.warpgroup
  local function mma_qk()
    return cute.arch.wgmma_mma_async{ shape = ("m64n%dk16"):format(BN), a_type = bf16, b_type = bf16, c_type = f32,
      a_major = "K", b_major = "K", a_src = "smem" }
  end
  local function mma_pv()
    return cute.arch.wgmma_mma_async{ shape = ("m64n%dk16"):format(D), a_type = bf16, b_type = bf16, c_type = f32,
      a_major = "K", b_major = "MN", a_src = "rmem" }
  end

  local name = ("flash_attention_sm90_d%d_s%d%s%s%s%s"):format(D, STAGES, CAUSAL and "_causal" or "",
    OVERLAP and "" or "_serial", PINGPONG and "" or "_nopp", TMA_STORE and "" or "_direct")
  -- O: the output tensor (epilogue = "direct") or its TMA store atom, mO its coordinates ("tma")
  return cute.kernel(function(tma_q, mQ, tma_k, mK, tma_v, mV, S, O, mO)
    local tid = cute.arch.thread_idx()
    local bx, bh = cute.arch.block_idx()
    local warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    local wg_idx = cute.div(warp, 4) -- 0: producer, 1 and 2: consumers
    local nmb = cute.div(S + (BM - 1), BM)
    -- causal: the query blocks with the most key blocks are launched first
    local mb = bx
    if CAUSAL then mb = nmb - 1 - bx end
    local q0 = mb * BM
    -- key blocks 0 .. nkv - 1 (causal: up to the diagonal)
    local nkv = cute.div(S + (BN - 1), BN)
    if CAUSAL then nkv = cute.min(nkv, cute.div(q0 + BM + (BN - 1), BN)) end

    -- shared memory: Q, the K and V rings, their barriers
    local sQ = cute.make_dynamic_shared_tensor(L.q, bf16, 1024)
    local sK = cute.make_dynamic_shared_tensor(L.kv, bf16, 1024)
    local sV = cute.make_dynamic_shared_tensor(L.kv, bf16, 1024)
    local barQ = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
    local barK = cute.make_shared_tensor(cute.make_layout(2 * STAGES), cute.int64, 8)
    local barV = cute.make_shared_tensor(cute.make_layout(2 * STAGES), cute.int64, 8)

    if warp == 0 then
      if cute.arch.elect_one() then
        cute.nvgpu.cpasync.prefetch_descriptor(tma_q)
        cute.nvgpu.cpasync.prefetch_descriptor(tma_k)
        cute.nvgpu.cpasync.prefetch_descriptor(tma_v)
        cute.arch.mbarrier_init(barQ, 1)
      end
    end
    -- the pipelines: the producer is TMA (one elected thread arrives with the
    -- transaction count), the consumers release a stage once per consumer
    -- warp (8 arrivals); barriers initialised here, one fence + sync below
    local P = cute.pipeline
    local function ring(bar)
      return P.PipelineTmaAsync.create{ barrier_storage = bar, num_stages = STAGES,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
        consumer_group = P.CooperativeGroup(P.Agent.Thread, 8),
        tx_count = TX_KV, cta_layout_vmnk = cute.make_layout({ 1, 1, 1, 1 }), defer_sync = true }
    end
    local pipe_k, pipe_v = ring(barK), ring(barV)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()

    -- this head's (S, D) tiles as TMA coordinates: Q's block, K's and V's key blocks
    local gQ = cute.local_tile(mQ[{ cute._, cute._, bh }], { BM, D }, { mb, 0 })
    local gK = cute.local_tile(mK[{ cute._, cute._, bh }], { BN, D }, { cute._, 0 }) -- (BN, D, nblocks)
    local gV = cute.local_tile(mV[{ cute._, cute._, bh }], { BN, D }, { cute._, 0 })

    if wg_idx == 0 then
      -- the producer warpgroup
      cute.arch.warpgroup_reg_dealloc(cfg.producer_regs)
      if warp == 0 then
        local cpa = cute.nvgpu.cpasync
        local one = cute.make_layout(1)
        local tQs, tQg = cpa.tma_partition(tma_q, 0, one, cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))
        local tKs, tKg = cpa.tma_partition(tma_k, 0, one, cute.group_modes(sK, 0, 2), cute.group_modes(gK, 0, 2))
        local tVs, tVg = cpa.tma_partition(tma_v, 0, one, cute.group_modes(sV, 0, 2), cute.group_modes(gV, 0, 2))
        if cute.arch.elect_one() then
          cute.arch.mbarrier_arrive_and_expect_tx(barQ, TX_Q)
          cute.copy(tma_q, tQg, tQs, { tma_bar_ptr = barQ })
        end
        -- key blocks from the last to the first
        local st = P.make_pipeline_state(P.PipelineUserType.Producer, STAGES)
        for i in cute.range(0, nkv) do
          local j = nkv - 1 - i
          pipe_k:producer_acquire(st)
          if cute.arch.elect_one() then
            cute.copy(tma_k, tKg[{ cute._, j }], tKs[{ cute._, st.index }], { tma_bar_ptr = pipe_k:producer_get_barrier(st) })
          end
          pipe_k:producer_commit(st)
          pipe_v:producer_acquire(st)
          if cute.arch.elect_one() then
            cute.copy(tma_v, tVg[{ cute._, j }], tVs[{ cute._, st.index }], { tma_bar_ptr = pipe_v:producer_get_barrier(st) })
          end
          pipe_v:producer_commit(st)
          st:advance()
        end
        -- do not leave before the consumers have taken the last buffers
        pipe_k:producer_tail(st:clone())
        pipe_v:producer_tail(st)
      end
    else
      -- a consumer warpgroup: rows r0 .. r0 + 63 of the tile
      cute.arch.warpgroup_reg_alloc(cfg.consumer_regs)
      local c = wg_idx - 1
      local t = tid - 128 * wg_idx -- thread in the warpgroup
      local lane = cute.rem(t, 32)
      local row_in = 16 * cute.div(t, 32) + cute.div(lane, 4) -- + 8 h: this thread's rows in the 64
      local col_in = 2 * cute.rem(lane, 4)                      -- + 8 n + e: its columns in a block
      local qk, pv = mma_qk(), mma_pv()

      -- descriptors of the buffers' starts, moved by the operands' offsets
      -- (those of warpgroup c and of the stage: traced; of the step: constants)
      local function desc(buf, o)
        return cute.arch.make_wgmma_desc(buf, { layout_type = "SW128", lbo = o.lbo, sbo = o.sbo })
      end
      local dQ = desc_add(desc(sQ, OPS.q), OPS.q.offset(c, 0))
      local dK, dV = desc(sK, OPS.k), desc(sV, OPS.v)

      local accS = cute.arch.make_fragment_regs(f32, NACC_S)
      local accO = cute.arch.make_fragment_regs(f32, NACC_O)
      local pB = cute.arch.make_fragment_regs(cute.uint32, NACC_S / 2) -- P (bf16 pairs) waiting for its P V
      local m = cute.arch.make_fragment_regs(f32, 2, -math.huge) -- row max (log2 units), rows +0 and +8
      local l = cute.arch.make_fragment_regs(f32, 2, 0)          -- this thread's part of the row sums
      local corr = cute.arch.make_fragment_regs(f32, 2, 1)       -- O's rescale before the next P V

      -- S = Q K^T of the K buffer `stage`: D / 16 wgmma
      local function issue_qk(stage)
        wg.fence()
        for kk = 0, QK_STEPS - 1 do
          local a = desc_add(dQ, OPS.q.offset(0, kk))
          local b = desc_add(desc_add(dK, OPS.k.offset(stage, 0)), OPS.k.offset(0, kk))
          qk(accS, a, b, kk > 0 and 1 or 0)
        end
        wg.commit_group()
      end
      -- O += P V of the V buffer `stage`: BN / 16 wgmma
      local function issue_pv(stage)
        wg.fence()
        local pe = pB:elements()
        for kb = 0, PV_STEPS - 1 do
          local a = cute.arch.make_fragment_regs(cute.uint32, 4)
          a:set_elements({ [0] = pe[4 * kb], pe[4 * kb + 1], pe[4 * kb + 2], pe[4 * kb + 3] })
          local b = desc_add(desc_add(dV, OPS.v.offset(stage, 0)), OPS.v.offset(0, kb))
          pv(accO, a, b, 1)
        end
        wg.commit_group()
      end
      -- P (f32, accumulator order) to bf16 pairs in pB: register r holds
      -- elements 2r (low half) and 2r + 1; after the P V that reads pB is done
      local function set_p(p)
        local packed = {}
        for r = 0, NACC_S / 2 - 1 do
          packed[r] = cute.arch.asm(cute.uint32, "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f", p[2 * r + 1], p[2 * r])
        end
        pB:set_elements(packed)
      end

      -- the online softmax of S (key block j; masked: columns past S and,
      -- causal, above the diagonal set to -inf): the new row max, P = exp2(S
      -- scale log2e - m) into pB, l updated, corr = exp2(m_old - m_new)
      local function softmax(j, masked)
        local s = accS:elements()
        if masked then
          local col0 = j * BN + col_in
          for i = 0, NACC_S - 1 do
            local n, h, e = math.floor(i / 4), math.floor(i / 2) % 2, i % 2
            local col = col0 + (8 * n + e)
            local ok = cute.lt(col, S)
            if CAUSAL then
              ok = cute.logical_and(ok, cute.le(col, q0 + 64 * c + row_in + 8 * h))
            end
            s[i] = cute.where(ok, s[i], -math.huge)
          end
        end
        local mo, lo = m:elements(), l:elements()
        local mn, mu, cr, ln = {}, {}, {}, {}
        for h = 0, 1 do
          local mx = cute.max(s[2 * h], s[2 * h + 1])
          for n = 1, BN / 8 - 1 do
            mx = cute.max(mx, cute.max(s[4 * n + 2 * h], s[4 * n + 2 * h + 1]))
          end
          mx = cute.threadquad_reduce_max(mx)
          mn[h] = cute.max(mo[h], mx * SCALE_LOG2)
          -- a row with no key yet (all -inf): exp2(-inf - 0) = 0
          mu[h] = cute.where(cute.eq(mn[h], -math.huge), 0.0, mn[h])
          cr[h] = cute.math.exp2(mo[h] - mu[h], true)
          ln[h] = lo[h] * cr[h]
        end
        local p = {}
        for i = 0, NACC_S - 1 do
          local h = math.floor(i / 2) % 2
          p[i] = cute.math.exp2(cute.math.fma(s[i], SCALE_LOG2, -mu[h]), true)
          ln[h] = ln[h] + p[i]
        end
        m:set_elements(mn)
        l:set_elements(ln)
        corr:set_elements(cr)
        return p
      end
      local function rescale_o()
        local o, cr = accO:elements(), corr:elements()
        for i = 0, NACC_O - 1 do o[i] = o[i] * cr[math.floor(i / 2) % 2] end
        accO:set_elements(o)
        wg.fence_operand(accO) -- the products are made here, before the wgmma.fence of the next P V
      end

      -- ping-pong between the two consumer warpgroups (pingpong = true): a
      -- warpgroup issues its wgmma only in its turn (named barrier 1 + c:
      -- bar.sync of its 128 threads + bar.arrive of the other 128), and passes
      -- the turn once they are issued, so one warpgroup's softmax runs while
      -- the other's GEMMs own the tensor cores. Warpgroup 0 starts; each
      -- warpgroup takes nkv + 1 turns, and the second one does not pass its
      -- last (no arrival left pending on a barrier).
      local function turn_wait()
        if PINGPONG then cute.arch.barrier{ barrier_id = 1 + c, number_of_threads = 256 } end
      end
      local function turn_pass()
        if PINGPONG then cute.arch.barrier_arrive{ barrier_id = 2 - c, number_of_threads = 256 } end
      end
      if PINGPONG then
        if c == 1 then cute.arch.barrier_arrive{ barrier_id = 1, number_of_threads = 256 } end
      end

      -- the masked block comes first (keys visited from the last block): with
      -- BM = BN the diagonal block and the block holding key S - 1 are both
      -- block nkv - 1 (masked whatever S is: S is known only at run time)
      local sk = P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES)
      local sv = P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES)
      cute.arch.mbarrier_wait(barQ, 0)
      accO:fill(0)

      -- block nkv - 1: S, softmax, P (its P V waits for the next block's S)
      pipe_k:consumer_wait(sk)
      turn_wait()
      issue_qk(sk.index)
      turn_pass()
      wg.wait_group(0)
      wg.fence_operand(accS)
      pipe_k:consumer_release(sk)
      sk:advance()
      set_p(softmax(nkv - 1, true))

      for i in cute.range(1, nkv) do
        local j = nkv - 1 - i
        -- O rescaled for the P waiting in pB, then S_j = Q K_j^T and
        -- O += P V_{j+1} issued together
        pipe_k:consumer_wait(sk)
        pipe_v:consumer_wait(sv)
        rescale_o()
        turn_wait()
        issue_qk(sk.index)
        issue_pv(sv.index)
        turn_pass()
        if OVERLAP then
          -- S_j done (P V may still run): its softmax overlaps P V
          wg.wait_group(1)
          wg.fence_operand(accS)
          pipe_k:consumer_release(sk)
          sk:advance()
          local p = softmax(j, false)
          wg.wait_group(0)
          wg.fence_operand(accO)
          pipe_v:consumer_release(sv)
          sv:advance()
          set_p(p)
        else
          wg.wait_group(0)
          wg.fence_operand(accS)
          wg.fence_operand(accO)
          pipe_k:consumer_release(sk)
          sk:advance()
          pipe_v:consumer_release(sv)
          sv:advance()
          set_p(softmax(j, false))
        end
      end
      -- the last P V
      pipe_v:consumer_wait(sv)
      rescale_o()
      turn_wait()
      issue_pv(sv.index)
      if c == 0 then turn_pass() end
      wg.wait_group(0)
      wg.fence_operand(accO)
      pipe_v:consumer_release(sv)

      -- O = acc / row sum, rows past S not written
      local lo = l:elements()
      local inv = {}
      for h = 0, 1 do
        local lt = cute.threadquad_reduce_sum(lo[h])
        inv[h] = cute.where(cute.eq(lt, 0.0), 0.0, 1.0 / lt)
      end
      local o = accO:elements()
      if TMA_STORE then
        -- through shared memory: this warpgroup's 64 rows of Q's buffer (only
        -- it read them, and its last S = Q K^T is done) take O in Q's swizzled
        -- layout, then one thread stores the tile with TMA (rows past S are
        -- outside the tensor map: not written)
        local sO = cute.local_tile(sQ, { 64, D }, { c, 0 })
        for h = 0, 1 do
          for n = 0, D / 8 - 1 do
            for e = 0, 1 do
              sO[{ row_in + 8 * h, col_in + 8 * n + e }] = o[4 * n + 2 * h + e] * inv[h]
            end
          end
        end
        cute.arch.fence_view_async_shared()
        cute.arch.barrier{ barrier_id = 3 + c, number_of_threads = 128 }
        if t < 32 then
          if cute.arch.elect_one() then
            local cpa = cute.nvgpu.cpasync
            local gO = cute.local_tile(mO[{ cute._, cute._, bh }], { 64, D }, { 2 * mb + c, 0 })
            local tOs, tOg = cpa.tma_partition(O, 0, cute.make_layout(1), cute.group_modes(sO, 0, 2),
              cute.group_modes(gO, 0, 2))
            cute.copy(O, tOs, tOg)
            cpa.tma_store_arrive()
            cpa.tma_store_wait(0) -- shared memory read before the CTA exits
          end
        end
      else
        -- from registers, one bf16 at a time, rows past S skipped
        local Oh = O[{ bh, cute._, cute._ }]
        for h = 0, 1 do
          local row = q0 + 64 * c + row_in + 8 * h
          if row < S then
            for n = 0, D / 8 - 1 do
              for e = 0, 1 do
                Oh[{ row, col_in + 8 * n + e }] = o[4 * n + 2 * h + e] * inv[h]
              end
            end
          end
        end
      end
    end
  end, { name = name, arch = opts.arch, ftz = true, max_threads_per_block = 384, min_blocks_per_sm = 1 })
end

-- the CPU reference of one (head, row) (double precision) and the comparison
-- on random data: the FA2 example's
local FA2 = ex.load("flash_attention_fwd")
M.reference_row = FA2.reference_row

-- the (S, D, B*H) view of a (B*H, S, D) tensor q (device tensor or
-- cute.tensor_spec) that the TMA atoms are made from: the contiguous D first
-- in the tensor map, rows past S of one head zero-filled (not the next
-- head's); S a run-time extent (one compile for every S)
local function seq_view(q)
  local bh, s, d = q.shape[1], q.shape[2], q.shape[3]
  return { shape = { s, d, bh }, strides = { d, 1, s * d }, dtype = q.dtype, ptr = q.ptr, dynamic = true }
end

-- the kernel's arguments for q, k, v, o (B*H, S, D): TMA atoms and their
-- coordinate tensors for Q (BM x D tiles) and K, V (BN x D tiles), O, S
function M.kernel_args(cfg, q, k, v, o)
  for i, t in ipairs({ q, k, v, o }) do
    local sh = type(t) == "table" and t.shape
    if not (sh and #sh == 3 and sh[1] == q.shape[1] and sh[2] == q.shape[2] and sh[3] == cfg.d and sh[2] >= 1
      and t.dtype and t.dtype.name == "bfloat16") then
      error(("flash_attention_sm90: tensor %d (%s) must be a bfloat16 (B*H, S, %d) tensor like q (%s), S >= 1")
        :format(i, ({ "q", "k", "v", "o" })[i], cfg.d, table.concat(q.shape or {}, ", ")), 3)
    end
  end
  local L = M.smem_layouts(cfg)
  local cpa = cute.nvgpu.cpasync
  local g2s = cpa.CopyBulkTensorTileG2SOp()
  local aq, tq = cpa.make_tiled_tma_atom(g2s, seq_view(q), L.q, { BM, cfg.d })
  local ak, tk = cpa.make_tiled_tma_atom(g2s, seq_view(k), L.kv_stage, { BN, cfg.d })
  local av, tv = cpa.make_tiled_tma_atom(g2s, seq_view(v), L.kv_stage, { BN, cfg.d })
  local args = { aq, tq, ak, tk, av, tv, cute.Int32(q.shape[2]) }
  if cfg.epilogue == "tma" then
    local ao, to = cpa.make_tiled_tma_atom(cpa.CopyBulkTensorTileS2GOp(), seq_view(o), L.o_half, { BM / 2, cfg.d })
    args[8], args[9] = ao, to
  else
    args[8], args[9] = cute.dynamic(o, { divisibility = 8, index_bits = 32 }), false -- (no coordinates)
  end
  return args
end

-- compile (no GPU needed) the kernel of opts for bh heads of sequence length
-- s; kernel_opts: compile options on top (e.g. {cache = false} for a cold compile)
function M.compile_spec(opts, bh, s, kernel_opts)
  local cfg = M.config(opts)
  local t = cute.tensor_spec({ bh, s, cfg.d }, bf16)
  local k = M.make_kernel(opts)
  if kernel_opts then k = k:with(kernel_opts) end
  return k:compile(unpack(M.kernel_args(cfg, t, t, t, t)))
end

-- the launch of kernel `kern` (M.make_kernel(opts)) on device tensors q, k, v, o
-- of shape (B*H, S, D): the TMA atoms built on the host, the grid; returns a
-- function that launches it and the kernel's argument list
function M.launcher(kern, opts, q, k, v, o)
  local cfg = M.config(opts)
  local args = M.kernel_args(cfg, q, k, v, o)
  local l = kern:launch(M.launch_cfg(q.shape[1], q.shape[2]))
  return function() l(unpack(args)) end, args
end

-- the grid of bh heads of sequence length s: one CTA of 384 threads per
-- (block of BM query rows, head); shared memory: what the kernel's tensors need
function M.launch_cfg(bh, s) return { grid = { math.ceil(s / BM), bh, 1 }, block = 384 } end

-- run the kernel on random data and compare every output with the CPU
-- reference; returns the largest absolute error and the relative error norm
function M.check(opts, b, h, s)
  local cfg = M.config(opts)
  return FA2.compare(cfg, b, h, s, function(q, k, v, o) M.launcher(M.make_kernel(opts), opts, q, k, v, o)() end)
end

if CUTE_EXAMPLE_LIB then return M end

local B, H, S, D = tonumber(arg[1]) or 1, tonumber(arg[2]) or 2, tonumber(arg[3]) or 200, tonumber(arg[4]) or 128
-- FA3_STAGES, FA3_OVERLAP=0, FA3_PINGPONG=0, FA3_EPILOGUE=direct: another configuration
local opts = { d = D, causal = arg[5] == "1", stages = tonumber(os.getenv("FA3_STAGES")),
  overlap = os.getenv("FA3_OVERLAP") ~= "0", pingpong = os.getenv("FA3_PINGPONG") ~= "0",
  epilogue = os.getenv("FA3_EPILOGUE") }
if not ex.gpu() then
  print(M.compile_spec(opts, B * H, S).ptx)
  return
end
local maxerr, rel = M.check(opts, B, H, S)
local cfg = M.config(opts)
print(("flash_attention_sm90 B=%d H=%d S=%d D=%d causal=%s (%d stages%s%s, %s epilogue): max |err| %.3g, relative error %.3g")
  :format(B, H, S, D, tostring(cfg.causal), cfg.stages, cfg.overlap and "" or ", serial",
    cfg.pingpong and ", ping-pong" or "", cfg.epilogue, maxerr, rel))
ex.check("flash_attention_sm90", rel, 1e-2)
