-- Several devices on real GPUs (docs/MULTIGPU.md): tensors and kernels on
-- both devices, the launch's device check, kernels on device 0 that read and
-- write device 1's memory after cute.enable_peer_access, cute.copy_peer both
-- ways, CUDA IPC between two processes (a child cuteluajit opens the parent's
-- handle and writes into it), and the peer-copy bandwidth of 256 MiB
-- (printed as a MULTIDEVICE line).  Every test is #gpu and pending with fewer
-- than two GPUs; spec/multidevice_spec.lua covers the logic without one.
-- On the 2-GPU host: sh tools/gpu_multidevice.sh (from the bundle directory).
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local f32 = cute.float32
local has = util.has

-- a #gpu test that needs two devices (pending otherwise, never passed)
local function two_gpu_it(name, fn)
  util.gpu_it(name, function()
    local n = cute.device_count()
    if n < 2 then
      pending(("needs 2 GPUs, this machine has %d"):format(n))
      return
    end
    cute.set_device(0)
    fn()
    cute.set_device(0)
  end)
end

local function iota(n, scale, off)
  local t = {}
  for i = 1, n do t[i] = (i - 1) * scale + off end
  return t
end

local function same_values(want, got, what)
  assert.equal(#want, #got, what)
  for i = 1, #want do
    if want[i] ~= got[i] then
      error(("%s: element %d is %s, expected %s"):format(what, i, tostring(got[i]), tostring(want[i])))
    end
  end
end

local N = 4096
local axpy = cute.kernel(function(X, Y, Z)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  Z[i] = X[i] * 2 + Y[i]
end, { name = "md_axpy" })
local cfg = { grid = N / 256, block = 256 }

describe("several GPUs in one process", function()
  two_gpu_it("tensors on both devices, the same kernel on each (compiled once, loaded per device)", function()
    local out = {}
    for d = 0, 1 do
      local X = cute.from_host(iota(N, 1, d), f32, nil, { device = d })
      local Y = cute.from_host(iota(N, 0.5, 0), f32, nil, { device = d })
      local Z = cute.zeros(N, f32, { device = d })
      assert.equal(d, X.device)
      cute.set_device(d)
      axpy(cfg, X, Y, Z)
      cute.synchronize()
      out[d] = Z:to_table()
      local want = {}
      for i = 1, N do want[i] = ((i - 1) + d) * 2 + (i - 1) * 0.5 end
      same_values(want, out[d], "device " .. d)
    end
    if cute.device(0).arch == cute.device(1).arch then assert.equal(1, axpy.compiles) end
  end)

  two_gpu_it("a tensor of device 1 in a launch on device 0 is an error naming both devices", function()
    local X = cute.zeros(N, f32)
    local Y = cute.zeros(N, f32, { device = 1 })
    local ok, e = pcall(function() axpy(cfg, X, Y, X) end)
    assert.is_false(ok)
    assert.is_truthy(has(tostring(e), "argument 2 (Y) is a tensor on device 1, the launch is on device 0"), tostring(e))
    local s1 = cute.stream{ device = 1 }
    ok, e = pcall(function() axpy({ grid = cfg.grid, block = cfg.block, stream = s1 }, X, X, X) end)
    assert.is_false(ok)
    assert.is_truthy(has(tostring(e), "the stream is on device 1, the launch is on device 0"), tostring(e))
  end)

  two_gpu_it("after enable_peer_access(1) a kernel on device 0 reads and writes device 1's memory", function()
    if not cute.can_access_peer(0, 1) then
      pending("device 0 cannot address device 1 (no peer path)")
      return
    end
    cute.enable_peer_access(1)
    local X = cute.from_host(iota(N, 1, 0), f32)                      -- device 0
    local Y = cute.from_host(iota(N, 3, 1), f32, nil, { device = 1 }) -- device 1, read over NVLink
    local Z = cute.zeros(N, f32, { device = 1 })                      -- device 1, written over NVLink
    axpy(cfg, X, Y, Z)
    cute.synchronize()
    local want = {}
    for i = 1, N do want[i] = (i - 1) * 2 + (i - 1) * 3 + 1 end
    same_values(want, Z:to_table(), "device 1's tensor written from device 0")
  end)

  two_gpu_it("copy_peer both ways, with and without a stream", function()
    local a = cute.from_host(iota(N, 1, 7), f32)
    local b = cute.zeros(N, f32, { device = 1 })
    cute.copy_peer(b, a)
    same_values(iota(N, 1, 7), b:to_table(), "0 -> 1")
    local c = cute.from_host(iota(N, -1, 5), f32, nil, { device = 1 })
    local s = cute.stream()
    cute.copy_peer(a, c, s)
    s:synchronize()
    same_values(iota(N, -1, 5), a:to_table(), "1 -> 0 on a stream")
    local d = cute.zeros(N, f32)
    d:copy_from(c) -- (t:copy_from across devices)
    same_values(iota(N, -1, 5), d:to_table(), "copy_from 1 -> 0")
  end)

  two_gpu_it("peer-copy bandwidth, 256 MiB each way", function()
    local n = 64 * 2 ^ 20 -- float32: 256 MiB
    local a = cute.zeros(n, f32)
    local b = cute.zeros(n, f32, { device = 1 })
    if cute.can_access_peer(0, 1) then cute.enable_peer_access(1) end
    local s = cute.stream()
    local e0, e1 = cute.event(), cute.event()
    for _, dir in ipairs({ "0->1", "1->0" }) do
      local dst, src = b, a
      if dir == "1->0" then dst, src = a, b end
      cute.copy_peer(dst, src, s) -- (warm-up)
      e0:record(s)
      for _ = 1, 5 do cute.copy_peer(dst, src, s) end
      e1:record(s)
      local ms = cute.elapsed_ms(e0, e1) / 5
      local bps = n * 4 / (ms / 1e3)
      print(("MULTIDEVICE peer_copy %s bytes=%d ms=%.3f GBps=%.1f"):format(dir, n * 4, ms, bps / 1e9))
      assert.is_true(bps > 1e9, "under 1 GB/s")
    end
  end)
end)

describe("CUDA IPC between processes", function()
  two_gpu_it("a child process opens the parent's handle (device 1) on its device 0 and writes into it", function()
    local n = 1024
    local t = cute.zeros(n, f32, { device = 1 })
    local hex = t:ipc_handle():gsub(".", function(c) return ("%02x"):format(c:byte()) end)
    local dir = os.tmpname()
    os.remove(dir)
    local script = dir .. ".lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
local cute = require("cute")
local t = cute.from_ipc_handle(%q, %d, cute.float32)
local v = {}
for i = 1, %d do v[i] = i * 3 + 1 end
t:copy_from(v)
cute.synchronize()
print("CHILD device=" .. t.device)
t:free()
]]):format(hex, n, n))
    f:close()
    local p = io.popen(("%s %s 2>&1"):format(util.self_exe(), script))
    local out = p:read("*a")
    local ok = p:close()
    os.remove(script)
    assert.is_truthy(ok, out)
    assert.is_truthy(has(out, "CHILD device=0"), out)
    local want = {}
    for i = 1, n do want[i] = i * 3 + 1 end
    same_values(want, t:to_table(), "written by the child")
  end)
end)
