-- cute.autotune: sweep a kernel's configurations (docs/AUTOTUNE.md).
--
--   local r = cute.autotune{
--     kernel  = function(cfg) return gemm.make_gemm(cfg) end,  -- or a cute.kernel
--     configs = { bm = {128, 256}, bn = {128, 256}, stages = {3, 4} },  -- a grid, or a list of tables
--     args    = { A, B, C, 1, 0 },     -- a call's arguments (or function(cfg) -> list)
--     run     = function(g, cfg, ...) g.launch(...) end,  -- default: g.launch(...) or g(...)
--     key     = "gemm_bf16_4096",      -- remember the best per key on disk
--   }
--   r.best, r.best_ms, r.results, print(r:table()), r:csv("sweep.csv")
--
-- Three stages:
--  1. trace (Lua thread): each config's run function is called with
--     launch.capture set, so every kernel launch it makes is traced to IR
--     instead of launched, and submitted at once to a pool of C worker threads
--     (cute_compile_pool.h) that run LLVM, ptxas and the disk cache: config
--     i+1 is traced while config i compiles;
--  2. compile: wait for the pool, with progress; a config whose compile fails
--     or whose kernels exceed the device's resources is skipped, its reason
--     recorded;
--  3. benchmark (Lua thread, with a GPU): each config's kernels are loaded from
--     the compiles (no second trace or compile), run once and checked against
--     the first config's output (or a reference), then timed with CUDA events
--     (warm-up, then reps samples: median, min, max, outliers).
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local sp = require("cute.specialise")
local K = require("cute.kernel")
local launch = require("cute.launch")
local rt = require("cute.runtime")
local rep = require("cute.autotune_report")
local dev = require("cute.autotune_devices")

local M = {}
local WHAT = "cute.autotune"
local function fail(fmt, ...) cf.fail(WHAT .. ": " .. fmt:format(...)) end

local KNOWN = { kernel = true, configs = true, args = true, run = true, warmup_ms = true, reps = true, key = true,
  check = true, reference = true, outputs = true, rtol = true, atol = true, workers = true, progress = true,
  csv = true, json = true, compile_only = true, force = true, flops = true, use_ptxas = true, devices = true }

