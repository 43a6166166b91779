-- Tiled SGEMM, C = A * B (fp32, row-major): a 128x128 block tile staged through
-- shared memory in steps of BK = 8 (two stages: the next k-tile is fetched into registers
-- while this one is computed), 256 threads each accumulating an 8x8 block
-- of C in registers (register blocking); 16-byte global and shared accesses.
-- A's tile is stored transposed (m contiguous) so every inner-loop read is a
-- conflict-free float4.
--   cuteluajit examples/sgemm_tiled.lua [M] [N] [K]   (multiples of 128)
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local _ = cute._
local f32 = cute.float32

local M_, N_, K_ = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096, tonumber(arg[3]) or 4096
local BM, BN, BK = 128, 128, 8
local THREADS = 256

local sgemm = cute.kernel(function(A, B, C)
  local t = cute.arch.thread_idx()
  local bx, by = cute.arch.block_idx()
  local gA = cute.local_tile(A, { BM, BK }, { by, _ }) -- (BM, BK, k-tiles)
  local gB = cute.local_tile(B, { BK, BN }, { _, bx }) -- (BK, BN, k-tiles)
  local gC = cute.local_tile(C, { BM, BN }, { by, bx }) -- (BM, BN)
  -- two stages of shared memory: while the block computes on one k-tile, the
  -- next one is read from global memory into registers and then stored to the
  -- other stage, so one barrier per k-tile suffices
  local sA = cute.make_shared_tensor(cute.make_layout({ BM, BK, 2 }, { 1, BM, BM * BK }), f32) -- m contiguous
  local sB = cute.make_shared_tensor(cute.make_layout({ BK, BN, 2 }, { BN, 1, BN * BK }), f32) -- n contiguous
  -- 8x8 accumulators, row-major; columns grouped as (4, 2) so acc[{i, {_, h}}] is one float4
  local acc = cute.make_fragment(cute.make_layout({ 8, { 4, 2 } }, { 8, { 1, 4 } }), f32)
  acc:fill(0.0)
  local ra = cute.make_fragment(cute.make_layout({ 4, 2 }), f32) -- rows ty*4+i and 64+ty*4+i
  local rb = cute.make_fragment(cute.make_layout({ 4, 2 }), f32)
  local va = cute.make_fragment(4, f32)
  local vb = cute.make_fragment(4, f32)
  local tx, ty = t % 16, cute.div(t, 16)
  -- global -> shared loaders: A as 128 rows x 2 float4, B as 8 rows x 32 float4
  local a_row, a_vec = cute.div(t, 2), t % 2
  local b_row, b_vec = cute.div(t, 32), t % 32
  local function fetch(kt)
    cute.copy(cute.zipped_divide(gA[{ a_row, _, kt }], { 4 })[{ _, a_vec }], va)
    cute.copy(cute.zipped_divide(gB[{ b_row, _, kt }], { 4 })[{ _, b_vec }], vb)
  end
  local function stash(st)
    for j in cute.range_constexpr(4) do sA[{ a_row, a_vec * 4 + j, st }] = va[j] end
    cute.copy(vb, cute.zipped_divide(sB[{ b_row, _, st }], { 4 })[{ _, b_vec }])
  end
  local ntiles = cute.size(gA, 2)
  fetch(0)
  stash(0)
  cute.arch.sync_threads()
  for kt in cute.range(ntiles) do
    local st = kt % 2
    local more = kt + 1 < ntiles
    if more then fetch(kt + 1) end
    for k in cute.range_constexpr(BK) do
      local colA = cute.zipped_divide(sA[{ _, k, st }], { 4 }) -- (4, 32) float4 groups of rows
      local rowB = cute.zipped_divide(sB[{ k, _, st }], { 4 })
      cute.copy(colA[{ _, ty }], ra[{ _, 0 }]); cute.copy(colA[{ _, ty + 16 }], ra[{ _, 1 }])
      cute.copy(rowB[{ _, tx }], rb[{ _, 0 }]); cute.copy(rowB[{ _, tx + 16 }], rb[{ _, 1 }])
      for i in cute.range_constexpr(8) do
        for j in cute.range_constexpr(8) do
          acc[{ i, j }] = cute.math.fma(ra[i], rb[j], acc[{ i, j }])
        end
      end
    end
    if more then stash(1 - st) end
    cute.arch.sync_threads()
  end
  -- write the 8x8 block: rows (ty*4 + i | 64 + ty*4 + i), columns in two float4s
  for i in cute.range_constexpr(8) do
    local r = (i < 4) and (ty * 4 + i) or (64 + ty * 4 + (i - 4))
    local crow = cute.zipped_divide(gC[{ r, _ }], { 4 })
    cute.copy(acc[{ i, { _, 0 } }], crow[{ _, tx }])
    cute.copy(acc[{ i, { _, 1 } }], crow[{ _, tx + 16 }])
  end
end)

local sA_spec = cute.tensor_spec({ M_, K_ }, f32)
-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = sgemm } end

if not ex.gpu() then
  print(sgemm:ptx(sA_spec, cute.tensor_spec({ K_, N_ }, f32), cute.tensor_spec({ M_, N_ }, f32)))
  return
end

assert(M_ % BM == 0 and N_ % BN == 0 and K_ % BK == 0, "sizes must be multiples of 128 (K of 8)")
local ha, hb = ex.rand_floats(M_ * K_), ex.rand_floats(K_ * N_)
local A = cute.from_host(ha, f32, { M_, K_ })
local B = cute.from_host(hb, f32, { K_, N_ })
local C = cute.empty({ M_, N_ }, f32)
C:fill(0 / 0)
local cfg = { grid = { N_ / BN, M_ / BM }, block = THREADS }
sgemm:launch(cfg)(A, B, C)
local hc = C:to_host()
-- a sample of rows against a double-precision reference
ex.check("sgemm_tiled", ex.gemm_error(ha, hb, hc, M_, N_, K_, math.max(1, math.floor(M_ / 32))), 1e-5)
local ms = ex.time_ms(function() sgemm:launch(cfg)(A, B, C) end, 10)
print(("sgemm_tiled %dx%dx%d: %.3f ms, %.2f TFLOP/s"):format(M_, N_, K_, ms, 2 * M_ * N_ * K_ / ms / 1e9))
