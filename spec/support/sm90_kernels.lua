-- Hopper kernels shared by spec/pipeline_spec.lua (compiled and assembled
-- without a GPU) and spec/pipeline_gpu_spec.lua / spec/sm90_arch_gpu_spec.lua
-- (run on an H100 against CPU references).  Each builder returns a kernel.
local cute = require("cute")
local P = cute.pipeline
local K = {}

-- compile options: sm_90a, the kernel's name, extras
local function opts(name, extra)
  local o = { arch = "sm_90a", name = name }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

-- PipelineAsync ring, warp-specialised: warp 0 copies chunks of 32 floats of
-- A into a stage of shared memory, warps 1..3 each read every chunk:
-- B[w - 1][j] = A[j] * w + chunk
function K.pipeline_async(S)
  return cute.kernel(function(A, B, nchunks)
    local bars = cute.make_shared_tensor(cute.make_layout(2 * S), cute.int64, 8)
    local buf = cute.make_shared_tensor(cute.make_layout({ 32, S }), cute.float32, 16)
    local p = P.PipelineAsync.create{ barrier_storage = bars, num_stages = S,
      producer_group = P.CooperativeGroup(P.Agent.Thread, 32),
      consumer_group = P.CooperativeGroup(P.Agent.Warp, 3) }
    local warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    local lane = cute.arch.lane_idx()
    local base = cute.arch.block_idx() * nchunks * 32
    if warp == 0 then
      local st = P.make_pipeline_state(P.PipelineUserType.Producer, S)
      for c in cute.range(nchunks) do
        p:producer_acquire(st)
        buf[{ lane, st.index }] = A[base + c * 32 + lane]
        p:producer_commit(st)
        st:advance()
      end
      p:producer_tail(st)
    else
      local st = P.make_pipeline_state(P.PipelineUserType.Consumer, S)
      for c in cute.range(nchunks) do
        p:consumer_wait(st)
        local x = buf[{ lane, st.index }]
        p:consumer_release(st)
        B[{ warp - 1, base + c * 32 + lane }] = x * warp:to(cute.float32) + c:to(cute.float32)
        st:advance()
      end
    end
  end, opts("pipeline_async"))
end

-- PipelineTmaAsync driven by plain bulk copies (cp.async.bulk + complete_tx):
-- chunks of CH floats; with cluster_n = 2 each CTA of the cluster loads half
-- of every chunk and multicasts it into both CTAs.  Consumer warps 1..3:
-- B[w - 1][block * nchunks * CH + c * CH + e] = A[cluster * nchunks * CH + c * CH + e] * w
K.CH = 256
function K.bulk_pipeline(S, cluster_n)
  local CH = K.CH
  local half = CH / cluster_n
  return cute.kernel(function(A, B, nchunks)
    local bars = cute.make_shared_tensor(cute.make_layout(2 * S), cute.int64, 8)
    local buf = cute.make_shared_tensor(cute.make_layout({ CH, S }), cute.float32, 128)
    local p = P.PipelineTmaAsync.create{ barrier_storage = bars, num_stages = S,
      producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
      consumer_group = P.CooperativeGroup(P.Agent.Thread, 3 * cluster_n),
      tx_count = CH * 4, cta_layout_vmnk = cute.make_layout({ 1, cluster_n, 1, 1 }) }
    local warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    local lane = cute.arch.lane_idx()
    local b = cute.arch.block_idx()
    local cluster = cute.div(b, cluster_n)
    local rank = 0
    if cluster_n > 1 then rank = cute.arch.block_idx_in_cluster() end
    if warp == 0 then
      local st = P.make_pipeline_state(P.PipelineUserType.Producer, S)
      for c in cute.range(nchunks) do
        p:producer_acquire(st)
        if cute.arch.elect_one() then
          local src = A:ptr_at((cluster * nchunks + c) * CH + rank * half)
          local dst = buf:ptr_at({ rank * half, st.index })
          if cluster_n > 1 then
            cute.arch.cp_async_bulk_g2s(dst, src, half * 4, p:producer_get_barrier(st), { mcast_mask = 3 })
          else
            cute.arch.cp_async_bulk_g2s(dst, src, half * 4, p:producer_get_barrier(st))
          end
        end
        p:producer_commit(st)
        st:advance()
      end
      p:producer_tail(st)
    else
      local st = P.make_pipeline_state(P.PipelineUserType.Consumer, S)
      local wf = warp:to(cute.float32)
      for c in cute.range(nchunks) do
        p:consumer_wait(st)
        for j in cute.range_constexpr(CH / 32) do
          B[{ warp - 1, (b * nchunks + c) * CH + j * 32 + lane }] = buf[{ j * 32 + lane, st.index }] * wf
        end
        p:consumer_release(st)
        st:advance()
      end
    end
  end, opts("bulk_pipeline"))
