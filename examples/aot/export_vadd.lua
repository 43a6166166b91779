-- Exports two kernels to plain C for examples/aot/main.c (docs/EXPORT.md):
--   vadd_launch(stream, grid, block, smem, A, A_shape1, B, B_shape1, C, C_shape1, n)  C = A + B
--   scale_launch(stream, grid, block, smem, X, n, a)                                   X = a * X
-- No GPU is needed to export.
--   cuteluajit examples/aot/export_vadd.lua [dir] [arch]
local cute = require("cute")
local dir, arch = arg and arg[1] or "build/aot", arg and arg[2]

local function gid() return cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx() end

-- runtime-sized vectors (cute.dynamic): one binary serves every length
local vadd = cute.kernel(function(A, B, C, n)
  local i = gid()
  cute.if_then(i < n, function() C[i] = A[i] + B[i] end)
end, { name = "vadd" })

-- a fixed-size tensor: only its address is a parameter
local scale = cute.kernel(function(X, n, a)
  local i = gid()
  cute.if_then(i < n, function() X[i] = X[i] * a end)
end, { name = "scale" })

local v = cute.dynamic(cute.tensor_spec({ 1024 }, cute.float32))
local r = cute.export{ name = "kernels", dir = dir, arch = arch, ptx = true, kernels = {
  { vadd, v, cute.dynamic(cute.tensor_spec({ 1024 }, cute.float32)), cute.dynamic(cute.tensor_spec({ 1024 },
    cute.float32)), cute.Int32(0), name = "vadd" },
  { scale, cute.tensor_spec({ 4096 }, cute.float32), cute.Int32(0), cute.Float32(0), name = "scale" },
} }
for _, f in ipairs(r.files) do print(f) end
if r.note then print(r.note) end
return r
