-- cute.wgmma: warpgroup MMA atoms (cute.nvgpu.warpgroup.*), their TiledMMA,
-- partitions into shared-memory descriptors and cute.gemm on them
-- (docs/HOPPER.md, "Warpgroup MMA").
local wg = require("cute.warpgroup")

local M = {}

local warpgroup = {
  fence = wg.fence, commit_group = wg.commit_group, wait_group = wg.wait_group,
  fence_operand = wg.fence_operand, encode_desc = wg.encode_desc,
  make_smem_layout_atom = function(kind, dtype) return require("cute.smem_atom").make_smem_layout_atom(kind, dtype) end,
}
M.warpgroup = warpgroup
M.sm90_utils = {}

return M
