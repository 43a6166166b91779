-- cute.autotune (docs/AUTOTUNE.md): the compile stage in the C pool without a
-- GPU (every config's PTX is the sequential compile's, with 1 or 2 workers;
-- failing configs are recorded, not raised), the benchmark stage on the
-- stand-in GPU of spec/support/autotune_stub.lua in child processes (no
-- second trace, the best config remembered on disk for the next process,
-- progress only on a terminal), argument errors, and the real benchmark #gpu.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local has = util.has
local f32 = cute.float32

-- y[i] = a polynomial of x[i] whose degree and block size come from the config
-- (cache = false: every sweep compiles, so the PTX compared and the times
-- recorded are the pool's own work, not disk-cache hits)
local function poly_kernel()
  return cute.kernel(function(X, Y, cfg)
    local i = cute.arch.block_idx() * cfg.block + cute.arch.thread_idx()
    local v = X[i]
    for _ = 1, cfg.depth do v = v * 1.5 + 0.25 end
    Y[i] = v
  end, { name = "autotune_poly", cache = false })
end
local function run(k, cfg, X, Y) k:launch{ grid = 4096 / cfg.block, block = cfg.block }(X, Y, cfg) end
local X, Y = cute.tensor_spec({ 4096 }, f32), cute.tensor_spec({ 4096 }, f32)
local GRID = { block = { 64, 128, 256 }, depth = { 4, 40, 120 } }

local function fresh_cache_dir()
  local p = io.popen("d=$(mktemp -d) && chmod 700 \"$d\" && echo \"$d\"")
  local d = p:read("*l")
  p:close()
  return d
end

describe("cute.autotune compile stage (no GPU)", function()
  it("compiles every config of a grid in the pool: the PTX of each is the sequential compile's", function()
    local k = poly_kernel()
    local r = cute.autotune{ kernel = k, run = run, configs = GRID, args = { X, Y }, workers = 2, compile_only = true,
      progress = false }
    assert.equal(9, #r.results)
    assert.equal(9, k.traces) -- one trace per config, on this thread
    local seq = poly_kernel()
    for _, x in ipairs(r.results) do
      assert.equal("compiled", x.status, x.reason)
      assert.equal(1, #x.kernels)
      local want = cute.cache.sha256(seq:ptx(X, Y, x.config))
      assert.equal(want, x.kernels[1].ptx_sha256, "config " .. x.index)
      assert.is_true(x.compile_ms > 0 and x.trace_ms > 0)
    end
    -- a grid's order: names sorted, the last varying fastest
    assert.same({ block = 64, depth = 4 }, r.results[1].config)
    assert.same({ block = 64, depth = 40 }, r.results[2].config)
    assert.same({ block = 256, depth = 120 }, r.results[9].config)
  end)

  it("traces a call repeated within one config once, and every distinct call of it", function()
    local k = poly_kernel()
    local r = cute.autotune{ kernel = k, configs = { { block = 64, depth = 3 }, { block = 128, depth = 3 } },
      run = function(kk, cfg, A, B)
        run(kk, cfg, A, B); run(kk, cfg, A, B)            -- the same call twice: one trace
        run(kk, { block = cfg.block, depth = 5 }, A, B)   -- another specialisation: its own
      end, args = { X, Y }, compile_only = true, progress = false }
    assert.equal(4, k.traces)
    for _, x in ipairs(r.results) do
      assert.equal("compiled", x.status, x.reason)
      assert.equal(2, #x.kernels)
      assert.are_not.equal(x.kernels[1].ptx_sha256, x.kernels[2].ptx_sha256)
    end
  end)

  it("gives the same PTX with 1 and 2 workers, and records both wall times", function()
    local function sweep(w)
      return cute.autotune{ kernel = poly_kernel(), run = run, configs = GRID, args = { X, Y }, workers = w,
        compile_only = true, progress = false }
    end
    local r1, r2 = sweep(1), sweep(2)
    for i = 1, #r1.results do
      assert.equal(r1.results[i].kernels[1].ptx_sha256, r2.results[i].kernels[1].ptx_sha256)
    end
    assert.equal(1, r1.workers)
    assert.equal(2, r2.workers)
    assert.is_true(r1.compile_wall_ms > 0 and r2.compile_wall_ms > 0)
    -- (a ratio, not asserted: the build machine is shared; tests/compile_pool_c.c prints the pool's own)
    print(("\nautotune compile stage, 9 configs: 1 worker %.0f ms, 2 workers %.0f ms (%.2fx)")
      :format(r1.compile_wall_ms, r2.compile_wall_ms, r1.compile_wall_ms / r2.compile_wall_ms))
  end)

  it("records configs that fail to trace, to compile or that exceed the device's resources, and goes on", function()
    local function make(cfg)
      if cfg.variant == "raises" then error("make: variant 'raises' is not buildable", 0) end
      local opts = { name = "autotune_" .. cfg.variant }
      if cfg.variant == "link" then opts.link = { "/nonexistent/autotune_lib.bc" } end
      if cfg.variant == "smem" then opts.arch = "sm_86" end -- (99 KiB a block)
      local k = cute.kernel(function(A)
        local i = cute.arch.thread_idx()
        if cfg.variant == "smem" then
          local s = cute.make_dynamic_shared_tensor(cute.make_layout(37500), f32) -- 150,000 bytes
          s[i] = A[i]
          cute.arch.sync_threads()
          A[i] = s[i + 1]
        else
          A[i] = A[i] + 1
        end
      end, opts)
      return { launch = function(A) k:launch{ grid = 1, block = 32 }(A) end }
    end
    local r = cute.autotune{ kernel = make, configs = { { variant = "fine" }, { variant = "raises" }, { variant = "link" },
      { variant = "smem" } }, args = { X }, compile_only = true, progress = false }
    local by = {}
    for _, x in ipairs(r.results) do by[x.config.variant] = x end
    assert.equal("compiled", by.fine.status)
    assert.equal("trace_error", by.raises.status)
    assert.equal("make: variant 'raises' is not buildable", by.raises.reason)
    assert.equal("compile_error", by.link.status)
    assert.is_true(has(by.link.reason, "autotune_link (link)") and has(by.link.reason, "/nonexistent/autotune_lib.bc"),
      by.link.reason)
    -- the limit is the device's when there is one (an H100 allows 227 KiB a block, so
    -- the sm_86-compiled kernel fits there), else the arch's (sm_86: 99 KiB)
    local okd, dev = pcall(cute.device)
    if cute.available() and okd and dev.smem_per_block_optin >= 150000 then
      assert.equal("compiled", by.smem.status, by.smem.reason)
    else
      assert.equal("resources", by.smem.status, by.smem.reason)
      assert.is_true(has(by.smem.reason, "150000 bytes of shared memory, the device allows 101376"), by.smem.reason)
    end
    -- the table, CSV and JSON say the same
    local t = r:table()
    assert.is_true(has(t, "trace_error") and has(t, "compile_error") and has(t, by.smem.status), t)
    local csv = os.tmpname()
    r:csv(csv)
    local text = util.read_file(csv)
    os.remove(csv)
    assert.is_true(has(text, "variant,status,") and has(text, "\nsmem," .. by.smem.status .. ","), text)
    local js = os.tmpname()
    r:json(js)
    local data = require("cute.autotune_report").json_decode(util.read_file(js))
    os.remove(js)
    assert.equal(4, #data.results)
    assert.equal("compile_error", data.results[3].status)
    assert.equal("link", data.results[3].config.variant)
  end)

  it("names the operation and the offending value in argument errors", function()
    local k = poly_kernel()
    local function err(t) return util.err_of(function() cute.autotune(t) end) end
    assert.is_true(has(err({ kernel = k, run = run, configs = GRID, args = { X, Y }, warmup = 5 }),
      "cute.autotune: unknown field 'warmup'"))
    assert.is_true(has(err({ kernel = 3, configs = GRID }), "cute.autotune: kernel must be a cute.kernel"))
    assert.is_true(has(err({ kernel = k, configs = GRID }), "cute.autotune: kernel is a cute.kernel: give run ="))
    assert.is_true(has(err({ kernel = k, run = run, configs = {} }), "cute.autotune: configs is empty"))
    assert.is_true(has(err({ kernel = k, run = run, configs = { block = 64 } }),
      "grid parameter 'block' must be a non-empty list of values, got 64"))
    assert.is_true(has(err({ kernel = k, run = run, configs = { { block = 64 }, { block = 64 } } }),
      "configs[2] repeats configs[1] (block=64)"))
    assert.is_true(has(err({ kernel = k, run = run, configs = GRID, reps = 0 }), "reps must be an integer number >= 1, got 0"))
    assert.is_true(has(err({ kernel = k, run = run, configs = GRID, workers = 1.5 }), "workers must be an integer"))
    -- (a builder's mistake is the config's reason, not an error of the sweep)
    local r = cute.autotune{ kernel = function() return poly_kernel() end, configs = GRID, args = { X, Y },
      compile_only = true, progress = false }
    assert.equal("trace_error", r.results[1].status)
    assert.is_true(has(r.results[1].reason, "cute.autotune: kernel(config) returned a cute.kernel: give run ="),
      r.results[1].reason)
    local e = err({ kernel = k, run = run, configs = GRID, key = 7 })
    assert.is_true(has(e, "key must be a string or a function"), e)
    assert.is_true(has(e, "spec/autotune_spec.lua:"), e) -- at the caller's line
  end)
end)

describe("cute.autotune benchmark stage on a stand-in GPU (child processes)", function()
  local exe = util.self_exe()
  local function child(dir, args, redirect)
    local cmd = ("CUTE_CACHE_DIR=%s %s spec/data/autotune_child.lua %s %s"):format(dir, exe, args, redirect or "2>&1")
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    return out
  end
  local function facts(out)
    local line = (out:match("RESULT ([^\n]*)") or "") .. " " .. (out:match("RESULT2 ([^\n]*)") or "")
    assert.is_truthy(line:find("from_store", 1, true), out)
    local t = {}
    for k, v in line:gmatch("([%w_]+)=(%S+)") do t[k] = v end
    return t
  end

  it("loads each config from its pool compile (no second trace), times it, and a later process starts with the best",
    function()
      local dir = fresh_cache_dir()
      local a = facts(child(dir, "off"))
      assert.equal("false", a.from_store)
      assert.equal("block=128,depth=2", a.best) -- the stand-in's fastest block size
      assert.equal("8", a.ok)
      assert.equal("8", a.traces)   -- one trace per config: the benchmark did not trace again
      assert.equal("8", a.compiles)
      assert.equal("8", a.loads)
      local b = facts(child(dir, "off"))
      assert.equal("true", b.from_store)
      assert.equal("block=128,depth=2", b.best)
      assert.equal("0", b.traces)
      assert.equal("0", b.launches)
      assert.equal("block=128,depth=2", b.api_best) -- cute.autotune.best(key, configs)
      local c = facts(child(dir, "off force"))
      assert.equal("false", c.from_store)
      assert.equal("8", c.traces)
      local d = facts(child(dir, "off forget"))         -- from the note, then forget it
      assert.equal("true", d.from_store)
      assert.equal("true", d.forgot)
      local e = facts(child(dir, "off"))
      assert.equal("false", e.from_store)                 -- swept again
      assert.equal("8", e.traces)
      -- the note is the user's own file in the cache directory
      local p = io.popen("stat -c '%a %n' " .. dir .. "/autotune-*.note")
      local st = p:read("*a")
      p:close()
      assert.is_true(has(st, "600 "), st)
      os.execute("rm -rf " .. dir)
    end)

  it("checks each config's output against the first's: a wrong one is rejected and never the best", function()
    local dir = fresh_cache_dir()
    local out = child(dir, "off check")
    local st, fills, reason = out:match("RESULT check=(%S+) fills=(%d+) reason=(%S+)")
    assert.equal("64:ok,64:ok,128:ok,128:ok,256:wrong,256:wrong,512:ok,512:ok", st, out)
    assert.equal("8", fills) -- the output zeroed before each config's check run
    assert.is_true(has(reason, "output_differs_from_the_first_config's_(block=64_depth=2)") and
      has(reason, "element_0:_4,_the_reference_has_2"), reason)
    local f = facts(out)
    assert.equal("6", f.ok)
    assert.equal("block=128,depth=2", f.best)
    os.execute("rm -rf " .. dir)
  end)

  it("shows progress on a terminal only", function()
    local dir = fresh_cache_dir()
    local out = child(dir, "auto force", "2>&1")
    assert.is_false(has(out, "cute.autotune compile"), out)
    assert.is_true(has(out, "RESULT"), out)
    local forced = child(dir, "on force", "2>&1")
    assert.is_true(has(forced, "cute.autotune compile 8/8"), forced)
    assert.is_true(has(forced, "cute.autotune bench 8/8") and has(forced, "best "), forced)
    if os.execute("command -v script >/dev/null 2>&1") == 0 then
      local p = io.popen(("CUTE_CACHE_DIR=%s script -qec '%s spec/data/autotune_child.lua auto force' /dev/null")
        :format(dir, exe))
      local tty = p:read("*a")
      p:close()
      assert.is_true(has(tty, "\rcute.autotune compile") and has(tty, "ETA"), tty)
    end
    os.execute("rm -rf " .. dir)
  end)
end)

describe("cute.autotune on the GPU", function()
  util.device_it("sweeps block sizes: times each config with events, rejects a wrong one, keeps the best",
    "cute.autotune times compiled cubins with CUDA events (on the CPU target it compiles only)", function()
      local n = 2 ^ 20
      local Xd = cute.from_host(util.rand_floats(n), f32, { n })
      local Yd = cute.zeros({ n }, f32)
      local k = cute.kernel(function(A, B, cfg)
        local i = cute.arch.block_idx() * cfg.block + cute.arch.thread_idx()
        B[i] = A[i] * (cfg.wrong and 3 or 2)
      end, { name = "autotune_gpu_scale" })
      local r = cute.autotune{ kernel = k,
        run = function(kk, cfg, A, B) kk:launch{ grid = n / cfg.block, block = cfg.block }(A, B, cfg) end,
        configs = { { block = 128 }, { block = 256 }, { block = 512, wrong = true }, { block = 1024 }, { block = 2048 } },
        args = { Xd, Yd }, outputs = { 2 }, reps = 10, warmup_ms = 5, progress = false, flops = n }
      local by = {}
      for _, x in ipairs(r.results) do by[x.config.block] = x end
      assert.equal("ok", by[128].status, by[128].reason)
      assert.equal("ok", by[256].status, by[256].reason)
      assert.equal("wrong", by[512].status)
      assert.is_true(has(by[512].reason, "output differs from the first config's"), by[512].reason)
      assert.equal("ok", by[1024].status, by[1024].reason)
      assert.is_true(by[2048].status ~= "ok" and has(by[2048].reason, "2048"), by[2048].reason) -- 2048 threads in a block
      for _, b in ipairs({ 128, 256, 1024 }) do
        local x = by[b]
        assert.is_true(x.ms > 0 and x.min_ms <= x.ms and x.ms <= x.max_ms and #x.samples == 10, b)
        assert.is_true(x.tflops > 0)
      end
      assert.is_truthy(r.best)
      assert.is_true(r.best.block ~= 512 and r.best.block ~= 2048)
      assert.equal(r.best_ms, by[r.best.block].ms)
    end)
end)
