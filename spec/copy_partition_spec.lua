-- TiledCopy partitioning (lua/cute/copy_partition.lua) and identity tensors
-- (cute.make_identity_tensor, cute.elem_less in lua/cute/tensor.lua): a
-- thread's partition of a 64x64 f16 tile by a (32,4) thread x (1,8) value
-- TiledCopy against hand-derived coordinates and offsets, residue predicates
-- at the edge of a 100x70 matrix, the PTX of a predicated cp.async copy
-- (ptxas for sm_80 and sm_90a) and, on a GPU, a residue tile copied
-- global -> shared (cp.async, zero-fill) -> global.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has = util.has
local f16 = cute.float16
local ten = require("cute.tensor")
local PTXAS = C.cute_ptxas_path() ~= nil

local err_of = dofile("spec/support/util.lua").err_of
local expect = dofile("spec/support/util.lua").expect_error

local function uatom() return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f16, { num_bits_per_copy = 128 }) end
local function aatom()
  return cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp { cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL }, f16,
    { num_bits_per_copy = 128 })
end
-- 128 threads, 4 per row of a 32x32 tile, 8 consecutive f16 each (CuTe DSL's usual G2S copy)
local function tiled(atom)
  return cute.make_tiled_copy_tv(atom, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }, { 8, 1 }))
end
-- element k of a thread's ((8,1),2,2) partition: value v = k % 8 of the
-- copy at rest (i, j) = (k / 8 % 2, k / 16), by hand: row t/4 + 32 i,
-- column 8 (t % 4) + v + 32 j
local function coord_of(t, k)
  local v, i, j = k % 8, math.floor(k / 8) % 2, math.floor(k / 16)
  return { math.floor(t / 4) + 32 * i, 8 * (t % 4) + v + 32 * j }
end

describe("identity tensors", function()
  it("hold their own coordinates, through local_tile and slicing, past the shape's edge", function()
    local I = cute.make_identity_tensor({ 100, 70 })
    assert.are.same({ 3, 5 }, I[{ 3, 5 }])
    assert.are.same({ 99, 69 }, I[{ 99, 69 }])
    local tile = cute.local_tile(I, { 64, 64 }, { 1, 1 })
    for _, rc in ipairs({ { 0, 0 }, { 35, 5 }, { 36, 6 }, { 63, 63 } }) do
      assert.are.same({ 64 + rc[1], 64 + rc[2] }, tile[rc])
    end
    local row = tile[{ 7, cute._ }]
    assert.are.same({ 71, 64 + 13 }, row[13])
    assert.are.same(17, cute.make_identity_tensor(40)[17])
    -- thread 5 of a column-major (4,2) thread layout owns rows 1, 5 and columns 1, 3, 5
    local p = cute.local_partition(cute.make_identity_tensor({ 8, 6 }), cute.make_layout({ 4, 2 }), 5)
    for k = 0, 5 do assert.are.same({ 1 + 4 * (k % 2), 1 + 2 * math.floor(k / 2) }, p[k]) end
  end)

  it("elem_less is true when every mode is below", function()
    assert.is_true(cute.elem_less({ 3, 5 }, { 4, 6 }))
    assert.is_false(cute.elem_less({ 3, 6 }, { 4, 6 }))
    assert.is_false(cute.elem_less({ 4, 0 }, { 4, 6 }))
    assert.is_true(cute.elem_less({ 1, { 2, 3 } }, { 2, { 3, 4 } }))
    assert.is_false(cute.elem_less({ 1, { 2, 4 } }, { 2, { 3, 4 } }))
    assert.is_true(cute.elem_less(7, 8))
  end)

  it("bad shapes and coordinates are errors at the user's line", function()
    expect(function() cute.make_identity_tensor({ 4, 0 }) end, "cute.make_identity_tensor", "extent 0")
    expect(function() cute.make_identity_tensor({ { 2, 2 }, 4 }) end, "cute.make_identity_tensor", "nested modes")
    expect(function() cute.make_identity_tensor({ 1, 2, 3, 4, 5 }) end, "rank 1 to 4")
    expect(function() cute.elem_less({ 1, 2 }, { 3 }) end, "cute.elem_less", "different ranks")
    local I = cute.make_identity_tensor({ 4, 4 })
    expect(function() I[{ 1, 1 }] = 3 end, "cannot store into an identity tensor")
  end)
end)

