-- TMA kernels shared by spec/tma_spec.lua (PTX, ptxas) and
-- spec/tma_gpu_spec.lua (runs): a TMA producer warp feeding four consumer
-- warps through a cute.pipeline.PipelineTmaAsync ring of S stages; each
-- consumer thread sums its row of every k tile of A (bf16, K-major, 128B
-- swizzle) into Out (f32), so every stage and phase of the ring is used.
local cute = require("cute")
local cp = cute.nvgpu.cpasync
local P = cute.pipeline
local _ = cute._

local K = {}
K.BM, K.BK, K.S = 128, 64, 2
K.atom_layout = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, cute.bfloat16)
K.stage_layout = cute.tile_to_shape(K.atom_layout, { K.BM, K.BK }, { 1, 2 })
K.staged_layout = cute.tile_to_shape(K.atom_layout, { K.BM, K.BK, K.S }, { 1, 2, 3 })

function K.rowsum(opts)
  local BM, BK, S, sLs = K.BM, K.BK, K.S, K.staged_layout
  return cute.kernel(function(atom, mA, Out, ktiles)
    local sA = cute.make_shared_tensor(sLs, cute.bfloat16)
    local bars = cute.make_shared_tensor(cute.make_layout(2 * S), cute.int64, 8)
    local p = P.PipelineTmaAsync.create{ barrier_storage = bars, num_stages = S,
      producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
      consumer_group = P.CooperativeGroup(P.Agent.Thread, 4), tx_count = atom.tx_bytes }
    local warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    local tid = cute.arch.thread_idx()
    local bm = cute.arch.block_idx()
    local gA = cute.local_tile(mA, { BM, BK }, { bm, _ })
    local tAsA, tAgA = cp.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
      cute.group_modes(gA, 0, 2))
    if warp == 0 then
      if cute.arch.elect_one() then cp.prefetch_descriptor(atom) end
      local st = P.make_pipeline_state(P.PipelineUserType.Producer, S)
      for k in cute.range(ktiles) do
        p:producer_acquire(st)
        if cute.arch.elect_one() then
          cute.copy(atom, tAgA[{ _, k }], tAsA[{ _, st.index }], { tma_bar_ptr = p:producer_get_barrier(st) })
        end
        p:producer_commit(st)
        st:advance()
      end
      p:producer_tail(st)
    else
      local row = tid - 32
      local acc = cute.var(0.0, cute.float32)
      local st = P.make_pipeline_state(P.PipelineUserType.Consumer, S)
      for k in cute.range(ktiles) do
        p:consumer_wait(st)
        for c in cute.range(0, BK) do
          acc.value = acc.value + cute.Float32(sA[{ row, c, st.index }])
        end
        p:consumer_release(st)
        st:advance()
      end
      Out[bm * BM + row] = acc.value
    end
  end, opts or { arch = "sm_90a" })
end

-- one CTA per (bm, bk) tile: a TMA load of the tile into shared memory laid
-- out as sL (any TMA-able layout: several boxes for some), then every thread
-- copies its row of the tile through sL to Out (at the tile's place)
function K.tile_copy(sL, BM, BK, opts)
  return cute.kernel(function(atom, mA, Out)
    local sA = cute.make_shared_tensor(sL, cute.bfloat16)
    local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
    local tid = cute.arch.thread_idx()
    local bm, bk = cute.arch.block_idx()
    if tid == 0 then
      cute.arch.mbarrier_init(bar, 1)
      cute.arch.mbarrier_init_fence()
    end
    cute.arch.sync_threads()
    if tid == 0 then
      cute.arch.mbarrier_arrive_and_expect_tx(bar, atom.tx_bytes)
      cute.copy(atom, cute.local_tile(mA, { BM, BK }, { bm, bk }), sA, { tma_bar_ptr = bar })
    end
    cute.arch.mbarrier_wait(bar, 0)
    for c in cute.range(0, BK) do
      Out[{ bm * BM + tid, bk * BK + c }] = sA[{ tid, c }]
    end
  end, opts or { arch = "sm_90a" })
end

return K
