-- TMA im2col without a GPU (docs/HOPPER.md, "TMA", "im2col"): the
-- cuTensorMapEncodeIm2col arguments that make_im2col_tma_atom derives from an
-- NWC / NHWC / NDHWC activation and a convolution, checked against values
-- worked out by hand from the PTX ISA's im2col mode; the box coordinates
-- cute.copy computes, checked by hand and by a CPU model of the TMA's im2col
-- walk (PTX ISA 5.5.4: pixels of the bounding box W first, by the traversal
-- stride, filter taps as offsets, zeros outside the tensor) against a CPU
-- im2col for every element of several convolutions; the PTX of the
-- instruction (4-D, 5-D, 3-D, multicast) assembled by ptxas for sm_90a with no
-- spills; the key; errors naming the value and the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has, expect_error = util.has, util.expect_error
local im2col = require("cute.tma_im2col")
local TK = dofile("spec/support/tma_im2col_kernels.lua")
local cp = cute.nvgpu.cpasync

local PTXAS = C.cute_ptxas_path() ~= nil
local K = cute.SmemLayoutAtomKind
local I2C = cp.CopyBulkTensorIm2ColG2SOp()
local I2CM = cp.CopyBulkTensorIm2ColG2SMulticastOp()

local function smem(kind, bm, bk)
  return cute.tile_to_shape(cute.make_smem_layout_atom(K[kind], cute.bfloat16), { bm, bk }, { 1, 2 })
end
local function packed(shape)
  local st, s = {}, 1
  for i = #shape, 1, -1 do st[i] = s; s = s * shape[i] end
  return st
end
local function args(op, shape, sL, conv, dtype)
  return cp.im2col_tma_args(op, { shape = shape, strides = packed(shape), dtype = dtype or "bf16" }, sL, conv)
end

