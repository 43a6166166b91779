-- The CUDA runtime layer (lua/cute/runtime.lua over include/cute_cuda.h).
-- Specs that need a GPU carry the #gpu tag; on a machine without a usable
-- driver they are registered as pending("needs a GPU: ..."), never passed.
local ffi = require("ffi")
local bit = require("bit")

if not pcall(require, "cute.ffi") then
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
end
local rt = require("cute.runtime")
local cf = require("cute.ffi")
local C = cf.C

local HAVE_GPU, NO_GPU_REASON = rt.available()

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local function has(s, sub) return s:find(sub, 1, true) ~= nil end

-- os.execute succeeded (Lua 5.1 returns the status, 5.2+ true)
local function sh_ok(cmd)
  local r = os.execute(cmd)
  return r == 0 or r == true
end

local read_file = dofile("spec/support/util.lua").read_file

-- `it` on a GPU, a visible pending test elsewhere.  On the CPU target
-- (CUTE_TARGET=cpu: docs/CPU_TARGET.md, "CI") the host driver runs it, unless
-- needs names what only the CUDA driver has (pending with that reason).
local U = dofile("spec/support/util.lua")
local function gpu_it(name, fn, needs)
  if U.on_cpu_target() then
    if needs then return U.device_it(name, needs, fn) end
    return U.gpu_it(name, fn)
  end
  if HAVE_GPU then
    it(name .. " #gpu", fn)
  else
    pending("needs a GPU: " .. name .. " #gpu")
  end
end

-- y[i] += 1.0f for i < n; and an empty kernel.
local PTX_ADD1 = [[
.version 8.0
.target sm_80
.address_size 64

.visible .entry add1(.param .u64 p_y, .param .u32 p_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p_y];
  ld.param.u32 %r1, [p_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}

.visible .entry noop()
{
  ret;
}
]]

local BAD_PTX = [[
.version 8.0
.target sm_80
.address_size 64
.visible .entry broken()
{
  frobnicate.u32 %r1;
  ret;
}
]]

-- float32 rounding of a Lua number, via the FFI.
local f32 = ffi.new("float[1]")
local function to_f32(x) f32[0] = x return f32[0] end