describe("TiledCopy get_slice / partition_S / partition_D", function()
  it("gives each thread of a (32,4) x (1,8) copy its coordinates of a 64x64 tile", function()
    local tc = tiled(uatom())
    local I = cute.make_identity_tensor({ 64, 64 })
    for _, t in ipairs({ 0, 1, 5, 63, 100, 127 }) do
      local thr = tc:get_slice(t)
      local pS, pD = thr:partition_S(I), thr:partition_D(I)
      assert.are.equal(32, cute.size(pS))
      assert.are.equal("((8,1),2,2)", ten.describe(pS.shape))
      for k = 0, 31 do
        assert.are.same(coord_of(t, k), pS[k], "thread " .. t .. " value " .. k)
        assert.are.same(coord_of(t, k), pD[k], "thread " .. t .. " value " .. k)
      end
    end
  end)

  it("elem_less predicates on the residue tile at the edge of a 100x70 matrix", function()
    local tc = tiled(uatom())
    local tile = cute.local_tile(cute.make_identity_tensor({ 100, 70 }), { 64, 64 }, { 1, 1 })
    for t = 0, 127 do
      local p = tc:get_slice(t):partition_S(tile)
      for k = 0, 31 do
        local c = coord_of(t, k)
        local want = 64 + c[1] < 100 and 64 + c[2] < 70
        assert.are.same({ 64 + c[1], 64 + c[2] }, p[k])
        assert.are.equal(want, cute.elem_less(p[k], { 100, 70 }), ("thread %d value %d"):format(t, k))
      end
    end
  end)

  it("partitions a row-major global tile and a shared tile at the hand-derived offsets", function()
    local offs = {}
    local k = cute.kernel(function(A)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 1, 64 }), f16)
      local thr = tiled(uatom()):get_slice(37)
      local g, s = thr:partition_S(A), thr:partition_D(sA)
      offs.gshape, offs.sshape = ten.describe(g.shape), ten.describe(s.shape)
      for i = 0, 31 do
        offs[#offs + 1] = { ten.crd2idx(i, g.layout.shape, g.layout.stride),
          ten.crd2idx(i, s.layout.shape, s.layout.stride), g.off, s.off }
      end
    end, { name = "copy_partition_offsets" })
    k:ir(cute.tensor_spec({ 64, 64 }, f16))
    assert.are.equal("((8,1),2,2)", offs.gshape)
    assert.are.equal("((8,1),2,2)", offs.sshape)
    for i = 0, 31 do
      local c = coord_of(37, i)
      local o = offs[i + 1]
      assert.are.equal(c[1] * 64 + c[2], o[3] + o[1], "global value " .. i)
      assert.are.equal(c[1] + 64 * c[2], o[4] + o[2], "shared value " .. i)
    end
  end)

  it("bad thread indices and tensors are errors at the user's line", function()
    local tc = tiled(uatom())
    expect(function() tc:get_slice(128) end, "TiledCopy:get_slice", "thread index 128 is out of range 0..127")
    local thr = tc:get_slice(0)
    expect(function() thr:partition_S(cute.make_identity_tensor({ 48, 64 })) end, "ThrCopy:partition_S",
      "mode 0 = 48 is not a multiple of the TiledCopy's tile 32")
    expect(function() thr:partition_D(cute.make_identity_tensor(64)) end, "ThrCopy:partition_D", "rank 1")
    expect(function() thr:partition_S(42) end, "ThrCopy:partition_S", "is not a kernel-side tensor")
  end)
end)