describe("im2col TMA arguments (by hand)", function()
  it("NHWC 2x10x12x64 bf16, 3x3, stride 1, padding 1 (same size output), 128x64 tiles with 128B swizzle", function()
    local a = args(I2C, { 2, 10, 12, 64 }, smem("K_SW128", 128, 64), { filter = { 3, 3 }, stride = 1, padding = 1 })
    assert.are.equal(4, a.rank)
    assert.are.same({ 4, 3, 2, 1 }, a.map_modes)            -- C, W, H, N
    assert.are.same({ 64, 12, 10, 2 }, a.global_dim)
    assert.are.same({ 128, 12 * 128, 10 * 12 * 128 }, a.global_strides)
    assert.are.same({ -1, -1 }, a.lower_corner)             -- -padding (W, H)
    assert.are.same({ -1, -1 }, a.upper_corner)             -- padding - (filter - 1)
    assert.are.same({ 1, 1, 1, 1 }, a.element_strides)
    assert.are.equal(64, a.channels_per_pixel)              -- 64 bf16 = the 128-byte swizzle span
    assert.are.equal(128, a.pixels_per_column)
    assert.are.equal(3, a.swizzle)
    assert.are.same({ 2, 10, 12 }, a.out_shape)
    assert.are.equal(240, a.gemm_m)                          -- N P Q
    assert.are.equal(576, a.gemm_k)                          -- C R S
    assert.are.equal(1, a.boxes)
    assert.are.equal(16384, a.tx_bytes)
    assert.is_true((im2col.check(a, 0x10000)))
    -- strides default to the packed tensor's; a dtype object works as its name
    local b = cp.im2col_tma_args(I2C, { shape = { 2, 10, 12, 64 }, dtype = cute.bfloat16 }, smem("K_SW128", 128, 64),
      { filter = { 3, 3 }, stride = 1, padding = 1 })
    assert.are.same(a.global_strides, b.global_strides)
    assert.are.equal(9, b.map_dtype)
  end)

  it("NHWC 1x17x20x32, stride 2, padding 1 (H) / 2 (W), dilation 2: corners, traversal strides, output", function()
    local a = args(I2C, { 1, 17, 20, 32 }, smem("K_SW64", 64, 32),
      { filter = { 3, 3 }, stride = 2, padding = { 1, 2 }, dilation = 2 }, "f16")
    -- P = (17 + 2 - 4 - 1) / 2 + 1 = 8, Q = (20 + 4 - 4 - 1) / 2 + 1 = 10 (floor)
    assert.are.same({ 1, 8, 10 }, a.out_shape)
    assert.are.same({ -2, -1 }, a.lower_corner)             -- W, H
    assert.are.same({ 2 - 4, 1 - 4 }, a.upper_corner)       -- padding - dilation (filter - 1)
    assert.are.same({ 1, 2, 2, 1 }, a.element_strides)      -- the conv strides walk W and H
    assert.are.same({ 32, 64 }, a.box)                      -- 32 f16 = the 64-byte swizzle span
    assert.are.equal(2, a.swizzle)
    assert.are.equal(6, a.map_dtype)                        -- FLOAT16
    assert.are.equal(80, a.gemm_m)
    assert.are.equal(288, a.gemm_k)
  end)

  it("NWC (rank 3) and NDHWC (rank 5) tensors; an asymmetric upper padding", function()
    local a3 = args(I2C, { 2, 100, 16 }, smem("K_SW32", 64, 16), { filter = 5, stride = 2, padding = 2 })
    assert.are.same({ 16, 100, 2 }, a3.global_dim)
    assert.are.same({ -2 }, a3.lower_corner)
    assert.are.same({ -2 }, a3.upper_corner)
    assert.are.same({ 1, 2, 1 }, a3.element_strides)
    assert.are.same({ 2, 50 }, a3.out_shape)                -- (100 + 4 - 4 - 1) / 2 + 1
    assert.are.same({ 16, 64 }, a3.box)
    local a5 = args(I2C, { 2, 4, 6, 8, 32 }, smem("K_SW64", 64, 32),
      { filter = { 3, 3, 3 }, stride = { 1, 2, 2 }, padding = 1, dilation = { 1, 1, 2 } })
    assert.are.same({ 32, 8, 6, 4, 2 }, a5.global_dim)      -- C, W, H, D, N
    assert.are.same({ -1, -1, -1 }, a5.lower_corner)
    assert.are.same({ 1 - 4, 1 - 2, 1 - 2 }, a5.upper_corner) -- W has dilation 2
    assert.are.same({ 1, 2, 2, 1, 1 }, a5.element_strides)
    assert.are.same({ 2, 4, 3, 3 }, a5.out_shape)
    assert.are.equal(72, a5.gemm_m)
    assert.are.equal(32 * 27, a5.gemm_k)
    local au = args(I2C, { 1, 8, 8, 64 }, smem("K_SW128", 64, 64), { filter = { 3, 3 }, padding = 0, upper_padding = 2 })
    assert.are.same({ 0, 0 }, au.lower_corner)
    assert.are.same({ 0, 0 }, au.upper_corner)              -- 2 - 2
    assert.are.same({ 1, 8, 8 }, au.out_shape)
  end)

  it("a 128-channel K tile is two boxes; multicast over 2 CTAs splits the pixels", function()
    local a = args(I2C, { 2, 10, 12, 64 }, smem("K_SW128", 128, 128), { filter = { 3, 3 }, padding = 1 })
    assert.are.same({ 64, 128 }, a.box)
    assert.are.equal(2, a.boxes)
    assert.are.equal(32768, a.tx_bytes)
    local m = args(I2CM, { 2, 10, 12, 64 }, smem("K_SW128", 128, 64), { filter = { 3, 3 }, padding = 1, num_multicast = 2 })
    assert.are.same({ 64, 64 }, m.box)                      -- each CTA: 64 of the 128 pixels
    assert.are.equal(1, m.split_mode)
    assert.are.equal(16384, m.tx_bytes)
  end)

  it("box coordinates of (m, k) by hand, and the K residue sent past C", function()
    local a = args(I2C, { 1, 17, 20, 32 }, smem("K_SW64", 64, 32),
      { filter = { 3, 3 }, stride = 2, padding = { 1, 2 }, dilation = 2 })
    -- m = 37: q = 7, p = 3, n = 0 -> w = 7*2 - 2 = 12, h = 3*2 - 1 = 5; k = 200: tap 6 (r 2, s 0), c 8
    local c, o = im2col.box_coords(a, 37, 200)
    assert.are.same({ 8, 12, 5, 0 }, c)
    assert.are.same({ 0, 4 }, o)                            -- s*2, r*2
    -- k = 300 >= K = 288: the last tap (8: r 2, s 2) with c = 300 - 256 = 44 >= C: TMA fills zeros
    c, o = im2col.box_coords(a, 0, 300)
    assert.are.same({ 44, -2, -1, 0 }, c)
    assert.are.same({ 4, 4 }, o)
    -- m past M: n = 1 >= N: zeros
    c = im2col.box_coords(a, 80, 0)
    assert.are.same({ 0, -2, -1, 1 }, c)
  end)
end)