describe("cute.runtime dtypes", function()
  it("has every dtype with its size and host ctype", function()
    local want = {
      float32 = { 4, "float" }, float16 = { 2, "uint16_t" }, bfloat16 = { 2, "uint16_t" },
      float64 = { 8, "double" }, int8 = { 1, "int8_t" }, int16 = { 2, "int16_t" },
      int32 = { 4, "int32_t" }, int64 = { 8, "int64_t" }, uint8 = { 1, "uint8_t" },
      uint16 = { 2, "uint16_t" }, uint32 = { 4, "uint32_t" }, uint64 = { 8, "uint64_t" },
      bool = { 1, "bool" },
    }
    for name, w in pairs(want) do
      local d = rt[name]
      assert.is_table(d, name)
      assert.are.equal(name, d.name)
      assert.are.equal(w[1], d.size)
      assert.are.equal(w[2], d.ctype)
      assert.are.equal(w[1], ffi.sizeof(d.ct))
      assert.are.equal(d, rt.dtypes[name])
      assert.are.equal(d, rt.dtype(name))
    end
    assert.is_true(rt.float16.is_float and rt.bfloat16.is_float and not rt.int32.is_float)
    assert.are.equal("cute.float32", tostring(rt.float32))
    assert.is_truthy(has(err_of(rt.dtype, "float"), "not a dtype"))
  end)

  it("float16: every finite and infinite bit pattern round-trips", function()
    for h = 0, 0xffff do
      local e = bit.band(bit.rshift(h, 10), 0x1f)
      local m = bit.band(h, 0x3ff)
      if not (e == 31 and m ~= 0) then
        local x = rt.half_to_float(h)
        local back = rt.float_to_half(x)
        if back ~= h then error(("half 0x%04x -> %.17g -> 0x%04x"):format(h, x, back)) end
      end
    end
  end)

  it("float16: known values and round-to-nearest-even", function()
    local cases = {
      { 0.0, 0x0000 }, { -0.0, 0x8000 }, { 1.0, 0x3c00 }, { -2.0, 0xc000 }, { 0.5, 0x3800 },
      { 65504, 0x7bff }, { 65519, 0x7bff }, { 65520, 0x7c00 }, { 1e6, 0x7c00 },
      { -1e6, 0xfc00 }, { math.huge, 0x7c00 }, { -math.huge, 0xfc00 },
      { 2 ^ -14, 0x0400 },                       -- smallest normal
      { 2 ^ -24, 0x0001 },                       -- smallest subnormal
      { 2 ^ -25, 0x0000 },                       -- tie between 0 and 2^-24: even (0)
      { 1.5 * 2 ^ -25, 0x0001 },
      { 3 * 2 ^ -25, 0x0002 },                   -- tie between 1 and 2 ulps: even (2)
      { 5 * 2 ^ -25, 0x0002 },                   -- tie between 2 and 3 ulps: even (2)
      { 2 ^ -26, 0x0000 },
      { 1 + 2 ^ -11, 0x3c00 },                   -- tie: stays at 1.0 (even)
      { 1 + 3 * 2 ^ -11, 0x3c02 },               -- tie: up to the even 1+2^-9
      { 1 + 2 ^ -11 + 2 ^ -20, 0x3c01 },         -- above the tie: up
      { 2048 + 1, 0x6800 }, { 2048 + 3, 0x6802 },
      { 0.1, 0x2e66 }, { 3.14159265, 0x4248 },
    }
    for _, c in ipairs(cases) do
      local got = rt.float_to_half(c[1])
      assert.are.equal(c[2], got, ("float_to_half(%.17g) = 0x%04x, want 0x%04x"):format(c[1], got, c[2]))
    end
    local nan = rt.float_to_half(0 / 0)
    assert.are.equal(0x7c00, bit.band(nan, 0x7c00))
    assert.are_not.equal(0, bit.band(nan, 0x3ff))
    assert.is_true(rt.half_to_float(0x7e00) ~= rt.half_to_float(0x7e00))
    assert.are.equal(65504, rt.half_to_float(0x7bff))
    assert.are.equal(2 ^ -24, rt.half_to_float(0x0001))
    assert.are.equal(-math.huge, rt.half_to_float(0xfc00))
  end)

  it("float16: matches a brute-force nearest-even search on random floats", function()
    -- Positive finite halves are monotonic in their bit patterns 0..0x7bff.
    math.randomseed(42)
    for _ = 1, 20000 do
      local x = to_f32(math.random() * 2 ^ math.random(-27, 16))
      local lo, hi = 0, 0x7bff
      while lo < hi do                       -- first half >= x
        local mid = math.floor((lo + hi) / 2)
        if rt.half_to_float(mid) < x then lo = mid + 1 else hi = mid end
      end
      local want
      if rt.half_to_float(lo) < x then       -- x above the largest finite half
        want = (x - 65504 >= 16) and 0x7c00 or 0x7bff
      elseif lo == 0 then
        want = 0
      else
        local a, b = lo - 1, lo
        local da, db = x - rt.half_to_float(a), rt.half_to_float(b) - x
        if da < db then want = a elseif db < da then want = b
        else want = (a % 2 == 0) and a or b end
      end
      local got = rt.float_to_half(x)
      if got ~= want then error(("float_to_half(%.17g) = 0x%04x, want 0x%04x"):format(x, got, want)) end
      assert.are.equal(bit.bor(want, 0x8000), rt.float_to_half(-x))
    end
  end)

  it("bfloat16: every non-NaN pattern round-trips; known values round to nearest even", function()
    for h = 0, 0xffff do
      local e, m = bit.band(bit.rshift(h, 7), 0xff), bit.band(h, 0x7f)
      if not (e == 0xff and m ~= 0) then
        local back = rt.float_to_bf16(rt.bf16_to_float(h))
        if back ~= h then error(("bf16 0x%04x -> 0x%04x"):format(h, back)) end
      end
    end
    local cases = {
      { 1.0, 0x3f80 }, { -1.0, 0xbf80 }, { 0.0, 0 }, { -0.0, 0x8000 },
      { 1 + 2 ^ -8, 0x3f80 },          -- tie: even (1.0)
      { 1 + 3 * 2 ^ -8, 0x3f82 },      -- tie: up to even
      { 1 + 2 ^ -8 + 2 ^ -20, 0x3f81 },
      { 3.0e38, 0x7f62 }, { 3.4028234663852886e38, 0x7f80 },  -- FLT_MAX rounds to inf
      { math.huge, 0x7f80 }, { -math.huge, 0xff80 }, { 2 ^ -133, 0x0001 },
      { 3.14159265, 0x4049 },
    }
    for _, c in ipairs(cases) do
      local got = rt.float_to_bf16(c[1])
      assert.are.equal(c[2], got, ("float_to_bf16(%.17g) = 0x%04x, want 0x%04x"):format(c[1], got, c[2]))
    end
    local nan = rt.float_to_bf16(0 / 0)
    assert.is_true(rt.bf16_to_float(nan) ~= rt.bf16_to_float(nan))
    -- random: the result is one of the two neighbours, the nearer one (ties even)
    math.randomseed(7)
    for _ = 1, 20000 do
      local x = to_f32((math.random() - 0.5) * 2 ^ math.random(-100, 100))
      local h = rt.float_to_bf16(x)
      local v = rt.bf16_to_float(h)
      local up, dn = rt.bf16_to_float(h + 1), rt.bf16_to_float(h - 1)
      local d = math.abs(v - x)
      assert.is_true(d <= math.abs(up - x) and d <= math.abs(dn - x), ("bf16 of %.17g"):format(x))
    end
  end)
end)

