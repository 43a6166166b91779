-- Tensors on the GPU (issue 8): 64-bit offsets in multi-GiB tensors (item 5),
-- cute.dynamic tensors whose unit strides differ (item 2), dynamic shared
-- memory regions and the launch size (item 7), 16-byte u8 copies (item 11).
-- Every test is tagged #gpu; without a GPU each one is pending.  Large tensors
-- are read back through small views (a host table with a pointer into the
-- big buffer), copied by a kernel with a small static layout (32-bit math).
local cute = require("cute")
local ffi = require("ffi")
local f32, f16, bf16, u8 = cute.float32, cute.float16, cute.bfloat16, cute.uint8


local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it

local seed = 4242
local function rand01()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
end
local function rand_floats(n)
  local a = ffi.new("float[?]", n)
  for i = 0, n - 1 do a[i] = 2 * rand01() - 1 end
  return a
end

-- n elements of `big` (a device tensor) from element `first` on, as float32
-- on the host: a view tensor (pointer arithmetic on the host) and a copy kernel
local readback
local function read_elems(big, first, n)
  readback = readback or cute.kernel(function(V, B, n)
    local i = cute.arch.block_idx() * 256 + cute.arch.thread_idx()
    cute.if_then(i < n, function() B[i] = V[i] end)
  end, { name = "readback" })
  local view = { ptr = big.ptr + first * big.dtype.size, shape = { n }, strides = { 1 }, dtype = big.dtype }
  local B = cute.zeros({ n }, f32)
  readback:launch{ grid = math.ceil(n / 256), block = 256 }(view, B, n)
  local h = B:to_host()
  B:free()
  return h
end

-- a kernel's error message from a launch that must fail
local function launch_err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected the launch to fail")
  return tostring(e)
end