end

-- one bulk copy in (complete_tx on an mbarrier), B = 2 A + 1 in shared
-- memory, one bulk copy out: blocks of 128 threads, tiles of 1024 floats
function K.bulk_roundtrip()
  return cute.kernel(function(A, B)
    local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
    local buf = cute.make_shared_tensor(cute.make_layout(1024), cute.float32, 128)
    local tid, b = cute.arch.thread_idx(), cute.arch.block_idx()
    if tid == 0 then cute.arch.mbarrier_init(bar, 1) end
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tid == 0 then
      cute.arch.mbarrier_arrive_and_expect_tx(bar, 4096)
      cute.arch.cp_async_bulk_g2s(buf, A:ptr_at(b * 1024), 4096, bar)
    end
    cute.arch.mbarrier_wait(bar, 0)
    for i in cute.range_constexpr(8) do buf[tid + 128 * i] = buf[tid + 128 * i] * 2 + 1 end
    cute.arch.fence_view_async_shared()
    cute.arch.sync_threads()
    if tid == 0 then
      cute.arch.cp_async_bulk_s2g(B:ptr_at(b * 1024), buf, 4096)
      cute.arch.cp_async_bulk_commit_group()
      cute.arch.cp_async_bulk_wait_group(0)
    end
  end, opts("bulk_roundtrip"))
end

-- 2-CTA clusters, 64 threads: each CTA writes into its peer's shared memory
-- (map_shared_rank), then arrives on the peer's mbarrier (remote arrive) and
-- waits (bounded) on its own.  Out[b] = {rank, done, cluster x, cluster size,
-- 64 values its peer wrote}
function K.cluster_dsmem()
  return cute.kernel(function(Out)
    local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
    local buf = cute.make_shared_tensor(cute.make_layout(64), cute.float32, 16)
    local tid, b = cute.arch.thread_idx(), cute.arch.block_idx()
    local rank = cute.arch.block_idx_in_cluster()
    local peer = 1 - rank
    if tid == 0 then cute.arch.mbarrier_init(bar, 1) end
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_sync()
    local pbuf = cute.arch.map_shared_rank(buf, peer)
    pbuf[tid] = (b * 1000 + tid):to(cute.float32)
    cute.arch.cluster_sync()
    Out[{ b, 4 + tid }] = buf[tid]
    if tid == 0 then cute.arch.mbarrier_arrive(bar, peer) end
    local done = false
    local it = 0
    while not done and it < 1000000 do
      done = cute.arch.mbarrier_try_wait(bar, 0)
      it = it + 1
    end
    if tid == 0 then
      local cx = cute.arch.block_in_cluster_idx()
      Out[{ b, 0 }] = rank:to(cute.float32)
      Out[{ b, 1 }] = done and 1.0 or 0.0
      Out[{ b, 2 }] = cx:to(cute.float32)
      Out[{ b, 3 }] = cute.arch.cluster_size():to(cute.float32)
    end
    cute.arch.cluster_sync()
  end, opts("cluster_dsmem"))
end

