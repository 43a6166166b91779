-- A one-CTA warpgroup-MMA GEMM shared by spec/wgmma_spec.lua (PTX, ptxas)
-- and spec/wgmma_gpu_spec.lua (#gpu): C (M x N) = A (M x K) B (N x K)^T with
-- A and B K-major in global memory.  Each k-tile is copied element by
-- element into swizzled shared memory (cute.sm90_utils.make_smem_layout_a/b:
-- K- or MN-major), fenced for the async proxy, and multiplied by cute.gemm
-- on descriptor fragments (A from registers with a_src = "rmem"), between
-- warpgroup.fence / commit_group / wait_group(0).
local cute = require("cute")
local _ = cute._
local wg = cute.nvgpu.warpgroup

local M = {}

-- cfg: kind ("bf16", "f16", "f16acc", "tf32", "e4m3", "e5m2", "int8", "uint8"), n, wg_m (1|2), k (total K),
-- bk, a_major, b_major, a_src, stages (k-tile kt goes to stage kt % stages: a traced descriptor offset),
-- peel (the first k-tile outside the loop, accumulate = Lua false there)
local KINDS = {
  bf16 = { ab = cute.bfloat16, acc = cute.float32, kb = 16 },
  f16 = { ab = cute.float16, acc = cute.float32, kb = 16 },
  f16acc = { ab = cute.float16, acc = cute.float16, kb = 16 },
  tf32 = { ab = cute.float32, acc = cute.float32, kb = 8 },
  e4m3 = { ab = cute.float8_e4m3fn, acc = cute.float32, kb = 32 },
  e5m2 = { ab = cute.float8_e5m2, acc = cute.float32, kb = 32 },
  int8 = { ab = cute.int8, acc = cute.int32, kb = 32 },
  uint8 = { ab = cute.uint8, acc = cute.int32, kb = 32 },
}
M.KINDS = KINDS

function M.op(cfg)
  local kd = KINDS[cfg.kind]
  local opts = { a_major = cfg.a_major or "K", b_major = cfg.b_major or "K", a_src = cfg.a_src or "smem" }
  if cfg.kind == "tf32" then return wg.MmaTF32Op({ 64, cfg.n, 8 }, opts) end
  if cfg.kind == "e4m3" or cfg.kind == "e5m2" then return wg.MmaF8Op(kd.ab, kd.ab, kd.acc, { 64, cfg.n, 32 }, opts) end
  if cfg.kind == "int8" or cfg.kind == "uint8" then
    return wg.MmaI8Op(kd.ab, kd.ab, kd.acc, { 64, cfg.n, 32 }, opts)
  end
  return wg.MmaF16BF16Op(kd.ab, kd.acc, { 64, cfg.n, 16 }, opts)
end

-- the kernel and its tiled MMA
function M.kernel(cfg)
  local kd = KINDS[cfg.kind]
  local ab = kd.ab
  local tm = cute.make_tiled_mma(M.op(cfg), { cfg.wg_m or 1, 1, 1 })
  local BM, BN, BK = 64 * (cfg.wg_m or 1), cfg.n, cfg.bk
  local KT = cfg.k / BK
  local ST = cfg.stages or 1
  local sAL = cute.sm90_utils.make_smem_layout_a(cfg.a_major or "K", { BM, BN, BK }, ab, ST)
  local sBL = cute.sm90_utils.make_smem_layout_b(cfg.b_major or "K", { BM, BN, BK }, ab, ST)
  local nt = tm.size
  local rmem = cfg.a_src == "rmem"
  local k = cute.kernel(function(A, B, Cm)
    local tid = cute.arch.thread_idx()
    local sA = cute.make_dynamic_shared_tensor(sAL, ab)
    local sB = cute.make_dynamic_shared_tensor(sBL, ab)
    local thr = tm:get_slice(tid)
    local tCsA, tCsB = thr:partition_A(sA), thr:partition_B(sB)
    local tCrA = rmem and tm:make_fragment_A(tCsA[{ _, _, _, 0 }]) or tm:make_fragment_A(tCsA)
    local tCrB = tm:make_fragment_B(tCsB)
    local tCgC = thr:partition_C(Cm)
    local acc = tm:make_fragment_C(tCgC)
    -- one k-tile: copy it in, then its k-blocks; first: a Lua boolean (peeled
    -- first k-tile, accumulate set to a Lua false / true), or nil (traced kt > 0)
    local function ktile(kt, first)
      local stage = kt % ST
      for i in cute.range(BM * BK / nt) do
        local e = tid + i * nt
        local r, c = cute.div(e, BK), cute.rem(e, BK)
        sA[{ r, c, stage }] = A[{ r, kt * BK + c }]
      end
      for i in cute.range(BN * BK / nt) do
        local e = tid + i * nt
        local r, c = cute.div(e, BK), cute.rem(e, BK)
        sB[{ r, c, stage }] = B[{ r, kt * BK + c }]
      end
      cute.arch.sync_threads()
      -- the generic-proxy stores become visible to wgmma (the async proxy)
      cute.arch.asm(nil, "fence.proxy.async.shared::cta;", "~{memory}")
      if rmem then cute.copy(tCsA[{ _, _, _, stage }], tCrA) end
      if first == nil then tm:set("accumulate", kt > 0) else tm:set("accumulate", not first) end
      wg.fence()
      for kb = 0, BK / kd.kb - 1 do
        local a = rmem and tCrA[{ _, _, kb }] or tCrA[{ _, _, kb, stage }]
        cute.gemm(tm, acc, a, tCrB[{ nil, nil, kb, stage }], acc)
        tm:set("accumulate", true)
      end
      wg.commit_group()
      wg.wait_group(0)
      cute.arch.sync_threads()
    end
    if cfg.peel then
      acc:fill(3) -- what the first wgmma (scale-d false) must ignore
      ktile(0, true)
      for kt in cute.range(1, KT) do ktile(kt, false) end
    else
      for kt in cute.range(KT) do ktile(kt) end
    end
    cute.copy(acc, tCgC)
  end, { name = ("wgmma_%s_n%d_wg%d_%s%s%s_s%d"):format(cfg.kind, cfg.n, cfg.wg_m or 1, cfg.a_major or "K",
    cfg.b_major or "K", rmem and "_rs" or "", ST) .. (cfg.peel and "_peel" or "") })
  return k, tm
end

-- argument specs for compiling without a GPU
function M.specs(cfg)
  local kd = KINDS[cfg.kind]
  local BM = 64 * (cfg.wg_m or 1)
  return cute.tensor_spec({ BM, cfg.k }, kd.ab), cute.tensor_spec({ cfg.n, cfg.k }, kd.ab),
    cute.tensor_spec({ BM, cfg.n }, kd.acc)
end

-- wgmma instructions the PTX of cfg's kernel must hold (per traced k-tile)
function M.instruction(cfg)
  local op = M.op(cfg)
  return cute.make_mma_atom(op).instruction
end

-- C = A B^T (A: M x K, B: N x K, 0-based Lua tables, row-major)
local gemm_reference = dofile("spec/support/util.lua").gemm_reference
function M.reference(A, B, Mm, Nn, Kk)
  return gemm_reference(A, B, nil, Mm, Nn, Kk)
end

return M