describe("tensors on the GPU", function()
  util.device_it("the last row of a 4096 x 1048576 bf16 tensor (8 GiB), static and dynamic shapes",
    "8 GiB of memory (more than CI's host)", function()
    local R, N = 4096, 1048576
    local A = cute.zeros({ R, N }, bf16)
    local W = cute.kernel(function(A, sign, R, N)
      local t = cute.arch.thread_idx()
      A[{ R - 1, N - 256 + t }] = (t + 1) * sign  -- t = 255: the very last element
    end)
    W:launch{ grid = 1, block = 256 }(A, 1, R, N)
    local h = read_elems(A, R * N - 257, 257)
    assert.are.equal(0, h[0]) -- the element before the written run is untouched
    for t = 0, 255 do assert.are.equal(t + 1, h[t + 1]) end
    -- runtime shapes: the same stores through i64 parameters
    W:launch{ grid = 1, block = 256 }(cute.dynamic(A), -1, R, N)
    h = read_elems(A, R * N - 257, 257)
    assert.are.equal(0, h[0])
    for t = 0, 255 do assert.are.equal(-(t + 1), h[t + 1]) end
    -- and the first row is untouched (an offset that wrapped would land there or fault)
    h = read_elems(A, 0, 256)
    for t = 0, 255 do assert.are.equal(0, h[t]) end
    A:free()
  end)

  util.device_it("rows 32767 and 32768 of a 32769 x 65536 f16 tensor (offsets cross 2^31)",
    "4 GiB of memory (more than CI's host)", function()
    local R, N = 32769, 65536
    local A = cute.zeros({ R, N }, f16)
    local W = cute.kernel(function(A, sign)
      local b, t = cute.arch.block_idx(), cute.arch.thread_idx()
      A[{ 32767 + b, 65280 + t }] = (b * 256 + t + 1) * sign
    end)
    local function check(sign)
      for row = 0, 1 do
        local h = read_elems(A, (32767 + row) * N + 65280, 256)
        for t = 0, 255 do assert.are.equal((row * 256 + t + 1) * sign, h[t]) end
      end
      local h = read_elems(A, 0, 256) -- row 0 is untouched
      for t = 0, 255 do assert.are.equal(0, h[t]) end
    end
    W:launch{ grid = 2, block = 256 }(A, 1)
    check(1)
    W:launch{ grid = 2, block = 256 }(cute.dynamic(A), -1)
    check(-1)
    A:free()
  end)

  util.device_it("a grid-stride cute.range over cute.size(A) = 2^31 + 4096 bytes reaches the end and stops",
    "2 GiB of memory and 2^31 iterations (too slow for the CPU target in CI)", function()
    local n = 2 ^ 31 + 4096
    local A = cute.zeros({ n }, u8)
    local Fill = cute.kernel(function(A)
      local i0 = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      local step = cute.arch.grid_dim() * cute.arch.block_dim()
      for i in cute.range(i0, cute.size(A), step) do A[i] = 7 end
    end)
    Fill:launch{ grid = 1024, block = 256 }(A)
    for _, first in ipairs({ 0, 2 ^ 31 - 256, n - 256 }) do
      local h = read_elems(A, first, 256)
      for t = 0, 255 do assert.are.equal(7, h[t]) end
    end
    A:free()
  end)

  gpu_it("colsum of a dynamic row-major tensor, then of its transposed view (one compile each)", function()
    local R, N = 300, 77
    local hx = rand_floats(R * N)
    local X = cute.from_host(hx, f32, { R, N })
    local colsum = cute.kernel(function(A, Out)
      local j = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(j < cute.size(A, 1), function()
        local s = cute.var(0.0, f32)
        for i in cute.range(cute.size(A, 0)) do s.value = s.value + A[{ i, j }] end
        Out[j] = s.value
      end)
    end)
    local O1 = cute.zeros({ N }, f32)
    colsum:launch{ grid = 1, block = 128 }(cute.dynamic(X), O1)
    local T = { ptr = X.ptr, shape = { N, R }, strides = { 1, N }, dtype = f32 } -- X transposed
    local O2 = cute.zeros({ R }, f32)
    colsum:launch{ grid = 3, block = 128 }(cute.dynamic(T), O2)
    assert.are.equal(2, colsum.traces)
    local h1, h2 = O1:to_host(), O2:to_host()
    for j = 0, N - 1 do
      local s = 0
      for i = 0, R - 1 do s = s + hx[i * N + j] end
      assert.is_true(math.abs(h1[j] - s) <= 1e-4 * (1 + math.abs(s)), ("column %d: %g vs %g"):format(j, h1[j], s))
    end
    for i = 0, R - 1 do
      local s = 0
      for j = 0, N - 1 do s = s + hx[i * N + j] end
      assert.is_true(math.abs(h2[i] - s) <= 1e-4 * (1 + math.abs(s)), ("row %d: %g vs %g"):format(i, h2[i], s))
    end
  end)

  gpu_it("row centring over runtime row lengths 1 then 7 (64- and 32-bit indexing)", function()
    local center = cute.kernel(function(X, Y)
      local r = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(r < cute.size(X, 0), function()
        local n = cute.size(X, 1)
        local s = cute.var(0.0, f32)
        for j in cute.range(n) do s.value = s.value + X[{ r, j }] end
        local mean = s.value / cute.Float32(n)
        for j in cute.range(n) do Y[{ r, j }] = X[{ r, j }] - mean end
      end)
    end)
    for _, bits in ipairs({ 64, 32 }) do
      local before = center.traces
      for _, len in ipairs({ 1, 7 }) do
        local R = 64
        local hx = rand_floats(R * len)
        local X = cute.from_host(hx, f32, { R, len })
        local Y = cute.zeros({ R, len }, f32)
        center:launch{ grid = 1, block = 64 }(cute.dynamic(X, { index_bits = bits }), cute.dynamic(Y, { index_bits = bits }))
        local hy = Y:to_host()
        for r = 0, R - 1 do
          local s = 0
          for j = 0, len - 1 do s = s + hx[r * len + j] end
          local mean = s / len
          for j = 0, len - 1 do
            local want = hx[r * len + j] - mean
            assert.is_true(math.abs(hy[r * len + j] - want) <= 1e-5,
              ("len %d row %d col %d: %g vs %g"):format(len, r, j, hy[r * len + j], want))
          end
        end
      end
      assert.are.equal(before + 2, center.traces) -- rows of length 1 have two unit strides: another plan
    end
  end)

  gpu_it("dynamic shared tensors of three dtypes do not alias; smem defaults to their total and is checked", function()
    local k = cute.kernel(function(A, B, Out)
      local t = cute.arch.thread_idx()
      local s1 = cute.make_dynamic_shared_tensor(cute.make_layout(256), f32)
      local s2 = cute.make_dynamic_shared_tensor(cute.make_layout(256), f16)
      local s3 = cute.make_dynamic_shared_tensor(cute.make_layout(256), cute.int32)
      s1[t] = A[t]
      s2[t] = B[t]
      s3[t] = t * 3
      cute.arch.sync_threads()
      local u = cute.rem(t + 1, 256)
      Out[t] = s1[u] + cute.Float32(s2[u]) + cute.Float32(s3[u])
    end, { name = "three_regions" })
    local ha, hb = rand_floats(256), rand_floats(256)
    local A, B = cute.from_host(ha, f32, { 256 }), cute.from_host(hb, f16, { 256 })
    local function check(Out)
      local h = Out:to_host()
      for t = 0, 255 do
        local u = (t + 1) % 256
        local want = ha[u] + cute.half_to_float(cute.float_to_half(hb[u])) + 3 * u
        assert.is_true(math.abs(h[t] - want) <= 1e-3, ("%d: %g vs %g"):format(t, h[t], want))
      end
    end
    local Out = cute.zeros({ 256 }, f32)
    k:launch{ grid = 1, block = 256 }(A, B, Out) -- smem omitted: 1024 + 512 + 1024 bytes
    check(Out)
    assert.are.equal(2560, k:compile(A, B, Out).info.smem_dynamic)
    local Out2 = cute.zeros({ 256 }, f32)
    k:launch{ grid = 1, block = 256, smem = 64 * 1024 }(A, B, Out2) -- more is fine (above 48 KiB too)
    check(Out2)
    local e = launch_err(function() k:launch{ grid = 1, block = 256, smem = 1024 }(A, B, Out) end)
    assert.is_true(e:find("three_regions", 1, true) ~= nil, e)
    assert.is_true(e:find("smem = 1024 bytes", 1, true) ~= nil, e)
    assert.is_true(e:find("2560 bytes", 1, true) ~= nil, e)
    assert.is_true(e:find("tensor_gpu_spec.lua", 1, true) ~= nil, e)
  end)

  gpu_it("16-byte u8 tiles copied through shared memory", function()
    local k = cute.kernel(function(A, B)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(16 * 256), u8)
      cute.copy(cute.local_tile(A, { 16 }, { t }), cute.local_tile(s, { 16 }, { t }))
      cute.arch.sync_threads()
      cute.copy(cute.local_tile(s, { 16 }, { cute.rem(t + 1, 256) }), cute.local_tile(B, { 16 }, { t }))
    end)
    local n = 16 * 256
    local ha = ffi.new("uint8_t[?]", n)
    for i = 0, n - 1 do ha[i] = math.floor(rand01() * 256) end
    local A, B = cute.from_host(ha, u8, { n }), cute.zeros({ n }, u8)
    k:launch{ grid = 1, block = 256 }(A, B)
    local hb = B:to_host()
    for t = 0, 255 do
      local u = (t + 1) % 256
      for i = 0, 15 do assert.are.equal(ha[u * 16 + i], hb[t * 16 + i]) end
    end
    local ptx = k:ptx(A, B)
    assert.is_true(ptx:find("ld%.global%.nc%.v4%.[ub]32") ~= nil, ptx)
  end)
end)
