-- Partitions of tiles with run-time strides (lua/cute/dynamic_partition.lua):
-- ThrCopy:partition_S/D and ThrMMA:partition_A/B/C of a tile whose strides are
-- traced values give, for several concrete strides (folded constants), the
-- same element offsets as the partition of the same tile with static strides;
-- cute.copy with cp.async / universal atoms on such partitions (16-byte
-- groups, alignment from cute.dynamic's divisibility); the launch-time check
-- of that divisibility (stub driver); the errors.  #gpu: a run-time-shape
-- copy kernel (padded rows, residue tiles) against the host's copy.
local cute = require("cute")
local ffi = require("ffi")
local C = require("cute.ffi").C
local K = require("cute.kernel")
local ten = require("cute.tensor")
local tr = require("cute.trace")
local dp = require("cute.dynamic_partition")
local layout = require("cute.layout")
local util = dofile("spec/support/util.lua")
local expect, err_of = util.expect_error, util.err_of
local f16, bf16 = cute.float16, cute.bfloat16
local _ = cute._
local PTXAS = C.cute_ptxas_path() ~= nil
local THIS = "dynamic_partition_spec.lua"

local function g2s_atom(dt)
  return cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp { cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL },
    dt or f16, { num_bits_per_copy = 128 })
end
local function uatom(dt) return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dt or f16, { num_bits_per_copy = 128 }) end
-- 128 threads, 4 per row of a 32x32 tile, 8 consecutive elements each
local function tiled_rows(atom)
  return cute.make_tiled_copy_tv(atom, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }, { 8, 1 }))
end
-- 64 threads down the columns of a (64, 8) tile, 2 values each along M (column-major data)
local function tiled_cols(atom)
  return cute.make_tiled_copy_tv(atom, cute.make_layout({ 16, 4 }), cute.make_layout({ 4, 2 }))
end
local function mma_simple()
  return cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op { ab_dtype = bf16, acc_dtype = cute.float32,
    shape_mnk = { 16, 8, 16 } }, { 2, 2, 1 })
end
local function mma_bf16_example() -- examples/gemm_bf16.lua's: 2 x 4 warps, N permuted to 16 per warp
  return cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op { ab_dtype = bf16, acc_dtype = cute.float32,
    shape_mnk = { 16, 8, 16 } }, { 2, 4, 1 }, { _, 64, _ })
end

-- a folded offset: a Lua number or a constant Value
local function num(x)
  if type(x) == "number" then return x end
  assert(tr.is_value(x) and x.isc == 1, "the offset is not a folded constant")
  return tonumber(x.cv)
end
local function offsets(P)
  local o = {}
  local n = ten.tsize(P.layout.shape)
  for i = 0, n - 1 do o[i + 1] = num(ten.off_add(P.off, ten.crd2idx(i, P.layout.shape, P.layout.stride, P.idx))) end
  return o
end
-- inside a trace: A's memory seen as a tile of `shape` with strides `strides`
-- (Lua numbers: static; cute.Int64 constants: traced values the partition
-- cannot read, folded by the IR builder)
local function tile(A, shape, strides, traced)
  local st = {}
  for i = 1, #strides do
    st[i] = (traced and strides[i] ~= 1) and tr.const(tr.T.I64, strides[i]) or strides[i]
  end
  return ten.make(A.ptr, 0, { shape = shape, stride = st }, A.elem, "global", A.align, tr.T.I64)
end

