-- Kernels of the im2col TMA specs (spec/tma_im2col_spec.lua, spec/tma_im2col_gpu_spec.lua)
-- and a CPU im2col reference.
local cute = require("cute")
local cp = cute.nvgpu.cpasync
local _ = cute._

local M = {}

-- tile_copy(sL, BM, BK [, mcast]): CTA (bm, bk) loads tile (bm, bk) of the
-- im2col matrix (the coordinate tensor mA over (M, K)) with one TMA copy and
-- writes it to Out (row-major, whole tiles) through the (swizzled) shared
-- layout; BM threads, one row each.  mcast: clusters of mcast CTAs along x
-- (grid x = mcast * M tiles) share tile (cluster x, bk): each CTA loads its
-- share and multicasts it to all, and CTA rank r writes the tile it received
-- to rows r * mrows + ... of Out.
function M.tile_copy(sL, BM, BK, mcast)
  return cute.kernel(function(atom, mA, Out, mrows)
    local sA = cute.make_shared_tensor(sL, cute.bfloat16, 1024)
    local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
    local tid = cute.arch.thread_idx()
    local bm, bk = cute.arch.block_idx()
    local rank = 0
    if mcast then
      rank = cute.arch.block_idx_in_cluster()
      bm = cute.arch.cluster_idx()
    end
    if tid == 0 then
      cp.prefetch_descriptor(atom)
      cute.arch.mbarrier_init(bar, 1)
      cute.arch.mbarrier_init_fence()
    end
    if mcast then cute.arch.cluster_sync() else cute.arch.sync_threads() end -- barriers initialised first
    local gA = cute.local_tile(mA, { BM, BK }, { bm, bk })
    if tid == 0 then
      cute.arch.mbarrier_arrive_and_expect_tx(bar, atom.tx_bytes)
      if mcast then
        local tAsA, tAgA = cp.tma_partition(atom, rank, cute.make_layout(mcast), sA, gA)
        cute.copy(atom, tAgA, tAsA, { tma_bar_ptr = bar, mcast_mask = 2 ^ mcast - 1 })
      else
        cute.copy(atom, gA, sA, { tma_bar_ptr = bar })
      end
    end
    cute.arch.mbarrier_wait(bar, 0)
    for c in cute.range(0, BK) do
      Out[{ rank * mrows + bm * BM + tid, bk * BK + c }] = sA[{ tid, c }]
    end
    if mcast then cute.arch.cluster_sync() end -- no CTA exits while a peer may still write into it
  end, { arch = "sm_90a" })
end

-- the im2col matrix of an NHWC (or NWC / NDHWC) tensor, as a function (m, k) -> value
-- x: flat row-major values (1-based), shape {N, [D,] [H,] W, C}; conv as for make_im2col_tma_atom
function M.im2col_ref(x, shape, conv)
  local r = #shape
  local ns = r - 2
  local function per(v, d) if v == nil then v = d end; if type(v) == "number" then local t = {}; for i = 1, ns do t[i] = v end; return t end; return v end
  local fil, st, pad, dil = per(conv.filter), per(conv.stride, 1), per(conv.padding, 0), per(conv.dilation, 1)
  local padu = per(conv.upper_padding, conv.padding or 0)
  local out = {}
  for i = 1, ns do out[i] = math.floor((shape[i + 1] + pad[i] + padu[i] - dil[i] * (fil[i] - 1) - 1) / st[i]) + 1 end
  local Cin, N = shape[r], shape[1]
  local Mtot, Ktot = N, Cin
  for i = 1, ns do Mtot, Ktot = Mtot * out[i], Ktot * fil[i] end
  local function at(m, k)
    if m >= Mtot or k >= Ktot then return 0 end
    local c, tap = k % Cin, math.floor(k / Cin)
    local idx = {}
    local mr = m
    for i = ns, 1, -1 do
      local o = mr % out[i]; mr = math.floor(mr / out[i])
      local t = tap % fil[i]; tap = math.floor(tap / fil[i])
      idx[i] = o * st[i] - pad[i] + t * dil[i]
      if idx[i] < 0 or idx[i] >= shape[i + 1] then return 0 end
    end
    local lin = mr
    for i = 1, ns do lin = lin * shape[i + 1] + idx[i] end
    return x[lin * Cin + c + 1]
  end
  return at, Mtot, Ktot, out
end

return M
