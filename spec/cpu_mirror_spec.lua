-- cute.kernel(f, {target = "cpu"}) in a process that uses the GPU
-- (lua/cute/target_cpu_mirror.lua, docs/CPU_TARGET.md): the kernel runs on
-- the CPU target's engine over host copies of its device tensors, which go
-- back after the launch.  Here the "GPU" is a driver whose memory is host
-- memory (the CPU target's own) and whose launches fail: a mirrored kernel
-- must never reach them.
local cute = require("cute")
local K = require("cute.kernel")
local cpu = require("cute.target_cpu")
local util = dofile("spec/support/util.lua")
local THIS = "spec/cpu_mirror_spec.lua"
local f32 = cute.float32

local gpu_launches = 0
local fake = setmetatable({
  cute_cuda_launch = function() gpu_launches = gpu_launches + 1; return 1 end,
  cute_cuda_launch_cluster = function() gpu_launches = gpu_launches + 1; return 1 end,
}, { __index = cpu.driver })

describe("a target = \"cpu\" kernel in a process that uses the GPU", function()
  setup(function() K._use_driver(fake) end)
  teardown(function() K._use_driver(nil) end)

  it("runs on the CPU target over host copies of its tensors, which go back; the GPU never launches it", function()
    assert.is_false(cpu.active)
    local k = cute.kernel(function(A, B, n)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      if i < n then B[i] = A[i] * 2 + B[i] end
    end, { target = "cpu" })
    local host = {}
    for i = 1, 100 do host[i] = i end
    local A, B = cute.from_host(host, f32), cute.zeros(100, f32)
    k:launch { grid = 4, block = 32 }(A, B, cute.Int32(100))
    k:launch { grid = 4, block = 32 }(A, B, cute.Int32(100)) -- (its cached entry: still the CPU target)
    local b = B:to_table()
    for i = 1, 100 do assert.are.equal(4 * i, b[i]) end
    assert.are.equal(0, gpu_launches)
  end)

  it("with check = true: an out-of-bounds store is caught at its line; the device tensor is untouched", function()
    local k = cute.kernel(function(A, off)
      local i = cute.arch.thread_idx()
      A[i + off] = -1 -- MIRROR OOB
    end, { target = "cpu", check = true })
    local A = cute.from_host({ 1, 2, 3, 4, 5, 6, 7, 8 }, f32)
    local ok, e = pcall(function() k:launch { grid = 1, block = 8 }(A, cute.Int32(4)) end)
    assert.is_false(ok)
    e = tostring(e)
    assert.is_truthy(util.has(e, "out-of-bounds store of 4 bytes"), e)
    assert.is_truthy(util.has(e, "float32 tensor {8} (argument 1, a host copy)"), e)
    assert.is_truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MIRROR OOB")), e)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, A:to_table())
    k:launch { grid = 1, block = 4 }(A, cute.Int32(4)) -- in bounds: it writes
    assert.are.same({ 1, 2, 3, 4, -1, -1, -1, -1 }, A:to_table())
  end)

  it("with check = \"race\": a shared-memory race is reported on the GPU session's data", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      s[t] = A[t]
      A[t] = s[(t + 32) % 64] -- MIRROR RACE
    end, { target = "cpu", check = "race" }) -- (check = true finds the uninitialised read first)
    local A = cute.zeros(64, f32)
    local ok, e = pcall(function() k:launch { grid = 1, block = 64 }(A) end)
    assert.is_false(ok)
    assert.is_truthy(util.has(tostring(e), "race"), tostring(e))
    assert.is_truthy(util.has(tostring(e), THIS .. ":" .. util.line_of(THIS, "MIRROR RACE")), tostring(e))
  end)

  it("two arguments over one allocation share one host copy", function()
    local k = cute.kernel(function(A, B)
      local i = cute.arch.thread_idx()
      B[i] = A[i] + 10
    end, { target = "cpu" })
    local A = cute.from_host({ 1, 2, 3, 4 }, f32)
    k:launch { grid = 1, block = 4 }(A, A)
    assert.are.same({ 11, 12, 13, 14 }, A:to_table())
  end)
end)
