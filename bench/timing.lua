-- bench/timing.lua: GPU timings that give the same figure run after run.
--   local timing = dofile(here .. "timing.lua")
--   local tm = timing.new()
--   local r = tm:compare({ { "ours", fn_ours }, { "copy", fn_copy } })
--   print(timing.line(r[1]), timing.line(r[2]), timing.ratio_line(r, 1, 2))
--
-- Method (docs/BENCHMARKS.md, "Method"):
--  * each fn runs once and the GPU is synchronised before anything is timed
--    (the first launch compiles: its time must not eat the warm-up);
--  * warm-up: the fns alternate until each has kept the GPU busy for
--    warm_ms (default 200 ms of its own time), so clocks and power have ramped;
--  * rounds: every round times each fn once, in alternating order (A B, B A,
--    ...), so that a drift of clocks or temperature hits all fns alike and a
--    ratio compares samples taken milliseconds apart;
--  * before every sample a read-only kernel streams a scratch buffer of twice
--    the L2 size, so no sample finds its data (or a dirty line of the previous
--    sample) in L2;
--  * at least min_rounds rounds (50) and min_ms of timed work (500 ms);
--  * figures: the median over rounds, with min and max; ratios: the median of
--    the per-round ratios, with min and max.
local cute = require("cute")

local T = {}
local Timer = {}
Timer.__index = Timer

local flush_kernel = cute.kernel(function(X, out, n, never)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  cute.if_then(i < n, function()
    local v = X[i]
    -- never true (X holds zeros): the load cannot be dropped, nothing is written
    cute.if_then(v == never, function() out[0] = v end)
  end)
end, { name = "bench_l2_flush" })

-- opts: warm_ms (200), min_rounds (50), min_ms (500), max_rounds (2000)
function T.new(opts)
  opts = opts or {}
  local dev = cute.device(0)
  local l2 = tonumber(dev.l2_size) or 0
  local n = math.max(2 * l2, 64 * 2 ^ 20) / 4
  n = math.ceil(n / 256) * 256
  local self = setmetatable({
    warm_ms = opts.warm_ms or 200, min_rounds = opts.min_rounds or 50,
    min_ms = opts.min_ms or 500, max_rounds = opts.max_rounds or 2000,
    n = n, scratch = cute.zeros({ n }, cute.float32), sink = cute.zeros({ 1 }, cute.float32),
    e0 = cute.event(), e1 = cute.event(),
  }, Timer)
  self.flush_cfg = { grid = n / 256, block = 256 }
  self:flush()
  cute.synchronize()
  return self
end

-- stream the scratch buffer through L2 (read only: nothing dirty is left)
function Timer:flush()
  flush_kernel:launch(self.flush_cfg)(self.scratch, self.sink, cute.Int32(self.n), cute.Float32(12345))
end

-- one sample of fn in ms: L2 flushed, then fn timed with events
function Timer:sample(fn)
  self:flush()
  self.e0:record()
  fn()
  self.e1:record()
  self.e1:synchronize()
  return cute.elapsed_ms(self.e0, self.e1)
end

local function stats(t)
  local s = {}
  for i = 1, #t do s[i] = t[i] end
  table.sort(s)
  local n = #s
  local med = n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
  return { median = med, min = s[1], max = s[n], n = n }
end
T.stats = stats

-- fns: { { name, fn }, ... }; opts overrides new()'s for this call.  Returns
-- one result per fn: { name =, ms = stats of the per-round times, times = {...} }
function Timer:compare(fns, opts)
  opts = opts or {}
  local warm_ms = opts.warm_ms or self.warm_ms
  local min_rounds, min_ms = opts.min_rounds or self.min_rounds, opts.min_ms or self.min_ms
  local max_rounds = opts.max_rounds or self.max_rounds
  -- first calls (compiles, module loads) out of the way
  for _, f in ipairs(fns) do f[2]() end
  cute.synchronize()
  -- warm-up: each fn keeps the GPU busy for warm_ms of its own time
  local busy = {}
  for i = 1, #fns do busy[i] = 0 end
  local guard = 0
  repeat
    local done = true
    for i, f in ipairs(fns) do
      if busy[i] < warm_ms then
        local t0 = cute.now_us()
        for _ = 1, 4 do f[2]() end
        cute.synchronize()
        busy[i] = busy[i] + (cute.now_us() - t0) / 1e3
        done = false
      end
    end
    guard = guard + 1
  until done or guard > 100000
  -- alternating rounds
  local times = {}
  for i = 1, #fns do times[i] = {} end
  local total, round = 0, 0
  while round < max_rounds and (round < min_rounds or total < min_ms) do
    round = round + 1
    local first, last, step = 1, #fns, 1
    if round % 2 == 0 then first, last, step = #fns, 1, -1 end
    for i = first, last, step do
      local ms = self:sample(fns[i][2])
      times[i][round] = ms
      total = total + ms
    end
  end
  local r = {}
  for i, f in ipairs(fns) do r[i] = { name = f[1], times = times[i], ms = stats(times[i]) } end
  return r
end

-- time one fn alone (figures compared with baselines of another process)
function Timer:time(name, fn, opts)
  return self:compare({ { name, fn } }, opts)[1]
end

-- the rate of an n x n x n GEMM timed alone: 2 n^3 / median, in TFLOP/s (TOP/s)
function Timer:tflops(name, n, fn, opts)
  return 2 * n ^ 3 / self:time(name, fn, opts).ms.median / 1e9
