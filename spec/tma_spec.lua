-- TMA without a GPU (docs/HOPPER.md, "TMA"): the tensor-map arguments that
-- make_tiled_tma_atom derives from a tensor and a shared-memory layout,
-- checked against values worked out by hand from the PTX ISA / driver rules;
-- the C encoder's argument checks (made before the driver is called); the
-- atom as a `bytes<128,64>` grid-constant parameter and its specialisation
-- key; the PTX of the in-kernel copies, assembled by ptxas for sm_90a with no
-- spills; errors at the user's line.
local cute = require("cute")
local ffi = require("ffi")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has, expect_error = util.has, util.expect_error
local tma = require("cute.tma")
local cp = cute.nvgpu.cpasync
local _ = cute._

local PTXAS = C.cute_ptxas_path() ~= nil
local K = cute.SmemLayoutAtomKind

local function args(op, shape, strides, dtype, sL, tiler, opts)
  return cp.tma_args(op, { shape = shape, strides = strides, dtype = dtype }, sL, tiler, opts)
end
local G2S = cp.CopyBulkTensorTileG2SOp()

describe("TMA argument derivation (by hand)", function()
  it("K-major bf16 128x64, 128B swizzle", function()
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.bfloat16), { 128, 64 }, { 1, 2 })
    local a = args(G2S, { 512, 256 }, { 256, 1 }, "bf16", sL, { 128, 64 })
    -- Sw<3,3,3> on 2-byte elements = Sw<3,4,3> on bytes = 128B; K (stride 1) is dimension 0
    assert.are.same({ 2, 1 }, a.dim_modes)
    assert.are.same({ 256, 512 }, a.global_dim)
    assert.are.same({ 512 }, a.global_strides) -- 256 elements * 2 bytes
    assert.are.same({ 64, 128 }, a.box)      -- 64 bf16 = 128 bytes = the swizzle span
    assert.are.equal(3, a.swizzle)
    assert.are.equal(9, a.map_dtype)         -- CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    assert.are.equal(1, a.boxes)
    assert.are.equal(128 * 64 * 2, a.tx_bytes)
    assert.are.equal(1024, a.smem_align)     -- the 8 x 128-byte swizzle pattern
    assert.is_true((tma.check(a, 0)))
  end)

  it("MN-major bf16 128x64, 128B swizzle: boxes of 64 x 8, 16 per tile", function()
    -- atom (64,8):(1,64) tiled M first: ((64,2),(8,8)):((1,512),(64,1024))
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.MN_SW128, cute.bfloat16), { 128, 64 }, { 1, 2 })
    local a = args(G2S, { 256, 128 }, { 1, 256 }, "bf16", sL, { 128, 64 })
    assert.are.same({ 1, 2 }, a.dim_modes)
    assert.are.same({ 256, 128 }, a.global_dim)
    assert.are.same({ 512 }, a.global_strides)
    assert.are.same({ 64, 8 }, a.box)
    assert.are.equal(16, a.boxes)
    assert.are.equal(16384, a.tx_bytes)
    assert.is_true((tma.check(a, 0)))
  end)

  it("MN-major bf16 tiled K first (CuTe's order for MN-major operands): boxes of 64 x 64, 2 per tile", function()
    -- ((64,2),(8,8)):((1,4096),(64,512)): the K mode coalesces to 64:64
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.MN_SW128, cute.bfloat16), { 128, 64 }, { 2, 1 })
    local a = args(G2S, { 256, 128 }, { 1, 256 }, "bf16", sL, { 128, 64 })
    assert.are.same({ 64, 64 }, a.box)
    assert.are.equal(2, a.boxes)
    assert.are.equal(16384, a.tx_bytes)
  end)

  it("K-major fp8 e4m3 128x128, 128B swizzle", function()
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.float8_e4m3fn), { 128, 128 }, { 1, 2 })
    local a = args(G2S, { 256, 512 }, { 512, 1 }, "f8e4m3", sL, { 128, 128 })
    assert.are.same({ 512, 256 }, a.global_dim)
    assert.are.same({ 512 }, a.global_strides)
    assert.are.same({ 128, 128 }, a.box)     -- 128 one-byte elements = 128 bytes
    assert.are.equal(0, a.map_dtype)         -- UINT8
    assert.are.equal(3, a.swizzle)
    assert.are.equal(16384, a.tx_bytes)
  end)

  it("K-major f32 64x8, 32B swizzle; bf16 64x32, 64B swizzle", function()
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW32, cute.float32), { 64, 8 }, { 1, 2 })
    local a = args(G2S, { 128, 32 }, { 32, 1 }, "f32", sL, { 64, 8 })
    assert.are.same({ 8, 64 }, a.box)        -- 8 f32 = 32 bytes
    assert.are.same({ 128 }, a.global_strides)
    assert.are.equal(1, a.swizzle)
    assert.are.equal(7, a.map_dtype)         -- FLOAT32
    assert.are.equal(256, a.smem_align)
    assert.are.equal(64 * 8 * 4, a.tx_bytes)
    local s64 = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW64, cute.bfloat16), { 64, 32 }, { 1, 2 })
    local b = args(G2S, { 100, 64 }, { 64, 1 }, "bf16", s64, { 64, 32 })
    assert.are.same({ 32, 64 }, b.box)
    assert.are.equal(2, b.swizzle)
    assert.are.equal(512, b.smem_align)
  end)

  it("no swizzle: a plain row-major f16 tile, residue extents", function()
    local a = args(G2S, { 100, 64 }, { 64, 1 }, "f16", cute.make_layout({ 64, 32 }, { 32, 1 }), { 64, 32 })
    assert.are.same({ 64, 100 }, a.global_dim)
    assert.are.same({ 32, 64 }, a.box)
    assert.are.equal(0, a.swizzle)
    assert.are.equal(128, a.smem_align)
    assert.are.equal(6, a.map_dtype)
  end)

  it("a 3-mode tensor tiled in two modes: the batch mode has box 1", function()
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.bfloat16), { 64, 64 }, { 1, 2 })
    local a = args(G2S, { 192, 128, 3 }, { 128, 1, 192 * 128 }, "bf16", sL, { 64, 64 })
    assert.are.same({ 2, 1, 3 }, a.dim_modes)
    assert.are.same({ 128, 192, 3 }, a.global_dim)
    assert.are.same({ 256, 192 * 128 * 2 }, a.global_strides)
    assert.are.same({ 64, 64, 1 }, a.box)
  end)

  it("a mode of extent 1 with a stride TMA could not take gets a valid one", function()
    local a = args(G2S, { 1, 64 }, { 60, 1 }, "bf16", cute.make_layout({ 1, 64 }, { 64, 1 }), { 1, 64 })
    assert.are.same({ 64, 1 }, a.global_dim)
    assert.are.same({ 128 }, a.global_strides)
  end)

  it("multicast over 2 CTAs splits the slowest box dimension", function()
    local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.bfloat16), { 128, 64 }, { 1, 2 })
    local a = args(cp.CopyBulkTensorTileG2SMulticastOp(), { 512, 256 }, { 256, 1 }, "bf16", sL, { 128, 64 },
      { num_multicast = 2 })
    assert.are.same({ 64, 64 }, a.box)       -- each CTA loads 64 of the 128 rows
    assert.are.equal(1, a.split_mode)        -- mode M
    assert.are.equal(1, a.boxes)             -- one box per CTA
    assert.are.equal(16384, a.tx_bytes)      -- each CTA still receives the whole tile
    local a4 = args(cp.CopyBulkTensorTileG2SMulticastOp(), { 512, 256 }, { 256, 1 }, "bf16", sL, { 128, 64 },
      { num_multicast = 4 })
    assert.are.same({ 64, 32 }, a4.box)
  end)

  it("refuses what TMA cannot do, naming the value", function()
    local sw = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.bfloat16), { 64, 64 }, { 1, 2 })
    local plain = cute.make_layout({ 64, 64 }, { 64, 1 })
    expect_error(function() args(G2S, { 64, 64 }, { 128, 2 }, "bf16", plain, { 64, 64 }) end, "has stride 1", "contiguous")
    expect_error(function() args(G2S, { 64, 60 }, { 60, 1 }, "bf16", cute.make_layout({ 64, 60 }, { 60, 1 }), { 64, 60 }) end, "120 bytes", "multiples of 16")
    local bad = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout({ 64, 64 }, { 64, 1 }))
    expect_error(function() args(G2S, { 64, 64 }, { 64, 1 }, "bf16", bad, { 64, 64 }) end, "Sw<3,5,3> on bytes", "Sw<3,4,3> (128B)")
    local mn = cute.tile_to_shape(cute.make_smem_layout_atom(K.MN_SW128, cute.bfloat16), { 64, 64 }, { 1, 2 })
    expect_error(function() args(G2S, { 64, 64 }, { 64, 1 }, "bf16", mn, { 64, 64 }) end, "does not store the box densely", "contiguous in shared memory")
    expect_error(function() args(G2S, { 64, 64 }, { 64, 1 }, "bf16", sw, { 64, 64 }, { num_multicast = 2 }) end, "G2SMulticastOp")
    expect_error(function() args(G2S, { 64, 64 }, { 64, 1 }, "bf16", cute.make_layout({ 64, 4 }, { 4, 1 }), { 64, 4 }) end, "8 bytes", "16-byte")
    expect_error(function() args(G2S, { 64, 64 }, { 64, 1 }, "bf16", sw, { 64, 32 }) end, "has 64 elements but the tile has 32")
    expect_error(function() args(G2S, { 64, 64 }, { 64, 1 }, "i1", sw, { 64, 64 }) end, "no TMA data type")
    expect_error(function() cp.CopyReduceBulkTensorTileS2GOp("mul") end, "reduction mul")
  end)
