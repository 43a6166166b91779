-- A tensor-parallel (row-parallel) linear layer over every GPU of this process
-- (docs/PEER_KERNELS.md, "Tensor-parallel linear layer"):
--   Y = X W,  X: M x K, W: K x N, with K split across the G GPUs:
--   GPU d holds X_d (M x K/G, its columns of X) and W_d (its K/G rows of W, stored
--   transposed: N x K/G, K-major, as the sm_90a GEMM's "TN" operands want),
--   computes the partial Y_d = X_d W_d (bf16 in, f32 accumulate, bf16 out; the
--   Hopper GEMM of examples/gemm_sm90.lua) and all-reduces Y (bf16, NCCL sum through
--   cute.nccl), so every GPU ends with the whole Y.
-- Overlap: M is split into `chunks` row blocks (separate tensors); chunk i's GEMM runs
-- on each GPU's compute stream, an event recorded after it makes the comm stream
-- wait, and chunk i is all-reduced there while chunk i+1 computes.  At the end the
-- compute stream waits for the comm stream (the next call may reuse Y).
-- Optionally the GEMM leaves `reserve_sms` SMs to NCCL's kernels (its persistent grid
-- is otherwise every SM, and NCCL's blocks would wait for whole GEMM kernels).
--   cuteluajit examples/tp_linear.lua [M] [N] [K] [chunks]     (default 4096 8192 16384 4)
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local ffi = require("ffi")

local M_ = {}
local bf16 = cute.bfloat16

local Layer = {}
Layer.__index = Layer

-- M_.new(devices, m, n, k, chunks): random X chunks and W on each device, zero Y
-- chunks, two streams per device, the communicators
function M_.new(devices, m, n, k, chunks)
  local G = #devices
  if k % (8 * G) ~= 0 then error(("tp_linear: K = %d must be a multiple of 8 x %d GPUs"):format(k, G)) end
  if m % chunks ~= 0 then error(("tp_linear: M = %d is not a multiple of chunks = %d"):format(m, chunks)) end
  local self = setmetatable({ devices = devices, m = m, n = n, k = k, kd = k / G, chunks = chunks, mc = m / chunks,
    x = {}, wt = {}, y = {}, compute = {}, comm = {}, ev = {}, done = {} }, Layer)
  -- one GEMM library for every device (its kernels keep one binary per device)
  self.gemm_lib = ex.load("gemm_sm90").make_gemm{}
  for d, dev in ipairs(devices) do
    cute.set_device(dev)
    self.x[d], self.y[d], self.ev[d] = {}, {}, {}
    for c = 1, chunks do
      self.x[d][c] = cute.from_host(ex.rand_floats(self.mc * self.kd), bf16, { self.mc, self.kd }, { device = dev })
      self.y[d][c] = cute.zeros({ self.mc, n }, bf16, { device = dev })
      self.ev[d][c] = cute.event{ device = dev, timing = false }
    end
    self.wt[d] = cute.from_host(ex.rand_floats(n * self.kd), bf16, { n, self.kd }, { device = dev })
    self.compute[d], self.comm[d] = cute.stream{ device = dev }, cute.stream{ device = dev }
    self.done[d] = cute.event{ device = dev, timing = false }
  end
  cute.set_device(devices[1])
  self.comms = cute.nccl.init_all(devices)
  return self
end

-- chunk c's partial GEMM on device d, on `stream`; clusters: the GEMM's persistent
-- grid (nil: every SM)
function Layer:gemm(d, c, stream, clusters)
  cute.set_device(self.devices[d])
  local k, cfg, ta, mA, tb, mB, y, al, be = self.gemm_lib.args(self.x[d][c], self.wt[d], self.y[d][c], 1, 0, clusters)
  cfg.stream = stream
  k:launch(cfg)(ta, mA, tb, mB, y, al, be)
end

-- the GEMM's clusters with `reserve` SMs left free (nil: all)
function Layer:clusters(reserve)
  if not reserve or reserve == 0 then return nil end
  local cm = self.gemm_lib.cfg.cluster_m
  return math.max(1, math.floor((cute.device(self.devices[1]).sm_count - reserve) / cm))
end

-- chunk c's all-reduce (in place) on every device's comm stream (or `streams`)
function Layer:all_reduce(c, streams)
  cute.nccl.group(function()
    for d = 1, #self.devices do self.comms[d]:all_reduce(self.y[d][c], nil, "sum", (streams or self.comm)[d]) end
  end)
end

-- every chunk's GEMM, on the compute streams
function Layer:gemm_only(reserve)
  local cl = self:clusters(reserve)
  for c = 1, self.chunks do
    for d = 1, #self.devices do self:gemm(d, c, self.compute[d], cl) end
  end
  cute.set_device(self.devices[1])
end

-- every chunk's all-reduce, on the comm streams
function Layer:comm_only()
  for c = 1, self.chunks do self:all_reduce(c) end
end

-- without overlap: GEMM then all-reduce, chunk after chunk, all on the compute streams
function Layer:sequential()
  for c = 1, self.chunks do
    for d = 1, #self.devices do self:gemm(d, c, self.compute[d]) end
    self:all_reduce(c, self.compute)
  end
  cute.set_device(self.devices[1])
end

-- overlapped: chunk c's all-reduce on the comm streams after chunk c's GEMM,
-- while the compute streams go on with chunk c + 1; ends joined on the compute streams
function Layer:overlapped(reserve)
  local cl = self:clusters(reserve)
  for c = 1, self.chunks do
    for d = 1, #self.devices do
      self:gemm(d, c, self.compute[d], cl)
      self.ev[d][c]:record(self.compute[d])
      self.comm[d]:wait(self.ev[d][c])
    end
    self:all_reduce(c)
  end
  for d = 1, #self.devices do
    cute.set_device(self.devices[d])
    self.done[d]:record(self.comm[d])
    self.compute[d]:wait(self.done[d])
  end
  cute.set_device(self.devices[1])
end

function Layer:synchronize()
  for d = 1, #self.devices do self.compute[d]:synchronize(); self.comm[d]:synchronize() end
end

-- Y on device d as bf16 bit patterns, chunk after chunk (uint16 arrays)
function Layer:y_host(d)
  local out = {}
  for c = 1, self.chunks do out[c] = self.y[d][c]:to_host() end
  return out
end

local bits = ffi.new("union { float f; uint32_t u; }")
local function bf(u) bits.u = u * 65536; return bits.f end

-- ||Y - X W|| / ||X W|| over `rows` rows per chunk and every `col_step`-th column,
-- against a double-precision host sum over every device's partial product; y: y_host(d)
function Layer:host_error(y, rows, col_step)
  local kd, n = self.kd, self.n
  local xs, ws = {}, {}
  for d = 1, #self.devices do
    ws[d] = self.wt[d]:to_host()
    xs[d] = {}
    for c = 1, self.chunks do xs[d][c] = self.x[d][c]:to_host() end
  end
  local num, den = 0, 0
  for c = 1, self.chunks do
    for r = 0, rows - 1 do
      local i = math.floor(r * (self.mc - 1) / math.max(1, rows - 1))
      for j = 0, n - 1, col_step do
        local s = 0
        for d = 1, #self.devices do
          local xr, w = xs[d][c], ws[d]
          for kk = 0, kd - 1 do s = s + bf(xr[i * kd + kk]) * bf(w[j * kd + kk]) end
        end
        local v = bf(y[c][i * n + j])
        if v ~= v then return math.huge end
        num, den = num + (v - s) ^ 2, den + s * s
      end
    end
  end
  return math.sqrt(num / den)
end

-- elements that differ between two y_host results
function Layer:differences(a, b)
  local bad = 0
  for c = 1, self.chunks do
    for i = 0, self.mc * self.n - 1 do
      if a[c][i] ~= b[c][i] then bad = bad + 1 end
    end
  end
  return bad
end

M_.Layer = Layer
if CUTE_EXAMPLE_LIB then return M_ end

---------------------------------------------------------------------------
local m, n, k = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 8192, tonumber(arg[3]) or 16384
local chunks = tonumber(arg[4]) or 4
if not ex.gpu() or cute.device_count() < 2 then
  print("tp_linear: needs 2 or more GPUs (sm_90a) and NCCL; nothing run")
  return
end
local devices = {}
for d = 0, cute.device_count() - 1 do devices[#devices + 1] = d end
local L = M_.new(devices, m, n, k, chunks)
L:sequential()
L:synchronize()
local ref = L:y_host(1)
ex.check(("tp_linear sequential %dx%dx%d over %d GPUs vs host"):format(m, n, k, #devices), L:host_error(ref, 4, 16),
  1e-2)
for d = 1, #L.devices do L.y[d][1]:fill(0 / 0) end -- poison one chunk: the overlapped run must write it
L:overlapped()
L:synchronize()
for d = 1, #devices do
  local bad = L:differences(ref, L:y_host(d))
  print(("tp_linear overlapped, device %d: %d elements differ from the sequential result"):format(devices[d], bad))
  if bad ~= 0 then os.exit(1) end
end
print("tp_linear: OK")
