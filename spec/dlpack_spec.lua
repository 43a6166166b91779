-- DLPack in and out (lua/cute/dlpack.lua, src/dlpack.c, docs/EMBED.md): the
-- struct layouts of DLPack 1.1, imports of DLManagedTensor /
-- DLManagedTensorVersioned / DLTensor with their ownership, exports and their
-- deleters, dtype codes both ways, and the errors.  Host-side structs need no
-- GPU; the #gpu specs move real device memory across.
local cute = require("cute")
local ffi = require("ffi")
local dl = require("cute.dlpack")
local util = dofile("spec/support/util.lua")
local gpu_it, err_of = util.gpu_it, util.err_of

-- a foreign DLManagedTensor (what another framework hands over), with a
-- deleter that counts its calls
local deleted = 0
local deleter = ffi.cast("void (*)(DLManagedTensor *)", function() deleted = deleted + 1 end)
local vdeleter = ffi.cast("void (*)(DLManagedTensorVersioned *)", function() deleted = deleted + 1 end)
local keep = {}
local function foreign(opts)
  opts = opts or {}
  local shape = opts.shape or { 4, 6 }
  local nd = #shape
  local sh, st = ffi.new("int64_t[?]", math.max(nd, 1)), ffi.new("int64_t[?]", math.max(nd, 1))
  for i = 1, nd do sh[i - 1] = shape[i] end
  if opts.strides then for i = 1, nd do st[i - 1] = opts.strides[i] end end
  local m = ffi.new(opts.versioned and "DLManagedTensorVersioned" or "DLManagedTensor")
  keep[#keep + 1] = { m, sh, st }
  local t = m.dl_tensor
  t.data = ffi.cast("void *", opts.data or 0x7f0000000000)
  t.device.device_type = opts.device_type or dl.kDLCUDA
  t.device.device_id = opts.device_id or 0
  t.ndim = nd
  t.dtype.code, t.dtype.bits, t.dtype.lanes = opts.code or 2, opts.bits or 32, opts.lanes or 1
  t.shape = sh
  t.strides = opts.strides and st or nil
  t.byte_offset = opts.byte_offset or 0
  if opts.versioned then
    m.version.major, m.version.minor = opts.major or 1, 1
    m.flags = opts.flags or 0
    m.deleter = vdeleter
  else
    m.deleter = deleter
  end
  return ffi.cast(opts.versioned and "DLManagedTensorVersioned *" or "DLManagedTensor *", m)
end

describe("DLPack structs", function()
  it("have DLPack 1.1's layout (as include/cute_dlpack.h)", function()
    assert.are.equal(48, ffi.sizeof("DLTensor"))
    assert.are.same({ 0, 8, 16, 20, 24, 32, 40 }, {
      ffi.offsetof("DLTensor", "data"), ffi.offsetof("DLTensor", "device"), ffi.offsetof("DLTensor", "ndim"),
      ffi.offsetof("DLTensor", "dtype"), ffi.offsetof("DLTensor", "shape"), ffi.offsetof("DLTensor", "strides"),
      ffi.offsetof("DLTensor", "byte_offset") })
    assert.are.equal(64, ffi.sizeof("DLManagedTensor"))
    assert.are.equal(56, ffi.offsetof("DLManagedTensor", "deleter"))
    assert.are.equal(80, ffi.sizeof("DLManagedTensorVersioned"))
    assert.are.same({ 8, 16, 24, 32 }, { ffi.offsetof("DLManagedTensorVersioned", "manager_ctx"),
      ffi.offsetof("DLManagedTensorVersioned", "deleter"), ffi.offsetof("DLManagedTensorVersioned", "flags"),
      ffi.offsetof("DLManagedTensorVersioned", "dl_tensor") })
  end)
end)

describe("cute.from_dlpack", function()
  it("views a DLManagedTensor's memory and calls its deleter once, at t:free()", function()
    local m = foreign({ shape = { 4, 6 }, byte_offset = 512 })
    local before = deleted
    local t = cute.from_dlpack(m)
    assert.are.equal(cute.float32, t.dtype)
    assert.are.same({ 4, 6 }, t.shape)
    assert.are.same({ 6, 1 }, t.strides)               -- NULL strides: row-major
    assert.are.equal(0x7f0000000000 + 512, tonumber(t.ptr))
    assert.are.equal(before, deleted)
    t:free()
    assert.are.equal(before + 1, deleted)
    t:free()
    assert.are.equal(before + 1, deleted)
  end)

  it("calls the deleter when the tensor is collected", function()
    local before = deleted
    do local _ = cute.from_dlpack(foreign()) end
    collectgarbage(); collectgarbage()
    assert.are.equal(before + 1, deleted)
  end)

  it("takes DLManagedTensorVersioned with its read-only flag, and addresses with a kind", function()
    local before = deleted
    local m = foreign({ versioned = true, flags = dl.FLAG_READ_ONLY, shape = { 8 } })
    local t = cute.from_dlpack(ffi.cast("uintptr_t", m), { kind = "versioned" })
    assert.is_true(t.readonly)
    assert.are.same({ 8 }, t.shape)
    t:free()
    assert.are.equal(before + 1, deleted)
  end)

  it("borrows a DLTensor: strides kept, nothing released", function()
    local m = foreign({ shape = { 3, 5 }, strides = { 1, 3 } })
    local before = deleted
    local t = cute.from_dlpack(ffi.cast("DLTensor *", m))
    assert.are.same({ 1, 3 }, t.strides)
    t:free()
    assert.are.equal(before, deleted)
  end)

  it("maps every DLPack dtype code both ways", function()
    local n = 0
    for name, cb in pairs(dl.dtype_code) do
      if cute.dtypes[name] then
        local t = cute.from_dlpack(foreign({ code = cb[1], bits = cb[2], shape = { 2 } }))
        assert.are.equal(name, t.dtype.name)
        local out = t:to_dlpack()
        assert.are.same({ cb[1], cb[2], 1 }, { out.dl_tensor.dtype.code, out.dl_tensor.dtype.bits, out.dl_tensor.dtype.lanes })
        out.deleter(out)
        t:free()
        n = n + 1
      end
    end
    assert.is_true(n >= 14, "dtypes mapped: " .. n)
  end)

  it("feeds kernels: an imported tensor compiles like a device tensor", function()
    local k = cute.kernel(function(X, Y) local i = cute.arch.thread_idx(); Y[i] = X[i] + 1 end)
    local x = cute.from_dlpack(foreign({ shape = { 64 }, data = 0x7f0000000000 }))
    local y = cute.from_dlpack(foreign({ shape = { 64 }, data = 0x7f0000100000 }))
    assert.is_truthy(k:ptx(x, y):find(".entry", 1, true))
    x:free(); y:free()
  end)

  it("refuses what a kernel cannot use, naming the value", function()
    local cases = {
      { { device_type = dl.kDLCPU }, "device type 1 (kDLCPU)" },
      { { lanes = 4 }, "4 lanes" },
      { { code = 5, bits = 64 }, "(code 5, bits 64) has no cute dtype" },
      { { shape = { 4, 0 } }, "shape[1] = 0" },
      { { shape = { 4, 2 }, strides = { -2, 1 } }, "strides[0] = -2" },
      { { data = 0 }, "data pointer is NULL" },
    }
    for _, c in ipairs(cases) do
      local before = deleted
      local e = err_of(function() cute.from_dlpack(foreign(c[1])) end)
      assert.is_truthy(e:find("cute.from_dlpack: ", 1, true) and e:find(c[2], 1, true), e)
      assert.is_truthy(e:find("dlpack_spec.lua:", 1, true), e)    -- at the caller's line
      assert.are.equal(before, deleted)                           -- the caller still owns it
    end
    local e = err_of(function() cute.from_dlpack(42.5) end)
    assert.is_truthy(e:find("number 42.5 is not a DLPack pointer", 1, true), e)
    e = err_of(function() cute.from_dlpack(1234, { kind = "capsule" }) end)
    assert.is_truthy(e:find('opts.kind capsule is not "managed"', 1, true), e)
  end)

  it("a major version it cannot read: the deleter is called (DLPack's rule) and the error says so", function()
    local before = deleted
    local e = err_of(function() cute.from_dlpack(foreign({ versioned = true, major = 2 })) end)
    assert.is_truthy(e:find("DLPack version 2.1", 1, true), e)
    assert.are.equal(before + 1, deleted)
  end)
end)

describe("t:to_dlpack", function()
  it("exports a view; the foreign memory lives until both the tensor and the export let go", function()
    local before, live = deleted, dl.live_exports()
    local t = cute.from_dlpack(foreign({ shape = { 16, 8 }, code = 4, bits = 16 }))
    local out = t:to_dlpack({ versioned = true, readonly = true })
    assert.are.equal(live + 1, dl.live_exports())
    assert.are.equal(1, out.version.major)
    assert.are.equal(dl.FLAG_READ_ONLY, tonumber(out.flags))
    assert.are.same({ 16, 8, 8, 1 }, { tonumber(out.dl_tensor.shape[0]), tonumber(out.dl_tensor.shape[1]),
      tonumber(out.dl_tensor.strides[0]), tonumber(out.dl_tensor.strides[1]) })
    assert.are.equal(tonumber(t.ptr), tonumber(ffi.cast("uintptr_t", out.dl_tensor.data)))
    t:free()
    assert.are.equal(before, deleted)            -- the export still holds it
    out.deleter(out)
    assert.are.equal(before + 1, deleted)
    assert.are.equal(live, dl.live_exports())
    -- imported back: a round trip of the export
    local src = cute.from_ptr(0x7f0000200000, { 3, 4 }, cute.int16, { 1, 3 })
    local back = cute.from_dlpack(src:to_dlpack())
    assert.are.same({ src.dtype, src.shape, src.strides, tonumber(src.ptr) },
      { back.dtype, back.shape, back.strides, tonumber(back.ptr) })
    back:free()
    assert.are.equal(live, dl.live_exports())
  end)

  it("errors name the tensor's problem", function()
    local e = err_of(function() dl.to_dlpack({}) end)
    assert.is_truthy(e:find("Tensor:to_dlpack: self is not a cute.Tensor", 1, true), e)
    local t = cute.from_ptr(0x7f0000000000, { 4 }, cute.tfloat32)
    e = err_of(function() t:to_dlpack() end)
    assert.is_truthy(e:find("dtype tfloat32 has no DLPack type code", 1, true), e)
    t:free()
    e = err_of(function() t:to_dlpack() end)
    assert.is_truthy(e:find("has been freed", 1, true), e)
  end)

  it("a strided view refuses host transfers, naming its strides", function()
    local t = cute.from_ptr(0x7f0000000000, { 4, 4 }, cute.float32, { 1, 4 })
    local e = err_of(function() t:to_host() end)
    assert.is_truthy(e:find("Tensor:to_host: the tensor has strides {1,4}", 1, true), e)
    e = err_of(function() cute.from_ptr(0, { 4 }, cute.float32) end)
    assert.is_truthy(e:find("cute.from_ptr: ptr 0 is not a non-zero device address", 1, true), e)
    e = err_of(function() cute.from_ptr(4096, { 4, 4 }, cute.float32, { 1 }) end)
    assert.is_truthy(e:find("1 strides for a shape of rank 2", 1, true), e)
  end)
end)

describe("DLPack on the GPU", function()
  gpu_it("device memory crosses both ways without copies; freed after the last holder", function()
    local n = 4096
    local host = {}
    for i = 1, n do host[i] = i * 0.5 end
    local a = cute.from_host(host, cute.float32, { n })
    local live = dl.live_exports()
    local m = a:to_dlpack()
    local b = cute.from_dlpack(m)                 -- the consumer side, here cute again
    assert.are.equal(tonumber(a.ptr), tonumber(b.ptr))
    a:free()                                      -- b's export keeps the memory
    local k = cute.kernel(function(X) local i = cute.arch.block_idx() * 256 + cute.arch.thread_idx(); X[i] = X[i] * 2 end)
    k:launch{ grid = n / 256, block = 256 }(b)
    local out = b:to_table()
    assert.are.equal(2 * 0.5, out[1])
    assert.are.equal(n, out[n])
    b:free()                                      -- the last holder: cuMemFree
    assert.are.equal(live, dl.live_exports())
  end)

  util.device_it("the memory is freed when the last holder lets go, not before",
    "cute.mem_info is the GPU's free memory (cuMemGetInfo)", function()
    local bytes = 256 * 1024 * 1024
    local free0 = cute.mem_info()
    local a = cute.empty({ bytes / 4 }, cute.float32)
    local m = a:to_dlpack()
    a:free()
    local free1 = cute.mem_info()
    assert.is_true(free0 - free1 >= bytes / 2, ("still allocated: %d bytes free before, %d after"):format(free0, free1))
    m.deleter(m)
    local free2 = cute.mem_info()
    assert.is_true(free2 - free1 >= bytes / 2, ("released: %d bytes free, %d before"):format(free2, free1))
  end)

  gpu_it("a tensor exported twice, consumers released in any order", function()
    local a = cute.zeros({ 1024 }, cute.int32)
    local m1, m2 = a:to_dlpack(), a:to_dlpack({ versioned = true })
    a:free()
    local t2 = cute.from_dlpack(m2)
    m1.deleter(m1)
    t2:fill(7)
    assert.are.equal(7, t2:to_table()[1024])
    t2:free()
  end)
end)
