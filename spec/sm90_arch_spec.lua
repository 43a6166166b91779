-- Hopper synchronisation primitives without a GPU (docs/HOPPER.md): kernels
-- using cute.arch's mbarrier, fence, elect, named-barrier, setmaxnreg, cluster,
-- mapa and bulk-copy operations compile, their PTX holds the exact
-- instructions, ptxas assembles them for sm_90a (and sm_90 where the
-- instruction is not sm_90a-only) with no spills, and bad operands or targets
-- are errors at the user's line naming the operation.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has = util.has

local THIS = "spec/sm90_arch_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil
local spec = cute.tensor_spec({ 1024 }, cute.float32)

local function build(k, arch, want)
  local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(spec)
  for _, w in ipairs(want) do assert(has(r.ptx, w), ("%s: PTX lacks %q:\n%s"):format(arch, w, r.ptx)) end
  if PTXAS then
    assert.truthy(r.cubin, arch .. ": no cubin")
    assert.are.equal(0, r.info.spill_stores, arch .. ": " .. r.ptxas_log)
    assert.are.equal(0, r.info.stack, arch)
  end
  return r
end

local mbar_kernel = cute.kernel(function(A)
  local bars = cute.make_shared_tensor(cute.make_layout(4), cute.int64, 8)
  if cute.arch.elect_one() then
    cute.arch.mbarrier_init(bars, 1)
    cute.arch.mbarrier_init(bars:ptr_at(1), 128)
    cute.arch.mbarrier_init(bars.iterator + 2, 32) -- CuTe DSL's pointer arithmetic
    cute.arch.mbarrier_init(bars.iterator + 4 - 1, 64)
  end
  cute.arch.mbarrier_init_fence()
  cute.arch.sync_threads()
  cute.arch.mbarrier_arrive(bars)
  cute.arch.mbarrier_arrive(bars.iterator, 1)
  cute.arch.mbarrier_arrive_and_expect_tx(bars, 1024)
  cute.arch.mbarrier_arrive_and_expect_tx(bars, 1024, cute.arch.block_idx_in_cluster())
  cute.arch.mbarrier_expect_tx(bars:ptr_at(2), 64)
  if cute.arch.mbarrier_try_wait(bars, 0) then A[1] = 2 end
  local phase = 0
  for i in cute.range(A[3]:to(cute.int32)) do
    cute.arch.mbarrier_wait(bars:ptr_at(cute.rem(i, 4)), phase)
    phase = cute.bxor(phase, 1)
  end
  cute.arch.mbarrier_wait(bars:ptr_at(3), 1)
end, { name = "mbar" })

local MBAR_PTX = { "mbarrier.init.shared::cta.b64", "elect.sync _|", "fence.mbarrier_init.release.cluster;",
  "mbarrier.arrive.shared::cta.b64 _, [", "mapa.shared::cluster.u32",
  "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [",
  "mbarrier.arrive.expect_tx.shared::cta.b64 _, [", "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64",
  "mbarrier.expect_tx.relaxed.cta.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
  "mov.u32 %r", "%cluster_ctarank" }

