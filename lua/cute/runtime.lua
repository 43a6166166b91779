-- cute.runtime: the CUDA runtime seen from Lua -- devices, streams, events,
-- modules and kernel launch.  Merged into `cute` by cute/init.lua; usable
-- alone as require("cute.runtime").  Dtypes live in cute.dtype, device
-- tensors and host transfers in cute.memory; this module's table also reads
-- through to both (require("cute.runtime").empty, .float32, ...).
--
-- Nothing touches the driver until a function needs it; without a driver
-- those functions raise "no CUDA driver: dlopen(libcuda.so.1) failed: ...".
-- The C side is include/cute_cuda.h; docs/RUNTIME.md is the reference.
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")

local C = cf.C
local err = cf.err
local bor = bit.bor
local floor = math.floor

local M = {}

-- errors: cute.ffi's one path (the C message, or "fname: message", at the user's line)
local check, argerror = cf.check, cf.failf

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
  check(M._driver.cute_cuda_device_count(v, err))
  return v[0]
end

-- A device ordinal given by the caller (nil: the current device), checked
-- against the device count; fname names the operation in the error.
function M.check_device(i, fname)
  if i == nil then return M.current_device() end
  if type(i) ~= "number" or i ~= floor(i) or i < 0 then
    argerror(fname, "device %s is not a non-negative integer", tostring(i))
  end
  local n = M.device_count()
  if i >= n then argerror(fname, "device %d does not exist (%d device%s)", i, n, n == 1 and "" or "s") end
  return i
end

local Device = {}
Device.__index = Device
function Device:__tostring()
  return ("cute.device(%d): %s, sm_%d%d, %d SMs, %.1f GiB"):format(self.ordinal, self.name,
    self.cc.major, self.cc.minor, self.sm_count, self.total_mem / 2 ^ 30)
end
-- Make this device current in the calling thread.
function Device:set() M.set_device(self.ordinal) return self end
function Device:synchronize(opts) self:set() return M.synchronize(opts) end
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
    check(M._driver.cute_cuda_get_device(v, err))
    i = v[0]
  end
  if type(i) ~= "number" or i ~= floor(i) or i < 0 then
    argerror("cute.device", "device %s is not a non-negative integer", tostring(i))
  end
  if devices[i] then return devices[i] end
  local p = ffi.new("cute_cuda_device_info")
  check(M._driver.cute_cuda_device_props(i, p, err))
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

-- Wait for all work on the current device.  opts {timeout = s}: wait at most s
-- seconds (polling); false and a message naming the kernels still running
-- when it runs out (cute.fault, docs/FAULTS.md).
function M.synchronize(opts)
  if opts ~= nil then return require("cute.fault").wait_device(opts, "cute.synchronize") end
  check(M._driver.cute_cuda_synchronize(err))
  local dev = M.context.device or M.current_device()
  M.check_asserts(dev, "cute.synchronize")
  M.synced(dev)
  return true
end

