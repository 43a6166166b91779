-- cute.pipeline: producer/consumer pipelines over rings of mbarriers, written
-- in the DSL itself on cute.arch's Hopper primitives (cute.nvgpu_sm90), after
-- CuTe DSL's pipeline module (docs/HOPPER.md, "Barriers and pipelines"):
--   cute.pipeline.Agent, PipelineUserType, CooperativeGroup(agent, size)
--   cute.pipeline.make_pipeline_state(PipelineUserType.Producer|Consumer, stages)
--     state.index, state.phase, state.count (traced i32), state:advance([n]), state:clone()
--   cute.pipeline.PipelineAsync.create{barrier_storage =, num_stages =,
--     producer_group =, consumer_group = [, defer_sync = false]}
--   cute.pipeline.PipelineTmaAsync.create{..., tx_count = bytes [, cta_layout_vmnk =,
--     tidx =, mcast_mode_mn = {1, 1}]}
--   p:producer_acquire(state), p:producer_commit(state), p:producer_get_barrier(state),
--   p:consumer_wait(state), p:consumer_release(state), p:consumer_get_barrier(state),
--   p:producer_try_acquire(state), p:consumer_try_wait(state) -> i1, p:producer_tail(state)
--
-- The barrier storage holds 2 * num_stages mbarriers (i64): the "full"
-- barriers (the producer says a stage holds data) then the "empty" ones (the
-- consumers say a stage may be overwritten).  A state's index and phase are
-- cute.vars, so one state carries across cute.range loops and branches.
local tr = require("cute.trace")
local ten = require("cute.tensor")
local lay = require("cute.layout")
local sm90 = require("cute.nvgpu_sm90")
local archmod = require("cute.arch")

local arch, OP, T = archmod.arch, tr.OP, tr.T
local fail = tr.fail

local M = {}

local function show(x)
  if tr.is_value(x) then return "a traced value" end
  return type(x) .. " " .. tostring(x)
end

-- check a table of named arguments against the allowed names
local function check_args(args, what, allowed, required)
  if type(args) ~= "table" then fail(("%s{...}: expected a table of named arguments, got %s"):format(what, show(args))) end
  local ok = {}
  for _, k in ipairs(allowed) do ok[k] = true end
  for k in pairs(args) do
    if not ok[k] then fail(("%s: unknown argument %s (%s)"):format(what, tostring(k), table.concat(allowed, ", "))) end
  end
  for _, k in ipairs(required) do
    if args[k] == nil then fail(("%s: %s is missing"):format(what, k)) end
  end
end

---------------------------------------------------------------------------
-- agents and cooperative groups
---------------------------------------------------------------------------
M.Agent = { Thread = "Thread", Warp = "Warp", ThreadBlock = "ThreadBlock", ThreadBlockCluster = "ThreadBlockCluster" }
M.PipelineUserType = { Producer = "Producer", Consumer = "Consumer" }

local Group = {}
Group.__index = Group
Group.__tostring = function(g) return ("CooperativeGroup(%s, %s)"):format(g.agent, tostring(g.size)) end

-- CooperativeGroup(agent, size = 1): size agents (threads, warps, blocks) that arrive
function M.CooperativeGroup(agent, size)
  local what = "cute.pipeline.CooperativeGroup"
  if M.Agent[agent] ~= agent then
    fail(("%s(agent, size): agent %s: expected cute.pipeline.Agent.Thread, Warp, ThreadBlock or ThreadBlockCluster")
      :format(what, tostring(agent)))
  end
  size = size == nil and 1 or size
  if not (tr.is_value(size) or (type(size) == "number" and size % 1 == 0 and size >= 1)) then
    fail(("%s(%s, size): size = %s: must be a positive integer"):format(what, agent, show(size)))
  end
  return setmetatable({ agent = agent, size = size }, Group)
end

-- the arrivals a group makes on one mbarrier phase (threads)
local function arrive_count(g, what)
  if getmetatable(g) ~= Group then fail(("%s: expected a cute.pipeline.CooperativeGroup, got %s"):format(what, show(g))) end
  if g.agent == "Thread" then return g.size end
  if g.agent == "Warp" then return g.size * 32 end
  local x, y, z = arch.block_dim()
  local n = x * y * z * g.size
  if g.agent == "ThreadBlockCluster" then n = n * arch.cluster_size() end
  return n
end

---------------------------------------------------------------------------
-- pipeline state
---------------------------------------------------------------------------
local State = {}
local state_mt = {}
M.PipelineState = State