-- the residue tile (1,1) of a row-major 100x72 f16 matrix: cp.async with
-- elem_less predicates (zero-fill) to shared memory, then 16-byte copies to
-- a 64x64 output; the matrix's extents (m, n) are run-time arguments
local MR, NR = 100, 72
local function residue_kernel()
  return cute.kernel(function(A, B, m, n)
    local t = cute.arch.thread_idx()
    local gA = cute.local_tile(A, { 64, 64 }, { 1, 1 })
    local cA = cute.local_tile(cute.make_identity_tensor({ m, n }), { 64, 64 }, { 1, 1 })
    local sA = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), f16, 16)
    local g2s = tiled(aatom())
    local thr = g2s:get_slice(t)
    local tAgA, tAsA, tAcA = thr:partition_S(gA), thr:partition_D(sA), thr:partition_S(cA)
    local pred = {}
    for g = 0, 3 do pred[g] = cute.elem_less(tAcA[g * 8], { m, n }) end
    cute.copy(g2s, tAgA, tAsA, { pred = pred })
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()
    local s2g = tiled(uatom()):get_slice(t)
    cute.copy(tiled(uatom()), s2g:partition_S(sA), s2g:partition_D(B))
  end, { name = "copy_partition_residue" })
end
local function specs() return cute.tensor_spec({ MR, NR }, f16), cute.tensor_spec({ 64, 64 }, f16), cute.Int32(0), cute.Int32(0) end

