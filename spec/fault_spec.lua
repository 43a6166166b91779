-- Faults on the GPU (lua/cute/fault.lua, src/cuda_fault.c, docs/FAULTS.md):
-- with a stub driver whose synchronize, launch or query returns CUDA's sticky
-- errors, the Lua error names the kernel and the error, the device is reset,
-- kernels load again at their next launch without a new trace or compile, and
-- the reset's stale tensors, streams and events are clear errors; a failing
-- cute.assert_'s fault record is decoded; synchronize{timeout = s} gives up on
-- a stream that stays busy.  The #gpu specs do it for real (pending here).
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")
local rt = require("cute.runtime")
local fault = require("cute.fault")
local util = dofile("spec/support/util.lua")
local C = require("cute.ffi").C
local f32 = cute.float32
local THIS = "spec/fault_spec.lua"
local has, err_of = util.has, util.err_of
local function line_of(marker) return util.line_of(THIS, marker) end

-- the stub: a driver whose answers the tests set
local stub
local function cuda_err(code, call, e) return C.cute_cuda_format_error(code, call, e) end
local function reset_stub()
  stub = { loads = 0, launches = 0, resets = {}, frees = 0, unloaded = {}, globals = {}, sync = 0, launch = 0,
    busy = false, mallocs = 0, host = {} }
