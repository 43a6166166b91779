-- Three launches of the FA3-style forward (examples/flash_attention_sm90.lua) at the
-- benchmark's size, for ncu / compute-sanitizer (tools/ncu_sm90.sh profiles the third):
--   cuteluajit tools/fa3_once.lua [B] [H] [S] [D] [causal 0/1]
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local B, H, S, D = ex.attention_sizes(arg)
local FA = ex.load("flash_attention_sm90")
local opts = { d = D, causal = arg[5] == "1" }
local t = {}
for i = 1, 4 do t[i] = cute.zeros({ B * H, S, D }, cute.bfloat16) end
local run = FA.launcher(FA.make_kernel(opts), opts, t[1], t[2], t[3], t[4])
for _ = 1, 3 do run() end
cute.synchronize()
print("fa3_once: 3 launches done")