describe("cute.copy with a TiledCopy and predicates", function()
  it("a predicated cp.async copy is cp.async.cg with the src-size operand, 4 per thread; ptxas sm_80 and sm_90a", function()
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = residue_kernel():with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(specs())
      local _, n = r.ptx:gsub("cp%.async%.cg%.shared%.global %[[^%]]+%], %[[^%]]+%], 16, %%r%d+;", "")
      assert.are.equal(4, n, r.ptx)
      local _, st = r.ptx:gsub("st%.global%.v4%.[ub]32", "")
      assert.are.equal(4, st, r.ptx)
      assert.truthy(has(r.ptx, "cp.async.commit_group"), r.ptx)
      if PTXAS then assert.truthy(r.cubin, arch .. ": no cubin") end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  it("a cp.async ALWAYS atom of 64-bit copies is cp.async.ca with 8 bytes, src-size 0 for a false predicate", function()
    local atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), f16, { num_bits_per_copy = 64 })
    local tc = cute.make_tiled_copy_tv(atom, cute.make_layout({ 16, 8 }, { 8, 1 }), cute.make_layout({ 1, 4 }, { 4, 1 }))
    local k = cute.kernel(function(A)
      local sA = cute.make_shared_tensor(cute.make_layout({ 16, 32 }, { 32, 1 }), f16, 16)
      local thr = tc:get_slice(cute.arch.thread_idx())
      assert.are.equal("((4,1),1,1)", ten.describe(thr:partition_S(A).shape))
      cute.copy(tc, thr:partition_S(A), thr:partition_D(sA), { pred = { [0] = false } })
    end, { name = "copy_partition_ca8" })
    local r = k:with({ arch = "sm_80", use_ptxas = PTXAS, opt_level = 3 }):compile(cute.tensor_spec({ 16, 32 }, f16))
    local _, n = r.ptx:gsub("cp%.async%.ca%.shared%.global %[[^%]]+%], %[[^%]]+%], 8, %%r%d+;", "")
    assert.are.equal(1, n, r.ptx)
    if PTXAS then assert.truthy(r.cubin) else pending("ptxas not found: PTX checked, not assembled") end
  end)

  it("a predicated universal copy guards each 16-byte group with a branch", function()
    local k = cute.kernel(function(A, B)
      local t = cute.arch.thread_idx()
      local c = cute.make_identity_tensor({ 64, 64 })
      local thr = tiled(uatom()):get_slice(t)
      local tc = thr:partition_S(c)
      local pred = {}
      for g = 0, 3 do pred[g] = cute.elem_less(tc[g * 8], { 50, 64 }) end
      cute.copy(tiled(uatom()), thr:partition_S(A), thr:partition_D(B), { pred = pred })
    end, { name = "copy_partition_pred_universal" })
    local r = k:with({ arch = "sm_80", opt_level = 3 }):compile(cute.tensor_spec({ 64, 64 }, f16), cute.tensor_spec({ 64, 64 }, f16))
    local _, st = r.ptx:gsub("st%.global%.v4%.[ub]32", "")
    assert.are.equal(4, st, r.ptx)
    assert.truthy(r.ptx:find("setp", 1, true) and r.ptx:find("bra", 1, true), r.ptx)
    -- the predicates in a register fragment of booleans, against a run-time row count
    local k2 = cute.kernel(function(A, B, m)
      local t = cute.arch.thread_idx()
      local thr = tiled(uatom()):get_slice(t)
      local tc = thr:partition_S(cute.make_identity_tensor({ 64, 64 }))
      local pred = cute.make_fragment(cute.make_layout(4), cute.bool)
      for g = 0, 3 do pred[g] = cute.elem_less(tc[g * 8], { m, 64 }) end
      cute.copy(tiled(uatom()), thr:partition_S(A), thr:partition_D(B), { pred = pred })
    end, { name = "copy_partition_pred_fragment" })
    local r2 = k2:with({ arch = "sm_80", opt_level = 3 }):compile(cute.tensor_spec({ 64, 64 }, f16),
      cute.tensor_spec({ 64, 64 }, f16), cute.Int32(0))
    local _, st2 = r2.ptx:gsub("st%.global%.v4%.[ub]32", "")
    local _, br2 = r2.ptx:gsub("@!?%%p%d+ bra", "")
    assert.are.same({ 4, 4 }, { st2, br2 }, r2.ptx)
  end)

  it("bad predicates are errors at the user's line", function()
    local function trace(body)
      local k = cute.kernel(body, { name = "copy_partition_bad" })
      return err_of(function() k:ir(cute.tensor_spec({ 64, 64 }, f16)) end)
    end
    local function at(e, ...)
      assert.is_truthy(e:find("copy_partition_spec.lua:%d+: cute.copy"), e)
      for _, s in ipairs({ ... }) do assert.is_truthy(e:find(s, 1, true), ("%q not in: %s"):format(s, e)) end
    end
    at(trace(function(A)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), f16, 16)
      local thr = tiled(aatom()):get_slice(0)
      cute.copy(tiled(aatom()), thr:partition_S(A), thr:partition_D(sA), { pred = { [0] = true, false } })
    end), "pred has 2 elements, the copy has 4 groups of 8 values")
    at(trace(function(A)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), f16, 16)
      local thr = tiled(aatom()):get_slice(0)
      cute.copy(tiled(aatom()), thr:partition_D(sA), thr:partition_S(A))
    end), "a cp.async atom copies global memory to shared memory")
    at(trace(function(A)
      local thr = tiled(uatom()):get_slice(0)
      cute.copy(tiled(uatom()), thr:partition_S(A), thr:partition_S(A), { when = true })
    end), "unknown option when")
  end)

  util.gpu_it("copies a residue tile global -> shared (cp.async, zero-fill) -> global", function()
    local hf = util.rand_floats(MR * NR)
    local A = cute.from_host(hf, f16, { MR, NR })
    local ha = A:to_host()
    local B = cute.zeros({ 64, 64 }, f16)
    residue_kernel():launch { grid = 1, block = 128 }(A, B, MR, NR)
    local hb = B:to_host()
    for r = 0, 63 do
      for c = 0, 63 do
        local want = (64 + r < MR and 64 + c < NR) and ha[(64 + r) * NR + 64 + c] or 0
        assert.are.equal(want, hb[r * 64 + c], ("B[%d][%d]"):format(r, c))
      end
    end
  end)
end)