---------------------------------------------------------------------------
-- configurations
---------------------------------------------------------------------------
-- a grid {name = {values...}} as the list of every combination (names sorted,
-- the last varying fastest)
local function expand_grid(grid)
  local names = {}
  for k, v in pairs(grid) do
    if type(k) ~= "string" then fail("configs: a grid's keys must be parameter names, got %s", tostring(k)) end
    if type(v) ~= "table" or #v == 0 then
      fail("configs: grid parameter '%s' must be a non-empty list of values, got %s", k, tostring(v))
    end
    names[#names + 1] = k
  end
  table.sort(names)
  local out = { {} }
  for _, n in ipairs(names) do
    local nx = {}
    for _, base in ipairs(out) do
      for _, v in ipairs(grid[n]) do
        local c = {}
        for k, x in pairs(base) do c[k] = x end
        c[n] = v
        nx[#nx + 1] = c
      end
    end
    out = nx
  end
  return out
end

local function config_list(t)
  local cs = t.configs
  if type(cs) ~= "table" then fail("configs must be a list of tables or a grid {name = {values...}}, got %s", type(cs)) end
  if #cs == 0 then
    if next(cs) == nil then fail("configs is empty") end
    return expand_grid(cs)
  end
  local seen = {}
  for i, c in ipairs(cs) do
    if type(c) ~= "table" then fail("configs[%d] must be a table, got %s", i, type(c)) end
    local key, why = sp.value_key(c)
    if not key then fail("configs[%d] %s", i, why) end
    if seen[key] then fail("configs[%d] repeats configs[%d] (%s)", i, seen[key], rep.config_text(c)) end
    seen[key] = i
  end
  return cs
end

local function check_opts(t)
  if type(t) ~= "table" then fail("expects a table {kernel =, configs =, args = ...}, got %s", type(t)) end
  for k in pairs(t) do
    if not KNOWN[k] then
      local names = {}
      for n in pairs(KNOWN) do names[#names + 1] = n end
      table.sort(names)
      fail("unknown field '%s'; fields: %s", tostring(k), table.concat(names, ", "))
    end
  end
  if not (K.is_kernel(t.kernel) or type(t.kernel) == "function") then
    fail("kernel must be a cute.kernel or a function(config) returning one (or a table with .launch), got %s",
      type(t.kernel))
  end
  if t.run ~= nil and type(t.run) ~= "function" then fail("run must be a function(g, config, args...), got %s", type(t.run)) end
  if K.is_kernel(t.kernel) and not t.run then
    fail("kernel is a cute.kernel: give run = function(k, config, ...) that launches it for a config " ..
      "(e.g. k:launch{grid = ..., block = ...}(..., config))")
  end
  if t.args ~= nil and type(t.args) ~= "table" and type(t.args) ~= "function" then
    fail("args must be a list of the kernel call's arguments or a function(config) returning one, got %s", type(t.args))
  end
  local function num(name, lo, int)
    local v = t[name]
    if v ~= nil and (type(v) ~= "number" or v < lo or (int and v % 1 ~= 0)) then
      fail("%s must be a%s number >= %s, got %s", name, int and "n integer" or "", tostring(lo), tostring(v))
    end
  end
  num("warmup_ms", 0); num("reps", 1, true); num("workers", 1, true); num("rtol", 0); num("atol", 0)
  if t.key ~= nil and type(t.key) ~= "string" and type(t.key) ~= "function" then
    fail("key must be a string or a function(args...) returning one, got %s", type(t.key))
  end
  if t.check ~= nil and type(t.check) ~= "boolean" and type(t.check) ~= "function" then
    fail("check must be true, false or a function(outputs, reference_outputs, config) -> ok, why; got %s", type(t.check))
  end
  if t.devices ~= nil and t.devices ~= "all" and type(t.devices) ~= "table" then
    fail("devices must be \"all\" or a non-empty list of device ordinals, got %s", tostring(t.devices))
  end
  if t.outputs ~= nil and type(t.outputs) ~= "table" then fail("outputs must be a list of argument indices, got %s", type(t.outputs)) end
  if t.flops ~= nil and type(t.flops) ~= "number" and type(t.flops) ~= "function" then
    fail("flops must be a number or a function(config, args...) -> number, got %s", type(t.flops))
  end
end

---------------------------------------------------------------------------
-- stage 1: trace every config on this thread, compile in the pool
---------------------------------------------------------------------------
local function now_ms() return C.cute_cuda_now_us() / 1e3 end

-- the first line of an error, without the file:line it was raised at
local function first_line(s)
  s = tostring(s):match("^[^\n]*")
  return (s:gsub("^[^:%s]+:%d+: ", ""))
end

-- the default run: g.launch(...) for a table with .launch, g(...) for a function
local function default_run(g, _, ...)
  if type(g) == "table" and not K.is_kernel(g) and type(g.launch) == "function" then return g.launch(...) end
  if type(g) == "function" then return g(...) end
  if K.is_kernel(g) then
    fail("kernel(config) returned a cute.kernel: give run = function(k, config, ...) that launches it " ..
      "(e.g. k:launch{grid = ..., block = ...}(...))")
  end
  fail("kernel(config) returned a %s: return a table with .launch, a function, or give run = ...", type(g))
end

local function arg_list(t, config)
  local a = t.args
  if type(a) == "function" then
    a = a(config)
    if type(a) ~= "table" then fail("args(config) must return a list of arguments, got %s", type(a)) end
  end
  return a or {}
end

-- trace one launch that the run function made; submit its IR to the pool
local function capture_one(st, k, l, args, nargs)
  sp.check_args(k, args, nargs, false)
  local copy, keys = {}, {}
  for i = 1, nargs do copy[i] = args[i]; keys[i] = sp.arg_key(args[i]) end
  local mask = sp.static_mask(copy, nargs)
  -- (the same call again in this config: one compile serves both)
  for _, r in ipairs(st.recs) do
    if r.k == k and r.nargs == nargs and r.mask == mask then
      local same = true
      for i = 1, nargs do same = same and r.keys[i] == keys[i] end
      if same then return end
    end
  end
  k._alias_mask = mask
  local t0 = now_ms()
  local ir, plan = k:trace(unpack(copy, 1, nargs))
  st.trace_ms = st.trace_ms + now_ms() - t0
  -- a cubin from ptxas when present (registers and spills known, the load
  -- needs no driver JIT on this thread), unless use_ptxas was given
  local o = K.launch_options(k, false)
  local want = st.use_ptxas
  if want == nil then want = not o:given("use_ptxas") and C.cute_ptxas_path() ~= nil or o.values.use_ptxas end
  if want ~= o.values.use_ptxas and not o.portable then o = o:with({ use_ptxas = want }, WHAT) end
  local job = C.cute_compile_pool_submit(st.pool, ir, o.h, cf.err)
  if job < 0 then fail("%s", ffi.string(cf.err[0].msg)) end
  local rec = { k = k, ir = ir, plan = plan, mask = mask, keys = keys, nargs = nargs, job = job, opts = o,
    threads = l.bx * l.by * l.bz, smem = l.smem, cfg_index = st.index }
  st.recs[#st.recs + 1] = rec
  st.keep[#st.keep + 1] = ir
  st.jobs[job] = rec
end

-- (keep: every traced IR, held until the pool is freed: a job reads its IR)
local function trace_all(t, configs, pool, prog, results, keep)
  local st = { pool = pool, recs = nil, jobs = {}, use_ptxas = t.use_ptxas, keep = keep }
  local made = {}
  local submitted = 0
  for i, config in ipairs(configs) do
    local r = results[i]
    st.recs, st.index, st.trace_ms = {}, i, 0
    local ok, err = pcall(function()
      local g = t.kernel
      if not K.is_kernel(g) then g = t.kernel(config) end
      made[i] = g
      local args = arg_list(t, config)
      r.args = args
      launch.capture = function(k, l, a, n) capture_one(st, k, l, a, n) end
      local ok2, e2 = pcall(t.run or default_run, g, config, unpack(args, 1, table.maxn(args)))
      launch.capture = nil
      if not ok2 then cf.rethrow(e2) end
    end)
    launch.capture = nil
    r.recs, r.trace_ms = st.recs, st.trace_ms
    r.g = made[i]
    if not ok then
      r.status, r.reason = "trace_error", first_line(err)
      r.error = tostring(err)
    end
    submitted = submitted + #st.recs
    prog:update("compile", C.cute_compile_pool_wait(pool, 0), submitted)
  end
  return submitted
end

---------------------------------------------------------------------------
-- stage 2: the pool's results; resources
---------------------------------------------------------------------------
local ARCH_SMEM = { sm_80 = 166912, sm_86 = 101376, sm_87 = 166912, sm_89 = 101376, sm_90 = 232448, sm_90a = 232448 }

local function limits(arch)
  local ok, avail = pcall(rt.available)
  if ok and avail then
    local okd, d = pcall(rt.device)
    if okd then
      return { smem = d.smem_per_block_optin, threads = d.max_threads_per_block, regs = d.regs_per_block,
        source = d.name }
    end
  end
  return { smem = ARCH_SMEM[arch] or 49152, threads = 1024, regs = 65536, source = arch }
end

local function sha256(s) return require("cute.cache").sha256(s) end

local function collect(pool, results)
  local out = ffi.new("cute_compiled*[1]")
  for _, r in ipairs(results) do
    r.compile_ms = 0
    for _, rec in ipairs(r.recs or {}) do
      local st = C.cute_compile_pool_result(pool, rec.job, out, cf.err)
      rec.cc = out[0] ~= nil and ffi.gc(out[0], C.cute_compiled_free) or nil
      rec.compile_ms = C.cute_compile_pool_job_us(pool, rec.job) / 1e3
      r.compile_ms = r.compile_ms + rec.compile_ms
      if st ~= 0 then
        local msg = ffi.string(cf.err[0].msg)
        local stage = rec.cc and C.cute_compiled_failed_stage(rec.cc)
        stage = stage ~= nil and stage and ffi.string(stage) or "compile"
        rec.cc = nil
        if not r.status then
          r.status, r.reason, r.error = "compile_error", ("%s (%s): %s"):format(rec.k.name, stage, first_line(msg)), msg
        end
      else
        rec.cache = ffi.string(C.cute_compiled_cache_status(rec.cc))
        local ptx = C.cute_compiled_ptx(rec.cc)
        r.kernels = r.kernels or {}
        r.kernels[#r.kernels + 1] = { name = rec.k.name, compile_ms = rec.compile_ms, cache = rec.cache,
          image = C.cute_compiled_has_cubin(rec.cc) ~= 0 and "cubin" or "ptx",
          ptx_sha256 = ptx ~= nil and sha256(ffi.string(ptx)) or nil }
        local info = ffi.new("cute_kernel_info")
        C.cute_compiled_info(rec.cc, nil, info)
        rec.info = info
        local lim = limits(ffi.string(C.cute_compiled_arch(rec.cc)))
        local smem = info.smem_static + (rec.smem or info.smem_dynamic)
        local why
        if smem > lim.smem then
          why = ("%s: %d bytes of shared memory, the device allows %d per block (%s)"):format(rec.k.name, smem, lim.smem,
            lim.source)
        elseif rec.threads > lim.threads then
          why = ("%s: a block of %d threads, at most %d (%s)"):format(rec.k.name, rec.threads, lim.threads, lim.source)
        elseif info.regs > 0 and info.regs * rec.threads > lim.regs then
          why = ("%s: %d registers x %d threads = %d, at most %d per block (%s)"):format(rec.k.name, info.regs,
            rec.threads, info.regs * rec.threads, lim.regs, lim.source)
        end
        if why and not r.status then r.status, r.reason = "resources", why end
        r.regs = math.max(r.regs or 0, info.regs)
        r.smem = math.max(r.smem or 0, smem)
        r.spills = (r.spills or 0) + info.spill_stores + info.spill_loads
      end
    end
  end
end

---------------------------------------------------------------------------
-- stage 3: load, check, time
---------------------------------------------------------------------------
-- launches of the benchmark load the pool's compiles: a per-kernel _build
-- that takes the record of the same call (argument keys and overlap mask)
local Kernel = K.Kernel
local function install(results)
  local by_kernel = {}
  for _, r in ipairs(results) do
    for _, rec in ipairs(r.recs or {}) do
      if rec.cc then
        local list = by_kernel[rec.k]
        if not list then list = {}; by_kernel[rec.k] = list end
        list[#list + 1] = rec
      end
    end
  end
  for k, list in pairs(by_kernel) do
    rawset(k, "_build", function(self, args, nargs)
      for _, rec in ipairs(list) do
        if not rec.used and rec.nargs == nargs and rec.mask == self._alias_mask then
          local same = true
          for i = 1, nargs do same = same and sp.arg_key(args[i]) == rec.keys[i] end
          if same then
            rec.used = true
            self.compiles = self.compiles + 1
            local t = C.cute_cuda_now_us()
            return launch.load_entry(self, rec.cc, rec.plan, nargs, t - rec.compile_ms * 1e3, t - rec.compile_ms * 1e3, t)
          end
        end
      end
      return Kernel._build(self, args, nargs)
    end)
  end
  return by_kernel
end
local function uninstall(by_kernel)
  for k in pairs(by_kernel) do rawset(k, "_build", nil) end
end

local function median(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  local n = #s
  if n == 0 then return nil end
  if n % 2 == 1 then return s[(n + 1) / 2], s end
  return (s[n / 2] + s[n / 2 + 1]) / 2, s
end
M.median = median

-- median, min, max and the samples far from the median (more than 5 scaled
-- median absolute deviations, and more than 2% away)
function M.summary(xs)
  local med, s = median(xs)
  local dev = {}
  for i, x in ipairs(xs) do dev[i] = math.abs(x - med) end
  local mad = median(dev) * 1.4826
  local out = {}
  for _, x in ipairs(xs) do
    if math.abs(x - med) > math.max(5 * mad, 0.02 * med) then out[#out + 1] = x end
  end
  return { median = med, min = s[1], max = s[#s], outliers = out }
end

-- the output tensors of a call: the given indices, else every device tensor
local function outputs_of(t, args)
  local out = {}
  if t.outputs then
    for _, i in ipairs(t.outputs) do
      local a = args[i]
      if not (type(a) == "table" and a.to_host) then fail("outputs: argument %s is not a device tensor", tostring(i)) end
      out[#out + 1] = a
    end
  else
    for i = 1, table.maxn(args) do
      local a = args[i]
      if type(a) == "table" and a.to_host and a.ptr then out[#out + 1] = a end
    end
  end
  return out
end

local function host_copy(ts)
  local h = {}
  for i, x in ipairs(ts) do h[i] = { data = x:to_host(), n = x:numel(), dtype = x.dtype } end
  return h
end

-- compare two host copies: |a - b| <= atol + rtol * |b| on up to 2^20
-- elements (all of them when fewer, else an evenly spread sample)
local function compare(got, want, rtol, atol)
  for i = 1, #want do
    local g, w = got[i], want[i]
    local conv = w.dtype.to_number
    local n = w.n
    local step = n <= 2 ^ 20 and 1 or math.floor(n / 2 ^ 20)
    for j = 0, n - 1, step do
      local a, b = g.data[j], w.data[j]
      if conv then a, b = conv(a), conv(b) else a, b = tonumber(a), tonumber(b) end
      if a ~= b and not (math.abs(a - b) <= atol + rtol * math.abs(b)) then
        return false, ("output %d element %d: %.6g, the reference has %.6g (rtol %g, atol %g)"):format(i, j, a, b, rtol, atol)
      end
    end
  end
  return true
end

local function bench_one(t, r, ref, prog)
  local args = r.args
  local run = t.run or default_run
  local nargs = table.maxn(args)
  local function call() return run(r.g, r.config, unpack(args, 1, nargs)) end
  local outs = outputs_of(t, args)
  if t.outputs and t.check ~= false then for _, o in ipairs(outs) do o:fill(0) end end
  local ok, err = pcall(function() call(); rt.synchronize() end)
  if not ok then
    r.status, r.reason, r.error = "launch_error", first_line(err), tostring(err)
    return
  end
  if t.check ~= false and #outs > 0 then
    local got = host_copy(outs)
    if ref.outputs then
      local good, why
      if type(t.check) == "function" then good, why = t.check(got, ref.outputs, r.config)
      else good, why = compare(got, ref.outputs, t.rtol or 1e-2, t.atol or 1e-2) end
      if not good then
        r.status, r.reason = "wrong", ("output differs from %s: %s"):format(ref.what, tostring(why))
        return
      end
    else
      ref.outputs, ref.what = got, "the first config's (" .. rep.config_text(r.config) .. ")"
    end
  end
  -- warm-up: at least warmup_ms of GPU time, at least one call
  local e0, e1 = rt.event(), rt.event()
  local warm, spent = t.warmup_ms or 25, 0
  repeat
    e0:record(); call(); e1:record()
    spent = spent + rt.elapsed_ms(e0, e1)
  until spent >= warm
  local times = {}
  for i = 1, t.reps or 20 do
    e0:record(); call(); e1:record()
    times[i] = rt.elapsed_ms(e0, e1)
  end
  local s = M.summary(times)
  r.status, r.ms, r.min_ms, r.max_ms, r.samples = "ok", s.median, s.min, s.max, times
  r.outliers = #s.outliers
  if #s.outliers > 0 then r.outlier_ms = s.outliers end
  local flops = t.flops
  if type(flops) == "function" then flops = flops(r.config, unpack(args, 1, nargs)) end
  if type(flops) == "number" then r.tflops = flops / (r.ms * 1e9) end
  _ = prog
end

---------------------------------------------------------------------------
-- the sweep
---------------------------------------------------------------------------
local Result = {}
Result.__index = Result
function Result:table() return rep.table_text(self) end
function Result:csv(path) rep.write_file("cute.autotune result:csv", path, rep.csv_text(self)); return self end
function Result:json(path) rep.write_file("cute.autotune result:json", path, rep.json_encode(self:data())); return self end
-- plain data (no kernels, tensors or compiles): for JSON and the note
function Result:data()
  local rs = {}
  for i, r in ipairs(self.results) do
    rs[i] = { index = r.index, config = r.config, status = r.status, reason = r.reason, trace_ms = r.trace_ms,
      compile_ms = r.compile_ms, ms = r.ms, min_ms = r.min_ms, max_ms = r.max_ms, outliers = r.outliers,
      outlier_ms = r.outlier_ms, tflops = r.tflops, regs = r.regs, smem = r.smem, spills = r.spills, cache = r.cache,
      kernels = r.kernels, device = r.device, worker_cache = r.worker_cache, samples = r.samples }
  end
  return { key = self.key, best = self.best, best_ms = self.best_ms, best_index = self.best_index, workers = self.workers,
    trace_ms = self.trace_ms, compile_wall_ms = self.compile_wall_ms, bench_ms = self.bench_ms, total_ms = self.total_ms,
    from_store = self.from_store, devices = self.devices, results = rs }
end
Result.__tostring = function(self) return rep.table_text(self) end

local function key_text(t, configs, args, arch)
  local k = t.key
  if k == nil then return nil end
  if type(k) == "function" then
    k = k(unpack(args, 1, table.maxn(args)))
    if type(k) ~= "string" then fail("key(args...) must return a string, got %s", type(k)) end
  end
  local space = {}
  for i, c in ipairs(configs) do space[i] = sp.value_key(c) or rep.config_text(c) end
  local dev = "no GPU"
  local ok, avail = pcall(rt.available)
  if ok and avail then
    local okd, d = pcall(rt.device)
    if okd then dev = d.name end
  end
  return ("%s|%s|%s|%s"):format(k, dev, tostring(arch), require("cute.cache").sha256(table.concat(space, "\n")))
end

-- the best result as the sweep's, and in the note of its key
local function keep_best(res, best, ktext)
  if best then res.best, res.best_index, res.best_ms = best.config, best.index, best.ms end
  if best and ktext then
    local okw, why = rep.store_best({ key = ktext, best_index = best.index, best_key = sp.value_key(best.config),
      best = best.config, best_ms = best.ms, time = os.time() })
    if not okw then res.store_error = why end
  end
end

local function sweep(t, call)
  check_opts(t)
  local t_start = now_ms()
  local configs = config_list(t)
  local job = dev.job()
  if job and call == job.call then dev.work(t, configs, job, M._stages) end -- (a worker: exits)
  local names = rep.param_names(configs)
  local gpu = false
  do
    local ok, avail = pcall(rt.available)
    gpu = ok and avail or false
  end
  local compile_only = t.compile_only or not gpu
  local devices = t.devices ~= nil and not compile_only and dev.devices(t.devices) or nil
  local arch = require("cute.compile").device_arch() or require("cute.compile").default_arch()
  local res = setmetatable({ param_names = names, results = {}, workers = t.workers or C.cute_compile_pool_cpus() },
    Result)
  for i, c in ipairs(configs) do res.results[i] = { index = i, config = c } end

  -- a later process starts with the best config an earlier one found
  local ktext = key_text(t, configs, arg_list(t, configs[1]), arch)
  res.key = ktext
  if ktext and not t.force then
    local rec = rep.load_best(ktext)
    if rec and type(rec.best_index) == "number" and configs[rec.best_index]
      and sp.value_key(configs[rec.best_index]) == rec.best_key then
      res.best, res.best_index, res.best_ms, res.from_store = configs[rec.best_index], rec.best_index, rec.best_ms, true
      res.total_ms = now_ms() - t_start
      for _, r in ipairs(res.results) do r.status = "not_run"; r.reason = "the best config is remembered (force = true sweeps again)" end
      res.results[rec.best_index].status = "remembered"
      res.results[rec.best_index].ms = rec.best_ms
      res.results[rec.best_index].reason = nil
      return res
    end
  end

  local prog = rep.progress(t.progress)
  local pool = C.cute_compile_pool_new(res.workers, cf.err)
  if pool == nil then fail("%s", ffi.string(cf.err[0].msg)) end
  pool = ffi.gc(pool, C.cute_compile_pool_free)
  local t0 = now_ms()
  local keep = {}
  local ok, err = pcall(function()
    local total = trace_all(t, configs, pool, prog, res.results, keep)
    res.trace_ms = 0
    for _, r in ipairs(res.results) do res.trace_ms = res.trace_ms + (r.trace_ms or 0) end
    while true do
      local done = C.cute_compile_pool_wait(pool, 100)
      prog:update("compile", done, total, nil, done >= total)
      if done >= total then break end
    end
    res.compile_wall_ms = now_ms() - t0
    collect(pool, res.results)
  end)
  ffi.gc(pool, nil)
  C.cute_compile_pool_free(pool) -- (waits for running jobs; only then may their IR go)
  keep = nil
  if not ok then cf.rethrow(err) end
  for _, r in ipairs(res.results) do
    if not r.status then
      r.status = "compiled"
      local st = {}
      for _, rec in ipairs(r.recs) do st[#st + 1] = rec.cache end
      r.cache = table.concat(st, ",")
      if #r.recs == 0 then r.reason = "no launch was made (a kernel already loaded for these arguments runs as it is)" end
    end
  end

  if devices then
    local tb = now_ms()
    dev.bench(t, res, configs, devices, prog, call, M._history, M._stages)
    local best
    for _, r in ipairs(res.results) do
      if r.status == "ok" and (not best or r.ms < best.ms) then best = r end
    end
    res.bench_ms = now_ms() - tb
    keep_best(res, best, ktext)
  elseif not compile_only then
    local tb = now_ms()
    local by_kernel = install(res.results)
    local ref = { outputs = nil }
    if t.reference then
      local ra = arg_list(t, configs[1])
      local okr, e = pcall(t.reference, unpack(ra, 1, table.maxn(ra)))
      if not okr then fail("reference: %s", tostring(e)) end
      rt.synchronize()
      ref.outputs, ref.what = host_copy(outputs_of(t, ra)), "the reference"
    end
    local n, best = 0, nil
    local okb, eb = pcall(function()
      for _, r in ipairs(res.results) do
        if r.status == "compiled" then
          -- (a launch that fails while being timed fails this config only; an
          -- error of the driver's context will fail the ones after it too)
          local okc, ec = pcall(bench_one, t, r, ref, prog)
          if not okc then r.status, r.reason, r.error, r.ms = "launch_error", first_line(ec), tostring(ec), nil end
          if r.status == "ok" and (not best or r.ms < best.ms) then best = r end
        end
        n = n + 1
        prog:update("bench", n, #res.results, best and ("%.4f ms (%s)"):format(best.ms, rep.config_text(best.config, names)),
          n == #res.results)
      end
    end)
    uninstall(by_kernel)
    if not okb then cf.rethrow(eb) end
    res.bench_ms = now_ms() - tb
    keep_best(res, best, ktext)
  end
  -- drop what holds GPU or compiler objects: the result is plain data
  for _, r in ipairs(res.results) do r.recs, r.g, r.args = nil, nil, nil end
  res.total_ms = now_ms() - t_start
  if t.csv then res:csv(t.csv) end
  if t.json then res:json(t.json) end
  return res
end

-- the stages, for cute.autotune_devices's workers
M._stages = { trace_all = trace_all, collect = collect, install = install, uninstall = uninstall, bench_one = bench_one,
  first_line = first_line, arg_list = arg_list, outputs_of = outputs_of, host_copy = host_copy, default_run = default_run,
  compare = compare }

-- every sweep of this process as plain data, in call order: a worker (which
-- runs the script again) returns these for the sweeps before its own
M._history = {}
function M.run(t)
  local call = #M._history + 1
  local job = dev.job()
  if job and call < job.call then
    local d = type(job.earlier) == "table" and job.earlier[call]
    if type(d) ~= "table" then fail("worker: the parent sent no result for this process's sweep %d", call) end
    M._history[call] = d
    local res = setmetatable({}, Result)
    for k, v in pairs(d) do res[k] = v end
    local cs = {}
    for i, x in ipairs(d.results or {}) do cs[i] = x.config end
    res.param_names = rep.param_names(cs)
    return res
  end
  M._history[call] = false -- (this call's place, while it runs)
  local res = sweep(t, call)
  M._history[call] = res:data()
  return res
end

-- the device ordinal (of the parent's numbering) this process benchmarks as
-- a worker of a sweep over several GPUs, or nil in any other process
function M.worker()
  local job = dev.job()
  return job and job.device or nil
end

-- the remembered best config for a key (as cute.autotune{key = ...} stored
-- it for this device and arch), or nil
function M.best(key, configs)
  if type(key) ~= "string" then fail("best(key, configs): key must be a string, got %s", type(key)) end
  local cs = config_list({ configs = configs })
  local arch = require("cute.compile").device_arch() or require("cute.compile").default_arch()
  local rec = rep.load_best(key_text({ key = key }, cs, {}, arch))
  if rec and cs[rec.best_index] and sp.value_key(cs[rec.best_index]) == rec.best_key then return cs[rec.best_index], rec.best_ms end
  return nil
end

-- forget the remembered best config of a key; true if there was one
function M.forget(key, configs)
  if type(key) ~= "string" then fail("forget(key, configs): key must be a string, got %s", type(key)) end
  local cs = config_list({ configs = configs })
  local arch = require("cute.compile").device_arch() or require("cute.compile").default_arch()
  return rep.forget(key_text({ key = key }, cs, {}, arch))
end

return setmetatable(M, { __call = function(_, t) return M.run(t) end })
