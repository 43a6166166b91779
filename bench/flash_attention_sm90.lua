-- FlashAttention-3-style forward for Hopper (examples/flash_attention_sm90.lua)
-- against PyTorch's scaled_dot_product_attention with the cuDNN and the flash
-- backends (bench/flash_attention_torch.py, run in the same job), bf16,
-- B=4 H=16 S=4096 D=128 by default, causal and not: TFLOP/s (4 B H S^2 D,
-- halved when causal), ours / cuDNN and ours / flash (issue 11 targets: >= 0.9x
-- cuDNN, >= 1.8x flash), and the kernel's cold compile time (trace + LLVM +
-- ptxas, disk cache off).
--   cuteluajit bench/flash_attention_sm90.lua [B] [H] [S] [D] [torch.json]
-- FA3_STAGES, FA3_OVERLAP=0, FA3_PINGPONG=0, FA3_PRODUCER_REGS, FA3_CONSUMER_REGS
-- (environment) choose another configuration (default 2 stages, softmax
-- overlapped with wgmma, ping-pong between the consumer warpgroups, 24 / 240
-- registers).
-- Without a JSON file it runs python3 bench/flash_attention_torch.py B H S D
-- cudnn,flash itself (no baseline when PyTorch is missing). Timing:
-- bench/timing.lua (warm-up >= 200 ms, >= 50 alternating rounds, medians).
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local ex = dofile(here .. "../examples/common.lua")
local timing = dofile(here .. "timing.lua")

local B, H, S, D = ex.attention_sizes(arg)
if not timing.gpu() then return end

local FA3 = ex.load("flash_attention_sm90")

-- PyTorch's figures (same GPU, same job)
local base, text = timing.baselines(arg[5],
  ("python3 %sflash_attention_torch.py %d %d %d %d cudnn,flash"):format(here, B, H, S, D))
local cudnn_error = text and text:match('"cudnn_error": "([^"]*)"')

print(("flash attention forward (Hopper, FA3 style), bf16, B=%d H=%d S=%d D=%d (%s)"):format(B, H, S, D,
  cute.device(0).name or "GPU"))
local st = timing.gpu_state and timing.gpu_state()
if st then print(st) end
-- small random values (the timing does not depend on them)
local shape, r = { B * H, S, D }, ex.rand_floats(B * H * S * D)
local q, k, v = cute.from_host(r, cute.bfloat16, shape), cute.from_host(r, cute.bfloat16, shape),
  cute.from_host(r, cute.bfloat16, shape)
local o = cute.zeros(shape, cute.bfloat16)
local tm = timing.new()
local env_n = function(name) return tonumber(os.getenv(name)) end
for _, causal in ipairs({ false, true }) do
  local opts = { d = D, causal = causal, stages = env_n("FA3_STAGES"), overlap = os.getenv("FA3_OVERLAP") ~= "0",
    pingpong = os.getenv("FA3_PINGPONG") ~= "0",
    producer_regs = env_n("FA3_PRODUCER_REGS"), consumer_regs = env_n("FA3_CONSUMER_REGS") }
  local cfg = FA3.config(opts)
  -- cold compile: a fresh kernel object, the disk cache bypassed
  -- (keep = "ptx": what a launch keeps, no LLVM text printed)
  local kern = FA3.make_kernel(opts):with{ cache = false, keep = "ptx" }
  local launch, args = FA3.launcher(kern, opts, q, k, v, o)
  local t0 = cute.now_us()
  local res = kern:compile(unpack(args)) -- trace -> IR -> LLVM -> PTX -> cubin
  local total = cute.now_us() - t0
  print(("  cold compile %s: %.1f ms trace -> cubin (%d registers, %d spill bytes, %d bytes dynamic shared memory)"):format(
    causal and "causal" or "full", total / 1e3, res.info.regs or -1,
    (res.info.spill_stores or 0) + (res.info.spill_loads or 0), res.info.smem_dynamic or -1))
  local r = tm:time(("ours%s (%d stages%s%s)"):format(causal and " causal" or "", cfg.stages,
    cfg.overlap and ", softmax overlapped" or ", serial", cfg.pingpong and ", ping-pong" or ""), function() launch() end)
  local flops = 4 * B * H * S * S * D / (causal and 2 or 1)
  print(timing.line(r, flops / 1e9, "TFLOP/s"))
  local ours = flops / r.ms.median / 1e9
  for _, b in ipairs({ { "cudnn", "cuDNN", 0.9 }, { "fa", "flash", 1.8 } }) do
    local key = ("%s_%s_tflops"):format(b[1], causal and "causal" or "full")
    if base[key] then
      print(("  torch SDPA %s %s: %.1f TFLOP/s (min..max %.1f..%.1f); ours / %s = %.3f (target >= %.1f)"):format(
        b[2], causal and "causal" or "full", base[key], base[key .. "_min"] or 0, base[key .. "_max"] or 0, b[2],
        ours / base[key], b[3]))
    else
      print(("  torch SDPA %s: no baseline%s"):format(b[2],
        b[1] == "cudnn" and cudnn_error and (" (" .. cudnn_error .. ")") or " (python3 with torch not found)"))
    end
  end
end
for _, t in ipairs({ q, k, v, o }) do t:free() end
