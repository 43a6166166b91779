-- Stream priorities without a GPU (docs/PEER_KERNELS.md, "Tensor-parallel linear
-- layer"): a stand-in driver of two devices (K._use_driver, as
-- spec/multidevice_spec.lua does) records which device was current and which
-- flags and priority each stream was made with.  Covers cute.stream{priority =}
-- (cuStreamCreateWithPriority in the stream's device's context; without it
-- cuStreamCreate), cute.stream_priority_range(device) and the argument errors.
-- The last test (pending without a GPU) makes real ones and runs work on them.
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")
local util = dofile("spec/support/util.lua")
local has = util.has

local stub
local function reset()
  stub = { device = 0, plain = {}, prio = {}, destroyed = {}, ranges = {} }
end
reset()
local function handle(p) return tonumber(ffi.cast("uintptr_t", p)) end
local next_handle = 0x5000
local function fresh()
  next_handle = next_handle + 0x10
  return ffi.cast("void *", next_handle)
end
-- device d's range: least 0, greatest -(d + 4) (distinct per device, to see whose is read)
local driver = {
  available = function() return true end,
  cute_cuda_device_count = function(out) out[0] = 2; return 0 end,
  cute_cuda_get_device = function(out) out[0] = stub.device; return 0 end,
  cute_cuda_set_device = function(i) stub.device = i; return 0 end,
  cute_cuda_stream_create = function(out, flags)
    out[0] = fresh()
    stub.plain[#stub.plain + 1] = { device = stub.device, flags = tonumber(flags) }
    return 0
  end,
  cute_cuda_stream_create_priority = function(out, flags, prio)
    out[0] = fresh()
    stub.prio[#stub.prio + 1] = { device = stub.device, flags = tonumber(flags), priority = tonumber(prio),
      handle = handle(out[0]) }
    return 0
  end,
  cute_cuda_stream_priority_range = function(least, greatest)
    least[0], greatest[0] = 0, -(stub.device + 4)
    stub.ranges[#stub.ranges + 1] = stub.device
    return 0
  end,
  cute_cuda_stream_destroy = function(h) stub.destroyed[handle(h)] = stub.device; return 0 end,
}

-- each test: a fresh record and the stand-in installed (the GPU test restores the driver)
before_each(function() reset(); K._use_driver(driver) end)
teardown(function() K._use_driver(nil) end)

local function err_of(f, a) return util.err_of(function() return f(a) end) end

describe("stream priorities", function()
  it("cute.stream{priority = p} is cuStreamCreateWithPriority in the stream's device's context", function()
    local s = cute.stream{ device = 1, priority = -3, non_blocking = true }
    assert.equal(1, s.device)
    assert.equal(-3, s.priority)
    assert.same({ { device = 1, flags = 1, priority = -3, handle = handle(s.handle) } }, stub.prio)
    assert.equal(0, #stub.plain)
    assert.equal(0, stub.device) -- (the current device again)
    local h = handle(s.handle)
    s:destroy()
    assert.equal(1, stub.destroyed[h])
    local s0 = cute.stream{ priority = 0 }
    assert.equal(0, s0.device)
    assert.same({ device = 0, flags = 0, priority = 0, handle = handle(s0.handle) }, stub.prio[2])
  end)

  it("without priority a stream is cuStreamCreate as before, and s.priority is nil", function()
    local s = cute.stream{ device = 1 }
    assert.is_nil(s.priority)
    assert.same({ { device = 1, flags = 0 } }, stub.plain)
    assert.equal(0, #stub.prio)
  end)

  it("cute.stream_priority_range(device) reads that device's range (default: the current one)", function()
    local least, greatest = cute.stream_priority_range(1)
    assert.equal(0, least)
    assert.equal(-5, greatest)
    assert.same({ 1 }, stub.ranges)
    assert.equal(0, stub.device)
    least, greatest = cute.stream_priority_range()
    assert.equal(0, least)
    assert.equal(-4, greatest)
    cute.set_device(1)
    assert.equal(-5, select(2, cute.stream_priority_range()))
    cute.set_device(0)
  end)

  it("a priority that is not an integer, or a device that does not exist, is an error naming the call", function()
    assert.is_truthy(has(err_of(cute.stream, { priority = "high" }), "cute.stream: priority high is not an integer"))
    assert.is_truthy(has(err_of(cute.stream, { priority = 0.5 }), "cute.stream: priority 0.5 is not an integer"))
    assert.is_truthy(has(err_of(cute.stream, { priority = -1, device = 2 }), "cute.stream: device 2 does not exist"))
    assert.is_truthy(has(err_of(cute.stream_priority_range, 3), "cute.stream_priority_range: device 3 does not exist"))
    assert.equal(0, #stub.prio)
    assert.equal(0, #stub.plain)
  end)

  it("a driver failure reaches the caller as an error", function()
    local saved = driver.cute_cuda_stream_create_priority
    driver.cute_cuda_stream_create_priority = function()
      ffi.copy(require("cute.ffi").err[0].msg, "cuStreamCreateWithPriority: stand-in failure")
      return 1
    end
    K._use_driver(driver)
    local ok, e = pcall(cute.stream, { priority = -1 })
    driver.cute_cuda_stream_create_priority = saved
    assert.is_false(ok)
    assert.is_truthy(has(tostring(e), "stand-in failure"))
  end)
end)

describe("stream priorities on the GPU", function()
  util.device_it("the device's range holds the default 0; a most-urgent stream runs a copy",
    "stream priorities are the driver's (cuCtxGetStreamPriorityRange)", function()
    K._use_driver(nil)
    local least, greatest = cute.stream_priority_range()
    assert.is_true(greatest <= 0 and least >= 0, ("range %d .. %d"):format(least, greatest))
    local s = cute.stream{ priority = greatest, non_blocking = true }
    assert.equal(greatest, s.priority)
    local a = cute.from_host({ 1, 2, 3, 4 }, cute.float32)
    local b = cute.zeros(4, cute.float32)
    cute.copy_peer(b, a, s)
    s:synchronize()
    assert.same({ 1, 2, 3, 4 }, { b:to_host()[0], b:to_host()[1], b:to_host()[2], b:to_host()[3] })
    K._use_driver(driver)
  end)
end)
