-- A tensor-parallel (row-parallel) linear layer over every GPU of this process
-- (docs/PEER_KERNELS.md, "Tensor-parallel linear layer"):
--   Y = X W,  X: M x K, W: K x N, with K split across the G GPUs:
--   GPU d holds X_d (M x K/G, its columns of X) and W_d (its K/G rows of W, stored
--   transposed: N x K/G, K-major, as the sm_90a GEMM's "TN" operands want),
--   computes the partial Y_d = X_d W_d (bf16 in, f32 accumulate, bf16 out; the
--   Hopper GEMM of examples/gemm_sm90.lua) and all-reduces Y (bf16, NCCL sum through
--   cute.nccl), so every GPU ends with the whole Y.
-- Overlap: M is split into `chunks` row blocks (separate tensors); chunk i's GEMM runs
-- on a compute stream, an event recorded after it makes the comm stream wait, and
-- chunk i is all-reduced there while chunk i+1 computes.  At the end the first compute
-- stream waits for the others (the next call may reuse Y).  What makes it overlap
-- (opts of overlapped / gemm_only; M_.BEST is the default):
--   grid = "tiles": the GEMM's grid is one cluster per tile (not persistent), so SMs free
--     up tile by tile and NCCL's blocks get them; "persistent": one CTA per SM (or fewer:
--     `reserve` SMs left free), each walking several tiles, so an NCCL kernel that finds
--     every SM taken waits for a whole GEMM kernel.  The persistent grid is balanced: as
--     few clusters as give the same waves (tiles per cluster) over the SMs left.
--   streams = 2: chunks alternate between two compute streams, so chunk i+1's blocks
--     fill the SMs that chunk i's last wave leaves idle (one stream: chunk i+1 waits for
--     chunk i's slowest tile).
--   comm_priority = true: the comm streams have the device's most urgent priority
--     (cute.stream{priority =}): the block scheduler gives NCCL's blocks the next free
--     SMs before the GEMM's waiting blocks.
--   cuteluajit examples/tp_linear.lua [M] [N] [K] [chunks]     (default 4096 8192 16384 4)
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local ffi = require("ffi")

local M_ = {}
local bf16 = cute.bfloat16
M_.BEST = { grid = "tiles", streams = 2, comm_priority = true }

local Layer = {}
Layer.__index = Layer

-- M_.new(devices, m, n, k, chunks): random X chunks and W on each device, zero Y
-- chunks, per device two compute streams, a comm stream of the most urgent priority
-- and one of the default priority, the communicators
function M_.new(devices, m, n, k, chunks)
  local G = #devices
  if k % (8 * G) ~= 0 then error(("tp_linear: K = %d must be a multiple of 8 x %d GPUs"):format(k, G)) end
  if m % chunks ~= 0 then error(("tp_linear: M = %d is not a multiple of chunks = %d"):format(m, chunks)) end
  local self = setmetatable({ devices = devices, m = m, n = n, k = k, kd = k / G, chunks = chunks, mc = m / chunks,
    x = {}, wt = {}, y = {}, compute = {}, compute2 = {}, comm = {}, comm_low = {}, ev = {}, done = {}, join2 = {},
    start = {}, launches = {} }, Layer)
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
    local _, urgent = cute.stream_priority_range(dev)
    self.compute[d], self.compute2[d] = cute.stream{ device = dev }, cute.stream{ device = dev }
    self.comm[d] = cute.stream{ device = dev, priority = urgent }
    self.comm_low[d] = cute.stream{ device = dev }
    for _, e in ipairs({ "done", "join2", "start" }) do self[e][d] = cute.event{ device = dev, timing = false } end
  end
  self.sm_count = cute.device(devices[1]).sm_count
  cute.set_device(devices[1])
  self.comms = cute.nccl.init_all(devices)
  return self
end

-- chunk c's partial GEMM on device d, on `stream`; clusters: the GEMM's grid (nil: the
-- library's, one cluster per 2 SMs).  The launcher and its arguments are made once
-- per (device, chunk, stream, grid) and kept: the loop only launches.
function Layer:gemm(d, c, stream, clusters)
  cute.set_device(self.devices[d])
  local key = ("%d:%d:%s:%s"):format(d, c, tostring(stream.handle), tostring(clusters))
  local l = self.launches[key]
  if not l then
    local k, cfg, ta, mA, tb, mB, y, al, be = self.gemm_lib.args(self.x[d][c], self.wt[d], self.y[d][c], 1, 0,
      clusters)
    cfg.stream = stream
    l = { k:launch(cfg), ta, mA, tb, mB, y, al, be, grid = cfg.grid }
    self.launches[key] = l
  end
  l[1](l[2], l[3], l[4], l[5], l[6], l[7], l[8])
end

-- clusters (2 x 1 CTAs) of tiles in one chunk's GEMM
function Layer:cluster_tiles()
  local cfg = self.gemm_lib.cfg
  return math.ceil(math.ceil(self.mc / cfg.bm) / cfg.cluster_m) * math.ceil(self.n / cfg.bn)
end

-- the GEMM's grid for opts (see the top): clusters (nil: the library's default) and
-- waves (tiles per cluster, the most any cluster takes)
function Layer:grid(opts)
  local tiles, cm = self:cluster_tiles(), self.gemm_lib.cfg.cluster_m
  if opts.grid == "tiles" then
    local cl = math.min(tiles, 65535)
    return cl, math.ceil(tiles / cl)
  end
  if opts.grid ~= nil and opts.grid ~= "persistent" then
    error(("tp_linear: grid = %s: \"tiles\" or \"persistent\""):format(tostring(opts.grid)))
  end
  local reserve = opts.reserve
  if not reserve then return nil, math.ceil(tiles / math.min(tiles, math.floor(self.sm_count / cm))) end
  local avail = math.max(1, math.floor((self.sm_count - reserve) / cm))
  local waves = math.ceil(tiles / avail)
  return math.ceil(tiles / waves), waves
