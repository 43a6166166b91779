-- TMA on a Hopper GPU (docs/HOPPER.md, "TMA"), against CPU references on
-- random data: tiles of a bf16 K-major tensor loaded with a 128B swizzle into
-- shared memory (a residue tile's out-of-bounds part filled with zeros) and
-- copied out through the swizzled layout; static and runtime (cute.dynamic)
-- extents; a store round trip and a reduce-add store; a multicast load over a
-- 2-CTA cluster.  Needs sm_90 (pending without a GPU, skipped below sm_90).
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it
local cp = cute.nvgpu.cpasync
local _ = cute._

local function hopper()
  local d = cute.device()
  return d.cc.major >= 9
end

local sL = cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, cute.bfloat16),
  { 128, 64 }, { 1, 2 })

local function rand_bf16(M, K)
  local f = util.rand_floats(M * K)
  local t = {}
  for i = 1, M * K do t[i] = f[i - 1] end
  local A = cute.from_host(t, cute.bfloat16, { M, K })
  return A, A:to_table() -- the values as stored (rounded to bf16)
end

local function filled(M, K, v)
  local t = {}
  for i = 1, M * K do t[i] = v end
  return cute.from_host(t, cute.bfloat16, { M, K })
end

-- each CTA (bm, bk) loads tile (bm, bk) of A and writes it to Out at the same place
local load_k = cute.kernel(function(atom, mA, Out)
  local sA = cute.make_shared_tensor(sL, cute.bfloat16)
  local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
  local tid = cute.arch.thread_idx()
  local bm, bk = cute.arch.block_idx()
  if tid == 0 then
    cp.prefetch_descriptor(atom)
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
  end
  cute.arch.sync_threads()
  local gA = cute.local_tile(mA, { 128, 64 }, { bm, bk })
  if tid == 0 then
    cute.arch.mbarrier_arrive_and_expect_tx(bar, atom.tx_bytes)
    cute.copy(atom, gA, sA, { tma_bar_ptr = bar })
  end
  cute.arch.mbarrier_wait(bar, 0)
  for c in cute.range(0, 64) do
    Out[{ bm * 128 + tid, bk * 64 + c }] = sA[{ tid, c }]
  end
end, { arch = "sm_90a" })

