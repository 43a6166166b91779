-- cute.pipeline and the persistent tile scheduler without a GPU
-- (docs/HOPPER.md): the Hopper test kernels of spec/support/sm90_kernels.lua
-- compile and assemble for sm_90a with no spills and the expected
-- instructions; the cluster arrival masks of PipelineTmaAsync and the
-- scheduler's tile order equal references computed differently by hand; bad
-- arguments are errors at the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local K = dofile("spec/support/sm90_kernels.lua")
local ts = require("cute.tile_scheduler")
local has = util.has
local f32, i32 = cute.float32, cute.int32

local THIS = "spec/pipeline_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil
local P = cute.pipeline

local function build(k, want, ...)
  local r = k:with({ use_ptxas = PTXAS }):compile(...)
  for _, w in ipairs(want) do assert(has(r.ptx, w), ("PTX lacks %q:\n%s"):format(w, r.ptx)) end
  assert.falsy(has(r.ptx, ".local"))
  if PTXAS then
    assert.truthy(r.cubin)
    assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
    assert.are.equal(0, r.info.stack, r.ptxas_log)
  end
  return r
end

describe("cute.pipeline kernels (sm_90a)", function()
  it("PipelineAsync: warp-specialised producer/consumer ring", function()
    local r = build(K.pipeline_async(4), { "mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster;",
      "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.shared::cta.b64 _, [", "elect.sync" },
      cute.tensor_spec({ 4096 }, f32), cute.tensor_spec({ 3, 4096 }, f32), cute.Int32(4))
    -- 4 stages: 4 full barriers of 32 producer threads, 4 empty barriers of 3 warps (96 threads)
    local _, inits = r.ptx:gsub("mbarrier%.init%.shared::cta%.b64", "")
    assert.are.equal(8, inits)
    assert.truthy(has(r.ptx, "mov.b32 \t%r") and r.ptx:find("mov%.b32%s+%%r%d+, 96;"), "the consumer count")
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
  it("PipelineTmaAsync over bulk copies: one CTA, and a 2-CTA cluster with multicast and remote releases", function()
    local r1 = build(K.bulk_pipeline(4, 1), { "mbarrier.arrive.expect_tx.shared::cta.b64 _, [",
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [", "bar.sync" },
      cute.tensor_spec({ 8192 }, f32), cute.tensor_spec({ 3, 8192 }, f32), cute.Int32(8))
    assert.falsy(has(r1.ptx, "mapa"), "one CTA: consumers release locally")
    assert.falsy(has(r1.ptx, "barrier.cluster"))
    build(K.bulk_pipeline(4, 2), { "mbarrier.arrive.expect_tx.shared::cta.b64 _, [",
      ".multicast::cluster [", "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64",
      "%cluster_ctarank", "barrier.cluster.arrive.relaxed.aligned;", "barrier.cluster.wait.aligned;" },
      cute.tensor_spec({ 8192 }, f32), cute.tensor_spec({ 3, 16384 }, f32), cute.Int32(4))
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
  it("the other Hopper test kernels assemble (bulk round trip, DSMEM, elect, setmaxnreg, named barriers)", function()
    build(K.bulk_roundtrip(), { "cp.async.bulk.global.shared::cta.bulk_group", "fence.proxy.async.shared::cta;" },
      cute.tensor_spec({ 4096 }, f32), cute.tensor_spec({ 4096 }, f32))
    build(K.cluster_dsmem(), { "mapa.u64", "barrier.cluster.arrive.aligned;" }, cute.tensor_spec({ 4, 68 }, f32))
    build(K.elect(), { "elect.sync" }, cute.tensor_spec({ 64 }, i32), cute.tensor_spec({ 64 }, i32))
    local r = build(K.setmaxnreg(), { "setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;",
      ".maxntid 384, 1, 1", ".minnctapersm 1" }, cute.tensor_spec({ 384 }, i32))
    if PTXAS then assert.falsy(has(r.ptxas_log, "'setmaxnreg' ignored"), r.ptxas_log) end
    build(K.named_barriers(), { "bar.arrive 1, 64;", "bar.sync 1, 64;", "bar.sync 2, 64;", "bar.arrive 2, 64;",
      "bar.sync 3, 64;" }, cute.tensor_spec({ 96 }, i32))
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
end)

describe("pipeline states", function()
  it("advance wraps the index and flips the phase: the traced code, folded by LLVM, against Lua", function()
    -- a producer and a consumer state of 3 stages advanced 0..7 times; each step's
    -- index, phase and count stored; after LLVM's passes every store is a constant
    local k = cute.kernel(function(Out)
      local sts = { P.make_pipeline_state(P.PipelineUserType.Producer, 3),
        P.make_pipeline_state(P.PipelineUserType.Consumer, 3) }
      for s = 1, 2 do
        local st = sts[s]
        for step = 0, 7 do
          local o = ((s - 1) * 8 + step) * 3
          Out[o], Out[o + 1], Out[o + 2] = st.index, st.phase, st.count
          st:advance()
        end
      end
      local c = sts[1]:clone()
      c:advance()
      Out[48], Out[49] = c.index, sts[1].index -- a clone advances alone
    end, { arch = "sm_90a", use_ptxas = false, name = "states" })
    local ll = k:compile(cute.tensor_spec({ 50 }, i32)).llvm
    local off, got = { ["%Out"] = 0 }, {}
    for name, o in ll:gmatch("(%%%w+) = getelementptr inbounds i8, ptr addrspace%(1%) %%Out, i64 (%d+)") do
      off[name] = tonumber(o)
    end
    for v, name in ll:gmatch("store i32 (%-?%d+), ptr addrspace%(1%) (%%%w+),") do got[off[name] / 4] = tonumber(v) end
    for s = 1, 2 do
      local index, phase = 0, s == 1 and 1 or 0
      for step = 0, 7 do
        local o = ((s - 1) * 8 + step) * 3
        assert.are.same({ index, phase, step }, { got[o], got[o + 1], got[o + 2] }, ("state %d step %d"):format(s, step))
        index = index + 1
        if index == 3 then index, phase = 0, 1 - phase end
      end
    end
    assert.are.same({ 0, 2 }, { got[48], got[49] }) -- producer after 8 steps: index 2; its clone one more: 0
  end)

  it("producer_tail waits on every stage's empty barrier in turn (CUTLASS's tail), with the producer's phases",
    function()
    -- 3 stages, the producer 4 k-tiles in: the tail waits on stages 1, 2, 0 (the releases
    -- of k-tiles 1, 2, 3), each at the phase the next acquire of that stage would wait for
    local k = cute.kernel(function(Out)
      local bars = cute.make_shared_tensor(cute.make_layout(6), cute.int64, 8)
      local p = P.PipelineAsync.create{ barrier_storage = bars, num_stages = 3,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1), consumer_group = P.CooperativeGroup(P.Agent.Warp, 1) }
      local st = P.make_pipeline_state(P.PipelineUserType.Producer, 3)
      st:advance(4)
      p:producer_tail(st)
      Out[0], Out[1], Out[2] = st.index, st.phase, st.count
    end, { arch = "sm_90a", use_ptxas = false, name = "tail" })
    local r = k:compile(cute.tensor_spec({ 3 }, i32))
    -- each wait: the barrier's byte offset in the storage and the parity (LLVM folds both)
    local waits = {}
    for line in r.llvm:gmatch("[^\n]*mbarrier%.try_wait%.parity[^\n]*") do
      local off, parity = line:match("i64 (%d+)%) to i32%), i32 (%d)%)")
      waits[#waits + 1] = { tonumber(off), tonumber(parity) }
    end
    -- empty barrier of stage i at byte 8 (3 + i); k-tile c's producer parity 1 - floor(c / 3) % 2
    assert.are.same({ { 32, 0 }, { 40, 0 }, { 24, 1 } }, waits)
  end)

  it("advance(n) steps n stages at once (Lua and traced n): the same states as n single steps", function()
    -- a consumer state of 3 stages advanced by 0, 1, 2, 3, 5, 7 (Lua numbers), then by
    -- 4 through a traced value; LLVM folds every stored index, phase and count
    local steps = { 0, 1, 2, 3, 5, 7 }
    local k = cute.kernel(function(Out, N)
      local st = P.make_pipeline_state(P.PipelineUserType.Consumer, 3)
      for i, n in ipairs(steps) do
        st:advance(n)
        Out[3 * i], Out[3 * i + 1], Out[3 * i + 2] = st.index, st.phase, st.count
      end
      st:advance(N + 4 - N)
      Out[0], Out[1], Out[2] = st.index, st.phase, st.count
    end, { arch = "sm_90a", use_ptxas = false, name = "states_n" })
    local ll = k:compile(cute.tensor_spec({ 3 * (#steps + 1) }, i32), cute.Int32(9)).llvm
    local off, got = { ["%Out"] = 0 }, {}
    for name, o in ll:gmatch("(%%%w+) = getelementptr inbounds i8, ptr addrspace%(1%) %%Out, i64 (%d+)") do
      off[name] = tonumber(o)
    end
    for v, name in ll:gmatch("store i32 (%-?%d+), ptr addrspace%(1%) (%%%w+),") do got[off[name] / 4] = tonumber(v) end
    local index, phase, count = 0, 0, 0
    local function step(n)
      for _ = 1, n do
        index, count = index + 1, count + 1
        if index == 3 then index, phase = 0, 1 - phase end
      end
    end
    for i, n in ipairs(steps) do
      step(n)
      assert.are.same({ index, phase, count }, { got[3 * i], got[3 * i + 1], got[3 * i + 2] }, ("advance(%d)"):format(n))
    end
    step(4)
    assert.are.same({ index, phase, count }, { got[0], got[1], got[2] }, "advance(traced 4)")
    local bad = cute.kernel(function(Out)
      P.make_pipeline_state(P.PipelineUserType.Consumer, 3):advance(-1) -- MARK advance(-1)
    end, { arch = "sm_90a" })
    local e = util.trace_error(bad, cute.tensor_spec({ 1 }, i32))
    util.at_line(THIS, e, "MARK advance(-1)")
    assert.truthy(has(e, "PipelineState:advance(n): n = -1: must be a non-negative integer"), e)
  end)
end)

describe("PipelineTmaAsync cluster arrivals", function()
  it("each CTA's consumer warps signal the CTAs in its M row and N column (CuTe's rule), by hand", function()
    local m = P.empty_arrive_masks(cute.make_layout({ 1, 2, 1, 1 }))
    assert.are.same({ [0] = 3, [1] = 3 }, m)
    -- 2 x 2 cluster, rank = m + 2 n: rank 0 (0,0) -> ranks 0, 1 (same n) and 2 (same m)
    m = P.empty_arrive_masks(cute.make_layout({ 1, 2, 2, 1 }))
    assert.are.same({ [0] = 7, [1] = 11, [2] = 13, [3] = 14 }, m)
    m = P.empty_arrive_masks(cute.make_layout({ 1, 2, 2, 1 }), { 1, 0 }) -- A multicast only: same M row
    assert.are.same({ [0] = 5, [1] = 10, [2] = 5, [3] = 10 }, m)
    m = P.empty_arrive_masks(cute.make_layout({ 1, 2, 2, 1 }), { 0, 1 })
    assert.are.same({ [0] = 3, [1] = 3, [2] = 12, [3] = 12 }, m)
    -- a row-major cluster layout: rank = 2 m + n
    m = P.empty_arrive_masks(cute.make_layout({ 1, 2, 2, 1 }, { 0, 2, 1, 0 }), { 1, 0 })
    assert.are.same({ [0] = 3, [1] = 3, [2] = 12, [3] = 12 }, m)
    assert.are.same({ [0] = 1 }, (P.empty_arrive_masks(cute.make_layout({ 1, 1, 1, 1 }))))
  end)
end)

-- the scheduler's linear order written another way: nested loops over swaths
local function ref_order(cm, cn, L, raster, g)
  local out = {}
  local major, minor = cm, cn
  if raster == "N" then major, minor = cn, cm end
  for l = 0, L - 1 do
    for s0 = 0, minor - 1, g do
      local w = math.min(g, minor - s0)
      for maj = 0, major - 1 do
        for k = 0, w - 1 do
          if raster == "M" then out[#out + 1] = { maj, s0 + k, l } else out[#out + 1] = { s0 + k, maj, l } end
        end
      end
    end
  end
  return out
end

describe("the persistent tile scheduler (host)", function()
  it("cluster_coord walks every cluster tile once in the grouped raster order", function()
    for _, raster in ipairs({ "M", "N" }) do
      for _, g in ipairs({ 1, 2, 3, 4, 8 }) do
        for _, sh in ipairs({ { 1, 1, 1 }, { 5, 7, 2 }, { 8, 8, 1 }, { 3, 10, 3 }, { 13, 4, 1 }, { 16, 9, 2 } }) do
          local p = cute.utils.PersistentTileSchedulerParams(sh, { 1, 1, 1 }, { raster = raster, group = g })
          local want = ref_order(sh[1], sh[2], sh[3], raster, g)
          for w = 0, #want - 1 do
            local m, n, l, valid = ts.cluster_coord(p, w)
            assert.are.same(want[w + 1], { m, n, l }, ("%s g=%d shape %s w=%d"):format(raster, g, table.concat(sh, "x"), w))
            assert.is_true(valid)
          end
          for w = #want, #want + 3 do assert.is_false((select(4, ts.cluster_coord(p, w)))) end
        end
      end
    end
  end)
  it("the traced arithmetic (runtime extents in the kernel) gives the same order: LLVM folds it to the reference", function()
    local tr = require("cute.trace")
    -- a kernel storing cluster_coord of traced-constant extents and work indices; after
    -- LLVM's passes each store is a constant at a constant offset: read them back
    local function traced(raster, g, sh, n)
      local k = cute.kernel(function(Out)
        local c = function(x) return tr.const(tr.T.I32, x) end
        local p = cute.utils.PersistentTileSchedulerParams({ c(sh[1]), c(sh[2]), c(sh[3]) }, { 1, 1, 1 },
          { raster = raster, group = g })
        for w = 0, n - 1 do
          local m, nn, l, v = ts.cluster_coord(p, c(w))
          Out[w * 4], Out[w * 4 + 1], Out[w * 4 + 2], Out[w * 4 + 3] = m, nn, l, cute.where(v, 1, 0)
        end
      end, { arch = "sm_90a", use_ptxas = false, name = "order" })
      local ll = k:compile(cute.tensor_spec({ 4 * n }, i32)).llvm
      local off, got = { ["%Out"] = 0 }, {}
      for name, o in ll:gmatch("(%%%w+) = getelementptr inbounds i8, ptr addrspace%(1%) %%Out, i64 (%d+)") do
        off[name] = tonumber(o)
      end
      for v, name in ll:gmatch("store i32 (%-?%d+), ptr addrspace%(1%) (%%%w+),") do
        got[off[name] / 4] = tonumber(v)
      end
      return got
    end
    for _, c in ipairs({ { "M", 1, { 5, 7, 2 } }, { "M", 3, { 5, 7, 2 } }, { "N", 2, { 9, 4, 1 } }, { "N", 4, { 7, 3, 2 } } }) do
      local raster, g, sh = c[1], c[2], c[3]
      local want = ref_order(sh[1], sh[2], sh[3], raster, g)
      local got = traced(raster, g, sh, #want + 2)
      for w = 0, #want + 1 do
        local e = want[w + 1]
        local what = ("%s g=%d %s w=%d"):format(raster, g, table.concat(sh, "x"), w)
        if e then
          assert.are.same({ e[1], e[2], e[3], 1 }, { got[4 * w], got[4 * w + 1], got[4 * w + 2], got[4 * w + 3] }, what)
        else
          assert.are.equal(0, got[4 * w + 3], what)
        end
      end
    end
  end)
  it("clusters: tiles are the cluster's tile times its shape plus the CTA's place; grid from get_grid_shape", function()
    -- 2 x 1 clusters over 7 x 5 tiles: 4 x 5 cluster tiles (the last M cluster half outside)
    local p = cute.utils.PersistentTileSchedulerParams({ 7, 5, 1 }, { 2, 1, 1 }, { raster = "N", group = 2 })
    assert.are.same({ 4, 5, 1 }, p.ncluster_mnl)
    assert.are.same({ 2, 1, 20 }, cute.utils.get_grid_shape(p, 132))
    assert.are.same({ 2, 1, 6 }, cute.utils.get_grid_shape(p, 6))
    local grid = cute.utils.get_grid_shape(p, 6)
    local seen, count = {}, 0
    for z = 0, grid[3] - 1 do
      for x = 0, grid[1] - 1 do
        local w = z
        while true do
          local m, n, l, valid = ts.tile_coord(p, w, x % 2, 0)
          if not valid then break end
          local key = m .. "," .. n .. "," .. l
          assert.is_nil(seen[key], key)
          seen[key] = true
          count = count + 1
          w = w + grid[3]
        end
      end
    end
    assert.are.equal(8 * 5, count) -- 7 real M tiles plus the cluster's tile 7 beyond the edge (the kernel predicates it)
    for m = 0, 7 do for n = 0, 4 do assert.truthy(seen[m .. "," .. n .. ",0"]) end end
  end)
  it("the kernel's scheduler compiles with runtime (traced) and static problem shapes", function()
    local args = { cute.tensor_spec({ 16, 64, 4 }, i32), cute.Int32(5), cute.Int32(6), cute.Int32(2) }
    build(K.scheduler(2, 1, { raster = "M", group = 2 }, true), { "div.s32" }, unpack(args))
    local r = build(K.scheduler(1, 1, { raster = "N", group = 3 }, false, { 5, 7, 2 }), {}, unpack(args))
    assert.falsy(has(r.ptx, "div.s32"), "static extents: divisions by constants")
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
  it("bad parameters are errors naming the argument", function()
    local PS = cute.utils.PersistentTileSchedulerParams
    util.expect_error(function() PS({ 4, 4 }, { 1, 1, 1 }) end, "expected {m_tiles, n_tiles, l}")
    util.expect_error(function() PS({ 4, 4, 1 }, { 1, 1, 2 }) end, "the K extent of a cluster must be 1")
    util.expect_error(function() PS({ 4, 4, 1 }, { 4, 8, 1 }) end, "a cluster of 4 x 8 CTAs: at most 16")
    util.expect_error(function() PS({ 4, 4, 1 }, { 0, 1, 1 }) end, "cluster_shape_mnk[1] = number 0")
    util.expect_error(function() PS({ 4, 4, 1 }, { 1, 1, 1 }, { raster = "K" }) end, "raster = string K: expected \"M\" or \"N\"")
    util.expect_error(function() PS({ 4, 4, 1 }, { 1, 1, 1 }, { group = 0 }) end, "group = number 0: must be a Lua integer >= 1")
    util.expect_error(function() PS({ 4, 4, 1 }, { 1, 1, 1 }, { swizzle = 2 }) end, "unknown option swizzle (raster, group)")
    util.expect_error(function() PS({ 4.5, 4, 1 }, { 1, 1, 1 }) end, "m_tiles = 4.5")
    local p = PS({ 4, 4, 1 }, { 1, 1, 1 })
    util.expect_error(function() cute.utils.get_grid_shape(p, 0) end, "max_active_clusters = number 0")
    util.expect_error(function() cute.utils.StaticPersistentTileScheduler.create(p, {}, {}) end,
      "only available inside a kernel")
  end)
end)

-- pipeline misuse, at the kernel's line
local function pipe_error(f)
  local k = cute.kernel(function(A)
    local bars = cute.make_shared_tensor(cute.make_layout(8), cute.int64, 8)
    local s = cute.make_shared_tensor(cute.make_layout(8), cute.float32, 16)
    f(bars, s, A)
  end, { arch = "sm_90a", use_ptxas = false })
  local ok, e = pcall(k.ir, k, cute.tensor_spec({ 16 }, f32))
  local info = debug.getinfo(f, "S")
  assert(not ok, "expected an error from line " .. info.linedefined)
  e = tostring(e)
  local line = tonumber(e:match(THIS:gsub("%p", "%%%0") .. ":(%d+):"))
  assert(line and line >= info.linedefined and line <= info.lastlinedefined, "not at the user's line: " .. e)
  return e
end

describe("cute.pipeline errors", function()
  local G = function(n) return P.CooperativeGroup(P.Agent.Thread, n) end
  it("create: missing, unknown and bad arguments", function()
    local cases = {
      { function(b) P.PipelineAsync.create{ barrier_storage = b, num_stages = 4, producer_group = G(1) } end, "cute.pipeline.PipelineAsync.create: consumer_group is missing" },
      { function(b) P.PipelineAsync.create{ barrier_storage = b, num_stages = 4, producer_group = G(1), consumer_group = G(1), stages = 2 } end, "unknown argument stages" },
      { function(b) P.PipelineAsync.create{ barrier_storage = b, num_stages = 5, producer_group = G(1), consumer_group = G(1) } end, "barrier_storage holds 8 mbarriers; 5 stages need 10" },
      { function(_, s) P.PipelineAsync.create{ barrier_storage = s, num_stages = 2, producer_group = G(1), consumer_group = G(1) } end, "barrier_storage must hold 64-bit integers (cute.int64), got f32" },
      { function(_, _, A) P.PipelineAsync.create{ barrier_storage = A, num_stages = 2, producer_group = G(1), consumer_group = G(1) } end, "barrier_storage must be in shared memory, got global memory" },
      { function(b) P.PipelineAsync.create{ barrier_storage = b, num_stages = 0, producer_group = G(1), consumer_group = G(1) } end, "num_stages = number 0: must be a Lua integer from 1 to 512" },
      { function(b) P.PipelineAsync.create{ barrier_storage = b, num_stages = 2, producer_group = 32, consumer_group = G(1) } end, "producer_group: expected a cute.pipeline.CooperativeGroup, got number 32" },
      { function(b) P.PipelineTmaAsync.create{ barrier_storage = b, num_stages = 2, producer_group = G(1), consumer_group = G(1) } end, "cute.pipeline.PipelineTmaAsync.create: tx_count is missing" },
      { function(b) P.PipelineTmaAsync.create{ barrier_storage = b, num_stages = 2, producer_group = G(1), consumer_group = G(1), tx_count = 2 ^ 20 } end, "tx_count = 1048576: must be an integer from 0 to 1048575" },
      { function(b) P.PipelineTmaAsync.create{ barrier_storage = b, num_stages = 2, producer_group = G(1), consumer_group = G(1), tx_count = 16, mcast_mode_mn = { 0, 0 } } end, "mcast_mode_mn must be {1, 1}, {1, 0} or {0, 1}" },
      { function(b) P.PipelineTmaAsync.create{ barrier_storage = b, num_stages = 2, producer_group = G(1), consumer_group = G(1), tx_count = 16, cta_layout_vmnk = cute.make_layout({ 2, 1, 1 }) } end, "must have 4 modes (V, M, N, K)" },
      { function() P.CooperativeGroup("Threads", 4) end, "cute.pipeline.CooperativeGroup(agent, size): agent Threads: expected cute.pipeline.Agent.Thread" },
      { function() P.CooperativeGroup(P.Agent.Warp, 0) end, "size = number 0: must be a positive integer" },
      { function() P.make_pipeline_state("producer", 4) end, "type producer: expected cute.pipeline.PipelineUserType.Producer or .Consumer" },
    }
    for _, c in ipairs(cases) do
      local e = pipe_error(c[1])
      assert(has(e, c[2]), ("%q not in: %s"):format(c[2], e))
    end
  end)
  it("a state of another stage count, a method called with '.', an unknown state field", function()
    local e = pipe_error(function(b)
      local p = P.PipelineAsync.create{ barrier_storage = b, num_stages = 4, producer_group = G(1), consumer_group = G(1) }
      p:consumer_wait(P.make_pipeline_state(P.PipelineUserType.Consumer, 3))
    end)
    assert(has(e, "consumer_wait: the state has 3 stages, the pipeline 4"), e)
    e = pipe_error(function(b)
      local p = P.PipelineAsync.create{ barrier_storage = b, num_stages = 4, producer_group = G(1), consumer_group = G(1) }
      p.consumer_release(P.make_pipeline_state(P.PipelineUserType.Consumer, 4))
    end)
    assert(has(e, "consumer_release: call it with ':' on a pipeline"), e)
    e = pipe_error(function() local _ = P.make_pipeline_state(P.PipelineUserType.Producer, 4).stage end)
    assert(has(e, "no field or method \"stage\""), e)
  end)
  it("a pipeline traced for sm_80 names the operation and the arch", function()
    local k = cute.kernel(function(A)
      local bars = cute.make_shared_tensor(cute.make_layout(8), cute.int64, 8)
      P.PipelineAsync.create{ barrier_storage = bars, num_stages = 4, producer_group = G(1), consumer_group = G(1) } -- MARK-sm80
      A[0] = 1
    end, { arch = "sm_80", use_ptxas = false })
    local e = util.trace_error(k, cute.tensor_spec({ 16 }, f32))
    assert(has(e, "cute.pipeline.PipelineAsync.create needs sm_90 (Hopper) or newer; the kernel is compiled for sm_80"), e)
    util.at_line(THIS, e, "MARK-sm80")
  end)
end)
