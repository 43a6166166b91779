-- cute.nvgpu_sm90: Hopper's synchronisation instructions as traced operations,
-- exported from cute.arch (docs/HOPPER.md, "Barriers and pipelines",
-- "Clusters", "Warp specialisation and scheduling"):
--   mbarriers     mbarrier_init(bar, count), mbarrier_init_fence(),
--                 mbarrier_arrive(bar [, peer_cta_rank]),
--                 mbarrier_arrive_and_expect_tx(bar, bytes [, peer_cta_rank]),
--                 mbarrier_expect_tx(bar, bytes), mbarrier_try_wait(bar, phase) -> i1,
--                 mbarrier_wait(bar, phase)
--   fences        fence_proxy(kind [, space]), fence_view_async_shared()
--   warps         elect_one() -> i1, sync_warp([mask]), make_warp_uniform(x),
--                 barrier{barrier_id =, number_of_threads =}, barrier_arrive{...},
--                 warpgroup_reg_alloc(n), warpgroup_reg_dealloc(n)   (setmaxnreg, sm_90a)
--   clusters      cluster_arrive(), cluster_arrive_relaxed(), cluster_wait(), cluster_sync(),
--                 block_idx_in_cluster(), block_in_cluster_idx(), block_in_cluster_dim(),
--                 cluster_idx(), cluster_dim(), cluster_shape(), cluster_size(),
--                 mapa(bar_or_smem, rank) -> u32 shared::cluster address,
--                 map_shared_rank(smem_tensor, rank) -> the peer CTA's tensor (generic addresses)
--   bulk copies   cp_async_bulk_g2s(dst_smem, src_gmem, bytes, bar [, {mcast_mask = m}]),
--                 cp_async_bulk_s2g(dst_gmem, src_smem, bytes),
--                 cp_async_bulk_commit_group(), cp_async_bulk_wait_group(n [, read])
--
-- Each is one PTX instruction (or a short fixed block, e.g. the try_wait loop)
-- through the IR's inline asm.  Shared-memory operands are 32-bit shared
-- addresses (shared::cta), as the PTX ISA wants; a peer CTA's barrier is
-- reached through mapa (shared::cluster).  An mbarrier is an 8-byte aligned
-- i64 (or u64) in shared memory: a shared tensor (its first element) or a
-- shared pointer (t.iterator, t:ptr_at(i)).
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")
local na = require("cute.nvgpu_arch")

local T, OP = tr.T, tr.OP
local fail = tr.fail
local asm, op = na.asm, na.op

local M = {}

local function tname(t) return ffi.string(C.cute_ir_type_name(tr.state().ir, t)) end
local function show(x)
  if tr.is_value(x) then return "a traced " .. tname(x.t) end
  if tr.is_var(x) then return "a cute.var" end
  return type(x) .. " " .. tostring(x)
end

---------------------------------------------------------------------------
-- arch checks
---------------------------------------------------------------------------
-- Every op here needs sm_90 (Hopper); setmaxnreg the arch-specific sm_90a.
-- An unknown target (an IR-level trace) is checked by the code generator.
local function begin(what, need_a)
  tr.need_trace(what)
  local s = tr.state()
  local n, a = na.sm_of(s)
  if n and n < 90 then
    fail(("%s needs sm_90 (Hopper) or newer; the kernel is compiled for %s (give {arch = \"sm_90a\"})")
      :format(what, a))
  end
  if need_a and a and a ~= "sm_90a" then
    fail(("%s needs the arch-specific target sm_90a; the kernel is compiled for %s (give {arch = \"sm_90a\"})")
      :format(what, a))
  end
  return s
end
M.begin = begin

---------------------------------------------------------------------------
-- operands
---------------------------------------------------------------------------
-- a 32-bit integer operand (u32): a Lua integer in lo..hi or a traced integer
local function u32_arg(x, what, which, lo, hi)
  if type(x) == "number" then
    if x % 1 ~= 0 or x < lo or x > hi then
      fail(("%s: %s = %s: must be an integer from %d to %d"):format(what, which, tostring(x), lo, hi))
    end
    return tr.const(T.U32, x)
  end
  if tr.is_var(x) then x = x.value end
  if tr.is_value(x) then
    local info = tr.tinfo[x.t]
    if info and (info.int or info.bool) and not (info.bits and info.bits > 32) then
      if x.t ~= T.U32 then x = tr.cvt(x, T.U32) end
      return x
    end
    if info and info.int and info.bits == 64 then return tr.cvt(x, T.U32) end
  end
  fail(("%s: %s must be a Lua integer or a traced integer, got %s"):format(what, which, show(x)))