describe("TMA on the GPU", function()
  gpu_it("bf16 K-major tiles with a 128B swizzle, a residue tile filled with zeros (static and dynamic extents)", function()
    if not hopper() then return pending("needs sm_90") end
    local M, K = 200, 160
    local A, ref = rand_bf16(M, K)
    for _, dyn in ipairs({ false, true }) do
      local atom, mA = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), dyn and cute.dynamic(A) or A, sL, { 128, 64 })
      local Out = filled(256, 192, -3)
      load_k:launch{ grid = { 2, 3, 1 }, block = 128 }(atom, mA, Out)
      cute.synchronize()
      local got = Out:to_table()
      local bad = 0
      for i = 0, 255 do
        for j = 0, 191 do
          local want = (i < M and j < K) and ref[i * K + j + 1] or 0
          local g = got[i * 192 + j + 1]
          if g ~= want then
            bad = bad + 1
            if bad <= 5 then print(("dynamic=%s (%d,%d): got %s want %s"):format(tostring(dyn), i, j, g, want)) end
          end
        end
      end
      assert.are.equal(0, bad)
    end
  end)

  gpu_it("MN-major (M-contiguous) bf16 tiles from MN_SW128 atoms: 16 boxes (M first) and 2 boxes (K first)", function()
    if not hopper() then return pending("needs sm_90") end
    local TK = dofile("spec/support/tma_kernels.lua")
    local M, K = 256, 128
    local B, refT = rand_bf16(K, M) -- row-major K x M: A(m, k) = B(k, m), m contiguous
    local A = { ptr = B.ptr, shape = { M, K }, strides = { 1, M }, dtype = B.dtype }
    local atomL = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.MN_SW128, cute.bfloat16)
    for _, order in ipairs({ { 1, 2 }, { 2, 1 } }) do
      local sMN = cute.tile_to_shape(atomL, { 128, 64 }, order)
      local atom, mA = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), A, sMN, { 128, 64 })
      assert.are.equal(order[1] == 1 and 16 or 2, atom.args.boxes)
      local Out = filled(M, K, -3)
      TK.tile_copy(sMN, 128, 64):launch{ grid = { 2, 2, 1 }, block = 128 }(atom, mA, Out)
      cute.synchronize()
      local got = Out:to_table()
      local bad = 0
      for i = 0, M - 1 do
        for j = 0, K - 1 do
          local want, g = refT[j * M + i + 1], got[i * K + j + 1]
          if g ~= want then
            bad = bad + 1
            if bad <= 5 then print(("order {%d,%d} (%d,%d): got %s want %s"):format(order[1], order[2], i, j, g, want)) end
          end
        end
      end
      assert.are.equal(0, bad)
    end
  end)

  gpu_it("a store round trip and a reduce-add store clip the residue tile", function()
    if not hopper() then return pending("needs sm_90") end
    local M, K = 200, 160
    local A, ref = rand_bf16(M, K)
    local B = filled(M, K, -7)
    local Cm = cute.from_host(ref, cute.bfloat16, { M, K })
    local ld, mA = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), A, sL, { 128, 64 })
    local st, mB = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileS2GOp(), B, sL, { 128, 64 })
    local red, mC = cp.make_tiled_tma_atom(cp.CopyReduceBulkTensorTileS2GOp(cute.ReductionOp.ADD), Cm, sL, { 128, 64 })
    local k = cute.kernel(function(ld, st, red, mA, mB, mC)
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
        cute.arch.mbarrier_arrive_and_expect_tx(bar, ld.tx_bytes)
        cute.copy(ld, cute.local_tile(mA, { 128, 64 }, { bm, bk }), sA, { tma_bar_ptr = bar })
      end
      cute.arch.mbarrier_wait(bar, 0)
      cp.tma_store_fence()
      if tid == 0 then
        cute.copy(st, sA, cute.local_tile(mB, { 128, 64 }, { bm, bk }))
        cute.copy(red, sA, cute.local_tile(mC, { 128, 64 }, { bm, bk }))
        cp.tma_store_arrive()
        cp.tma_store_wait(0)
      end
    end, { arch = "sm_90a" })
    k:launch{ grid = { 2, 3, 1 }, block = 128 }(ld, st, red, mA, mB, mC)
    cute.synchronize()
    local gb, gc = B:to_table(), Cm:to_table()
    local bad = 0
    for i = 1, M * K do
      if gb[i] ~= ref[i] or gc[i] ~= 2 * ref[i] then
        bad = bad + 1
        if bad <= 5 then print(("element %d: store %s, reduce %s, want %s and %s"):format(i - 1, gb[i], gc[i], ref[i], 2 * ref[i])) end
      end
    end
    assert.are.equal(0, bad)
  end)

  gpu_it("a 2-stage PipelineTmaAsync ring over k tiles (runtime extents, residues in M and K): row sums", function()
    if not hopper() then return pending("needs sm_90") end
    local TK = dofile("spec/support/tma_kernels.lua")
    local M, K = 200, 304 -- 5 k tiles of 64 (the last one half out of bounds), 2 row blocks of 128
    local A, ref = rand_bf16(M, K)
    local atom, mA = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), cute.dynamic(A), TK.stage_layout,
      { TK.BM, TK.BK })
    local t = {}
    for i = 1, 256 do t[i] = -1 end
    local Out = cute.from_host(t, cute.float32, { 256 })
    TK.rowsum():launch{ grid = 2, block = 160 }(atom, mA, Out, cute.Int32(5))
    cute.synchronize()
    local got = Out:to_table()
    local bad = 0
    for i = 0, 255 do
      local want, mag = 0, 0
      for j = 0, K - 1 do
        if i < M then want = want + ref[i * K + j + 1]; mag = mag + math.abs(ref[i * K + j + 1]) end
      end
      if math.abs(got[i + 1] - want) > 1e-4 * mag + 1e-6 then
        bad = bad + 1
        if bad <= 5 then print(("row %d: got %s want %s"):format(i, got[i + 1], want)) end
      end
    end
    assert.are.equal(0, bad)
  end)

  gpu_it("a multicast load over a 2-CTA cluster: each CTA loads half and both receive the whole tile", function()
    if not hopper() then return pending("needs sm_90") end
    local M, K = 256, 128
    local A, ref = rand_bf16(M, K)
    local atom, mA = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SMulticastOp(), A, sL, { 128, 64 },
      { num_multicast = 2 })
    local k = cute.kernel(function(atom, mA, Out, tm, tk)
      local sA = cute.make_shared_tensor(sL, cute.bfloat16)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      local tid = cute.arch.thread_idx()
      local rank = cute.arch.block_idx_in_cluster()
      if tid == 0 then
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
      end
      cute.arch.cluster_sync() -- both barriers initialised before either CTA multicasts
      local gA = cute.local_tile(mA, { 128, 64 }, { tm, _ })
      local tAsA, tAgA = cp.tma_partition(atom, rank, cute.make_layout(2), cute.group_modes(sA, 0, 2),
        cute.group_modes(gA, 0, 2))
      if tid == 0 then
        cute.arch.mbarrier_arrive_and_expect_tx(bar, atom.tx_bytes)
        cute.copy(atom, tAgA[{ _, tk }], tAsA, { tma_bar_ptr = bar, mcast_mask = 3 })
      end
      cute.arch.mbarrier_wait(bar, 0)
      for c in cute.range(0, 64) do
        Out[{ rank * 128 + tid, c }] = sA[{ tid, c }]
      end
      cute.arch.cluster_sync()
    end, { arch = "sm_90a" })
    for _, t in ipairs({ { 0, 0 }, { 1, 1 } }) do
      local Out = filled(256, 64, -3)
      k:launch{ grid = { 2, 1, 1 }, block = 128, cluster = { 2, 1, 1 } }(atom, mA, Out, t[1], t[2])
      cute.synchronize()
      local got = Out:to_table()
      local bad = 0
      for cta = 0, 1 do
        for i = 0, 127 do
          for j = 0, 63 do
            local want = ref[(t[1] * 128 + i) * K + t[2] * 64 + j + 1]
            local g = got[(cta * 128 + i) * 64 + j + 1]
            if g ~= want then
              bad = bad + 1
              if bad <= 5 then print(("tile %d,%d CTA %d (%d,%d): got %s want %s"):format(t[1], t[2], cta, i, j, g, want)) end
            end
          end
        end
      end
      assert.are.equal(0, bad)
    end
  end)
end)
