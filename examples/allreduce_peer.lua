-- All-reduce (sum) over the GPUs of one process, written in Lua over peer
-- memory (docs/PEER_KERNELS.md): every rank's kernel loads the other ranks'
-- buffers over NVLink through the device pointers that cute.enable_peer_access
-- makes valid, and the ranks synchronise through per-block flags in
-- peer-visible signal buffers (st.release.sys / ld.acquire.sys).
--   one-shot: rank r reads every rank's input, sums (in rank order, f32) and
--             writes its own output.  Not in place (a peer may still read the
--             input that an in-place write would change).
--   two-shot: rank r sums slice r of every input (reduce-scatter) and pushes the
--             sum into slice r of every rank's output (all-gather by stores).
--             In place is fine: only rank r reads or writes slice r.
-- Both: a start barrier (every rank's kernel has started, so inputs are written
-- and outputs free) and an end barrier (no rank returns while a peer may still
-- read its input or write its output), pairwise between block b of each rank.
-- The flags hold an epoch (a kernel scalar, one more per call): no reset
-- between calls, and back-to-back calls are safe (see the doc).
--   cuteluajit examples/allreduce_peer.lua      (needs 2+ GPUs with peer access and cute.nccl)
local cute = require("cute")
local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local ffi = require("ffi")
local _ = cute._

local M = {}
M.MAX_RANKS = 8
M.MAX_BLOCKS = 1024 -- flags per (barrier, source rank): block b of every rank owns one
M.THREADS = 512
M.TIMEOUT_S = 20     -- a barrier that waits longer traps (a message from the GPU first)
local BARRIERS = 2   -- 0: start, 1: end
M.SIG_WORDS = BARRIERS * M.MAX_RANKS * M.MAX_BLOCKS

---------------------------------------------------------------------------
-- kernels
---------------------------------------------------------------------------
local function flag_at(which, src, bid)
  return (which * M.MAX_RANKS + src) * M.MAX_BLOCKS + bid
end

-- block b of this rank meets block b of every other rank: thread p stores the
-- epoch into peer p's flag for (which, this rank, b) with release semantics at
-- system scope, then spins (acquire) on this rank's flag for (which, p, b)
local function barrier(sigs, world, rank, which, epoch)
  local tid, bid = cute.arch.thread_idx(), cute.arch.block_idx()
  cute.arch.sync_threads()
  for p = 0, world - 1 do
    if p ~= rank then
      cute.if_then(cute.eq(tid, p), function()
        cute.arch.st_release(sigs[p + 1], flag_at(which, rank, bid), epoch, "sys")
        local start = cute.arch.globaltimer()
        cute.while_(function()
          return cute.ne(cute.arch.ld_acquire(sigs[rank + 1], flag_at(which, p, bid), "sys"), epoch)
        end, function()
          -- a peer that never arrives (no peer access, a mismatched call) is an error, not a hang
          cute.if_then(cute.gt(cute.arch.globaltimer() - start, M.TIMEOUT_S * 1e9), function()
            cute.printf("allreduce_peer: rank %d block %d waited %d s for rank %d at barrier %d (epoch %u)\n",
              rank, bid, M.TIMEOUT_S, p, which, epoch)
            cute.arch.trap()
          end)
        end)
      end)
    end
  end
  cute.arch.sync_threads()
end

-- the sum over ranks 0..world-1 (in that order, in f32) of vector v (16 bytes)
-- of every input, as a fragment of the inputs' dtype
local function sum_vector(gins, world, v, dt, V)
  local x = cute.make_fragment(V, dt)
  local acc = {}
  for p = 1, world do
    cute.copy(gins[p][{ _, v }], x)
    for i = 0, V - 1 do
      local xi = cute.Float32(x[i])
      acc[i] = p == 1 and xi or acc[i] + xi
    end
  end
  local o = cute.make_fragment(V, dt)
  for i = 0, V - 1 do o[i] = acc[i] end
  return o
end

