-- Run by spec/autotune_devices_spec.lua (#gpu) and tools/gpu_autotune_multi.sh:
-- one sweep over block sizes on this process's GPU, then the same sweep with
-- devices = "all" (one worker process per GPU, each re-running this script).
-- The statuses and reasons must match, each benchmarked config must name its
-- device and have loaded its kernel from the disk cache; prints both tables
-- and "AUTOTUNE_DEVICES OK" at the end.
--   cuteluajit spec/data/autotune_gpu_devices.lua [n = 2^22]
local cute = require("cute")
local n = tonumber(arg[1]) or 2 ^ 22
local X = cute.from_host((function()
  local t = {}
  for i = 1, n do t[i] = (i % 97) / 7 end
  return t
end)(), cute.float32, { n })
local Y = cute.zeros({ n }, cute.float32)
local function make_kernel() -- (one per sweep: the second then compiles too, from the disk cache)
  return cute.kernel(function(A, B, cfg)
    local i = cute.arch.block_idx() * cfg.block + cute.arch.thread_idx()
    local v = A[i]
    for _ = 1, cfg.depth do v = v * 0.5 + 0.25 end
    B[i] = v * (cfg.wrong and 3 or 1)
  end, { name = "autotune_gpu_devices" })
end
local configs = {}
for _, b in ipairs({ 64, 128, 256, 512, 1024, 2048 }) do
  for _, d in ipairs({ 8, 32 }) do configs[#configs + 1] = { block = b, depth = d, wrong = (b == 512 and d == 8) or nil } end
end
local function sweep(devices)
  return cute.autotune{ kernel = make_kernel(), configs = configs, args = { X, Y }, outputs = { 2 },
    run = function(kk, cfg, A, B) kk:launch{ grid = n / cfg.block, block = cfg.block }(A, B, cfg) end,
    reps = 20, warmup_ms = 10, flops = 2 * 8 * n, devices = devices }
end
local one = sweep(nil)
print(one:table())
local many = sweep("all")
print(many:table())
local ndev = cute.device_count()
local used = {}
for i, a in ipairs(one.results) do
  local b = many.results[i]
  assert(a.status == b.status, ("config %d: %s on one device, %s on %d (%s)"):format(i, a.status, b.status, ndev,
    tostring(b.reason)))
  if a.status == "wrong" then assert(a.reason == b.reason, b.reason) end
  if b.status == "ok" or b.status == "wrong" then
    assert(type(b.device) == "number", "config " .. i .. ": no device")
    used[b.device] = true
  end
  if b.status == "ok" then
    assert(b.worker_cache == "hit", ("config %d: the worker's cache said %s"):format(i, tostring(b.worker_cache)))
    assert(b.ms > 0 and #b.samples == 20)
  end
end
local nused = 0
for _ in pairs(used) do nused = nused + 1 end
assert(nused == math.min(ndev, 10), ("%d of %d devices used"):format(nused, ndev))
assert(one.results[7].status == "wrong" and many.results[7].status == "wrong")
assert(many.best and not many.best.wrong)
print(("one device: bench %.0f ms; %d devices: bench %.0f ms (%.2fx); best %s %.4f ms vs %.4f ms"):format(one.bench_ms,
  ndev, many.bench_ms, one.bench_ms / many.bench_ms, require("cute.autotune_report").config_text(many.best),
  many.best_ms, one.best_ms))
print("AUTOTUNE_DEVICES OK")
