-- bench/transpose_modes.lua: the transpose example loaded as a cubin (ptxas)
-- and as PTX (driver JIT), timed back to back, several rounds.
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
if not cute.available() then print("needs a GPU"); return end
local S = tonumber(arg[1]) or 8192
local function load(cubin)
  local k = ex.load_kernel("transpose", { S, S })
  k.opts.cubin = cubin
  k.name = k.name .. (cubin and "_cubin" or "_ptx")
  return k
end
local A, B = cute.empty({ S, S }, cute.float32), cute.empty({ S, S }, cute.float32)
A:fill(1.0)
local kc, kp = load(true), load(false)
local cfg = { grid = { S / 32, S / 32 }, block = { 32, 8 } }
for round = 1, 3 do
  for _, k in ipairs({ kc, kp }) do
    local ms = ex.time_ms(function() k:launch(cfg)(A, B) end, 20)
    local e = k:entry(A, B)
    local regs = ffi and 0
    print(("round %d %-28s %.3f ms %7.0f GB/s"):format(round, k.name, ms, 8 * S * S / ms / 1e6))
  end
  local copy_ms = ex.time_ms(function() B:copy_from(A) end, 20)
  print(("round %d %-28s %.3f ms %7.0f GB/s"):format(round, "D2D copy", copy_ms, 8 * S * S / copy_ms / 1e6))
end
