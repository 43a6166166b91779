-- The tensor-parallel linear layer of examples/tp_linear.lua: how much of the
-- all-reduce hides behind the GEMM (docs/PEER_KERNELS.md).  Per chunk count:
--   gemm_us     every chunk's GEMM alone (the library's persistent grid, all SMs), one stream
--   comm_us     every chunk's all-reduce alone (cute.nccl, bf16), on the comm streams
--   seq_us      GEMM then all-reduce, chunk after chunk, on one stream per GPU
-- and per way of overlapping (examples/tp_linear.lua's opts: grid "persistent" leaving
-- reserve_sms SMs free, or "tiles"; one or two compute streams; comm streams of the
-- most urgent or the default priority):
--   gemm_reserved_us  the GEMM alone on that grid and those streams
--   total_us          the overlapped layer
--   hidden            (gemm_us + comm_us - total_us) / comm_us   (gemm_us: the library's grid)
--   clusters, waves   the GEMM's grid (2-CTA clusters; "library": one per 2 SMs) and the
--                     tiles the busiest cluster takes per chunk
--   host_us           the host's time to enqueue one layer (above total_us: launch-bound)
-- Times: allreduce_peer.time_us (batches between events on every device, the
-- slowest device, the median batch).  One line each:
--   TP_LINEAR m= n= k= gpus= chunks= reserve_sms= gemm_us= gemm_reserved_us= comm_us= seq_us= total_us= hidden=
--     grid= clusters= waves= streams= comm_priority= host_us=
-- then per way and device one timeline of a single call (timing events, µs from its start):
--   TP_CHUNKS chunks= grid= reserve_sms= streams= comm_priority= device= gemm_end_us=a,b,.. comm_end_us=a,b,..
-- and per chunk count the way that hid most: TP_BEST chunks= ... hidden=
--   cuteluajit bench/tp_linear.lua [M] [N] [K]    env CHUNKS=2,4,8  RESERVE=0,16,32
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "../examples/common.lua")
local AR = ex.load("allreduce_peer")
local TP = ex.load("tp_linear")

local function list(s, default)
  local out = {}
  s = s or default
  for x in s:gmatch("[^,]+") do out[#out + 1] = assert(tonumber(x), "bench/tp_linear.lua: not a number list: " .. s) end
  return out
end
local m, n, k = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 8192, tonumber(arg[3]) or 16384
local CHUNKS, RESERVE = list(os.getenv("CHUNKS"), "2,4,8"), list(os.getenv("RESERVE"), "0,16,32")

if not cute.available() or cute.device_count() < 2 then
  print("bench/tp_linear.lua: needs 2 or more GPUs; nothing measured")
  return
end
local devices = {}
for d = 0, cute.device_count() - 1 do devices[#devices + 1] = d end

-- the ways to overlap: the persistent grid per reserve (one stream, urgent comm), the
-- tile grid with each of the three switches, and the layer as it was first written
-- (the library's persistent grid, one stream, default-priority comm)
local ways = {}
for _, r in ipairs(RESERVE) do ways[#ways + 1] = { grid = "persistent", reserve = r } end
ways[#ways + 1] = TP.BEST
ways[#ways + 1] = { grid = "tiles", streams = 1 }
ways[#ways + 1] = { grid = "tiles", streams = 2, comm_priority = false }
ways[#ways + 1] = { grid = "persistent", reserve = 0, streams = 2 }
ways[#ways + 1] = { grid = "persistent", comm_priority = false }

local ITERS, REPS = 10, 5

-- µs the host takes to enqueue one call of fn (the GPU idle before)
local function host_us(L, fn)
  L:synchronize()
  local t0 = cute.now_us()
  for _ = 1, ITERS do fn() end
  local t = (cute.now_us() - t0) / ITERS
  L:synchronize()
  return t
end

-- one call's timeline on every device: "a,b,.." µs from the call's start (after a
-- warm call, so the GPU is busy when it is enqueued)
local function timeline(L, way)
  local tr, t0 = {}, {}
  for d, dev in ipairs(devices) do
    tr[d] = { gemm = {}, comm = {} }
    for c = 1, L.chunks do
      tr[d].gemm[c], tr[d].comm[c] = cute.event{ device = dev }, cute.event{ device = dev }
    end
    t0[d] = cute.event{ device = dev }
  end
  L:overlapped(way)
  for d, dev in ipairs(devices) do cute.set_device(dev); t0[d]:record(L.compute[d]) end
  local w = {}
  for key, v in pairs(way) do w[key] = v end
  w.trace = tr
  L:overlapped(w)
  L:synchronize()
  local out = {}
  for d = 1, #devices do
    local g, c = {}, {}
    for i = 1, L.chunks do
      g[i] = ("%.1f"):format(cute.elapsed_ms(t0[d], tr[d].gemm[i]) * 1e3)
      c[i] = ("%.1f"):format(cute.elapsed_ms(t0[d], tr[d].comm[i]) * 1e3)
    end
    out[d] = { table.concat(g, ","), table.concat(c, ",") }
  end
  cute.set_device(devices[1])
  return out
end

for _, chunks in ipairs(CHUNKS) do
  local L = TP.new(devices, m, n, k, chunks)
  local t = function(streams, fn) return AR.time_us(devices, streams, fn, ITERS, REPS) end
  local gemm = t(L.compute, function() L:gemm_only() end)
  local comm = t(L.comm, function() L:comm_only() end)
  local seq = t(L.compute, function() L:sequential() end)
  local best
  for _, way in ipairs(ways) do
    local clusters, waves = L:grid(way)
    local gemm_r = t(L.compute, function() L:gemm_only(way) end)
    local total = t(L.compute, function() L:overlapped(way) end)
    local host = host_us(L, function() L:overlapped(way) end)
    local hidden = (gemm + comm - total) / comm
    local desc = ("grid=%s clusters=%s waves=%d streams=%d comm_priority=%d"):format(way.grid, tostring(clusters or
      "library"), waves, way.streams or 1, way.comm_priority == false and 0 or 1)
    print(("TP_LINEAR m=%d n=%d k=%d gpus=%d chunks=%d reserve_sms=%d gemm_us=%.1f gemm_reserved_us=%.1f " ..
      "comm_us=%.1f seq_us=%.1f total_us=%.1f hidden=%.3f %s host_us=%.1f"):format(m, n, k, #devices, chunks,
      way.reserve or 0, gemm, gemm_r, comm, seq, total, hidden, desc, host))
    for d, line in ipairs(timeline(L, way)) do
      print(("TP_CHUNKS chunks=%d grid=%s reserve_sms=%d streams=%d comm_priority=%d device=%d gemm_end_us=%s " ..
        "comm_end_us=%s"):format(chunks, way.grid, way.reserve or 0, way.streams or 1,
        way.comm_priority == false and 0 or 1, devices[d], line[1], line[2]))
    end
    if not best or hidden > best[1] then best = { hidden, total, ("reserve_sms=%d %s"):format(way.reserve or 0, desc) } end
  end
  print(("TP_BEST chunks=%d %s total_us=%.1f hidden=%.3f"):format(chunks, best[3], best[2], best[1]))
  L:synchronize()
  for _, c in ipairs(L.comms) do c:destroy() end
end
