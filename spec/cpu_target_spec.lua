-- The CPU execution target (docs/CPU_TARGET.md): kernels' IR run by the
-- interpreter of src/cpu_exec.c with CUDA's semantics, on host memory behind
-- the tensor API.  Runs without a GPU (CI): every result is checked against
-- a plain Lua reference (integers bit-exact, floats within a tolerance).
local cute = require("cute")
local ffi = require("ffi")
local cpu = require("cute.target_cpu")
local dt = require("cute.dtype")
local util = dofile("spec/support/util.lua")
local THIS = "spec/cpu_target_spec.lua"
local f32, i32 = cute.float32, cute.int32

-- an example's kernel (CUTE_EXAMPLE_LIB: the example returns it unrun);
-- args: the command line it is loaded with (some examples build their sizes in)
local function example(name, args)
  local saved = _G.arg
  _G.arg = { [0] = "examples/" .. name .. ".lua" }
  for i, a in ipairs(args or {}) do _G.arg[i] = tostring(a) end
  _G.CUTE_EXAMPLE_LIB = true
  local ok, m = pcall(dofile, "examples/" .. name .. ".lua")
  _G.CUTE_EXAMPLE_LIB = nil
  _G.arg = saved
  assert(ok, m)
  return m.kernel
end

-- deterministic pseudo-random floats in [-1, 1)
local function rand_floats(n, seed)
  local x, t = seed or 12345, {}
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    t[i] = x / 1073741824 - 1
  end
  return t
end

local function max_rel(got, want, n)
  local num, den = 0, 0
  for i = 1, n do
    local d = got[i - 1] - want[i]
    if got[i - 1] ~= got[i - 1] then return math.huge end
    num, den = num + d * d, den + want[i] * want[i]
  end
  return math.sqrt(num / math.max(den, 1e-30))
end

