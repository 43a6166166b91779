-- cute.nccl on GPUs (docs/NCCL.md): one process, two devices (the first two),
-- every collective against the CPU reference of spec/support/nccl_ref.lua
-- for several sizes (1 element, odd sizes, a few MiB) and every dtype NCCL
-- has (fp8 where the library and the GPUs have it), in place and out of
-- place, on streams and on the default stream, in group calls; send/recv
-- between the devices; an NCCL error surfacing with NCCL's message.  Pending
-- without a GPU, with fewer than two, or without libnccl.so.2.  The same
-- across processes: spec/data/nccl_ranks.lua under torchrun (tools/gpu_nccl.sh).
local util = dofile("spec/support/util.lua")
local ref = dofile("spec/support/nccl_ref.lua")
local cute = require("cute")

local SIZES = { 1, 7, 4099 }
local BIG = 1048579 -- 4 MiB of float32, odd
local BIG_DTYPES = { float32 = true, bfloat16 = true, int8 = true }

local why -- why these tests cannot run here (nil: they can)
local function check_ready()
  if why ~= nil then return why end
  why = false
  if cute.device_count() < 2 then
    why = ("needs 2 GPUs, this machine has %d"):format(cute.device_count())
  else
    local ok, e = pcall(cute.nccl.load)
    if not ok then why = "no NCCL: " .. tostring(e) end
  end
  return why
end

local function nit(name, fn)
  util.gpu_it(name, function()
    local w = check_ready()
    if w then pending(w) return end
    fn()
  end)
end

local nccl
local DEVS = { 0, 1 }
local comms, streams
local function setup_comms()
  if comms then return end
  nccl = cute.nccl
  comms = nccl.init_all(DEVS)
  streams = {}
  for r, d in ipairs(DEVS) do
    cute.set_device(d)
    streams[r] = cute.stream()
  end
  cute.set_device(DEVS[1])
end

local function sync_all()
  for _, d in ipairs(DEVS) do
    cute.set_device(d)
    cute.synchronize()
  end
  cute.set_device(DEVS[1])
end

-- per rank r (0-based): a tensor of n elements f(r, i) on device DEVS[r + 1]
local function per_rank(dtype, n, f)
  local ts = {}
  for r = 0, #DEVS - 1 do
    cute.set_device(DEVS[r + 1])
    ts[r] = ref.upload(dtype, n, function(i) return f(r, i) end)
  end
  cute.set_device(DEVS[1])
  return ts
end

local function empty_per_rank(dtype, n)
  return per_rank(dtype, n, function() return 0 end)
end

local function with_fp8()
  local maj = cute.device(DEVS[1]).cc.major
  return nccl.version_code() >= 22400 and maj >= 9
end

