-- Specialisation on the GPU (docs/DSL.md "Specialisation keys"): the aliasing
-- pattern of the tensor arguments, compile-time tables by value, argument
-- counts on the launch path, and host copies of tensors of 2 GiB and more.
-- Random data, CPU references.  Every test is tagged #gpu; without a GPU each
-- one is pending.
local cute = require("cute")
local ffi = require("ffi")
local bit = require("bit")
local f32 = cute.float32


local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it

local seed = 4242
local function rand_floats(n)
  local a = ffi.new("float[?]", n)
  for i = 0, n - 1 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    a[i] = math.floor(seed / 2147483648 * 2048 - 1024) / 8 -- exact in f32: sums below are exact
  end
  return a
end

-- first mismatch of out[0..n-1] against ref(i), or nil
local function mismatch(out, ref, n)
  for i = 0, n - 1 do
    if out[i] ~= ref(i) then return ("element %d: got %s, expected %s"):format(i, tostring(out[i]), tostring(ref(i))) end
  end
  return nil
end

-- a device-tensor view (no copy): the runtime's ptr + layout description
local function view(t, elem_offset, n)
  return { ptr = t.ptr + elem_offset * t.dtype.size, shape = { n }, strides = { 1 }, dtype = t.dtype }
end

describe("aliasing on the GPU", function()
  local N, BLOCK = 64 * 256, 256
  local inplace = cute.kernel(function(X, Y)
    local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
    Y[i] = X[i] + 1
    Y[i] = Y[i] + X[i]
  end)

  gpu_it("k(A, A) after k(A, B) runs the in-place kernel correctly", function()
    local a = rand_floats(N)
    local A, B = cute.from_host(a, f32, { N }), cute.zeros({ N }, f32)
    local cfg = { grid = N / BLOCK, block = BLOCK }
    inplace(cfg, A, B)
    local out = B:to_host()
    assert.is_nil(mismatch(out, function(i) return 2 * a[i] + 1 end, N))
    inplace(cfg, A, A) -- the same tensor twice: Y[i] = (X[i] + 1) + (X[i] + 1)
    out = A:to_host()
    assert.is_nil(mismatch(out, function(i) return 2 * a[i] + 2 end, N))
    -- and the first binary still serves distinct tensors
    local a2 = rand_floats(N)
    local A2, B2 = cute.from_host(a2, f32, { N }), cute.zeros({ N }, f32)
    inplace(cfg, A2, B2)
    out = B2:to_host()
    assert.is_nil(mismatch(out, function(i) return 2 * a2[i] + 1 end, N))
    inplace(cfg, A2, A2)
    out = A2:to_host()
    assert.is_nil(mismatch(out, function(i) return 2 * a2[i] + 2 end, N))
  end)

  gpu_it("views of one allocation: overlapping ones alias, disjoint ones do not", function()
    local a = rand_floats(2 * N)
    local A = cute.from_host(a, f32, { 2 * N })
    local cfg = { grid = N / BLOCK, block = BLOCK }
    -- Y is the first half of X's allocation, X the whole of it: in place on the first half
    inplace(cfg, view(A, 0, 2 * N), view(A, 0, N))
    local out = A:to_host()
    assert.is_nil(mismatch(out, function(i) return i < N and 2 * a[i] + 2 or a[i] end, 2 * N))
    -- disjoint halves: Y (second half) = 2 X (first half) + 2 + 1
    inplace(cfg, view(A, 0, N), view(A, N, N))
    local out2 = A:to_host()
    assert.is_nil(mismatch(out2, function(i)
      if i < N then return out[i] end
      return 2 * out[i - N] + 1
    end, 2 * N))
  end)
end)

