-- kernels.lua -- the Lua side of examples/embed/host.c: a file of kernels for
-- a C host (cute_host_load_file).  The host finds them by name in the table
-- this returns.
local cute = require("cute")

local saxpy = cute.kernel(function(X, Y, a, n)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  if i < n then Y[i] = a * X[i] + Y[i] end
end)

return { saxpy = saxpy }
