-- cute.autotune{devices = "all" | {0, 1, ...}}: the benchmark stage spread
-- over several GPUs of a host, one worker process per device
-- (docs/AUTOTUNE.md, "Several GPUs").
--
-- The parent traces and compiles every config (the disk cache then holds each
-- kernel), runs the reference once (the first config's check run, or
-- `reference`) and writes its outputs to files.  Then it starts one worker per
-- device: the same script, with CUDA_VISIBLE_DEVICES set to that device and
-- CUTE_AUTOTUNE_WORKER naming a job file.  In the worker, the script runs as
-- usual up to the same cute.autotune call (earlier calls return the parent's
-- results without running); that call traces its share of the configs, loads
-- their kernels from the disk cache, checks and times them against the
-- parent's reference, writes its results as JSON after each config and exits.
-- The parent merges the results in config order, each with its device.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local rt = require("cute.runtime")
local rep = require("cute.autotune_report")
local sp = require("cute.specialise")

local M = {}
local WHAT = "cute.autotune"
local function fail(fmt, ...) cf.fail(WHAT .. ": " .. fmt:format(...)) end

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local read_file = cf.read_file
local function write_atomic(path, text) cf.write_atomic(path, text, "cute.autotune") end

-- a digest of the configuration list: the worker checks it ran the same sweep
function M.digest(configs)
  local space = {}
  for i, c in ipairs(configs) do space[i] = sp.value_key(c) or rep.config_text(c) end
  return require("cute.cache").sha256(table.concat(space, "\n"))
end

---------------------------------------------------------------------------
-- the worker's side
---------------------------------------------------------------------------
local job_cache
-- the job of this process when it is a worker (CUTE_AUTOTUNE_WORKER), or nil
function M.job()
  if job_cache ~= nil then return job_cache or nil end
  local path = os.getenv("CUTE_AUTOTUNE_WORKER")
  if not path or path == "" then job_cache = false; return nil end
  local text = read_file(path)
  if not text then fail("worker: cannot read the job file %s (CUTE_AUTOTUNE_WORKER)", path) end
  local job, why = rep.json_decode(text)
  if type(job) ~= "table" then fail("worker: job file %s: %s", path, tostring(why)) end
  job_cache = job
  -- (line-buffered: the worker's log keeps print and error lines in order, so
  -- the parent's reason quotes the worker's last line, not an earlier print)
  io.stdout:setvbuf("line")
  return job
end

