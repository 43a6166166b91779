-- One FlashAttention-2 forward launch at the benchmark's size (for ncu / compute-sanitizer):
--   cuteluajit tools/fa_once.lua [B] [H] [S] [D] [causal 0/1]
-- (FA_WARPS, FA_BLOCK_M, FA_Q_REGS, FA_MIN_BLOCKS: another configuration, as bench/flash_attention.lua)
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local causal = arg[5] == "1"
local ex = dofile(here .. "../examples/common.lua")
local B, H, S, D = ex.attention_sizes(arg)
local FA = ex.load("flash_attention_fwd")
local t = {}
for i = 1, 4 do t[i] = cute.zeros({ B * H, S, D }, cute.bfloat16) end
local opts = { d = D, causal = causal, warps = tonumber(os.getenv("FA_WARPS")),
  block_m = tonumber(os.getenv("FA_BLOCK_M")),
  q_regs = os.getenv("FA_Q_REGS") ~= "0", min_blocks = tonumber(os.getenv("FA_MIN_BLOCKS")) }
FA.make_kernel(opts):launch(FA.launch_cfg(opts, B * H, S))(t[1], t[2], t[3], t[4])
cute.synchronize()
print("done")