-- Objects of each device that a reset after a fault makes stale (cute.fault):
-- weak tables object -> device ordinal.
local function weak() return setmetatable({}, { __mode = "k" }) end
M.live = { tensors = weak(), streams = weak(), events = weak(), modules = weak() }
-- After a successful synchronize of device dev (nil: every device): the
-- launches before it did not fault (cute.fault's ring of recent launches).
function M.synced(dev)
  local f = package.loaded["cute.fault"]
  if f then f.synced(dev) end
end
-- After a wait that saw device dev's work finish (synchronize, a copy back): a
-- cute.assert_ that failed meanwhile (its thread ended, the context is fine) is
-- raised now, from its fault record (cute.fault, docs/FAULTS.md).
function M.check_asserts(dev, what)
  local f = package.loaded["cute.fault"]
  if f and f.records[dev] then f.check_asserts(dev, what) end
end

-- free, total bytes of the current device.
function M.mem_info()
  local f, t = u64p(), u64p()
  check(C.cute_cuda_mem_info(f, t, err))
  return tonumber(f[0]), tonumber(t[0])
end

-- ---------------------------------------------------------------------------
-- streams and events
-- ---------------------------------------------------------------------------

-- The finalizer of a stream or event handle: destroyed in its device's
-- context through the driver that made it (name: the destroy call).
local function destroyer(name, dev)
  local d = M._driver
  return function(h) M.on_device(dev, d[name], h, nil) end
end

local Stream = {}
Stream.__index = Stream
Stream.__tostring = function(s) return ("cute.stream(%s)"):format(tostring(s.handle)) end
function Stream:synchronize(opts)
  if opts ~= nil then return require("cute.fault").wait_stream(self, opts, "stream:synchronize") end
  check(M._driver.cute_cuda_stream_synchronize(self.handle, err))
  M.check_asserts(self.device or M.current_device(), "stream:synchronize")
  return true
end
-- true if all work queued so far has finished.
function Stream:query()
  local d = intp()
  check(M._driver.cute_cuda_stream_query(self.handle, d, err))
  return d[0] == 1
end
-- Later work on this stream waits for `ev` (an event).
function Stream:wait(ev) check(M._driver.cute_cuda_stream_wait_event(self.handle, ev.handle, err)) end
function Stream:destroy()
  local h = self.handle
  if h ~= nil then
    self.handle = nil
    ffi.gc(h, nil)
    check(M.on_device(self.device, M._driver.cute_cuda_stream_destroy, h, err))
  end
end

-- cute.stream{non_blocking = true, device = i, priority = p}: a new stream of
-- device i (default: the current one; s.device), destroyed when collected or by
-- s:destroy().  priority (an integer; s.priority): cuStreamCreateWithPriority,
-- lower is more urgent, the driver clamps it into cute.stream_priority_range(i);
-- without it cuStreamCreate (priority 0).  cute.default_stream is the legacy
-- NULL stream (no device: the current one's).
function M.stream(opts)
  local flags = (opts and opts.non_blocking) and C.CUTE_CU_STREAM_NON_BLOCKING or 0
  local dev = M.check_device(opts and opts.device, "cute.stream")
  local prio = opts and opts.priority
  if prio ~= nil and (type(prio) ~= "number" or prio ~= floor(prio) or math.abs(prio) >= 2 ^ 31) then
    argerror("cute.stream", "priority %s is not an integer (lower is more urgent: cute.stream_priority_range())",
      tostring(prio))
  end
  local out = voidpp()
  if prio == nil then
    check(M.on_device(dev, M._driver.cute_cuda_stream_create, out, flags, err))
  else
    check(M.on_device(dev, M._driver.cute_cuda_stream_create_priority, out, flags, prio, err))
  end
  local s = setmetatable({ handle = ffi.gc(out[0], destroyer("cute_cuda_stream_destroy", dev)), device = dev,
    priority = prio }, Stream)
  M.live.streams[s] = dev
  return s
end

-- cute.stream_priority_range([device]) -> least, greatest: device i's stream
-- priorities (cuCtxGetStreamPriorityRange; e.g. 0, -5: -5 is the most urgent)
function M.stream_priority_range(i)
  local dev = M.check_device(i, "cute.stream_priority_range")
  local least, greatest = intp(), intp()
  check(M.on_device(dev, M._driver.cute_cuda_stream_priority_range, least, greatest, err))
  return least[0], greatest[0]
end

M.default_stream = setmetatable({ handle = nil }, Stream)
M._Stream, M._Event, M._Module = Stream, Event, Module

local function stream_handle(s, fname)
  if s == nil then return nil end
  if getmetatable(s) == Stream then return s.handle end
  if type(s) == "cdata" then return s end
  argerror(fname, "stream %s is not a cute.stream", tostring(s))
end
M.stream_handle = stream_handle

local Event = {}
Event.__index = Event
Event.__tostring = function(e) return ("cute.event(%s)"):format(tostring(e.handle)) end
function Event:record(stream)
  check(M._driver.cute_cuda_event_record(self.handle, stream_handle(stream, "event:record"), err))
  return self
end
function Event:synchronize(opts)
  if opts ~= nil then return require("cute.fault").wait_event(self, opts, "event:synchronize") end
  check(M._driver.cute_cuda_event_synchronize(self.handle, err))
  M.check_asserts(self.device or M.current_device(), "event:synchronize")
  return true
end
function Event:query()
  local d = intp()
  check(M._driver.cute_cuda_event_query(self.handle, d, err))
  return d[0] == 1
end
-- Milliseconds from `start` (recorded earlier) to this event.
function Event:elapsed_ms(start) return M.elapsed_ms(start, self) end
function Event:destroy()
  local h = self.handle
  if h ~= nil then
    self.handle = nil
    ffi.gc(h, nil)
    check(M.on_device(self.device, M._driver.cute_cuda_event_destroy, h, err))
  end
end

-- cute.event{blocking = true, timing = false, device = i}: an event of
-- device i (default: the current one; e.device)
function M.event(opts)
  local flags = 0
  if opts and opts.blocking then flags = bor(flags, C.CUTE_CU_EVENT_BLOCKING_SYNC) end
  if opts and opts.timing == false then flags = bor(flags, C.CUTE_CU_EVENT_DISABLE_TIMING) end
  local dev = M.check_device(opts and opts.device, "cute.event")
  local out = voidpp()
  check(M.on_device(dev, M._driver.cute_cuda_event_create, out, flags, err))
  local e = setmetatable({ handle = ffi.gc(out[0], destroyer("cute_cuda_event_destroy", dev)), device = dev }, Event)
  M.live.events[e] = dev
  return e
end

-- Milliseconds between two recorded events (waits for e1).
function M.elapsed_ms(e0, e1)
  if getmetatable(e0) ~= Event or getmetatable(e1) ~= Event then
    argerror("cute.elapsed_ms", "expects two cute.event objects, got %s and %s", type(e0), type(e1))
  end
  check(M._driver.cute_cuda_event_synchronize(e1.handle, err))
  local ms = floatp()
  check(M._driver.cute_cuda_event_elapsed_ms(e0.handle, e1.handle, ms, err))
  return ms[0]
end

-- ---------------------------------------------------------------------------
-- modules and kernels
-- ---------------------------------------------------------------------------

-- The driver entry points that modules, launches and the current device go
-- through.  Tests and benchmarks without a GPU replace some of them with Lua
-- functions (M._use_driver); the others stay the C ones.
local driver_names = { "cute_cuda_module_load", "cute_cuda_module_unload", "cute_cuda_module_get_function",
  "cute_cuda_launch", "cute_cuda_launch_cluster", "cute_cuda_func_set_max_dynamic_smem",
  "cute_cuda_set_device", "cute_cuda_get_device", "cute_cuda_device_count",
  -- memory, streams and events of a chosen device; peer access and IPC (cute.peer)
  "cute_cuda_malloc", "cute_cuda_free", "cute_cuda_memset_d8", "cute_cuda_memcpy_htod",
  "cute_cuda_stream_create", "cute_cuda_stream_create_priority", "cute_cuda_stream_priority_range",
  "cute_cuda_stream_destroy", "cute_cuda_event_create", "cute_cuda_event_destroy",
  "cute_cuda_can_access_peer", "cute_cuda_enable_peer_access", "cute_cuda_memcpy_peer_async",
  "cute_cuda_stream_synchronize", "cute_cuda_pointer_device",
  "cute_cuda_ipc_get_handle", "cute_cuda_ipc_open_handle", "cute_cuda_ipc_close_handle",
  -- host transfers, synchronisation and events (the CPU target's host memory: cute.target_cpu)
  "cute_cuda_memcpy_htod_async", "cute_cuda_memcpy_dtoh", "cute_cuda_memcpy_dtoh_async", "cute_cuda_memcpy_dtod",
  "cute_cuda_memcpy_dtod_async", "cute_cuda_memset_d16", "cute_cuda_memset_d32", "cute_cuda_synchronize",
  "cute_cuda_stream_query", "cute_cuda_stream_wait_event", "cute_cuda_event_record", "cute_cuda_event_synchronize",
  "cute_cuda_event_query", "cute_cuda_event_elapsed_ms", "cute_cuda_device_props",
  -- faults and recovery (cute.fault): the reset, the fault record's mapped host memory and module global
  "cute_cuda_device_reset", "cute_cuda_host_alloc", "cute_cuda_host_device_pointer", "cute_cuda_module_global_set" }
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

-- Peer access enabled through cute.enable_peer_access: peer_enabled[dev][peer]
-- is true when kernels and copies on dev may address peer's memory (the
-- launch check of lua/cute/launch.lua reads it).
M.peer_enabled = {}

-- f(...) (a driver call returning a status) with device dev's context
-- current, then the current device again; returns f's status (its message in
-- cf.err).  dev nil or current: f is called directly.
function M.on_device(dev, f, ...)
  local cur = M.current_device()
  if dev == nil or dev == cur then return f(...) end
  local d, ctx = drv, M.context
  local s = d.cute_cuda_set_device(dev, err)
  if s ~= 0 then return s end
  ctx.device = dev -- (a finalizer that runs meanwhile sees the context that is current)
  s = f(...)
  if s ~= 0 then M.failed_device = dev end -- (a fault found there is that device's: cute.fault)
  local back = d.cute_cuda_set_device(cur, s == 0 and err or nil)
  ctx.device = cur
  if s == 0 then s = back end
  return s
end

-- d: a table of replacements for some of driver_names, plus optionally
-- available() (the launch path's "is there a GPU"); nil restores the driver.
M._driver_listeners = {}
function M._use_driver(d)
  if d == nil then drv = C
  else
    drv = { available = d.available }
    for _, name in ipairs(driver_names) do drv[name] = d[name] or C[name] end
  end
  M._driver = drv
  for i in pairs(devices) do devices[i] = nil end -- (cute.device's descriptions come from the driver)
  M.context.device = false
  M.peer_enabled = {}
  -- (code generated with the driver table as an upvalue, e.g. launch.lua's
  -- launchers, is dropped: a launcher made under a stand-in must not reach it
  -- after the switch)
  for _, f in ipairs(M._driver_listeners) do f() end
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
  local m = setmetatable({ handle = h, info_log = log ~= nil and ffi.string(log) or "", functions = {} }, Module)
  M.live.modules[m] = M.current_device()
  return m
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
  -- dtypes and device tensors read through (cute.dtype, cute.memory: loaded on
-- first use, as cute.memory needs this module's streams)
setmetatable(M, { __index = function(_, k)
  local v = require("cute.memory")[k]
  if v == nil then v = require("cute.dtype").exports[k] end
  return v
end })

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

-- dtypes and device tensors read through (cute.dtype, cute.memory: loaded on
-- first use, as cute.memory needs this module's streams)
setmetatable(M, { __index = function(_, k)
  local v = require("cute.memory")[k]
  if v == nil then v = require("cute.dtype").exports[k] end
  return v
end })

return M
