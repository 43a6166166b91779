-- Run by spec/autotune_spec.lua in a child process: a sweep over block sizes
-- on the stand-in GPU of spec/support/autotune_stub.lua (the benchmark stage
-- runs for real apart from the driver and the clock).  Prints one line of
-- key=value facts for the spec to check.
--   cuteluajit spec/data/autotune_child.lua [progress: auto|on|off] [force|forget]
-- (forget: after the sweep, cute.autotune.forget removes the remembered best)
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
local r = cute.autotune{
  kernel = k,
  run = function(kk, cfg, A, B) kk:launch{ grid = 4096 / cfg.block, block = cfg.block }(A, B, cfg) end,
  configs = GRID,
  args = { X, Y },
  check = false, warmup_ms = 3, reps = 5,
  key = "autotune_child", force = force,
  progress = ({ auto = nil, on = true, off = false })[mode],
}
local best = r.best and ("block=%d,depth=%d"):format(r.best.block, r.best.depth) or "none"
local ok = 0
for _, x in ipairs(r.results) do if x.status == "ok" then ok = ok + 1 end end
local api = cute.autotune.best("autotune_child", GRID)
local forgot = arg[2] == "forget" and cute.autotune.forget("autotune_child", GRID)
print(("RESULT api_best=%s forgot=%s"):format(api and ("block=%d,depth=%d"):format(api.block, api.depth) or "none",
  tostring(forgot)))
print(("RESULT2 from_store=%s best=%s best_ms=%s traces=%d compiles=%d loads=%d launches=%d ok=%d n=%d")
  :format(tostring(r.from_store or false), best, tostring(r.best_ms), k.traces, k.compiles, stub.loads, #stub.launches,
    ok, #r.results))
stub.remove()
