-- cute.dlpack: DLPack in and out, without copies (docs/EMBED.md).
--
--   local t = cute.from_dlpack(p [, {kind = "managed"|"versioned"|"tensor"}])
--   local m = t:to_dlpack([{versioned = true, readonly = false}])
--
-- from_dlpack takes a DLManagedTensor* / DLManagedTensorVersioned* (it then
-- owns it and calls its deleter when the cute tensor is freed or collected)
-- or a DLTensor* (borrowed: the caller keeps the memory alive), as a typed
-- cdata pointer or as an address (number, uint64_t, void*, lightuserdata) with
-- opts.kind (default "managed", the legacy DLPack capsule's content).
-- to_dlpack returns a new DLManagedTensor* (or DLManagedTensorVersioned*)
-- for a consumer, which calls its deleter once; the memory stays alive until
-- both the cute tensor and every export have let go of it (a reference count
-- in C: src/dlpack.c).  The struct layouts are DLPack 1.1's
-- (include/cute_dlpack.h has the same for C).
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")
local dt = require("cute.dtype")
local mem = require("cute.memory")

local C, err, fail = cf.C, cf.err, cf.fail

if not pcall(ffi.typeof, "DLTensor") then
  ffi.cdef [[
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t *shape; int64_t *strides; uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version; void *manager_ctx; void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags; DLTensor dl_tensor;
} DLManagedTensorVersioned;
]]
end

local M = {}

M.kDLCPU, M.kDLCUDA, M.kDLCUDAHost, M.kDLCUDAManaged = 1, 2, 3, 13
M.FLAG_READ_ONLY, M.FLAG_IS_COPIED = 1, 2

-- device memory a kernel can use: CUDA, pinned host (mapped), managed
local usable = { [2] = "kDLCUDA", [3] = "kDLCUDAHost", [13] = "kDLCUDAManaged" }
local device_names = { [1] = "kDLCPU", [4] = "kDLOpenCL", [7] = "kDLVulkan", [8] = "kDLMetal",
  [10] = "kDLROCM", [11] = "kDLROCMHost", [14] = "kDLOneAPI" }

-- cute dtype name <-> DLPack (code, bits), derived from dtype.lua's one table
-- of scalar types: DLPack's type code by kind (kDLInt 0, kDLUInt 1, kDLFloat 2,
-- kDLBfloat 4, kDLBool 6) and, for the fp8 formats, DLPack 1.1's codes
-- (kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12); tf32 has no DLPack type
local KIND_CODE = { int = 0, uint = 1, half = 2, float = 2, bf16 = 4, bool = 6 }
local FP8_CODE = { f8e4m3 = 10, f8e5m2 = 12 }
local to_dl = {}
for name, d in pairs(dt.dtypes) do
  local code = d.kind == "fp8" and FP8_CODE[dt.scalars[d.scalar].ir] or KIND_CODE[d.kind]
  if code then to_dl[name] = { code, d.size * 8 } end
end
local from_dl = {}
for name, cb in pairs(to_dl) do
  if dt.dtypes[name] then from_dl[cb[1] * 256 + cb[2]] = name end
end
M.dtype_code = to_dl

local function dtype_of(d, F)
  if d.lanes ~= 1 then fail(("%s: dtype with %d lanes: only scalar element types (lanes 1) are supported"):format(F, d.lanes)) end
  local name = from_dl[d.code * 256 + d.bits]
  if not name then
    fail(("%s: DLPack dtype (code %d, bits %d) has no cute dtype (supported: %s)"):format(F, d.code, d.bits,
      "float16/32/64, bfloat16, int8..64, uint8..64, bool, float8_e4m3fn, float8_e5m2"))
  end
  return dt.dtypes[name]
end

-- shape, dtype, strides (elements) and the data address of a DLTensor.
-- any_device: accept any device type (compile-only descriptions).
function M.describe(t, F, any_device)
  local dev = tonumber(t.device.device_type)
  if not any_device and not usable[dev] then
    fail(("%s: the tensor is on device type %d (%s): kernels need device memory (kDLCUDA, kDLCUDAManaged or kDLCUDAHost)")
      :format(F, dev, device_names[dev] or "not a CUDA device"))
  end
  local nd = tonumber(t.ndim)
  if nd < 0 or nd > 64 then fail(("%s: ndim %d is not in 0..64"):format(F, nd)) end
  if nd > 0 and t.shape == nil then fail(("%s: ndim is %d but shape is NULL"):format(F, nd)) end
  local dtype = dtype_of(t.dtype, F)
  local shape, strides = {}, nil
  for i = 1, nd do
    local e = tonumber(t.shape[i - 1])
    if e < 1 then fail(("%s: shape[%d] = %d: cute tensors have no empty dimensions"):format(F, i - 1, e)) end
    shape[i] = e
  end
  if t.strides ~= nil and nd > 0 then
    strides = {}
    for i = 1, nd do
      local s = tonumber(t.strides[i - 1])
      if s < 0 then fail(("%s: strides[%d] = %d: negative strides are not supported"):format(F, i - 1, s)) end
      strides[i] = s
    end
  end
  if nd == 0 then shape, strides = { 1 }, nil end
  local addr = ffi.cast("uint64_t", t.data) + t.byte_offset
  return shape, dtype, strides, addr
end

local kinds = { managed = "DLManagedTensor *", versioned = "DLManagedTensorVersioned *", tensor = "DLTensor *" }

