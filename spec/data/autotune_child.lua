-- Run by spec/autotune_spec.lua in a child process: a sweep over block sizes
-- on the stand-in GPU of spec/support/autotune_stub.lua (the benchmark stage
-- runs for real apart from the driver and the clock).  Prints one line of
-- key=value facts for the spec to check.
--   cuteluajit spec/data/autotune_child.lua [progress: auto|on|off] [force|forget|check]
-- (forget: after the sweep, cute.autotune.forget removes the remembered best;
-- check: Y is an output whose host copy holds 2.0 after a launch of 64 or 512
-- threads (64: the first config, the reference), 2.2 after 128 and 4.0 after
-- 256, so the configs of 256 are wrong and those of 128 right within rtol = 0.15 only)
-- CUTE_TEST_DEVICES ("all" or "0,1"): the sweep's devices (docs/AUTOTUNE.md,
-- "Several GPUs"; the stub's CUTE_STUB_DEVICES says how many there are);
-- CUTE_TEST_TWICE: a sweep without devices before the main one (a worker
-- takes its result from the parent instead of running it again);
-- (spec/support/autotune_stub.lua's CUTE_STUB_DIE=d: the worker of device d
-- exits, status 3, on its first launch of 512 threads)
local cute = require("cute")
local stub = dofile("spec/support/autotune_stub.lua")
local mode, force = arg[1] or "auto", arg[2] == "force"
stub.install()
local k = cute.kernel(function(X, Y, cfg)
  local i = cute.arch.block_idx() * cfg.block + cute.arch.thread_idx()
  local v = X[i]
  for _ = 1, cfg.depth do v = v * 1.5 + 0.25 end
  Y[i] = v
end, { name = "autotune_child" })
local GRID = { block = { 64, 128, 256, 512 }, depth = { 2, 3 } }
local X = { ptr = 4096, shape = { 4096 }, strides = { 1 }, dtype = cute.float32 }
local Y = { ptr = 65536, shape = { 4096 }, strides = { 1 }, dtype = cute.float32 }
local checking = arg[2] == "check"
local fills = 0
-- (CUTE_TEST_SKEW: a worker's inputs are not the parent's: all its outputs are 1 higher)
local skew = os.getenv("CUTE_TEST_SKEW") and os.getenv("CUTE_AUTOTUNE_WORKER")
if checking then
  local ffi = require("ffi")
  Y.numel = function() return 4096 end
  Y.fill = function(self) fills = fills + 1; return self end
  Y.to_host = function()
    local b = stub.launches[#stub.launches].block
    local v = b == 256 and 4 or b == 128 and 2.2 or 2
    if skew then v = v + 1 end
    local a = ffi.new("float[4096]")
    for i = 0, 4095 do a[i] = v end
    return a
  end
end
local CHECK = false -- (no check unless checking: then the default comparison)
if checking then CHECK = nil end
local devices = os.getenv("CUTE_TEST_DEVICES")
if devices and devices ~= "all" then
  local l = {}
  for d in devices:gmatch("%d+") do l[#l + 1] = tonumber(d) end
  devices = l
end
if os.getenv("CUTE_TEST_TWICE") then
  local r0 = cute.autotune{ kernel = k, configs = { block = { 64, 128 }, depth = { 4 } }, args = { X, Y }, check = false,
    run = function(kk, cfg, A, B) kk:launch{ grid = 4096 / cfg.block, block = cfg.block }(A, B, cfg) end,
    warmup_ms = 3, reps = 5, progress = false }
  print(("RESULT0 first_best=block=%d,depth=%d worker=%s"):format(r0.best.block, r0.best.depth,
    tostring(cute.autotune.worker())))
end
local r = cute.autotune{
  kernel = k,
  run = function(kk, cfg, A, B) kk:launch{ grid = 4096 / cfg.block, block = cfg.block }(A, B, cfg) end,
  devices = devices,
  configs = GRID,
  args = { X, Y },
  check = CHECK, outputs = checking and { 2 } or nil, rtol = checking and 0.15 or nil, atol = 0,
  warmup_ms = 3, reps = 5,
  key = not checking and "autotune_child" or nil, force = force,
  progress = ({ auto = nil, on = true, off = false })[mode],
}
local best = r.best and ("block=%d,depth=%d"):format(r.best.block, r.best.depth) or "none"
local ok = 0
for _, x in ipairs(r.results) do if x.status == "ok" then ok = ok + 1 end end
local api = cute.autotune.best("autotune_child", GRID)
local forgot = arg[2] == "forget" and cute.autotune.forget("autotune_child", GRID)
if checking then
  local st = {}
  for _, x in ipairs(r.results) do st[#st + 1] = ("%d:%s"):format(x.config.block, x.status) end
  print(("RESULT check=%s fills=%d reason=%s"):format(table.concat(st, ","), fills,
    (r.results[5].reason or "none"):gsub("%s", "_")))
end
local per = {}
for _, x in ipairs(r.results) do
  per[#per + 1] = ("%d:%s:%s:%s:%s:%s"):format(x.index, x.status, tostring(x.device), tostring(x.ms),
    x.samples and table.concat(x.samples, "/") or "-", tostring(x.worker_cache))
end
print("RESULT3 " .. table.concat(per, " "))
print("RESULT4 csv_head=" .. require("cute.autotune_report").csv_text(r):match("^[^\n]*"))
for _, x in ipairs(r.results) do
  if x.status == "worker_error" then print("WORKER_ERROR " .. x.index .. " " .. x.reason) end
end
print(("RESULT api_best=%s forgot=%s"):format(api and ("block=%d,depth=%d"):format(api.block, api.depth) or "none",
  tostring(forgot)))
print(("RESULT2 from_store=%s best=%s best_ms=%s traces=%d compiles=%d loads=%d launches=%d ok=%d n=%d")
  :format(tostring(r.from_store or false), best, tostring(r.best_ms), k.traces, k.compiles, stub.loads, #stub.launches,
    ok, #r.results))
stub.remove()
