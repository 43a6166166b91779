-- cute.runtime: the CUDA runtime seen from Lua -- devices, streams, events,
-- dtypes, device tensors, modules and kernel launch.  Merged into `cute` by
-- cute/init.lua; usable alone as require("cute.runtime").
--
-- Nothing touches the driver until a function needs it; without a driver
-- those functions raise "no CUDA driver: dlopen(libcuda.so.1) failed: ...".
-- The C side is include/cute_cuda.h; docs/RUNTIME.md is the reference.
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")

local C = cf.C
local err = cf.err
local band, bor, rshift, lshift = bit.band, bit.bor, bit.rshift, bit.lshift
local floor, huge = math.floor, math.huge

local M = {}

local function check(status, level)
  if status ~= 0 then error(ffi.string(err[0].msg), (level or 2) + 1) end
end

local function argerror(fname, fmt, ...)
  error(fname .. ": " .. fmt:format(...), 3)
end

local voidpp = ffi.typeof("void *[1]")
local u64p = ffi.typeof("uint64_t[1]")
local intp = ffi.typeof("int[1]")
local floatp = ffi.typeof("float[1]")
local u64 = ffi.typeof("uint64_t")

-- ---------------------------------------------------------------------------
-- driver, devices
-- ---------------------------------------------------------------------------

-- true if a driver and a device are usable; else false and the reason.
function M.available()
  local e = ffi.new("cute_err[1]")
  if C.cute_cuda_available(e) == 1 then return true end
  return false, ffi.string(e[0].msg)
end

function M.init() check(C.cute_cuda_init(err)) end

function M.driver_version()
  local v = intp()
  check(C.cute_cuda_driver_version(v, err))
  return v[0]
end

function M.device_count()
  local v = intp()
  check(C.cute_cuda_device_count(v, err))
  return v[0]
end

local Device = {}
Device.__index = Device
function Device:__tostring()
  return ("cute.device(%d): %s, sm_%d%d, %d SMs, %.1f GiB"):format(self.ordinal, self.name,
    self.cc.major, self.cc.minor, self.sm_count, self.total_mem / 2 ^ 30)
end
-- Make this device current in the calling thread.
function Device:set() M.set_device(self.ordinal) return self end
function Device:synchronize() self:set() check(C.cute_cuda_synchronize(err)) end
-- A raw CUdevice_attribute (number) of this device.
function Device:attribute(attr)
  local v = intp()
  check(C.cute_cuda_device_attribute(self.ordinal, attr, v, err))
  return v[0]
end

local devices = {}

-- cute.device(i): properties of device i (default: this thread's current
-- device, 0 unless set_device chose another).  Cached per device.
function M.device(i)
  if i == nil then
    local v = intp()
    check(C.cute_cuda_get_device(v, err))
    i = v[0]
  end
  if type(i) ~= "number" or i ~= floor(i) or i < 0 then
    argerror("cute.device", "device %s is not a non-negative integer", tostring(i))
  end
  if devices[i] then return devices[i] end
  local p = ffi.new("cute_cuda_device_info")
  check(C.cute_cuda_device_props(i, p, err))
  local d = setmetatable({
    ordinal = i, name = ffi.string(p.name),
    cc = { major = p.cc_major, minor = p.cc_minor, p.cc_major, p.cc_minor },
    arch = ("sm_%d%d"):format(p.cc_major, p.cc_minor),
    sm_count = p.sm_count, warp_size = p.warp_size,
    max_threads_per_block = p.max_threads_per_block,
    max_block_dim = { p.max_block_dim[0], p.max_block_dim[1], p.max_block_dim[2] },
    max_grid_dim = { p.max_grid_dim[0], p.max_grid_dim[1], p.max_grid_dim[2] },
    max_threads_per_sm = p.max_threads_per_sm, max_blocks_per_sm = p.max_blocks_per_sm,
    regs_per_block = p.regs_per_block, regs_per_sm = p.regs_per_sm,
    smem_per_block = p.smem_per_block, smem_per_block_optin = p.smem_per_block_optin,
    smem_per_sm = p.smem_per_sm, smem_reserved_per_block = p.smem_reserved_per_block,
    const_mem = p.const_mem, l2_size = p.l2_size, clock_khz = p.clock_khz,
    mem_clock_khz = p.mem_clock_khz, mem_bus_width = p.mem_bus_width,
    cluster_launch = p.cluster_launch ~= 0, integrated = p.integrated ~= 0,
    pci_bus_id = p.pci_bus_id, pci_device_id = p.pci_device_id,
    total_mem = tonumber(p.total_mem),
  }, Device)
  devices[i] = d
  return d
end

function M.set_device(i)
  if type(i) ~= "number" or i ~= floor(i) or i < 0 then
    argerror("cute.set_device", "device %s is not a non-negative integer", tostring(i))
  end
  M.context.device = false
  check(M._driver.cute_cuda_set_device(i, err))
  M.context.device = i
end

-- Wait for all work on the current device.
function M.synchronize() check(C.cute_cuda_synchronize(err)) end

-- free, total bytes of the current device.
function M.mem_info()
  local f, t = u64p(), u64p()
  check(C.cute_cuda_mem_info(f, t, err))
  return tonumber(f[0]), tonumber(t[0])
