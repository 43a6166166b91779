-- bench/transpose_modes.lua: the transpose example loaded as a cubin (ptxas)
-- and as PTX (driver JIT), against a device-to-device copy of the same bytes.
-- The three alternate round by round (bench/timing.lua): medians, min..max
-- over the rounds, and per-round ratios.
--   cuteluajit bench/transpose_modes.lua [size=8192] [rounds=100] [old]
-- With "old", first the method the suite used before (examples/common.lua
-- time_ms on a kernel that compiles in its first call, then the copy alone)
-- for comparison.
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local timing = dofile(here .. "timing.lua")
if not timing.gpu() then return end
local S = tonumber(arg[1]) or 8192
local rounds = tonumber(arg[2]) or 100
local show_old = arg[3] == "old"
local function load(cubin)
  local k = ex.load_kernel("transpose", { S, S }):with({ use_ptxas = cubin })
  k.name = k.name .. (cubin and "_cubin" or "_ptx")
  return k
end
local A, B = cute.empty({ S, S }, cute.float32), cute.empty({ S, S }, cute.float32)
A:fill(1.0)
local kc, kp = load(true), load(false)
local cfg = { grid = { S / 32, S / 32 }, block = { 32, 8 } }
local dev = cute.device(0)
print(("device: %s, L2 %d MiB; transpose %d^2 fp32, grid %dx%d, block 32x8; %d rounds"):format(
  dev.name, dev.l2_size / 2 ^ 20, S, S / 32, S / 32, rounds))
if show_old then
  local k = ex.load_kernel("transpose", { S, S })
  k.name = k.name .. "_old_method"
  local ms = ex.time_ms(function() k:launch(cfg)(A, B) end, 20)
  local copy_ms = ex.time_ms(function() B:copy_from(A) end, 20)
  print(("old method: transpose %.1f GB/s, copy %.1f GB/s, ratio %.3fx"):format(
    8 * S * S / ms / 1e6, 8 * S * S / copy_ms / 1e6, copy_ms / ms))
end
print(timing.gpu_state() or "(no nvidia-smi)")
local tm = timing.new({ min_rounds = rounds })
local r = tm:compare({
  { kc.name, function() kc:launch(cfg)(A, B) end },
  { kp.name, function() kp:launch(cfg)(A, B) end },
  { "D2D copy", function() B:copy_from(A) end },
})
for _, k in ipairs({ kc, kp }) do
  print(("%s: loaded as %s"):format(k.name, k.last_build and k.last_build.image or "?"))
end
local work = 8 * S * S / 1e6 -- bytes moved / 1e6: GB/s from ms
print(timing.gpu_state() or "")
for i = 1, 3 do print(timing.line(r[i], work, "GB/s")) end
print(timing.ratio_line(r, 1, 3))
print(timing.ratio_line(r, 2, 3))
