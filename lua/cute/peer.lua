-- cute.peer: several devices in one process and memory shared between
-- processes -- peer access (cute.can_access_peer, cute.enable_peer_access),
-- copies across devices (cute.copy_peer) and CUDA IPC memory handles
-- (t:ipc_handle(), cute.from_ipc_handle).  Merged into `cute` by
-- cute/init.lua; docs/MULTIGPU.md is the reference.  The C side:
-- include/cute_cuda.h (src/cuda_peer.c).
local ffi = require("ffi")
local cf = require("cute.ffi")
local rt = require("cute.runtime")
local mem = require("cute.memory")

local err = cf.err
local check, argerror = cf.check, cf.failf

local M = {}

-- cute.can_access_peer(dev, peer): true if kernels and copies on device dev
-- can address peer's memory (cuDeviceCanAccessPeer; true for dev == peer).
function M.can_access_peer(dev, peer)
  local fname = "cute.can_access_peer"
  if dev == nil or peer == nil then argerror(fname, "expects two device ordinals: cute.can_access_peer(dev, peer)") end
  dev, peer = rt.check_device(dev, fname), rt.check_device(peer, fname)
  local v = ffi.new("int[1]")
  check(rt._driver.cute_cuda_can_access_peer(dev, peer, v, err))
  return v[0] ~= 0
end

-- cute.enable_peer_access(peer [, dev]): kernels and copies on dev (default:
-- the current device) may address peer's memory from now on; idempotent.
-- Kernel launches on dev then accept tensors of peer (lua/cute/launch.lua).
function M.enable_peer_access(peer, dev)
  local fname = "cute.enable_peer_access"
  if peer == nil then argerror(fname, "peer is missing: cute.enable_peer_access(peer [, dev])") end
  peer = rt.check_device(peer, fname)
  dev = rt.check_device(dev, fname)
  if dev == peer then return end -- (a device addresses its own memory)
  local set = rt.peer_enabled[dev]
  if set and set[peer] then return end
  local v = ffi.new("int[1]")
  check(rt._driver.cute_cuda_can_access_peer(dev, peer, v, err))
  if v[0] == 0 then
    argerror(fname, "device %d cannot address device %d's memory (cuDeviceCanAccessPeer is 0: no NVLink " ..
      "or PCIe peer path); copy with cute.copy_peer instead", dev, peer)
  end
  check(rt._driver.cute_cuda_enable_peer_access(dev, peer, err))
  set = rt.peer_enabled[dev] or {}
  set[peer] = true
  rt.peer_enabled[dev] = set
end

-- a tensor of known device with compact memory, for copies and handles
local function usable(t, what, fname)
  if not mem.is_tensor(t) then argerror(fname, "%s is a %s, not a cute tensor", what, type(t)) end
  if t.ptr == 0 then argerror(fname, "%s has been freed", what) end
  if t._strided then
    argerror(fname, "%s has strides {%s}, not compact row-major", what, table.concat(t.strides, ","))
  end
  if t.device == nil then
    argerror(fname, "%s is on an unknown device (a view whose pointer the driver does not know)", what)
  end
end

-- cute.copy_peer(dst, src [, stream]): copy src's bytes into dst, tensors on
-- any devices (cuMemcpyPeerAsync); both compact, of the same byte size.  On
-- stream asynchronously; without one, done when this returns.
function M.copy_peer(dst, src, stream)
  local fname = "cute.copy_peer"
  usable(dst, "dst", fname)
  usable(src, "src", fname)
  if dst._bytes ~= src._bytes then
    argerror(fname, "dst has %d bytes (%s x %d), src %d bytes (%s x %d): the sizes must match", dst._bytes,
      dst.dtype.name, dst._n, src._bytes, src.dtype.name, src._n)
  end
  local sh = rt.stream_handle(stream, fname)
  local d = rt._driver
  check(d.cute_cuda_memcpy_peer_async(dst.ptr, dst.device, src.ptr, src.device, dst._bytes, sh, err))
  if stream == nil then check(d.cute_cuda_stream_synchronize(nil, err)) end
  return dst
end

-- t:ipc_handle(): the 64-byte CUDA IPC handle (a Lua string) of t's
-- allocation, for cute.from_ipc_handle in another process.  Only for
-- memory cute allocated (cute.empty, zeros, from_host).
function M.ipc_handle(t)
  local fname = "Tensor:ipc_handle"
  usable(t, "self", fname)
  if not t._allocated then
    argerror(fname, "the tensor is a view or an opened handle, not memory cute.empty/zeros/from_host allocated " ..
      "(an IPC handle names a whole allocation)")
  end
  local h = ffi.new("char[64]")
  check(rt.on_device(t.device, rt._driver.cute_cuda_ipc_get_handle, t.ptr, h, err))
  return ffi.string(h, 64)
end

local function from_hex(s)
  return (s:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end))
end

-- cute.from_ipc_handle(handle, shape, dtype): a tensor over another
-- process's allocation (handle: t:ipc_handle()'s 64 bytes, or those as 128
-- hex digits), opened in the current device's context with lazy peer access;
-- t.device is the current device.  Closed when collected or by t:free().
function M.from_ipc_handle(handle, shape, dtype)
  local fname = "cute.from_ipc_handle"
  if type(handle) == "string" and #handle == 128 and handle:match("^%x+$") then handle = from_hex(handle) end
  if type(handle) ~= "string" or #handle ~= 64 then
    argerror(fname, "handle is %s, not the 64-byte string of t:ipc_handle() (or 128 hex digits)",
      type(handle) == "string" and ("a string of %d bytes"):format(#handle) or ("a " .. type(handle)))
  end
  local dev = rt.current_device()
  local t = mem._view(0, shape, dtype, nil, nil, fname, dev) -- (shape and dtype checked before opening)
  local cell = t.ptr_cell
  check(rt._driver.cute_cuda_ipc_open_handle(handle, cell, err))
  local release = mem._releaser("cute_cuda_ipc_close_handle", dev)
  ffi.gc(cell, release)
  t.ptr, t._release, t._borrowed, t._ipc = ffi.new("uint64_t", cell[0]), release, nil, true
  return t
end

return M
