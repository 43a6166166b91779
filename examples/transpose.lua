-- Matrix transpose B = A^T (fp32, row-major) through a 32x32 shared-memory tile
-- padded to 33 columns so that reading a tile column hits 32 different banks.
--   cuteluajit examples/transpose.lua [M] [N]
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")

local M_, N_ = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096
local TILE, ROWS = 32, 8

local transpose = cute.kernel(function(A, B)
  local tx, ty = cute.arch.thread_idx()
  local bx, by = cute.arch.block_idx()
  -- the block's tile of A and the matching tile of B
  local tA = cute.local_tile(A, { TILE, TILE }, { by, bx })
  local tB = cute.local_tile(B, { TILE, TILE }, { bx, by })
  local smem = cute.make_shared_tensor(cute.make_layout({ TILE, TILE }, { TILE + 1, 1 }), cute.float32)
  for j in cute.range_constexpr(0, TILE, ROWS) do
    smem[{ ty + j, tx }] = tA[{ ty + j, tx }]
  end
  cute.arch.sync_threads()
  for j in cute.range_constexpr(0, TILE, ROWS) do
    tB[{ ty + j, tx }] = smem[{ tx, ty + j }]
  end
end)

-- benchmarks and specs load the kernel without running the example
if CUTE_EXAMPLE_LIB then return { kernel = transpose } end

if not ex.gpu() then
  print(transpose:ptx(cute.tensor_spec({ M_, N_ }, cute.float32), cute.tensor_spec({ N_, M_ }, cute.float32)))
  return
end

assert(M_ % TILE == 0 and N_ % TILE == 0, "sizes must be multiples of 32")
local ha = ex.rand_floats(M_ * N_)
local A = cute.from_host(ha, cute.float32, { M_, N_ })
local B = cute.empty({ N_, M_ }, cute.float32)
B:fill(0 / 0)
local cfg = { grid = { N_ / TILE, M_ / TILE }, block = { TILE, ROWS } }
transpose:launch(cfg)(A, B)
local hb = B:to_host()
ex.check("transpose", ex.rel_error(hb, function(i)
  local r, c = math.floor(i / M_), i % M_ -- B[r][c] = A[c][r]
  return ha[c * N_ + r]
end, M_ * N_), 0)
local ms = ex.time_ms(function() transpose:launch(cfg)(A, B) end)
print(("transpose %dx%d: %.3f ms, %.0f GB/s"):format(M_, N_, ms, 2 * 4 * M_ * N_ / ms / 1e6))