end

-- opts: a table (see the top), a reserve (number) or nil (the library's grid, one stream)
local function options(opts)
  if type(opts) == "number" then return { grid = "persistent", reserve = opts } end
  return opts or {}
end

-- chunk c's all-reduce (in place) on every device's comm stream (or `streams`)
function Layer:all_reduce(c, streams)
  cute.nccl.group(function()
    for d = 1, #self.devices do self.comms[d]:all_reduce(self.y[d][c], nil, "sum", (streams or self.comm)[d]) end
  end)
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

-- the pipeline (the top; opts nil: M_.BEST, a number: a persistent grid leaving that
-- many SMs, one compute stream); opts.comm == false: the GEMMs alone (gemm_only).
-- opts.trace[d] = { gemm = {event per chunk}, comm = {...} } (timing events of
-- device d): recorded after each chunk's GEMM and all-reduce
function Layer:overlapped(opts)
  opts = opts == nil and M_.BEST or options(opts)
  local G, two, tr = #self.devices, opts.streams == 2, opts.trace
  local comm = opts.comm_priority == false and self.comm_low or self.comm
  local with_comm = opts.comm ~= false
  local cl = self:grid(opts)
  if two then -- the second compute stream starts after everything before the call
    for d = 1, G do
      cute.set_device(self.devices[d])
      self.start[d]:record(self.compute[d])
      self.compute2[d]:wait(self.start[d])
    end
  end
  for c = 1, self.chunks do
    for d = 1, G do
      local s = (two and c % 2 == 0) and self.compute2[d] or self.compute[d]
      self:gemm(d, c, s, cl)
      if tr and tr[d] then tr[d].gemm[c]:record(s) end
      if with_comm then
        self.ev[d][c]:record(s)
        comm[d]:wait(self.ev[d][c])
      end
    end
    if with_comm then
      self:all_reduce(c, comm)
      for d = 1, G do
        if tr and tr[d] then cute.set_device(self.devices[d]); tr[d].comm[c]:record(comm[d]) end
      end
    end
  end
  for d = 1, G do
    cute.set_device(self.devices[d])
    if with_comm then
      self.done[d]:record(comm[d])
      self.compute[d]:wait(self.done[d])
    end
    if two then
      self.join2[d]:record(self.compute2[d])
      self.compute[d]:wait(self.join2[d])
    end
  end
  cute.set_device(self.devices[1])
end

-- every chunk's GEMM (opts as overlapped's, or a reserve; nil: the library's grid,
-- one compute stream)
function Layer:gemm_only(opts)
  local o = {}
  for key, v in pairs(options(opts)) do o[key] = v end
  o.comm = false
  self:overlapped(o)
end

function Layer:synchronize()
  for d = 1, #self.devices do
    for _, s in ipairs({ self.compute, self.compute2, self.comm, self.comm_low }) do s[d]:synchronize() end
  end
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
-- every way the benchmark runs the pipeline must give the sequential result bit for bit
-- (one chunk poisoned with NaN first: the overlapped run must write it)
local modes = { { "default (M_.BEST)", nil }, { "persistent, reserve 16, one stream", 16 },
  { "tiles, one stream, default-priority comm", { grid = "tiles", comm_priority = false } },
  { "persistent, all SMs, two streams", { grid = "persistent", reserve = 0, streams = 2 } } }
for _, mode in ipairs(modes) do
  for d = 1, #L.devices do L.y[d][1]:fill(0 / 0) end
  L:synchronize()
  L:overlapped(mode[2])
  L:synchronize()
  for d = 1, #devices do
    local bad = L:differences(ref, L:y_host(d))
    print(("tp_linear overlapped (%s), device %d: %d elements differ from the sequential result"):format(mode[1],
      devices[d], bad))
    if bad ~= 0 then os.exit(1) end
  end
end
print("tp_linear: OK")
