-- FlashAttention-2 forward (examples/flash_attention_fwd.lua) against PyTorch's
-- scaled_dot_product_attention, flash backend (bench/flash_attention_torch.py,
-- run in the same job), bf16, B=4 H=16 S=4096 D=128 by default, causal and
-- not: TFLOP/s (4 B H S^2 D, halved when causal) and ours / torch.
--   cuteluajit bench/flash_attention.lua [B] [H] [S] [D] [torch.json]
-- FA_WARPS, FA_BLOCK_M, FA_Q_REGS, FA_MIN_BLOCKS (environment) choose another
-- configuration of the kernel (default 8 warps, 128 query rows per CTA, Q in
-- registers, no launch bound; e.g. FA_WARPS=4 FA_BLOCK_M=64, or FA_Q_REGS=0
-- FA_MIN_BLOCKS=2: two CTAs per SM at 128 registers).
-- Without a JSON file it runs python3 bench/flash_attention_torch.py itself
-- (no baseline when PyTorch is missing). Timing: bench/timing.lua (warm-up
-- >= 200 ms, >= 50 alternating rounds, medians).
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local timing = dofile(here .. "timing.lua")

local B, H, S, D = ex.attention_sizes(arg)
if not timing.gpu() then return end

local FA = ex.load("flash_attention_fwd")

-- PyTorch's figures (same GPU, same job)
local base = timing.baselines(arg[5], ("python3 %sflash_attention_torch.py %d %d %d %d"):format(here, B, H, S, D))

print(("flash attention forward, bf16, B=%d H=%d S=%d D=%d (%s)"):format(B, H, S, D, cute.device(0).name or "GPU"))
local st = timing.gpu_state and timing.gpu_state()
if st then print(st) end
-- small random values (the timing does not depend on them)
local shape, r = { B * H, S, D }, ex.rand_floats(B * H * S * D)
local q, k, v = cute.from_host(r, cute.bfloat16, shape), cute.from_host(r, cute.bfloat16, shape),
  cute.from_host(r, cute.bfloat16, shape)
local o = cute.zeros(shape, cute.bfloat16)
local tm = timing.new()
for _, causal in ipairs({ false, true }) do
  local opts = { d = D, causal = causal, warps = tonumber(os.getenv("FA_WARPS")),
    block_m = tonumber(os.getenv("FA_BLOCK_M")),
    q_regs = os.getenv("FA_Q_REGS") ~= "0", min_blocks = tonumber(os.getenv("FA_MIN_BLOCKS")) }
  local launch = FA.make_kernel(opts):launch(FA.launch_cfg(opts, B * H, S))
  local cfg = FA.config(opts)
  local r = tm:time(("ours%s (%d warps, BM %d%s%s)"):format(causal and " causal" or "", cfg.warps, cfg.bm,
    cfg.q_regs and "" or ", Q from smem", cfg.min_blocks and (", min_blocks %d"):format(cfg.min_blocks) or ""),
    function() launch(q, k, v, o) end)
  local flops = 4 * B * H * S * S * D / (causal and 2 or 1)
  print(timing.line(r, flops / 1e9, "TFLOP/s"))
  local key = causal and "fa_causal_tflops" or "fa_full_tflops"
  local ours = flops / r.ms.median / 1e9
  if base[key] then
    print(("  torch SDPA flash %s: %.1f TFLOP/s (min..max %.1f..%.1f); ours / torch = %.3f"):format(
      causal and "causal" or "full", base[key], base[key .. "_min"] or 0, base[key .. "_max"] or 0, ours / base[key]))
  else
    print("  torch SDPA flash: no baseline (python3 with torch not found)")
  end
end
for _, t in ipairs({ q, k, v, o }) do t:free() end