local function sum_scalar(ins, world, e)
  local acc = cute.Float32(ins[1][e])
  for p = 2, world do acc = acc + cute.Float32(ins[p][e]) end
  return acc
end

-- the split of a call's varargs: `count` lists of `world` tensors each
local function groups(world, count, ...)
  local args, out = { ... }, {}
  for g = 1, count do
    out[g] = {}
    for p = 1, world do out[g][p] = args[(g - 1) * world + p] end
  end
  return out
end

local function tiles(list, V)
  local out = {}
  for p, t in ipairs(list) do out[p] = cute.zipped_divide(t, { V }) end
  return out
end

-- (the dtype is passed by name: a string argument is keyed faster than a dtype)
-- oneshot(Out, epoch, world, rank, dtype_name, In_0 .. In_{world-1}, Sig_0 .. Sig_{world-1})
M.oneshot = cute.kernel(function(Out, epoch, world, rank, dtype_name, ...)
  local dt = cute[dtype_name]
  local g = groups(world, 2, ...)
  local ins, sigs = g[1], g[2]
  local V = 16 / dt.size
  local n = cute.size(Out)
  local nv = cute.div(n, V)
  local gins, gO = tiles(ins, V), cute.zipped_divide(Out, { V })
  local gtid = cute.arch.block_idx() * M.THREADS + cute.arch.thread_idx()
  local stride = cute.arch.grid_dim() * M.THREADS
  barrier(sigs, world, rank, 0, epoch)
  for v in cute.range(gtid, nv, stride) do
    cute.copy(sum_vector(gins, world, v, dt, V), gO[{ _, v }])
  end
  local e = nv * V + gtid
  if e < n then Out[e] = sum_scalar(ins, world, e) end
  barrier(sigs, world, rank, 1, epoch)
end, { name = "allreduce_oneshot" })