end

-- ---------------------------------------------------------------------------
-- streams and events
-- ---------------------------------------------------------------------------

local function destroy_stream(h) C.cute_cuda_stream_destroy(h, nil) end
local function destroy_event(h) C.cute_cuda_event_destroy(h, nil) end

local Stream = {}
Stream.__index = Stream
Stream.__tostring = function(s) return ("cute.stream(%s)"):format(tostring(s.handle)) end
function Stream:synchronize() check(C.cute_cuda_stream_synchronize(self.handle, err)) end
-- true if all work queued so far has finished.
function Stream:query()
  local d = intp()
  check(C.cute_cuda_stream_query(self.handle, d, err))
  return d[0] == 1
end
-- Later work on this stream waits for `ev` (an event).
function Stream:wait(ev) check(C.cute_cuda_stream_wait_event(self.handle, ev.handle, err)) end
function Stream:destroy()
  local h = self.handle
  if h ~= nil then
    self.handle = nil
    ffi.gc(h, nil)
    check(C.cute_cuda_stream_destroy(h, err))
  end
end

-- cute.stream{non_blocking = true}: a new stream, destroyed when collected
-- or by s:destroy().  cute.default_stream is the legacy NULL stream.
function M.stream(opts)
  local flags = (opts and opts.non_blocking) and C.CUTE_CU_STREAM_NON_BLOCKING or 0
  local out = voidpp()
  check(C.cute_cuda_stream_create(out, flags, err))
  return setmetatable({ handle = ffi.gc(out[0], destroy_stream) }, Stream)
end

M.default_stream = setmetatable({ handle = nil }, Stream)

local function stream_handle(s, fname)
  if s == nil then return nil end
  if getmetatable(s) == Stream then return s.handle end
  if type(s) == "cdata" then return s end
  argerror(fname, "stream %s is not a cute.stream", tostring(s))
end

local Event = {}
Event.__index = Event
Event.__tostring = function(e) return ("cute.event(%s)"):format(tostring(e.handle)) end
function Event:record(stream)
  check(C.cute_cuda_event_record(self.handle, stream_handle(stream, "event:record"), err))
  return self
end
function Event:synchronize() check(C.cute_cuda_event_synchronize(self.handle, err)) end
function Event:query()
  local d = intp()
  check(C.cute_cuda_event_query(self.handle, d, err))
  return d[0] == 1
end
-- Milliseconds from `start` (recorded earlier) to this event.
function Event:elapsed_ms(start) return M.elapsed_ms(start, self) end
function Event:destroy()
  local h = self.handle
  if h ~= nil then
    self.handle = nil
    ffi.gc(h, nil)
    check(C.cute_cuda_event_destroy(h, err))
  end
end

-- cute.event{blocking = true, timing = false}
function M.event(opts)
  local flags = 0
  if opts and opts.blocking then flags = bor(flags, C.CUTE_CU_EVENT_BLOCKING_SYNC) end
  if opts and opts.timing == false then flags = bor(flags, C.CUTE_CU_EVENT_DISABLE_TIMING) end
  local out = voidpp()
  check(C.cute_cuda_event_create(out, flags, err))
  return setmetatable({ handle = ffi.gc(out[0], destroy_event) }, Event)
end

-- Milliseconds between two recorded events (waits for e1).
function M.elapsed_ms(e0, e1)
  if getmetatable(e0) ~= Event or getmetatable(e1) ~= Event then
    argerror("cute.elapsed_ms", "expects two cute.event objects, got %s and %s", type(e0), type(e1))
  end
  check(C.cute_cuda_event_synchronize(e1.handle, err))
  local ms = floatp()
  check(C.cute_cuda_event_elapsed_ms(e0.handle, e1.handle, ms, err))
  return ms[0]
end

-- ---------------------------------------------------------------------------
-- dtypes and half / bfloat16 conversion
-- ---------------------------------------------------------------------------

local bits32 = ffi.new("union { float f; uint32_t u; }")

-- float32 bit pattern -> IEEE half bit pattern, round to nearest even.
local function f32bits_to_half(u)
  local sign = band(rshift(u, 16), 0x8000)
  local exp = band(rshift(u, 23), 0xff)
  local mant = band(u, 0x7fffff)
  if exp == 255 then                                   -- inf / nan (kept quiet)
    if mant == 0 then return sign + 0x7c00 end
    return sign + bor(0x7e00, rshift(mant, 13))
  end
  local e = exp - 112                                  -- rebias 127 -> 15
  if e >= 31 then return sign + 0x7c00 end             -- overflow -> inf
  if e <= 0 then                                       -- half subnormal or zero
    if e < -10 then return sign end
    mant = mant + 0x800000
    local shift = 14 - e
    local h = rshift(mant, shift)
    local rem, halfway = band(mant, lshift(1, shift) - 1), lshift(1, shift - 1)
    if rem > halfway or (rem == halfway and band(h, 1) == 1) then h = h + 1 end
    return sign + h
  end
  local h = e * 1024 + rshift(mant, 13)
  local rem = band(mant, 0x1fff)
  if rem > 0x1000 or (rem == 0x1000 and band(h, 1) == 1) then h = h + 1 end  -- may carry to inf
  return sign + h
