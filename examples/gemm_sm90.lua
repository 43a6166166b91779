-- Hopper (sm_90a) GEMM in CuTe DSL's vocabulary (docs/HOPPER.md, "Hopper GEMM
-- walk-through"), modelled on CuTe DSL's hopper dense GEMM:
--   C = alpha * A * B^T + beta * C
--   A: M x K, B: N x K (both K-major, "TN"), C: M x N; bf16 or f16 in (fp8 e4m3 through
--   examples/gemm_fp8_sm90.lua), f32 accumulators, bf16 (or f16 / f32) out.
-- * TMA: A and B tiles (128-byte swizzle, cute.sm90_utils.make_smem_layout_a/b) are loaded
--   by cp.async.bulk.tensor into a ring of STAGES (>= 4) shared-memory stages guarded by a
--   PipelineTmaAsync (a "full" and an "empty" mbarrier per stage). Loads past M, N or K are
--   zero-filled by the TMA unit: the main loop has no predicates.
-- * Warp specialisation: 3 warpgroups (384 threads). Warpgroup 0 is the producer: it gives
--   registers back (setmaxnreg.dec), and one elected thread of its first warp issues the
--   TMA loads. Warpgroups 1 and 2 are consumers (setmaxnreg.inc): each multiplies its
--   64 x BN half of the 128 x BN CTA tile with wgmma.mma_async m64nBNk16 straight from
--   the swizzled shared memory (descriptors), keeping one wgmma group in flight
--   (commit_group / wait_group(1)) and releasing each stage one k-tile behind.
-- * Persistent: grid = the SMs (in clusters); a static persistent tile scheduler hands each
--   CTA its tiles in grouped raster order (GROUP tiles along M share their B tiles in L2).
-- * Clusters of 2 x 1 CTAs along M: the two CTAs need the same B tile, so each loads half
--   of it and the TMA multicasts it into both CTAs' shared memory (mcast mask 0b11); the
--   consumers release a stage on both CTAs' "empty" barriers.
-- * Epilogue (while the producer already loads the next tile): 64 columns at a time, each
--   consumer thread writes alpha * acc (+ beta * C) in C's type into a shared staging tile
--   (its chunks alias one buffer through a stride-0 mode, so thr_mma:partition_C places
--   every accumulator); after a named barrier over the 256 consumer threads each stores
--   16-byte runs of rows to C, predicated per run on the matrix's edge.
-- * schedule = "pingpong" (CUTLASS's KernelTmaWarpSpecializedPingpong): each consumer
--   warpgroup owns a whole tile (64 x BN, or 128 x 128 with two m64 atoms stacked), the two
--   take alternate tiles of the CTA's sequence from the same PipelineTmaAsync ring, and two
--   ordered chains of named barriers (CUTLASS's OrderedSequenceBarrier) let one warpgroup's
--   mainloop run while the other does its epilogue: mainloops in tile order, epilogues in
--   tile order, one staging tile shared by turns.
-- Shapes are run-time values (one compile serves every M, N, K): M and N are any sizes,
-- K a multiple of 16 bytes (TMA's global strides), checked at the launch.
--   cuteluajit examples/gemm_sm90.lua [M] [N] [K]
--     env BN=128|256, STAGES, CLUSTER=1|2, SCHEDULE=cooperative|pingpong, BM=64|128 (pingpong)
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local _ = cute._
local f32 = cute.float32

local M_, N_, K_ = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096, tonumber(arg[3]) or 4096

local SMEM_LIMIT = 227 * 1024 -- an H100's opt-in shared memory per CTA

-- cfg: ab_dtype (bfloat16 | float16 | float8_e4m3fn), c_dtype (bfloat16), schedule
-- ("cooperative" | "pingpong"), bm (the tile's M: 128 cooperative; 64 (default) or 128
-- pingpong), bn (128 | 256; pingpong 128 x 128 has bn 128), stages (default: as many as
-- fit, at least 4), cluster_m (2 | 1), group (raster group, 8), peel (true: k-tile 0 as a
-- copy of the main loop's body before it; default false: one loop, which compiles
-- faster), name
local function make_gemm(cfg)
  cfg = cfg or {}
  local ab, c_dtype = cfg.ab_dtype or cute.bfloat16, cfg.c_dtype or cute.bfloat16
  local fp8 = ab.size == 1
  local SCHEDULE = cfg.schedule or "cooperative"
  if SCHEDULE ~= "cooperative" and SCHEDULE ~= "pingpong" then
    error(("gemm_sm90: schedule = %s: must be \"cooperative\" or \"pingpong\""):format(tostring(SCHEDULE)), 2)
  end
  local PP = SCHEDULE == "pingpong"
  local BM = cfg.bm or (PP and 64 or 128)
  local BN = cfg.bn or ((PP and BM == 128) and 128 or 256)
  local BK = 128 / ab.size                  -- one 128-byte swizzle row of K per k-tile
  local MMA_K = fp8 and 32 or 16
  local KB = BK / MMA_K                     -- wgmma k-blocks per k-tile
  local CM = cfg.cluster_m or 2             -- CTAs per cluster, along M (B is multicast)
  local GROUP = cfg.group or 8
  local PEEL = cfg.peel and true or false
  if BN ~= 128 and BN ~= 256 then error(("gemm_sm90: bn = %s: must be 128 or 256"):format(tostring(BN)), 2) end
  if CM ~= 1 and CM ~= 2 then error(("gemm_sm90: cluster_m = %s: must be 1 or 2"):format(tostring(CM)), 2) end
  if not PP and BM ~= 128 then
    error(("gemm_sm90: bm = %s: the cooperative schedule's tile is 128 rows (two warpgroups of 64)")
      :format(tostring(BM)), 2)
  end
  if PP and BM ~= 64 and BM ~= 128 then
    error(("gemm_sm90: bm = %s: a ping-pong tile is 64 or 128 rows (one warpgroup, m64 atoms)"):format(tostring(BM)), 2)
  end
  if PP and BM * BN > 64 * 256 then
    error(("gemm_sm90: bm = %d, bn = %d: one warpgroup's %d x %d accumulator is %d f32 registers per thread " ..
      "(at most 128 fit); ping-pong tiles are 64 x 256, 64 x 128 or 128 x 128"):format(BM, BN, BM, BN,
      BM * BN / 128), 2)
  end
  -- threads of one tile's epilogue: both consumer warpgroups (cooperative) or one (pingpong)
  local ETHREADS = PP and 128 or 256
  -- the epilogue's staging tile: BM rows of EPI_N columns (128 bytes of C's type),
  -- rows padded by 16 bytes (bank-conflict-free register writes); the chunks of a tile
  -- alias it (stride 0), so thr_mma:partition_C gives every accumulator its place.
  -- Ping-pong: the two warpgroups' epilogues take turns, so they share it
  local EPI_N = 128 / c_dtype.size
  local NCH = BN / EPI_N
  local EP = EPI_N + 16 / c_dtype.size
  local V = 16 / c_dtype.size                 -- elements per 16-byte run
  local RUN_PER_ROW = EPI_N / V
  local RUNS = BM * RUN_PER_ROW / ETHREADS    -- runs per epilogue thread per chunk
  local sC_layout = cute.make_layout({ BM, { EPI_N, NCH } }, { EP, { 1, 0 } })
  local stage_bytes = (BM + BN) * BK * ab.size
  local other_bytes = BM * EP * c_dtype.size + 16 * 8 + 1024  -- staging tile, mbarriers, alignment
  local STAGES = cfg.stages or math.min(8, math.floor((SMEM_LIMIT - other_bytes) / stage_bytes))
  if STAGES < 2 or STAGES * stage_bytes + other_bytes > SMEM_LIMIT then
    error(("gemm_sm90: stages = %d: %d stages of %d bytes and %d bytes of staging and barriers do not fit in " ..
      "%d bytes of shared memory"):format(STAGES, STAGES, stage_bytes, other_bytes, SMEM_LIMIT), 2)
  end
  local THREADS = 384                       -- producer warpgroup + two consumer warpgroups
  local PRODUCER_REGS, CONSUMER_REGS = 40, 232

  local wg = cute.nvgpu.warpgroup
  local op = fp8 and wg.MmaF8Op(ab, ab, f32, { 64, BN, 32 }) or wg.MmaF16BF16Op(ab, f32, { 64, BN, 16 })
  -- cooperative: two warpgroups along M (128 x BN); pingpong: one warpgroup, its BM / 64
  -- m64 atoms stacked along M
  local tiled_mma = cute.make_tiled_mma(op, { PP and 1 or 2, 1, 1 })
  local tile_mnk = { BM, BN, BK }
  local sA_layout = cute.sm90_utils.make_smem_layout_a("K", tile_mnk, ab, STAGES)  -- (BM, BK, STAGES)
  local sB_layout = cute.sm90_utils.make_smem_layout_b("K", tile_mnk, ab, STAGES)  -- (BN, BK, STAGES)
  local sA_stage, sB_stage = cute.slice_({ _, _, 0 }, sA_layout), cute.slice_({ _, _, 0 }, sB_layout)
  local tx_bytes = stage_bytes              -- A tile + the whole B tile (half from the peer)
  local cp = cute.nvgpu.cpasync
  local pl = cute.pipeline
  -- the consumer warps that read (and release) one stage: both warpgroups' 8 warps
  -- (cooperative) or the 4 of the warpgroup that owns the tile (pingpong)
  local STAGE_WARPS = PP and 4 or 8
  -- named barriers (id 0 is the block barrier): cooperative: 1 = the epilogue's 256
  -- threads. Pingpong, per consumer warpgroup c = 0, 1: 1 + c its turn to run its
  -- mainloop, 3 + c its turn to run its epilogue (256 threads: its own 128 bar.sync, the
  -- other warpgroup's 128 bar.arrive), 5 + c its epilogue's 128 threads
  local BAR_EPI, BAR_MMA_TURN, BAR_EPI_TURN, BAR_PP_EPI = 1, 1, 3, 5

  local st_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), c_dtype, { num_bits_per_copy = 128 })

  -- wide: C's rows are 16-byte aligned (N a multiple of V, strides promised divisible);
  -- with_beta: C is read (beta ~= 0)
  local function build(wide, with_beta)
  return cute.kernel(function(tma_a, mA, tma_b, mB, Cm, alpha, beta)
    local M, K = cute.size(mA, 0), cute.size(mA, 1)
    local N = cute.size(mB, 0)
    local tid = cute.arch.thread_idx()
    local warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    local wgi = cute.arch.make_warp_uniform(cute.div(tid, 128))  -- 0: producer, 1-2: consumers
    local ktiles = cute.div(K + (BK - 1), BK)

    if warp == 0 then
      cp.prefetch_descriptor(tma_a)
      cp.prefetch_descriptor(tma_b)
    end

    -- shared memory: the A and B stages (1024-byte aligned for the 128-byte swizzle), then
    -- the pipeline's mbarriers (full[STAGES], empty[STAGES])
    local sA = cute.make_tensor(cute.make_dynamic_shared_tensor(cute.make_layout(cute.cosize(sA_layout)), ab, 1024),
      sA_layout)
    local sB = cute.make_tensor(cute.make_dynamic_shared_tensor(cute.make_layout(cute.cosize(sB_layout)), ab, 1024),
      sB_layout)
    local mbar = cute.make_dynamic_shared_tensor(cute.make_layout(2 * STAGES), cute.int64, 8)

    -- the pipeline: the producer arrives once per stage (with the stage's transaction
    -- bytes); every consumer warp of both CTAs that read the stage releases it (all 8
    -- consumer warps, or the 4 of the ping-pong warpgroup whose tile it holds).  create
    -- initialises the barriers and synchronises the cluster (no CTA multicasts into a
    -- peer whose barriers are not initialised yet)
    local pipe = pl.PipelineTmaAsync.create{
      barrier_storage = mbar, num_stages = STAGES,
      producer_group = pl.CooperativeGroup(pl.Agent.Thread, 1),
      consumer_group = pl.CooperativeGroup(pl.Agent.Thread, STAGE_WARPS * CM),
      tx_count = tx_bytes,
      cta_layout_vmnk = cute.make_layout({ 1, CM, 1, 1 }) }

    -- the CTA's place in its cluster, and the tile scheduler (the same walk in every role)
    local rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    local tiles_m, tiles_n = cute.div(M + (BM - 1), BM), cute.div(N + (BN - 1), BN)
    local params = cute.utils.PersistentTileSchedulerParams({ tiles_m, tiles_n, 1 }, { CM, 1, 1 },
      { raster = "M", group = GROUP })
    local sched = cute.utils.StaticPersistentTileScheduler.create(params, { cute.arch.block_idx() },
      { cute.arch.grid_dim() })

    if wgi == 0 then
      ------------------------------------------------------------------ producer
      cute.arch.warpgroup_reg_dealloc(PRODUCER_REGS)
      if warp == 0 then
        -- TMA views: (TMA, k) of global coordinates and (TMA, stage) of shared memory;
        -- B is split between the cluster's CTAs (each loads and multicasts its half)
        local gA = cute.local_tile(mA, { BM, BK }, { _, _ })         -- (BM, BK, m, k)
        local gB = cute.local_tile(mB, { BN, BK }, { _, _ })         -- (BN, BK, n, k)
        local tAsA, tAgA = cp.tma_partition(tma_a, 0, cute.make_layout(1),
          cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        local tBsB, tBgB = cp.tma_partition(tma_b, rank, cute.make_layout(CM),
          cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        local mcast = bit.lshift(1, CM) - 1
        local state = pl.make_pipeline_state(pl.PipelineUserType.Producer, STAGES)
        local work = sched:initial_work_tile_info()
        while work.is_valid_tile do
          local tm, tn = work.tile_idx[1], work.tile_idx[2]
          for kt in cute.range(ktiles) do
            pipe:producer_acquire(state)                     -- the stage is empty; expect its bytes
            if cute.arch.elect_one() then
              local bar = pipe:producer_get_barrier(state)
              cute.copy(tma_a, tAgA[{ _, tm, kt }], tAsA[{ _, state.index }], { tma_bar_ptr = bar })
              cute.copy(tma_b, tBgB[{ _, tn, kt }], tBsB[{ _, state.index }],
                { tma_bar_ptr = bar, mcast_mask = CM > 1 and mcast or nil })
            end
            pipe:producer_commit(state)
            state:advance()
          end
          sched:advance_to_next_work()
          work = sched:get_current_work()
        end
        pipe:producer_tail(state)                            -- the peer's releases have landed
      end
    else
      ------------------------------------------------------------------ consumers
      cute.arch.warpgroup_reg_alloc(CONSUMER_REGS)
      -- cooperative: the 256 consumer threads share each tile; pingpong: warpgroup c
      -- (0 or 1) has tiles of its own, its 128 threads numbered from 0
      local c = wgi - 1
      local mtid = PP and (tid - 128 * wgi) or (tid - 128)
      local thr_mma = tiled_mma:get_slice(mtid)
      local tCrA = tiled_mma:make_fragment_A(thr_mma:partition_A(sA))  -- descriptors (MMA, MMA_M, MMA_K, STAGES)
      local tCrB = tiled_mma:make_fragment_B(thr_mma:partition_B(sB))
      -- the staging tile; which accumulators fall in which chunk of EPI_N columns (read
      -- off thread 0's coordinates at trace time: the other threads' differ by < 8 columns)
      local sC_buf = cute.make_dynamic_shared_tensor(cute.make_layout(BM * EP), c_dtype, 16)
      local tCsC = thr_mma:partition_C(cute.make_tensor(sC_buf, sC_layout))
      local sCr = cute.make_tensor(sC_buf, cute.make_layout({ BM, EP }, { EP, 1 }))
      local crd0 = tiled_mma:get_slice(0):partition_C(cute.make_identity_tensor({ BM, BN }))
      local chunk_elems = {}
      for ch = 0, NCH - 1 do chunk_elems[ch] = {} end
      for e = 0, cute.size(crd0) - 1 do
        local ch = math.floor(crd0[e][2] / EPI_N)
        chunk_elems[ch][#chunk_elems[ch] + 1] = e
      end
      local read = pl.make_pipeline_state(pl.PipelineUserType.Consumer, STAGES)
      local release = pl.make_pipeline_state(pl.PipelineUserType.Consumer, STAGES)
      local idC = cute.make_identity_tensor({ M, N })

      -- the k loop of one tile into acc: on return every k-tile's wgmma is issued and
      -- the last group is still in flight (its stage not yet released)
      local function mainloop(acc)
        -- one wgmma group in flight; the stage of the previous group is freed once that
        -- group has completed (wait_group(1)).  k-tile 0's first wgmma overwrites the
        -- accumulators (scale-d 0) and k-tile 0 frees no stage: by default in the loop,
        -- through the traced scale-d kt > 0 and a branch; with cfg.peel as a copy of the
        -- loop's body before it (more wgmma for ptxas: docs/HOPPER.md "Compile time")
        local k0 = 0
        if PEEL then
          tiled_mma:set("accumulate", false)
          pipe:consumer_wait(read)
          wg.fence()
          cute.gemm(tiled_mma, acc, tCrA[{ _, _, _, read.index }], tCrB[{ _, _, _, read.index }], acc)
          tiled_mma:set("accumulate", true)
          wg.commit_group()
          read:advance()
          k0 = 1
        end
        for kt in cute.range(k0, ktiles) do
          if not PEEL then tiled_mma:set("accumulate", kt > 0) end
          pipe:consumer_wait(read)
          wg.fence()
          cute.gemm(tiled_mma, acc, tCrA[{ _, _, _, read.index }], tCrB[{ _, _, _, read.index }], acc)
          wg.commit_group()
          wg.wait_group(1)
          if PEEL then
            pipe:consumer_release(release)
            read:advance()
            release:advance()
          else
            if kt > 0 then
              pipe:consumer_release(release)
              release:advance()
            end
            read:advance()
          end
        end
      end
      -- the last group: wait for it, free its stage
      local function mainloop_tail(acc)
        wg.wait_group(0)
        wg.fence_operand(acc)                                -- the epilogue reads acc after the wait
        pipe:consumer_release(release)
        release:advance()
      end

      -- epilogue, EPI_N columns at a time through the staging tile: the chunk's
      -- accumulators -> alpha acc (+ beta C) in C's type -> shared memory; then each
      -- epilogue thread stores 16-byte runs of rows to C (under a predicate on the edge).
      -- sync: the named barrier of the epilogue's ETHREADS threads
      local function epilogue(acc, tm, tn, sync)
        local gC = cute.local_tile(Cm, { BM, BN }, { tm, tn })
        local tCcC                                           -- (C's coordinates, to read it)
        if with_beta then tCcC = thr_mma:partition_C(cute.local_tile(idC, { BM, BN }, { tm, tn })) end
        for ch in cute.range_constexpr(NCH) do
          sync()                                             -- the last chunk has been read
          for _, e in ipairs(chunk_elems[ch]) do
            local d = acc[e] * alpha
            if with_beta then
              local rc = tCcC[e]
              if cute.elem_less(rc, { M, N }) then d = d + Cm[rc]:to(f32) * beta end
            end
            tCsC[e] = d
          end
          sync()
          for i in cute.range_constexpr(RUNS) do
            local q = mtid + ETHREADS * i
            local r, j = cute.div(q, RUN_PER_ROW), q % RUN_PER_ROW
            local gr, gc = tm * BM + r, tn * BN + ch * EPI_N + j * V
            if gr < M then
              if wide then
                if gc < N then
                  cute.copy(st_atom, cute.local_tile(sCr[{ r, _ }], { V }, { j }),
                    cute.local_tile(gC[{ r, _ }], { V }, { ch * RUN_PER_ROW + j }))
                end
              else
                for v in cute.range_constexpr(V) do
                  if gc + v < N then gC[{ r, ch * EPI_N + j * V + v }] = sCr[{ r, j * V + v }] end
                end
              end
            end
          end
        end
      end

      if not PP then
        ---------------------------------------------------------------- cooperative
        local function sync() cute.arch.barrier{ barrier_id = BAR_EPI, number_of_threads = 256 } end
        local work = sched:initial_work_tile_info()
        while work.is_valid_tile do
          local tm, tn = work.tile_idx[1], work.tile_idx[2]
          local acc = thr_mma:partition_fragment_C(cute.local_tile(Cm, { BM, BN }, { tm, tn }))  -- f32
          mainloop(acc)
          mainloop_tail(acc)
          epilogue(acc, tm, tn, sync)
          sched:advance_to_next_work()
          work = sched:get_current_work()
        end
      else
        ---------------------------------------------------------------- ping-pong
        -- The CTA's tiles s0, s1, s2, ... (the scheduler's sequence, the order the producer
        -- loads them in): warpgroup 0 takes s0, s2, ..., warpgroup 1 s1, s3, ...  Two
        -- ordered chains of turns: mainloops s0 -> s1 -> s2 ... and epilogues s0 -> s1 ...;
        -- a turn is a bar.sync on the warpgroup's own barrier (its 128 threads) completed
        -- by the other warpgroup's bar.arrive (128) when it ends its turn of that chain.
        -- So warpgroup 1's mainloop of s1 runs while warpgroup 0 does the epilogue of s0,
        -- and the epilogues (one staging tile) never overlap. Warpgroup 1 opens both
        -- chains for warpgroup 0; the turn after the CTA's last tile is not passed, so
        -- every arrival meets its wait (none pending at exit).
        local function turn_wait(base)
          if c == 0 then cute.arch.barrier{ barrier_id = base, number_of_threads = 256 }
          else cute.arch.barrier{ barrier_id = base + 1, number_of_threads = 256 } end
        end
        local function turn_pass(base)
          if c == 0 then cute.arch.barrier_arrive{ barrier_id = base + 1, number_of_threads = 256 }
          else cute.arch.barrier_arrive{ barrier_id = base, number_of_threads = 256 } end
        end
        local function sync()
          if c == 0 then cute.arch.barrier{ barrier_id = BAR_PP_EPI, number_of_threads = 128 }
          else cute.arch.barrier{ barrier_id = BAR_PP_EPI + 1, number_of_threads = 128 } end
        end
        if c == 1 then
          -- warpgroup 1 starts at the CTA's second tile, whose k-tiles follow the first's
          sched:advance_to_next_work()
          read:advance(ktiles)
          release:advance(ktiles)
          cute.arch.barrier_arrive{ barrier_id = BAR_MMA_TURN, number_of_threads = 256 }
          cute.arch.barrier_arrive{ barrier_id = BAR_EPI_TURN, number_of_threads = 256 }
        end
        local work = sched:get_current_work()
        while work.is_valid_tile do
          local tm, tn = work.tile_idx[1], work.tile_idx[2]
          local acc = thr_mma:partition_fragment_C(cute.local_tile(Cm, { BM, BN }, { tm, tn }))  -- f32
          turn_wait(BAR_MMA_TURN)
          mainloop(acc)
          -- the CTA's next tile (the other warpgroup's) exists: it waits for our turns
          sched:advance_to_next_work()
          local more = sched:get_current_work().is_valid_tile
          if more then turn_pass(BAR_MMA_TURN) end           -- its mainloop may issue now
          mainloop_tail(acc)
          turn_wait(BAR_EPI_TURN)
          epilogue(acc, tm, tn, sync)
          if more then turn_pass(BAR_EPI_TURN) end
          -- skip the other warpgroup's tile: its k-tiles in the ring, its place in the sequence
          read:advance(ktiles)
          release:advance(ktiles)
          sched:advance_to_next_work()
          work = sched:get_current_work()
        end
      end
    end
  end, { name = (cfg.name or ("gemm_sm90_" .. ab.name .. "_n" .. BN)) .. (PP and ("_pingpong_m" .. BM) or "")
                 .. (wide and "" or "_narrow")
                 .. (with_beta and "_beta" or ""),
         max_threads_per_block = THREADS, min_blocks_per_sm = 1, -- (setmaxnreg needs the launch bounds)
         enable_assertions = false }) -- (a device assertion's printf call would serialise the wgmmas)
  end
  local kernels = {}
  local function kernel_for(wide, with_beta)
    local key = (wide and "w" or "n") .. (with_beta and "b" or "")
    kernels[key] = kernels[key] or build(wide, with_beta)
    return kernels[key]
  end

  -- TMA descriptors are encoded on the host per (tensor, shape, strides): kept for reuse
  local atoms = setmetatable({}, { __mode = "k" })
  local function tma_of(T, which)
    local st = T.strides or { T.shape[2], 1 }
    local key = table.concat({ tostring(T.ptr), T.shape[1], T.shape[2], st[1], st[2] }, ",")
    local per = atoms[T] or {}
    atoms[T] = per
    if not per[which .. key] then
      local d = cute.dynamic(T, { divisibility = 16 / ab.size })
      local a, t
      if which == "a" then
        a, t = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), d, sA_stage, { BM, BK })
      elseif CM > 1 then
        a, t = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SMulticastOp(), d, sB_stage, { BN, BK },
          { num_multicast = CM })
      else
        a, t = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), d, sB_stage, { BN, BK })
      end
      per[which .. key] = { a, t }
    end
    return per[which .. key][1], per[which .. key][2]
  end
  local max_clusters
  -- the operands' checks: errors at the line that called args / launch (error level 4:
  -- fail, check_args, args or launch, their caller)
  local function check_args(A, B, Cm)
    local function fail(fmt, ...) error(("gemm_sm90: " .. fmt):format(...), 4) end
    for _, x in ipairs({ { "A", A, ab }, { "B", B, ab }, { "C", Cm, c_dtype } }) do
      local name, T, dtype = x[1], x[2], x[3]
      if type(T) ~= "table" or type(T.shape) ~= "table" or #T.shape ~= 2 then
        fail("%s must be a 2-D tensor, got %s", name, tostring(T))
      end
      if T.dtype ~= dtype then
        fail("%s holds %s; this GEMM takes %s", name, tostring(T.dtype and T.dtype.name), dtype.name)
      end
      local st = T.strides or { T.shape[2], 1 }
      if st[2] ~= 1 then
        fail("%s (%d x %d, strides %d, %d) must be row-major (K-major for A and B: TMA loads rows)", name,
          T.shape[1], T.shape[2], st[1], st[2])
      end
    end
    local m, k, n = A.shape[1], A.shape[2], B.shape[1]
    if m < 1 or k < 1 or n < 1 then fail("sizes M = %d, N = %d, K = %d must be positive", m, n, k) end
    if B.shape[2] ~= k then fail("A is %d x %d and B %d x %d: their K differ", m, k, n, B.shape[2]) end
    if Cm.shape[1] ~= m or Cm.shape[2] ~= n then
      fail("C is %d x %d; A B^T is %d x %d", Cm.shape[1], Cm.shape[2], m, n)
    end
    if k % (16 / ab.size) ~= 0 then
      fail("K = %d is not a multiple of %d (TMA needs 16-byte row strides)", k, 16 / ab.size)
    end
  end
  local lib = { kernel = kernel_for(true, false), kernel_for = kernel_for, tiled_mma = tiled_mma, tma_of = tma_of,
    ab_dtype = ab, c_dtype = c_dtype,
    cfg = { bm = BM, bn = BN, bk = BK, kblocks = KB, stages = STAGES, threads = THREADS, cluster_m = CM,
            group = GROUP, epi_n = EPI_N, epi_row = EP, staging_layout = sC_layout, schedule = SCHEDULE,
            epilogue_threads = ETHREADS, stage_warps = STAGE_WARPS,
            -- wgmma instructions per k-tile per warpgroup
            wgmma_per_ktile = KB * (PP and BM / 64 or 1), peel = PEEL } }
  -- the kernel for A, B, C, alpha, beta, its launch configuration and its arguments
  -- (clusters: how many run at once; default the SMs / CM of the current device)
  function lib.args(A, B, Cm, alpha, beta, clusters)
    check_args(A, B, Cm)
    local m, n = A.shape[1], B.shape[1]
    if not clusters then
      max_clusters = max_clusters or math.floor(cute.device().sm_count / CM)
      clusters = max_clusters
    end
    local params = cute.utils.PersistentTileSchedulerParams({ math.ceil(m / BM), math.ceil(n / BN), 1 },
      { CM, 1, 1 }, { raster = "M", group = GROUP })
    local ta, mA = tma_of(A, "a")
    local tb, mB = tma_of(B, "b")
    local wide = Cm.shape[2] % V == 0
    return kernel_for(wide, beta ~= 0),
      { grid = cute.utils.get_grid_shape(params, clusters), block = THREADS, cluster = { CM, 1, 1 } },
      ta, mA, tb, mB, cute.dynamic(Cm, wide and { index_bits = 32, divisibility = V } or { index_bits = 32 }),
      cute.Float32(alpha), cute.Float32(beta)
  end
  function lib.launch(A, B, Cm, alpha, beta)
    check_args(A, B, Cm)
    local k, cfg, ta, mA, tb, mB, c, al, be = lib.args(A, B, Cm, alpha, beta)
    return k:launch(cfg)(ta, mA, tb, mB, c, al, be)
  end
  return lib
