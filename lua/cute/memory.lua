-- cute.memory: device tensors (cute.empty, cute.zeros, cute.from_host) and
-- host transfers (copy_from, to_host, to_table, fill), host buffers and
-- pinned memory.  Merged into `cute` by cute/init.lua.  Dtypes come from
-- cute.dtype; streams from cute.runtime.
local ffi = require("ffi")
local cf = require("cute.ffi")
local dt = require("cute.dtype")
local rt = require("cute.runtime")

local C = cf.C
local err = cf.err
local floor = math.floor

local M = {}

-- errors: cute.ffi's one path (the C message, or "fname: message", at the user's line)
local check, argerror, fail = cf.check, cf.failf, cf.fail
local stream_handle = rt.stream_handle
local to_dtype = dt.to_dtype

local voidpp = ffi.typeof("void *[1]")
local u64p = ffi.typeof("uint64_t[1]")
local u64 = ffi.typeof("uint64_t")

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
    fail(("%s: shape %s is not a table of positive integers"):format(fname, tostring(shape)))
  end
  local out, n = {}, 1
  for k in pairs(shape) do
    if type(k) ~= "number" or k < 1 or k > #shape or k ~= floor(k) then
      fail(("%s: shape %s: key %s is not a dimension index"):format(fname, fmt_shape(shape),
        tostring(k)))
    end
  end
  for i = 1, #shape do
    local d = shape[i]
    if type(d) ~= "number" or d < 1 or d ~= floor(d) or d >= 2 ^ 53 then
      fail(("%s: shape %s: dimension %d is not a positive integer"):format(fname,
        fmt_shape(shape), i))
    end
    out[i], n = d, n * d
  end
  return out, n
end

-- the strides of a compact row-major tensor of this shape (the one helper;
-- cute.specialise and cute.kernel use it too)
local function row_major_strides(shape)
  local st, s = {}, 1
  for i = #shape, 1, -1 do st[i], s = s, s * shape[i] end
  return st
end
M.row_major = row_major_strides