end

-- Lua number -> float16 bits (uint16 value), round to nearest even.  (The
-- number is first rounded to float32; that double rounding is exact for
-- float16 and bfloat16 because float32 has more than 2p+1 bits.)
function M.float_to_half(x)
  bits32.f = x
  return f32bits_to_half(bits32.u)
end

function M.half_to_float(h)
  local sign = band(h, 0x8000) ~= 0 and -1 or 1
  local e, m = band(rshift(h, 10), 0x1f), band(h, 0x3ff)
  if e == 0 then return sign * m * 2 ^ -24 end
  if e == 31 then return m == 0 and sign * huge or 0 / 0 end
  return sign * (1024 + m) * 2 ^ (e - 25)
end

function M.float_to_bf16(x)
  bits32.f = x
  local u = bits32.u
  if band(u, 0x7f800000) == 0x7f800000 and band(u, 0x7fffff) ~= 0 then
    return bor(rshift(u, 16), 0x40)                    -- quiet nan
  end
  return band(rshift(u + 0x7fff + band(rshift(u, 16), 1), 16), 0xffff)
end

function M.bf16_to_float(h)
  if band(h, 0x7f80) == 0x7f80 and band(h, 0x7f) ~= 0 then return 0 / 0 end
  bits32.u = band(h, 0xffff) * 65536
  return bits32.f
end

local Dtype = {}
Dtype.__index = Dtype
Dtype.__tostring = function(d) return "cute." .. d.name end

