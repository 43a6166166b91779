-- cute.nccl: NCCL collectives on cute's device tensors (docs/NCCL.md).
--
--   local nccl = require("cute").nccl          -- loaded on first use
--   nccl.version(), nccl.library()             -- "2.28.9", where it was loaded from
--   local comms = nccl.init_all({0, 1})        -- one process, several GPUs
--   nccl.group(function()
--     for k, c in ipairs(comms) do c:all_reduce(x[k]) end   -- in place, "sum"
--   end)
--   local comm = nccl.init_from_env()          -- torchrun / mpirun: one GPU per process
--
-- The library is opened at run time (include/cute_nccl.h: CUTE_NCCL_LIB, the
-- library path, python site-packages); bad arguments and NCCL failures raise
-- Lua errors naming the call (NCCL's own message for the latter).
local ffi = require("ffi")
local cf = require("cute.ffi")
local memory = require("cute.memory")
local rt = require("cute.runtime")

local C = cf.C
local err = cf.err
local check, fail = cf.check, cf.fail

local M = {}

local intp = ffi.typeof("int[1]")
local voidpp = ffi.typeof("void *[1]")
local ID_BYTES = C.CUTE_NCCL_UNIQUE_ID_BYTES

-- the NCCL datatype of each runtime dtype (cute.dtype names); the others
-- (bool, int16, uint16, tfloat32) have none
M.dtypes = {
  int8 = C.CUTE_NCCL_INT8,
  uint8 = C.CUTE_NCCL_UINT8,
  int32 = C.CUTE_NCCL_INT32,
  uint32 = C.CUTE_NCCL_UINT32,
  int64 = C.CUTE_NCCL_INT64,
  uint64 = C.CUTE_NCCL_UINT64,
  float16 = C.CUTE_NCCL_FLOAT16,
  float32 = C.CUTE_NCCL_FLOAT32,
  float64 = C.CUTE_NCCL_FLOAT64,
  bfloat16 = C.CUTE_NCCL_BFLOAT16,
  float8_e4m3fn = C.CUTE_NCCL_FLOAT8E4M3,
  float8_e5m2 = C.CUTE_NCCL_FLOAT8E5M2,
}

-- reduction ops by name
M.ops = {
  sum = C.CUTE_NCCL_SUM,
  prod = C.CUTE_NCCL_PROD,
  max = C.CUTE_NCCL_MAX,
  min = C.CUTE_NCCL_MIN,
  avg = C.CUTE_NCCL_AVG,
}
local op_names = "sum, prod, max, min, avg"

-- ---------------------------------------------------------------------------
-- the library
-- ---------------------------------------------------------------------------

-- nccl.load([path]): load NCCL now (path nil: the search of cute_nccl.h), or
-- switch to the library at path.  Returns where it was loaded from.
function M.load(path)
  if path ~= nil and type(path) ~= "string" then
    fail(("nccl.load: path %s is not a string"):format(tostring(path)))
  end
  check(C.cute_nccl_load(path, err))
  return ffi.string(C.cute_nccl_library())
end

-- Where the loaded library came from (loads it first if needed).
function M.library() return M.load(nil) end

-- Forget the loaded library: the next use searches again (for tests).
function M._unload() C.cute_nccl_unload() end

-- The places the search tries (steps 1-3 of cute_nccl.h), in order.
function M.search_list()
  local buf = ffi.new("char[?]", 16384)
  C.cute_nccl_search_list(buf, 16384)
  local out = {}
  for line in ffi.string(buf):gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

-- The library's version code (22809) and string ("2.28.9").
function M.version_code()
  local v = intp()
  check(C.cute_nccl_version(v, err))
  return v[0]
end

function M.version()
  local code = M.version_code()
  local unit = code >= 10000 and 10000 or 1000
  return ("%d.%d.%d"):format(math.floor(code / unit), math.floor(code % unit / 100), code % 100)
end

-- NCCL's text for an ncclResult_t code (the library's ncclGetErrorString)
function M.error_string(code)
  M.load(nil)
  return ffi.string(C.cute_nccl_error_string(code))
end

-- ---------------------------------------------------------------------------
-- unique ids
-- ---------------------------------------------------------------------------