-- twoshot(epoch, world, rank, dtype_name, In_0.., Out_0.., Sig_0..): rank r owns the
-- vectors [r * per, (r + 1) * per) (per = ceil(vectors / world)); rank 0 also
-- the last n mod V elements
M.twoshot = cute.kernel(function(epoch, world, rank, dtype_name, ...)
  local dt = cute[dtype_name]
  local g = groups(world, 3, ...)
  local ins, outs, sigs = g[1], g[2], g[3]
  local V = 16 / dt.size
  local n = cute.size(outs[1])
  local nv = cute.div(n, V)
  local gins, gouts = tiles(ins, V), tiles(outs, V)
  local gtid = cute.arch.block_idx() * M.THREADS + cute.arch.thread_idx()
  local stride = cute.arch.grid_dim() * M.THREADS
  local per = cute.div(nv + (world - 1), world)
  local lo = per * rank
  local hi = cute.min(lo + per, nv)
  barrier(sigs, world, rank, 0, epoch)
  for v in cute.range(lo + gtid, hi, stride) do
    local o = sum_vector(gins, world, v, dt, V)
    for j = 1, world do -- the other ranks first, starting after this one (spreads the links' load)
      cute.copy(o, gouts[(rank + j) % world + 1][{ _, v }])
    end
  end
  if rank == 0 then
    local e = nv * V + gtid
    if e < n then
      local s = sum_scalar(ins, world, e)
      for p = 1, world do outs[p][e] = s end
    end
  end
  barrier(sigs, world, rank, 1, epoch)
end, { name = "allreduce_twoshot" })

---------------------------------------------------------------------------
-- kernel arguments (also for compiling without a GPU, from tensor specs)
---------------------------------------------------------------------------
-- run-time shapes (one binary per rank serves every size); the wrapper is kept on
-- the tensor, so its signature is computed once, not at every call
local function dyn(t)
  local d = rawget(t, "_allreduce_dynamic")
  if not d then
    d = cute.dynamic(t, { index_bits = 32 })
    rawset(t, "_allreduce_dynamic", d)
  end
  return d
end

local function append(list, ts, f)
  for _, t in ipairs(ts) do list[#list + 1] = f and f(t) or t end
  return list
end

-- the argument list of rank `rank`'s launch: ins, outs, sigs are lists over ranks
function M.args(kind, rank, epoch, dt, ins, outs, sigs)
  if kind ~= "oneshot" and kind ~= "twoshot" then
    error(("allreduce_peer: kind = %s: must be \"oneshot\" or \"twoshot\""):format(tostring(kind)))
  end
  local world = #ins
  if kind == "oneshot" then
    local a = { dyn(outs[rank + 1]), cute.Uint32(epoch), world, rank, dt.name }
    return append(append(a, ins, dyn), sigs)
  end
  return append(append(append({ cute.Uint32(epoch), world, rank, dt.name }, ins, dyn), outs, dyn), sigs)
end

-- the compile result for rank `rank` of `world` (cute.tensor_spec operands; no GPU needed)
function M.compile(kind, dt, n, world, rank, arch)
  local specs = function() -- distinct allocations, 16-byte aligned
    local l = {}
    for p = 1, world do l[p] = cute.tensor_spec({ n }, dt) end
    return l
  end
  local sigs = {}
  for p = 1, world do sigs[p] = cute.tensor_spec({ M.SIG_WORDS }, cute.uint32) end
  local k = (kind == "oneshot" and M.oneshot or M.twoshot):with{ arch = arch or "sm_90a", name = "allreduce_" .. kind }
  return k:compile(unpack(M.args(kind, rank, 1, dt, specs(), specs(), sigs)))
end

---------------------------------------------------------------------------
-- host side: one object per group of devices
---------------------------------------------------------------------------
local AR = {}
AR.__index = AR

-- M.new(devices): peer access both ways between every pair, a zeroed signal
-- buffer and a stream on each device
function M.new(devices)
  if type(devices) ~= "table" or #devices < 1 or #devices > M.MAX_RANKS then
    error(("allreduce_peer.new: devices must be a list of 1 to %d device ordinals"):format(M.MAX_RANKS))
  end
  local self = setmetatable({ devices = devices, world = #devices, epoch = 0, sigs = {}, streams = {},
    plans = { oneshot = {}, twoshot = {} } }, AR)
  local sms = math.huge
  for i, d in ipairs(devices) do
    for j, p in ipairs(devices) do
      if i ~= j then
        if not cute.can_access_peer(d, p) then
          error(("allreduce_peer.new: device %d cannot access device %d's memory (no peer access)"):format(d, p))
        end
        cute.enable_peer_access(p, d)
      end
    end
    self.sigs[i] = cute.zeros({ M.SIG_WORDS }, cute.uint32, { device = d })
    self.streams[i] = cute.stream{ device = d }
    sms = math.min(sms, cute.device(d).sm_count)
  end
  -- at most one block per SM (512 threads fit any SM): every block is resident
  -- at once, so a block spinning on its peer never waits for an unscheduled one
  self.max_blocks = math.min(M.MAX_BLOCKS, sms)
  cute.set_device(devices[1])
  return self
end

function AR:grid(kind, n, dt)
  local V = 16 / dt.size
  local work = math.ceil(n / V / (kind == "twoshot" and self.world or 1))
  return math.max(1, math.min(self.max_blocks, math.ceil(work / M.THREADS)))
end

local function check_lists(self, ins, outs)
  for k = 1, self.world do
    local i, o = ins[k], outs[k]
    if not (i and o) then
      error(("allreduce_peer: expected %d inputs and outputs, rank %d has none"):format(self.world, k - 1))
    end
    if i.dtype ~= ins[1].dtype or o.dtype ~= i.dtype or i:numel() ~= ins[1]:numel() or o:numel() ~= i:numel() then
      error(("allreduce_peer: rank %d: input %s and output %s must match rank 0's input %s"):format(k - 1,
        tostring(i), tostring(o), tostring(ins[1])))
    end
    for _, t in ipairs({ i, o }) do
      if t.device ~= nil and t.device ~= self.devices[k] then
        error(("allreduce_peer: rank %d runs on device %d, but its %s is on device %d"):format(k - 1, self.devices[k],
          t == i and "input" or "output", t.device))
      end
    end
  end
  local dt = ins[1].dtype
  if dt ~= cute.float32 and dt ~= cute.bfloat16 then
    error(("allreduce_peer: dtype %s: float32 and bfloat16 are supported"):format(dt.name))
  end
end

-- A plan: the launchers and argument lists of one (kind, ins, outs, streams),
-- made once and reused while the lists hold the same tensors (only the epoch
-- argument changes between calls); a few per kind are kept.
local PLANS_PER_KIND = 4
local function same_list(a, b)
  for k = 1, #a do if a[k] ~= b[k] then return false end end
  return #a == #b
end

-- call(launcher, args): launcher(args[1], ..., args[n]) without unpack (which
-- LuaJIT does not compile), one generated function per argument count
local callers = {}
local function caller(n)
  if not callers[n] then
    local list = {}
    for i = 1, n do list[i] = "a[" .. i .. "]" end
    callers[n] = assert(loadstring("return function(l, a) return l(" .. table.concat(list, ", ") .. ") end"))()
  end
  return callers[n]
end

local function new_plan(self, kind, ins, outs, streams)
  check_lists(self, ins, outs)
  if kind == "oneshot" then
    for k = 1, self.world do
      if ins[k].ptr == outs[k].ptr then
        error("allreduce_peer: the one-shot kernel cannot run in place (a peer reads the input while it runs)")
      end
    end
  end
  local dt, n = ins[1].dtype, ins[1]:numel()
  local plan = { ins = { unpack(ins) }, outs = { unpack(outs) }, streams = streams, launchers = {}, args = {},
    epoch_at = kind == "oneshot" and 2 or 1 }
  local k = kind == "oneshot" and M.oneshot or M.twoshot
  local grid = self:grid(kind, n, dt)
  for r = 1, self.world do
    cute.set_device(self.devices[r])
    plan.launchers[r] = k:launch{ grid = grid, block = M.THREADS, stream = streams[r] }
    plan.args[r] = M.args(kind, r - 1, 0, dt, ins, outs, self.sigs)
    plan.call = caller(#plan.args[r])
    -- every rank's kernel compiled and loaded (cuModuleGetFunction included)
    -- before any rank launches: a module load may wait for the devices that
    -- map its memory to go idle (CUDA's lazy loading hazard), and rank 0's
    -- kernel spins until rank 1's runs -- a first call that loaded rank 1's
    -- kernel after launching rank 0's hung until the barrier's timeout on the
    -- 2-GPU host
    k:entry(unpack(plan.args[r]))
  end
  return plan
end

local function plan_of(self, kind, ins, outs, streams)
  if kind ~= "oneshot" and kind ~= "twoshot" then M.args(kind) end -- (its error)
  local list = self.plans[kind]
  for _, p in ipairs(list) do
    if p.streams == streams and same_list(p.ins, ins) and same_list(p.outs, outs) then return p end
  end
  local p = new_plan(self, kind, ins, outs, streams)
  if #list >= PLANS_PER_KIND then table.remove(list, 1) end
  list[#list + 1] = p
  return p
end

-- ar:run(kind, ins, outs [, streams]): outs[k] = sum of ins on every rank k,
-- asynchronously on streams[k] (default: the object's streams)
function AR:run(kind, ins, outs, streams)
  local plan = plan_of(self, kind, ins, outs, streams or self.streams)
  self.epoch = self.epoch % 0xfffffffe + 1 -- 1 .. 2^32 - 2 (the flags start at 0)
  local epoch = cute.Uint32(self.epoch)
  -- no garbage collection between the ranks' launches: a finalizer that frees
  -- a dead tensor (cuMemFree waits for its device to go idle) would wait for
  -- rank 0's kernel, which waits for rank 1's launch -- a hang until the
  -- barrier's timeout, seen on the 2-GPU host
  local gc_was_on = collectgarbage("isrunning")
  if gc_was_on then collectgarbage("stop") end
  for r = 1, self.world do
    cute.set_device(self.devices[r])
    local a = plan.args[r]
    a[plan.epoch_at] = epoch
    local ok, e = pcall(plan.call, plan.launchers[r], a)
    if not ok then
      if gc_was_on then collectgarbage("restart") end
      error(e, 0)
    end
  end
  if gc_was_on then collectgarbage("restart") end
  cute.set_device(self.devices[1])
end

function AR:synchronize()
  for _, s in ipairs(self.streams) do s:synchronize() end
end

---------------------------------------------------------------------------
-- timing of an operation on several devices (the benchmarks)
---------------------------------------------------------------------------
-- fn() enqueues one operation on every device's stream; the time of a batch
-- of `iters` calls is measured with events on each device's stream and the
-- slowest device counts; returns the median over `reps` batches, in
-- microseconds per call, after a warm-up of at least 100 ms.  (The same method times NCCL and these kernels.)
function M.time_us(devices, streams, fn, iters, reps)
  iters, reps = iters or 50, reps or 7
  local e0, e1 = {}, {}
  for k, d in ipairs(devices) do
    e0[k], e1[k] = cute.event{ device = d }, cute.event{ device = d }
  end
  local function sync() for _, s in ipairs(streams) do s:synchronize() end end
  -- warm-up (and compile): at least 3 calls and 100 ms, synchronised
  local t0, calls = cute.now_us(), 0
  repeat
    fn(); calls = calls + 1
    if calls % 8 == 0 then sync() end
  until calls >= 3 and cute.now_us() - t0 >= 1e5
  sync()
  local times = {}
  for rep = 1, reps do
    for k, s in ipairs(streams) do cute.set_device(devices[k]); e0[k]:record(s) end
    for _ = 1, iters do fn() end
    for k, s in ipairs(streams) do cute.set_device(devices[k]); e1[k]:record(s) end
    local worst = 0
    for k in ipairs(streams) do worst = math.max(worst, cute.elapsed_ms(e0[k], e1[k])) end
    times[rep] = worst * 1e3 / iters
  end
  cute.set_device(devices[1])
  table.sort(times)
  return times[math.floor((reps + 1) / 2)]
end

---------------------------------------------------------------------------
-- checks against NCCL and a host sum
---------------------------------------------------------------------------
local bits = ffi.new("union { float f; uint32_t u; }")
-- element i of a host copy (float32 array, or bfloat16 bit patterns) as a number
function M.host_value(h, dt, i)
  if dt == cute.float32 then return h[i] end
  bits.u = h[i] * 65536
  return bits.f
end

-- random inputs (values in [-1, 1), rounded to the dtype) on each device: tensors and host copies
function M.random_inputs(devices, n, dt)
  local ins, hosts = {}, {}
  for k, d in ipairs(devices) do
    ins[k] = cute.from_host(ex.rand_floats(n), dt, { n }, { device = d })
    hosts[k] = ins[k]:to_host()
  end
  return ins, hosts
end

function M.empty_like(devices, n, dt)
  local l = {}
  for k, d in ipairs(devices) do l[k] = cute.empty({ n }, dt, { device = d }) end
  return l
end

-- ||out - ref|| / ||ref|| over every rank's output, ref(i) a number
function M.error_vs(outs, dt, n, ref)
  local num, den = 0, 0
  for _, o in ipairs(outs) do
    local h = o:to_host()
    for i = 0, n - 1 do
      local v, r = M.host_value(h, dt, i), ref(i)
      if v ~= v then return math.huge end
      num, den = num + (v - r) ^ 2, den + r * r
    end
  end
  return den == 0 and math.sqrt(num) or math.sqrt(num / den)
end

if CUTE_EXAMPLE_LIB then return M end

---------------------------------------------------------------------------
-- the example: correctness against NCCL and a host sum on random data
---------------------------------------------------------------------------
if not ex.gpu() or cute.device_count() < 2 then
  print(("allreduce_peer: needs 2 or more GPUs (%d here): compiling rank 0 of 2 for sm_90a only"):format(
    cute.available() and cute.device_count() or 0))
  for _, kind in ipairs({ "oneshot", "twoshot" }) do
    local r = M.compile(kind, cute.bfloat16, 1000003, 2, 0)
    print(("allreduce_peer %s bf16: %d registers, %d spill bytes"):format(kind, r.info.regs or -1,
      r.info.spill_stores or 0))
  end
  return
end

local devices = {}
for d = 0, cute.device_count() - 1 do devices[#devices + 1] = d end
local ar = M.new(devices)
local nccl = cute.nccl
local comms = nccl.init_all(devices)
local W = #devices
print(("allreduce_peer: %d GPUs, NCCL %s (%s)"):format(W, nccl.version(), nccl.library()))

local TOL = { float32 = 1e-6, bfloat16 = 1e-2 }
local SIZES = { -- elements
  float32 = { 256, 1023, 1025, 65537, 262144, 1048575, 4194304, 16777216 },
  bfloat16 = { 512, 4097, 131071, 2097152, 33554431 },
}
for _, dt in ipairs({ cute.float32, cute.bfloat16 }) do
  for _, n in ipairs(SIZES[dt.name]) do
    local ins, hosts = M.random_inputs(devices, n, dt)
    local host_sum = function(i)
      local s = 0
      for k = 1, W do s = s + M.host_value(hosts[k], dt, i) end
      return s
    end
    local ref = M.empty_like(devices, n, dt)
    nccl.group(function()
      for k = 1, W do comms[k]:all_reduce(ins[k], ref[k], "sum", ar.streams[k]) end
    end)
    ar:synchronize()
    local h_ref = ref[1]:to_host()
    local nccl_val = function(i) return M.host_value(h_ref, dt, i) end
    local tag = ("%s n=%d (%d bytes)"):format(dt.name, n, n * dt.size)
    ex.check("nccl vs host " .. tag, M.error_vs(ref, dt, n, host_sum), TOL[dt.name])
    for _, kind in ipairs({ "oneshot", "twoshot" }) do
      local outs = M.empty_like(devices, n, dt)
      for _, o in ipairs(outs) do o:fill(0 / 0) end -- poison: every element must be written
      ar:run(kind, ins, outs)
      ar:synchronize()
      ex.check(kind .. " vs nccl " .. tag, M.error_vs(outs, dt, n, nccl_val), TOL[dt.name])
      ex.check(kind .. " vs host " .. tag, M.error_vs(outs, dt, n, host_sum), TOL[dt.name])
    end
    -- back to back: 8 calls, each reducing the previous result (ping-pong for the
    -- one-shot, in place for the two-shot): every call multiplies by the number
    -- of ranks, exactly (a power of two), so any race shows as a wrong value
    if n <= 1048576 then
      local a, b = M.empty_like(devices, n, dt), M.empty_like(devices, n, dt)
      for k = 1, W do a[k]:copy_from(ins[k]) end
      local c = {}
      for k = 1, W do c[k] = cute.empty({ n }, dt, { device = devices[k] }); c[k]:copy_from(ins[k]) end
      for i = 1, 8 do
        if i % 2 == 1 then ar:run("oneshot", a, b) else ar:run("oneshot", b, a) end
        ar:run("twoshot", c, c)
      end
      ar:synchronize()
      local scale = W ^ 7
      local want = function(i) return nccl_val(i) * scale end
      if W == 2 or W == 4 or W == 8 then
        ex.check("oneshot x8 back to back " .. tag, M.error_vs(a, dt, n, want), TOL[dt.name])
        ex.check("twoshot x8 in place " .. tag, M.error_vs(c, dt, n, want), TOL[dt.name])
      end
    end
  end
end
for _, c in ipairs(comms) do c:destroy() end
print("allreduce_peer: all checks passed")