end)

describe("the C tensor-map encoder's checks (no driver needed)", function()
  local function base()
    local c = ffi.new("cute_tensor_map_args")
    c.dtype, c.rank, c.global_address = 9, 2, 0x10000
    c.global_dim[0], c.global_dim[1], c.global_strides[0] = 256, 512, 512
    c.box_dim[0], c.box_dim[1], c.element_strides[0], c.element_strides[1] = 64, 128, 1, 1
    c.swizzle, c.l2_promotion = 3, 2
    return c
  end
  local function msg(edit)
    local c = base()
    edit(c)
    local err = ffi.new("cute_err")
    local st = C.cute_tensor_map_check(c, err)
    return st, ffi.string(err.msg)
  end
  it("accepts a valid record and rejects each broken field with its value", function()
    assert.are.equal(0, (msg(function() end)))
    local cases = {
      { function(c) c.rank = 6 end, "rank = 6" },
      { function(c) c.rank = 0 end, "rank = 0" },
      { function(c) c.dtype = 13 end, "dtype = 13" },
      { function(c) c.global_address = 0x10008 end, "not 16-byte aligned" },
      { function(c) c.global_dim[1] = 0 end, "global_dim[1] = 0" },
      { function(c) c.global_strides[0] = 520 end, "global_strides[0] = 520" },
      { function(c) c.global_strides[0] = 2 ^ 40 end, "below 2^40" },
      { function(c) c.box_dim[1] = 300 end, "box_dim[1] = 300" },
      { function(c) c.box_dim[0] = 128 end, "256 bytes: a 128B swizzle allows at most 128" },
      { function(c) c.box_dim[0], c.swizzle = 4, 0 end, "8 bytes: the inner box must be a multiple of 16" },
      { function(c) c.element_strides[0] = 9 end, "element_strides[0] = 9" },
      { function(c) c.interleave = 1 end, "at least 3 dimensions" },
      { function(c) c.swizzle = 4 end, "swizzle = 4" },
      { function(c) c.oob_fill, c.dtype = 1, 3 end, "needs a floating-point dtype" },
    }
    for _, cs in ipairs(cases) do
      local st, m = msg(cs[1])
      assert.are.equal(C.CUTE_E_ARG, st, cs[2])
      assert(m:find(cs[2], 1, true), ("%q not in %q"):format(cs[2], m))
    end
  end)
  it("encode refuses a map that is not 64-byte aligned before the driver", function()
    local buf = ffi.new("uint8_t[256]")
    local p = ffi.cast("uint8_t*", buf)
    local mis = p + ((64 - tonumber(ffi.cast("uintptr_t", p)) % 64) % 64) + 8
    local err = ffi.new("cute_err")
    assert.are.equal(C.CUTE_E_ARG, C.cute_tensor_map_encode_tiled(mis, base(), err))
    assert(ffi.string(err.msg):find("not 64-byte aligned", 1, true))
  end)
end)