-- the TMA's im2col walk (PTX ISA 5.5.4) on the CPU: from the box's base
-- pixel, pixels_per_column pixels of the bounding box [lower, dim - 1 +
-- upper], W fastest, stepping by the traversal stride and wrapping to the
-- lower corner; each element at base + offsets, zero outside the tensor
local function tma_model(a, x)
  local r, ns = a.rank, a.rank - 2
  local dim = a.global_dim
  return function(m0, k0)
    local c, o = im2col.box_coords(a, m0, k0)
    local pos = {}
    for j = 1, r do pos[j] = c[j] end
    local tile = {}
    for i = 0, a.pixels_per_column - 1 do
      local row = {}
      local inside = pos[r] < dim[r]
      local lin = pos[r]
      for j = ns + 1, 2, -1 do
        local e = pos[j] + o[j - 1]
        if e < 0 or e >= dim[j] then inside = false end
        lin = lin * dim[j] + e
      end
      for ch = 0, a.channels_per_pixel - 1 do
        local cc = c[1] + ch
        row[ch] = (inside and cc < dim[1]) and x[lin * dim[1] + cc + 1] or 0
      end
      tile[i] = row
      -- next pixel
      local j = 2
      while j <= ns + 1 do
        pos[j] = pos[j] + a.element_strides[j]
        if pos[j] <= dim[j] - 1 + a.upper_corner[j - 1] then break end
        pos[j] = a.lower_corner[j - 1]
        j = j + 1
      end
      if j > ns + 1 then pos[r] = pos[r] + 1 end
    end
    return tile
  end
end

describe("the box coordinates against a CPU im2col (a model of the TMA walk)", function()
  local cases = {
    { "NHWC 3x3 pad 1", { 2, 10, 12, 64 }, "K_SW128", 128, 64, { filter = { 3, 3 }, padding = 1 } },
    { "NHWC stride 2 dilation 2, asymmetric padding", { 1, 17, 20, 32 }, "K_SW64", 64, 32,
      { filter = { 3, 3 }, stride = 2, padding = { 1, 2 }, upper_padding = { 0, 3 }, dilation = 2 } },
    { "NHWC K residue (two boxes per 128-channel tile)", { 1, 7, 9, 64 }, "K_SW128", 64, 128,
      { filter = { 3, 3 }, padding = 1 } },
    { "NWC", { 2, 37, 16 }, "K_SW32", 64, 16, { filter = 5, stride = 2, padding = 2 } },
    { "NDHWC", { 2, 4, 6, 8, 32 }, "K_SW64", 64, 32,
      { filter = { 3, 3, 3 }, stride = { 1, 2, 2 }, padding = 1, dilation = { 1, 1, 2 } } },
  }
  for _, cs in ipairs(cases) do
    it(cs[1] .. ": every element of every tile", function()
      local shape, bm, bk = cs[2], cs[4], cs[5]
      local a = args(I2C, shape, smem(cs[3], bm, bk), cs[6])
      local n = 1
      for i = 1, #shape do n = n * shape[i] end
      local x = {}
      for i = 1, n do x[i] = i end -- distinct values: a wrong pixel cannot match
      local ref, Mtot, Ktot = TK.im2col_ref(x, shape, cs[6])
      assert.are.equal(a.gemm_m, Mtot)
      assert.are.equal(a.gemm_k, Ktot)
      local model = tma_model(a, x)
      local bad, checked = 0, 0
      for m0 = 0, math.ceil(Mtot / bm) * bm - 1, a.pixels_per_column do
        for k0 = 0, math.ceil(Ktot / bk) * bk - 1, a.channels_per_pixel do
          local t = model(m0, k0)
          for i = 0, a.pixels_per_column - 1 do
            for j = 0, a.channels_per_pixel - 1 do
              local want, got = ref(m0 + i, k0 + j), t[i][j]
              checked = checked + 1
              if want ~= got then
                bad = bad + 1
                if bad <= 5 then print(("%s (%d,%d): model %s, im2col %s"):format(cs[1], m0 + i, k0 + j, got, want)) end
              end
            end
          end
        end
      end
      assert.are.equal(0, bad)
      assert.is_true(checked >= Mtot * Ktot)
    end)
  end
end)