-- every warp counts the lanes elect_one picks (Count[warp]) and records the lane (Lane[warp])
function K.elect()
  return cute.kernel(function(Count, Lane)
    local w = cute.arch.warp_idx() + cute.arch.block_idx() * 8
    if cute.arch.elect_one() then
      cute.arch.atomic_add(Count, w, 1)
      Lane[w] = cute.arch.lane_idx()
    end
  end, opts("elect"))
end

-- three warpgroups as CUTLASS's warp-specialised kernels: the producer gives
-- registers back (setmaxnreg.dec 40), the consumers take them (inc 232)
function K.setmaxnreg()
  return cute.kernel(function(Out)
    local tid = cute.arch.thread_idx()
    local wg = cute.arch.make_warp_uniform(cute.div(cute.arch.warp_idx(), 4))
    if wg == 0 then
      cute.arch.warpgroup_reg_dealloc(40)
      Out[tid] = tid * 2
    else
      cute.arch.warpgroup_reg_alloc(232)
      Out[tid] = tid * 3
    end
  end, opts("setmaxnreg_wg", { max_threads_per_block = 384, min_blocks_per_sm = 1 }))
end

-- named barriers with thread counts: warp 0 produces into shared memory, warp
-- 1 consumes (bar.arrive / bar.sync on ids 1 and 2, 64 threads), 64 rounds;
-- warps 2-3 sync on id 3 (64 threads) to swap values.  Out[0..31] sums,
-- Out[32..95] the swapped lanes
function K.named_barriers()
  return cute.kernel(function(Out)
    local buf = cute.make_shared_tensor(cute.make_layout(32), cute.int32, 16)
    local swap = cute.make_shared_tensor(cute.make_layout(64), cute.int32, 16)
    local warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    local lane = cute.arch.lane_idx()
    if warp == 0 then
      for r in cute.range(64) do
        if r > 0 then cute.arch.barrier{ barrier_id = 2, number_of_threads = 64 } end
        buf[lane] = r * 32 + lane
        cute.arch.barrier_arrive{ barrier_id = 1, number_of_threads = 64 }
      end
    elseif warp == 1 then
      local s = 0
      for r in cute.range(64) do
        cute.arch.barrier{ barrier_id = 1, number_of_threads = 64 }
        s = s + buf[lane]
        if r < 63 then cute.arch.barrier_arrive{ barrier_id = 2, number_of_threads = 64 } end
      end
      Out[lane] = s
    else
      local me = (warp - 2) * 32 + lane
      swap[me] = me * 7
      cute.arch.barrier{ barrier_id = 3, number_of_threads = 64 }
      Out[32 + me] = swap[63 - me]
    end
  end, opts("named_barriers"))
end

-- the persistent scheduler's tiles: Out[{block, i, 0..3}] = m, n, l of the
-- i-th work tile block visits (and 1 in slot 3); the shape is runtime (mt, nt,
-- l: traced) or static (dyn = false)
function K.scheduler(cm, cn, sched_opts, dyn, static_shape)
  return cute.kernel(function(Out, mt, nt, l)
    local shape = dyn and { mt, nt, l } or static_shape
    local p = cute.utils.PersistentTileSchedulerParams(shape, { cm, cn, 1 }, sched_opts)
    local s = cute.utils.StaticPersistentTileScheduler.create(p, { cute.arch.block_idx() }, { cute.arch.grid_dim() })
    local bx, by, bz = cute.arch.block_idx()
    local gx, gy = cute.arch.grid_dim()
    local bl = bx + gx * (by + gy * bz)
    local work = s:initial_work_tile_info()
    local i = 0
    while work.is_valid_tile do
      local t = work.tile_idx
      if cute.arch.thread_idx() == 0 then
        Out[{ bl, i, 0 }] = t[1]
        Out[{ bl, i, 1 }] = t[2]
        Out[{ bl, i, 2 }] = t[3]
        Out[{ bl, i, 3 }] = 1
      end
      i = i + 1
      s:advance_to_next_work()
      work = s:get_current_work()
    end
  end, opts("scheduler"))
end

return K