local dtype_list = {}
M.dtypes = {}
-- name, bytes, host ctype, kind ("float", "int", "uint", "bool", "half", "bf16")
for _, row in ipairs({
  { "float32", 4, "float", "float" }, { "float16", 2, "uint16_t", "half" },
  { "bfloat16", 2, "uint16_t", "bf16" }, { "float64", 8, "double", "float" },
  { "int8", 1, "int8_t", "int" }, { "int16", 2, "int16_t", "int" },
  { "int32", 4, "int32_t", "int" }, { "int64", 8, "int64_t", "int" },
  { "uint8", 1, "uint8_t", "uint" }, { "uint16", 2, "uint16_t", "uint" },
  { "uint32", 4, "uint32_t", "uint" }, { "uint64", 8, "uint64_t", "uint" },
  { "bool", 1, "bool", "bool" },
}) do
  local name, size, ctype, kind = row[1], row[2], row[3], row[4]
  local d = setmetatable({
    name = name, size = size, ctype = ctype, kind = kind,
    is_float = kind == "float" or kind == "half" or kind == "bf16",
    ct = ffi.typeof(ctype), arr = ffi.typeof(ctype .. "[?]"), ptr = ffi.typeof(ctype .. " *"),
    elem = tostring(ffi.typeof(ctype)):match("^ctype<(.*)>$"),
  }, Dtype)
  if kind == "half" then
    d.from_number, d.to_number = M.float_to_half, M.half_to_float
  elseif kind == "bf16" then
    d.from_number, d.to_number = M.float_to_bf16, M.bf16_to_float
  end
  M[name] = d
  M.dtypes[name] = d
  dtype_list[#dtype_list + 1] = name
end
local dtype_names = table.concat(dtype_list, ", ")

-- A dtype from a dtype table or its name; nil -> float32.
local function to_dtype(x, fname)
  if x == nil then return M.float32 end
  if getmetatable(x) == Dtype then return x end
  if type(x) == "string" and M.dtypes[x] then return M.dtypes[x] end
  error(("%s: %s is not a dtype (one of %s)"):format(fname, tostring(x), dtype_names), 4)
end
function M.dtype(x) return to_dtype(x, "cute.dtype") end

-- ---------------------------------------------------------------------------
-- tensors
-- ---------------------------------------------------------------------------

local function fmt_shape(shape)
  if type(shape) ~= "table" then return tostring(shape) end
  local parts = {}
  for i = 1, #shape do parts[i] = tostring(shape[i]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- shape (number or table of positive integers) -> shape table (copied), numel
local function check_shape(shape, fname)
  if type(shape) == "number" then shape = { shape } end
  if type(shape) ~= "table" then
    error(("%s: shape %s is not a table of positive integers"):format(fname, tostring(shape)), 4)
  end
  local out, n = {}, 1
  for k in pairs(shape) do
    if type(k) ~= "number" or k < 1 or k > #shape or k ~= floor(k) then
      error(("%s: shape %s: key %s is not a dimension index"):format(fname, fmt_shape(shape),
        tostring(k)), 4)
    end
  end
  for i = 1, #shape do
    local d = shape[i]
    if type(d) ~= "number" or d < 1 or d ~= floor(d) or d >= 2 ^ 53 then
      error(("%s: shape %s: dimension %d is not a positive integer"):format(fname,
        fmt_shape(shape), i), 4)
    end
    out[i], n = d, n * d
  end
  return out, n
end

local function row_major_strides(shape)
  local st, s = {}, 1
  for i = #shape, 1, -1 do st[i], s = s, s * shape[i] end
  return st
end

local function free_cell(cell)
  local p = cell[0]
  if p ~= 0 then
    cell[0] = 0
    C.cute_cuda_free(p, nil)
  end
end

local Tensor = {}
Tensor.__index = Tensor

function M.is_tensor(x) return getmetatable(x) == Tensor end

local function alloc(shape, dtype, fname)
  local shp, n = check_shape(shape, fname)
  dtype = to_dtype(dtype, fname)
  local bytes = n * dtype.size
  local cell = u64p()
  check(C.cute_cuda_malloc(cell, bytes, err), 3)
  ffi.gc(cell, free_cell)
  return setmetatable({
    shape = shp, strides = row_major_strides(shp), dtype = dtype,
    ptr = u64(cell[0]),       -- device address (uint64_t)
    ptr_cell = cell,          -- uint64_t[1] holding it: a stable &ptr for kernel params
    _n = n, _bytes = bytes,
  }, Tensor)
end

-- cute.empty(shape, dtype): uninitialised device tensor, row-major.
function M.empty(shape, dtype) return alloc(shape, dtype, "cute.empty") end

-- cute.zeros(shape, dtype)
function M.zeros(shape, dtype)
  local t = alloc(shape, dtype, "cute.zeros")
  check(C.cute_cuda_memset_d8(t.ptr, 0, t._bytes, nil, 0, err))
  return t
end

function Tensor:numel() return self._n end
function Tensor:nbytes() return self._bytes end
function Tensor:dim() return #self.shape end
function Tensor:__tostring()
  return ("cute.Tensor(%s, shape %s, ptr 0x%x)"):format(self.dtype.name, fmt_shape(self.shape),
    self.ptr)
end

local function live(t, fname)
  if getmetatable(t) ~= Tensor then argerror(fname, "self is not a cute.Tensor (use t:method())") end
  if t.ptr == 0 then argerror(fname, "the tensor has been freed") end
end

-- Release the device memory now (idempotent; otherwise done when collected).
function Tensor:free()
  local cell = self.ptr_cell
  if cell and cell[0] ~= 0 then
    local p = cell[0]
    cell[0] = 0
    ffi.gc(cell, nil)
    self.ptr = u64(0)
    check(C.cute_cuda_free(p, err))
  end
end

-- Element type name of a cdata array/pointer ("float", "unsigned short"...).
local function cdata_elem(x)
  local s = tostring(ffi.typeof(x)):match("^ctype<(.*)>$") or ""
  local elem, dims = s:match("^(.-) (%[.*%])$")
  if elem then return (elem:gsub("^const ", "")), true end
  elem = s:match("^(.-) %*$")
  if elem then return (elem:gsub("^const ", "")), false end
  return nil
end

-- Flatten a (possibly nested) Lua table; returns flat values and the shape.
local function flatten(data, fname)
  local shape, node = {}, data
  while type(node) == "table" do
    shape[#shape + 1] = #node
    node = node[1]
  end
  local flat, n = {}, 0
  local function walk(x, depth)
    if depth > #shape then
      n = n + 1
      flat[n] = x
      return
    end
    if type(x) ~= "table" or #x ~= shape[depth] then
      error(("%s: ragged nested table: expected %d elements at depth %d"):format(fname,
        shape[depth], depth), 5)
    end
    for i = 1, #x do walk(x[i], depth + 1) end
  end
  walk(data, 1)
  return flat, n, shape
end

-- Host buffers of any size.  ffi.new refuses arrays of 2^31 bytes or more
-- ("size of C type is unknown or too large"), so larger buffers come from
-- malloc: a pointer of the dtype's host ctype (not an array: ffi.sizeof does
-- not know its length) freed when collected, like cute.pinned's.
pcall(ffi.cdef, "void *malloc(size_t size); void free(void *p);")
local FFI_NEW_MAX = 2 ^ 31 - 1
function M.host_buffer(n, dtype, fname)
  fname = fname or "cute.host_buffer"
  dtype = to_dtype(dtype, fname)
  if type(n) ~= "number" or n < 1 or n ~= floor(n) or n >= 2 ^ 53 then
    argerror(fname, "n = %s is not a positive integer", tostring(n))
  end
  local bytes = n * dtype.size
  if bytes <= FFI_NEW_MAX then return ffi.new(dtype.arr, n) end
  local p = ffi.C.malloc(bytes)
  if p == nil then argerror(fname, "cannot allocate %.0f bytes of host memory", bytes) end
  return ffi.gc(ffi.cast(dtype.ptr, p), ffi.C.free)
end
local host_buffer = M.host_buffer

-- Host buffer of `n` elements of `dtype` filled from Lua values (numbers,
-- booleans for bool), converting float16/bfloat16.
local function pack(flat, n, dtype, fname)
  local buf = host_buffer(n, dtype, fname)
  local conv, kind = dtype.from_number, dtype.kind
  for i = 1, n do
    local v = flat[i]
    if kind == "bool" then
      if type(v) == "number" then v = v ~= 0 end
      if type(v) ~= "boolean" then
        error(("%s: element %d is a %s, not a boolean"):format(fname, i, type(v)), 4)
      end
      buf[i - 1] = v
    else
      if type(v) ~= "number" and not (type(v) == "cdata" and tonumber(v)) then
        error(("%s: element %d is a %s, not a number"):format(fname, i, type(v)), 4)
      end
      buf[i - 1] = conv and conv(tonumber(v)) or v
    end
  end
  return buf
end

-- Host data (Lua table, ffi array or pointer) -> pointer to n elements of
-- dtype's host ctype (converted if the cdata has another numeric type).
local numeric_elems = {
  ["float"] = true, ["double"] = true, ["char"] = true, ["unsigned char"] = true,
  ["short"] = true, ["unsigned short"] = true, ["int"] = true, ["unsigned int"] = true,
  ["int64_t"] = true, ["uint64_t"] = true, ["bool"] = true, ["signed char"] = true,
}
local function host_source(data, dtype, n, fname)
  local elem, is_array = cdata_elem(data)
  if not elem then argerror(fname, "host data is a %s, not an array or pointer", tostring(ffi.typeof(data))) end
  if is_array and ffi.sizeof(data) and ffi.sizeof(data) < n * ffi.sizeof(elem) then
    argerror(fname, "host array has %d bytes, %d elements of %s need %d", ffi.sizeof(data), n,
      elem, n * ffi.sizeof(elem))
  end
  if elem == dtype.elem then return ffi.cast(dtype.ptr, data), data end
  if not numeric_elems[elem] then
    argerror(fname, "host data of type %s cannot be converted to %s", elem, dtype.name)
  end
  -- converted element by element straight into the buffer (no Lua table of n values)
  local src = ffi.cast(elem .. " *", data)
  local buf = host_buffer(n, dtype, fname)
  local conv, kind = dtype.from_number, dtype.kind
  for i = 0, n - 1 do
    local v = src[i]
    if kind == "bool" then buf[i] = v ~= 0 and v ~= false
    else buf[i] = conv and conv(tonumber(v)) or v end
  end
  return buf, buf
end

-- cute.from_host(data, dtype, shape): a device tensor holding `data`: a Lua
-- table (flat, or nested for several dimensions) or an ffi array/pointer
-- (its element type should be dtype's host ctype; other numeric types are
-- converted).  shape defaults to the table's nesting or the array's length.
function M.from_host(data, dtype, shape)
  local fname = "cute.from_host"
  dtype = to_dtype(dtype, fname)
  local n, src, anchor
  if type(data) == "table" then
    local flat, fn, fshape = flatten(data, fname)
    if shape == nil then shape = fshape end
    local _
    _, n = check_shape(shape, fname)
    if n ~= fn then
      argerror(fname, "shape %s has %d elements, the data %d", fmt_shape(shape), n, fn)
    end
    src = pack(flat, n, dtype, fname)
    anchor = src
  elseif type(data) == "cdata" then
    if shape == nil then
      local elem, is_array = cdata_elem(data)
      if not is_array then argerror(fname, "data is a pointer: pass a shape") end
      shape = { ffi.sizeof(data) / ffi.sizeof(elem) }
    end
    local _
    _, n = check_shape(shape, fname)
    src, anchor = host_source(data, dtype, n, fname)
  else
    argerror(fname, "data is a %s, not a table or an ffi array", type(data))
  end
  local t = alloc(shape, dtype, fname)
  check(C.cute_cuda_memcpy_htod(t.ptr, src, t._bytes, err))
  local _ = anchor
  return t
end

-- t:copy_from(src[, stream]): src a tensor of the same dtype and size (device
-- to device) or host data as for from_host.  Asynchronous when a stream is
-- given (host memory should then be pinned and kept alive until done).
function Tensor:copy_from(src, stream)
  local fname = "Tensor:copy_from"
  live(self, fname)
  local sh = stream_handle(stream, fname)
  if getmetatable(src) == Tensor then
    live(src, fname)
    if src.dtype ~= self.dtype then
      argerror(fname, "dtype %s does not match %s", src.dtype.name, self.dtype.name)
    end
    if src._n ~= self._n then
      argerror(fname, "source has %d elements, destination %d", src._n, self._n)
    end
    if sh then
      check(C.cute_cuda_memcpy_dtod_async(self.ptr, src.ptr, self._bytes, sh, err))
    else
      check(C.cute_cuda_memcpy_dtod(self.ptr, src.ptr, self._bytes, err))
    end
    return self
  end
  local buf, anchor
  if type(src) == "table" then
    local flat, n = flatten(src, fname)
    if n ~= self._n then argerror(fname, "source has %d elements, destination %d", n, self._n) end
    buf = pack(flat, n, self.dtype, fname)
    anchor = buf
  elseif type(src) == "cdata" then
    buf, anchor = host_source(src, self.dtype, self._n, fname)
  else
    argerror(fname, "source is a %s, not a tensor, table or ffi array", type(src))
  end
  if sh then
    check(C.cute_cuda_memcpy_htod_async(self.ptr, buf, self._bytes, sh, err))
  else
    check(C.cute_cuda_memcpy_htod(self.ptr, buf, self._bytes, err))
  end
  local _ = anchor
  return self
end

-- t:to_host([out[, stream]]): the contents as an ffi array of the dtype's
-- host ctype (float16/bfloat16 as uint16 bit patterns); into `out` if given.
-- With a stream the copy is asynchronous: synchronize before reading.
function Tensor:to_host(out, stream)
  local fname = "Tensor:to_host"
  live(self, fname)
  if out == nil then
    out = host_buffer(self._n, self.dtype, fname)  -- an ffi array; a malloc'ed pointer from 2 GiB on
  elseif type(out) ~= "cdata" then
    argerror(fname, "out is a %s, not an ffi array", type(out))
  elseif ffi.sizeof(out) and cdata_elem(out) and select(2, cdata_elem(out)) and
      ffi.sizeof(out) < self._bytes then
    argerror(fname, "out has %d bytes, the tensor %d", ffi.sizeof(out), self._bytes)
  end
  local sh = stream_handle(stream, fname)
  if sh then
    check(C.cute_cuda_memcpy_dtoh_async(out, self.ptr, self._bytes, sh, err))
  else
    check(C.cute_cuda_memcpy_dtoh(out, self.ptr, self._bytes, err))
  end
  return out
end

-- t:to_table(): a flat Lua table, row-major; numbers (float16/bfloat16
-- converted; 64-bit integers beyond 2^53 lose precision) or booleans.
function Tensor:to_table()
  local h = self:to_host()
  local conv, kind, out = self.dtype.to_number, self.dtype.kind, {}
  for i = 1, self._n do
    local v = h[i - 1]
    if conv then v = conv(v)
    elseif kind == "bool" then v = v == true
    else v = tonumber(v) end
    out[i] = v
  end
  return out
end

-- t:fill(value): every element = value (number; boolean for bool).
function Tensor:fill(value)
  local fname = "Tensor:fill"
  live(self, fname)
  local dt = self.dtype
  local one = pack({ value }, 1, dt, fname)
  local size = dt.size
  if size == 8 then
    local b = ffi.cast("uint32_t *", one)
    if b[0] ~= b[1] then
      argerror(fname, "a 64-bit fill needs equal halves (0 or -1 for integers); use copy_from")
    end
    check(C.cute_cuda_memset_d32(self.ptr, b[0], self._n * 2, nil, 0, err))
  elseif size == 4 then
    check(C.cute_cuda_memset_d32(self.ptr, ffi.cast("uint32_t *", one)[0], self._n, nil, 0, err))
  elseif size == 2 then
    check(C.cute_cuda_memset_d16(self.ptr, ffi.cast("uint16_t *", one)[0], self._n, nil, 0, err))
  else
    check(C.cute_cuda_memset_d8(self.ptr, ffi.cast("uint8_t *", one)[0], self._n, nil, 0, err))
  end
  return self
end

-- cute.pinned(n, dtype): page-locked host array of n elements (a pointer of
-- the dtype's host ctype), freed when collected.  Needed for copies that
-- overlap with kernels.
function M.pinned(n, dtype)
  local fname = "cute.pinned"
  if type(n) ~= "number" or n < 1 or n ~= floor(n) then
    argerror(fname, "n = %s is not a positive integer", tostring(n))
  end
  dtype = to_dtype(dtype, fname)
  local out = voidpp()
  check(C.cute_cuda_host_alloc(out, n * dtype.size, 0, err))
  return ffi.gc(ffi.cast(dtype.ptr, out[0]), function(p) C.cute_cuda_host_free(p, nil) end)
end

-- ---------------------------------------------------------------------------
-- modules and kernels
-- ---------------------------------------------------------------------------

-- The driver entry points that modules, launches and the current device go
-- through.  Tests and benchmarks without a GPU replace some of them with Lua
-- functions (M._use_driver); the others stay the C ones.
local driver_names = { "cute_cuda_module_load", "cute_cuda_module_unload", "cute_cuda_module_get_function",
  "cute_cuda_launch", "cute_cuda_launch_cluster", "cute_cuda_func_set_max_dynamic_smem",
  "cute_cuda_set_device", "cute_cuda_get_device" }
local drv = C
M._driver = C

-- The device of this thread's context as far as cute knows: the ordinal that
-- cute.set_device (or device:set()) chose last, or false until asked.  Kernel
-- launch caches are per device (lua/cute/launch.lua): a C host that switches
-- devices behind cute's back must call cute.set_device too.
M.context = { device = false }

-- The current device's ordinal (asks the driver once), or -1 without a driver.
function M.current_device()
  local d = M.context.device
  if d then return d end
  local v = intp()
  if drv.cute_cuda_get_device(v, err) ~= 0 then d = -1 else d = v[0] end
  M.context.device = d
  return d
end

-- d: a table of replacements for some of driver_names, plus optionally
-- available() (the launch path's "is there a GPU"); nil restores the driver.
function M._use_driver(d)
  if d == nil then drv = C
  else
    drv = { available = d.available }
    for _, name in ipairs(driver_names) do drv[name] = d[name] or C[name] end
  end
  M._driver = drv
  M.context.device = false
end

-- A loaded module's handle unloads through the driver that loaded it when
-- the module (its Lua object, and every function or kernel entry holding it)
-- is collected.
local function unload_module(h) C.cute_cuda_module_unload(h, nil) end

local Module = {}
Module.__index = Module
Module.__tostring = function(m) return ("cute.module(%s)"):format(tostring(m.handle)) end

local Function = {}
Function.__index = Function
Function.__tostring = function(f) return ("cute.function(%s)"):format(f.name) end

-- The one module loader: image (a pointer or a Lua string) of size bytes;
-- mode 1 PTX, 0 cubin, -1 detect.  log: a char buffer for the JIT's info log
-- or nil.  Returns the Module, or nil with the error in cf.err.
local function new_module(image, size, mode, log, log_size)
  local out = voidpp()
  if drv.cute_cuda_module_load(image, size, mode, out, log, log_size or 0, err) ~= 0 then return nil end
  local d = drv
  local h = d == C and ffi.gc(out[0], unload_module)
    or ffi.gc(out[0], function(p) d.cute_cuda_module_unload(p, nil) end)
  return setmetatable({ handle = h, info_log = log ~= nil and ffi.string(log) or "", functions = {} }, Module)
end
M._new_module = new_module

-- cute.load_module(image, is_ptx): load PTX text or a cubin (a Lua string;
-- is_ptx nil: detected).  The driver JIT's errors are in the Lua error; its
-- info log (registers, spills) in module.info_log.
function M.load_module(image, is_ptx)
  local fname = "cute.load_module"
  if type(image) ~= "string" or #image == 0 then
    argerror(fname, "image is a %s, not a non-empty string", type(image))
  end
  local mode = is_ptx == nil and -1 or (is_ptx and 1 or 0)
  local m = new_module(image, #image, mode, ffi.new("char[?]", 8192), 8192)
  if not m then check(1) end
  return m
end

function Module:get_function(name)
  local fname = "module:get_function"
  if getmetatable(self) ~= Module then argerror(fname, "self is not a module (use m:get_function)") end
  if type(name) ~= "string" then argerror(fname, "name is a %s, not a string", type(name)) end
  if self.handle == nil then argerror(fname, "the module has been unloaded") end
  local f = self.functions[name]
  if f then return f end
  local out = voidpp()
  check(drv.cute_cuda_module_get_function(self.handle, name, out, err))
  f = setmetatable({ handle = out[0], name = name, module = self }, Function)
  self.functions[name] = f
  return f
end

-- Unload now (idempotent); its functions become unusable.
function Module:unload()
  local h = self.handle
  if h ~= nil then
    self.handle = nil
    for _, f in pairs(self.functions) do f.handle = nil end
    ffi.gc(h, nil)
    check(drv.cute_cuda_module_unload(h, err))
  end
end

local func_attr_ids = {
  max_threads_per_block = "CUTE_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
  shared_size_bytes = "CUTE_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
  const_size_bytes = "CUTE_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES",
  local_size_bytes = "CUTE_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
  num_regs = "CUTE_CU_FUNC_ATTRIBUTE_NUM_REGS",
  ptx_version = "CUTE_CU_FUNC_ATTRIBUTE_PTX_VERSION",
  binary_version = "CUTE_CU_FUNC_ATTRIBUTE_BINARY_VERSION",
  max_dynamic_shared_size_bytes = "CUTE_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
}

local function fhandle(f, fname)
  if getmetatable(f) ~= Function then argerror(fname, "%s is not a cute function", tostring(f)) end
  if f.handle == nil then argerror(fname, "function %s belongs to an unloaded module", f.name) end
  return f.handle
end

-- All attributes as a table (num_regs, shared_size_bytes, ...).
function Function:attributes()
  local h = fhandle(self, "function:attributes")
  local a = ffi.new("cute_cuda_func_info")
  check(C.cute_cuda_func_attrs(h, a, err))
  local t = {}
  for k in pairs(func_attr_ids) do t[k] = a[k] end
  return t
end

-- One attribute by name (see attributes()) or CUfunction_attribute number.
function Function:attribute(which)
  local h = fhandle(self, "function:attribute")
  local id = type(which) == "number" and which or
      (func_attr_ids[which] and C[func_attr_ids[which]])
  if not id then argerror("function:attribute", "unknown attribute %s", tostring(which)) end
  local v = intp()
  check(C.cute_cuda_func_attribute(h, id, v, err))
  return v[0]
end

function Function:set_attribute(attr, value)
  local h = fhandle(self, "function:set_attribute")
  check(C.cute_cuda_func_set_attribute(h, attr, value, err))
end

-- Allow `bytes` of dynamic shared memory per block (needed above 48 KiB).
function Function:set_max_dynamic_smem(bytes)
  local h = fhandle(self, "function:set_max_dynamic_smem")
  if type(bytes) ~= "number" or bytes < 0 or bytes ~= floor(bytes) then
    argerror("function:set_max_dynamic_smem", "bytes = %s is not a non-negative integer",
      tostring(bytes))
  end
  check(drv.cute_cuda_func_set_max_dynamic_smem(h, bytes, err))
  return self
end

-- Resident blocks per SM at this block size and dynamic shared memory.
function Function:occupancy(block_size, smem)
  local h = fhandle(self, "function:occupancy")
  local v = intp()
  check(C.cute_cuda_occupancy_max_active_blocks(h, block_size, smem or 0, v, err))
  return v[0]
end

-- Best-occupancy block size and the minimal grid filling the device with it.
function Function:max_potential_block_size(smem, block_limit)
  local h = fhandle(self, "function:max_potential_block_size")
  local g, b = intp(), intp()
  check(C.cute_cuda_occupancy_max_potential_block_size(h, smem or 0, block_limit or 0, g, b, err))
  return b[0], g[0]
end

-- The one parser of launch dimensions (cute.launch and kernel launchers): a
-- positive integer or {x [, y [, z]]} of them (missing ones are 1); nil is
-- {1, 1, 1} when nil_ok, else an error.  Errors name fname and what and are
-- raised at the user's line.
local function okdim(v) return type(v) == "number" and v >= 1 and v % 1 == 0 and v < 2 ^ 32 end
local function launch_dims(x, what, fname, nil_ok)
  local a, b, c
  if type(x) == "number" then a, b, c = x, 1, 1
  elseif type(x) == "table" and getmetatable(x) == nil then a, b, c = x[1] or 1, x[2] or 1, x[3] or 1
  elseif x == nil and nil_ok then return 1, 1, 1
  elseif x == nil then cf.fail(("%s: %s dims missing"):format(fname, what))
  else
    local tr = package.loaded["cute.trace"]
    if tr and tr.is_value(x) then
      cf.fail(("%s: %s dims must be Lua numbers, not traced values"):format(fname, what))
    end
    cf.fail(("%s: %s dims %s is not a number or {x, y, z}"):format(fname, what, tostring(x)))
  end
  if not (okdim(a) and okdim(b) and okdim(c)) then
    cf.fail(("%s: %s dims must be positive integers, got {%s, %s, %s}"):format(fname, what, tostring(a),
      tostring(b), tostring(c)))
  end
  return a, b, c
end
M.launch_dims = launch_dims
M.launch_dim_ok = okdim -- (a positive integer below 2^32: the fast paths' check)
local function dims(x, what, fname) return launch_dims(x, what, fname, false) end

-- cute.launch(fn, grid, block, smem, stream, params[, cluster]): launch a
-- kernel.  grid/block/cluster: a number or {x, y, z}; smem: dynamic shared
-- bytes (nil = 0); stream: cute.stream or nil; params: a `void *[n]` cdata,
-- one pointer per kernel parameter (nil for none), prepared by the caller.
-- No allocation: this is the hot path (one FFI call).
function M.launch(fn, grid, block, smem, stream, params, cluster)
  local h = fn
  if type(fn) == "table" then h = fn.handle end
  local gx, gy, gz, bx, by, bz
  if type(grid) == "number" then gx, gy, gz = grid, 1, 1 else gx, gy, gz = dims(grid, "grid", "cute.launch") end
  if type(block) == "number" then bx, by, bz = block, 1, 1 else bx, by, bz = dims(block, "block", "cute.launch") end
  local sh = stream
  if type(stream) == "table" then sh = stream.handle end
  if cluster == nil then
    local s = drv.cute_cuda_launch(h, gx, gy, gz, bx, by, bz, smem or 0, sh, params, err)
    if s ~= 0 then
      if type(fn) == "table" and fn.handle == nil and fn.name then
        argerror("cute.launch", "function %s belongs to an unloaded module", fn.name)
      end
      check(s)
    end
    return
  end
  local cx, cy, cz = dims(cluster, "cluster", "cute.launch")
  check(drv.cute_cuda_launch_cluster(h, gx, gy, gz, bx, by, bz, cx, cy, cz, smem or 0, sh, params, err))
end

function Function:launch(grid, block, smem, stream, params, cluster)
  return M.launch(self, grid, block, smem, stream, params, cluster)
end

-- Launch-overhead baselines measured in C: n back-to-back launches then a
-- stream synchronize.  raw: cuLaunchKernel directly; otherwise through
-- cute_cuda_launch.  Returns total and enqueue-only microseconds.
function M.bench_launch_c(fn, n, grid, block, smem, stream, params, raw)
  local h = fhandle(fn, "cute.bench_launch_c")
  local gx, gy, gz = dims(grid, "grid", "cute.bench_launch_c")
  local bx, by, bz = dims(block, "block", "cute.bench_launch_c")
  local total, enq = ffi.new("double[1]"), ffi.new("double[1]")
  local f = raw and C.cute_cuda_bench_raw_launch or C.cute_cuda_bench_launch
  check(f(h, n, gx, gy, gz, bx, by, bz, smem or 0, stream_handle(stream, "cute.bench_launch_c"),
    params, total, enq, err))
  return total[0], enq[0]
end

-- Monotonic microseconds (for benchmarks).
function M.now_us() return C.cute_cuda_now_us() end

-- Format a CUresult the way the runtime reports failed driver calls.
function M.cuda_error_message(code, call)
  local e = ffi.new("cute_err[1]")
  C.cute_cuda_format_error(code, call or "cuda", e)
  return ffi.string(e[0].msg)
end

return M