describe("the CPU target", function()
  util.use_cpu_target()

  describe("runs the SIMT examples' kernels", function()
    it("vector_add (16-byte vector loads and stores, a grid-stride loop)", function()
      local k, n = example("vector_add"), 4096 + 64
      local ha, hb = rand_floats(n, 1), rand_floats(n, 2)
      local A, B = cute.from_host(ha, f32, { n }), cute.from_host(hb, f32, { n })
      local C = cute.empty({ n }, f32)
      C:fill(0 / 0)
      k:launch{ grid = 3, block = 128 }(A, B, C)
      local hc = C:to_host()
      for i = 1, n do
        local want = ffi.new("float[1]", ffi.new("float[1]", ha[i])[0] + ffi.new("float[1]", hb[i])[0])[0]
        assert.are.equal(want, hc[i - 1])
      end
    end)

    it("saxpy (a run-time f32 scalar, an early bound check)", function()
      local k, n = example("saxpy"), 1000
      local hx, hy = rand_floats(n, 3), rand_floats(n, 4)
      local X, Y = cute.from_host(hx, f32, { n }), cute.from_host(hy, f32, { n })
      k:launch{ grid = 4, block = 256 }(cute.Float32(1.5), X, Y)
      assert.is_true(max_rel(Y:to_host(), (function()
        local w = {}
        for i = 1, n do w[i] = 1.5 * hx[i] + hy[i] end
        return w
      end)(), n) < 1e-6)
    end)

    it("reduce_sum (warp shuffles, shared memory, sync_threads, an atomic add from many blocks)", function()
      local k, n = example("reduce_sum"), 65536
      local hx = rand_floats(n, 5)
      local X, Out = cute.from_host(hx, f32, { n }), cute.zeros({ 1 }, f32)
      k:launch{ grid = 6, block = 512 }(X, Out)
      local ref, abs = 0, 0
      for i = 1, n do ref, abs = ref + hx[i], abs + math.abs(hx[i]) end
      assert.is_true(math.abs(Out:to_host()[0] - ref) / abs < 1e-6)
    end)

    it("transpose (a padded shared tile, 2-D blocks and grids) bit-exact", function()
      local k, M, N = example("transpose"), 64, 96
      local ha = rand_floats(M * N, 6)
      local A, B = cute.from_host(ha, f32, { M, N }), cute.empty({ N, M }, f32)
      k:launch{ grid = { N / 32, M / 32 }, block = { 32, 8 } }(A, B)
      local hb = B:to_host()
      for r = 0, N - 1 do
        for c = 0, M - 1 do assert.are.equal(ffi.new("float[1]", ha[c * N + r + 1])[0], hb[r * M + c]) end
      end
    end)

    it("softmax (exp, max and sum reductions over a row per block)", function()
      local R, N = 3, 4096
      local k = example("softmax", { R, N })
      local hx = rand_floats(R * N, 7)
      for i = 1, #hx do hx[i] = hx[i] * 4 end
      local X, Y = cute.from_host(hx, f32, { R, N }), cute.empty({ R, N }, f32)
      Y:fill(0 / 0)
      k:launch{ grid = R, block = 256 }(X, Y)
      local want = {}
      for r = 0, R - 1 do
        local mx, sum = -math.huge, 0
        for j = 1, N do mx = math.max(mx, hx[r * N + j]) end
        for j = 1, N do sum = sum + math.exp(hx[r * N + j] - mx) end
        for j = 1, N do want[r * N + j] = math.exp(hx[r * N + j] - mx) / sum end
      end
      assert.is_true(max_rel(Y:to_host(), want, R * N) < 1e-5)
    end)

    local function gemm_ref(ha, hb, M, N, K)
      local w = {}
      for i = 0, M - 1 do
        for j = 0, N - 1 do
          local s = 0
          for kk = 0, K - 1 do s = s + ha[i * K + kk + 1] * hb[kk * N + j + 1] end
          w[i * N + j + 1] = s
        end
      end
      return w
    end

    it("sgemm_naive (bounds checks at ragged edges)", function()
      local M, N, K = 40, 24, 19
      local k = example("sgemm_naive", { M, N, K })
      local ha, hb = rand_floats(M * K, 8), rand_floats(K * N, 9)
      local A, B = cute.from_host(ha, f32, { M, K }), cute.from_host(hb, f32, { K, N })
      local C = cute.empty({ M, N }, f32)
      C:fill(0 / 0)
      k:launch{ grid = { math.ceil(N / 16), math.ceil(M / 16) }, block = { 16, 16 } }(A, B, C)
      assert.is_true(max_rel(C:to_host(), gemm_ref(ha, hb, M, N, K), M * N) < 1e-5)
    end)

    it("sgemm_tiled (shared tiles, register blocking, two barriers a step)", function()
      local M, N, K = 128, 256, 24
      local k = example("sgemm_tiled", { M, N, K })
      local ha, hb = rand_floats(M * K, 10), rand_floats(K * N, 11)
      local A, B = cute.from_host(ha, f32, { M, K }), cute.from_host(hb, f32, { K, N })
      local C = cute.empty({ M, N }, f32)
      C:fill(0 / 0)
      k:launch{ grid = { N / 128, M / 128 }, block = 256 }(A, B, C)
      assert.is_true(max_rel(C:to_host(), gemm_ref(ha, hb, M, N, K), M * N) < 1e-5)
    end)
  end)

  it("divergent lanes of one warp: if/elseif/else, per-lane trip counts, break, continue, early return", function()
    local k = cute.kernel(function(A, Out, n)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      if i >= n then return end
      local s = 0
      local m = i % 7
      if i % 3 == 0 then
        for j = 0, m do
          if j == 5 then break end
          if j % 2 == 1 then goto continue end
          s = s + j * 10
          ::continue::
        end
      elseif i % 3 == 1 then
        local j = 0
        while j < m do
          s = s + 100
          j = j + 1
        end
        if m == 4 then return end
      else
        s = -1
      end
      Out[i] = s + A[i]
    end, { target = "cpu" })
    local n = 200
    local ha = {}
    for i = 1, n do ha[i] = i * 1000 end
    local A, Out = cute.from_host(ha, i32, { n }), cute.from_host((function()
      local t = {}
      for i = 1, 256 do t[i] = -7 end
      return t
    end)(), i32, { 256 })
    k:launch{ grid = 4, block = 64 }(A, Out, cute.Int32(n))
    local got = Out:to_host()
    for i = 0, 255 do
      local want
      if i >= n then want = -7
      else
        local s, m = 0, i % 7
        if i % 3 == 0 then
          for j = 0, m do
            if j == 5 then break end
            if j % 2 == 0 then s = s + j * 10 end
          end
          want = s + ha[i + 1]
        elseif i % 3 == 1 then
          want = m == 4 and -7 or (100 * m + ha[i + 1])
        else
          want = -1 + ha[i + 1]
        end
      end
      assert.are.equal(want, got[i], "thread " .. i)
    end
  end)

  it("cute.range with a traced step counts by the step's sign per lane, as the GPU's code (codegen_body.c)", function()
    -- every lane has its own lo, hi and step (positive, negative, or a wrap past the type)
    local k = cute.kernel(function(out, lo, hi, st)
      local t = cute.arch.thread_idx()
      local c, last = 0, -1
      for i in cute.range(lo[t], hi[t], st[t]) do c = c + 1; last = i end
      out[2 * t] = c
      out[2 * t + 1] = last
    end)
    local cases = { { 10, 0, -1 }, { 0, 10, 1 }, { 10, 0, 1 }, { 0, 10, -1 }, { 9, -9, -3 }, { -5, 6, 4 },
      { 2147483640, 2147483647, 5 }, { -2147483640, -2147483648, -7 }, { 3, 3, -1 }, { 7, 6, -2 } }
    local lo, hi, st, want = {}, {}, {}, {}
    for j, c in ipairs(cases) do
      lo[j], hi[j], st[j] = c[1], c[2], c[3]
      local n, last, i = 0, -1, c[1] -- Python's range, stopping where i + step leaves i32
      while (c[3] > 0 and i < c[2]) or (c[3] < 0 and i > c[2]) do
        n, last = n + 1, i
        i = i + c[3]
        if i > 2147483647 or i < -2147483648 then break end
      end
      want[2 * j - 1], want[2 * j] = n, last
    end
    local out = cute.zeros({ 2 * #cases }, i32)
    k:launch({ grid = 1, block = #cases })(out, cute.from_host(lo, i32, { #cases }), cute.from_host(hi, i32, { #cases }),
      cute.from_host(st, i32, { #cases }))
    assert.same(want, out:to_table())
  end)

  it("a block-level tree reduction through shared memory with sync_threads (exact, every block)", function()
    local k = cute.kernel(function(X, Out)
      local tid, bid = cute.arch.thread_idx(), cute.arch.block_idx()
      local sm = cute.make_shared_tensor(256, cute.int32)
      sm[tid] = X[bid * 256 + tid]
      cute.arch.sync_threads()
      for e = 7, 0, -1 do
        local s = 2 ^ e
        if tid < s then sm[tid] = sm[tid] + sm[tid + s] end
        cute.arch.sync_threads()
      end
      if tid == 0 then Out[bid] = sm[0] end
    end)
    local nb = 5
    local hx = {}
    for i = 1, nb * 256 do hx[i] = (i * 7919) % 1000 - 500 end
    local X, Out = cute.from_host(hx, i32, { nb * 256 }), cute.zeros({ nb }, i32)
    k:launch{ grid = nb, block = 256 }(X, Out)
    local got = Out:to_host()
    for b = 0, nb - 1 do
      local s = 0
      for t = 1, 256 do s = s + hx[b * 256 + t] end
      assert.are.equal(s, got[b])
    end
  end)

  it("shuffles (idx, up, down, bfly, width 16) and votes (ballot, any, all) in a partial warp", function()
    local k = cute.kernel(function(Out)
      local t = cute.arch.thread_idx()
      local v = t * 10 + 1
      Out[t * 6 + 0] = cute.arch.shuffle_sync(v, 3)
      Out[t * 6 + 1] = cute.arch.shuffle_sync_up(v, 2, -1, 16)
      Out[t * 6 + 2] = cute.arch.shuffle_sync_down(v, 5)
      Out[t * 6 + 3] = cute.arch.shuffle_sync_bfly(v, 9, -1, 16)
      local b = cute.arch.vote_ballot_sync(t % 3 == 0)
      Out[t * 6 + 4] = cute.Int32(b)
      local any = cute.arch.vote_any_sync(t == 33)
      local all = cute.arch.vote_all_sync(t < 40)
      Out[t * 6 + 5] = (any and 1 or 0) + (all and 2 or 0)
    end)
    local nt = 40 -- one full warp, one of 8 lanes
    local Out = cute.zeros({ nt * 6 }, i32)
    k:launch{ grid = 1, block = nt }(Out)
    local got = Out:to_host()
    local bit = require("bit")
    for t = 0, nt - 1 do
      local w0, lane = t - t % 32, t % 32
      local function v(l) return (w0 + l) * 10 + 1 end
      local seg = lane - lane % 16
      local up = lane - 2 >= seg and lane - 2 or lane
      local down = lane + 5 <= 31 and lane + 5 or lane
      local bf = bit.bxor(lane, 9)
      if bf > seg + 15 then bf = lane end
      local ballot = 0
      for l = 0, 31 do
        if w0 + l < nt and (w0 + l) % 3 == 0 then ballot = bit.bor(ballot, bit.lshift(1, l)) end
      end
      local any = (w0 == 32) and 1 or 0
      -- (a source lane outside the block is undefined on the GPU: not compared)
      local function src(l, k) if w0 + l < nt then return v(l) end return got[t * 6 + k] end
      assert.are.same({ src(3, 0), src(up, 1), src(down, 2), src(bf, 3), bit.tobit(ballot), any + 2 },
        { got[t * 6], got[t * 6 + 1], got[t * 6 + 2], got[t * 6 + 3], got[t * 6 + 4], got[t * 6 + 5] },
        "thread " .. t)
    end
  end)

  it("atomics from many blocks: add, max, min, or, exch, cas, f32 add", function()
    local k = cute.kernel(function(Out, F)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.arch.atomic_add(Out, 0, 1)
      cute.arch.atomic_max(Out, 1, i)
      cute.arch.atomic_min(Out, 2, 1000 - i)
      cute.arch.atomic_or(Out, 3, cute.Int32(1) * 2 ^ (i % 31))
      local old = cute.arch.atomic_add(Out, 4, 2)
      if old == 100 then cute.arch.atomic_exch(Out, 5, i) end
      cute.arch.atomic_cas(Out, 6, 0, i + 1)
      cute.arch.atomic_add(F, 0, 0.5)
    end)
    local Out = cute.from_host({ 0, -1, 5000, 0, 0, -1, 0 }, i32, { 7 })
    local F = cute.zeros({ 1 }, f32)
    k:launch{ grid = 37, block = 96 }(Out, F)
    local got, n = Out:to_host(), 37 * 96
    assert.are.equal(n, got[0])
    assert.are.equal(n - 1, got[1])
    assert.are.equal(1000 - (n - 1), got[2])
    assert.are.equal(0x7fffffff, got[3])
    assert.are.equal(2 * n, got[4])
    assert.are.equal(50, got[5]) -- (threads run in order here: the 51st adds to 100)
    assert.are.equal(1, got[6])
    assert.are.equal(n * 0.5, F:to_host()[0])
  end)

  it("f32 -> f16 / bf16 conversions round to nearest even, as cute.dtype's host conversion", function()
    local k = cute.kernel(function(X, H, Bf)
      local i = cute.arch.thread_idx()
      H[i] = cute.Float16(X[i])
      Bf[i] = cute.BFloat16(X[i])
    end)
    local hx = { 1.0, 1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 65504, 65520, 1e-8, -2.5e-5, 3.14159265, 0, -0.0,
      1 + 2 ^ -8, 1 + 3 * 2 ^ -8, 3.3895e38, 1e-40 }
    local n = #hx
    local X = cute.from_host(hx, f32, { n })
    local H, Bf = cute.empty({ n }, cute.float16), cute.empty({ n }, cute.bfloat16)
    k:launch{ grid = 1, block = n }(X, H, Bf)
    local h, b = H:to_host(), Bf:to_host()
    for i = 1, n do
      assert.are.equal(dt.float_to_half(hx[i]), h[i - 1], "f16 of " .. hx[i])
      assert.are.equal(dt.float_to_bf16(hx[i]), b[i - 1], "bf16 of " .. hx[i])
    end
  end)

  it("cute.printf prints each active thread's line in thread order", function()
    local k = cute.kernel(function(X)
      local t = cute.arch.thread_idx()
      if t % 2 == 1 then cute.printf("t=%d x=%.2f\n", t, X[t]) end
    end)
    local X = cute.from_host({ 0.5, 1.5, 2.5, 3.5, 4.5 }, f32, { 5 })
    local out, saved = {}, cpu.write
    cpu.write = function(s) out[#out + 1] = s end
    local ok, e = pcall(function() k:launch{ grid = 1, block = 5 }(X) end)
    cpu.write = saved
    assert(ok, e)
    assert.are.equal("t=1 x=1.50\nt=3 x=3.50\n", table.concat(out))
  end)

  it("a failed cute.assert_ is a launch error naming the kernel, the line and the thread", function()
    local k = cute.kernel(function(X)
      local t = cute.arch.thread_idx()
      cute.assert_(X[t] < 3, "x below 3") -- assert line
    end, { name = "cpu_assert" })
    local X = cute.from_host({ 0, 1, 2, 3, 4 }, i32, { 5 })
    local ok, e = pcall(function() k:launch{ grid = 1, block = 5 }(X) end)
    assert.is_false(ok)
    local line = util.line_of(THIS, "-- assert line")
    assert.is_truthy(util.has(tostring(e), "kernel cpu_assert: assertion failed: x below 3 (thread (3,0,0)) at " ..
      THIS .. ":" .. line), tostring(e))
  end)

  it("a barrier that can never complete is an error, not a hang", function()
    local k = cute.kernel(function(X)
      cute.arch.barrier(1, 128)
      X[0] = 1
    end, { name = "cpu_stuck" })
    local X = cute.zeros({ 1 }, i32)
    local ok, e = pcall(function() k:launch{ grid = 1, block = 64 }(X) end)
    assert.is_false(ok)
    assert.is_truthy(util.has(tostring(e), "kernel cpu_stuck: a barrier that can never complete"), tostring(e))
  end)

  it("an op the engine does not implement fails at the launch with the op and the Lua line", function()
    local k = cute.kernel(function(X)
      local r = cute.arch.asm(i32, "mov.u32 $0, %laneid;", "=r") -- asm line
      X[0] = r
    end, { name = "cpu_asm" })
    local X = cute.zeros({ 1 }, i32)
    local ok, e = pcall(function() k:launch{ grid = 1, block = 32 }(X) end)
    assert.is_false(ok)
    local line = util.line_of(THIS, "-- asm line")
    assert.is_truthy(util.has(tostring(e), ("cute (cpu target): kernel cpu_asm: op asm at %s:%d is not supported " ..
      "on the CPU target yet"):format(THIS, line)), tostring(e))
  end)

  it("device tensors are host memory behind the same API; streams and events work", function()
    local t = cute.from_host({ 1, 2, 3 }, i32, { 3 })
    assert.are.equal(0, t.device)
    local u = cute.empty({ 3 }, i32)
    u:copy_from(t)
    assert.are.same({ 1, 2, 3 }, u:to_table())
    u:fill(9)
    assert.are.same({ 9, 9, 9 }, u:to_table())
    local s = cute.stream()
    local e0, e1 = cute.event(), cute.event()
    e0:record(s); e1:record(s); s:synchronize()
    assert.is_true(cute.elapsed_ms(e0, e1) >= 0)
    assert.are.equal(1, cute.device_count())
    assert.is_truthy(util.has(cute.device(0).name, "CPU target"))
  end)

  it("without a GPU and without CUTE_TARGET, the first allocation chooses it, announced once", function()
    if cute.available() then pending("a GPU is present: the automatic choice does not happen") return end
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local cute = require("cute")
local k = cute.kernel(function(A) local t = cute.arch.thread_idx(); A[t] = A[t] * 2 end)
local A = cute.from_host({ 1, 2, 3 }, cute.int32, { 3 })
k:launch{ grid = 1, block = 3 }(A)
local B = cute.zeros({ 2 }, cute.int32)
print(table.concat(A:to_table(), ","), require("cute.target_cpu").active)
]])
    f:close()
    local p = io.popen(("env -u CUTE_TARGET %q %q 2>&1"):format(util.self_exe(), script))
    local out = p:read("*a")
    p:close()
    os.remove(script)
    local _, n = out:gsub("kernels run on the CPU target", "")
    assert.are.equal(1, n, out)
    assert.is_truthy(util.has(out, "2,4,6\ttrue"), out)
  end)

  it("kernel option target is checked", function()
    local ok, e = pcall(cute.kernel, function() end, { target = "tpu" })
    assert.is_false(ok)
    assert.is_truthy(util.has(tostring(e), 'option target must be "cpu" or "gpu", got tpu'), tostring(e))
  end)
end)
