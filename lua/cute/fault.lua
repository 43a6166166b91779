-- cute.fault: a kernel's fault on the GPU becomes a Lua error that names the
-- kernel, and the device recovers (docs/FAULTS.md).
--
-- A kernel that reads an illegal address, traps (cute.assert_, cute.arch.trap)
-- or misaligns an access leaves its context with a sticky error (700, 716,
-- 719, ...) that the next synchronize, copy or launch returns.  Every driver
-- error reaches Lua through cf.fail_err, whose hook (cf.on_fault) is
-- M.on_error: for a sticky error it
--   1. reads the fault record a failing cute.assert_ wrote (mapped pinned host
--      memory, before the reset frees it),
--   2. names the kernels launched on that device since its last successful
--      synchronize (a ring of the last RING launches),
--   3. resets the device's primary context and makes every module, stream,
--      event and tensor of it stale (kernels load their compiled binaries again
--      at their next launch; a stale tensor, stream or event is a clear error),
-- and the error raised says all of it.  wait_* are the timeouts of
-- synchronize{timeout = s}.
local ffi = require("ffi")
local cf = require("cute.ffi")
local rt = require("cute.runtime")
local C = cf.C

local M = {}

-- CUresults after which the context is unusable (the CUDA driver API's list of
-- errors that leave "the process in an inconsistent state")
M.sticky = { [700] = true, [702] = true, [710] = true, [714] = true, [715] = true, [716] = true,
  [717] = true, [718] = true, [719] = true }
local address_faults = { [700] = true, [716] = true, [717] = true }

