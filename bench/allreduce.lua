-- All-reduce over every GPU of this process (docs/PEER_KERNELS.md): cute.nccl
-- (one communicator per GPU, nccl.group), the Lua one-shot and two-shot
-- kernels of examples/allreduce_peer.lua, and a peer copy for the record.
-- Every operation is timed the same way (allreduce_peer.time_us: batches of
-- back-to-back calls between events on each device's stream, the slowest
-- device per batch, the median batch); bench/nccl_torch.py times
-- torch.distributed the same way.  One line per size:
--   ALLREDUCE size=<bytes> dtype=<name> world=<n> cute_nccl_us= cute_nccl_busbw= oneshot_us= twoshot_us=
--             oneshot_vs_nccl= twoshot_vs_nccl=       (speed ratios: nccl_us / kernel_us)
--   PEER_COPY size=<bytes> us= GBps=
-- busbw (GB/s) = bytes * 2 (n - 1) / n / time, as nccl-tests defines it.
--   cuteluajit bench/allreduce.lua [bytes ...]      env DTYPE=float32|bfloat16 (float32)
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "../examples/common.lua")
local AR = ex.load("allreduce_peer")

local DEFAULT_SIZES = { 4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576, 4194304, 16777216, 67108864,
  268435456 }
local sizes = {}
for i = 1, #arg do sizes[i] = assert(tonumber(arg[i]), "bench/allreduce.lua: sizes are byte counts") end
if #sizes == 0 then sizes = DEFAULT_SIZES end
local dt = cute[os.getenv("DTYPE") or "float32"]
assert(dt == cute.float32 or dt == cute.bfloat16, "bench/allreduce.lua: DTYPE must be float32 or bfloat16")

if not cute.available() or cute.device_count() < 2 then
  print("bench/allreduce.lua: needs 2 or more GPUs; nothing measured")
  return
end
local devices = {}
for d = 0, cute.device_count() - 1 do devices[#devices + 1] = d end
local W = #devices
local ar = AR.new(devices)
local nccl = cute.nccl
local comms = nccl.init_all(devices)
print(("bench/allreduce.lua: %d x %s, NCCL %s from %s, dtype %s"):format(W, cute.device(0).name, nccl.version(),
  nccl.library(), dt.name))

-- batches: enough calls to dwarf the event resolution, few for huge sizes
local function iters_for(bytes)
  if bytes <= 1048576 then return 200 elseif bytes <= 16777216 then return 50 end
  return 10
end

local function ones(n)
  local l = AR.empty_like(devices, n, dt)
  for _, t in ipairs(l) do t:fill(1) end
  return l
end

for _, bytes in ipairs(sizes) do
  local n = math.floor(bytes / dt.size)
  local a, b = ones(n), ones(n)
  local it = iters_for(bytes)
  -- in place, as torch.distributed's all_reduce is
  local t_nccl = AR.time_us(devices, ar.streams, function()
    nccl.group(function()
      for k = 1, W do comms[k]:all_reduce(a[k], nil, "sum", ar.streams[k]) end
    end)
  end, it)
  local t_one = AR.time_us(devices, ar.streams, function() ar:run("oneshot", a, b) end, it)
  local t_two = AR.time_us(devices, ar.streams, function() ar:run("twoshot", a, a) end, it)
  local busbw = function(us) return bytes * 2 * (W - 1) / W / us / 1e3 end
  print(("ALLREDUCE size=%d dtype=%s world=%d cute_nccl_us=%.2f cute_nccl_busbw=%.1f oneshot_us=%.2f " ..
    "oneshot_busbw=%.1f twoshot_us=%.2f twoshot_busbw=%.1f oneshot_vs_nccl=%.3f twoshot_vs_nccl=%.3f"):format(
    bytes, dt.name, W, t_nccl, busbw(t_nccl), t_one, busbw(t_one), t_two, busbw(t_two), t_nccl / t_one,
    t_nccl / t_two))
  for k = 1, W do a[k]:free(); b[k]:free() end
end

-- device 0 -> device 1 peer copy of the largest size
local big = sizes[#sizes]
local n = math.floor(big / dt.size)
local src = cute.empty({ n }, dt, { device = devices[1] })
local dst = cute.empty({ n }, dt, { device = devices[2] })
local us = AR.time_us({ devices[1] }, { ar.streams[1] }, function() cute.copy_peer(dst, src, ar.streams[1]) end,
  iters_for(big))
print(("PEER_COPY size=%d us=%.2f GBps=%.1f"):format(big, us, big / us / 1e3))
for _, c in ipairs(comms) do c:destroy() end