describe("cute.runtime argument checks (no driver needed)", function()
  it("names the function and the bad shape", function()
    assert.is_truthy(has(err_of(rt.empty, { 4, -1 }),
      "cute.empty: shape {4,-1}: dimension 2 is not a positive integer"))
    assert.is_truthy(has(err_of(rt.zeros, { 2.5 }), "cute.zeros: shape {2.5}: dimension 1 is not a positive integer"))
    assert.is_truthy(has(err_of(rt.empty, { 0 }), "dimension 1 is not a positive integer"))
    assert.is_truthy(has(err_of(rt.empty, "x"), "cute.empty: shape x is not a table"))
    assert.is_truthy(has(err_of(rt.empty, { 4, "8" }), "dimension 2"))
    assert.is_truthy(has(err_of(rt.empty, { 4 }, "float"), "cute.empty: float is not a dtype"))
  end)

  it("checks host data before touching the device", function()
    assert.is_truthy(has(err_of(rt.from_host, { 1, "a" }, rt.float32), "cute.from_host: element 2 is a string"))
    assert.is_truthy(has(err_of(rt.from_host, { { 1, 2 }, { 3 } }), "ragged"))
    assert.is_truthy(has(err_of(rt.from_host, { 1, 2, 3 }, rt.int32, { 2, 2 }),
      "shape {2,2} has 4 elements, the data 3"))
    assert.is_truthy(has(err_of(rt.from_host, 42), "not a table or an ffi array"))
    assert.is_truthy(has(err_of(rt.from_host, { true, {} }, rt.bool), "element 2"))
    assert.is_truthy(has(err_of(rt.from_host, ffi.new("float[4]"), rt.float32, { 8 }),
      "host array has 16 bytes"))
    assert.is_truthy(has(err_of(rt.from_host, ffi.cast("float *", nil), rt.float32), "pass a shape"))
  end)

  it("rejects bad devices, modules, launches and events", function()
    assert.is_truthy(has(err_of(rt.device, -1), "cute.device: device -1 is not a non-negative integer"))
    assert.is_truthy(has(err_of(rt.device, 0.5), "not a non-negative integer"))
    assert.is_truthy(has(err_of(rt.set_device, "0"), "cute.set_device"))
    assert.is_truthy(has(err_of(rt.load_module, nil), "cute.load_module: image is a nil"))
    assert.is_truthy(has(err_of(rt.load_module, ""), "not a non-empty string"))
    assert.is_truthy(has(err_of(rt.pinned, 0), "cute.pinned: n = 0"))
    assert.is_truthy(has(err_of(rt.elapsed_ms, 1, 2), "cute.elapsed_ms: expects two cute.event"))
    assert.is_truthy(has(err_of(rt.launch, nil, 1, 1, 0, nil, nil), "function is NULL"))
    assert.is_truthy(has(err_of(rt.launch, nil, "x", 1), "cute.launch: grid dims x"))
  end)

  it("formats driver errors with the name, the call and a hint", function()
    local m = rt.cuda_error_message(209, "cuModuleLoadDataEx")
    assert.is_truthy(has(m, "cuModuleLoadDataEx: CUDA_ERROR_NO_BINARY_FOR_GPU (209)"), m)
    assert.is_truthy(has(m, "compiled for another architecture"), m)
    m = rt.cuda_error_message(218, "cuModuleLoadDataEx")
    assert.is_truthy(has(m, "CUDA_ERROR_INVALID_PTX") and has(m, "JIT"), m)
    m = rt.cuda_error_message(2, "cuMemAlloc(8 bytes)")
    assert.is_truthy(has(m, "CUDA_ERROR_OUT_OF_MEMORY") and has(m, "out of memory"), m)
    for _, code in ipairs({ 700, 719 }) do
      m = rt.cuda_error_message(code, "cuCtxSynchronize")
      assert.is_truthy(has(m, "the kernel faulted: an out-of-bounds access?"), m)
      assert.is_truthy(has(m, "compute-sanitizer") and has(m, "for the life of the process: restart it"), m)
    end
    m = rt.cuda_error_message(1, "cuLaunchKernel(grid (1,1,1))")
    assert.is_truthy(has(m, "check grid/block dims and shared memory"), m)
    assert.is_falsy(has(rt.cuda_error_message(1, "cuMemsetD8"), "grid/block"))
    assert.is_truthy(has(rt.cuda_error_message(31337, "x"), "CUDA_ERROR_31337"))
    assert.are.equal("CUDA_ERROR_OUT_OF_MEMORY", ffi.string(C.cute_cuda_error_name(2)))
  end)

  it("without a driver every entry point raises 'no CUDA driver'", function()
    if HAVE_GPU then
      pending("this machine has a driver")
      return
    end
    assert.is_truthy(has(NO_GPU_REASON, "no CUDA driver") or has(NO_GPU_REASON, "CUDA"), NO_GPU_REASON)
    if not has(NO_GPU_REASON, "no CUDA driver") then return end  -- a driver but no device
    assert.is_truthy(has(NO_GPU_REASON, "dlopen(libcuda.so.1) failed: "), NO_GPU_REASON)
    for _, f in ipairs({
      function() return rt.empty({ 4 }) end,
      function() return rt.zeros({ 4, 4 }, rt.float16) end,
      function() return rt.from_host({ 1, 2, 3 }) end,
      function() return rt.device(0) end,
      function() return rt.device() end,
      function() return rt.device_count() end,
      function() return rt.synchronize() end,
      function() return rt.stream() end,
      function() return rt.event() end,
      function() return rt.load_module(PTX_ADD1) end,
      function() return rt.pinned(16) end,
      function() return rt.mem_info() end,
      function() return rt.launch(ffi.cast("void *", 1), 1, 1, 0, nil, nil) end,
    }) do
      local e = err_of(f)
      assert.is_truthy(has(e, "no CUDA driver: dlopen(libcuda.so.1) failed"), e)
    end
    local ok, why = rt.available()
    assert.is_false(ok)
    assert.is_string(why)
  end)
end)