-- the pointer and its kind from a typed pointer or an address
local function pointer(x, opts, F)
  if type(x) == "cdata" then
    for kind, ct in pairs(kinds) do   -- a pointer, or the struct itself (ffi.new)
      if ffi.istype(ct, x) or ffi.istype(ct:sub(1, -3), x) then return ffi.cast(ct, x), kind end
    end
  end
  local kind = opts.kind or "managed"
  if not kinds[kind] then
    fail(("%s: opts.kind %s is not \"managed\", \"versioned\" or \"tensor\""):format(F, tostring(kind)))
  end
  local tx = type(x)
  local ok = tx == "userdata" or (tx == "number" and x > 0 and x % 1 == 0 and x < 2 ^ 53)
  if tx == "cdata" then ok = pcall(ffi.cast, "uint64_t", x) end
  if not ok then
    fail(("%s: %s is not a DLPack pointer (a DLManagedTensor*, DLManagedTensorVersioned*, DLTensor* or an address)")
      :format(F, tx == "cdata" and tostring(ffi.typeof(x)) or (tx .. " " .. tostring(x))))
  end
  if tx == "number" or tx == "cdata" then x = ffi.cast("uint64_t", x) end
  return ffi.cast(kinds[kind], x), kind
end

-- cute.from_dlpack(p [, opts]): a cute tensor over the DLPack tensor's memory.
function M.from_dlpack(x, opts)
  local F = "cute.from_dlpack"
  if opts ~= nil and type(opts) ~= "table" then fail(("%s: opts must be a table, got %s"):format(F, type(opts))) end
  opts = opts or {}
  local p, kind = pointer(x, opts, F)
  if p == nil then fail(F .. ": the pointer is NULL") end
  local t, readonly = nil, false
  if kind == "versioned" then
    if p.version.major ~= 1 then
      local v = ("%d.%d"):format(p.version.major, p.version.minor)
      C.cute_dl_delete(p, 1)  -- the DLPack rule: a consumer that cannot read it calls the deleter
      fail(("%s: DLPack version %s: this reads major version 1 (the tensor was released)"):format(F, v))
    end
    t = p.dl_tensor
    readonly = bit.band(tonumber(p.flags % 4), M.FLAG_READ_ONLY) ~= 0
  elseif kind == "managed" then
    t = p.dl_tensor
  else
    t = p[0]
  end
  local shape, dtype, strides, addr = M.describe(t, F)
  if addr == 0 then fail(F .. ": the tensor's data pointer is NULL") end
  local owner
  if kind ~= "tensor" then
    owner = C.cute_dl_owner_managed(p, kind == "versioned" and 1 or 0)
    if owner == nil then fail(F .. ": out of memory") end
    owner = ffi.gc(owner, C.cute_dl_owner_release)
  end
  local out = mem._view(addr, shape, dtype, strides, owner, F)
  out.readonly = readonly or nil
  out.device_id = tonumber(t.device.device_id)
  out.device_type = tonumber(t.device.device_type)
  -- device memory of one GPU (kDLCUDA): its ordinal is the tensor's device (the
  -- launch check); pinned and managed memory is addressable from every device
  if out.device_type == M.kDLCUDA then out.device = out.device_id end
  return out
end

-- t:to_dlpack([opts]): a new DLManagedTensor* ({versioned = true}:
-- DLManagedTensorVersioned*, with {readonly = true} setting its READ_ONLY flag)
-- viewing t's memory.  Hand it to a consumer, which calls its deleter.
function M.to_dlpack(t, opts)
  local F = "Tensor:to_dlpack"
  if not mem.is_tensor(t) then fail(F .. ": self is not a cute.Tensor (use t:to_dlpack())") end
  if opts ~= nil and type(opts) ~= "table" then fail(("%s: opts must be a table, got %s"):format(F, type(opts))) end
  opts = opts or {}
  if t.ptr == 0 then fail(F .. ": the tensor has been freed") end
  local cb = to_dl[t.dtype.name]
  if not cb then fail(("%s: dtype %s has no DLPack type code"):format(F, t.dtype.name)) end
  if t._ipc then
    fail(F .. ": the tensor is another process's memory (cute.from_ipc_handle): export the owner's tensor instead")
  end
  local owner = t._owner
  if not owner and not t._borrowed then
    -- first export of memory cute allocated: its release moves to a shared owner
    owner = C.cute_dl_owner_device(t.ptr_cell[0])
    if owner == nil then fail(F .. ": out of memory") end
    owner = ffi.gc(owner, C.cute_dl_owner_release)
    ffi.gc(t.ptr_cell, nil)
    t._owner = owner
  end
  local nd = #t.shape
  local shape, strides = ffi.new("int64_t[?]", nd), ffi.new("int64_t[?]", nd)
  for i = 1, nd do shape[i - 1], strides[i - 1] = t.shape[i], t.strides[i] end
  local v = ffi.new("DLTensor")
  v.data = ffi.cast("void *", t.ptr)
  v.device.device_type = t.device_type or M.kDLCUDA
  v.device.device_id = t.device or t.device_id or math.max(0, require("cute.runtime").current_device())
  v.ndim = nd
  v.dtype.code, v.dtype.bits, v.dtype.lanes = cb[1], cb[2], 1
  v.shape, v.strides = shape, strides
  local versioned = opts.versioned == true
  local flags = (opts.readonly or t.readonly) and M.FLAG_READ_ONLY or 0
  local out = C.cute_dl_export(v, owner, versioned and 1 or 0, flags, err)
  if out == nil then cf.fail_err(F) end
  return ffi.cast(versioned and "DLManagedTensorVersioned *" or "DLManagedTensor *", out)
end

-- the number of exports whose deleter has not run (for tests)
function M.live_exports() return tonumber(C.cute_dl_live_exports()) end

return M