-- the reference outputs the parent wrote: host copies as bench_one compares
local function load_reference(job)
  local ref = { outputs = nil }
  if not job.ref then return ref end
  local dt = require("cute.dtype").dtypes
  local outs = {}
  for i, o in ipairs(job.ref.outputs) do
    local d = dt[o.dtype]
    if not d then fail("worker: reference output %d has an unknown dtype %s", i, tostring(o.dtype)) end
    local bytes = read_file(o.file)
    if not bytes or #bytes ~= o.n * d.size then
      fail("worker: reference output %d: %s holds %s bytes, expected %d", i, o.file, bytes and #bytes or "no", o.n * d.size)
    end
    local a = d.arr(o.n)
    ffi.copy(a, bytes, #bytes)
    outs[i] = { data = a, n = o.n, dtype = d }
  end
  ref.outputs, ref.what = outs, job.ref.what
  return ref
end

-- this process's inputs must be the parent's: the reference (the parent's
-- reference config, or the reference function) run here must give the
-- parent's outputs
local function check_inputs(t, configs, results, job, ref, I)
  local outs, args
  if job.ref.index then
    local r
    for _, x in ipairs(results) do if x.index == job.ref.index then r = x end end
    if r.status then fail("worker: the reference config %d: %s", r.index, tostring(r.reason)) end
    args = r.args
    outs = I.outputs_of(t, args)
    if t.outputs then for _, o in ipairs(outs) do o:fill(0) end end
    local run = t.run or I.default_run
    run(r.g, r.config, unpack(args, 1, table.maxn(args)))
  else
    args = I.arg_list(t, configs[1])
    t.reference(unpack(args, 1, table.maxn(args)))
    outs = I.outputs_of(t, args)
  end
  rt.synchronize()
  local got = I.host_copy(outs)
  local good, why
  if type(t.check) == "function" then good, why = t.check(got, ref.outputs, configs[job.ref.index or 1])
  else good, why = I.compare(got, ref.outputs, t.rtol or 1e-2, t.atol or 1e-2) end
  if not good then
    fail("worker of device %d: %s gives another output here than in the parent (%s): the script must make the same " ..
      "inputs in every process (e.g. seeded random data)", job.device, ref.what, tostring(why))
  end
end

local RESULT_FIELDS = { "status", "reason", "error", "ms", "min_ms", "max_ms", "samples", "outliers", "outlier_ms", "tflops" }

-- run this worker's share of the sweep (I: autotune.lua's stages); never returns
function M.work(t, configs, job, I)
  if #configs ~= job.n or M.digest(configs) ~= job.digest then
    fail("worker: this process's sweep (%d configs) is not the parent's (%d configs): the script must build the " ..
      "same configs in every process", #configs, job.n)
  end
  local results = {}
  local share = {}
  for i, idx in ipairs(job.share) do
    share[i] = configs[idx]
    results[i] = { index = idx, config = configs[idx] }
  end
  -- (the parent's reference config, to check this process's inputs, when it is not in the share)
  local ref_index = job.ref and job.ref.index
  if ref_index and not configs[ref_index] then fail("worker: the reference config %s is not in the sweep", ref_index) end
  local in_share = false
  for _, idx in ipairs(job.share) do in_share = in_share or idx == ref_index end
  if ref_index and not in_share then
    share[#share + 1] = configs[ref_index]
    results[#results + 1] = { index = ref_index, config = configs[ref_index], extra = true }
  end
  local pool = C.cute_compile_pool_new(t.workers or C.cute_compile_pool_cpus(), cf.err)
  if pool == nil then fail("%s", ffi.string(cf.err[0].msg)) end
  local keep = {}
  local quiet = rep.progress(false)
  local ok, err = pcall(function()
    local total = I.trace_all(t, share, pool, quiet, results, keep)
    while C.cute_compile_pool_wait(pool, 100) < total do end
    I.collect(pool, results)
  end)
  C.cute_compile_pool_free(pool)
  keep = nil
  if not ok then cf.rethrow(err) end
  local out = { device = job.device, device_name = nil, results = {} }
  local okd, d = pcall(rt.device)
  out.device_name = okd and d.name or nil
  local by_kernel = I.install(results)
  local ref = load_reference(job)
  if ref.outputs then check_inputs(t, configs, results, job, ref, I) end
  for _, r in ipairs(results) do
    if not r.extra then
      local cache = {}
      for _, rec in ipairs(r.recs or {}) do cache[#cache + 1] = rec.cache or "failed" end
      if not r.status then
        r.status = "compiled"
        local okc, ec = pcall(I.bench_one, t, r, ref, quiet)
        if not okc then r.status, r.reason, r.error, r.ms = "launch_error", I.first_line(ec), tostring(ec), nil end
      end
      local x = { index = r.index, cache = table.concat(cache, ",") }
      for _, f in ipairs(RESULT_FIELDS) do x[f] = r[f] end
      out.results[#out.results + 1] = x
      write_atomic(job.out, rep.json_encode(out)) -- (after each config: a worker that dies keeps what it did)
    end
  end
  I.uninstall(by_kernel)
  io.stdout:flush()
  io.stderr:flush()
  os.exit(0)
end

---------------------------------------------------------------------------
-- the parent's side
---------------------------------------------------------------------------
-- the path of this process's executable and the script's command line
local function command_line()
  pcall(ffi.cdef, "int getpid(void);")
  local p = io.popen("readlink -f /proc/" .. ffi.C.getpid() .. "/exe")
  local exe = p and p:read("*l")
  if p then p:close() end
  -- (cuteluajit's arg: the script at 0, the program and its options below
  -- it; at the prompt or with -e only, the program is at 0 and nothing below)
  local a = rawget(_G, "arg")
  local script = type(a) == "table" and a[0]
  if not exe or type(script) ~= "string" or script == "" or script == "-" or a[-1] == nil then
    fail("devices: the sweep must run from a script file (cuteluajit script.lua ...): each worker runs the script again")
  end
  local lo = -1
  while a[lo - 1] ~= nil do lo = lo - 1 end
  local parts = { q(exe) }
  for i = lo + 1, #a do parts[#parts + 1] = q(a[i]) end -- (the options, the script, its arguments)
  return table.concat(parts, " ")
end

-- the device ordinals of `devices` ("all" or a list), all of one model
function M.devices(spec)
  local n = rt.device_count()
  local list = {}
  if spec == "all" then
    for i = 0, n - 1 do list[#list + 1] = i end
  elseif type(spec) == "table" and #spec > 0 then
    local seen = {}
    for i, d in ipairs(spec) do
      if type(d) ~= "number" or d % 1 ~= 0 or d < 0 then
        fail("devices[%d] must be a device ordinal (an integer >= 0), got %s", i, tostring(d))
      end
      if d >= n then fail("devices[%d]: there is no device %d (this host has %d)", i, d, n) end
      if seen[d] then fail("devices[%d] repeats device %d", i, d) end
      seen[d] = true
      list[#list + 1] = d
    end
  else
    fail("devices must be \"all\" or a non-empty list of device ordinals, got %s",
      type(spec) == "table" and "an empty list" or tostring(spec))
  end
  if #list == 0 then fail("devices = \"all\": no device is visible") end
  command_line() -- (a script to re-run: checked before anything runs)
  local names = {}
  for i, d in ipairs(list) do names[i] = rt.device(d).name end
  for i = 2, #names do
    if names[i] ~= names[1] then
      local all = {}
      for j, d in ipairs(list) do all[j] = ("%d: %s"):format(d, names[j]) end
      fail("devices: the devices are not one model (%s): their timings would not be comparable; " ..
        "give devices = {...} of one model", table.concat(all, ", "))
    end
  end
  return list, names[1]
end

-- the physical device of ordinal d, as CUDA_VISIBLE_DEVICES names it
local function visible(d)
  local v = os.getenv("CUDA_VISIBLE_DEVICES")
  if v and v ~= "" then
    local items = {}
    for x in v:gmatch("[^,]+") do items[#items + 1] = x end
    return items[d + 1] or tostring(d)
  end
  return tostring(d)
end

-- the reference outputs, once, on this process's device: the reference
-- function's, else the first compiled config whose check run launches
local function reference(t, res, configs, dir, I)
  if t.check == false then return nil end
  local outs, what, index
  if t.reference then
    local ra = I.arg_list(t, configs[1])
    local ok, e = pcall(t.reference, unpack(ra, 1, table.maxn(ra)))
    if not ok then fail("reference: %s", tostring(e)) end
    rt.synchronize()
    outs, what = I.host_copy(I.outputs_of(t, ra)), "the reference"
  else
    local by_kernel = I.install(res.results)
    for _, r in ipairs(res.results) do
      if r.status == "compiled" then
        local o = I.outputs_of(t, r.args)
        if #o == 0 then break end
        if t.outputs then for _, x in ipairs(o) do x:fill(0) end end
        local run = t.run or I.default_run
        local ok = pcall(function() run(r.g, r.config, unpack(r.args, 1, table.maxn(r.args))); rt.synchronize() end)
        if ok then
          outs, what, index = I.host_copy(o), "the first config's (" .. rep.config_text(r.config) .. ")", r.index
          break
        end
      end
    end
    I.uninstall(by_kernel)
  end
  if not outs then return nil end
  local list = {}
  for i, h in ipairs(outs) do
    local file = ("%s/ref%d.bin"):format(dir, i)
    write_atomic(file, ffi.string(h.data, h.n * h.dtype.size))
    list[i] = { file = file, n = h.n, dtype = h.dtype.name }
  end
  return { what = what, outputs = list, index = index }
end

-- the last line of a worker's log that is not part of a Lua traceback (nor of
-- a sanitizer's report at exit, under the ASan build: everything from its
-- "====" banner or "==pid==" line on)
local function last_line(path)
  local s = read_file(path) or ""
  local last
  for l in s:gmatch("[^\n]+") do
    if l:match("^=+$") or l:match("^==%d+==") then break end
    if not l:match("^%s") and l ~= "stack traceback:" then last = l end
  end
  return last or "(no output)"
end

-- the benchmark stage over `devices`: fills res.results (status "compiled"
-- ones) from the workers; call: this sweep's ordinal in the process;
-- earlier: the plain data of the sweeps before it
function M.bench(t, res, configs, devices, prog, call, earlier, I)
  local cmd = command_line()
  local p = io.popen("d=$(mktemp -d) && chmod 700 \"$d\" && echo \"$d\"")
  local dir = p:read("*l")
  p:close()
  if not dir or dir == "" then fail("devices: cannot make a temporary directory") end
  local ref = reference(t, res, configs, dir, I)
  -- round robin over the compiled configs, in config order
  local shares = {}
  for i = 1, #devices do shares[i] = {} end
  local n = 0
  for _, r in ipairs(res.results) do
    if r.status == "compiled" then
      local w = n % #devices + 1
      n = n + 1
      shares[w][#shares[w] + 1] = r.index
    end
  end
  local digest = M.digest(configs)
  local jobs, sh = {}, {}
  for w, d in ipairs(devices) do
    if #shares[w] > 0 then
      local j = { call = call, n = #configs, digest = digest, share = shares[w], device = d, ref = ref, earlier = earlier,
        out = ("%s/out%d.json"):format(dir, w), log = ("%s/log%d.txt"):format(dir, w), rc = ("%s/rc%d"):format(dir, w) }
      write_atomic(("%s/job%d.json"):format(dir, w), rep.json_encode(j))
      jobs[w] = j
      sh[#sh + 1] = ("(CUDA_VISIBLE_DEVICES=%s CUTE_AUTOTUNE_WORKER=%s %s >%s 2>&1 </dev/null; echo $? >%s) &")
        :format(q(visible(d)), q(("%s/job%d.json"):format(dir, w)), cmd, q(j.log), q(j.rc))
    end
  end
  -- start the workers in the background; until they are all done, redraw
  -- the progress line from the results they have written
  local done_file = dir .. "/done"
  local phase = ("bench on %d GPUs"):format(#devices)
  prog:update(phase, 0, n)
  if #sh > 0 then
    local rc = os.execute("(" .. table.concat(sh, " ") .. " wait; : >" .. q(done_file) .. ") >/dev/null 2>&1 &")
    if rc ~= 0 and rc ~= true then fail("devices: could not start the workers (the shell returned %s)", tostring(rc)) end
  else
    write_atomic(done_file, "")
  end
  pcall(ffi.cdef, "int usleep(unsigned int usec);")
  local outs = {}
  local function poll()
    local count, best = 0, nil
    for w in pairs(jobs) do
      local out = rep.json_decode(read_file(jobs[w].out) or "")
      if type(out) == "table" and type(out.results) == "table" then
        outs[w] = out
        for _, x in ipairs(out.results) do
          count = count + 1
          if x.status == "ok" and (not best or x.ms < best.ms) then best = x end
        end
      end
    end
    return count, best and ("%.4f ms (%s)"):format(best.ms, rep.config_text(configs[best.index], res.param_names))
  end
  local function finished()
    local f = io.open(done_file, "rb")
    if f then f:close() end
    return f ~= nil
  end
  while not finished() do
    ffi.C.usleep(100000)
    local count, best = poll()
    prog:update(phase, count, n, best)
  end
  local _, best = poll()
  -- merge in config order
  local failed = false
  res.devices = {}
  for w, d in ipairs(devices) do
    local j = jobs[w]
    if j then
      local out = outs[w]
      local got = {}
      if out then
        for _, x in ipairs(out.results) do got[x.index] = x end
        res.devices[#res.devices + 1] = { ordinal = d, name = out.device_name }
      end
      local rc = tonumber((read_file(j.rc) or ""):match("%d+"))
      for _, idx in ipairs(j.share) do
        local r, x = res.results[idx], got[idx]
        r.device = d
        if x then
          for _, f in ipairs(RESULT_FIELDS) do r[f] = x[f] end
          r.worker_cache = x.cache
        else
          failed = true
          r.status = "worker_error"
          r.reason = ("the worker of device %d %s without this config's result (log %s): %s"):format(d,
            rc and ("ended with exit status " .. rc) or "was killed", j.log, last_line(j.log))
        end
      end
    end
  end
  prog:update(phase, n, n, best, true)
  if not failed then os.execute("rm -rf " .. q(dir)) end
end

return M
