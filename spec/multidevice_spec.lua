-- Several devices in one process without a GPU (docs/MULTIGPU.md): a
-- stand-in driver of two devices (K._use_driver, as spec/launch_spec.lua
-- does) records which device was current at each allocation, free, stream,
-- event, module load and launch; the trace, compile and parameter writer run
-- for real.  Covers: tensors on a chosen device (t.device) and their release
-- in its context, streams and events per device, the launch's device check
-- (error, and success once peer access is enabled), the stream check,
-- compile once per arch / load per device, cute.copy_peer, IPC handles and
-- DLPack's device id.  spec/multidevice_gpu_spec.lua runs it on two GPUs.
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")
local rt = require("cute.runtime")
local dl = require("cute.dlpack")
local util = dofile("spec/support/util.lua")
local f32 = cute.float32
local THIS = "spec/multidevice_spec.lua"
local has = util.has

local stub
local function reset()
  stub = { device = 0, ndev = 2, next = 0x10000, mallocs = {}, frees = {}, loads = {}, launches = {},
    streams = {}, destroyed = {}, events = {}, peers = {}, enabled = {}, copies = {}, syncs = 0,
    opened = {}, closed = {}, memsets = {}, can = 1 }
end
reset()
local function addr(p) return tonumber(ffi.cast("uint64_t", p)) end
local function handle(p) return tonumber(ffi.cast("uintptr_t", p)) end
local function fresh() stub.next = stub.next + 0x1000; return stub.next end
local driver = {
  available = function() return true end,
  cute_cuda_device_count = function(out) out[0] = stub.ndev; return 0 end,
  cute_cuda_get_device = function(out) out[0] = stub.device; return 0 end,
  cute_cuda_set_device = function(i) stub.device = i; return 0 end,
  cute_cuda_malloc = function(cell, bytes)
    cell[0] = fresh()
    stub.mallocs[#stub.mallocs + 1] = { ptr = addr(cell[0]), bytes = tonumber(bytes), device = stub.device }
    return 0
  end,
  cute_cuda_free = function(p) stub.frees[#stub.frees + 1] = { ptr = addr(p), device = stub.device }; return 0 end,
  cute_cuda_memset_d8 = function(p) stub.memsets[#stub.memsets + 1] = { ptr = addr(p), device = stub.device }; return 0 end,
  cute_cuda_memcpy_htod = function() return 0 end,
  cute_cuda_stream_create = function(out)
    out[0] = ffi.cast("void *", fresh())
    stub.streams[handle(out[0])] = stub.device
    return 0
  end,
  cute_cuda_stream_destroy = function(h) stub.destroyed[handle(h)] = stub.device; return 0 end,
  cute_cuda_event_create = function(out)
    out[0] = ffi.cast("void *", fresh())
    stub.events[handle(out[0])] = stub.device
    return 0
  end,
  cute_cuda_event_destroy = function(h) stub.destroyed[handle(h)] = stub.device; return 0 end,
  cute_cuda_stream_synchronize = function() stub.syncs = stub.syncs + 1; return 0 end,
  cute_cuda_can_access_peer = function(d, p, out) stub.peers[#stub.peers + 1] = { d, p }; out[0] = stub.can; return 0 end,
  cute_cuda_enable_peer_access = function(d, p) stub.enabled[#stub.enabled + 1] = { d, p }; return 0 end,
  cute_cuda_memcpy_peer_async = function(dst, dd, src, sd, bytes, s)
    stub.copies[#stub.copies + 1] = { dst = addr(dst), dst_dev = dd, src = addr(src), src_dev = sd,
      bytes = tonumber(bytes), stream = s ~= nil and handle(s) or nil }
    return 0
  end,
  cute_cuda_pointer_device = function(_, out) -- (stub.ptr_dev nil: the driver does not know the pointer)
    if stub.ptr_dev == nil then return 1 end
    out[0] = stub.ptr_dev
    return 0
  end,
  cute_cuda_ipc_get_handle = function(p, h)
    ffi.fill(h, 64, 0x41 + stub.device)
    ffi.cast("uint64_t *", h)[0] = p
    return 0
  end,
  cute_cuda_ipc_open_handle = function(h, out)
    out[0] = ffi.cast("const uint64_t *", h)[0] + 0x100000
    stub.opened[#stub.opened + 1] = { ptr = addr(out[0]), device = stub.device }
    return 0
  end,
  cute_cuda_ipc_close_handle = function(p) stub.closed[#stub.closed + 1] = { ptr = addr(p), device = stub.device }; return 0 end,
  cute_cuda_module_load = function(_, _, _, out)
    out[0] = ffi.cast("void *", fresh())
    stub.loads[#stub.loads + 1] = { handle = handle(out[0]), device = stub.device }
    return 0
  end,
  cute_cuda_module_get_function = function(mod, _, out) out[0] = ffi.cast("void *", handle(mod) + 1); return 0 end,
  cute_cuda_module_unload = function() return 0 end,
  cute_cuda_launch = function(fn, _, _, _, _, _, _, _, stream, params)
    stub.launches[#stub.launches + 1] = { fn = handle(fn), device = stub.device,
      stream = stream ~= nil and handle(stream) or nil, p1 = addr(ffi.cast("uint64_t *", params[0])[0]),
      p2 = addr(ffi.cast("uint64_t *", params[1])[0]) }
    return 0
  end,
  cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
}

setup(function() K._use_driver(driver) end)
teardown(function() K._use_driver(nil) end)
before_each(function()
  reset()
  K._use_driver(driver) -- (also forgets the peers enabled by an earlier test)
end)

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local copy2 = function(A, B)
  local i = cute.arch.thread_idx()
  B[i] = A[i]
end

describe("tensors on a chosen device", function()
  it("cute.empty/zeros/from_host allocate on opts.device (default: the current one) and record t.device", function()
    local a = cute.empty({ 4, 8 }, f32, { device = 1 })
    assert.equal(1, a.device)
    assert.same({ ptr = addr(a.ptr), bytes = 128, device = 1 }, stub.mallocs[1])
    assert.equal(0, stub.device) -- (the current device again)
    assert.equal(0, cute.current_device())
    local z = cute.zeros(16, f32, { device = 1 })
    assert.equal(1, z.device)
    assert.same({ ptr = addr(z.ptr), device = 1 }, stub.memsets[1])
    local h = cute.from_host({ 1, 2, 3 }, f32, nil, { device = 1 })
    assert.equal(1, h.device)
    assert.equal(1, stub.mallocs[3].device)
    local d0 = cute.empty(4, f32)
    assert.equal(0, d0.device)
    cute.set_device(1)
    assert.equal(1, cute.empty(4, f32).device)
    cute.set_device(0)
  end)

  it("frees in the owning device's context: t:free() and when collected", function()
    local a = cute.empty(8, f32, { device = 1 })
    local p = addr(a.ptr)
    a:free()
    assert.same({ ptr = p, device = 1 }, stub.frees[1])
    assert.equal(0, stub.device)
    a:free() -- (idempotent)
    assert.equal(1, #stub.frees)
    local b = cute.empty(8, f32, { device = 1 })
    p = addr(b.ptr)
    b = nil -- luacheck: ignore
    collectgarbage(); collectgarbage()
    assert.same({ ptr = p, device = 1 }, stub.frees[2])
    assert.equal(0, stub.device)
  end)

  it("cute.from_ptr asks the driver for the pointer's device: an ordinal, or nil (host, managed, unknown)", function()
    stub.ptr_dev = 1
    assert.equal(1, cute.from_ptr(4096, 16, f32).device)
    stub.ptr_dev = -1
    assert.is_nil(cute.from_ptr(4096, 16, f32).device)
    stub.ptr_dev = nil
    assert.is_nil(cute.from_ptr(4096, 16, f32).device)
  end)

  it("a device that does not exist, or is not an ordinal, is an error naming the call and the value", function()
    assert.is_truthy(has(err_of(cute.empty, 4, f32, { device = 2 }), "cute.empty: device 2 does not exist (2 devices)"))
    assert.is_truthy(has(err_of(cute.zeros, 4, f32, { device = -1 }), "cute.zeros: device -1 is not a non-negative integer"))
    assert.is_truthy(has(err_of(cute.from_host, { 1 }, f32, nil, { device = "1" }), "cute.from_host: device 1 is not"))
    assert.is_truthy(has(err_of(cute.empty, 4, f32, 1), "cute.empty: opts is a number, not a table"))
    assert.equal(0, #stub.mallocs)
  end)
end)

describe("streams and events per device", function()
  it("cute.stream{device = 1} and cute.event{device = 1} are made and destroyed in device 1's context", function()
    local s = cute.stream{ device = 1 }
    local e = cute.event{ device = 1 }
    assert.equal(1, s.device)
    assert.equal(1, e.device)
    assert.equal(1, stub.streams[handle(s.handle)])
    assert.equal(1, stub.events[handle(e.handle)])
    assert.equal(0, stub.device)
    local sh, eh = handle(s.handle), handle(e.handle)
    s:destroy()
    e:destroy()
    assert.equal(1, stub.destroyed[sh])
    assert.equal(1, stub.destroyed[eh])
    assert.equal(0, cute.stream().device)
    assert.is_truthy(has(err_of(cute.stream, { device = 7 }), "cute.stream: device 7 does not exist"))
  end)
end)

describe("the launch's device check", function()
  it("a tensor on another device is an error naming the kernel, the argument and both devices", function()
    local k = cute.kernel(copy2, { name = "copy2" })
    local A = cute.empty(32, f32)
    local B = cute.empty(32, f32, { device = 1 })
    local e = err_of(function() k({ grid = 1, block = 32 }, A, B) end)
    assert.is_truthy(has(e, "kernel copy2: argument 2 (B) is a tensor on device 1, the launch is on device 0"), e)
    assert.is_truthy(has(e, "cute.enable_peer_access(1)"), e)
    assert.is_truthy(has(e, THIS .. ":"), e) -- (at the user's line)
    -- the hit path (a launcher whose signature is cached) checks too
    local B0 = cute.empty(32, f32)
    local l = k:launch{ grid = 1, block = 32 }
    l(A, B0)
    e = err_of(function() l(A, B) end)
    assert.is_truthy(has(e, "argument 2 (B) is a tensor on device 1, the launch is on device 0"), e)
    assert.equal(1, #stub.launches)
    -- on device 1 the tensor of device 0 is the wrong one
    cute.set_device(1)
    e = err_of(function() l(A, B) end)
    assert.is_truthy(has(e, "argument 1 (A) is a tensor on device 0, the launch is on device 1"), e)
    cute.set_device(0)
  end)

  it("after cute.enable_peer_access(1) the kernel gets device 1's pointer", function()
    local k = cute.kernel(copy2, { name = "copy2p" })
    local A = cute.empty(32, f32)
    local B = cute.empty(32, f32, { device = 1 })
    assert.is_true(cute.can_access_peer(0, 1))
    cute.enable_peer_access(1)
    assert.same({ { 0, 1 } }, stub.enabled)
    cute.enable_peer_access(1) -- (idempotent: the driver is not asked again)
    assert.equal(1, #stub.enabled)
    k({ grid = 1, block = 32 }, A, B)
    local l = stub.launches[1]
    assert.equal(0, l.device)
    assert.equal(addr(A.ptr), l.p1)
    assert.equal(addr(B.ptr), l.p2)
    -- only from device 0: device 1 was not given access to device 0
    cute.set_device(1)
    assert.is_truthy(has(err_of(function() k({ grid = 1, block = 32 }, A, B) end),
      "argument 1 (A) is a tensor on device 0, the launch is on device 1"))
    cute.enable_peer_access(0) -- (on the current device, 1)
    assert.same({ 1, 0 }, stub.enabled[2])
    k({ grid = 1, block = 32 }, A, B)
    assert.equal(1, stub.launches[2].device)
    cute.set_device(0)
  end)

  it("enable_peer_access: devices without a peer path, a missing or unknown peer, are errors", function()
    stub.can = 0
    assert.is_false(cute.can_access_peer(0, 1))
    assert.is_truthy(has(err_of(cute.enable_peer_access, 1), "cute.enable_peer_access: device 0 cannot address device 1"))
    assert.equal(0, #stub.enabled)
    assert.is_truthy(has(err_of(cute.enable_peer_access), "peer is missing"))
    assert.is_truthy(has(err_of(cute.enable_peer_access, 3), "device 3 does not exist"))
    assert.is_truthy(has(err_of(cute.can_access_peer, 0), "expects two device ordinals"))
    cute.enable_peer_access(0) -- (a device and itself: nothing to do)
    assert.equal(0, #stub.enabled)
  end)

  it("tables the caller describes (no t.device) are not checked", function()
    local k = cute.kernel(copy2, { name = "copy2t" })
    k({ grid = 1, block = 32 }, { ptr = 4096, shape = { 32 }, strides = { 1 }, dtype = f32 },
      { ptr = 8192, shape = { 32 }, strides = { 1 }, dtype = f32 })
    assert.equal(1, #stub.launches)
  end)

  it("a stream of another device is an error; the default stream is any device's", function()
    local k = cute.kernel(copy2, { name = "copy2s" })
    local A, B = cute.empty(32, f32), cute.empty(32, f32)
    local s1 = cute.stream{ device = 1 }
    local want = "kernel copy2s: the stream is on device 1, the launch is on device 0"
    assert.is_truthy(has(err_of(function() k({ grid = 1, block = 32, stream = s1 }, A, B) end), want))
    local l = k:launch{ grid = 1, block = 32, stream = s1 }
    assert.is_truthy(has(err_of(function() l(A, B) end), want))
    k({ grid = 1, block = 32, stream = cute.default_stream }, A, B)
    local s0 = cute.stream()
    k({ grid = 1, block = 32, stream = s0 }, A, B)
    assert.equal(handle(s0.handle), stub.launches[#stub.launches].stream)
  end)
end)

describe("compiled once per arch, loaded per device", function()
  it("a second device of the same target loads the first device's image: one compile, a module per device", function()
    local k = cute.kernel(copy2, { name = "copy2c" })
    local cfg = { grid = 1, block = 32 }
    k(cfg, cute.empty(32, f32), cute.empty(32, f32))
    k(cfg, cute.empty(32, f32), cute.empty(32, f32))
    assert.equal(1, k.compiles)
    assert.equal(1, k.traces)
    assert.same({ 0 }, { stub.loads[1].device })
    cute.set_device(1)
    k(cfg, cute.empty(32, f32), cute.empty(32, f32))
    k(cfg, cute.empty(32, f32), cute.empty(32, f32))
    assert.equal(1, k.compiles)
    assert.equal(1, k.traces)
    assert.equal(2, #stub.loads)
    assert.equal(1, stub.loads[2].device)
    assert.equal(stub.loads[2].handle + 1, stub.launches[3].fn) -- (device 1's module)
    assert.equal(1, stub.launches[3].device)
    cute.set_device(0)
    k(cfg, cute.empty(32, f32), cute.empty(32, f32))
    assert.equal(2, #stub.loads)
    assert.equal(stub.loads[1].handle + 1, stub.launches[5].fn)
    -- a new signature on device 1 compiles once more (and only there)
    cute.set_device(1)
    k(cfg, cute.empty(64, f32), cute.empty(64, f32))
    assert.equal(2, k.compiles)
    cute.set_device(0)
  end)
end)

describe("cute.copy_peer", function()
  it("copies between tensors of any devices through cuMemcpyPeerAsync, synchronously without a stream", function()
    local a = cute.empty(64, f32)
    local b = cute.empty(64, f32, { device = 1 })
    assert.equal(b, cute.copy_peer(b, a))
    assert.same({ dst = addr(b.ptr), dst_dev = 1, src = addr(a.ptr), src_dev = 0, bytes = 256 }, stub.copies[1])
    assert.equal(1, stub.syncs)
    local s = cute.stream()
    cute.copy_peer(a, b, s)
    assert.same({ dst = addr(a.ptr), dst_dev = 0, src = addr(b.ptr), src_dev = 1, bytes = 256,
      stream = handle(s.handle) }, stub.copies[2])
    assert.equal(1, stub.syncs)
    -- t:copy_from across devices takes the same path
    a:copy_from(b)
    assert.same({ dst = addr(a.ptr), dst_dev = 0, src = addr(b.ptr), src_dev = 1, bytes = 256 }, stub.copies[3])
  end)

  it("size mismatch, a strided or freed tensor, an unknown device or a non-tensor are errors", function()
    local a, b = cute.empty(64, f32), cute.empty(32, f32, { device = 1 })
    assert.is_truthy(has(err_of(cute.copy_peer, b, a),
      "cute.copy_peer: dst has 128 bytes (float32 x 32), src 256 bytes (float32 x 64): the sizes must match"))
    local v = cute.from_ptr(4096, { 4, 4 }, f32, { 8, 1 })
    assert.is_truthy(has(err_of(cute.copy_peer, v, a), "cute.copy_peer: dst has strides {8,1}, not compact"))
    local u = cute.from_ptr(4096, { 64 }, f32)
    assert.is_nil(u.device)
    assert.is_truthy(has(err_of(cute.copy_peer, u, a), "dst is on an unknown device"))
    assert.is_truthy(has(err_of(cute.copy_peer, a, 5), "cute.copy_peer: src is a number, not a cute tensor"))
    b:free()
    assert.is_truthy(has(err_of(cute.copy_peer, a, b), "src has been freed"))
    assert.equal(0, #stub.copies)
  end)
end)

describe("CUDA IPC handles", function()
  it("t:ipc_handle() is 64 bytes; from_ipc_handle opens it on the current device and closes it when freed", function()
    local a = cute.empty(64, f32, { device = 1 })
    local h = a:ipc_handle()
    assert.equal(64, #h)
    assert.equal(string.char(0x42), h:sub(9, 9)) -- (asked on device 1)
    local t = cute.from_ipc_handle(h, { 8, 8 }, f32)
    assert.equal(0, t.device)
    assert.same({ ptr = addr(a.ptr) + 0x100000, device = 0 }, stub.opened[1])
    assert.equal(addr(t.ptr), stub.opened[1].ptr)
    assert.same({ 8, 8 }, t.shape)
    local p = addr(t.ptr)
    t:free()
    assert.same({ { ptr = p, device = 0 } }, stub.closed)
    assert.equal(0, #stub.frees) -- (closed, never cuMemFree'd)
    -- the hex form, opened on device 1, closed there when collected
    local hex = h:gsub(".", function(c) return ("%02x"):format(c:byte()) end)
    cute.set_device(1)
    local t2 = cute.from_ipc_handle(hex, 64, f32)
    cute.set_device(0)
    assert.equal(1, t2.device)
    p = addr(t2.ptr)
    t2 = nil -- luacheck: ignore
    collectgarbage(); collectgarbage()
    assert.same({ ptr = p, device = 1 }, stub.closed[2])
  end)

  it("bad handles, views and opened handles are errors", function()
    assert.is_truthy(has(err_of(cute.from_ipc_handle, "abc", 4, f32),
      "cute.from_ipc_handle: handle is a string of 3 bytes, not the 64-byte string"))
    assert.is_truthy(has(err_of(cute.from_ipc_handle, nil, 4, f32), "handle is a nil"))
    assert.is_truthy(has(err_of(cute.from_ipc_handle, ("x"):rep(64), 0, f32), "cute.from_ipc_handle: shape"))
    local v = cute.from_ptr(4096, 64, f32)
    v.device = 0
    assert.is_truthy(has(err_of(v.ipc_handle, v), "Tensor:ipc_handle: the tensor is a view or an opened handle"))
    local t = cute.from_ipc_handle(cute.empty(4, f32):ipc_handle(), 4, f32)
    assert.is_truthy(has(err_of(t.ipc_handle, t), "a view or an opened handle"))
    assert.is_truthy(has(err_of(t.to_dlpack, t), "another process's memory"))
    assert.equal(1, #stub.opened)
  end)
end)

describe("DLPack and devices", function()
  it("to_dlpack exports t.device as device_id; from_dlpack of kDLCUDA memory sets t.device", function()
    local v = require("cute.memory")._view(0x7f0000000000, { 4 }, f32, nil, nil, "test", 1)
    local m = v:to_dlpack()
    assert.equal(1, tonumber(m.dl_tensor.device.device_id))
    local back = cute.from_dlpack(m)
    assert.equal(1, back.device)
    back:free()
    local host = require("cute.memory")._view(0x7f0000000000, { 4 }, f32, nil, nil, "test", nil)
    host.device_type, host.device_id = dl.kDLCUDAHost, 0
    local hb = cute.from_dlpack(host:to_dlpack())
    assert.is_nil(hb.device) -- (pinned host memory: any device addresses it)
    hb:free()
  end)
end)