-- The release of a cell's memory (the finalizer, and t:free with an err):
-- in the context of device dev, through the driver that allocated it; name:
-- "cute_cuda_free", or "cute_cuda_ipc_close_handle" for a handle opened here.
local function releaser(name, dev)
  local f = rt._driver[name]
  local cpu = package.loaded["cute.target_cpu"]
  local host = cpu and cpu.driver[name] == f -- (the CPU target's host memory: no device context to switch)
  return function(cell, e)
    local p = cell[0]
    if p == 0 then return 0 end
    cell[0] = 0
    if host then return f(p, e) end
    return rt.on_device(dev, f, p, e)
  end
end
M._releaser = releaser

local Tensor = {}
Tensor.__index = Tensor

function M.is_tensor(x) return getmetatable(x) == Tensor end

-- opts: nil or { device = i } (default: the current device)
local function alloc(shape, dtype, fname, opts)
  require("cute.target_cpu").need() -- (no GPU: host memory of the CPU target)
  local shp, n = check_shape(shape, fname)
  dtype = to_dtype(dtype, fname)
  if opts ~= nil and type(opts) ~= "table" then
    argerror(fname, "opts is a %s, not a table such as {device = 1}", type(opts))
  end
  local dev = rt.check_device(opts and opts.device, fname)
  local bytes = n * dtype.size
  local cell = u64p()
  check(rt.on_device(dev, rt._driver.cute_cuda_malloc, cell, bytes, err))
  local release = releaser("cute_cuda_free", dev)
  ffi.gc(cell, release)
  local cpu = package.loaded["cute.target_cpu"] -- (its bounds errors name the tensor)
  if cpu and cpu.active then cpu.describe(cell[0], bytes, ("%s tensor %s"):format(dtype.name, fmt_shape(shp))) end
  local t = setmetatable({
    shape = shp, strides = row_major_strides(shp), dtype = dtype,
    ptr = u64(cell[0]),       -- device address (uint64_t)
    ptr_cell = cell,          -- uint64_t[1] holding it: a stable &ptr for kernel params
    device = dev,             -- the ordinal of the device whose memory it is
    _n = n, _bytes = bytes, _release = release, _allocated = true,
  }, Tensor)
  rt.live.tensors[t] = dev -- (lost in a reset after a fault: cute.fault)
  return t
end
M._alloc = alloc
M._Tensor = Tensor

-- A tensor over device memory that this call does not allocate (cute.from_dlpack,
-- the C host API): ptr (uint64_t or number), shape, dtype, strides in elements
-- (nil: row-major); owner: a cute_dl_owner (gc'ed by the caller) that keeps the
-- memory alive, or nil for a borrowed view.  Host transfers need a compact one.
local function view(ptr, shape, dtype, strides, owner, fname, device)
  local shp, n = check_shape(shape, fname)
  dtype = to_dtype(dtype, fname)
  local rm = row_major_strides(shp)
  local st, strided = rm, false
  if strides then
    st = {}
    for i = 1, #shp do
      st[i] = strides[i]
      if shp[i] > 1 and st[i] ~= rm[i] then strided = true end
    end
  end
  local cell = u64p()
  cell[0] = ptr
  local cpu = package.loaded["cute.target_cpu"]
  local span = 0 -- (the CPU target's bounds checks: the bytes the view reaches)
  if n > 0 then
    span = 1
    for i = 1, #shp do span = span + (shp[i] - 1) * st[i] end
  end
  return setmetatable({
    shape = shp, strides = st, dtype = dtype, ptr = u64(cell[0]), ptr_cell = cell, device = device,
    _n = n, _bytes = n * dtype.size, _owner = owner, _strided = strided or nil,
    _borrowed = owner == nil or nil,
    _cpu_range = cpu and cpu.active and cpu.register(cell[0], span * dtype.size,
      ("%s view %s"):format(dtype.name, fmt_shape(shp))) or nil,
  }, Tensor)
end
M._view = view

-- cute.from_ptr(ptr, shape, dtype [, strides]): a tensor over device memory
-- that the caller allocated and frees (a borrowed view; t:free() forgets it).
function M.from_ptr(ptr, shape, dtype, strides)
  local fname = "cute.from_ptr"
  local ok = (type(ptr) == "number" and ptr > 0 and ptr % 1 == 0 and ptr < 2 ^ 53)
    or (type(ptr) == "cdata" and pcall(ffi.cast, "uint64_t", ptr) and ffi.cast("uint64_t", ptr) ~= 0)
  if not ok then fail(("%s: ptr %s is not a non-zero device address"):format(fname, tostring(ptr))) end
  if strides ~= nil and type(strides) ~= "table" then
    fail(("%s: strides %s is not a table of element strides"):format(fname, tostring(strides)))
  end
  if strides then
    local shp = check_shape(shape, fname)
    if #strides ~= #shp then
      fail(("%s: %d strides for a shape of rank %d"):format(fname, #strides, #shp))
    end
    for i = 1, #strides do
      local x = strides[i]
      if type(x) ~= "number" or x < 0 or x % 1 ~= 0 then
        fail(("%s: stride %d is %s, not a non-negative integer"):format(fname, i, tostring(x)))
      end
    end
  end
  -- the device whose memory it is, where the driver knows (else nil, as for pinned host and
  -- managed memory: not checked at launch)
  local p = ffi.cast("uint64_t", ptr)
  local d = ffi.new("int[1]", -1)
  local dev = rt._driver.cute_cuda_pointer_device(p, d, nil) == 0 and d[0] >= 0 and d[0] or nil
  return view(p, shape, dtype, strides, nil, fname, dev)
end

-- t:to_dlpack([opts]): a DLManagedTensor* for another framework (cute/dlpack.lua)
function Tensor:to_dlpack(opts) return require("cute.dlpack").to_dlpack(self, opts) end

-- t:ipc_handle(): the CUDA IPC handle of its allocation (cute/peer.lua)
function Tensor:ipc_handle() return require("cute.peer").ipc_handle(self) end

-- cute.empty(shape, dtype [, {device = i}]): uninitialised device tensor,
-- row-major, on device i (default: the current one).
function M.empty(shape, dtype, opts) return alloc(shape, dtype, "cute.empty", opts) end

-- cute.zeros(shape, dtype [, {device = i}])
function M.zeros(shape, dtype, opts)
  local t = alloc(shape, dtype, "cute.zeros", opts)
  check(rt.on_device(t.device, rt._driver.cute_cuda_memset_d8, t.ptr, 0, t._bytes, nil, 0, err))
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
  if t._strided then
    argerror(fname, "the tensor has strides {%s}, not compact row-major: host transfers need a compact tensor",
      table.concat(t.strides, ","))
  end
end

-- Release the device memory now (idempotent; otherwise done when collected).
function Tensor:free()
  local cell, owner = self.ptr_cell, self._owner
  if owner then           -- shared with DLPack (cute/dlpack.lua): drop this tensor's reference
    self._owner, self.ptr = nil, u64(0)
    if cell then cell[0] = 0 end
    ffi.gc(owner, nil)
    C.cute_dl_owner_release(owner)
  elseif self._borrowed then  -- a view of memory someone else frees
    self.ptr = u64(0)
    if cell then cell[0] = 0 end
  elseif cell and cell[0] ~= 0 then
    ffi.gc(cell, nil)
    self.ptr = u64(0)
    check(self._release(cell, err))
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
      fail(("%s: ragged nested table: expected %d elements at depth %d"):format(fname,
        shape[depth], depth))
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
        fail(("%s: element %d is a %s, not a boolean"):format(fname, i, type(v)))
      end
      buf[i - 1] = v
    else
      if type(v) ~= "number" and not (type(v) == "cdata" and tonumber(v)) then
        fail(("%s: element %d is a %s, not a number"):format(fname, i, type(v)))
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
-- Host data (a table, flat or nested, or an ffi array/pointer) as a buffer
-- of dtype's host ctype: buf, anchor (keep alive until the copy is done), n,
-- shape.  n_want: the element count the destination has (nil: from shape,
-- else from the data).  nil when data is neither a table nor cdata.
local function host_data(data, dtype, shape, n_want, fname)
  if type(data) == "table" then
    local flat, fn, fshape = flatten(data, fname)
    local n = fn
    if n_want then
      if fn ~= n_want then argerror(fname, "source has %d elements, destination %d", fn, n_want) end
    else
      if shape == nil then shape = fshape end
      local _
      _, n = check_shape(shape, fname)
      if n ~= fn then argerror(fname, "shape %s has %d elements, the data %d", fmt_shape(shape), n, fn) end
    end
    local buf = pack(flat, n, dtype, fname)
    return buf, buf, n, shape
  elseif type(data) == "cdata" then
    local n = n_want
    if not n then
      if shape == nil then
        local elem, is_array = cdata_elem(data)
        if not is_array then argerror(fname, "data is a pointer: pass a shape") end
        shape = { ffi.sizeof(data) / ffi.sizeof(elem) }
      end
      local _
      _, n = check_shape(shape, fname)
    end
    local buf, anchor = host_source(data, dtype, n, fname)
    return buf, anchor, n, shape
  end
end

function M.from_host(data, dtype, shape, opts)
  local fname = "cute.from_host"
  dtype = to_dtype(dtype, fname)
  local src, anchor, _
  src, anchor, _, shape = host_data(data, dtype, shape, nil, fname)
  if not src then argerror(fname, "data is a %s, not a table or an ffi array", type(data)) end
  local t = alloc(shape, dtype, fname, opts)
  check(rt.on_device(t.device, rt._driver.cute_cuda_memcpy_htod, t.ptr, src, t._bytes, err))
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
    if src.device and self.device and src.device ~= self.device then -- (across devices: cuMemcpyPeerAsync)
      require("cute.peer").copy_peer(self, src, stream)
      return self
    end
    if sh then
      check(rt._driver.cute_cuda_memcpy_dtod_async(self.ptr, src.ptr, self._bytes, sh, err))
    else
      check(rt.on_device(self.device, rt._driver.cute_cuda_memcpy_dtod, self.ptr, src.ptr, self._bytes, err))
    end
    return self
  end
  local buf, anchor = host_data(src, self.dtype, nil, self._n, fname)
  if not buf then argerror(fname, "source is a %s, not a tensor, table or ffi array", type(src)) end
  if sh then
    check(rt._driver.cute_cuda_memcpy_htod_async(self.ptr, buf, self._bytes, sh, err))
  else
    check(rt.on_device(self.device, rt._driver.cute_cuda_memcpy_htod, self.ptr, buf, self._bytes, err))
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
    check(rt._driver.cute_cuda_memcpy_dtoh_async(out, self.ptr, self._bytes, sh, err))
  else
    check(rt.on_device(self.device, rt._driver.cute_cuda_memcpy_dtoh, out, self.ptr, self._bytes, err))
    rt.check_asserts(self.device, fname)
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
  local f, v, n -- (one memset of n words of the value's bits)
  if size == 8 then
    local b = ffi.cast("uint32_t *", one)
    if b[0] ~= b[1] then
      argerror(fname, "a 64-bit fill needs equal halves (0 or -1 for integers); use copy_from")
    end
    f, v, n = rt._driver.cute_cuda_memset_d32, b[0], self._n * 2
  elseif size == 4 then
    f, v, n = rt._driver.cute_cuda_memset_d32, ffi.cast("uint32_t *", one)[0], self._n
  elseif size == 2 then
    f, v, n = rt._driver.cute_cuda_memset_d16, ffi.cast("uint16_t *", one)[0], self._n
  else
    f, v, n = rt._driver.cute_cuda_memset_d8, ffi.cast("uint8_t *", one)[0], self._n
  end
  check(rt.on_device(self.device, f, self.ptr, v, n, nil, 0, err))
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

return M