-- for every case: partition(tile) with static and with traced strides at
-- thread t: equal shapes, and equal offsets for every element
local function compare(cases, dtype)
  local checked = 0
  local k = cute.kernel(function(A)
    for _, c in ipairs(cases) do
      for _, strides in ipairs(c.strides) do
        for _, t in ipairs(c.threads) do
          local S = c.part(t, tile(A, c.shape, strides, false))
          local D = c.part(t, tile(A, c.shape, strides, true))
          -- the same modes of the same sizes (a static compact tile may coalesce inside a mode)
          local ss, ds = S.layout.shape, D.layout.shape
          assert.are.equal(#ss, #ds)
          for i = 1, #ss do assert.are.equal(ten.tsize(ss[i]), ten.tsize(ds[i])) end
          assert.is_false(ten.is_static(D.layout.stride) and ten.is_static(tile(A, c.shape, strides, true).layout.stride))
          assert.are.same(offsets(S), offsets(D), ("%s, strides (%s), thread %d"):format(c.name,
            table.concat(strides, ","), t))
          checked = checked + 1
        end
      end
    end
  end, { name = "dynamic_partition_compare" })
  k:ir(cute.tensor_spec({ 4096 }, dtype or f16))
  return checked
end

describe("partitions of tiles with run-time strides", function()
  it("TiledCopy partition_S / partition_D: the same offsets as with static strides", function()
    local rows, cols = tiled_rows(uatom()), tiled_cols(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f16))
    local cases = {
      { name = "rows S", shape = { 64, 64 }, strides = { { 64, 1 }, { 72, 1 }, { 136, 1 }, { 1000, 1 } },
        threads = { 0, 5, 37, 127 }, part = function(t, T) return rows:get_slice(t):partition_S(T) end },
      { name = "rows D", shape = { 32, 64 }, strides = { { 64, 1 }, { 4104, 1 } }, threads = { 0, 77 },
        part = function(t, T) return rows:get_slice(t):partition_D(T) end },
      -- both strides at run time
      { name = "rows, no unit stride", shape = { 32, 32 }, strides = { { 96, 3 }, { 40, 2 } }, threads = { 0, 9, 126 },
        part = function(t, T) return rows:get_slice(t):partition_S(T) end },
      { name = "columns", shape = { 64, 16 }, strides = { { 1, 64 }, { 1, 200 } }, threads = { 0, 17, 63 },
        part = function(t, T) return cols:get_slice(t):partition_S(T) end },
    }
    assert.are.equal(4 * 4 + 2 * 2 + 2 * 3 + 2 * 3, compare(cases))
  end)

  it("ldmatrix TiledCopies (make_tiled_copy_A / _B) of the bf16 example's tiled MMA", function()
    local tm = mma_bf16_example()
    local LdM = cute.nvgpu.warp.LdMatrix8x8x16bOp
    local sA = cute.make_tiled_copy_A(cute.make_copy_atom(LdM { num_matrices = 4 }, bf16), tm)
    local sB = cute.make_tiled_copy_B(cute.make_copy_atom(LdM { num_matrices = 4 }, bf16), tm)
    local cases = {
      { name = "ldmatrix A", shape = { 64, 32 }, strides = { { 32, 1 }, { 40, 1 }, { 264, 1 } }, threads = { 0, 33, 255 },
        part = function(t, T) return sA:get_slice(t):partition_S(T) end },
      { name = "ldmatrix B", shape = { 64, 32 }, strides = { { 32, 1 }, { 72, 1 } }, threads = { 0, 100 },
        part = function(t, T) return sB:get_slice(t):partition_S(T) end },
    }
    assert.are.equal(9 + 4, compare(cases, bf16))
  end)

  it("TiledMMA partition_A / _B / _C: the same offsets as with static strides", function()
    local cases = {}
    for _, m in ipairs({ { "2x2", mma_simple(), { 0, 31, 64, 127 } }, { "2x4 permuted", mma_bf16_example(), { 0, 45, 255 } } }) do
      local tm = m[2]
      local sl = function(t) return tm:get_slice(t) end
      cases[#cases + 1] = { name = m[1] .. " A", shape = { 64, 32 }, strides = { { 32, 1 }, { 136, 1 }, { 1, 64 } },
        threads = m[3], part = function(t, T) return sl(t):partition_A(T) end }
      cases[#cases + 1] = { name = m[1] .. " B", shape = { 64, 32 }, strides = { { 40, 1 }, { 1, 72 } },
        threads = m[3], part = function(t, T) return sl(t):partition_B(T) end }
      cases[#cases + 1] = { name = m[1] .. " C", shape = { 64, 64 }, strides = { { 64, 1 }, { 1000, 1 }, { 1, 96 } },
        threads = m[3], part = function(t, T) return sl(t):partition_C(T) end }
    end
    assert.are.equal((3 + 2 + 3) * 4 + (3 + 2 + 3) * 3, compare(cases, bf16))
  end)

  it("partitions of a cute.dynamic argument have traced strides; fragments are made from them", function()
    local seen = {}
    local k = cute.kernel(function(A, B)
      local t = cute.arch.thread_idx()
      local gA = cute.local_tile(A, { 64, 32 }, { 1, 0 })
      local tm = mma_simple()
      local thr = tm:get_slice(t)
      local pA = thr:partition_A(gA)
      seen.A = ten.layout_str(pA.layout)
      local rA = thr:partition_fragment_A(gA)
      seen.frag = tostring(rA)
      cute.copy(pA, rA)
      local pS = tiled_rows(uatom(bf16)):get_slice(t):partition_S(cute.local_tile(B, { 32, 32 }, { 0, 1 }))
      seen.S = ten.layout_str(pS.layout)
      local r = cute.make_fragment_like(pS)
      cute.copy(uatom(bf16), pS, r)
      seen.rS = ten.describe(r.layout.shape)
    end, { name = "dynamic_partition_args" })
    k:ir(cute.dynamic(cute.tensor_spec({ 128, 64 }, bf16)), cute.dynamic(cute.tensor_spec({ 64, 64 }, bf16), { divisibility = 8 }))
    assert.are.equal("((2,2,2),2,2):((1,i64,8),i64,16)", seen.A)
    assert.are.equal("register tensor<bfloat16, ((2,2,2),2,2)>", seen.frag)
    assert.are.equal("((8,1),1,1):((1,0),0,0)", seen.S)
    assert.are.equal("((8,1),1,1)", seen.rS)
  end)

  it("a shape known only at run time is still an error, at the user's line", function()
    local function trace(body)
      local k = cute.kernel(body, { name = "dynamic_partition_shape" })
      return err_of(function() k:ir(cute.dynamic(cute.tensor_spec({ 64, 64 }, f16), { divisibility = 8 })) end)
    end
    local e = trace(function(A) tiled_rows(uatom()):get_slice(0):partition_S(A) end)
    assert.truthy(e:find(THIS .. ":%d+: ThrCopy:partition_S: the tensor's shape in %(i64,i64%):%(i64,1%) must be static"), e)
    e = trace(function(A) mma_simple():get_slice(0):partition_C(A) end)
    assert.truthy(e:find(THIS .. ":%d+: ThrMMA:partition_C: the tensor's shape %(i64,i64%) must be static"), e)
    e = trace(function(A)
      local r = cute.make_fragment(cute.make_layout(8), f16)
      cute.copy(uatom(), A[{ 0, _ }], r)
    end)
    assert.truthy(e:find(THIS .. ":%d+: cute.copy: src has a [a-z]+ known only at run time"), e)
  end)

  it("a partition whose steps carry across a tile mode is an error, not a wrong stride", function()
    -- 8 values one after another down a column of 4 rows: the 5th is in the next column
    local e = err_of(function() dp.realise("ThrCopy:partition_S", layout.make_layout(8, 1), { shape = { 4, 2 }, stride = { "d", 1 } }) end)
    assert.truthy(e:find("ThrCopy:partition_S: the partition 8:1 of a tile of shape (4,2)", 1, true), e)
    assert.truthy(e:find("carry across mode 0", 1, true), e)
    -- the same 8 values as (4,2) (the proxy of a (4,2) tile is (4,2):(1,8)) map exactly: strides (1, d)
    local r = dp.realise("x", layout.make_layout({ 4, 2 }, { 1, 8 }), { shape = { 4, 2 }, stride = { 7, 100 } })
    assert.are.same({ 7, 100 }, r.stride)
    -- a fixed combination of two modes is kept: step 9 in the proxy (4,8):(1,8) is one row and one column
    assert.are.equal("(4,8):(1,8)", tostring(dp.proxy({ 4, 8 })))
    assert.are.equal("((2,3),4):((1,4),24)", tostring(dp.proxy({ { 2, 3 }, 4 })))
    r = dp.realise("x", layout.make_layout({ 2, 4 }, { 9, 16 }), { shape = { 4, 8 }, stride = { 3, 1000 } })
    assert.are.same({ 1003, 2000 }, r.stride)
    -- a step past the mode's extent (in the proxy's gap) is refused too
    e = err_of(function() dp.realise("x", layout.make_layout(2, 5), { shape = { 4, 8 }, stride = { 3, 1000 } }) end)
    assert.truthy(e:find("carry across mode 0", 1, true), e)
  end)

  it("a (1,1) x (4,8) TiledCopy: one thread's 32 values of a run-time-stride tile keep the tile's two modes", function()
    local tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f16),
      cute.make_layout({ 1, 1 }), cute.make_layout({ 4, 8 }))
    assert.are.equal(3, compare({ { name = "one thread", shape = { 4, 8 }, strides = { { 8, 1 }, { 20, 1 }, { 1, 4 } },
      threads = { 0 }, part = function(t, T) return tc:get_slice(t):partition_S(T) end } }))
  end)
