-- bench/autotune_devices.lua: issue 13's 24-config bf16 GEMM sweep
-- (bench/autotune_sweep.lua's configs) benchmarked on this process's GPU, then
-- spread over every GPU of the host (cute.autotune{devices = "all"}, one worker
-- process per GPU; docs/AUTOTUNE.md, "Several GPUs").  Prints both tables, the
-- benchmark stage's wall time of each and whether they agree (statuses, best).
--   cuteluajit bench/autotune_devices.lua [N = 8192]
-- The disk cache must be on (the workers load the parent's compiles from it).
-- Machine-readable line: "AUTOTUNE_DEVICES ".
local cute = require("cute")
local here = (arg[0]:match("(.*/)") or "./")
local N = tonumber(arg[1]) or 8192
if not cute.available() then error("bench/autotune_devices.lua needs a GPU", 0) end

local saved = arg
arg = { [0] = here .. "../examples/gemm_bf16.lua" }
CUTE_EXAMPLE_LIB = true
local gemm = dofile(arg[0])
CUTE_EXAMPLE_LIB = nil
arg = saved

local configs = { bm = { 128, 256 }, bn = { 128, 256 }, warps = { "2x2", "2x4", "4x2" }, stages = { 3, 4 } } -- 24
local function make(c)
  local wm, wn = c.warps:match("(%d)x(%d)")
  return gemm.make_gemm{ bm = c.bm, bn = c.bn, warps_m = tonumber(wm), warps_n = tonumber(wn), stages = c.stages }
end
-- (seeded data: every worker process makes the same inputs)
local ex = dofile(here .. "../examples/common.lua")
ex.seed(20261128)
local bf16 = cute.bfloat16
local args = { cute.from_host(ex.rand_floats(N * N), bf16, { N, N }), cute.from_host(ex.rand_floats(N * N), bf16, { N, N }),
  cute.zeros({ N, N }, bf16), 1, 0 }

local function sweep(devices)
  local t0 = cute.now_us()
  local r = cute.autotune{ kernel = make, configs = configs, args = args, outputs = { 3 }, rtol = 0.05, atol = 0.5,
    warmup_ms = 100, reps = 20, flops = 2 * N ^ 3, devices = devices }
  return r, (cute.now_us() - t0) / 1e3
end
local one, w1 = sweep(nil)
print(one:table())
local many, wn = sweep("all")
print(many:table())
local same = true
for i, a in ipairs(one.results) do
  if a.status ~= many.results[i].status then
    same = false
    print(("config %d: %s on one GPU, %s on %d (%s)"):format(i, a.status, many.results[i].status, cute.device_count(),
      tostring(many.results[i].reason)))
  end
end
local text = require("cute.autotune_report").config_text
print(("one GPU: sweep %.0f ms (benchmark %.0f ms), best %s %.4f ms"):format(w1, one.bench_ms or 0,
  one.best and text(one.best) or "-", one.best_ms or 0))
print(("%d GPUs: sweep %.0f ms (benchmark %.0f ms), best %s %.4f ms"):format(cute.device_count(), wn, many.bench_ms or 0,
  many.best and text(many.best) or "-", many.best_ms or 0))
print(("AUTOTUNE_DEVICES gpus=%d bench_ms_1=%.1f bench_ms_n=%.1f speedup=%.3f statuses_agree=%s same_best=%s")
  :format(cute.device_count(), one.bench_ms or 0, many.bench_ms or 0, (one.bench_ms or 0) / math.max(many.bench_ms or 1, 1e-9),
    tostring(same), tostring(one.best_index == many.best_index)))