end
M.u32_arg = u32_arg

-- an mbarrier operand: a shared tensor or shared pointer of i64/u64, 8-byte aligned
local function mbar_addr(x, what)
  local p, space, al = na.address(x, what, "the mbarrier")
  na.need_space(space, { "shared" }, what, "the mbarrier")
  local e
  if ten.is_tensor(x) then e = x.elem else
    local sp = ffi.new("int[1]")
    e = C.cute_ir_type_elem(tr.state().ir, x.t, sp)
  end
  if e ~= T.I64 and e ~= T.U64 then
    fail(("%s: the mbarrier must be a 64-bit integer in shared memory (cute.int64), got %s elements"):format(what,
      tname(e)))
  end
  if al and al < 8 then fail(("%s: the mbarrier is %d-byte aligned; it must be 8-byte aligned"):format(what, al)) end
  return na.shared_u32(p)
end
M.mbar_addr = mbar_addr

-- any shared-memory operand (a tensor's first element or a shared pointer) as a u32 address
local function smem_addr(x, what, which, align)
  local p, space, al = na.address(x, what, which)
  na.need_space(space, { "shared" }, what, which)
  if align and al and al < align then
    fail(("%s: %s is %d-byte aligned; it must be %d-byte aligned"):format(what, which, al, align))
  end
  return na.shared_u32(p)
end

local function gmem_addr(x, what, which, align)
  local p, space, al = na.address(x, what, which)
  na.need_space(space, { "global", "generic" }, what, which)
  if align and al and al < align then
    fail(("%s: %s is %d-byte aligned; it must be %d-byte aligned"):format(what, which, al, align))
  end
  return na.global_u64(p)
end

-- a CTA rank in the cluster (0..15 on Hopper: 16 CTAs with the non-portable size)
local function rank_arg(r, what)
  return u32_arg(r, what, "the peer CTA rank", 0, 15)
end

local function imm_int(n, what, which, lo, hi, hint)
  if type(n) ~= "number" or n % 1 ~= 0 or n < lo or n > hi then
    fail(("%s: %s = %s: must be a Lua integer from %d to %d%s"):format(what, which,
      tr.is_value(n) and "(a traced value)" or tostring(n), lo, hi, hint or " (an immediate)"))
  end
  return n
end

local MEM = "~{memory}"

---------------------------------------------------------------------------
-- mbarriers
---------------------------------------------------------------------------
local MAX_COUNT = 2 ^ 20 - 1 -- the PTX ISA's limit on an mbarrier's expected arrival count
local MAX_TX = 2 ^ 20 - 1    -- and on its transaction count

function M.mbarrier_init(bar, count)
  local what = "cute.arch.mbarrier_init"
  begin(what)
  local a = mbar_addr(bar, what)
  local c = u32_arg(count, what, "count", 1, MAX_COUNT)
  asm(0, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r," .. MEM, { a, c })
end

function M.mbarrier_init_fence()
  begin("cute.arch.mbarrier_init_fence")
  asm(0, "fence.mbarrier_init.release.cluster;", MEM, {})
end

-- the mbarrier of CTA `rank` at the same offset as bar: a shared::cluster address
local function remote(a, rank, what)
  return asm(T.U32, "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", { a, rank_arg(rank, what) })
end

-- scope of a remote arrive's release: "cluster" (default: the arriving thread's
-- earlier writes, DSMEM ones included, are visible cluster-wide to whoever waits)
-- or "cta" (PTX's default .release.cta: no cluster-wide fence, which a
-- pipeline's consumer release needs -- it hands back a stage it only read; the
-- cluster fence is a MEMBAR stall per release: measured on an H100, it cut the
-- 2x1-cluster GEMM from 734 to 454 TFLOP/s)
local function arrive_scope(scope, what)
  if scope == nil or scope == "cluster" then return ".release.cluster" end
  if scope == "cta" then return "" end
  fail(("%s: scope must be \"cluster\" or \"cta\", got %s"):format(what, tostring(scope)))
end

function M.mbarrier_arrive(bar, peer, scope)
  local what = "cute.arch.mbarrier_arrive"
  begin(what)
  local a = mbar_addr(bar, what)
  if peer == nil then
    if scope ~= nil then fail(what .. ": scope is for a remote arrive (give peer_cta_rank)") end
    asm(0, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r," .. MEM, { a })
  else
    local sem = arrive_scope(scope, what)
    asm(0, "mbarrier.arrive" .. sem .. ".shared::cluster.b64 _, [$0];", "r," .. MEM, { remote(a, peer, what) })
  end
end

function M.mbarrier_arrive_and_expect_tx(bar, bytes, peer)
  local what = "cute.arch.mbarrier_arrive_and_expect_tx"
  begin(what)
  local a = mbar_addr(bar, what)
  local b = u32_arg(bytes, what, "bytes", 0, MAX_TX)
  if peer == nil then
    asm(0, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r," .. MEM, { a, b })
  else
    asm(0, "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [$0], $1;", "r,r," .. MEM,
      { remote(a, peer, what), b })
  end
end

function M.mbarrier_expect_tx(bar, bytes)
  local what = "cute.arch.mbarrier_expect_tx"
  begin(what)
  local a = mbar_addr(bar, what)
  local b = u32_arg(bytes, what, "bytes", 0, MAX_TX)
  asm(0, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "r,r," .. MEM, { a, b })
end

local function phase_arg(phase, what)
  if type(phase) == "boolean" then phase = phase and 1 or 0 end
  return u32_arg(phase, what, "phase", 0, 1)
end

-- true once the phase of parity `phase` has completed (one probe; the
-- hardware may suspend the thread for a while)
function M.mbarrier_try_wait(bar, phase)
  local what = "cute.arch.mbarrier_try_wait"
  begin(what)
  local a = mbar_addr(bar, what)
  local p = phase_arg(phase, what)
  return asm(T.I1, "mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;", "=b,r,r," .. MEM, { a, p })
end

-- wait until the phase of parity `phase` has completed (try_wait.parity in a loop)
function M.mbarrier_wait(bar, phase)
  local what = "cute.arch.mbarrier_wait"
  begin(what)
  local a = mbar_addr(bar, what)
  local p = phase_arg(phase, what)
  asm(0, "{\n.reg .pred P1;\nLAB_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n" ..
    "@!P1 bra LAB_WAIT;\n}", "r,r," .. MEM, { a, p })
end

---------------------------------------------------------------------------
-- fences
---------------------------------------------------------------------------
local PROXY = { alias = "fence.proxy.alias;", async = "fence.proxy.async;",
  ["async.global"] = "fence.proxy.async.global;", ["async.shared"] = true }

-- CuTe DSL's enums for fence_proxy's arguments
M.ProxyKind = { alias = "alias", async = "async", async_global = "async.global", async_shared = "async.shared" }
M.SharedSpace = { shared_cta = "cta", shared_cluster = "cluster" }

-- fence_proxy(kind [, space]): kind "alias", "async", "async.global" or
-- "async.shared" (space "cta" (default) or "cluster")
function M.fence_proxy(kind, space)
  local what = "cute.arch.fence_proxy"
  begin(what)
  local text = PROXY[kind]
  if not text then
    fail(("%s: kind %s: expected \"async.shared\", \"async.global\", \"async\" or \"alias\""):format(what,
      tostring(kind)))
  end
  if text == true then
    space = space or "cta"
    if space ~= "cta" and space ~= "cluster" then
      fail(("%s(\"async.shared\", space): space %s: expected \"cta\" or \"cluster\""):format(what, tostring(space)))
    end
    text = "fence.proxy.async.shared::" .. space .. ";"
  elseif space ~= nil then
    fail(("%s(%q, %s): only \"async.shared\" takes a space"):format(what, kind, tostring(space)))
  end
  asm(0, text, MEM, {})
end

-- make the generic proxy's shared-memory writes visible to the async proxy (TMA stores, wgmma)
function M.fence_view_async_shared()
  begin("cute.arch.fence_view_async_shared")
  asm(0, "fence.proxy.async.shared::cta;", MEM, {})
end

---------------------------------------------------------------------------
-- warps, named barriers, register reconfiguration
---------------------------------------------------------------------------
-- true in exactly one active lane of the warp (every lane of the warp must call it)
function M.elect_one()
  begin("cute.arch.elect_one")
  return asm(T.I1, "elect.sync _|$0, 0xffffffff;", "=b", {})
end

local function lane_mask(mask, what)
  if mask == nil then return tr.const(T.U32, 0xffffffff) end
  if type(mask) == "number" then
    if mask % 1 ~= 0 or mask < -2 ^ 31 or mask >= 2 ^ 32 then
      fail(("%s: mask %s: must be a 32-bit lane mask"):format(what, tostring(mask)))
    end
    if mask < 0 then mask = mask + 2 ^ 32 end
    return tr.const(T.U32, mask)
  end
  return u32_arg(mask, what, "mask", 0, 2 ^ 32 - 1)
end

function M.sync_warp(mask)
  local what = "cute.arch.sync_warp"
  tr.need_trace(what)
  asm(0, "bar.warp.sync $0;", "r," .. MEM, { lane_mask(mask, what) })
end

-- the value of lane 0 (a value the compiler may then treat as warp-uniform)
function M.make_warp_uniform(x)
  local what = "cute.arch.make_warp_uniform"
  tr.need_trace(what)
  if type(x) == "number" then return x end
  if tr.is_var(x) then x = x.value end
  if not tr.is_value(x) then fail(("%s: expected a traced integer, got %s"):format(what, show(x))) end
  local info = tr.tinfo[x.t]
  if not (info and info.int and info.bits == 32) then
    fail(("%s: expected a 32-bit integer, got %s"):format(what, tname(x.t)))
  end
  return require("cute.arch").arch.shuffle_sync(x, 0)
end

-- named barriers: {barrier_id = 0..15, number_of_threads = a multiple of 32}
local function barrier_spec(spec, what, need_count)
  if type(spec) ~= "table" then
    fail(("%s{barrier_id = id, number_of_threads = n}: expected a table, got %s"):format(what, show(spec)))
  end
  for k in pairs(spec) do
    if k ~= "barrier_id" and k ~= "number_of_threads" then
      fail(("%s: unknown field %s (barrier_id, number_of_threads)"):format(what, tostring(k)))
    end
  end
  local id, n = spec.barrier_id or 0, spec.number_of_threads
  if type(id) == "number" then imm_int(id, what, "barrier_id", 0, 15, "") end
  if n == nil then
    if need_count then fail(("%s: number_of_threads is missing (bar.arrive needs it)"):format(what)) end
  elseif type(n) == "number" then
    if n % 32 ~= 0 or n < 32 or n > 1024 then
      fail(("%s: number_of_threads = %s: must be a multiple of 32 (whole warps) from 32 to 1024"):format(what,
        tostring(n)))
    end
  end
  return id, n
end

local function bar_text(instr, id, n, what)
  local args, ops = {}, {}
  local function operand(x, which, lo, hi)
    if type(x) == "number" then return tostring(x) end
    args[#args + 1] = u32_arg(x, what, which, lo, hi)
    ops[#ops + 1] = "r"
    return "$" .. (#args - 1)
  end
  local text = instr .. " " .. operand(id, "barrier_id", 0, 15)
  if n ~= nil then text = text .. ", " .. operand(n, "number_of_threads", 32, 1024) end
  ops[#ops + 1] = MEM
  asm(0, text .. ";", table.concat(ops, ","), args)
end

-- barrier{barrier_id =, number_of_threads =} (bar.sync), or the existing positional barrier(id, n)
function M.make_barrier(positional)
  return function(spec, n)
    if type(spec) ~= "table" then return positional(spec, n) end
    local what = "cute.arch.barrier"
    tr.need_trace(what)
    local id, cnt = barrier_spec(spec, what, false)
    if type(id) == "number" and (cnt == nil or type(cnt) == "number") then return positional(id, cnt) end
    bar_text("bar.sync", id, cnt, what)
  end
end

function M.barrier_arrive(spec)
  local what = "cute.arch.barrier_arrive"
  tr.need_trace(what)
  local id, n = barrier_spec(spec, what, true)
  bar_text("bar.arrive", id, n, what)
end

-- setmaxnreg: the registers per thread of this warpgroup (24..256, a multiple of 8)
local function setmaxnreg(dir, name)
  return function(n)
    local what = "cute.arch." .. name
    begin(what, true)
    if type(n) ~= "number" or n % 1 ~= 0 or n < 24 or n > 256 or n % 8 ~= 0 then
      fail(("%s(n): n = %s: must be a multiple of 8 from 24 to 256 (a Lua integer: registers per thread)")
        :format(what, tr.is_value(n) and "(a traced value)" or tostring(n)))
    end
    asm(0, ("setmaxnreg.%s.sync.aligned.u32 %d;"):format(dir, n), MEM, {})
  end
end
M.warpgroup_reg_alloc = setmaxnreg("inc", "warpgroup_reg_alloc")
M.warpgroup_reg_dealloc = setmaxnreg("dec", "warpgroup_reg_dealloc")

---------------------------------------------------------------------------
-- clusters
---------------------------------------------------------------------------
local function sreg(name, what)
  begin(what)
  return tr.cvt(asm(T.U32, ("mov.u32 $0, %%%s;"):format(name), "=r", {}), T.I32)
end
local function sreg3(name, what)
  return function()
    return sreg(name .. ".x", what), sreg(name .. ".y", what), sreg(name .. ".z", what)
  end
end
-- linear rank of this CTA in its cluster
function M.block_idx_in_cluster() return sreg("cluster_ctarank", "cute.arch.block_idx_in_cluster") end
-- number of CTAs in the cluster
function M.cluster_size() return sreg("cluster_nctarank", "cute.arch.cluster_size") end
M.block_in_cluster_idx = sreg3("cluster_ctaid", "cute.arch.block_in_cluster_idx") -- x, y, z in the cluster
M.block_in_cluster_dim = sreg3("cluster_nctaid", "cute.arch.block_in_cluster_dim") -- the cluster's shape in CTAs
M.cluster_shape = M.block_in_cluster_dim
M.cluster_idx = sreg3("clusterid", "cute.arch.cluster_idx")                       -- the cluster's x, y, z in the grid
M.cluster_dim = sreg3("nclusterid", "cute.arch.cluster_dim")                      -- clusters in the grid

function M.cluster_arrive()
  begin("cute.arch.cluster_arrive")
  asm(0, "barrier.cluster.arrive.aligned;", MEM, {})
end
function M.cluster_arrive_relaxed()
  begin("cute.arch.cluster_arrive_relaxed")
  asm(0, "barrier.cluster.arrive.relaxed.aligned;", MEM, {})
end
function M.cluster_wait()
  begin("cute.arch.cluster_wait")
  asm(0, "barrier.cluster.wait.aligned;", MEM, {})
end
function M.cluster_sync()
  M.cluster_arrive()
  M.cluster_wait()
end

-- mapa(x, rank): the shared::cluster address (u32) of x's location in the
-- shared memory of CTA `rank` of the cluster
function M.mapa(x, rank)
  local what = "cute.arch.mapa"
  begin(what)
  local a = smem_addr(x, what, "the address")
  return asm(T.U32, "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", { a, rank_arg(rank, what) })
end

-- map_shared_rank(t, rank): the tensor t of CTA `rank` of the cluster
-- (distributed shared memory), addressed generically: its loads and stores
-- (T[i], T[i] = v, cute.copy) reach the peer's shared memory
function M.map_shared_rank(t, rank)
  local what = "cute.arch.map_shared_rank"
  local s = begin(what)
  if not ten.is_tensor(t) or t.space ~= "shared" then
    fail(("%s(tensor, rank): expected a shared-memory tensor, got %s"):format(what,
      ten.is_tensor(t) and (t.space .. " memory " .. tostring(t)) or show(t)))
  end
  local r = rank_arg(rank, what)
  tr.setloc()
  local gp = C.cute_ir_t_ptr(s.ir, t.elem, C.CUTE_AS_GENERIC)
  local base = tr.mk(t.ptr.ref, t.ptr.t)
  local g = op(OP.PTRCAST, gp, { base })
  local mapped = asm(T.U64, "mapa.u64 $0, $1, $2;", "=l,l,r", { op(OP.BITCAST, T.U64, { g }), r })
  local p = op(OP.BITCAST, gp, { mapped })
  local sw = ten.ptr_swizzle(t)
  local ptr = sw and { ref = p.ref, t = p.t, sw = sw } or p
  return ten.make(ptr, t.off, t.layout, t.elem, "generic", t.align, t.idx)
end

---------------------------------------------------------------------------
-- bulk copies (cp.async.bulk, non-tensor)
---------------------------------------------------------------------------
local function bulk_bytes(bytes, what)
  if type(bytes) == "number" then
    if bytes % 16 ~= 0 or bytes < 16 or bytes >= 2 ^ 32 then
      fail(("%s: bytes = %s: must be a positive multiple of 16"):format(what, tostring(bytes)))
    end
  end
  return u32_arg(bytes, what, "bytes", 16, 2 ^ 32 - 16)
end

-- global -> shared, completing `bytes` transactions on the mbarrier bar (of
-- this CTA; with {mcast_mask = m} into every CTA of the mask, each on its own
-- mbarrier at the same offset)
function M.cp_async_bulk_g2s(dst, src, bytes, bar, opts)
  local what = "cute.arch.cp_async_bulk_g2s"
  begin(what)
  local d = smem_addr(dst, what, "the destination", 16)
  local g = gmem_addr(src, what, "the source", 16)
  local n = bulk_bytes(bytes, what)
  local b = mbar_addr(bar, what)
  opts = opts or {}
  if type(opts) ~= "table" then fail(what .. ": options must be a table {mcast_mask = m}") end
  for k in pairs(opts) do
    if k ~= "mcast_mask" then fail(("%s: unknown option %s (mcast_mask)"):format(what, tostring(k))) end
  end
  local base = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
  if opts.mcast_mask == nil then
    asm(0, base .. " [$0], [$1], $2, [$3];", "r,l,r,r," .. MEM, { d, g, n, b })
  else
    local m = u32_arg(opts.mcast_mask, what, "mcast_mask", 1, 0xffff)
    local m16 = tr.cvt(m, T.U16)
    asm(0, base .. ".multicast::cluster [$0], [$1], $2, [$3], $4;", "r,l,r,r,h," .. MEM, { d, g, n, b, m16 })
  end
end

-- shared -> global, tracked by the bulk async-groups (commit_group / wait_group)
function M.cp_async_bulk_s2g(dst, src, bytes)
  local what = "cute.arch.cp_async_bulk_s2g"
  begin(what)
  local g = gmem_addr(dst, what, "the destination", 16)
  local s = smem_addr(src, what, "the source", 16)
  local n = bulk_bytes(bytes, what)
  asm(0, "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;", "l,r,r," .. MEM, { g, s, n })
end

function M.cp_async_bulk_commit_group()
  begin("cute.arch.cp_async_bulk_commit_group")
  asm(0, "cp.async.bulk.commit_group;", MEM, {})
end

-- wait until at most n bulk groups are pending; read = true: only until their
-- sources have been read (the shared memory may be reused)
function M.cp_async_bulk_wait_group(n, read)
  local what = "cute.arch.cp_async_bulk_wait_group"
  begin(what)
  imm_int(n, what, "n", 0, 63)
  if read ~= nil and type(read) ~= "boolean" then
    fail(("%s(n, read): read must be a Lua boolean, got %s"):format(what, show(read)))
  end
  asm(0, ("cp.async.bulk.wait_group%s %d;"):format(read and ".read" or "", n), MEM, {})
end

---------------------------------------------------------------------------
-- export into the cute.arch table
---------------------------------------------------------------------------
local EXPORTS = { "mbarrier_init", "mbarrier_init_fence", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx",
  "mbarrier_expect_tx", "mbarrier_try_wait", "mbarrier_wait", "fence_proxy", "fence_view_async_shared",
  "elect_one", "sync_warp", "make_warp_uniform", "barrier_arrive", "warpgroup_reg_alloc", "warpgroup_reg_dealloc",
  "block_idx_in_cluster", "cluster_size", "block_in_cluster_idx", "block_in_cluster_dim", "cluster_shape",
  "cluster_idx", "cluster_dim", "cluster_arrive", "cluster_arrive_relaxed", "cluster_wait", "cluster_sync",
  "mapa", "map_shared_rank", "cp_async_bulk_g2s", "cp_async_bulk_s2g", "cp_async_bulk_commit_group",
  "cp_async_bulk_wait_group" }

function M.install(arch)
  for _, k in ipairs(EXPORTS) do arch[k] = M[k] end
  arch.barrier = M.make_barrier(arch.barrier)
  arch.WARP_SIZE = 32
  arch.ProxyKind, arch.SharedSpace = M.ProxyKind, M.SharedSpace
end

return M