describe("cute.arch mbarriers (sm_90)", function()
  it("init, fence, arrive (local and remote through mapa), expect_tx, try_wait and wait loops assemble", function()
    local r = build(mbar_kernel, "sm_90a", MBAR_PTX)
    assert.truthy(has(r.ptx, ".version 8.0"))
    -- two try_wait loops in one kernel: each asm block scopes its label
    local _, n = r.ptx:gsub("LAB_WAIT:", "")
    assert.are.equal(2, n)
    local _, inits = r.ptx:gsub("mbarrier%.init%.shared::cta%.b64", "")
    assert.are.equal(4, inits)
    -- shared addresses are 32-bit registers (shared::cta), as the PTX ISA wants
    assert.truthy(r.ptx:find("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], %%r%d+;"), r.ptx)
  end)
  it("sm_90 (not arch-specific): the PTX version is raised to 8.0 for expect_tx, elect and remote arrives", function()
    local r = build(mbar_kernel, "sm_90", MBAR_PTX)
    assert.truthy(has(r.ptx, ".version 8.0"), r.ptx:sub(1, 200))
    assert.truthy(has(r.ptx, ".target sm_90\n"))
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
  it("try_wait returns an i1 usable as a condition; the phase may be a traced value, a var or a boolean", function()
    local k = cute.kernel(function(A)
      local bars = cute.make_shared_tensor(cute.make_layout(2), cute.uint64, 8)
      local p = cute.var(0, cute.int32)
      local ok = cute.arch.mbarrier_try_wait(bars, p)
      local ok2 = cute.arch.mbarrier_try_wait(bars:ptr_at(1), true)
      if ok and ok2 then A[0] = 1 end
    end)
    build(k, "sm_90a", { "mbarrier.try_wait.parity.shared::cta.b64 %p" })
  end)
end)

describe("cute.arch fences, warps, named barriers, setmaxnreg", function()
  local k = cute.kernel(function(A)
    cute.arch.fence_proxy("async.shared", "cta")
    cute.arch.fence_proxy("async.shared", "cluster")
    cute.arch.fence_proxy("async")
    cute.arch.fence_proxy("async.global")
    cute.arch.fence_proxy("alias")
    cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, cute.arch.SharedSpace.shared_cluster)
    cute.arch.fence_view_async_shared()
    cute.arch.sync_warp()
    cute.arch.sync_warp(0x0000ffff)
    cute.arch.barrier{ barrier_id = 1, number_of_threads = 128 }
    cute.arch.barrier{ barrier_id = cute.arch.warp_idx() + 2, number_of_threads = 64 }
    cute.arch.barrier_arrive{ barrier_id = 3, number_of_threads = 256 }
    cute.arch.barrier(4, 96)
    local w = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if w == 0 then
      cute.arch.warpgroup_reg_dealloc(40)
    else
      cute.arch.warpgroup_reg_alloc(232)
    end
    A[0] = w
  end, { name = "warps", max_threads_per_block = 384, min_blocks_per_sm = 1 })
  it("fence.proxy kinds, bar.warp.sync, bar.sync / bar.arrive with ids and counts, shfl, setmaxnreg", function()
    local r = build(k, "sm_90a", { "fence.proxy.async.shared::cta;", "fence.proxy.async.shared::cluster;",
      "fence.proxy.async;", "fence.proxy.async.global;", "fence.proxy.alias;", "bar.warp.sync %r",
      "bar.sync 1, 128;", "bar.arrive 3, 256;", "bar.sync 4, 96;", "shfl.sync.idx.b32",
      "setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;" })
    assert.truthy(r.ptx:find("bar%.sync %%r%d+, 64;"), "a traced barrier id is a register")
    if PTXAS then assert.falsy(has(r.ptxas_log, "'setmaxnreg' ignored"), r.ptxas_log) end
  end)
end)