end)

-- the residue tile (bx, by) of an m x n f16 matrix with row stride ld (all
-- run-time): cp.async with elem_less predicates (zero fill) into shared
-- memory, then 16-byte universal copies to the 64 x 64 tile (bx, by) of B
local function copy_kernel()
  return cute.kernel(function(A, B)
    local t = cute.arch.thread_idx()
    local bx, by = cute.arch.block_idx()
    local m, n = cute.size(A, 0), cute.size(A, 1)
    local gA = cute.local_tile(A, { 64, 64 }, { bx, by })
    local cA = cute.local_tile(cute.make_identity_tensor({ m, n }), { 64, 64 }, { bx, by })
    local sA = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), f16, 16)
    local g2s = tiled_rows(g2s_atom())
    local thr = g2s:get_slice(t)
    local tAgA, tAsA, tAcA = thr:partition_S(gA), thr:partition_D(sA), thr:partition_S(cA)
    local pred = {}
    for g = 0, 3 do pred[g] = cute.elem_less(tAcA[g * 8], { m, n }) end
    cute.copy(g2s, tAgA, tAsA, { pred = pred })
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()
    local s2g = tiled_rows(uatom()):get_slice(t)
    cute.copy(tiled_rows(uatom()), s2g:partition_S(sA), s2g:partition_D(cute.local_tile(B, { 64, 64 }, { bx, by })))
  end, { name = "dynamic_partition_copy" })