end

if CUTE_EXAMPLE_LIB then return { make_gemm = make_gemm } end

local g = make_gemm{ bn = tonumber(os.getenv("BN")), stages = tonumber(os.getenv("STAGES")),
  cluster_m = tonumber(os.getenv("CLUSTER")), schedule = os.getenv("SCHEDULE"), bm = tonumber(os.getenv("BM")) }
if not ex.gpu() then
  local S = function(r, c) return cute.tensor_spec({ r, c }, cute.bfloat16) end
  local k, _, ta, mA, tb, mB, c, al, be = g.args(S(M_, K_), S(N_, K_), S(M_, N_), 1, 0, 66)
  local res = k:with{ arch = "sm_90a" }:compile(ta, mA, tb, mB, c, al, be)
  print(("gemm_sm90: compiled for %s: %d registers at entry, %d spill bytes"):format(res.arch, res.info.regs or -1,
    res.info.spill_stores or 0))
  return
end
local A, B, Cm = ex.check_bf16_gemm_tn("gemm_sm90", g.launch, M_, N_, K_, tonumber(os.getenv("CHECK_ROWS")))
local ms = ex.time_ms(function() g.launch(A, B, Cm, 1, 0) end, 20)
print(("gemm_sm90 %dx%dx%d: %.3f ms, %.1f TFLOP/s"):format(M_, N_, K_, ms, 2 * M_ * N_ * K_ / ms / 1e9))
