-- cute.autotune{devices = ...} (docs/AUTOTUNE.md, "Several GPUs"): the
-- benchmark stage spread over one worker process per GPU.  Without a GPU the
-- child processes of spec/data/autotune_child.lua run on the stand-in GPUs of
-- spec/support/autotune_stub.lua (CUTE_STUB_DEVICES of them; every launch of
-- every process logged to CUTE_STUB_LOG); with GPUs, #gpu runs
-- spec/data/autotune_gpu_devices.lua over whatever devices there are.
local util = dofile("spec/support/util.lua")
local has = util.has

local exe = util.self_exe()

local function fresh_dir()
  local p = io.popen("d=$(mktemp -d) && chmod 700 \"$d\" && echo \"$d\"")
  local d = p:read("*l")
  p:close()
  return d
end

-- run the child with env (a table) and args; its output and the parsed facts
local function child(dir, env, args)
  local parts = { "CUTE_CACHE_DIR=" .. dir, "CUTE_STUB_LOG=" .. dir .. "/launches" }
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. v end
  local p = io.popen(("%s %s spec/data/autotune_child.lua %s 2>&1"):format(table.concat(parts, " "), exe, args))
  local out = p:read("*a")
  p:close()
  local per = {}
  for idx, st, d, ms, samples, cache in (out:match("RESULT3 ([^\n]*)") or ""):gmatch("(%d+):([%w_]+):(%w+):([%w.]+):(%S-):(%w+)") do
    per[tonumber(idx)] = { status = st, device = d, ms = ms, samples = samples, cache = cache }
  end
  local f = {}
  for k, v in ((out:match("RESULT2 ([^\n]*)") or "") .. " " .. (out:match("RESULT check=([^\n]*)") and
    ("check=" .. out:match("RESULT check=([^\n]*)")) or "")):gmatch("([%w_]+)=(%S+)") do f[k] = v end
  -- the launches of each process: log[who][block] = count
  local log = {}
  local fh = io.open(dir .. "/launches")
  if fh then
    for line in fh:lines() do
      local who, d, block = line:match("(%w+) (%S+) (%d+)")
      local key = who == "worker" and ("worker " .. d) or "parent"
      log[key] = log[key] or {}
      log[key][tonumber(block)] = (log[key][tonumber(block)] or 0) + 1
    end
    fh:close()
    os.remove(dir .. "/launches")
  end
  return out, per, f, log
end

-- remove the directory of a failed run's worker logs (kept for the user; named in the reason)
local function drop_logs(out)
  local d = out:match("%(log (/[^)]-)/log%d+%.txt%)")
  if d then os.execute("rm -rf '" .. d .. "'") end
  return d
end

-- block size of config i of the child's grid {block = {64, 128, 256, 512}, depth = {2, 3}}
local function block_of(i) return ({ 64, 128, 256, 512 })[math.floor((i - 1) / 2) + 1] end