end

describe("cute.copy on partitions with run-time strides", function()
  it("cp.async.cg 16-byte copies with src-size predicates, no element-wise fallback; ptxas sm_80, sm_90a", function()
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = copy_kernel():with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(
        cute.dynamic(cute.tensor_spec({ 100, 72 }, f16, { 80, 1 }), { divisibility = 8 }),
        cute.dynamic(cute.tensor_spec({ 128, 128 }, f16), { divisibility = 8 }))
      local _, n = r.ptx:gsub("cp%.async%.cg%.shared%.global %[[^%]]+%], %[[^%]]+%], 16, %%r%d+;", "")
      assert.are.equal(4, n, r.ptx)
      local _, st = r.ptx:gsub("st%.global%.v4%.[ub]32", "")
      assert.are.equal(4, st, r.ptx)
      assert.falsy(r.ptx:find("ld%.global[%.%w]*%.[ub]16"), r.ptx)
      assert.falsy(r.ptx:find("st%.global%.[ub]16"), r.ptx)
      assert.falsy(r.ptx:find(".local", 1, true), r.ptx)
      -- the row stride is a kernel parameter, not a constant
      assert.truthy(r.ptx:find("A_stride1", 1, true), r.ptx)
      if PTXAS then
        assert.truthy(r.cubin, arch .. ": no cubin")
        assert.are.same({ 0, 0 }, { r.info.spill_stores, r.info.spill_loads })
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  it("a universal 128-bit atom: ld.global.nc.v4 into registers and st.global.v4 out, both tiles run-time", function()
    local tc = tiled_rows(uatom(bf16))
    local k = cute.kernel(function(A, B)
      local thr = tc:get_slice(cute.arch.thread_idx())
      local pS = thr:partition_S(cute.local_tile(A, { 32, 32 }, { 0, 1 }))
      local r = cute.make_fragment_like(pS)
      cute.copy(uatom(bf16), pS, r)
      cute.copy(uatom(bf16), r, thr:partition_D(cute.local_tile(B, { 32, 32 }, { 1, 0 })))
    end, { name = "dynamic_partition_universal" })
    local S = function() return cute.dynamic(cute.tensor_spec({ 64, 64 }, bf16), { divisibility = 8 }) end
    local r = k:with{ arch = "sm_80", use_ptxas = PTXAS }:compile(S(), S())
    local _, ld = r.ptx:gsub("ld%.global%.nc%.v4%.[ub]32", "")
    local _, st = r.ptx:gsub("st%.global%.v4%.[ub]32", "")
    assert.are.same({ 1, 1 }, { ld, st }, r.ptx)
    assert.falsy(r.ptx:find(".local", 1, true), r.ptx)
  end)

  it("without divisibility the 16-byte copies of a run-time row are an error naming the remedy", function()
    local e = err_of(function()
      copy_kernel():with({ arch = "sm_80" }):ir(cute.dynamic(cute.tensor_spec({ 100, 72 }, f16)),
        cute.dynamic(cute.tensor_spec({ 128, 128 }, f16), { divisibility = 8 }))
    end)
    assert.truthy(e:find("cute.copy: src values 0..7 are only known to be 2-byte aligned: a 128-bit copy needs 16 " ..
      "bytes (for run-time strides, pass cute.dynamic(t, {divisibility = n}))", 1, true), e)
    assert.truthy(e:find(THIS .. ":%d+:"), e)
    -- divisibility 4 (8 bytes) is not enough either
    e = err_of(function()
      copy_kernel():with({ arch = "sm_80" }):ir(cute.dynamic(cute.tensor_spec({ 100, 72 }, f16), { divisibility = 4 }),
        cute.dynamic(cute.tensor_spec({ 128, 128 }, f16), { divisibility = 8 }))
    end)
    assert.truthy(e:find("only known to be 8-byte aligned", 1, true), e)
  end)

  it("groups along a run-time stride are not contiguous: an error", function()
    local k = cute.kernel(function(A)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), f16, 16)
      local thr = tiled_rows(g2s_atom()):get_slice(0)
      cute.copy(tiled_rows(g2s_atom()), thr:partition_S(cute.local_tile(A, { 64, 64 }, { 0, 0 })), thr:partition_D(sA))
    end, { name = "dynamic_partition_colmajor" })
    -- column-major data: the 8 values of a row step the run-time stride
    local e = err_of(function() k:ir(cute.dynamic(cute.tensor_spec({ 64, 64 }, f16, { 1, 64 }), { divisibility = 8 })) end)
    assert.truthy(e:find("cute.copy: src values 0..7 are not contiguous", 1, true), e)
    assert.truthy(e:find("a run-time stride is never known to be 1", 1, true), e)
  end)
