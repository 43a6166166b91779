-- The tensor-parallel linear layer of examples/tp_linear.lua: how much of the
-- all-reduce hides behind the GEMM (docs/PEER_KERNELS.md).  Per chunk count:
--   gemm_us     every chunk's GEMM alone (all SMs), on the compute streams
--   comm_us     every chunk's all-reduce alone (cute.nccl, bf16), on the comm streams
--   seq_us      GEMM then all-reduce, chunk after chunk, on one stream per GPU
-- and per reserve (SMs the GEMM leaves to NCCL; 0 = none):
--   gemm_reserved_us  the GEMM alone on the smaller grid
--   total_us          the overlapped layer
--   hidden            (gemm_us + comm_us - total_us) / comm_us   (gemm_us: all SMs)
-- Times: allreduce_peer.time_us (batches between events on every device, the
-- slowest device, the median batch).  One line each:
--   TP_LINEAR m= n= k= gpus= chunks= reserve_sms= gemm_us= gemm_reserved_us= comm_us= seq_us= total_us= hidden=
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

local ITERS, REPS = 10, 5
for _, chunks in ipairs(CHUNKS) do
  local L = TP.new(devices, m, n, k, chunks)
  local t = function(streams, fn) return AR.time_us(devices, streams, fn, ITERS, REPS) end
  local gemm = t(L.compute, function() L:gemm_only() end)
  local comm = t(L.comm, function() L:comm_only() end)
  local seq = t(L.compute, function() L:sequential() end)
  for _, reserve in ipairs(RESERVE) do
    local gemm_r = reserve == 0 and gemm or t(L.compute, function() L:gemm_only(reserve) end)
    local total = t(L.compute, function() L:overlapped(reserve) end)
    print(("TP_LINEAR m=%d n=%d k=%d gpus=%d chunks=%d reserve_sms=%d gemm_us=%.1f gemm_reserved_us=%.1f " ..
      "comm_us=%.1f seq_us=%.1f total_us=%.1f hidden=%.3f"):format(m, n, k, #devices, chunks, reserve, gemm, gemm_r,
      comm, seq, total, (gemm + comm - total) / comm))
  end
  L:synchronize()
  for _, c in ipairs(L.comms) do c:destroy() end
end