describe("compile-time tables on the GPU", function()
  local N, BLOCK = 4096, 256
  local scaled = cute.kernel(function(X, conf)
    local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
    X[i] = cute.Float32(i) * conf.scale + conf.bias[1]
  end)

  gpu_it("a config table mutated between launches runs the new value; equal inline tables trace once", function()
    local X = cute.zeros({ N }, f32)
    local cfg = { grid = N / BLOCK, block = BLOCK }
    local conf = { scale = 2, bias = { 1 } }
    scaled(cfg, X, conf)
    assert.is_nil(mismatch(X:to_host(), function(i) return 2 * i + 1 end, N))
    conf.scale = 3
    conf.bias[1] = -5
    scaled(cfg, X, conf)
    assert.is_nil(mismatch(X:to_host(), function(i) return 3 * i - 5 end, N))
    local traces = scaled.traces
    for _ = 1, 10 do scaled(cfg, X, { scale = 4, bias = { 0.5 } }) end
    assert.equal(traces + 1, scaled.traces)
    assert.is_nil(mismatch(X:to_host(), function(i) return 4 * i + 0.5 end, N))
  end)
end)

describe("argument counts on the launch path", function()
  local kopt = cute.kernel(function(X, opt, Y)
    local i = cute.arch.thread_idx()
    Y[i] = X[i] * (opt or 1)
  end)

  gpu_it("k(A, nil, B) then k(A): the count error, not a failure inside the launcher", function()
    local a = rand_floats(32)
    local A, B = cute.from_host(a, f32, { 32 }), cute.zeros({ 32 }, f32)
    kopt({ grid = 1, block = 32 }, A, nil, B)
    assert.is_nil(mismatch(B:to_host(), function(i) return a[i] end, 32))
    kopt({ grid = 1, block = 32 }, A, 3, B)
    assert.is_nil(mismatch(B:to_host(), function(i) return 3 * a[i] end, 32))
    local ok, e = pcall(function() kopt({ grid = 1, block = 32 }, A) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("expected 3 arguments (X, opt, Y), got 1", 1, true), e)
    assert.is_truthy(tostring(e):find("specialise_gpu_spec.lua:", 1, true), e)
  end)
end)

describe("host copies of 2 GiB and more", function()
  -- 2.125 GiB of bytes: more than 2^31 elements and bytes
  local n = 2 ^ 31 + 2 ^ 27
  -- a pseudo-random block of a prime number of bytes, repeated: byte i is pat[i % P]
  local P = 1048573
  local pat = ffi.new("uint8_t[?]", P)
  local s = 7
  for i = 0, P - 1 do
    s = (s * 1103515245 + 12345) % 2147483648
    pat[i] = math.floor(s / 8388608) % 256
  end
  local function byte_at(i) return pat[i % P] end

  util.device_it("from_host and to_host round-trip a 2.1 GiB tensor", "2.1 GiB of device memory and cute.mem_info",
    function()
    local free = cute.mem_info()
    if type(free) == "number" and free < 3 * 2 ^ 30 then pending("less than 3 GiB of free device memory") return end
    local host = cute.host_buffer(n, cute.uint8)
    ffi.copy(host, pat, P)
    local have = P
    while have < n do                                 -- doubling copies of whole blocks
      local m = math.min(have - have % P, n - have)
      ffi.copy(host + have, host, m)
      have = have + m
    end
    for _, i in ipairs({ 0, P - 1, P, 5 * P + 3, n - 1 }) do assert.equal(byte_at(i), host[i]) end
    local T = cute.from_host(host, cute.uint8, { n })
    host = nil
    collectgarbage()
    local back = T:to_host()
    -- the ends, and 20000 random positions
    local checked = 0
    for i = 0, 4095 do
      assert.equal(byte_at(i), back[i]); assert.equal(byte_at(n - 1 - i), back[n - 1 - i])
      checked = checked + 2
    end
    local s = 99
    for _ = 1, 20000 do
      s = (s * 1103515245 + 12345) % 2147483648
      local i = math.floor(s / 2147483648 * n)
      if back[i] ~= byte_at(i) then
        error(("byte %d: got %d, expected %d"):format(i, back[i], byte_at(i)))
      end
      checked = checked + 1
    end
    assert.equal(8192 + 20000, checked)
    -- a device fill read back in full at the far end
    T:fill(7)
    back = T:to_host()
    assert.equal(7, back[0]); assert.equal(7, back[n - 1]); assert.equal(7, back[2 ^ 31])
    T:free()
  end)
end)
