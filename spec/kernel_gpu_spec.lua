-- Kernels written in Lua, run on the GPU and checked against CPU references on
-- random data.  Every test is tagged #gpu; without a GPU each one is pending.
local cute = require("cute")
local ffi = require("ffi")
local _ = cute._
local f32 = cute.float32


local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it

local rand_floats = dofile("spec/support/util.lua").rand_floats

local function rel_err(out, ref, n)
  local num, den = 0, 0
  for i = 0, n - 1 do
    local r = type(ref) == "function" and ref(i) or ref[i]
    if out[i] ~= out[i] then return math.huge end
    num = num + (out[i] - r) ^ 2; den = den + r * r
  end
  return math.sqrt(num / math.max(den, 1e-30))
end

local load_example = dofile("examples/common.lua").load_kernel

describe("kernels on the GPU", function()
  gpu_it("vector add (16-byte copies, grid-stride loop) on random data", function()
    local n = 2 ^ 20 + 4096
    local k = load_example("vector_add")
    local ha, hb = rand_floats(n), rand_floats(n)
    local A, B = cute.from_host(ha, f32, { n }), cute.from_host(hb, f32, { n })
    local Cc = cute.empty({ n }, f32)
    Cc:fill(0 / 0)
    k:launch{ grid = 37, block = 128 }(A, B, Cc)
    local hc = Cc:to_host()
    assert.is_true(rel_err(hc, function(i) return ha[i] + hb[i] end, n) < 1e-7)
  end)

  gpu_it("saxpy with a runtime scalar reuses the compiled kernel", function()
    local n = 10000
    local k = load_example("saxpy")
    local hx, hy = rand_floats(n), rand_floats(n)
    local X, Y = cute.from_host(hx, f32, { n }), cute.from_host(hy, f32, { n })
    k:launch{ grid = math.ceil(n / 256), block = 256 }(cute.Float32(2.5), X, Y)
    local traces = k.traces
    k:launch{ grid = math.ceil(n / 256), block = 256 }(cute.Float32(-1), X, Y)
    assert.are.equal(traces, k.traces)
    local out = Y:to_host()
    assert.is_true(rel_err(out, function(i) return -1 * hx[i] + (2.5 * hx[i] + hy[i]) end, n) < 1e-6)
  end)

  gpu_it("sum reduction (shuffles, shared memory, one atomic per block)", function()
    local n = 2 ^ 22
    local k = load_example("reduce_sum")
    local hx = rand_floats(n)
    local X, Out = cute.from_host(hx, f32, { n }), cute.zeros({ 1 }, f32)
    k:launch{ grid = 96, block = 512 }(X, Out)
    local ref, mag = 0, 0
    for i = 0, n - 1 do ref = ref + hx[i]; mag = mag + math.abs(hx[i]) end
    assert.is_true(math.abs(Out:to_host()[0] - ref) / mag < 1e-6)
  end)

  gpu_it("transpose through padded shared memory", function()
    local M, N = 256, 384
    local k = load_example("transpose", { "256", "384" })
    local ha = rand_floats(M * N)
    local A, B = cute.from_host(ha, f32, { M, N }), cute.empty({ N, M }, f32)
    B:fill(0 / 0)
    k:launch{ grid = { N / 32, M / 32 }, block = { 32, 8 } }(A, B)
    local hb = B:to_host()
    assert.are.equal(0, rel_err(hb, function(i) return ha[(i % M) * N + math.floor(i / M)] end, M * N))
  end)

  gpu_it("row softmax", function()
    local R, N = 64, 4096
    local k = load_example("softmax", { "64", "4096" })
    local hx = rand_floats(R * N, -5, 5)
    local X, Y = cute.from_host(hx, f32, { R, N }), cute.empty({ R, N }, f32)
    k:launch{ grid = R, block = 256 }(X, Y)
    local hy = Y:to_host()
    local refs = {}
    for r = 0, R - 1 do
      local mx, s = -math.huge, 0
      for j = 0, N - 1 do mx = math.max(mx, hx[r * N + j]) end
      for j = 0, N - 1 do s = s + math.exp(hx[r * N + j] - mx) end
      refs[r] = { mx, s }
    end
    assert.is_true(rel_err(hy, function(i)
      local r = math.floor(i / N)
      return math.exp(hx[i] - refs[r][1]) / refs[r][2]
    end, R * N) < 1e-5)
  end)

  for _, name in ipairs({ "sgemm_naive", "sgemm_tiled" }) do
    gpu_it(name .. " against a double-precision reference", function()
      local M, N, K = 256, 384, 128
      local k = load_example(name, { tostring(M), tostring(N), tostring(K) })
      local ha, hb = rand_floats(M * K), rand_floats(K * N)
      local A, B = cute.from_host(ha, f32, { M, K }), cute.from_host(hb, f32, { K, N })
      local Cc = cute.empty({ M, N }, f32)
      Cc:fill(0 / 0)
      if name == "sgemm_naive" then
        k:launch{ grid = { N / 16, M / 16 }, block = { 16, 16 } }(A, B, Cc)
      else
        k:launch{ grid = { N / 128, M / 128 }, block = 256 }(A, B, Cc)
      end
      local hc = Cc:to_host()
      assert.is_true(rel_err(hc, function(i)
        local r, c = math.floor(i / N), i % N
        local s = 0
        for kk = 0, K - 1 do s = s + ha[r * K + kk] * hb[kk * N + c] end
        return s
      end, M * N) < 1e-5)
    end)
  end

  gpu_it("if/else, while loops, vars and early return", function()
    local k = cute.kernel(function(A, Out)
      local i = cute.arch.thread_idx()
      local x = A[i]
      local v = cute.var(0.0, f32)
      cute.if_then(x > 0, function() v.value = x * 2 end, function() v.value = -x end)
      -- count halvings until below 0.01 (a while loop)
      local steps = cute.var(0, cute.int32)
      local y = cute.var(cute.math.abs(x) + 0.02, f32)
      cute.while_(function() return y.value > 0.01 end, function()
        y.value = y.value * 0.5
        steps.value = steps.value + 1
      end)
      cute.if_then(i >= 60, function() cute.return_() end)
      Out[{ i, 0 }] = v.value
      Out[{ i, 1 }] = cute.Float32(steps.value)
    end)
    local n = 64
    local ha = rand_floats(n)
    local A, Out = cute.from_host(ha, f32, { n }), cute.zeros({ n, 2 }, f32)
    k:launch{ grid = 1, block = n }(A, Out)
    local o = Out:to_host()
    for i = 0, n - 1 do
      if i >= 60 then
        assert.are.equal(0, o[2 * i]); assert.are.equal(0, o[2 * i + 1])
      else
        local x = ha[i]
        local want = x > 0 and x * 2 or -x
        assert.is_true(math.abs(o[2 * i] - want) <= 1e-6 * math.abs(want))
        local y, s = ffi.new("float[1]", math.abs(x) + 0.02), 0
        while y[0] > 0.01 do y[0] = y[0] * 0.5; s = s + 1 end
        assert.are.equal(s, o[2 * i + 1])
      end
    end
  end)

  gpu_it("dynamic shapes: one compile serves several sizes", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(i < cute.size(A, 0), function()
        for j in cute.range(cute.size(A, 1)) do A[{ i, j }] = cute.Float32(i * 1000 + j) end
      end)
    end)
    for _, shape in ipairs({ { 37, 5 }, { 300, 17 } }) do
      local T = cute.zeros(shape, f32)
      k:launch{ grid = math.ceil(shape[1] / 64), block = 64 }(cute.dynamic(T))
      local h = T:to_host()
      for i = 0, shape[1] - 1 do for j = 0, shape[2] - 1 do
        assert.are.equal(i * 1000 + j, h[i * shape[2] + j])
      end end
    end
    assert.are.equal(1, k.traces)
  end)

  gpu_it("warp votes, ballots, atomics on global memory", function()
    local k = cute.kernel(function(A, Out, IOut)
      local i = cute.arch.thread_idx()
      local b = cute.arch.vote_ballot_sync(A[i] > 0)
      cute.if_then(cute.arch.lane_idx() == 0, function() Out[cute.div(i, 32)] = cute.Float32(cute.math.popc(b)) end)
      cute.arch.atomic_add(Out, 4, 1.0)
      cute.arch.atomic_max(IOut, 0, cute.Int32(A[i] * 1000))
      cute.arch.atomic_min(IOut, 1, cute.Int32(A[i] * 1000))
    end)
    local n = 128
    local ha = rand_floats(n)
    local A, Out = cute.from_host(ha, f32, { n }), cute.zeros({ 5 }, f32)
    local IOut = cute.from_host({ -100000, 100000 }, cute.int32, { 2 })
    k:launch{ grid = 1, block = n }(A, Out, IOut)
    local o, io = Out:to_host(), IOut:to_host()
    for w = 0, 3 do
      local c = 0
      for l = 0, 31 do if ha[w * 32 + l] > 0 then c = c + 1 end end
      assert.are.equal(c, o[w])
    end
    assert.are.equal(n, o[4])
    local mx, mn = -100000, 100000
    for i = 0, n - 1 do
      local v = ffi.new("float[1]", ha[i] * 1000)[0]
      v = v >= 0 and math.floor(v) or math.ceil(v)
      mx = math.max(mx, v); mn = math.min(mn, v)
    end
    assert.are.equal(mx, io[0])
    assert.are.equal(mn, io[1])
  end)

  gpu_it("local_partition over a tile, dynamic shared memory above 48 KiB, half-precision stores", function()
    local TILE = 128
    local k = cute.kernel(function(A, B)
      local t = cute.arch.thread_idx()
      local bx = cute.arch.block_idx()
      local gA = cute.local_tile(A, { TILE, 32 }, { bx, 0 })
      local gB = cute.local_tile(B, { TILE, 32 }, { bx, 0 })
      -- 64 KiB of dynamic shared memory (a 128 x 32 fp32 tile uses 16 KiB; the rest pads)
      local s = cute.make_dynamic_shared_tensor(cute.make_layout({ TILE, 32 }, { 128, 1 }), f32)
      local thr = cute.make_layout({ 32, 8 }, { 8, 1 })            -- 256 threads
      local mine_g = cute.local_partition(gA, thr, t)
      local mine_s = cute.local_partition(s, thr, t)
      for i in cute.range_constexpr(cute.size(mine_g)) do mine_s[i] = mine_g[i] * 2.0 end
      cute.arch.sync_threads()
      local out = cute.local_partition(gB, thr, t)
      local mine_s2 = cute.local_partition(s, thr, (t + 1) % 256)
      for i in cute.range_constexpr(cute.size(out)) do out[i] = mine_s2[i] end
    end)
    local M = 256
    local ha = rand_floats(M * 32)
    local A = cute.from_host(ha, f32, { M, 32 })
    local B = cute.zeros({ M, 32 }, cute.float16)
    k:launch{ grid = M / TILE, block = 256, smem = 64 * 1024 }(A, B)
    local hb = B:to_host()
    -- thread t's slot holds the values thread t+1 owns: recompute on the host
    local thr = cute.make_layout({ 32, 8 }, { 8, 1 })
    local ok = true
    for blk = 0, M / TILE - 1 do
      for t = 0, 255 do
        local src = (t + 1) % 256
        local tr_, tc = math.floor(t / 8), t % 8             -- thr(tr, tc) = t (row-major 32x8)
        local sr, sc = math.floor(src / 8), src % 8
        for i = 0, (TILE / 32) * (32 / 8) - 1 do
          local ii, jj = i % (TILE / 32), math.floor(i / (TILE / 32))
          local r, c = tr_ + 32 * ii + blk * TILE, tc + 8 * jj
          local rs, cs = sr + 32 * ii + blk * TILE, sc + 8 * jj
          local want = cute.half_to_float(cute.float_to_half(ha[rs * 32 + cs] * 2))
          if cute.half_to_float(hb[r * 32 + c]) ~= want then ok = false end
        end
      end
    end
    assert.is_true(ok)
  end)

  util.device_it("a failing launch is a Lua error naming the CUDA error and a hint", "the CUDA driver's error name",
    function()
    local k = cute.kernel(function(A) A[cute.arch.thread_idx()] = 1.0 end)
    local A = cute.zeros({ 4096 }, f32)
    local ok, e = pcall(function() k:launch{ grid = 1, block = 2048 }(A) end)
    assert.is_false(ok)
    e = tostring(e)
    assert.is_truthy(e:find("CUDA_ERROR_INVALID_VALUE", 1, true), e)
    assert.is_truthy(e:find("kernel_gpu_spec.lua", 1, true), e)
  end)
end)