describe("cute_cuda.h", function()
  local header = read_file("include/cute_cuda.h")

  it("CDEF block is plain C: no preprocessor lines; every function is exported", function()
    if not header then pending("include/cute_cuda.h not found (run from the repository root)") return end
    local block = header:match("/%* CDEF BEGIN cute_cuda%.h %*/(.-)/%* CDEF END %*/")
    assert.is_string(block)
    for line in block:gmatch("[^\n]+") do
      assert.is_falsy(line:match("^%s*#"), "preprocessor line in CDEF: " .. line)
    end
    local n = 0
    for name in block:gmatch("(cute_cuda_[%w_]+)%s*%(") do
      n = n + 1
      local ok = pcall(function() return C[name] end)
      assert.is_true(ok, name .. " is declared but not exported by the library")
    end
    assert.is_true(n >= 40, "found " .. n .. " functions")
    assert.are.equal(120, C.CUTE_CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
    assert.are.equal(8, C.CUTE_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    assert.are.equal(1024, ffi.sizeof("cute_err"))
  end)

  it("every public runtime function is documented in docs/RUNTIME.md", function()
    local doc = read_file("docs/RUNTIME.md")
    if not doc then pending("docs/RUNTIME.md not found") return end
    for k, v in pairs(rt) do
      if type(v) == "function" then
        assert.is_truthy(doc:find(k, 1, true), "cute." .. k .. " is not documented")
      end
    end
    if header then
      for name in header:gmatch("(cute_cuda_[%w_]+)%s*%(") do
        local stem = name:gsub("^cute_cuda_", "")
        assert.is_truthy(doc:find(name, 1, true) or doc:find(stem, 1, true) or
          doc:find(stem:match("^(%w+_)"), 1, true), name .. " is not documented")
      end
    end
  end)

  it("driver signatures, enum values and struct layouts match a real cuda.h", function()
    local cuda_h
    for _, dir in ipairs({ os.getenv("CUDA_HOME") and (os.getenv("CUDA_HOME") .. "/include"),
      "/usr/local/cuda/include", "/usr/include" }) do
      if dir and read_file(dir .. "/cuda.h") then cuda_h = dir break end
    end
    if not cuda_h or not header or not read_file("tests/cuda_abi.c") then
      pending("needs cuda.h and a C compiler (tests/cuda_abi.c)")
      return
    end
    local cmd = ("cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -I%s tests/cuda_abi.c 2>&1")
        :format(cuda_h)
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    if out:find("cc: not found", 1, true) or out:find("cc: command not found", 1, true) then
      pending("no C compiler")
      return
    end
    assert.are.equal("", out, cmd)
  end)
end)

describe("cute.runtime on a GPU", function()
  local mod, add1, noop

  local function kernels()
    if not mod then
      mod = rt.load_module(PTX_ADD1, true)
      add1 = mod:get_function("add1")
      noop = mod:get_function("noop")
    end
    return add1, noop
  end

  gpu_it("device properties are sane", function()
    assert.is_true(rt.device_count() >= 1)
    assert.is_true(rt.driver_version() >= 11000)
    local d = rt.device(0)
    assert.are.equal(d, rt.device())
    assert.is_string(d.name)
    assert.is_true(#d.name > 0)
    assert.is_true(d.cc.major >= 5 and d.cc.minor >= 0)
    assert.are.equal(d.cc.major, d.cc[1])
    assert.are.equal(("sm_%d%d"):format(d.cc.major, d.cc.minor), d.arch)
    assert.is_true(d.sm_count > 0)
    assert.are.equal(32, d.warp_size)
    assert.are.equal(1024, d.max_threads_per_block)
    assert.are.equal(49152, d.smem_per_block)
    assert.is_true(d.smem_per_block_optin >= d.smem_per_block)
    assert.is_true(d.smem_per_sm >= d.smem_per_block_optin)
    assert.is_true(d.l2_size >= 2 ^ 20)
    assert.is_true(d.total_mem >= 2 ^ 30)
    assert.is_true(d.clock_khz > 100000)
    assert.are.same({ 1024, 1024, 64 }, d.max_block_dim)
    assert.are.equal(2 ^ 31 - 1, d.max_grid_dim[1])
    if d.cc.major >= 9 then assert.is_true(d.cluster_launch) end
    local free, total = rt.mem_info()
    assert.is_true(free > 0 and free <= total and total <= d.total_mem + 2 ^ 20)
    assert.is_truthy(tostring(d):find("sm_", 1, true))
    print(("\n    %s, %s, %d SMs, smem/block %d (opt-in %d), smem/SM %d, L2 %d MiB, %.1f GiB, driver %d")
      :format(d.name, d.arch, d.sm_count, d.smem_per_block, d.smem_per_block_optin, d.smem_per_sm,
        d.l2_size / 2 ^ 20, d.total_mem / 2 ^ 30, rt.driver_version()))
  end, "the GPU's properties")

  local D = require("cute.dtype")
  local xfloat_names = { float8_e4m3fn = "f8e4m3", float8_e5m2 = "f8e5m2", tfloat32 = "tf32" }
  gpu_it("round-trips random data for every dtype (tables and ffi arrays)", function()
    math.randomseed(1234)
    local n = 1000
    for name, dt in pairs(rt.dtypes) do
      local vals = {}
      for i = 1, n do
        local v
        if dt.kind == "bool" then v = math.random() < 0.5
        elseif dt.kind == "half" then v = rt.half_to_float(math.random(0, 0x7bff)) * (math.random() < 0.5 and -1 or 1)
        elseif dt.kind == "bf16" then v = rt.bf16_to_float(math.random(0, 0x7f7f)) * (math.random() < 0.5 and -1 or 1)
        elseif dt.kind == "fp8" or dt.kind == "tf32" then
          -- (a value the dtype holds: a random float through its host conversion; the
          -- integer branch below made values such as 17 that e4m3 rounds)
          local enc, dec = D["float_to_" .. xfloat_names[name]], D[xfloat_names[name] .. "_to_float"]
          v = dec(enc((math.random() - 0.5) * 200))
        elseif name == "float32" then v = to_f32((math.random() - 0.5) * 1e6)
        elseif name == "float64" then v = (math.random() - 0.5) * 1e300
        else
          local bits = dt.size * 8
          local lo = dt.kind == "int" and -2 ^ (bits - 1) or 0
          local hi = dt.kind == "int" and 2 ^ (bits - 1) - 1 or 2 ^ bits - 1
          if bits == 64 then lo, hi = dt.kind == "int" and -2 ^ 52 or 0, 2 ^ 52 end
          v = lo + math.floor(math.random() * (hi - lo + 1))
          if v > hi then v = hi end
        end
        vals[i] = v
      end
      local t = rt.from_host(vals, dt)
      assert.are.same({ n }, t.shape)
      assert.are.same({ 1 }, t.strides)
      assert.are.equal(n, t:numel())
      assert.are.equal(n * dt.size, t:nbytes())
      assert.are.same(vals, t:to_table(), name)
      -- ffi array in, ffi array out: byte-identical
      local h = t:to_host()
      local t2 = rt.from_host(h, dt)
      local h2 = t2:to_host()
      assert.are.equal(ffi.string(h, n * dt.size), ffi.string(h2, n * dt.size), name)
      -- device to device
      local t3 = rt.empty({ 10, 100 }, dt)
      t3:copy_from(t2)
      assert.are.equal(ffi.string(h, n * dt.size), ffi.string(t3:to_host(), n * dt.size), name)
      assert.are.same({ 100, 1 }, t3.strides)
      t:free(); t2:free(); t3:free()
      t:free()  -- idempotent
      assert.are.equal(0ULL, t.ptr)
    end
  end)

  gpu_it("converts host data: nested tables, double arrays to float16, copy_from a table", function()
    local t = rt.from_host({ { 1, 2, 3 }, { 4, 5, 6 } }, rt.int32)
    assert.are.same({ 2, 3 }, t.shape)
    assert.are.same({ 3, 1 }, t.strides)
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, t:to_table())
    local d = ffi.new("double[4]", { 0.1, 1, 65504, 1e9 })
    local h = rt.from_host(d, rt.float16)
    assert.are.same({ rt.half_to_float(rt.float_to_half(0.1)), 1, 65504, math.huge }, h:to_table())
    h:copy_from({ 3, 2, 1, 0 })
    assert.are.same({ 3, 2, 1, 0 }, h:to_table())
    assert.is_truthy(has(err_of(h.copy_from, h, { 1, 2 }), "source has 2 elements, destination 4"))
    assert.is_truthy(has(err_of(t.copy_from, t, h), "dtype float16 does not match int32"))
    t:free()
    assert.is_truthy(has(err_of(t.to_host, t), "has been freed"))
    assert.is_truthy(tostring(h):find("cute.Tensor(float16, shape {4}", 1, true))
  end)

  gpu_it("memset: zeros and fill", function()
    local z = rt.zeros({ 3, 5 }, rt.float32)
    for _, v in ipairs(z:to_table()) do assert.are.equal(0, v) end
    z:fill(2.5)
    for _, v in ipairs(z:to_table()) do assert.are.equal(2.5, v) end
    local b = rt.empty(7, rt.bfloat16):fill(-1.5)
    assert.are.same({ -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5 }, b:to_table())
    local u = rt.empty(5, rt.uint8):fill(255)
    assert.are.same({ 255, 255, 255, 255, 255 }, u:to_table())
    local l = rt.empty(3, rt.int64):fill(-1)
    assert.are.same({ -1, -1, -1 }, l:to_table())
    assert.is_truthy(has(err_of(l.fill, l, 5), "64-bit fill"))
    local bo = rt.zeros(4, rt.bool):fill(true)
    assert.are.same({ true, true, true, true }, bo:to_table())
  end)

  gpu_it("async copies on a stream through pinned memory", function()
    local n = 2 ^ 20
    local s = rt.stream({ non_blocking = true })
    local src, dst = rt.pinned(n, rt.float32), rt.pinned(n, rt.float32)
    for i = 0, n - 1 do src[i] = i * 0.5 end
    local t, t2 = rt.empty(n), rt.empty(n)
    t:copy_from(src, s)
    t2:copy_from(t, s)
    t2:to_host(dst, s)
    s:synchronize()
    assert.is_true(s:query())
    assert.are.equal(ffi.string(src, n * 4), ffi.string(dst, n * 4))
    s:destroy()
    s:destroy()
  end, "rt.pinned calls cuMemHostAlloc directly (not routed to the CPU target yet)")

  gpu_it("events measure elapsed time > 0", function()
    local e0, e1 = rt.event(), rt.event()
    local t = rt.empty(2 ^ 26, rt.uint8)
    e0:record()
    for _ = 1, 10 do t:fill(7) end
    e1:record()
    e1:synchronize()
    assert.is_true(e1:query())
    local ms = rt.elapsed_ms(e0, e1)
    assert.is_true(ms > 0, "elapsed " .. ms)
    assert.are.equal(ms, e1:elapsed_ms(e0))
    local s = rt.stream()
    e0:record(s)
    s:wait(e0)
    e1:record(s)
    s:synchronize()
    assert.is_true(rt.elapsed_ms(e0, e1) >= 0)
    e0:destroy()
  end)

  gpu_it("10,000 alloc/free cycles leave no growth", function()
    rt.synchronize()
    collectgarbage("collect")
    local before = rt.mem_info()
    for _ = 1, 10000 do
      local t = rt.empty({ 256, 1024 }, rt.float32)   -- 1 MiB
      t:free()
    end
    for _ = 1, 10000 do
      local _ = rt.empty({ 64, 256 }, rt.float32)     -- 64 KiB, released by the GC
    end
    collectgarbage("collect")
    collectgarbage("collect")
    local after = rt.mem_info()
    assert.is_true(math.abs(before - after) <= 8 * 2 ^ 20,
      ("free memory %d -> %d"):format(before, after))
  end, "cute.mem_info is the GPU's free memory (cuMemGetInfo)")

  gpu_it("loads a PTX module and launches it (grid, block, stream)", function()
    local f = kernels()
    assert.is_string(mod.info_log)   -- empty when the driver's JIT cache had this PTX
    if mod.info_log ~= "" then assert.is_truthy(mod.info_log:find("add1", 1, true), mod.info_log) end
    local n = 1000003
    local vals = {}
    for i = 1, n do vals[i] = (i % 977) * 0.25 end
    local t = rt.from_host(vals, rt.float32)
    local pn = ffi.new("uint32_t[1]", n)
    local params = ffi.new("void *[2]", t.ptr_cell, pn)
    local block = 256
    local grid = math.ceil(n / block)
    rt.launch(f, grid, block, 0, nil, params)
    local s = rt.stream()
    f:launch({ grid, 1, 1 }, { block, 1, 1 }, 0, s, params)
    s:synchronize()
    local out = t:to_host()
    for i = 1, n do
      if out[i - 1] ~= vals[i] + 2 then error(("element %d: %g, want %g"):format(i, out[i - 1], vals[i] + 2)) end
    end
    assert.are.equal(f, mod:get_function("add1"))
  end, "loads PTX into the driver")

  gpu_it("surfaces the JIT error log for bad PTX", function()
    local e = err_of(rt.load_module, BAD_PTX, true)
    assert.is_truthy(has(e, "cuModuleLoadDataEx(PTX"), e)
    assert.is_truthy(has(e, "CUDA_ERROR_INVALID_PTX"), e)
    assert.is_truthy(has(e, "JIT log:"), e)
    assert.is_truthy(has(e, "frobnicate"), e)
    e = err_of(rt.load_module, "\127ELF garbage", false)
    assert.is_truthy(has(e, "CUDA_ERROR_INVALID_IMAGE") or has(e, "CUDA_ERROR_"), e)
    kernels()
    e = err_of(mod.get_function, mod, "nope")
    assert.is_truthy(has(e, "CUDA_ERROR_NOT_FOUND") and has(e, "nope"), e)
  end, "the driver's PTX JIT")

  gpu_it("a cubin for another architecture: NO_BINARY_FOR_GPU with the hint", function()
    local ptxas = os.getenv("PTXAS") or "ptxas"
    if not sh_ok(ptxas .. " --version >/dev/null 2>&1") then
      pending("no ptxas to build a cubin")
      return
    end
    local d = rt.device()
    local other = d.cc.major == 8 and "sm_90" or "sm_80"
    local tmp = os.tmpname()
    local function cubin(arch)
      local f = io.open(tmp .. ".ptx", "wb")
      f:write(PTX_ADD1)
      f:close()
      assert.is_true(sh_ok(("%s -arch=%s -o %s.cubin %s.ptx"):format(ptxas, arch, tmp, tmp)))
      local bin = read_file(tmp .. ".cubin")
      os.remove(tmp .. ".ptx"); os.remove(tmp .. ".cubin")
      return bin
    end
    local own = cubin(d.arch)
    assert.is_string(own)
    local m = rt.load_module(own)          -- detected as a cubin (ELF)
    local k = m:get_function("add1")
    assert.is_true(k:attributes().binary_version >= 50)
    m:unload()
    m:unload()
    assert.is_truthy(has(err_of(k.attributes, k), "unloaded module"))
    local e = err_of(rt.load_module, cubin(other))
    assert.is_truthy(has(e, "CUDA_ERROR_NO_BINARY_FOR_GPU"), e)
    assert.is_truthy(has(e, "compiled for another architecture"), e)
    assert.is_truthy(has(e, d.arch), e)
    os.remove(tmp)
  end, "cubins and the driver's errors")

  gpu_it("function attributes and the dynamic shared memory limit", function()
    local f = kernels()
    local a = f:attributes()
    assert.is_true(a.num_regs > 0 and a.num_regs <= 255)
    assert.is_true(a.max_threads_per_block >= 256)
    assert.are.equal(80, a.ptx_version)
    assert.are.equal(0, a.shared_size_bytes)
    assert.are.equal(a.num_regs, f:attribute("num_regs"))
    assert.are.equal(a.num_regs, f:attribute(C.CUTE_CU_FUNC_ATTRIBUTE_NUM_REGS))
    local optin = rt.device().smem_per_block_optin
    f:set_max_dynamic_smem(optin)
    assert.are.equal(optin, f:attribute("max_dynamic_shared_size_bytes"))
    local e = err_of(f.set_max_dynamic_smem, f, optin + 1024)
    assert.is_truthy(has(e, "opt-in") and has(e, tostring(optin)), e)
    -- launching with more dynamic shared memory than allowed
    local pn = ffi.new("uint32_t[1]", 0)
    local cell = ffi.new("uint64_t[1]", 0)
    local params = ffi.new("void *[2]", cell, pn)
    f:set_max_dynamic_smem(1024)
    e = err_of(rt.launch, f, 1, 32, 4096, nil, params)
    assert.is_truthy(has(e, "CUDA_ERROR_INVALID_VALUE") and has(e, "check grid/block dims"), e)
    e = err_of(rt.launch, f, 1, { 32, 64 }, 0, nil, params)
    assert.is_truthy(has(e, "2048 threads per block"), e)
    rt.launch(f, 1, 32, 1024, nil, params)
    rt.synchronize()
  end, "the driver's function attributes")

  gpu_it("occupancy queries", function()
    local f = kernels()
    local blocks = f:occupancy(256)
    assert.is_true(blocks >= 1 and blocks <= rt.device().max_blocks_per_sm)
    local bs, grid = f:max_potential_block_size()
    assert.is_true(bs >= 32 and bs <= 1024 and bs % 32 == 0)
    assert.is_true(grid >= rt.device().sm_count)
    local bs2 = f:max_potential_block_size(0, 128)
    assert.is_true(bs2 <= 128)
  end, "the driver's occupancy calculator")

  gpu_it("cluster launch where the device supports it", function()
    local f = kernels()
    local pn = ffi.new("uint32_t[1]", 0)
    local cell = ffi.new("uint64_t[1]", 0)
    local params = ffi.new("void *[2]", cell, pn)
    if not rt.device().cluster_launch then
      local e = err_of(rt.launch, f, 4, 32, 0, nil, params, { 2, 1, 1 })
      assert.is_truthy(has(e, "cluster"), e)
      return
    end
    rt.launch(f, 8, 32, 0, nil, params, { 2, 1, 1 })
    rt.launch(f, { 4, 2 }, 32, 0, nil, params, { 2, 2 })
    rt.synchronize()
    assert.is_truthy(has(err_of(rt.launch, f, 3, 32, 0, nil, params, 2), "not a multiple"))
  end, "cluster launch is the driver's")

  gpu_it("launch overhead from Lua vs a raw C cuLaunchKernel loop", function()
    local _, k = kernels()
    local n = 20000
    rt.bench_launch_c(k, 1000, 1, 32, 0, nil, nil, true)
    local raw = rt.bench_launch_c(k, n, 1, 32, 0, nil, nil, true)
    local wrapped = rt.bench_launch_c(k, n, 1, 32, 0, nil, nil, false)
    local launch = rt.launch
    for _ = 1, 1000 do launch(k, 1, 32, 0, nil, nil) end
    rt.synchronize()
    local t0 = rt.now_us()
    for _ = 1, n do launch(k, 1, 32, 0, nil, nil) end
    rt.synchronize()
    local lua = rt.now_us() - t0
    print(("\n    launch overhead (%d noop launches): raw C %.2f us, cute_cuda_launch from C %.2f us, "
      .. "cute.launch from Lua %.2f us per launch; Lua/raw = %.3f"):format(n, raw / n, wrapped / n,
      lua / n, lua / raw))
    assert.is_true(lua / raw < 2.0, ("Lua launch %.2f us vs raw %.2f us"):format(lua / n, raw / n))
  end, "timings of cuLaunchKernel")
end)