---------------------------------------------------------------------------
-- the ring of recent launches (written by lua/cute/launch.lua's launchers)
---------------------------------------------------------------------------
local RING = 16
-- k: kernel, e: entry (weak: the ring keeps no kernel alive), name: the
-- kernel's name, d: device, q: sequence number, dims[6 (n - 1) + 1 .. 6]: grid
-- and block.  (Only numbers, strings and long-lived objects: a launcher made
-- per call stored here would escape and defeat LuaJIT's allocation sinking.)
local function weakv() return setmetatable({}, { __mode = "v" }) end
local ring = { n = 0, seq = 0, k = weakv(), e = weakv(), name = {}, d = {}, q = {}, dims = {}, synced = {} }
M.ring, M.RING = ring, RING

-- a launch of kernel k (entry e) on device d with grid {gx, gy, gz} and block {bx, by, bz}
function M.record(k, e, d, gx, gy, gz, bx, by, bz)
  local n = ring.n % RING + 1
  local q = ring.seq + 1
  ring.n, ring.seq = n, q
  ring.k[n], ring.e[n], ring.name[n], ring.d[n], ring.q[n] = k, e, k.name, d, q
  local g, o = ring.dims, 6 * n - 6
  g[o + 1], g[o + 2], g[o + 3], g[o + 4], g[o + 5], g[o + 6] = gx, gy, gz, bx, by, bz
end

-- device dev (nil: all) synchronized without an error: earlier launches are fine
function M.synced(dev)
  if dev == nil then
    for i = 1, RING do if ring.d[i] then ring.synced[ring.d[i]] = ring.seq end end
  else
    ring.synced[dev] = ring.seq
  end
end

-- "vadd (grid {..}, block {..}; first launched at f.lua:12)" for ring slot i
local function describe(i)
  local e, g, o = ring.e[i], ring.dims, 6 * i - 6
  return ("%s (grid {%d,%d,%d}, block {%d,%d,%d}%s)"):format(tostring(ring.name[i]), g[o + 1], g[o + 2], g[o + 3],
    g[o + 4], g[o + 5], g[o + 6], e and e.site and ("; first launched at " .. e.site) or "")
end

-- ring slots of device dev since its last successful synchronize, oldest first
-- (none: its last launches)
local function suspects(dev, all)
  local since = ring.synced[dev] or 0
  local out = {}
  for i = 1, RING do
    if ring.d[i] == dev and (all or ring.q[i] > since) then out[#out + 1] = i end
  end
  table.sort(out, function(a, b) return ring.q[a] < ring.q[b] end)
  return out
end
M._suspects = suspects

---------------------------------------------------------------------------
-- the fault record of failing assertions (one per device)
---------------------------------------------------------------------------
M.records = {} -- device -> { host = cute_fault_record *, dptr = uint64_t[1] }
local rec_t = ffi.typeof("cute_fault_record *")

-- The record of device dev (allocated on first use), or false when the driver
-- could not give one (the kernel then runs without: a diagnostic never stops a launch).
local function record_of(dev)
  local r = M.records[dev]
  if r ~= nil then return r end
  local drv = rt._driver
  local p, dptr = ffi.new("void *[1]"), ffi.new("uint64_t[1]")
  local bytes = ffi.sizeof("cute_fault_record")
  r = false
  if drv.cute_cuda_host_alloc(p, bytes, C.CUTE_CU_MEMHOSTALLOC_DEVICEMAP, nil) == 0 then
    if drv.cute_cuda_host_device_pointer(p[0], dptr, nil) == 0 then
      r = { host = ffi.cast(rec_t, p[0]), dptr = dptr }
      ffi.fill(r.host, bytes)
    end
  end
  M.records[dev] = r
  return r
end

-- A module just loaded for a kernel whose plan has assertions: point its
-- cute_fault_rec at the device's record.  (The memory is never freed: one
-- page-locked record per device for the process, until a reset frees it.)
function M.attach(mod, plan)
  if not plan.asserts then return end
  local r = record_of(rt.current_device())
  if r then rt._driver.cute_cuda_module_global_set(mod.handle, "cute_fault_rec", r.dptr, 8, nil) end
end

-- The decoded record of device dev: nil when no assertion failed, else
-- { ref, line, tid = {x,y,z}, ctaid = {x,y,z}, site = {file, line, msg} or nil, kernel = name or nil }.
-- sus: the ring slots that may have written it (the kernel whose plan has that ref and line).
function M.read_record(dev, sus)
  local r = M.records[dev]
  if not r or r.host[0].state == 0 then return nil end
  local h = r.host[0]
  local out = { state = h.state, ref = h.ref, line = h.line, tid = { h.tid[0], h.tid[1], h.tid[2] },
    ctaid = { h.ctaid[0], h.ctaid[1], h.ctaid[2] } }
  for _, i in ipairs(sus or {}) do
    local e = ring.e[i]
    local a = e and e.plan and e.plan.asserts and e.plan.asserts[out.ref]
    if a and a.line == out.line then out.site, out.kernel = a, ring.name[i] end
  end
  return out
end

-- A failing cute.assert_ wrote device dev's record and ended its thread; the
-- kernel finished and the context is fine: the failure is raised at the wait
-- (what) that saw it, and the record is cleared for the next one.
function M.check_asserts(dev, what)
  local r = M.records[dev]
  if not r or r.host[0].state == 0 then return end
  local rec = M.read_record(dev, suspects(dev, true))
  ffi.fill(r.host, ffi.sizeof("cute_fault_record"))
  M.synced(dev)
  cf.fail(("%s: %s\n  the failing thread stopped there; the kernel's other threads ran on, so its results are " ..
    "not to be trusted; the device is fine (docs/FAULTS.md)"):format(what, M.format_record(rec)))
end

function M.format_record(rec)
  local s = rec.site
  local where = s and ("%s:%d: cute.assert_ failed: %s"):format(s.file, s.line, s.msg)
    or ("line %d: a cute.assert_ failed"):format(rec.line)
  return ("%s%s (thread (%d,%d,%d) of block (%d,%d,%d))%s"):format(where,
    rec.kernel and (" in kernel " .. rec.kernel) or "", rec.tid[1], rec.tid[2], rec.tid[3],
    rec.ctaid[1], rec.ctaid[2], rec.ctaid[3], rec.state == 1 and " [record incomplete]" or "")
end

---------------------------------------------------------------------------
-- stale objects after a reset
---------------------------------------------------------------------------
local function lost_index(t) cf.fail(rawget(t, "_lost")) end
local Lost = { __index = lost_index, __tostring = function(t) return "cute (lost): " .. rawget(t, "_lost") end }
M.Lost = Lost

-- obj's fields that hold a dead handle are cleared and any other use is the error why
local function lose(obj, field, why)
  local h = rawget(obj, field)
  if type(h) == "cdata" and h ~= nil then pcall(ffi.gc, h, nil) end
  rawset(obj, field, nil)
  rawset(obj, "_lost", why)
  setmetatable(obj, Lost)
end

-- kernels with a cache on some device (registered by launch.lua's device_root)
M.kernels = setmetatable({}, { __mode = "k" })

function M.mark_stale(dev, cause)
  local live = rt.live
  for t, d in pairs(live.tensors) do
    if d == dev and getmetatable(t) ~= Lost then
      local cell = rawget(t, "ptr_cell")
      if cell then ffi.gc(cell, nil); cell[0] = 0 end
      lose(t, "ptr", ("cute.Tensor (%s, shape {%s}) of device %d: its memory was lost in the reset after %s; " ..
        "make it again (cute.from_host, cute.empty)"):format(t.dtype.name, table.concat(t.shape, ","), dev, cause))
      live.tensors[t] = nil
    end
  end
  for s, d in pairs(live.streams) do
    if d == dev then
      lose(s, "handle", ("cute.stream of device %d: destroyed by the reset after %s; make a new one (cute.stream)")
        :format(dev, cause))
      live.streams[s] = nil
    end
  end
  for e, d in pairs(live.events) do
    if d == dev then
      lose(e, "handle", ("cute.event of device %d: destroyed by the reset after %s; make a new one (cute.event)")
        :format(dev, cause))
      live.events[e] = nil
    end
  end
  for m, d in pairs(live.modules) do
    if d == dev then -- (unloaded with the context: the module's finalizer must not unload it again)
      local h = rawget(m, "handle")
      if h ~= nil then ffi.gc(h, nil) end
      m.handle = nil
      for _, f in pairs(m.functions) do f.handle = nil end
      live.modules[m] = nil
    end
  end
  -- kernels: the device's cache is put aside; the next launch finds its entries
  -- there (launch.lua's sibling_entry) and loads their compiled binaries again
  for k in pairs(M.kernels) do
    local caches = rawget(k, "caches")
    if caches and caches[dev] then
      caches["stale " .. dev] = caches[dev]
      caches[dev] = nil
    end
  end
  M.records[dev] = nil -- (its page-locked memory went with the context)
  for i = 1, RING do if ring.d[i] == dev then ring.d[i] = false end end
  ring.synced[dev] = ring.seq
end

---------------------------------------------------------------------------
-- the error
---------------------------------------------------------------------------
M.resets = 0
local busy = false

local function recover(msg, code, name, dev)
  local sus = suspects(dev)
  local lines = { msg }
  local rec = M.read_record(dev, sus)
  if #sus == 1 then
    lines[#lines + 1] = "  the kernel that faulted: " .. describe(sus[1])
  elseif #sus > 1 then
    local names = {}
    for j, i in ipairs(sus) do names[j] = "    " .. describe(i) end
    lines[#lines + 1] = ("  one of the %d kernels launched on device %d since its last successful synchronize " ..
      "faulted (oldest first; cute.synchronize() after each launch tells them apart):\n%s"):format(#sus, dev,
      table.concat(names, "\n"))
  else
    lines[#lines + 1] = ("  no launch of cute's on device %d since its last successful synchronize " ..
      "(a kernel launched by other code?)"):format(dev)
  end
  if rec then lines[#lines + 1] = "  " .. M.format_record(rec) end
  local cause = ("%s in %s"):format(name, #sus == 1 and ("kernel " .. tostring(ring.name[sus[1]]))
    or rec and rec.kernel and ("kernel " .. rec.kernel) or ("a kernel on device " .. dev))
  local e2 = ffi.new("cute_err[1]")
  M.records[dev] = nil -- (read; its page-locked memory goes with the context, even when the reset then fails)
  if rt._driver.cute_cuda_device_reset(dev, e2) ~= 0 then
    -- (every object of the device is dead either way: clear errors from now on, no finalizer into the context)
    M.mark_stale(dev, cause)
    lines[#lines + 1] = "  the device could not be reset: " .. ffi.string(e2[0].msg) ..
      "\n  the process cannot use this device any more: restart it (CUDA keeps an address fault's error for the " ..
      "life of the process: docs/FAULTS.md)"
  else
    M.resets = M.resets + 1
    M.mark_stale(dev, cause)
    lines[#lines + 1] = ("  device %d was reset: its tensors, streams and events are lost (using one is an error); " ..
      "kernels load again at their next launch"):format(dev)
  end
  if address_faults[code] and not rec then
    lines[#lines + 1] = "  to find the Lua line: run it with CUTE_TARGET=cpu (bounds-checked), or under compute-sanitizer " ..
      "with cute.kernel(f, {lineinfo = true}) (docs/FAULTS.md)"
  end
  return table.concat(lines, "\n")
end

-- cf.on_fault: msg (a driver error's text) for a sticky error becomes the
-- report above, after the recovery; other messages pass unchanged.
function M.on_error(msg)
  if busy then return msg end
  -- the device of the failed call: another one's when it went through rt.on_device, else the current one
  local dev = rt.failed_device
  rt.failed_device = nil
  local name, code = msg:match("(CUDA_ERROR_[%u_]+) %((%d+)%)")
  code = tonumber(code)
  if not code or not M.sticky[code] then return msg end
  dev = dev or rt.current_device()
  local cpu = package.loaded["cute.target_cpu"]
  if cpu and cpu.active then return msg end
  busy = true
  local ok, out = pcall(recover, msg, code, name, dev)
  busy = false
  if not ok then return msg .. "\n  (the recovery failed: " .. tostring(out) .. ")" end
  return out
end
cf.on_fault = M.on_error

-- cute.reset_device([i]): reset device i (default: the current one) as after a
-- fault; the only way to stop a kernel that never finishes.
function M.reset_device(i)
  local dev = rt.check_device(i, "cute.reset_device")
  cf.check(rt.on_device(dev, rt._driver.cute_cuda_device_reset, dev, cf.err), "cute.reset_device")
  M.resets = M.resets + 1
  M.mark_stale(dev, "cute.reset_device(" .. dev .. ")")
end

---------------------------------------------------------------------------
-- timeouts: synchronize{timeout = s}
---------------------------------------------------------------------------
pcall(ffi.cdef, "int usleep(unsigned int usec);")

local function timeout_of(opts, fname)
  if type(opts) ~= "table" then cf.fail(("%s: opts %s is not a table such as {timeout = 5}"):format(fname, tostring(opts))) end
  local t = opts.timeout
  if t == nil then return nil end
  if type(t) ~= "number" or t < 0 or t ~= t then
    cf.fail(("%s: timeout = %s is not a number of seconds >= 0"):format(fname, tostring(t)))
  end
  return t
end

-- poll done() until it is true (true) or timeout seconds pass (false)
local function poll(done, timeout)
  local t0 = C.cute_cuda_now_us()
  local nap = 20
  while true do
    if done() then return true end
    if C.cute_cuda_now_us() - t0 >= timeout * 1e6 then return false end
    ffi.C.usleep(nap)
    nap = math.min(nap * 2, 2000)
  end
end
M._poll = poll

local function still_running(fname, timeout, dev, what)
  local sus = suspects(dev)
  local names = {}
  for j, i in ipairs(sus) do names[j] = describe(i) end
  local running = #names > 0 and ("; launched since the last synchronize: " .. table.concat(names, ", ")) or ""
  return ("%s: timed out after %g s: %s on device %d still running%s. CUDA cannot stop a running kernel: " ..
    "only destroying its context does (cute.reset_device(%d): every tensor, stream and event of device %d is lost)")
    :format(fname, timeout, what, dev, running, dev, dev)
end

local intp = ffi.typeof("int[1]")
local function query(f, h)
  local d = intp()
  cf.check(f(h, d, cf.err))
  return d[0] == 1
end

-- cute.synchronize{timeout = s}: the default stream and every live
-- cute.stream of the current device
function M.wait_device(opts, fname)
  local timeout = timeout_of(opts, fname)
  if timeout == nil then return rt.synchronize() end
  local dev = rt.current_device()
  local drv = rt._driver
  local ok = poll(function()
    if not query(drv.cute_cuda_stream_query, nil) then return false end
    for s, d in pairs(rt.live.streams) do
      if d == dev and rawget(s, "handle") ~= nil and not query(drv.cute_cuda_stream_query, s.handle) then return false end
    end
    return true
  end, timeout)
  if not ok then return false, still_running(fname, timeout, dev, "work") end
  return rt.synchronize()
end

function M.wait_stream(s, opts, fname)
  local timeout = timeout_of(opts, fname)
  if timeout == nil then return s:synchronize() end
  local drv = rt._driver
  if not poll(function() return query(drv.cute_cuda_stream_query, s.handle) end, timeout) then
    return false, still_running(fname, timeout, s.device or rt.current_device(), "work on " .. tostring(s))
  end
  return s:synchronize()
end

function M.wait_event(e, opts, fname)
  local timeout = timeout_of(opts, fname)
  if timeout == nil then return e:synchronize() end
  local drv = rt._driver
  if not poll(function() return query(drv.cute_cuda_event_query, e.handle) end, timeout) then
    return false, still_running(fname, timeout, e.device or rt.current_device(), "the work before " .. tostring(e))
  end
  return e:synchronize()
end

return M