describe("cute.autotune over several stand-in GPUs (child processes)", function()
  for _, ndev in ipairs({ 2, 4 }) do
    it(("gives a 1-device run's results on %d devices, each config benchmarked once, its kernels from the disk cache")
      :format(ndev), function()
      local dir = fresh_dir()
      local out1, one, f1, log1 = child(dir, {}, "off check")
      local outn, many, fn, logn = child(dir, { CUTE_STUB_DEVICES = ndev, CUTE_TEST_DEVICES = "all" }, "off check")
      assert.equal("64:ok,64:ok,128:ok,128:ok,256:wrong,256:wrong,512:ok,512:ok", f1.check, out1)
      assert.equal(f1.check, fn.check, outn) -- (the same reason too: RESULT check= carries config 5's)
      assert.equal(f1.best, fn.best)
      assert.equal(f1.best_ms, fn.best_ms)
      assert.equal(f1.ok, fn.ok)
      -- the table and CSV have a device column with several devices only
      assert.equal("block,depth,status,trace_ms,compile_ms,ms,min_ms,max_ms,outliers,tflops,regs,smem,spills,reason",
        out1:match("RESULT4 csv_head=([^\n]*)"))
      assert.equal("block,depth,status,device,trace_ms,compile_ms,ms,min_ms,max_ms,outliers,tflops,regs,smem,spills,reason",
        outn:match("RESULT4 csv_head=([^\n]*)"))
      for i = 1, 8 do
        local a, b = one[i], many[i]
        assert.is_truthy(a and b, outn)
        assert.equal("nil", a.device)
        assert.equal(tostring((i - 1) % ndev), b.device, "config " .. i) -- round robin
        assert.equal(a.status, b.status, "config " .. i)
        assert.equal(a.ms, b.ms, "config " .. i)
        assert.equal(a.samples, b.samples, "config " .. i)
        assert.equal("hit", b.cache, "config " .. i) -- the worker did not compile again
      end
      -- the parent traced and compiled all 8, and launched once: the reference
      assert.equal("8", fn.traces)
      assert.equal("1", fn.launches)
      assert.equal(1, logn.parent[64])
      -- every launch of the 1-device run happened once, in the worker of its
      -- config; each worker also ran the reference config (block 64) once to
      -- check that its inputs are the parent's
      local per_config = {} -- launches of one config in the 1-device run (two configs per block size)
      for b, c in pairs(log1.parent) do per_config[b] = c / 2 end
      for d = 0, ndev - 1 do
        local want = { [64] = 1 }
        for i = 1, 8 do
          if (i - 1) % ndev == d then want[block_of(i)] = (want[block_of(i)] or 0) + per_config[block_of(i)] end
        end
        assert.same(want, logn["worker " .. d], "device " .. d)
      end
      os.execute("rm -rf " .. dir)
    end)
  end

  it("refuses a worker whose inputs are not the parent's (its reference output differs)", function()
    local dir = fresh_dir()
    local out, per = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "all", CUTE_TEST_SKEW = 1 }, "off check")
    for i = 1, 8 do assert.equal("worker_error", per[i].status, out) end
    local reason = out:match("WORKER_ERROR 2 ([^\n]*)")
    -- (the status is the script's error, 1; not asserted: under LeakSanitizer an exit may report another)
    assert.is_truthy(reason:find("the worker of device 1 ended with exit status %d+ without this config's result"), out)
    assert.is_true(
      has(reason, "cute.autotune: worker of device 1: the first config's (block=64 depth=2) gives another output here " ..
        "than in the parent (output 1 element 0: 3, the reference has 2"), out)
    assert.is_truthy(drop_logs(out), out)
    os.execute("rm -rf " .. dir)
  end)

  it("quotes the worker's error, not a line the script printed before it (the log keeps their order)", function()
    local dir = fresh_dir()
    -- (CUTE_TEST_TWICE: the worker prints RESULT0 to stdout, then fails on its inputs)
    local out, per = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "all", CUTE_TEST_SKEW = 1,
      CUTE_TEST_TWICE = 1 }, "off check")
    assert.equal("worker_error", per[2].status, out)
    local reason = out:match("WORKER_ERROR 2 ([^\n]*)")
    assert.is_true(has(reason, "gives another output here than in the parent"), out)
    assert.is_falsy(reason:find("RESULT0", 1, true), out)
    assert.is_truthy(drop_logs(out), out)
    os.execute("rm -rf " .. dir)
  end)

  it("reports a worker that dies: its configs without results are marked, the others kept", function()
    local dir = fresh_dir()
    local out, per, f = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "all", CUTE_STUB_DIE = 1 }, "off force")
    for i = 1, 7 do assert.equal("ok", per[i].status, out) end -- (device 1 ran 2, 4 and 6 before dying at 8)
    assert.equal("worker_error", per[8].status, out)
    assert.equal("1", per[8].device)
    local reason = out:match("WORKER_ERROR 8 ([^\n]*)")
    assert.is_truthy(reason:find("^the worker of device 1 ended with exit status %d+ without this config's result %(log "),
      out) -- (3 from the stub; not asserted: under LeakSanitizer an exit may report another)
    assert.is_true(has(reason, "): stub: the worker of device 1 dies"), out)
    assert.equal("block=128,depth=2", f.best)
    assert.equal("7", f.ok)
    assert.is_truthy(drop_logs(out), out)
    os.execute("rm -rf " .. dir)
  end)

  it("takes an earlier sweep of the script from the parent instead of running it in each worker", function()
    local dir = fresh_dir()
    local out, per, _, log = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "0,1", CUTE_TEST_TWICE = 1 },
      "off force")
    assert.is_true(has(out, "RESULT0 first_best=block=128,depth=4 worker=nil"), out)
    for i = 1, 8 do assert.equal("ok", per[i].status, out) end
    -- the first sweep's launches are the parent's alone (64: 8 of them, 128: 9)
    assert.same({ [64] = 8, [128] = 9 }, log.parent)
    assert.same({ [64] = 8, [128] = 9, [256] = 7, [512] = 7 }, log["worker 0"])
    assert.same(log["worker 0"], log["worker 1"])
    os.execute("rm -rf " .. dir)
  end)

  it("refuses devices of different models, devices that do not exist, and a bad devices value", function()
    local dir = fresh_dir()
    local out = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "all", CUTE_STUB_MIXED = 1 }, "off force")
    assert.is_true(has(out, "autotune_child.lua:") and has(out, "cute.autotune: devices: the devices are not one model " ..
      "(0: stub GPU, 1: other stub GPU): their timings would not be comparable"), out)
    out = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "0,2" }, "off force")
    assert.is_true(has(out, "cute.autotune: devices[2]: there is no device 2 (this host has 2)"), out)
    out = child(dir, { CUTE_STUB_DEVICES = 2, CUTE_TEST_DEVICES = "1,1" }, "off force")
    assert.is_true(has(out, "cute.autotune: devices[2] repeats device 1"), out)
    -- a sweep that is not in a script file (the prompt, -e) has nothing for the workers to run
    local p = io.popen(("CUTE_CACHE_DIR=%s CUTE_STUB_DEVICES=2 CUTE_TEST_DEVICES=all %s -e " ..
      "'dofile(\"spec/data/autotune_child.lua\")' 2>&1"):format(dir, exe))
    out = p:read("*a")
    p:close()
    assert.is_true(has(out, "cute.autotune: devices: the sweep must run from a script file (cuteluajit script.lua ...)"), out)
    -- (no launch anywhere: the devices are checked before anything runs)
    local fh = io.open(dir .. "/launches")
    assert.is_nil(fh)
    os.execute("rm -rf " .. dir)
  end)

  it("names the offending value of devices", function()
    local cute = require("cute")
    local stub = dofile("spec/support/autotune_stub.lua")
    stub.install()
    local k = cute.kernel(function(A) A[cute.arch.thread_idx()] = 1 end, { name = "autotune_devices_arg" })
    local function err(devices)
      local ok, e = pcall(cute.autotune, { kernel = k, configs = { { block = 32 } }, args = {},
        run = function() end, devices = devices, progress = false })
      assert.is_false(ok)
      return tostring(e)
    end
    local e1, e2, e3 = err("some"), err({}), err({ 0.5 })
    stub.remove()
    assert.is_true(has(e1, "cute.autotune: devices must be \"all\" or a non-empty list of device ordinals, got some"), e1)
    assert.is_true(has(e2, "cute.autotune: devices must be \"all\" or a non-empty list of device ordinals, got an empty list"), e2)
    assert.is_true(has(e3, "cute.autotune: devices[1] must be a device ordinal (an integer >= 0), got 0.5"), e3)
  end)
end)

describe("cute.autotune over the GPUs of this host", function()
  util.device_it("benchmarks on every device: the statuses of a 1-device sweep, each kernel from the disk cache",
    "device worker processes, cubins from the disk cache", function()
    local p = io.popen(exe .. " spec/data/autotune_gpu_devices.lua 2>&1")
    local out = p:read("*a")
    p:close()
    assert.is_true(has(out, "AUTOTUNE_DEVICES OK"), out)
  end)
end)