end)

describe("cute.dynamic(t, {divisibility = n})", function()
  -- a stub driver: launches counted (stub.launches), nothing run
  local driver, stub = util.stub_driver()
  setup(function() K._use_driver(driver) end)
  teardown(function() K._use_driver(nil) end)
  local function dev(ptr, shape, strides) return { ptr = ptr, shape = shape, strides = strides, dtype = f16 } end
  local scale = function(A)
    local i = cute.arch.thread_idx()
    A[{ i, 0 }] = A[{ i, 1 }] * 2
  end

  it("is in the specialisation key and in the trace's stride values", function()
    local a = dev(4096, { 64, 64 }, { 72, 1 })
    assert.are.equal("float16|dyn2|u01|i64|d8|a16", K.tensor_sig(cute.dynamic(a, { divisibility = 8 })))
    assert.are.equal("float16|dyn2|u01|i64|a16", K.tensor_sig(cute.dynamic(a)))
    local div
    local k = cute.kernel(function(A) div = A.layout.stride[1].div end, { name = "dynamic_partition_div" })
    k:ir(cute.dynamic(a, { divisibility = 8 }))
    assert.are.equal(8, div)
    k:ir(cute.dynamic(a))
    assert.are.equal(1, div)
  end)

  it("launches check every run-time stride, at the call's line, on every launch", function()
    local k = cute.kernel(scale, { name = "dynamic_partition_launch" })
    local l = k:launch { grid = 1, block = 32 }
    stub.launches = 0
    l(cute.dynamic(dev(4096, { 64, 64 }, { 72, 1 }), { divisibility = 8 }))
    l(cute.dynamic(dev(8192, { 32, 40 }, { 40, 1 }), { divisibility = 8 })) -- (the fast path)
    assert.are.equal(2, stub.launches)
    expect(function() l(cute.dynamic(dev(4096, { 64, 64 }, { 68, 1 }), { divisibility = 8 })) end,
      "cute.launch: argument 1 (A): cute.dynamic(t, {divisibility = 8}) but stride 0 of the tensor of shape (64,64) " ..
      "and strides (68,1) is 68, not a multiple of 8")
    -- a tensor changed after cute.dynamic is checked as it is at the launch
    local t = dev(4096, { 64, 64 }, { 64, 1 })
    local d = cute.dynamic(t, { divisibility = 8 })
    l(d)
    t.strides[1] = 66
    expect(function() l(d) end, "stride 0", "is 66, not a multiple of 8")
    -- both strides at run time: the second is checked too
    expect(function() l(cute.dynamic(dev(4096, { 8, 8 }, { 16, 2 }), { divisibility = 4 })) end,
      "stride 1 of the tensor of shape (8,8) and strides (16,2) is 2, not a multiple of 4")
    -- k(cfg, ...) too
    expect(function() k({ grid = 1, block = 32 }, cute.dynamic(dev(4096, { 64, 64 }, { 67, 1 }), { divisibility = 2 })) end,
      "is 67, not a multiple of 2")
    assert.are.equal(3, stub.launches)
  end)

  it("bad options are errors at the user's line", function()
    local a = dev(4096, { 64, 64 }, { 64, 1 })
    expect(function() cute.dynamic(a, { divisibility = 0 }) end, "cute.dynamic: divisibility must be a positive integer")
    expect(function() cute.dynamic(a, { divisibility = 2.5 }) end, "got 2.5")
    expect(function() cute.dynamic(a, { divisibilty = 8 }) end, "unknown option divisibilty")
  end)
end)