-- kernels
local sL = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.bfloat16), { 128, 64 }, { 1, 2 })
local A = cute.tensor_spec({ 512, 256 }, cute.bfloat16)
local O = cute.tensor_spec({ 128 }, cute.bfloat16)

local function compile(k, ...)
  local r = k:compile(...)
  if PTXAS then
    assert.truthy(r.cubin, r.ptxas_log)
    assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
    assert.are.equal(0, r.info.spill_loads, r.ptxas_log)
  end
  return r
end

local load_k = cute.kernel(function(atom, mA, out)
  local sA = cute.make_shared_tensor(sL, cute.bfloat16)
  local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
  local tid = cute.arch.thread_idx()
  cp.prefetch_descriptor(atom)
  local gA = cute.local_tile(mA, { 128, 64 }, { cute.arch.block_idx(), _ })
  local tAsA, tAgA = cp.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
  if tid == 0 then
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
  end
  cute.arch.sync_threads()
  if tid == 0 then
    cute.arch.mbarrier_arrive_and_expect_tx(bar, atom.tx_bytes)
    cute.copy(atom, tAgA[{ _, 1 }], tAsA, { tma_bar_ptr = bar })
  end
  cute.arch.mbarrier_wait(bar, 0)
  out[tid] = sA[{ tid, 0 }]
end, { arch = "sm_90a" })