describe("cute.arch clusters and bulk copies", function()
  local k = cute.kernel(function(A)
    local bars = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
    local buf = cute.make_shared_tensor(cute.make_layout(256), cute.float32, 16)
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()
    cute.arch.cluster_sync()
    local r = cute.arch.block_idx_in_cluster()
    local cx, cy, cz = cute.arch.block_in_cluster_idx()
    local nx = cute.arch.cluster_shape()
    local ix = cute.arch.cluster_idx()
    local gx = cute.arch.cluster_dim()
    A[0] = r + cx + cy + cz + nx + ix + gx + cute.arch.cluster_size()
    local peer = cute.arch.map_shared_rank(buf, cute.rem(r + 1, 2))
    peer[cute.arch.thread_idx()] = 1.5
    A[2] = cute.arch.mapa(buf, 1)
    cute.arch.cp_async_bulk_g2s(buf, A, 1024, bars)
    cute.arch.cp_async_bulk_g2s(buf, A, 1024, bars, { mcast_mask = 3 })
    cute.arch.cp_async_bulk_s2g(A, buf, 512)
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, true)
    cute.arch.cp_async_bulk_wait_group(1)
  end, { name = "cluster" })
  it("barrier.cluster, cluster special registers, mapa (u32 and generic), cp.async.bulk", function()
    for _, arch in ipairs({ "sm_90a", "sm_90" }) do
      build(k, arch, { "barrier.cluster.arrive.relaxed.aligned;", "barrier.cluster.wait.aligned;",
        "barrier.cluster.arrive.aligned;", "%cluster_ctarank", "%cluster_ctaid.x", "%cluster_ctaid.z",
        "%cluster_nctaid.x", "%clusterid.x", "%nclusterid.x", "%cluster_nctarank", "mapa.u64", "cvta.shared.u64",
        "mapa.shared::cluster.u32",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [",
        "cp.async.bulk.global.shared::cta.bulk_group [%rd", "cp.async.bulk.commit_group;",
        "cp.async.bulk.wait_group.read 0;", "cp.async.bulk.wait_group 1;" })
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
end)

-- every op on sm_80 is an error at the kernel's line naming the op and the arch
local OPS = {
  { "cute.arch.mbarrier_init", function(b) cute.arch.mbarrier_init(b, 1) end },
  { "cute.arch.mbarrier_init_fence", function() cute.arch.mbarrier_init_fence() end },
  { "cute.arch.mbarrier_arrive", function(b) cute.arch.mbarrier_arrive(b) end },
  { "cute.arch.mbarrier_arrive_and_expect_tx", function(b) cute.arch.mbarrier_arrive_and_expect_tx(b, 16) end },
  { "cute.arch.mbarrier_expect_tx", function(b) cute.arch.mbarrier_expect_tx(b, 16) end },
  { "cute.arch.mbarrier_try_wait", function(b) cute.arch.mbarrier_try_wait(b, 0) end },
  { "cute.arch.mbarrier_wait", function(b) cute.arch.mbarrier_wait(b, 0) end },
  { "cute.arch.fence_proxy", function() cute.arch.fence_proxy("async") end },
  { "cute.arch.fence_view_async_shared", function() cute.arch.fence_view_async_shared() end },
  { "cute.arch.elect_one", function() cute.arch.elect_one() end },
  { "cute.arch.cluster_arrive", function() cute.arch.cluster_arrive() end },
  { "cute.arch.cluster_wait", function() cute.arch.cluster_wait() end },
  { "cute.arch.block_idx_in_cluster", function() cute.arch.block_idx_in_cluster() end },
  { "cute.arch.block_in_cluster_idx", function() cute.arch.block_in_cluster_idx() end },
  { "cute.arch.mapa", function(b) cute.arch.mapa(b, 1) end },
  { "cute.arch.map_shared_rank", function(b) cute.arch.map_shared_rank(b, 1) end },
  { "cute.arch.cp_async_bulk_g2s", function(b, s, A) cute.arch.cp_async_bulk_g2s(s, A, 16, b) end },
  { "cute.arch.cp_async_bulk_s2g", function(_, s, A) cute.arch.cp_async_bulk_s2g(A, s, 16) end },
  { "cute.arch.cp_async_bulk_commit_group", function() cute.arch.cp_async_bulk_commit_group() end },
  { "cute.arch.cp_async_bulk_wait_group", function() cute.arch.cp_async_bulk_wait_group(0) end },
  { "cute.arch.warpgroup_reg_alloc", function() cute.arch.warpgroup_reg_alloc(240) end },
}

local function op_kernel(f, arch)
  return cute.kernel(function(A)
    local b = cute.make_shared_tensor(cute.make_layout(2), cute.int64, 8)
    local s = cute.make_shared_tensor(cute.make_layout(64), cute.float32, 16)
    f(b, s, A)
  end, { arch = arch, use_ptxas = false })
end

local function error_of(f, arch)
  local ok, e = pcall(op_kernel(f, arch).ir, op_kernel(f, arch), spec)
  assert(not ok, "expected a trace error from the op at line " .. debug.getinfo(f, "S").linedefined)
  e = tostring(e)
  local line = debug.getinfo(f, "S").linedefined
  assert(has(e, THIS .. ":" .. line .. ":"), "not at the op's line " .. line .. ": " .. e)
  return e
end

describe("cute.arch Hopper ops: errors", function()
  it("every op traced for sm_80 names the op and the arch at the user's line", function()
    for _, o in ipairs(OPS) do
      local e = error_of(o[2], "sm_80")
      assert(has(e, o[1] .. " needs sm_90 (Hopper) or newer; the kernel is compiled for sm_80"), e)
    end
  end)
  it("setmaxnreg needs sm_90a; its count is a multiple of 8 from 24 to 256", function()
    local e = error_of(function() cute.arch.warpgroup_reg_dealloc(40) end, "sm_90")
    assert(has(e, "cute.arch.warpgroup_reg_dealloc needs the arch-specific target sm_90a; the kernel is compiled for sm_90"), e)
    for _, n in ipairs({ 20, 100, 264, 0, 24.5 }) do
      e = error_of(function() cute.arch.warpgroup_reg_alloc(n) end, "sm_90a")
      assert(has(e, "cute.arch.warpgroup_reg_alloc(n): n = " .. tostring(n) .. ": must be a multiple of 8 from 24 to 256"), e)
    end
    e = error_of(function() cute.arch.warpgroup_reg_alloc(cute.arch.thread_idx()) end, "sm_90a")
    assert(has(e, "n = (a traced value)"), e)
  end)
  it("bad operands: global or f32 barriers, counts, bytes, kinds, fields", function()
    local cases = {
      { function(_, _, A) cute.arch.mbarrier_init(A, 1) end, "cute.arch.mbarrier_init: the mbarrier must be in shared memory, got global memory" },
      { function(_, s) cute.arch.mbarrier_arrive(s) end, "cute.arch.mbarrier_arrive: the mbarrier must be a 64-bit integer in shared memory (cute.int64), got f32 elements" },
      { function(b) cute.arch.mbarrier_init(b, 0) end, "cute.arch.mbarrier_init: count = 0: must be an integer from 1 to 1048575" },
      { function(b) cute.arch.mbarrier_arrive(b, 1, "gpu") end,
        'cute.arch.mbarrier_arrive: scope must be "cluster" or "cta", got gpu' },
      { function(b) cute.arch.mbarrier_arrive(b, nil, "cta") end,
        "cute.arch.mbarrier_arrive: scope is for a remote arrive (give peer_cta_rank)" },
      { function(b) cute.arch.mbarrier_init(b, 2.5) end, "count = 2.5" },
      { function(b) cute.arch.mbarrier_init(b, "x") end, "cute.arch.mbarrier_init: count must be a Lua integer or a traced integer, got string x" },
      { function(b) cute.arch.mbarrier_arrive_and_expect_tx(b, 2 ^ 20) end, "bytes = 1048576: must be an integer from 0 to 1048575" },
      { function(b) cute.arch.mbarrier_wait(b, 2) end, "cute.arch.mbarrier_wait: phase = 2: must be an integer from 0 to 1" },
      { function(b) cute.arch.mbarrier_arrive(b, 16) end, "cute.arch.mbarrier_arrive: the peer CTA rank = 16: must be an integer from 0 to 15" },
      { function(b) cute.arch.mbarrier_arrive(b:ptr_at(0), 1.0 / 0) end, "the peer CTA rank = inf" },
      { function() cute.arch.mbarrier_init(3, 1) end, "cute.arch.mbarrier_init: the mbarrier must be a tensor or a traced pointer, got number 3" },
      { function() cute.arch.fence_proxy("async.smem") end, "cute.arch.fence_proxy: kind async.smem: expected \"async.shared\"" },
      { function() cute.arch.fence_proxy("async.shared", "gpu") end, "space gpu: expected \"cta\" or \"cluster\"" },
      { function() cute.arch.fence_proxy("async", "cta") end, "only \"async.shared\" takes a space" },
      { function() cute.arch.barrier{ barrier_id = 16, number_of_threads = 32 } end, "cute.arch.barrier: barrier_id = 16: must be a Lua integer from 0 to 15" },
      { function() cute.arch.barrier{ barrier_id = 1, number_of_threads = 100 } end, "cute.arch.barrier: number_of_threads = 100: must be a multiple of 32" },
      { function() cute.arch.barrier{ id = 1 } end, "cute.arch.barrier: unknown field id (barrier_id, number_of_threads)" },
      { function() cute.arch.barrier_arrive{ barrier_id = 1 } end, "cute.arch.barrier_arrive: number_of_threads is missing" },
      { function() cute.arch.barrier_arrive(1) end, "cute.arch.barrier_arrive{barrier_id = id, number_of_threads = n}: expected a table, got number 1" },
      { function(b, s, A) cute.arch.cp_async_bulk_g2s(s, A, 24, b) end, "cute.arch.cp_async_bulk_g2s: bytes = 24: must be a positive multiple of 16" },
      { function(b, s, A) cute.arch.cp_async_bulk_g2s(A, s, 16, b) end, "cute.arch.cp_async_bulk_g2s: the destination must be in shared memory, got global memory" },
      { function(b, s, A) cute.arch.cp_async_bulk_g2s(cute.make_tensor(s, cute.make_layout({ 4, 16 }))[{ 1, cute._ }], A, 16, b) end, "the destination is 4-byte aligned; it must be 16-byte aligned" },
      { function(b, s, A) cute.arch.cp_async_bulk_g2s(s, A, 16, b, { mask = 1 }) end, "unknown option mask (mcast_mask)" },
      { function() cute.arch.cp_async_bulk_wait_group(64) end, "cute.arch.cp_async_bulk_wait_group: n = 64: must be a Lua integer from 0 to 63" },
      { function() cute.arch.cp_async_bulk_wait_group(0, 1) end, "read must be a Lua boolean" },
      { function(_, _, A) cute.arch.map_shared_rank(A, 1) end, "cute.arch.map_shared_rank(tensor, rank): expected a shared-memory tensor, got global memory" },
      { function(_, _, A) cute.arch.make_warp_uniform(A[0]) end, "cute.arch.make_warp_uniform: expected a 32-bit integer, got f32" },
    }
    for _, c in ipairs(cases) do
      local e = error_of(c[1], "sm_90a")
      assert(has(e, c[2]), ("%q not in: %s"):format(c[2], e))
    end
  end)
  it("outside a kernel: an error naming the op", function()
    util.expect_error(function() cute.arch.elect_one() end, "cute.arch.elect_one is only available inside a kernel")
    util.expect_error(function() cute.arch.cluster_sync() end, "cute.arch.cluster_arrive is only available inside a kernel")
  end)
end)