describe("im2col TMA in kernels", function()
  local function compile(k, ...)
    local r = k:compile(...)
    if PTXAS then
      assert.truthy(r.cubin, r.ptxas_log)
      assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
      assert.are.equal(0, r.info.spill_loads, r.ptxas_log)
    end
    return r
  end
  local O = cute.tensor_spec({ 512, 1024 }, cute.bfloat16)

  it("NHWC: cp.async.bulk.tensor.4d ... .im2col with two 16-bit offsets, the 128-byte parameter", function()
    local sL = smem("K_SW128", 128, 64)
    local atom, mA = cp.make_im2col_tma_atom(I2C, cute.tensor_spec({ 2, 10, 12, 64 }, cute.bfloat16), sL,
      { filter = { 3, 3 }, padding = 1 })
    assert.are.equal(16384, atom.tx_bytes)
    local k = TK.tile_copy(sL, 128, 64)
    local r = compile(k, atom, mA, O, 0)
    assert(has(r.ptx, ".param .align 64 .b8 " .. k.name .. "_param_atom[128]"), r.ptx)
    assert(r.ptx:find("cp%.async%.bulk%.tensor%.4d%.shared::cluster%.global%.im2col%.mbarrier::complete_tx::bytes "
      .. "%[%%r%d+%], %[%%rd%d+, {%%r%d+, %%r%d+, %%r%d+, %%r%d+}%], %[%%r%d+%], {%%rs%d+, %%rs%d+};"), r.ptx)
    assert(has(r.ptx, "prefetch.tensormap"), r.ptx)
  end)

  it("NDHWC (5-D, three offsets), NWC (3-D, one offset), two boxes per tile", function()
    local s64 = smem("K_SW64", 64, 32)
    local a5, m5 = cp.make_im2col_tma_atom(I2C, cute.tensor_spec({ 2, 4, 6, 8, 32 }, cute.bfloat16), s64,
      { filter = { 3, 3, 3 }, stride = { 1, 2, 2 }, padding = 1, dilation = { 1, 1, 2 } })
    local r5 = compile(TK.tile_copy(s64, 64, 32), a5, m5, O, 0)
    assert(has(r5.ptx, "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"), r5.ptx)
    assert(r5.ptx:find("{%%rs%d+, %%rs%d+, %%rs%d+};"), r5.ptx)
    local s32 = smem("K_SW32", 64, 16)
    local a3, m3 = cp.make_im2col_tma_atom(I2C, cute.tensor_spec({ 2, 100, 16 }, cute.bfloat16), s32,
      { filter = 5, stride = 2, padding = 2 })
    local r3 = compile(TK.tile_copy(s32, 64, 16), a3, m3, O, 0)
    assert(r3.ptx:find("cp%.async%.bulk%.tensor%.3d%.shared::cluster%.global%.im2col[^\n]*{%%rs%d+};"), r3.ptx)
    local s2 = smem("K_SW128", 64, 128)
    local a2, m2 = cp.make_im2col_tma_atom(I2C, cute.tensor_spec({ 1, 7, 9, 64 }, cute.bfloat16), s2,
      { filter = { 3, 3 }, padding = 1 })
    local r2 = compile(TK.tile_copy(s2, 64, 128), a2, m2, O, 0)
    local n = select(2, r2.ptx:gsub("%.im2col%.mbarrier", ""))
    assert.are.equal(2, n)
  end)

  it("multicast over a 2-CTA cluster: offsets, then the CTA mask", function()
    local sL = smem("K_SW128", 128, 64)
    local atom, mA = cp.make_im2col_tma_atom(I2CM, cute.tensor_spec({ 2, 10, 12, 64 }, cute.bfloat16), sL,
      { filter = { 3, 3 }, padding = 1, num_multicast = 2 })
    local r = compile(TK.tile_copy(sL, 128, 64, 2), atom, mA, O, 256)
    assert(r.ptx:find("%.im2col%.mbarrier::complete_tx::bytes%.multicast::cluster %[%%r%d+%], %[%%rd%d+, {[^}]*}%], "
      .. "%[%%r%d+%], {%%rs%d+, %%rs%d+}, %%rs%d+;"), r.ptx)
  end)

  it("the key: the geometry and tile, not the address; N only for a static tensor", function()
    local key = require("cute.specialise").arg_key
    local sL = smem("K_SW128", 128, 64)
    local conv = { filter = { 3, 3 }, padding = 1 }
    local function mk(shape, c, dyn)
      local t = cute.tensor_spec(shape, cute.bfloat16)
      return cp.make_im2col_tma_atom(I2C, dyn and cute.dynamic(t) or t, sL, c)
    end
    local a1, c1 = mk({ 2, 10, 12, 64 }, conv)
    local a2, c2 = mk({ 2, 10, 12, 64 }, conv)
    assert.are.equal(key(a1), key(a2))
    assert.are.equal(key(c1), key(c2))
    local a3, c3 = mk({ 4, 10, 12, 64 }, conv)
    assert.are_not.equal(key(a1), key(a3))
    assert.are_not.equal(key(c1), key(c3))
    local d1, e1 = mk({ 2, 10, 12, 64 }, conv, true)
    local d2, e2 = mk({ 4, 10, 12, 64 }, conv, true)
    assert.are.equal(key(d1), key(d2))                      -- N (and M) at run time
    assert.are.equal(key(e1), key(e2))
    local p2 = mk({ 2, 10, 12, 64 }, { filter = { 3, 3 }, padding = 2 })
    assert.are_not.equal(key(a1), key(p2))
    local ir = TK.tile_copy(sL, 128, 64):ir(d1, e1, O, 0)
    assert(has(ir, "\"mA_shape1\""), ir)
  end)

  it("launches of a cute.dynamic activation (a stub driver): one compile, each passing its map and M, K", function()
    local ffi = require("ffi")
    local K_ = require("cute.kernel")
    local launches, loads = {}, 0
    local function launch(fn, gx, gy, gz, bx, by, bz, smem_, stream, params)
      local p = ffi.cast("uint8_t*", params[0])
      launches[#launches + 1] = { first = p[0], last = p[127], m = ffi.cast("int32_t*", params[1])[0],
        k = ffi.cast("int32_t*", params[2])[0], grid = { gx, gy } }
      return 0
    end
    K_._use_driver({
      available = function() return true end,
      cute_cuda_module_load = function(image, size, is_ptx, out)
        loads = loads + 1
        out[0] = ffi.cast("void*", 4096 + 16 * loads)
        return 0
      end,
      cute_cuda_module_get_function = function(mod, name, out) out[0] = ffi.cast("void*", 1); return 0 end,
      cute_cuda_module_unload = function() return 0 end,
      cute_cuda_launch = launch,
      cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
      cute_cuda_get_device = function(out) out[0] = 0; return 0 end,
      cute_cuda_set_device = function() return 0 end,
    })
    local ok, err = pcall(function()
      local sL = smem("K_SW128", 128, 64)
      local k = TK.tile_copy(sL, 128, 64):with({ use_ptxas = false })
      local out = { ptr = 8192, shape = { 1024, 576 }, strides = { 576, 1 }, dtype = cute.bfloat16 }
      for n = 1, 2 do
        local atom, mA = cp.make_im2col_tma_atom(I2C, cute.dynamic(cute.tensor_spec({ 3 * n, 10, 12, 64 }, cute.bfloat16)),
          sL, { filter = { 3, 3 }, padding = 1 })
        atom.encoded = true -- (a spec has no address: stand in for the driver's encoding)
        ffi.fill(atom.desc, 128, 40 + n)
        k:launch{ grid = { math.ceil(mA.shape[1] / 128), 9, 1 }, block = 128 }(atom, mA, out, 0)
      end
    end)
    K_._use_driver(nil)
    assert(ok, err)
    assert.are.equal(1, loads)
    assert.are.equal(2, #launches)
    for n = 1, 2 do
      local l = launches[n]
      assert.are.same({ 3 * n * 120, 576 }, { l.m, l.k }) -- M = N P Q, K = C R S
      assert.are.same({ 41 + n - 1, 41 + n - 1 }, { l.first, l.last })
      assert.are.same({ math.ceil(3 * n * 120 / 128), 9 }, l.grid)
    end
  end)

  it("refuses what TMA im2col cannot do, naming the value", function()
    local sL = smem("K_SW128", 128, 64)
    local function A(shape, c, sl, op, strides, dtype)
      return cp.im2col_tma_args(op or I2C, { shape = shape, strides = strides or packed(shape), dtype = dtype or "bf16" },
        sl or sL, c)
    end
    local conv = { filter = { 3, 3 }, padding = 1 }
    expect_error(function() A({ 12, 64 }, conv) end, "NWC, NHWC or NDHWC", "rank 3 to 5")
    expect_error(function() A({ 2, 10, 12, 64 }, conv, nil, nil, { 64, 1, 640, 7680 }) end, "contiguous channels",
      "last mode (C) must have stride 1")
    expect_error(function() A({ 2, 10, 12, 36 }, conv) end, "72 bytes", "C a multiple of 8")
    expect_error(function() A({ 2, 10, 12, 96 }, conv) end, "64 channels", "C = 96 is not a multiple", "K_SW64")
    expect_error(function() A({ 2, 10, 12, 64 }, { filter = { 3, 3 }, stride = 9 }) end, "stride = 9", "1 to 8")
    expect_error(function() A({ 2, 10, 12, 64 }, { filter = { 3, 3 }, padding = 200 }) end, "lower corner -200",
      "[-128, 127]", "NHWC")
    expect_error(function() A({ 2, 10, 300, 64 }, { filter = { 3, 3 }, dilation = { 1, 100 } }) end,
      "W: the bounding box's upper corner -200", "(upper padding 0 - 200 (filter span))")
    local far = { filter = { 3, 3 }, dilation = { 1, 150 }, padding = 0, upper_padding = { 0, 200 } }
    expect_error(function() A({ 2, 10, 300, 64 }, far) end, "W: the last filter tap is at offset 300", "offsets 0 to 255")
    expect_error(function() A({ 2, 4, 6, 64, 32 }, { filter = { 1, 1, 3 }, dilation = 20 }, smem("K_SW64", 64, 32)) end,
      "W: the last filter tap is at offset 40", "0 to 31")
    expect_error(function() A({ 2, 5, 5, 64 }, { filter = { 7, 3 } }) end, "H: the filter spans 7 pixels", "no output")
    expect_error(function() A({ 2, 10, 12, 64 }, {}) end, "needs filter = {R, S}")
    expect_error(function() A({ 2, 10, 12, 64 }, { filter = { 3 } }) end, "filter = (3)", "a table of 2 (H, W")
    expect_error(function() A({ 2, 10, 12, 64 }, { filter = { 3, 3 }, pad = 1 }) end, "unknown option pad")
    expect_error(function() A({ 2, 10, 12, 64 }, { filter = { 3, 3 }, num_multicast = 2 }) end,
      "CopyBulkTensorIm2ColG2SMulticastOp")
    expect_error(function() A({ 2, 10, 12, 64 }, conv, nil, cp.CopyBulkTensorTileG2SOp()) end, "not an im2col TMA op")
    expect_error(function() A({ 2, 10, 12, 64 }, conv, nil, nil, nil, "i1") end, "no TMA data type")
    expect_error(function() A({ 2, 10, 12, 64 }, conv, cute.make_layout({ 128, 64 }, { 1, 128 })) end,
      "make_im2col_tma_atom", "does not store the box densely")
    local t64, l64 = cute.tensor_spec({ 64, 64 }, cute.bfloat16), cute.make_layout({ 64, 64 }, { 64, 1 })
    expect_error(function() cp.make_tiled_tma_atom(I2C, t64, l64, { 64, 64 }) end, "loads im2col tiles", "make_im2col_tma_atom")
  end)

  it("errors at the user's line: sm_80, an atom made inside the kernel", function()
    local sL = smem("K_SW128", 128, 64)
    local atom, mA = cp.make_im2col_tma_atom(I2C, cute.tensor_spec({ 2, 10, 12, 64 }, cute.bfloat16), sL,
      { filter = { 3, 3 }, padding = 1 })
    local k = cute.kernel(function(atom, mA)
      local sA = cute.make_shared_tensor(sL, cute.bfloat16, 1024)
      local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
      cute.copy(atom, cute.local_tile(mA, { 128, 64 }, { 0, 0 }), sA, { tma_bar_ptr = bar }) -- MARK-i2c-sm80
    end, { arch = "sm_80" })
    local e = util.trace_error(k, atom, mA)
    assert(has(e, "cute.copy (TMA CopyBulkTensorIm2ColG2SOp) needs sm_90"), e)
    assert(has(e, "compiled for sm_80"), e)
    util.at_line("spec/tma_im2col_spec.lua", e, "MARK-i2c-sm80")
    local kin = cute.kernel(function(mA)
      cp.make_im2col_tma_atom(I2C, cute.tensor_spec({ 2, 10, 12, 64 }, cute.bfloat16), sL, { filter = 3 }) -- MARK-i2c-host
    end, { arch = "sm_90a" })
    e = util.trace_error(kin, mA)
    assert(has(e, "call it on the host"), e)
    util.at_line("spec/tma_im2col_spec.lua", e, "MARK-i2c-host")
  end)
end)