describe("run-time-shape copies on the GPU", function()
  util.gpu_it("padded rows, residue tiles: cp.async with zero fill, then 16-byte stores", function()
    math.randomseed(7)
    for _, sz in ipairs({ { 100, 72, 80 }, { 130, 200, 264 }, { 64, 64, 64 } }) do
      local m, n, ld = sz[1], sz[2], sz[3]
      local hf = util.rand_floats(m * ld)
      local store = cute.from_host(hf, f16, { m, ld })
      local hs = store:to_host()
      local A = { ptr = store.ptr, shape = { m, n }, strides = { ld, 1 }, dtype = f16 }
      local gm, gn = math.ceil(m / 64), math.ceil(n / 64)
      local B = cute.zeros({ gm * 64, gn * 64 }, f16)
      copy_kernel():launch { grid = { gm, gn }, block = 128 }(cute.dynamic(A, { divisibility = 8 }),
        cute.dynamic(B, { divisibility = 8 }))
      local hb = B:to_host()
      for r = 0, gm * 64 - 1 do
        for c = 0, gn * 64 - 1 do
          local want = (r < m and c < n) and hs[r * ld + c] or 0
          assert.are.equal(want, hb[r * gn * 64 + c], ("%dx%d ld %d: B[%d][%d]"):format(m, n, ld, r, c))
        end
      end
    end
  end)
end)