describe("TMA in kernels", function()
  it("a load: the bytes<128,64> grid-constant parameter, cp.async.bulk.tensor.2d, prefetch.tensormap", function()
    local atom, mA = cp.make_tiled_tma_atom(G2S, A, sL, { 128, 64 })
    assert.are.equal(16384, atom.tx_bytes)
    local ir = load_k:ir(atom, mA, O)
    assert(has(ir, "bytes<128,64> grid_constant \"atom\""), ir)
    assert(has(ir, "param.addr"), ir)
    local r = compile(load_k, atom, mA, O)
    assert(has(r.ptx, ".param .align 64 .b8 " .. load_k.name .. "_param_atom[128]"), r.ptx)
    assert(has(r.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes ["), r.ptx)
    assert(has(r.ptx, "prefetch.tensormap ["), r.ptx)
    assert(has(r.ptx, "mbarrier.try_wait.parity"), r.ptx)
  end)

  it("the key holds the atom's smem layout, box and dtype, not the tensor's address or extents", function()
    local key = require("cute.specialise").arg_key
    local a1 = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 512, 256 }, cute.bfloat16), sL, { 128, 64 })
    local a2 = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 1024, 512 }, cute.bfloat16), sL, { 128, 64 })
    local s64 = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW64, cute.bfloat16), { 128, 32 }, { 1, 2 })
    local a3 = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 512, 256 }, cute.bfloat16), s64, { 128, 32 })
    assert.are.equal(key(a1), key(a2))
    assert.are_not.equal(key(a1), key(a3))
    local _, c1 = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 512, 256 }, cute.bfloat16), sL, { 128, 64 })
    local _, c2 = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 1024, 256 }, cute.bfloat16), sL, { 128, 64 })
    assert.are_not.equal(key(c1), key(c2)) -- static extents are compiled in
    local _, d1 = cp.make_tiled_tma_atom(G2S, cute.dynamic(cute.tensor_spec({ 512, 256 }, cute.bfloat16)), sL, { 128, 64 })
    local _, d2 = cp.make_tiled_tma_atom(G2S, cute.dynamic(cute.tensor_spec({ 1024, 256 }, cute.bfloat16)), sL, { 128, 64 })
    assert.are.equal(key(d1), key(d2))      -- runtime extents are parameters
    local atom = cp.make_tiled_tma_atom(G2S, A, sL, { 128, 64 })
    local ir = load_k:ir(atom, d1, O)
    assert(has(ir, "\"mA_shape1\"") and has(ir, "\"mA_shape2\""), ir)
  end)

  it("the launch writer points the parameter at the atom's 128 bytes, and refuses an unencoded atom", function()
    local launch = require("cute.launch")
    local plan = { { kind = "bytes", arg = 1, name = "atom" }, { kind = "dim", arg = 2, field = "shape", d = 2, bits = 32 } }
    local _, params, ptrs, fill = launch.make_writer(plan, 2)
    local blob = ffi.new("uint8_t[128]")
    fill(nil, ptrs, { encoded = true, desc = blob }, { shape = { 7, 9 } })
    assert.are.equal(tonumber(ffi.cast("uintptr_t", blob)), tonumber(ffi.cast("uintptr_t", params[0])))
    assert.are.equal(9, ffi.cast("int32_t*", params[1])[0])
    local atom = cp.make_tiled_tma_atom(G2S, A, sL, { 128, 64 }) -- a spec: no address, not encoded
    local ok, e = pcall(fill, nil, ptrs, atom, { shape = { 7, 9 } })
    assert.is_false(ok)
    assert(tostring(e):find("without a device address", 1, true), e)
  end)

  it("launches pass each atom's 128 bytes and the runtime extents (a stub driver), one compile", function()
    local K_ = require("cute.kernel")
    local launches, loads = {}, 0
    K_._use_driver({
      available = function() return true end,
      cute_cuda_module_load = function(image, size, is_ptx, out)
        loads = loads + 1
        out[0] = ffi.cast("void*", 4096 + 16 * loads)
        return 0
      end,
      cute_cuda_module_get_function = function(mod, name, out) out[0] = ffi.cast("void*", 1); return 0 end,
      cute_cuda_module_unload = function() return 0 end,
      cute_cuda_launch_cluster = function(fn, gx, gy, gz, bx, by, bz, cx, cy, cz, smem, stream, params)
        local p = ffi.cast("uint8_t*", params[0])
        local bytes = {}
        for i = 0, 127 do bytes[i + 1] = p[i] end
        launches[#launches + 1] = { bytes = bytes, m = ffi.cast("int32_t*", params[1])[0],
          k = ffi.cast("int32_t*", params[2])[0], cluster = { cx, cy, cz } }
        return 0
      end,
      cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
      cute_cuda_get_device = function(out) out[0] = 0; return 0 end,
      cute_cuda_set_device = function() return 0 end,
    })
    local ok, err = pcall(function()
      local k = cute.kernel(function(atom, mA, out)
        local sA = cute.make_shared_tensor(sL, cute.bfloat16)
        local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
        cute.copy(atom, cute.local_tile(mA, { 128, 64 }, { 0, 0 }), sA, { tma_bar_ptr = bar })
        out[0] = sA[{ 0, 0 }]
      end, { arch = "sm_90a", use_ptxas = false })
      local out = { ptr = 8192, shape = { 4 }, strides = { 1 }, dtype = cute.bfloat16 }
      for n = 1, 2 do
        local atom, mA = cp.make_tiled_tma_atom(G2S, cute.dynamic(cute.tensor_spec({ 100 * n, 64 * n }, cute.bfloat16)),
          sL, { 128, 64 })
        atom.encoded = true -- (a spec has no address: stand in for the driver's encoding)
        ffi.fill(atom.desc, 128, 16 + n)
        k:launch{ grid = 2, block = 128, cluster = { 2, 1, 1 } }(atom, mA, out)
      end
      assert.are.equal(1, loads)
      assert.are.equal(2, #launches)
      for n = 1, 2 do
        local l = launches[n]
        assert.are.same({ 100 * n, 64 * n }, { l.m, l.k })
        assert.are.equal(16 + n, l.bytes[1])
        assert.are.equal(16 + n, l.bytes[128])
        assert.are.same({ 2, 1, 1 }, l.cluster)
      end
    end)
    K_._use_driver(nil)
    assert(ok, err)
  end)

  it("a store, a reduction, store fence / arrive / wait", function()
    local st = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileS2GOp(), A, sL, { 128, 64 })
    local red = cp.make_tiled_tma_atom(cp.CopyReduceBulkTensorTileS2GOp(cute.ReductionOp.ADD), A, sL, { 128, 64 })
    local _, mA = cp.make_tiled_tma_atom(G2S, A, sL, { 128, 64 })
    local k = cute.kernel(function(st, red, mA)
      local sA = cute.make_shared_tensor(sL, cute.bfloat16)
      sA[{ cute.arch.thread_idx(), 0 }] = 1.0
      cp.tma_store_fence()
      cute.arch.sync_threads()
      local gA = cute.local_tile(mA, { 128, 64 }, { cute.arch.block_idx(), 2 })
      if cute.arch.thread_idx() == 0 then
        cute.copy(st, sA, gA)
        cute.copy(red, sA, gA)
        cp.tma_store_arrive()
        cp.tma_store_wait(0)
      end
    end, { arch = "sm_90a" })
    local r = compile(k, st, red, mA)
    assert(has(r.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group ["), r.ptx)
    assert(has(r.ptx, "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group ["), r.ptx)
    assert(has(r.ptx, "fence.proxy.async.shared::cta"), r.ptx)
    assert(has(r.ptx, "cp.async.bulk.commit_group"), r.ptx)
    assert(has(r.ptx, "cp.async.bulk.wait_group.read 0"), r.ptx)
    -- sm_90 (no a): PTX 8.0 is raised for the reduction alone too
    local r90 = k:with({ arch = "sm_90" }):compile(st, red, mA)
    assert(has(r90.ptx, ".version 8."), r90.ptx:sub(1, 200))
  end)

  it("a multicast load over a 2-CTA cluster: each CTA issues half the tile with a CTA mask", function()
    local mc = cp.CopyBulkTensorTileG2SMulticastOp()
    local atom, mA = cp.make_tiled_tma_atom(mc, A, sL, { 128, 64 }, { num_multicast = 2 })
    local k = cute.kernel(function(atom, mA, out)
      local sA = cute.make_shared_tensor(sL, cute.bfloat16)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      local rank = cute.arch.block_idx_in_cluster()
      local gA = cute.local_tile(mA, { 128, 64 }, { 0, _ })
      local tAsA, tAgA = cp.tma_partition(atom, rank, cute.make_layout(2), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
      cute.copy(atom, tAgA[{ _, 0 }], tAsA, { tma_bar_ptr = bar, mcast_mask = 3 })
      out[cute.arch.thread_idx()] = sA[{ 0, 0 }]
    end, { arch = "sm_90a" })
    local r = compile(k, atom, mA, O)
    assert(has(r.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster ["), r.ptx)
    local n = 0
    for _ in r.ptx:gmatch("cp%.async%.bulk%.tensor") do n = n + 1 end
    assert.are.equal(1, n)                   -- one box (64 x 64) per CTA
  end)

  it("create_tma_multicast_mask: the CTAs of the same row or column of the cluster", function()
    local L = cute.make_layout({ 1, 2, 2, 1 })          -- (V, M, N, K): rank = m + 2 n
    assert.are.equal(2 + 8, cp.create_tma_multicast_mask(L, { 0, 1, 0, 0 }, 2)) -- A: along N, m = 1
    assert.are.equal(1 + 2, cp.create_tma_multicast_mask(L, { 0, 0, 0, 0 }, 1)) -- B: along M, n = 0
    assert.are.equal(4 + 8, cp.create_tma_multicast_mask(L, { 0, 1, 1, 0 }, 1))
    expect_error(function() cp.create_tma_multicast_mask(L, { 0, 1 }, 2) end, "a table of 4 coordinates")
    expect_error(function() cp.create_tma_multicast_mask(L, { 0, 0, 0, 0 }, 4) end, "mcast_mode = 4")
    local k = cute.kernel(function(out)
      local r = cute.arch.block_idx_in_cluster()
      out[0] = cp.create_tma_multicast_mask(L, { 0, cute.rem(r, 2), cute.div(r, 2), 0 }, 2)
    end, { arch = "sm_90a" })
    local ir = k:ir(cute.tensor_spec({ 4 }, cute.int32))
    assert(has(ir, "shl i32 1:i32"), ir)
    assert(has(ir, "or i32"), ir)
  end)

  it("a batch slice of a rank-3 tensor (3 coordinates) and a rank-1 vector", function()
    local s64 = cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, cute.bfloat16), { 64, 64 }, { 1, 2 })
    local atom, mA = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 192, 128, 3 }, cute.bfloat16, { 128, 1, 192 * 128 }),
      s64, { 64, 64 })
    local k = cute.kernel(function(atom, mA, out)
      local sA = cute.make_shared_tensor(s64, cute.bfloat16)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      local l = cute.arch.block_idx()
      cute.copy(atom, cute.local_tile(mA[{ _, _, l }], { 64, 64 }, { 1, 1 }), sA, { tma_bar_ptr = bar })
      out[0] = sA[{ 0, 0 }]
    end, { arch = "sm_90a" })
    local r = compile(k, atom, mA, O)
    assert(has(r.ptx, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"), r.ptx)
    local v = cute.make_layout(256)
    local a1, m1 = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 1000 }, cute.float32), v, { 256 })
    local k1 = cute.kernel(function(atom, mA, out)
      local s = cute.make_shared_tensor(v, cute.float32, 128)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      local b = cute.arch.block_idx()
      cute.copy(atom, cute.local_tile(mA, { 256 }, { b }), s, { tma_bar_ptr = bar })
      out[0] = s[0]
    end, { arch = "sm_90a" })
    local r1 = compile(k1, a1, m1, cute.tensor_spec({ 4 }, cute.float32))
    assert(has(r1.ptx, "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"), r1.ptx)
  end)

  it("an MN-major tile issues one instruction per box: 16 tiled M first, 2 tiled K first", function()
    local TK = dofile("spec/support/tma_kernels.lua")
    local At = cute.tensor_spec({ 256, 128 }, cute.bfloat16, { 1, 256 })
    for _, c in ipairs({ { { 1, 2 }, 16 }, { { 2, 1 }, 2 } }) do
      local mn = cute.tile_to_shape(cute.make_smem_layout_atom(K.MN_SW128, cute.bfloat16), { 128, 64 }, c[1])
      local atom, mA = cp.make_tiled_tma_atom(G2S, At, mn, { 128, 64 })
      local r = compile(TK.tile_copy(mn, 128, 64), atom, mA, cute.tensor_spec({ 256, 128 }, cute.bfloat16))
      local n = 0
      for _ in r.ptx:gmatch("cp%.async%.bulk%.tensor%.2d") do n = n + 1 end
      assert.are.equal(c[2], n)
    end
  end)

  it("a TMA producer warp feeding consumer warps through PipelineTmaAsync (traced stage and k)", function()
    local TK = dofile("spec/support/tma_kernels.lua")
    local atom, mA = cp.make_tiled_tma_atom(G2S, cute.dynamic(cute.tensor_spec({ 200, 304 }, cute.bfloat16)),
      TK.stage_layout, { TK.BM, TK.BK })
    local r = compile(TK.rowsum(), atom, mA, cute.tensor_spec({ 256 }, cute.float32), cute.Int32(5))
    assert(has(r.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"), r.ptx)
    assert(has(r.ptx, "mbarrier.try_wait.parity"), r.ptx)
    assert(has(r.ptx, "prefetch.tensormap"), r.ptx)
  end)

  it("errors at the user's line: sm_80, a missing barrier, a host-side atom, a bad mask", function()
    local atom, mA = cp.make_tiled_tma_atom(G2S, A, sL, { 128, 64 })
    local k80 = load_k:with({ arch = "sm_80" })
    local e = util.trace_error(k80, atom, mA, O)
    assert(has(e, "cute.nvgpu.cpasync.prefetch_descriptor needs sm_90"), e)
    assert(has(e, "compiled for sm_80"), e)
    local k = cute.kernel(function(atom, mA, out)
      local sA = cute.make_shared_tensor(sL, cute.bfloat16)
      local gA = cute.local_tile(mA, { 128, 64 }, { 0, 0 })
      cute.copy(atom, gA, sA) -- MARK-nobar
    end, { arch = "sm_90a" })
    e = util.trace_error(k, atom, mA, O)
    assert(has(e, "a load needs {tma_bar_ptr = mbarrier}"), e)
    util.at_line("spec/tma_spec.lua", e, "MARK-nobar")
    local kplain = cute.kernel(function(atom, mA, out)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), cute.float16)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      local gA = cute.local_tile(mA, { 64, 32 }, { 0, 0 })
      cute.copy(atom, gA, sA, { tma_bar_ptr = bar }) -- MARK-align
    end, { arch = "sm_90a" })
    local ap, mp = cp.make_tiled_tma_atom(G2S, cute.tensor_spec({ 100, 64 }, cute.float16), cute.make_layout({ 64, 32 }, { 32, 1 }), { 64, 32 })
    e = util.trace_error(kplain, ap, mp, O)
    assert(has(e, "16-byte aligned; TMA with a none swizzle needs 128 bytes"), e)
    util.at_line("spec/tma_spec.lua", e, "MARK-align")
    local mc = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SMulticastOp(), A, sL, { 128, 64 }, { num_multicast = 2 })
    local kmc = cute.kernel(function(atom, mA, out)
      local sA = cute.make_shared_tensor(sL, cute.bfloat16)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      local gA = cute.local_tile(mA, { 128, 64 }, { 0, 0 })
      local tAsA, tAgA = cp.tma_partition(atom, 0, cute.make_layout(4), sA, gA) -- MARK-ncta
    end, { arch = "sm_90a" })
    e = util.trace_error(kmc, mc, mA, O)
    assert(has(e, "has 4 CTAs but the atom multicasts to 2"), e)
    util.at_line("spec/tma_spec.lua", e, "MARK-ncta")
    local kin = cute.kernel(function(mA)
      cp.make_tiled_tma_atom(G2S, A, sL, { 128, 64 }) -- MARK-host
    end, { arch = "sm_90a" })
    e = util.trace_error(kin, mA)
    assert(has(e, "call it on the host"), e)
  end)
end)