local Id = {}
Id.__index = Id
Id.__tostring = function(id) return "nccl.id(" .. id:hex():sub(1, 16) .. "...)" end
function Id:hex() return (self.bytes:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end

function M.unique_id()
  local buf = ffi.new("char[?]", ID_BYTES)
  check(C.cute_nccl_unique_id(buf, err))
  return setmetatable({ bytes = ffi.string(buf, ID_BYTES) }, Id)
end

function M.id_from_hex(s)
  if type(s) ~= "string" or #s ~= 2 * ID_BYTES or s:find("[^%x]") then
    fail(("nccl.id_from_hex: %s is not %d hexadecimal digits"):format(
      type(s) == "string" and ("%q (%d characters)"):format(#s > 40 and s:sub(1, 40) .. "..." or s, #s)
        or tostring(s), 2 * ID_BYTES))
  end
  return setmetatable({ bytes = (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) }, Id)
end

function M.is_id(x) return getmetatable(x) == Id end

-- ---------------------------------------------------------------------------
-- communicators
-- ---------------------------------------------------------------------------

local Comm = {}
Comm.__index = Comm
Comm.__tostring = function(c)
  return ("nccl.comm(rank %d of %d, device %d%s)"):format(c._rank, c._size, c._device,
    c.handle == nil and ", destroyed" or "")
end
M.Comm = Comm

-- a communicator object over handle h (rank, size and device asked of NCCL)
local function new_comm(h)
  local r, n, d = intp(), intp(), intp()
  check(C.cute_nccl_comm_info(h, r, n, d, err))
  return setmetatable({ handle = h, _gen = C.cute_nccl_generation(), _rank = r[0], _size = n[0],
    _device = d[0] }, Comm)
end

-- the live handle of comm c, for operation fname
local function handle(c, fname)
  if getmetatable(c) ~= Comm then
    fail(("%s: %s is not an NCCL communicator (call it as comm:%s(...))"):format(fname, tostring(c),
      fname:match("[%w_]+$")))
  end
  if c.handle == nil then fail(("%s: %s was destroyed"):format(fname, tostring(c))) end
  if c._gen ~= C.cute_nccl_generation() then
    local now = ffi.string(C.cute_nccl_library())
    fail(("%s: %s belongs to an NCCL library that is no longer loaded (%s)"):format(fname,
      tostring(c), now == "" and "none is loaded now" or ("now " .. now)))
  end
  return c.handle
end

function Comm:rank() return self._rank end
function Comm:size() return self._size end
function Comm:device() return self._device end

function Comm:destroy()
  local h = handle(self, "comm:destroy")
  self.handle = nil
  check(C.cute_nccl_comm_destroy(h, err))
end

function Comm:abort()
  local h = handle(self, "comm:abort")
  self.handle = nil
  check(C.cute_nccl_comm_abort(h, err))
end

-- nil, or NCCL's message for the communicator's pending asynchronous error
function Comm:async_error()
  local r = intp()
  check(C.cute_nccl_comm_async_error(handle(self, "comm:async_error"), r, err))
  if r[0] == 0 then return nil end
  return ("%s (%d): %s"):format(ffi.string(C.cute_nccl_result_name(r[0])), r[0],
    ffi.string(C.cute_nccl_error_string(r[0])))
end

local function device_list(devices, fname)
  if devices == nil then
    local list = {}
    for i = 0, rt.device_count() - 1 do list[#list + 1] = i end
    return list
  end
  if type(devices) ~= "table" or #devices == 0 then
    fail(("%s: devices %s is not a non-empty list of device ordinals"):format(fname, tostring(devices)))
  end
  local seen = {}
  for k, d in ipairs(devices) do
    if type(d) ~= "number" or d < 0 or d % 1 ~= 0 then
      fail(("%s: devices[%d] is %s, not a device ordinal"):format(fname, k, tostring(d)))
    end
    if seen[d] then fail(("%s: device %d is listed twice"):format(fname, d)) end
    seen[d] = true
  end
  return devices
end

-- nccl.init_all([devices]): one communicator per device of this process
-- (default: every device), comms[k] on devices[k] with rank k - 1.
function M.init_all(devices)
  local fname = "nccl.init_all"
  devices = device_list(devices, fname)
  local n = #devices
  local devs = ffi.new("int[?]", n)
  for k = 1, n do devs[k - 1] = devices[k] end
  local out = ffi.new("void *[?]", n)
  check(C.cute_nccl_comm_init_all(out, n, devs, err))
  local comms = {}
  for k = 1, n do comms[k] = new_comm(out[k - 1]) end
  return comms
end

local function int_field(opts, key, fname, lo)
  local v = opts[key]
  if type(v) ~= "number" or v % 1 ~= 0 or v < lo then
    fail(("%s: %s = %s is not an integer >= %d"):format(fname, key, tostring(v), lo))
  end
  return v
end

local function id_bytes(id, fname)
  if getmetatable(id) == Id then return id.bytes end
  if type(id) == "string" and #id == 2 * ID_BYTES then return M.id_from_hex(id).bytes end
  fail(("%s: id %s is not an nccl.unique_id() (or its hex)"):format(fname, tostring(id)))
end

-- nccl.init_rank{nranks =, rank =, id =, device =}: this process's rank of a
-- communicator across processes (every rank passes the same id).  device
-- (default: the current one) becomes the current device.
function M.init_rank(opts)
  local fname = "nccl.init_rank"
  if type(opts) ~= "table" then fail(("%s: expects a table {nranks =, rank =, id =}, got %s"):format(fname, tostring(opts))) end
  local nranks = int_field(opts, "nranks", fname, 1)
  local rank = int_field(opts, "rank", fname, 0)
  if rank >= nranks then fail(("%s: rank %d is not below nranks %d"):format(fname, rank, nranks)) end
  local bytes = id_bytes(opts.id, fname)
  if opts.device ~= nil then rt.set_device(int_field(opts, "device", fname, 0)) end
  local out = voidpp()
  check(C.cute_nccl_comm_init_rank(out, nranks, bytes, rank, err))
  return new_comm(out[0])
end

-- ---------------------------------------------------------------------------
-- collectives
-- ---------------------------------------------------------------------------

-- the device address, element count and NCCL datatype of tensor t, argument
-- `what` of operation fname on comm c
local function buf(t, what, fname, c)
  if not memory.is_tensor(t) then
    fail(("%s: %s %s is not a device tensor (cute.empty, cute.from_host, cute.from_ptr...)"):format(fname, what,
      tostring(t)))
  end
  if t._strided then
    fail(("%s: %s %s is not compact (strides %s): NCCL reads contiguous memory"):format(fname, what, tostring(t),
      table.concat(t.strides, ",")))
  end
  local dtype = M.dtypes[t.dtype.name]
  if not dtype then
    fail(("%s: %s has dtype %s, which NCCL has no datatype for"):format(fname, what, t.dtype.name))
  end
  if t.device ~= nil and t.device ~= c._device then
    fail(("%s: %s is on device %d but the communicator (rank %d) is on device %d"):format(fname, what, t.device,
      c._rank, c._device))
  end
  return t.ptr, t:numel(), dtype
end

local function same_dtype(a, b, fname)
  if a.dtype ~= b.dtype then
    fail(("%s: send is %s but recv is %s"):format(fname, a.dtype.name, b.dtype.name))
  end
end

local function stream_of(s, fname, c)
  if type(s) == "table" and s.device ~= nil and s.device ~= c._device then
    fail(("%s: the stream is on device %d but the communicator (rank %d) is on device %d"):format(fname, s.device,
      c._rank, c._device))
  end
  return rt.stream_handle(s, fname)
end

local function op_code(op, fname)
  if op == nil then return M.ops.sum end
  local v = M.ops[op]
  if not v then fail(("%s: op %s is not one of %s"):format(fname, tostring(op), op_names)) end
  return v
end

local function int_arg(v, what, fname)
  if type(v) ~= "number" or v % 1 ~= 0 then fail(("%s: %s %s is not an integer"):format(fname, what, tostring(v))) end
  return v
end

-- comm:all_reduce(send [, recv [, op [, stream]]]): recv nil or send: in place
function Comm:all_reduce(send, recv, op, stream)
  local fname = "comm:all_reduce"
  local h = handle(self, fname)
  recv = recv or send
  local sp, n, dt = buf(send, "send", fname, self)
  local rp, rn = buf(recv, "recv", fname, self)
  same_dtype(send, recv, fname)
  if rn ~= n then fail(("%s: send has %d elements but recv has %d"):format(fname, n, rn)) end
  check(C.cute_nccl_all_reduce(sp, rp, n, dt, op_code(op, fname), h, stream_of(stream, fname, self), err))
end

-- all_gather's recv and reduce_scatter's send hold nranks x the other buffer
local function whole_of(self, fname, big, got, part, n)
  if got ~= n * self._size then
    fail(("%s: %s has %d elements, not nranks x %s = %d x %d = %d"):format(fname, big, got, part, self._size, n,
      n * self._size))
  end
end

-- comm:all_gather(send, recv [, stream]): recv holds size() x send, rank order
function Comm:all_gather(send, recv, stream)
  local fname = "comm:all_gather"
  local h = handle(self, fname)
  local sp, n, dt = buf(send, "send", fname, self)
  local rp, rn = buf(recv, "recv", fname, self)
  same_dtype(send, recv, fname)
  whole_of(self, fname, "recv", rn, "send", n)
  check(C.cute_nccl_all_gather(sp, rp, n, dt, h, stream_of(stream, fname, self), err))
end

-- comm:reduce_scatter(send, recv [, op [, stream]]): send holds size() x recv
function Comm:reduce_scatter(send, recv, op, stream)
  local fname = "comm:reduce_scatter"
  local h = handle(self, fname)
  local sp, sn, dt = buf(send, "send", fname, self)
  local rp, n = buf(recv, "recv", fname, self)
  same_dtype(send, recv, fname)
  whole_of(self, fname, "send", sn, "recv", n)
  check(C.cute_nccl_reduce_scatter(sp, rp, n, dt, op_code(op, fname), h, stream_of(stream, fname, self), err))
end

-- the send and recv of a rooted call (either may be nil: in place)
local function rooted(self, send, recv, fname)
  if send == nil and recv == nil then fail(("%s: needs a send or a recv tensor"):format(fname)) end
  send, recv = send or recv, recv or send
  local sp, n, dt = buf(send, "send", fname, self)
  local rp, rn = buf(recv, "recv", fname, self)
  same_dtype(send, recv, fname)
  if rn ~= n then fail(("%s: send has %d elements but recv has %d"):format(fname, n, rn)) end
  return sp, rp, n, dt
end

-- comm:broadcast(send, recv, root [, stream]): root's send into every recv
function Comm:broadcast(send, recv, root, stream)
  local fname = "comm:broadcast"
  local h = handle(self, fname)
  local sp, rp, n, dt = rooted(self, send, recv, fname)
  check(C.cute_nccl_broadcast(sp, rp, n, dt, int_arg(root or 0, "root", fname), h, stream_of(stream, fname, self),
    err))
end

-- comm:reduce(send, recv, op, root [, stream]): the reduction into root's recv
function Comm:reduce(send, recv, op, root, stream)
  local fname = "comm:reduce"
  local h = handle(self, fname)
  local sp, rp, n, dt = rooted(self, send, recv, fname)
  check(C.cute_nccl_reduce(sp, rp, n, dt, op_code(op, fname), int_arg(root or 0, "root", fname), h,
    stream_of(stream, fname, self), err))
end

function Comm:send(t, peer, stream)
  local fname = "comm:send"
  local h = handle(self, fname)
  local p, n, dt = buf(t, "tensor", fname, self)
  check(C.cute_nccl_send(p, n, dt, int_arg(peer, "peer", fname), h, stream_of(stream, fname, self), err))
end

function Comm:recv(t, peer, stream)
  local fname = "comm:recv"
  local h = handle(self, fname)
  local p, n, dt = buf(t, "tensor", fname, self)
  check(C.cute_nccl_recv(p, n, dt, int_arg(peer, "peer", fname), h, stream_of(stream, fname, self), err))
end

-- ---------------------------------------------------------------------------
-- groups
-- ---------------------------------------------------------------------------

function M.group_start() check(C.cute_nccl_group_start(err)) end
function M.group_end() check(C.cute_nccl_group_end(err)) end

-- nccl.group(fn): fn() between group_start and group_end; group_end runs
-- also when fn raises (fn's error is then the one raised).  Returns fn's results.
function M.group(fn)
  if type(fn) ~= "function" then fail(("nccl.group: %s is not a function"):format(tostring(fn))) end
  M.group_start()
  local res = { pcall(fn) }
  local ok_end, e_end = pcall(M.group_end)
  if not res[1] then cf.rethrow(res[2]) end
  if not ok_end then cf.rethrow(e_end) end
  return unpack(res, 2, table.maxn(res))
end

require("cute.nccl_env").install(M)

return M