end
reset_stub()
local driver = {
  available = function() return true end,
  cute_cuda_module_load = function(_, _, _, out)
    stub.loads = stub.loads + 1
    out[0] = ffi.cast("void*", 65536 * stub.loads)
    return 0
  end,
  cute_cuda_module_get_function = function(mod, _, out)
    out[0] = ffi.cast("void*", ffi.cast("uintptr_t", mod) + 1)
    return 0
  end,
  cute_cuda_module_unload = function(h) stub.unloaded[tonumber(ffi.cast("uintptr_t", h))] = true; return 0 end,
  cute_cuda_launch = function(_, _, _, _, _, _, _, _, _, _, e)
    stub.launches = stub.launches + 1
    if stub.launch ~= 0 then return cuda_err(stub.launch, "cuLaunchKernel(grid (1,1,1), block (32,1,1), smem 0)", e) end
    return 0
  end,
  cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
  cute_cuda_get_device = function(out) out[0] = 0; return 0 end,
  cute_cuda_set_device = function() return 0 end,
  cute_cuda_device_count = function(out) out[0] = 1; return 0 end,
  cute_cuda_malloc = function(cell)
    stub.mallocs = stub.mallocs + 1
    cell[0] = 0x10000000 * stub.mallocs
    return 0
  end,
  cute_cuda_free = function() stub.frees = stub.frees + 1; return 0 end,
  cute_cuda_memcpy_dtoh = function() return 0 end,
  cute_cuda_synchronize = function(e)
    if stub.sync ~= 0 then return cuda_err(stub.sync, "cuCtxSynchronize", e) end
    return 0
  end,
  cute_cuda_stream_create = function(out) out[0] = ffi.cast("void*", 0x5000); return 0 end,
  cute_cuda_stream_destroy = function() return 0 end,
  cute_cuda_stream_synchronize = function() return 0 end,
  cute_cuda_stream_query = function(_, done) done[0] = stub.busy and 0 or 1; return 0 end,
  cute_cuda_event_create = function(out) out[0] = ffi.cast("void*", 0x6000); return 0 end,
  cute_cuda_event_destroy = function() return 0 end,
  cute_cuda_event_synchronize = function() return 0 end,
  cute_cuda_event_query = function(_, done) done[0] = stub.busy and 0 or 1; return 0 end,
  cute_cuda_device_reset = function(dev, e)
    stub.resets[#stub.resets + 1] = dev
    if stub.reset_fails then return cuda_err(999, "cuDevicePrimaryCtxReset(device 0)", e) end
    return 0
  end,
  cute_cuda_host_alloc = function(out, bytes)
    local b = ffi.new("char[?]", bytes)
    stub.host[#stub.host + 1] = b
    out[0] = b
    return 0
  end,
  cute_cuda_host_device_pointer = function(p, out) out[0] = ffi.cast("uintptr_t", p); return 0 end,
  cute_cuda_module_global_set = function(mod, name, src)
    stub.globals[#stub.globals + 1] = { mod = tonumber(ffi.cast("uintptr_t", mod)), name = ffi.string(name),
      value = ffi.cast("uint64_t*", src)[0] }
    return 0
  end,
}

local function fk(A) local i = cute.arch.thread_idx(); A[i] = A[i] + 1 end
local function gk(A) local i = cute.arch.thread_idx(); A[i] = A[i] * 2 end

describe("a fault after a launch (stub driver)", function()
  setup(function() K._use_driver(driver) end)
  teardown(function() K._use_driver(nil) end)
  before_each(function() reset_stub(); cute.synchronize() end)

  it("the error at the next synchronize names the kernel, the CUDA error and what to do; the device is reset", function()
    local k = cute.kernel(fk)
    local A = cute.empty(64, f32)
    k:launch{ grid = 1, block = 32 }(A) -- FIRST_LAUNCH
    stub.sync = 700
    local e = err_of(function() cute.synchronize() end) -- FAULT_SYNC
    assert.truthy(has(e, THIS .. ":" .. line_of("FAULT_SYNC")), e)
    assert.truthy(has(e, "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)"), e)
    assert.truthy(has(e, "the kernel that faulted: " .. k.name .. " (grid {1,1,1}, block {32,1,1}; first launched at " ..
      THIS .. ":" .. line_of("FIRST_LAUNCH") .. ")"), e)
    assert.truthy(has(e, "device 0 was reset"), e)
    assert.truthy(has(e, "CUTE_TARGET=cpu"), e)
    assert.same({ 0 }, stub.resets)
  end)

  it("after the reset the kernel loads again at its next launch, without a new trace or compile", function()
    local k = cute.kernel(fk)
    local A = cute.empty(64, f32)
    k:launch{ grid = 1, block = 32 }(A)
    local loads, traces = stub.loads, k.traces
    local old = 65536 * loads
    stub.sync = 719
    err_of(function() cute.synchronize() end)
    stub.sync = 0
    local B = cute.empty(64, f32)
    k:launch{ grid = 1, block = 32 }(B)
    assert.equal(loads + 1, stub.loads)
    assert.equal(traces, k.traces)
    k:launch{ grid = 1, block = 32 }(B) -- (then the fast path again: no further load)
    assert.equal(loads + 1, stub.loads)
    collectgarbage(); collectgarbage()
    assert.is_nil(stub.unloaded[old]) -- (the dead module is never unloaded again)
  end)

  it("tensors, streams and events of the reset device give a clear error; their memory is not freed twice", function()
    local k = cute.kernel(fk)
    local A = cute.empty(64, f32)
    local s, ev = cute.stream(), cute.event()
    k:launch{ grid = 1, block = 32 }(A)
    stub.sync = 700
    err_of(function() cute.synchronize() end)
    stub.sync = 0
    local e = err_of(function() k:launch{ grid = 1, block = 32 }(A) end) -- LOST_LAUNCH
    assert.truthy(has(e, THIS .. ":" .. line_of("LOST_LAUNCH")), e)
    assert.truthy(has(e, "cute.Tensor (float32, shape {64}) of device 0: its memory was lost in the reset after " ..
      "CUDA_ERROR_ILLEGAL_ADDRESS in kernel " .. k.name), e)
    assert.truthy(has(err_of(function() A:to_host() end), "its memory was lost in the reset"))
    assert.truthy(has(err_of(function() s:synchronize() end), "cute.stream of device 0: destroyed by the reset"))
    assert.truthy(has(err_of(function() ev:record() end), "cute.event of device 0: destroyed by the reset"))
    local frees = stub.frees
    A = nil
    collectgarbage(); collectgarbage()
    assert.equal(frees, stub.frees)
    -- new ones work
    local B = cute.empty(64, f32)
    k:launch{ grid = 1, block = 32 }(B)
    assert.truthy(cute.stream():synchronize())
  end)

  it("the fast path after a reset: a lost tensor of a signature loaded again is the same clear error", function()
    local k = cute.kernel(fk)
    local A = cute.empty(64, f32)
    k:launch{ grid = 1, block = 32 }(A)
    stub.sync = 700
    err_of(function() cute.synchronize() end)
    stub.sync = 0
    local B = cute.empty(64, f32)
    local l = k:launch{ grid = 1, block = 32 }
    l(B)
    local e = err_of(function() l(A) end)
    assert.truthy(has(e, "its memory was lost in the reset"), e)
  end)

  it("several launches since the last synchronize: all named, oldest first; a successful synchronize clears them", function()
    local k1, k2 = cute.kernel(fk), cute.kernel(gk)
    local A = cute.empty(64, f32)
    k1:launch{ grid = 1, block = 32 }(A)
    cute.synchronize()
    k2:launch{ grid = 2, block = 32 }(A)
    k1:launch{ grid = 3, block = 32 }(A)
    stub.sync = 716
    local e = err_of(function() cute.synchronize() end)
    assert.truthy(has(e, "CUDA_ERROR_MISALIGNED_ADDRESS (716)"), e)
    assert.truthy(has(e, "one of the 2 kernels launched on device 0 since its last successful synchronize"), e)
    local a, b = e:find(k2.name .. " (grid {2,1,1}", 1, true), e:find(k1.name .. " (grid {3,1,1}", 1, true)
    assert.truthy(a and b and a < b, e)
    assert.falsy(has(e, "grid {1,1,1}"), e)
  end)

  it("a launch that returns the sticky error: the earlier kernel is the one named", function()
    local k1, k2 = cute.kernel(fk), cute.kernel(gk)
    local A = cute.empty(64, f32)
    k1:launch{ grid = 1, block = 32 }(A)
    k2:entry(A)
    stub.launch = 719
    local e = err_of(function() k2:launch{ grid = 1, block = 32 }(A) end) -- LAUNCH_719
    assert.truthy(has(e, THIS .. ":" .. line_of("LAUNCH_719") .. ": cute.kernel " .. k2.name ..
      ": launch failed: cuLaunchKernel"), e)
    assert.truthy(has(e, "CUDA_ERROR_LAUNCH_FAILED (719)"), e)
    assert.truthy(has(e, "the kernel that faulted: " .. k1.name .. " "), e)
    assert.same({ 0 }, stub.resets)
  end)

  it("errors that are not sticky pass unchanged, without a reset", function()
    local saved = driver.cute_cuda_synchronize
    driver.cute_cuda_synchronize = function(e) return cuda_err(2, "cuCtxSynchronize", e) end
    K._use_driver(driver)
    local e = err_of(function() cute.synchronize() end)
    driver.cute_cuda_synchronize = saved
    K._use_driver(driver)
    assert.truthy(has(e, "CUDA_ERROR_OUT_OF_MEMORY (2)"), e)
    assert.falsy(has(e, "was reset"), e)
    assert.same({}, stub.resets)
  end)

  it("a fault found by a call on another device (device = 1) resets that device, not the current one", function()
    local saved = { driver.cute_cuda_device_count, driver.cute_cuda_set_device, driver.cute_cuda_memset_d8 }
    local cur = 0
    driver.cute_cuda_device_count = function(out) out[0] = 2; return 0 end
    driver.cute_cuda_set_device = function(i) cur = i; return 0 end
    driver.cute_cuda_memset_d8 = function(_, _, _, _, _, e)
      if cur == 1 then return cuda_err(700, "cuMemsetD8", e) end
      return 0
    end
    K._use_driver(driver)
    local A = cute.zeros(16, f32)
    local e = err_of(function() cute.zeros(16, f32, { device = 1 }) end)
    driver.cute_cuda_device_count, driver.cute_cuda_set_device, driver.cute_cuda_memset_d8 = saved[1], saved[2], saved[3]
    K._use_driver(driver)
    assert.truthy(has(e, "device 1 was reset"), e)
    assert.same({ 1 }, stub.resets)
    assert.equal("table", type(A.shape)) -- (device 0's tensor is untouched)
    assert.is_nil(rawget(A, "_lost"))
  end)

  it("a reset that fails says the device cannot be used any more; the record and the objects are dropped", function()
    -- (on the H200 the reset frees the context's page-locked record, then Retain fails: a later error
    -- that read the record crashed the process; its tensors would free into the dead context)
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      cute.assert_(A[i] > 0, "positive")
    end)
    local A = cute.empty(64, f32)
    k:launch{ grid = 2, block = 32 }(A)
    assert.truthy(fault.records[0])
    stub.reset_fails = true
    local e = err_of(function() stub.sync = 700; cute.synchronize() end)
    assert.truthy(has(e, "the device could not be reset"), e)
    assert.truthy(has(e, "restart"), e)
    assert.is_nil(fault.records[0])
    assert.truthy(has(err_of(function() A:to_host() end), "lost in the reset"))
    local e2 = err_of(function() cute.synchronize() end) -- (a second sticky error: no record read)
    stub.sync, stub.reset_fails = 0, nil
    assert.truthy(has(e2, "could not be reset"), e2)
  end)

  it("cute.reset_device() resets on request and makes the device's objects stale", function()
    local A = cute.empty(16, f32)
    cute.reset_device()
    assert.same({ 0 }, stub.resets)
    assert.truthy(has(err_of(function() A:fill(0) end), "lost in the reset after cute.reset_device(0)"))
    assert.truthy(has(err_of(function() cute.reset_device(3) end), "device 3 does not exist"))
  end)
end)

describe("the fault record of cute.assert_ (stub driver)", function()
  setup(function() K._use_driver(driver) end)
  teardown(function() K._use_driver(nil) end)
  before_each(function() reset_stub(); cute.synchronize() end)

  local function ak(A)
    local i = cute.arch.thread_idx()
    cute.assert_(A[i] > 0, "A must be positive") -- ASSERT_SITE
    A[i] = A[i] + 1
  end

  it("the PTX claims the record, writes it and fences before the thread exits; nothing of it without assertions", function()
    local A = { ptr = 4096ULL, shape = { 64 }, strides = { 1 }, dtype = f32 }
    local ptx = cute.kernel(ak):ptx(A)
    assert.truthy(has(ptx, ".visible .global .align 8 .u64 cute_fault_rec"), ptx)
    assert.truthy(has(ptx, "atom.cas.b32"), ptx)
    assert.truthy(has(ptx, "membar.sys"), ptx)
    assert.truthy(has(ptx, "exit;"), ptx)
    assert.falsy(has(ptx, "trap;"), ptx) -- (a trap's sticky error would cost the process its GPU)
    local off = cute.kernel(ak, { enable_assertions = false }):ptx(A)
    assert.falsy(has(off, "cute_fault_rec"), off)
    assert.falsy(has(cute.kernel(fk):ptx(A), "cute_fault_rec"))
  end)

  it("the module's cute_fault_rec points at the device's mapped record; a failing assert is decoded with its Lua line", function()
    local k = cute.kernel(ak)
    local A = cute.empty(64, f32)
    k:launch{ grid = 2, block = 32 }(A)
    assert.equal(1, #stub.globals)
    assert.equal("cute_fault_rec", stub.globals[1].name)
    local rec = fault.records[0]
    assert.equal(tonumber(ffi.cast("uintptr_t", rec.host)), tonumber(stub.globals[1].value))
    -- what the kernel writes before its trap
    local e = k:entry(A)
    local ref = next(e.plan.asserts)
    local h = rec.host[0]
    h.ref, h.line = ref, line_of("ASSERT_SITE")
    h.tid[0], h.ctaid[0] = 3, 1
    h.state = 2
    stub.sync = 719
    local msg = err_of(function() cute.synchronize() end)
    assert.truthy(has(msg, THIS .. ":" .. line_of("ASSERT_SITE") .. ": cute.assert_ failed: A must be positive " ..
      "in kernel " .. k.name .. " (thread (3,0,0) of block (1,0,0))"), msg)
    assert.truthy(has(msg, "CUDA_ERROR_LAUNCH_FAILED (719)"), msg)
    assert.falsy(has(msg, "CUTE_TARGET=cpu"), msg) -- (the line is known)
    assert.is_nil(fault.records[0]) -- (gone with the context; a new one at the next load)
    stub.sync = 0
    k:launch{ grid = 2, block = 32 }(cute.empty(64, f32))
    assert.equal(2, #stub.globals)
    assert.equal(0, fault.records[0].host[0].state)
  end)

  it("a failing assert ends its thread: the next synchronize or copy back raises it, without a reset", function()
    local k = cute.kernel(ak)
    local A = cute.empty(64, f32)
    k:launch{ grid = 2, block = 32 }(A)
    local rec = fault.records[0]
    local ref = next(k:entry(A).plan.asserts)
    local function fail_once(h)
      h.ref, h.line = ref, line_of("ASSERT_SITE")
      h.tid[0], h.ctaid[0] = 5, 1
      h.state = 2
    end
    fail_once(rec.host[0])
    local msg = err_of(function() cute.synchronize() end)
    assert.truthy(has(msg, "cute.synchronize: " .. THIS .. ":" .. line_of("ASSERT_SITE") ..
      ": cute.assert_ failed: A must be positive in kernel " .. k.name .. " (thread (5,0,0) of block (1,0,0))"), msg)
    assert.truthy(has(msg, "the device is fine"), msg)
    assert.same({}, stub.resets) -- (no reset: the context has no error)
    assert.equal(rec, fault.records[0])
    assert.equal(0, rec.host[0].state) -- (cleared for the next failure)
    assert.is_true(cute.synchronize())
    fail_once(rec.host[0])
    local msg2 = err_of(function() A:to_host() end)
    assert.truthy(has(msg2, "cute.assert_ failed: A must be positive"), msg2)
    assert.equal(0, rec.host[0].state)
    k:launch{ grid = 2, block = 32 }(A) -- (the same kernel goes on)
    assert.is_true(cute.synchronize())
  end)

  it("without page-locked memory for the record the kernel still launches (no record, no module global)", function()
    local saved = driver.cute_cuda_host_alloc
    driver.cute_cuda_host_alloc = function(_, _, _, e) return cuda_err(2, "cuMemHostAlloc(40 bytes)", e) end
    K._use_driver(driver)
    fault.records[0] = nil
    local k = cute.kernel(ak)
    k:launch{ grid = 1, block = 32 }(cute.empty(64, f32))
    assert.equal(1, stub.launches)
    assert.equal(0, #stub.globals)
    assert.is_false(fault.records[0])
    driver.cute_cuda_host_alloc = saved
    K._use_driver(driver)
    fault.records[0] = nil
  end)

  it("decodes a record without a matching kernel by its line alone", function()
    local r = fault.format_record({ state = 1, ref = 7, line = 42, tid = { 0, 1, 2 }, ctaid = { 3, 4, 5 } })
    assert.equal("line 42: a cute.assert_ failed (thread (0,1,2) of block (3,4,5)) [record incomplete]", r)
  end)
end)

describe("synchronize{timeout = s} (stub driver)", function()
  setup(function() K._use_driver(driver) end)
  teardown(function() K._use_driver(nil) end)
  before_each(function() reset_stub(); cute.synchronize() end)

  it("a stream that stays busy: false and a message naming the kernel still running, after the timeout", function()
    local k = cute.kernel(fk)
    k:launch{ grid = 1, block = 32 }(cute.empty(64, f32))
    stub.busy = true
    local t0 = cute.now_us()
    local ok, msg = cute.synchronize{ timeout = 0.05 }
    local dt = (cute.now_us() - t0) / 1e6
    assert.is_false(ok)
    assert.truthy(dt >= 0.05 and dt < 2, dt)
    assert.truthy(has(msg, "cute.synchronize: timed out after 0.05 s: work on device 0 still running; launched " ..
      "since the last synchronize: " .. k.name .. " (grid {1,1,1}"), msg)
    assert.truthy(has(msg, "cute.reset_device(0)"), msg)
    stub.busy = false
    assert.is_true(cute.synchronize{ timeout = 0.05 })
  end)

  it("stream:synchronize{timeout} and event:synchronize{timeout}", function()
    local s, e = cute.stream(), cute.event()
    stub.busy = true
    local ok, msg = s:synchronize{ timeout = 0 }
    assert.is_false(ok)
    assert.truthy(has(msg, "stream:synchronize: timed out after 0 s"), msg)
    ok, msg = e:synchronize{ timeout = 0.01 }
    assert.is_false(ok)
    assert.truthy(has(msg, "event:synchronize: timed out"), msg)
    stub.busy = false
    assert.is_true(s:synchronize{ timeout = 1 })
    assert.is_true(e:synchronize{ timeout = 1 })
    assert.is_true(s:synchronize{}) -- (no timeout: a plain synchronize)
  end)

  it("a bad timeout is an error naming the call", function()
    assert.truthy(has(err_of(function() cute.synchronize{ timeout = -1 } end),
      "cute.synchronize: timeout = -1 is not a number of seconds >= 0"))
    assert.truthy(has(err_of(function() cute.synchronize(5) end), "cute.synchronize: opts 5 is not a table"))
  end)

  it("a fault found while polling is reported and recovered like any other", function()
    local saved = driver.cute_cuda_stream_query
    driver.cute_cuda_stream_query = function(_, _, e) return cuda_err(700, "cuStreamQuery", e) end
    K._use_driver(driver)
    local e = err_of(function() cute.synchronize{ timeout = 1 } end)
    driver.cute_cuda_stream_query = saved
    K._use_driver(driver)
    assert.truthy(has(e, "cuStreamQuery: CUDA_ERROR_ILLEGAL_ADDRESS (700)"), e)
    assert.same({ 0 }, stub.resets)
  end)
end)

-- On a GPU: real faults (tools/gpu_fault.sh runs these and a REPL-like script)
describe("faults on the GPU", function()
  -- (CUDA's faults, its sticky errors and a GPU kernel's timing: a real GPU; on the CPU target
  -- a failing assert is a launch error at once: spec/cpu_target_spec.lua)
  local function gpu_it(name, fn) util.device_it(name, "CUDA's faults and timeouts", fn) end
  local function n_ok(T, n, want)
    local h = T:to_host()
    for i = 0, n - 1 do if h[i] ~= want(i) then return false end end
    return true
  end
  local good = function(A, n)
    local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
    if i < n then A[i] = i * 2 end
  end

  -- An address fault leaves CUDA's sticky error: no reset in the process clears it (the driver
  -- answers cuDevicePrimaryCtxRetain / cuCtxCreate with the same error: tools/sticky_probe.py), so
  -- it runs in a child process; the error names the kernel and says the process must restart.
  local function child(body)
    local path = os.tmpname() .. ".lua"
    local f = assert(io.open(path, "w"))
    f:write('local cute = require("cute")\nlocal f32 = cute.float32\n', body)
    f:close()
    local out, rc = util.sh(("CUTE_TARGET=gpu %q %q"):format(util.self_exe(), path))
    os.remove(path)
    return out, rc
  end
  gpu_it("an illegal address: the error names the kernel and the error, and says the process must restart", function()
    local out, rc = child([[
local bad = cute.kernel(function(A)
  local i = cute.arch.thread_idx()
  A[i + 1000000000] = 1 -- (4 GB past the end)
end, { name = "bad_store" })
local A = cute.zeros(32, f32)
bad:launch{ grid = 1, block = 32 }(A)
local ok, e = pcall(cute.synchronize)
print(ok, e)
local ok2, e2 = pcall(function() return cute.zeros(4, f32):to_table() end)
print("after:", ok2, e2)
]])
    assert.equal(0, rc, out)
    assert.truthy(has(out, "false"), out)
    assert.truthy(has(out, "CUDA_ERROR_ILLEGAL_ADDRESS") or has(out, "CUDA_ERROR_INVALID_ADDRESS_SPACE"), out)
    assert.truthy(has(out, "the kernel that faulted: bad_store"), out)
    assert.truthy(has(out, "restart"), out)
    assert.truthy(has(out, "after:\tfalse"), out) -- (the process's GPU is gone: a clear error, no crash)
  end)

  gpu_it("a cute.assert_ that fails: its message, Lua line, thread and block; then the same kernel runs again", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      if i < n then
        cute.assert_(A[i] >= 0, "A[i] must not be negative") -- GPU_ASSERT
        A[i] = A[i] + 1
      end
    end)
    local host = {}
    for i = 1, 256 do host[i] = i == 77 and -1 or i end
    local A = cute.from_host(host, f32)
    k:launch{ grid = 2, block = 128 }(A, cute.Int32(256))
    local e = err_of(function() cute.synchronize() end)
    assert.truthy(has(e, THIS .. ":" .. line_of("GPU_ASSERT") .. ": cute.assert_ failed: A[i] must not be negative"), e)
    assert.truthy(has(e, "(thread (76,0,0) of block (0,0,0))"), e)
    local B = cute.from_host({ 1, 2, 3, 4 }, f32)
    k:launch{ grid = 1, block = 32 }(B, cute.Int32(4))
    assert.same({ 2, 3, 4, 5 }, B:to_table())
  end)

  gpu_it("a misaligned access is reported with the kernel (in a child process: the error is sticky)", function()
    local out, rc = child([[
local k = cute.kernel(function(A) local i = cute.arch.thread_idx(); A[i] = A[i] + 1 end, { name = "odd_access" })
local A = cute.zeros(64, f32)
local odd = cute.from_ptr(A.ptr + 2, { 16 }, f32) -- (float loads 2 bytes off their alignment)
print(pcall(function() k:launch{ grid = 1, block = 16 }(odd); cute.synchronize() end))
]])
    assert.equal(0, rc, out)
    assert.truthy(has(out, "CUDA_ERROR_MISALIGNED_ADDRESS"), out)
    assert.truthy(has(out, "odd_access"), out)
  end)

  gpu_it("a kernel that runs long: synchronize{timeout} gives up and names it, a later wait completes", function()
    local spin = cute.kernel(function(F, cycles)
      local t0 = cute.arch.clock64()
      while cute.arch.clock64() - t0 < cycles do F[1] = F[1] + 1 end
      F[0] = 1
    end, { name = "long_spin" })
    local F = cute.zeros(2, cute.int64)
    spin:launch{ grid = 1, block = 1 }(F, cute.Int64(3000000000)) -- (about 1.5 s at 2 GHz)
    local ok, msg = cute.synchronize{ timeout = 0.2 }
    assert.is_false(ok)
    assert.truthy(has(msg, "long_spin"), msg)
    assert.is_true(cute.synchronize{ timeout = 30 })
    assert.equal(1, F:to_table()[1])
    local g = cute.kernel(good)
    local B = cute.zeros(64, f32)
    g:launch{ grid = 1, block = 64 }(B, cute.Int32(64))
    assert.truthy(n_ok(B, 64, function(i) return i * 2 end))
  end)
end)