local function sizes_of(name)
  local s = { unpack(SIZES) }
  if BIG_DTYPES[name] then s[#s + 1] = BIG end
  return s
end

local function expect_ok(msg) assert(msg == nil, msg) end

describe("nccl on two GPUs of one process", function()
  nit("init_all: one communicator per device, ranks in device order", function()
    setup_comms()
    assert.are.equal(2, #comms)
    for r, c in ipairs(comms) do
      assert.are.same({ r - 1, 2, DEVS[r] }, { c:rank(), c:size(), c:device() })
      assert.is_nil(c:async_error())
    end
    assert.truthy(nccl.version():find("^2%."))
  end)

  nit("all_reduce: every dtype and size, out of place on streams and in place on the default stream", function()
    setup_comms()
    for _, name in ipairs(ref.dtype_names(with_fp8())) do
      local dt = cute[name]
      for _, n in ipairs(sizes_of(name)) do
        local v = function(r, i) return ref.value(dt, r, i) end
        local send, recv = per_rank(dt, n, v), empty_per_rank(dt, n)
        nccl.group(function()
          for r, c in ipairs(comms) do c:all_reduce(send[r - 1], recv[r - 1], "sum", streams[r]) end
        end)
        for _, s in ipairs(streams) do s:synchronize() end
        for r = 0, 1 do
          expect_ok(ref.check(recv[r], n, function(i) return ref.reduce("sum", 2, function(q) return v(q, i) end) end,
            ("all_reduce sum n=%d rank %d recv"):format(n, r)))
          expect_ok(ref.check(send[r], n, function(i) return v(r, i) end, "send (unchanged)"))
        end
        nccl.group(function() for r, c in ipairs(comms) do c:all_reduce(send[r - 1]) end end)
        sync_all()
        for r = 0, 1 do
          expect_ok(ref.check(send[r], n, function(i) return ref.reduce("sum", 2, function(q) return v(q, i) end) end,
            ("all_reduce in place n=%d rank %d"):format(n, r)))
        end
      end
    end
  end)

  nit("all_reduce: prod, max, min (and avg for floating point) for every dtype", function()
    setup_comms()
    for _, name in ipairs(ref.dtype_names(with_fp8())) do
      local dt = cute[name]
      local ops = { "prod", "max", "min" }
      if ref.is_float(dt) then ops[#ops + 1] = "avg" end
      for _, op in ipairs(ops) do
        for _, n in ipairs({ 7, 4099 }) do
          local v = function(r, i) return ref.value(dt, r, i, 1) end
          local send, recv = per_rank(dt, n, v), empty_per_rank(dt, n)
          nccl.group(function()
            for r, c in ipairs(comms) do c:all_reduce(send[r - 1], recv[r - 1], op, streams[r]) end
          end)
          for _, s in ipairs(streams) do s:synchronize() end
          for r = 0, 1 do
            expect_ok(ref.check(recv[r], n, function(i) return ref.reduce(op, 2, function(q) return v(q, i) end) end,
              ("all_reduce %s n=%d rank %d"):format(op, n, r)))
          end
        end
      end
    end
  end)

  nit("all_gather, reduce_scatter, broadcast, reduce: every dtype and size", function()
    setup_comms()
    for _, name in ipairs(ref.dtype_names(with_fp8())) do
      local dt = cute[name]
      for _, n in ipairs(sizes_of(name)) do
        local v = function(r, i) return ref.value(dt, r, i, 2) end
        -- all_gather: rank r's n elements at r * n of every recv
        local send, recv = per_rank(dt, n, v), empty_per_rank(dt, 2 * n)
        nccl.group(function() for r, c in ipairs(comms) do c:all_gather(send[r - 1], recv[r - 1], streams[r]) end end)
        for _, s in ipairs(streams) do s:synchronize() end
        for r = 0, 1 do
          expect_ok(ref.check(recv[r], 2 * n, function(i) return v(math.floor(i / n), i % n) end,
            ("all_gather n=%d rank %d"):format(n, r)))
        end
        -- reduce_scatter: rank r gets block r of the sum of the 2n-element sends
        local big = per_rank(dt, 2 * n, v)
        local part = empty_per_rank(dt, n)
        nccl.group(function() for r, c in ipairs(comms) do c:reduce_scatter(big[r - 1], part[r - 1]) end end)
        sync_all()
        for r = 0, 1 do
          expect_ok(ref.check(part[r], n, function(i)
            return ref.reduce("sum", 2, function(q) return v(q, r * n + i) end)
          end, ("reduce_scatter n=%d rank %d"):format(n, r)))
        end
        -- broadcast from rank 1, out of place; reduce (max) to rank 0
        local out = empty_per_rank(dt, n)
        nccl.group(function() for r, c in ipairs(comms) do c:broadcast(send[r - 1], out[r - 1], 1, streams[r]) end end)
        for _, s in ipairs(streams) do s:synchronize() end
        for r = 0, 1 do
          expect_ok(ref.check(out[r], n, function(i) return v(1, i) end, ("broadcast n=%d rank %d"):format(n, r)))
        end
        local red = empty_per_rank(dt, n)
        nccl.group(function() for r, c in ipairs(comms) do c:reduce(send[r - 1], red[r - 1], "max", 0) end end)
        sync_all()
        expect_ok(ref.check(red[0], n, function(i) return ref.reduce("max", 2, function(q) return v(q, i) end) end,
          ("reduce max n=%d root"):format(n)))
      end
    end
  end)

  nit("broadcast in place from rank 0", function()
    setup_comms()
    local dt = cute.float32
    local v = function(r, i) return ref.value(dt, r, i, 3) end
    local t = per_rank(dt, 4099, v)
    nccl.group(function() for r, c in ipairs(comms) do c:broadcast(nil, t[r - 1], 0) end end)
    sync_all()
    for r = 0, 1 do expect_ok(ref.check(t[r], 4099, function(i) return v(0, i) end, "broadcast in place rank " .. r)) end
  end)

  nit("send/recv between the two devices, both directions, in a group", function()
    setup_comms()
    for _, name in ipairs({ "float32", "bfloat16", "int64", "uint8" }) do
      local dt = cute[name]
      for _, n in ipairs({ 1, 7, 4099 }) do
        local v = function(r, i) return ref.value(dt, r, i, 4) end
        local send, recv = per_rank(dt, n, v), empty_per_rank(dt, n)
        nccl.group(function()
          for r, c in ipairs(comms) do
            local peer = (r - 1 + 1) % 2
            c:send(send[r - 1], peer, streams[r])
            c:recv(recv[r - 1], peer, streams[r])
          end
        end)
        for _, s in ipairs(streams) do s:synchronize() end
        for r = 0, 1 do
          expect_ok(ref.check(recv[r], n, function(i) return v(1 - r, i) end, ("recv %s n=%d rank %d"):format(name, n, r)))
        end
      end
    end
  end)

  nit("init_all() over every device: an all_reduce; destroy", function()
    setup_comms()
    local all = nccl.init_all()
    assert.are.equal(cute.device_count(), #all)
    local n = #all
    local ts = {}
    for r, c in ipairs(all) do
      cute.set_device(c:device())
      ts[r] = ref.upload(cute.float32, 1000, function(i) return ref.value(cute.float32, r - 1, i) end)
    end
    nccl.group(function() for r, c in ipairs(all) do c:all_reduce(ts[r]) end end)
    for r, c in ipairs(all) do
      cute.set_device(c:device())
      cute.synchronize()
      expect_ok(ref.check(ts[r], 1000, function(i)
        return ref.reduce("sum", n, function(q) return ref.value(cute.float32, q, i) end)
      end, "all devices rank " .. (r - 1)))
    end
    for _, c in ipairs(all) do c:destroy() end
    cute.set_device(DEVS[1])
  end)

  nit("an NCCL error (a root outside the communicator) is a Lua error with NCCL's message", function()
    setup_comms()
    local t = per_rank(cute.float32, 4, function() return 1 end)
    local e = util.err_of(function() comms[1]:broadcast(t[0], nil, 5) end)
    assert.truthy(e:find("ncclBroadcast(count=4, root=5): ncclInvalidArgument (4): ", 1, true), e)
    assert.truthy(e:find("last error: ", 1, true), e)
  end)

  nit("destroy: the communicators are gone", function()
    setup_comms()
    for _, c in ipairs(comms) do c:destroy() end
    local e = util.err_of(function() comms[1]:all_reduce(nil) end)
    assert.truthy(e:find("was destroyed", 1, true), e)
    comms = nil
  end)
end)