end

-- per-round ratio r[j] time / r[i] time: how many times faster i is than j
-- (for rates: i's rate / j's rate)
function T.ratio(r, i, j)
  local q = {}
  for k = 1, #r[i].times do q[k] = r[j].times[k] / r[i].times[k] end
  return stats(q)
end

-- "name: median X ms (min A, max B, N rounds) = Y unit" for a rate per ms
function T.line(res, rate, unit)
  local s = res.ms
  local txt = ("%-30s median %8.4f ms  min %8.4f  max %8.4f  (%d rounds)"):format(
    res.name, s.median, s.min, s.max, s.n)
  if rate then
    txt = txt .. ("  = %.1f %s (min..max %.1f..%.1f)"):format(rate / s.median, unit or "",
      rate / s.max, rate / s.min)
  end
  return txt
end

function T.ratio_line(r, i, j)
  local q = T.ratio(r, i, j)
  return ("%-30s median %.3fx  min %.3fx  max %.3fx  (%s vs %s, per round)"):format(
    "ratio", q.median, q.min, q.max, r[i].name, r[j].name)
end

-- true when a GPU is usable; otherwise prints "<this script> needs a GPU: why"
-- (a benchmark then stops: it has no figures to give without one)
function T.gpu()
  local ok, why = cute.available()
  if not ok then print(("%s needs a GPU: %s"):format(arg[0], tostring(why))) end
  return ok
end

-- SM/memory clocks, temperature and power from nvidia-smi (nil without it):
-- printed around the figures, so a run measured at other clocks shows it
function T.gpu_state()
  local p = io.popen("nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw " ..
    "--format=csv,noheader -i 0 2>/dev/null")
  if not p then return nil end
  local line = p:read("*l")
  p:close()
  if not line or line == "" then return nil end
  return "SM clock, mem clock, temperature, power: " .. line
end

-- The tensor-core GEMM benches' table (bench/gemm_tc.lua, bench/gemm_sm90.lua):
-- the device, its clocks and the column headings; title heads the first column
function T.gemm_header(title)
  local dev = cute.device(0)
  print(("device: %s, %d SMs, cc %d.%d"):format(dev.name, dev.sm_count, dev.cc[1], dev.cc[2]))
  print(T.gpu_state() or "(no nvidia-smi)")
  print(("%-40s %10s  %-26s %10s %8s  %s"):format(title, "ours", "baseline", "baseline", "ratio", "target"))
end

-- one row of that table: our rate, a baseline's (nil when it was not measured:
-- "-"), ours / baseline and the target
function T.row_text(name, ours, bname, bval, target)
  return ("%-40s %10.1f  %-26s %10s %8s  %s"):format(name, ours, bname, bval and ("%.1f"):format(bval) or "-",
    bval and ("%.3fx"):format(ours / bval) or "-", target or "")
end

function T.row(...)
  print(T.row_text(...))
  io.stdout:flush()
end

-- the GEMM benches' command line: baselines.json [sizes...] -> the baselines'
-- numbers and the sizes (default 4096 8192)
function T.gemm_args(args)
  local sizes = {}
  for i = 2, #args do
    sizes[i - 1] = tonumber(args[i]) or error(("bench: size %q is not a number"):format(args[i]), 0)
  end
  if #sizes == 0 then sizes = { 4096, 8192 } end
  return T.json_numbers(args[1]), sizes
end

-- a baseline script's figures (a flat JSON object) from the file `path` when
-- given, else from what `command` prints (its stderr dropped); {} when neither
-- gives any.  Returns the numbers and the text.
function T.baselines(path, command)
  local text
  local f = path and io.open(path) or (not path and command and io.popen(command .. " 2>/dev/null"))
  if f then
    text = f:read("*a")
    f:close()
  end
  return T.json_numbers(text), text
end

-- Benchmarks of cold processes run their own script again: `env` (NAME=value
-- words, or "") before this interpreter, then arg[0], "--child" and `args`.
-- The child prints key=value words: returned as a table (numbers as numbers);
-- an error with the child's output when the key `want` is missing.
local self_exe
function T.child(env, args, want)
  if not self_exe then
    local ffi = require("ffi")
    pcall(ffi.cdef, "int getpid(void);")
    local p = io.popen("readlink -f /proc/" .. ffi.C.getpid() .. "/exe")
    self_exe = p:read("*l")
    p:close()
  end
  local p = io.popen(("%s %s %s --child %s 2>&1"):format(env, self_exe, arg[0], args))
  local out = p:read("*a")
  p:close()
  local r = {}
  for key, v in out:gmatch("([%w_]+)=(%S+)") do r[key] = tonumber(v) or v end
  if r[want] == nil then error("child failed:\n" .. out, 0) end
  return r
end

-- the numbers of a flat JSON object (the baselines bench/*.py print): text, or a file path
function T.json_numbers(text_or_path)
  local text = text_or_path
  if text and not text:find("{", 1, true) then
    local f = io.open(text)
    text = f and f:read("*a")
    if f then f:close() end
  end
  local out = {}
  for k, v in (text or ""):gmatch('"([%w_]+)"%s*:%s*([%d%.eE+-]+)') do out[k] = tonumber(v) end
  return out
end

return T
