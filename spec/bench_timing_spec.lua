-- bench/timing.lua (the GPU benchmarks' timer) on a simulated GPU: a fake
-- `cute` whose events read a clock that the timed functions advance.  Checks
-- the method the benchmark figures rely on without a GPU: first calls and
-- warm-up before any sample, an L2 flush before every sample (outside the
-- timed interval), alternating order, medians / min / max and per-round ratios.
describe("bench/timing.lua", function()
  local clock, log, timing

  local function fake_cute()
    local cute = {}
    function cute.kernel(fn, opts)
      return { launch = function() return function() clock = clock + 0.25; log[#log + 1] = "flush" end end }
    end
    function cute.device() return { l2_size = 50 * 2 ^ 20 } end
    function cute.zeros() return {} end
    function cute.Int32(x) return x end
    function cute.Float32(x) return x end
    function cute.synchronize() end
    function cute.now_us() return clock * 1000 end
    function cute.event()
      local e = {}
      function e.record(self) self.t = clock end
      function e.synchronize() end
      return e
    end
    function cute.elapsed_ms(a, b) return b.t - a.t end
    return cute
  end

  before_each(function()
    clock, log = 0, {}
    local saved = package.loaded.cute
    package.loaded.cute = fake_cute()
    local ok, m = pcall(dofile, "bench/timing.lua")
    package.loaded.cute = saved
    assert(ok, m)
    timing = m
  end)

  -- a timed function: advances the clock by ms(k) on its k-th call
  local function fn(name, ms)
    local k = 0
    return function()
      k = k + 1
      clock = clock + ms(k)
      log[#log + 1] = name
    end
  end

  it("medians, min and max over the rounds; every sample follows a flush", function()
    local tm = timing.new({ warm_ms = 10, min_rounds = 9, min_ms = 0 })
    log = {}
    -- a takes 2 ms except a 9 ms outlier on its 12th call (a timed one); b 1 ms + k/1000
    local a = fn("a", function(k) return k == 12 and 9 or 2 end)
    local b = fn("b", function(k) return 1 + k / 1000 end)
    local r = tm:compare({ { "a", a }, { "b", b } })
    assert.are.equal(2, #r)
    assert.are.equal(9, r[1].ms.n)
    assert.are.equal(2, r[1].ms.median)
    assert.are.equal(2, r[1].ms.min)
    assert.are.equal(9, r[1].ms.max)
    local q = timing.ratio(r, 2, 1) -- b is about twice as fast
    assert.is_true(q.median > 1.9 and q.median < 2.0, tostring(q.median))
    -- the timed part: 9 rounds x 2 samples, each right after a flush
    local timed = {}
    for i = 2, #log do
      if log[i - 1] == "flush" and log[i] ~= "flush" then timed[#timed + 1] = log[i] end
    end
    assert.are.equal(18, #timed)
    -- alternating order: a b, b a, a b, ...
    assert.are.same({ "a", "b", "b", "a", "a", "b" }, { unpack(timed, 1, 6) })
    -- a flush is never inside a timed interval: times are exactly the fn's
    for _, t in ipairs(r[2].times) do assert.is_true(t > 1 and t < 1.2, tostring(t)) end
  end)

  it("warms each function for warm_ms of its own time after a first call", function()
    local tm = timing.new({ warm_ms = 50, min_rounds = 3, min_ms = 0 })
    log = {}
    local calls = { a = 0, b = 0 }
    local a = fn("a", function(k) calls.a = k; return 5 end)
    local b = fn("b", function(k) calls.b = k; return 0.5 end)
    tm:compare({ { "a", a }, { "b", b } })
    -- first call + >= 50 ms of warm-up + 3 samples
    assert.is_true(calls.a >= 1 + 10 + 3, tostring(calls.a))
    assert.is_true(calls.b >= 1 + 100 + 3, tostring(calls.b))
  end)

  it("runs until both min_rounds and min_ms are reached", function()
    local tm = timing.new({ warm_ms = 0, min_rounds = 4, min_ms = 100 })
    local r = tm:time("slow", fn("s", function() return 10 end))
    assert.are.equal(10, r.ms.n)
    r = tm:time("fast", fn("f", function() return 0.5 end), { min_ms = 0 })
    assert.are.equal(4, r.ms.n)
  end)

  it("prints figures with their spread", function()
    local tm = timing.new({ warm_ms = 0, min_rounds = 5, min_ms = 0 })
    local r = tm:compare({ { "x", fn("x", function(k) return k end) }, { "y", fn("y", function() return 2 end) } })
    local line = timing.line(r[1], 100, "GB/s")
    assert.matches("median", line)
    assert.matches("min", line)
    assert.matches("max", line)
    assert.matches("GB/s", line)
    assert.matches("ratio", timing.ratio_line(r, 1, 2))
  end)

  it("a GEMM's TFLOP/s: 2 n^3 over the median time", function()
    local tm = timing.new({ warm_ms = 0, min_rounds = 3, min_ms = 0 })
    -- 2 ms per call: 2 * 1000^3 flop / 2 ms = 1 TFLOP/s
    assert.are.equal(1, tm:tflops("g", 1000, fn("g", function() return 2 end)))
  end)

  it("the GEMM table's rows: ratio and baseline, '-' for a baseline not measured", function()
    local with = timing.row_text("bf16 4096^3", 600, "cuBLAS", 400, ">= 1.0x")
    assert.truthy(with:find("600.0", 1, true) and with:find("400.0", 1, true) and with:find("1.500x", 1, true))
    assert.truthy(with:find(">= 1.0x$"))
    local without = timing.row_text("bf16 4096^3", 600, "cuBLAS", nil)
    assert.truthy(without:find("cuBLAS%s+%-%s+%-%s*$"), without)
    assert.are.equal(#with:match("^.-600%.0"), #without:match("^.-600%.0")) -- aligned columns
  end)

  -- a new temporary file holding text: its path
  local function temp_file(text)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    return path
  end

  it("the GEMM benches' command line: baselines file and sizes, with defaults; a bad size is an error", function()
    local path = temp_file('{"bf16_4096": 512.5, "note": "x", "int8_8192": 1e3}')
    local base, sizes = timing.gemm_args({ [0] = "b.lua", path, "1024", "2048" })
    assert.are.same({ bf16_4096 = 512.5, int8_8192 = 1000 }, base)
    assert.are.same({ 1024, 2048 }, sizes)
    base, sizes = timing.gemm_args({ [0] = "b.lua" })
    assert.are.same({}, base)
    assert.are.same({ 4096, 8192 }, sizes)
    local ok, err = pcall(timing.gemm_args, { path, "4k" })
    assert.is_false(ok)
    assert.are.equal('bench: size "4k" is not a number', err)
    -- baselines(): the file when named (the command is not run), else the command's output
    local nums, text = timing.baselines(path, "echo '{\"x\": 1}'")
    assert.are.same({ bf16_4096 = 512.5, int8_8192 = 1000 }, nums)
    assert.truthy(text:find("note", 1, true))
    assert.are.same({ x = 1 }, (timing.baselines(nil, "echo '{\"x\": 1}'")))
    assert.are.same({}, (timing.baselines(nil, "exit 3")))
    assert.are.same({}, (timing.baselines(path .. ".missing", "echo '{\"x\": 1}'")))
    os.remove(path)
  end)

  it("child(): runs this script again with --child, its environment and arguments; key=value words back", function()
    local path = temp_file('if arg[1] == "--child" then print(("RESULT n=%s word=%s_%s"):format(os.getenv("CHILD_N"), ' ..
      'arg[2], arg[3])) end')
    local saved = _G.arg
    _G.arg = { [0] = path }
    local ok, r = pcall(timing.child, "CHILD_N=42", "a b", "n")
    local ok2, err = pcall(timing.child, "", "a b", "missing")
    _G.arg = saved
    os.remove(path)
    assert(ok, r)
    assert.are.same({ n = 42, word = "a_b" }, r)
    assert.is_false(ok2)
    assert.truthy(err:find("child failed:\nRESULT n=nil word=a_b", 1, true), err)
  end)
end)