state_mt.__index = function(s, k)
  if k == "index" then return rawget(s, "_index").value end
  if k == "phase" then return rawget(s, "_phase").value end
  if k == "count" then return rawget(s, "_count").value end
  if k == "stages" then return rawget(s, "_stages") end
  local m = State[k]
  if m then return m end
  fail(("cute.pipeline.PipelineState: no field or method %q (index, phase, count, stages, advance, clone)"):format(
    tostring(k)))
end
state_mt.__newindex = function(s, k, v)
  if k == "index" or k == "phase" or k == "count" then
    rawget(s, "_" .. k).value = v
    return
  end
  fail(("cute.pipeline.PipelineState: cannot set field %q"):format(tostring(k)))
end
state_mt.__tostring = function(s) return ("PipelineState(stages = %d)"):format(rawget(s, "_stages")) end

local function is_state(x) return getmetatable(x) == state_mt end
M.is_state = is_state

local function stages_arg(n, what)
  if type(n) ~= "number" or n % 1 ~= 0 or n < 1 or n > 512 then
    fail(("%s: num_stages = %s: must be a Lua integer from 1 to 512"):format(what, show(n)))
  end
  return n
end

-- PipelineState(stages, count, index, phase): a state with these starting values
function State.new(stages, count, index, phase)
  local what = "cute.pipeline.PipelineState"
  tr.need_trace(what)
  stages_arg(stages, what)
  return setmetatable({ _stages = stages, _count = tr.var(count or 0, T.I32), _index = tr.var(index or 0, T.I32),
    _phase = tr.var(phase or 0, T.I32) }, state_mt)
end

-- make_pipeline_state(type, stages): a producer starts at phase 1 (its first
-- wait on each empty barrier passes at once), a consumer at phase 0
function M.make_pipeline_state(kind, stages)
  local what = "cute.pipeline.make_pipeline_state"
  if kind ~= "Producer" and kind ~= "Consumer" then
    fail(("%s(type, stages): type %s: expected cute.pipeline.PipelineUserType.Producer or .Consumer"):format(what,
      tostring(kind)))
  end
  stages_arg(stages, what)
  return State.new(stages, 0, 0, kind == "Producer" and 1 or 0)
end

-- the next stage: index + 1 (wrapping to 0, where the phase flips), count + 1;
-- advance(n): n stages on (a Lua integer >= 0 or a traced non-negative integer,
-- CUTLASS's PipelineState::advance(n)): the phase flips once per wrap
function State.advance(s, steps)
  if not is_state(s) then fail("PipelineState:advance(): call it with ':' on a state") end
  local n = rawget(s, "_stages")
  if tr.is_var(steps) then steps = steps.value end
  if steps ~= nil and not (type(steps) == "number" and steps == 1) then
    if type(steps) == "number" then
      if steps % 1 ~= 0 or steps < 0 or steps >= 2 ^ 31 then
        fail(("PipelineState:advance(n): n = %s: must be a non-negative integer"):format(tostring(steps)))
      end
      if steps == 0 then return end
    elseif not (tr.is_value(steps) and tr.tinfo[steps.t] and tr.tinfo[steps.t].int) then
      fail(("PipelineState:advance(n): n must be an integer (a Lua number or a traced integer), got %s"):format(
        show(steps)))
    elseif steps.t ~= T.I32 then
      steps = tr.cvt(steps, T.I32)
    end
    local t = s.index + steps
    local wraps = archmod.div(t, n)
    rawget(s, "_phase").value = tr.binop(OP.XOR, s.phase, tr.binop(OP.AND, wraps, 1))
    rawget(s, "_index").value = t - wraps * n
    rawget(s, "_count").value = s.count + steps
    return
  end
  local idx = s.index + 1
  local wrap = tr.cmp_value(OP.EQ, idx, n)
  rawget(s, "_phase").value = tr.binop(OP.XOR, s.phase, tr.select(wrap, 1, 0))
  rawget(s, "_index").value = tr.select(wrap, 0, idx)
  rawget(s, "_count").value = s.count + 1
end

-- a new state with this one's current values
function State.clone(s)
  if not is_state(s) then fail("PipelineState:clone(): call it with ':' on a state") end
  return State.new(rawget(s, "_stages"), s.count, s.index, s.phase)
end

---------------------------------------------------------------------------
-- barrier storage
---------------------------------------------------------------------------
-- barrier_storage: a shared tensor or pointer of i64 with room for 2 * stages mbarriers
local function storage_of(x, stages, what)
  local t = x
  if tr.is_value(x) then t = ten.make_tensor(x, lay.make_layout(2 * stages)) end
  if not ten.is_tensor(t) then
    fail(("%s: barrier_storage must be a shared-memory tensor or pointer of cute.int64, got %s"):format(what, show(x)))
  end
  if t.space ~= "shared" then
    fail(("%s: barrier_storage must be in shared memory, got %s memory"):format(what, t.space))
  end
  if t.elem ~= T.I64 and t.elem ~= T.U64 then
    fail(("%s: barrier_storage must hold 64-bit integers (cute.int64), got %s"):format(what,
      tr.tinfo[t.elem] and tr.tinfo[t.elem].name or "?"))
  end
  local n = ten.size_of(t)
  if type(n) == "number" and n < 2 * stages then
    fail(("%s: barrier_storage holds %d mbarriers; %d stages need %d (full and empty)"):format(what, n, stages,
      2 * stages))
  end
  return t
end

---------------------------------------------------------------------------
-- PipelineAsync
---------------------------------------------------------------------------
local Pipeline = {}
Pipeline.__index = Pipeline
M.PipelineAsync = Pipeline
M.PipelineAsync.__tostring = function(p) return ("%s(num_stages = %d)"):format(p.kind, p.num_stages) end

function Pipeline.full_barrier(p, i) return p.storage:ptr_at(i) end
function Pipeline.empty_barrier(p, i) return p.storage:ptr_at(i + p.num_stages) end

local function need_state(p, s, what)
  local mt = getmetatable(p)
  if mt ~= Pipeline and mt ~= M.PipelineTmaAsync then
    fail(("%s: call it with ':' on a pipeline (p:%s(state))"):format(what, what:match("[%w_]+$")))
  end
  if not is_state(s) then fail(("%s(state): expected a cute.pipeline state, got %s"):format(what, show(s))) end
  if rawget(s, "_stages") ~= p.num_stages then
    fail(("%s: the state has %d stages, the pipeline %d"):format(what, rawget(s, "_stages"), p.num_stages))
  end
end

-- one elected thread of warp 0 initialises every barrier
local function init_barriers(p, full_count, empty_count)
  local w = arch.make_warp_uniform(arch.warp_idx())
  tr.if_then(tr.cmp_value(OP.EQ, w, 0), function()
    tr.if_then(sm90.elect_one(), function()
      for i = 0, p.num_stages - 1 do
        sm90.mbarrier_init(p:full_barrier(i), full_count)
        sm90.mbarrier_init(p:empty_barrier(i), empty_count)
      end
    end)
  end)
end

local ASYNC_ARGS = { "barrier_storage", "num_stages", "producer_group", "consumer_group", "defer_sync" }

local function base(what, args, allowed)
  tr.need_trace(what)
  sm90.begin(what)
  check_args(args, what, allowed, { "barrier_storage", "num_stages", "producer_group", "consumer_group" })
  local n = stages_arg(args.num_stages, what)
  if args.defer_sync ~= nil and type(args.defer_sync) ~= "boolean" then
    fail(("%s: defer_sync must be a Lua boolean, got %s"):format(what, show(args.defer_sync)))
  end
  return setmetatable({ num_stages = n, storage = storage_of(args.barrier_storage, n, what),
    producer_count = arrive_count(args.producer_group, what .. " producer_group"),
    consumer_count = arrive_count(args.consumer_group, what .. " consumer_group") }, Pipeline)
end

-- PipelineAsync.create{...}: producers and consumers are threads; every
-- producer thread arrives on the full barrier (producer_commit), every
-- consumer thread on the empty one (consumer_release).  Must be called by
-- every thread of the block (warp 0 initialises; then the block syncs unless
-- defer_sync = true, when the caller must fence and sync before use).
function Pipeline.create(args)
  local what = "cute.pipeline.PipelineAsync.create"
  local p = base(what, args, ASYNC_ARGS)
  p.kind = "PipelineAsync"
  init_barriers(p, p.producer_count, p.consumer_count)
  if not args.defer_sync then
    sm90.mbarrier_init_fence()
    arch.sync_threads()
  end
  return p
end

-- producer: wait until the stage is empty (released by every consumer)
function Pipeline.producer_acquire(p, s, token)
  need_state(p, s, "producer_acquire")
  local function wait() sm90.mbarrier_wait(p:empty_barrier(s.index), s.phase) end
  if token == nil then wait() else tr.if_then(tr.unop(OP.NOT, tr.condition(token, "producer_acquire")), wait) end
  if p.tx_count then
    tr.if_then(sm90.elect_one(), function()
      sm90.mbarrier_arrive_and_expect_tx(p:full_barrier(s.index), p.tx_count)
    end)
  end
end
function Pipeline.producer_try_acquire(p, s)
  need_state(p, s, "producer_try_acquire")
  return sm90.mbarrier_try_wait(p:empty_barrier(s.index), s.phase)
end
-- producer: the stage holds data (a TMA pipeline's copies complete the transaction instead)
function Pipeline.producer_commit(p, s)
  need_state(p, s, "producer_commit")
  if p.tx_count then return end
  sm90.mbarrier_arrive(p:full_barrier(s.index))
end
function Pipeline.producer_get_barrier(p, s)
  need_state(p, s, "producer_get_barrier")
  return p:full_barrier(s.index)
end
function Pipeline.consumer_get_barrier(p, s)
  need_state(p, s, "consumer_get_barrier")
  return p:empty_barrier(s.index)
end
-- consumer: wait until the stage holds data
function Pipeline.consumer_wait(p, s, token)
  need_state(p, s, "consumer_wait")
  local function wait() sm90.mbarrier_wait(p:full_barrier(s.index), s.phase) end
  if token == nil then wait() else tr.if_then(tr.unop(OP.NOT, tr.condition(token, "consumer_wait")), wait) end
end
function Pipeline.consumer_try_wait(p, s)
  need_state(p, s, "consumer_try_wait")
  return sm90.mbarrier_try_wait(p:full_barrier(s.index), s.phase)
end
-- consumer: the stage may be overwritten
function Pipeline.consumer_release(p, s)
  need_state(p, s, "consumer_release")
  if p.signalling == nil then
    sm90.mbarrier_arrive(p:empty_barrier(s.index))
    return
  end
  tr.if_then(p.signalling, function()
    -- CTA-scope release: the stage was only read here (CUTLASS's ClusterBarrier::arrive)
    sm90.mbarrier_arrive(p:empty_barrier(s.index), p.dst_rank, p.dst_rank ~= nil and "cta" or nil)
  end)
end
-- producer, before it exits: wait until the consumers released every stage
-- (CUTLASS's producer_tail: each stage's empty barrier in turn, so consumers
-- that release out of order, e.g. ping-pong warpgroups owning alternate tiles,
-- are covered too), so that no arrive from a peer CTA reaches a block that has
-- exited.  Advances the state by num_stages.
function Pipeline.producer_tail(p, s)
  need_state(p, s, "producer_tail")
  for _ = 1, p.num_stages do
    sm90.mbarrier_wait(p:empty_barrier(s.index), s.phase)
    s:advance()
  end
end

---------------------------------------------------------------------------
-- PipelineTmaAsync
---------------------------------------------------------------------------
local Tma = setmetatable({}, { __index = Pipeline })
Tma.__index = Tma
Tma.__tostring = Pipeline.__tostring
M.PipelineTmaAsync = Tma
for _, k in ipairs({ "full_barrier", "empty_barrier", "producer_acquire", "producer_try_acquire",
  "producer_commit", "producer_get_barrier", "consumer_get_barrier", "consumer_wait", "consumer_try_wait",
  "consumer_release", "producer_tail" }) do
  Tma[k] = Pipeline[k]
end

-- the (v, m, n, k) coordinate of each CTA rank of cta_layout_vmnk (a Lua table by rank)
local function cluster_coords(L, what)
  if not lay.is_layout or not lay.is_layout(L) then
    fail(("%s: cta_layout_vmnk must be a layout (e.g. cute.make_layout({1, 2, 1, 1})), got %s"):format(what, show(L)))
  end
  local shp = lay.shape(L)
  if type(shp) ~= "table" or #shp ~= 4 then
    fail(("%s: cta_layout_vmnk %s must have 4 modes (V, M, N, K)"):format(what, tostring(L)))
  end
  for i = 1, 4 do
    if type(shp[i]) ~= "number" then
      fail(("%s: cta_layout_vmnk %s: mode %d must be a flat integer extent"):format(what, tostring(L), i - 1))
    end
  end
  local n = lay.size(L)
  if n > 16 then fail(("%s: cta_layout_vmnk %s has %d CTAs; a cluster has at most 16"):format(what, tostring(L), n)) end
  local by_rank = {}
  for i = 0, n - 1 do
    local c, r = {}, i
    for m = 1, 4 do c[m] = r % shp[m]; r = math.floor(r / shp[m]) end
    local rank = L(i)
    if type(rank) ~= "number" or rank < 0 or rank >= n or by_rank[rank] then
      fail(("%s: cta_layout_vmnk %s does not map its %d coordinates one-to-one onto ranks 0..%d"):format(what,
        tostring(L), n, n - 1))
    end
    by_rank[rank] = c
  end
  return by_rank, n
end

-- Which lanes of each consumer warp arrive on which CTA's empty barrier: lane
-- d (< cluster size) of every consumer warp signals CTA rank d when d
-- multicasts into this CTA (same V, K and same M row or N column, by
-- mcast_mode_mn), so each CTA's empty barrier expects (consumer warps) x
-- (CTAs multicasting into it) arrivals per phase.  empty_arrive_masks(L, mode)
-- is that rule on the host: masks[rank] has bit d set when rank's consumer
-- warps signal CTA d; n is the cluster size.
function M.empty_arrive_masks(L, mode, what)
  what = what or "cute.pipeline.empty_arrive_masks"
  mode = mode or { 1, 1 }
  local by_rank, n = cluster_coords(L, what)
  local masks = {}
  for cur = 0, n - 1 do
    local c, m = by_rank[cur], 0
    for d = 0, n - 1 do
      local x = by_rank[d]
      local same_m = x[1] == c[1] and x[2] == c[2] and x[4] == c[4]
      local same_n = x[1] == c[1] and x[3] == c[3] and x[4] == c[4]
      if (mode[1] == 1 and same_m) or (mode[2] == 1 and same_n) then m = m + 2 ^ d end
    end
    masks[cur] = m
  end
  return masks, n
end

local function signalling(L, tidx, mode, what)
  local masks, n = M.empty_arrive_masks(L, mode, what)
  local lane = tr.mod(tidx, 32)
  if n == 1 then return tr.cmp_value(OP.EQ, lane, 0), nil end
  local rank = arch.make_warp_uniform(arch.block_idx_in_cluster())
  local mask = masks[n - 1]
  for cur = n - 2, 0, -1 do mask = tr.select(tr.cmp_value(OP.EQ, rank, cur), masks[cur], mask) end
  local bit = tr.binop(OP.AND, tr.binop(OP.SHR, mask, lane), 1)
  local sig = tr.binop(OP.AND, tr.cmp_value(OP.LT, lane, n), tr.cmp_value(OP.NE, bit, 0))
  return sig, tr.mod(lane, n)
end

local TMA_ARGS = { "barrier_storage", "num_stages", "producer_group", "consumer_group", "tx_count",
  "cta_layout_vmnk", "tidx", "mcast_mode_mn", "defer_sync" }

-- PipelineTmaAsync.create{...}: the producer is TMA: one elected thread of the
-- producer warp arrives on the full barrier with expect_tx(tx_count) in
-- producer_acquire (the full barrier's count is producer_group's, normally
-- CooperativeGroup(Agent.Thread, 1)); the TMA copies complete the bytes.
-- consumer_group counts (consumer warps) x (CTAs that multicast into this
-- one): see `signalling`.  Every thread of every CTA of the cluster calls it.
function Tma.create(args)
  local what = "cute.pipeline.PipelineTmaAsync.create"
  if type(args) == "table" and args.tx_count == nil then fail(what .. ": tx_count is missing") end
  local p = setmetatable(base(what, args, TMA_ARGS), Tma)
  p.kind = "PipelineTmaAsync"
  local tx = args.tx_count
  if type(tx) == "number" and (tx % 1 ~= 0 or tx < 0 or tx >= 2 ^ 20) then
    fail(("%s: tx_count = %s: must be an integer from 0 to 1048575 (bytes per stage)"):format(what, tostring(tx)))
  end
  p.tx_count = tx
  local mode = args.mcast_mode_mn or { 1, 1 }
  if type(mode) ~= "table" or (mode[1] ~= 0 and mode[1] ~= 1) or (mode[2] ~= 0 and mode[2] ~= 1)
    or (mode[1] == 0 and mode[2] == 0) then
    fail(("%s: mcast_mode_mn must be {1, 1}, {1, 0} or {0, 1}"):format(what))
  end
  local L = args.cta_layout_vmnk or lay.make_layout({ 1, 1, 1, 1 })
  local tidx = args.tidx or (arch.thread_idx())
  p.cluster_ctas = lay.size(L)
  p.signalling, p.dst_rank = signalling(L, tidx, mode, what)
  init_barriers(p, p.producer_count, p.consumer_count)
  if not args.defer_sync then
    sm90.mbarrier_init_fence()
    if p.cluster_ctas == 1 then
      arch.sync_threads()
    else
      sm90.cluster_arrive_relaxed()
      sm90.cluster_wait()
    end
  end
  return p
end

return M
