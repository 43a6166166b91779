-- Swizzles and composed layouts (issue 10 item 3; docs/LAYOUT.md "Swizzles and
-- composed layouts"): Sw<B,M,S> o offset o L through the layout algebra with
-- CuTe C++ semantics, checked pointwise against the definitions on many
-- swizzles and layouts, plus literal values worked out by hand; the smem layout
-- atoms checked against their definition in bits; shared-memory tensors on
-- swizzled layouts (addresses in the PTX, traced xor, vector widths capped at
-- the swizzle's base) and, on a GPU, a write through the swizzle read back raw.
local cute = require("cute")
local bit = require("bit")
local util = dofile("spec/support/util.lua")
local gpu_it, has, expect_error = util.gpu_it, util.has, util.expect_error
local f16, f32, i16, u8, f64 = cute.float16, cute.float32, cute.int16, cute.uint8, cute.float64
local _ = cute._

-- reference swizzle, written from the definition: bits [M+S, M+S+B) xor'ed
-- into bits [M, M+B) (S < 0: the other way round)
local function ref_swizzle(b, m, s, x)
  if b == 0 or s == 0 then return x end
  local src, dst = m + s, m      -- S > 0: bits M+S+k into bits M+k
  if s < 0 then src, dst = m, m - s end
  local y = x
  for k = 0, b - 1 do
    if math.floor(x / 2 ^ (src + k)) % 2 == 1 then
      local cur = math.floor(y / 2 ^ (dst + k)) % 2
      y = y + (cur == 1 and -1 or 1) * 2 ^ (dst + k)
    end
  end
  return y
end
local function idiv(a, b) return math.floor(a / b) end

-- deterministic pseudo-random integers
local seed = 7
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end

-- a spread of layouts (as {shape, stride}) and swizzles
local LAYOUTS = {
  { { 8, 64 }, { 64, 1 } }, { { 64, 8 }, { 1, 64 } }, { { 16, 16 }, { 1, 16 } },
  { { { 4, 2 }, 32 }, { { 32, 128 }, 1 } }, { { 8, 8, 4 }, { 8, 1, 64 } }, { 128, 1 },
  { { 32, 4 }, { 4, 1 } },
}
local SWIZZLES = { { 3, 3, 3 }, { 2, 3, 3 }, { 1, 3, 3 }, { 3, 4, 3 }, { 2, 0, 2 }, { 2, 2, 4 }, { 1, 1, -2 }, { 0, 3, 3 } }

local function composed_cases()
  local out = {}
  for li, l in ipairs(LAYOUTS) do
    for si, s in ipairs(SWIZZLES) do
      if (li + si) % 2 == 0 or li == 1 then
        local off = ({ 0, 0, 64, 8, 1024 })[(li * 3 + si) % 5 + 1]
        out[#out + 1] = cute.make_composed_layout(cute.make_swizzle(s[1], s[2], s[3]), off,
          cute.make_layout(l[1], l[2]))
      end
    end
  end
  return out
end

-- Sw(off + P(i)) for a plain layout P and the swizzle / offset of composed C
local function outside(C, P, crd)
  local sw = cute.composed_swizzle(C)
  return sw(cute.composed_offset(C) + P(crd))
end

describe("swizzles", function()
  it("apply the xor of the definition, and are their own inverse", function()
    for _, s in ipairs({ { 3, 3, 3 }, { 2, 4, 3 }, { 1, 0, 1 }, { 3, 0, 5 }, { 2, 2, -2 }, { 1, 3, -4 } }) do
      local sw = cute.make_swizzle(s[1], s[2], s[3])
      for _rep = 1, 300 do
        local x = rnd(2 ^ 14)
        assert.are.equal(ref_swizzle(s[1], s[2], s[3], x), sw(x))
        assert.are.equal(x, sw(sw(x)))
      end
    end
    -- by hand: Sw<3,3,3>(0b111_000_101) = 0b111_000_101 ^ 0b111_000 = 0b111_111_101
    assert.are.equal(tonumber("111111101", 2), cute.make_swizzle(3, 3, 3)(tonumber("111000101", 2)))
  end)

  it("right_inverse / left_inverse of a swizzle is the swizzle; composition(Sw, L) is Sw o 0 o L", function()
    local sw = cute.make_swizzle(2, 3, 3)
    assert.are.equal(sw, cute.right_inverse(sw))
    assert.are.equal(sw, cute.left_inverse(sw))
    local L = cute.make_layout({ 8, 32 }, { 32, 1 })
    local C = cute.composition(sw, L)
    assert.are.equal("Sw<2,3,3> o 0 o (8,32):(32,1)", tostring(C))
    for i = 0, 255 do assert.are.equal(sw(L(i)), C(i)) end
  end)
end)

describe("composed layouts through the algebra", function()
  local cases = composed_cases()

  it("print as CuTe does, and answer size / cosize / shape / rank / depth from the inner layout", function()
    local C = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout({ 8, 64 }, { 64, 1 }))
    assert.are.equal("Sw<3,3,3> o 0 o (8,64):(64,1)", tostring(C))
    assert.are.equal(C, cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)"))
    assert.are.equal(C, cute.parse("S<3,3,3> o 0 o (8,64):(64,1)")) -- as CuTe DSL prints it
    assert.are.equal(cute.make_swizzle(2, 4, 3), cute.parse("S<2,4,3>"))
    assert.are.equal(512, cute.size(C))
    assert.are.equal(512, cute.cosize(C))
    assert.are.same({ 8, 64 }, cute.shape(C))
    assert.are.equal(2, cute.rank(C))
    assert.are.equal(1, cute.depth(C))
    assert.are.equal("ComposedLayout", C:kind())
    assert.are.equal("(8,64):(64,1)", tostring(cute.inner_layout(C)))
  end)

  it("get(C, k) is the mode k of the function", function()
    for _, C in ipairs(cases) do
      local r = cute.rank(C)
      for k = 0, r - 1 do
        local G = cute.get(C, k)
        for j = 0, cute.size(G) - 1 do
          local crd = {}
          for q = 1, r do crd[q] = 0 end
          crd[k + 1] = j
          local want = r == 1 and C(j) or C(crd)
          assert.are.equal(want, G(j), tostring(C) .. " mode " .. k)
        end
      end
    end
  end)

  it("composition with a layout: (C o B)(i) == C(B(i)); with a tuple tiler: by mode", function()
    for _, C in ipairs(cases) do
      local n = cute.size(C)
      for _, B in ipairs({ cute.make_layout(idiv(n, 2), 2), cute.make_layout({ 4, idiv(n, 4) }, { idiv(n, 4), 1 }),
        cute.make_layout({ 2, 2, idiv(n, 4) }, { 1, idiv(n, 2), 2 }) }) do
        local R = cute.composition(C, B)
        assert.is_true(cute.is_composed(R))
        for i = 0, cute.size(B) - 1 do assert.are.equal(C(B(i)), R(i), tostring(C) .. " o " .. tostring(B)) end
      end
      if cute.rank(C) == 2 then
        local s = cute.shape(C)
        local t0, t1 = math.max(1, idiv(cute.size(s[1]), 2)), math.max(1, idiv(cute.size(s[2]), 2))
        local R = cute.composition(C, { t0, t1 })
        for i = 0, t0 - 1 do
          for j = 0, t1 - 1 do
            local a = cute.idx2crd(i, s[1]); local b = cute.idx2crd(j, s[2])
            assert.are.equal(C({ a, b }), R({ i, j }), tostring(R))
          end
        end
      end
    end
    assert.are.equal("Sw<3,3,3> o 0 o (4,8):(64,1)",
      tostring(cute.composition(cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)"), { 4, 8 })))
  end)

  it("the divides: tile coordinate i and rest coordinate r of a mode are the mode's i + t*r", function()
    for _, C in ipairs(cases) do
      if cute.rank(C) == 2 and cute.depth(C) == 1 then
        local s = cute.shape(C)
        local t0, t1 = 2, 4
        if s[1] % t0 == 0 and s[2] % t1 == 0 then
          local LD = cute.logical_divide(C, { t0, t1 })
          local ZD = cute.zipped_divide(C, { t0, t1 })
          local TD = cute.tiled_divide(C, { t0, t1 })
          local FD = cute.flat_divide(C, { t0, t1 })
          for _, R in ipairs({ LD, ZD, TD, FD }) do assert.is_true(cute.is_composed(R)) end
          for i0 = 0, t0 - 1 do
            for i1 = 0, t1 - 1 do
              for r0 = 0, idiv(s[1], t0) - 1 do
                for r1 = 0, idiv(s[2], t1) - 1 do
                  local want = C({ i0 + t0 * r0, i1 + t1 * r1 })
                  assert.are.equal(want, LD({ { i0, r0 }, { i1, r1 } }), tostring(LD))
                  assert.are.equal(want, ZD({ { i0, i1 }, { r0, r1 } }), tostring(ZD))
                  assert.are.equal(want, TD({ { i0, i1 }, r0, r1 }), tostring(TD))
                  assert.are.equal(want, FD({ i0, i1, r0, r1 }), tostring(FD))
                end
              end
            end
          end
        end
      end
    end
    assert.are.equal("Sw<3,3,3> o 0 o ((4,8),(2,8)):((64,1),(256,8))",
      tostring(cute.zipped_divide(cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)"), { 4, 8 })))
  end)

  it("the products keep the swizzle outside: R(i) == Sw(off + product(L, B)(i)), mode 0 is C", function()
    for _, C in ipairs(cases) do
      local L = cute.inner_layout(C)
      for _, name in ipairs({ "logical_product", "zipped_product", "tiled_product", "blocked_product",
        "raked_product" }) do
        local B = cute.rank(C) == 1 and cute.make_layout(3) or cute.make_layout({ 2, 3 })
        if name == "logical_product" or name == "zipped_product" or name == "tiled_product" then B = cute.make_layout(3) end
        local R = cute[name](C, B)
        local P = cute[name](L, B)
        assert.is_true(cute.is_composed(R))
        assert.are.equal(cute.size(C) * cute.size(B), cute.size(R))
        for i = 0, cute.size(R) - 1 do assert.are.equal(outside(C, P, i), R(i), name .. " " .. tostring(C)) end
        if name == "logical_product" then
          for i = 0, cute.size(C) - 1 do assert.are.equal(C(i), R({ i, 0 })) end
        end
      end
    end
    assert.are.equal("Sw<3,3,3> o 0 o ((8,64),2):((64,1),512)",
      tostring(cute.logical_product(cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)"), cute.make_layout(2))))
  end)

  it("flatten, group, select and append reshape the domain only", function()
    for _, C in ipairs(cases) do
      local F, G = cute.flatten(C), cute.group(C, 0, cute.rank(C))
      for i = 0, cute.size(C) - 1 do
        assert.are.equal(C(i), F(i))
        assert.are.equal(C(i), G(i))
      end
      if cute.rank(C) == 2 then
        local S = cute.select(C, { 1, 0 })
        local s = cute.shape(C)
        for i = 0, cute.size(s[1]) - 1 do
          for j = 0, cute.size(s[2]) - 1 do assert.are.equal(C({ i, j }), S({ j, i })) end
        end
      end
      local A = cute.append(C, cute.make_layout(2, cute.cosize(C)))
      assert.is_true(cute.is_composed(A))
      for i = 0, cute.size(C) - 1 do
        assert.are.equal(C(i), A(i))
        assert.are.equal(outside(C, cute.append(cute.inner_layout(C), cute.make_layout(2, cute.cosize(C))), i + cute.size(C)),
          A(i + cute.size(C)))
      end
    end
    assert.are.equal("Sw<3,3,3> o 0 o (8,(),64):(64,(),1)", tostring(cute.group(cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)"), 1, 1)))
  end)

  it("coalesce and filter keep the function on the 1-D index", function()
    for _, C in ipairs(cases) do
      local R = cute.coalesce(C)
      for i = 0, cute.size(C) - 1 do assert.are.equal(C(i), R(i)) end
    end
    assert.are.equal("Sw<2,0,2> o 0 o 16:1",
      tostring(cute.coalesce(cute.parse("Sw<2,0,2> o 0 o (4,4):(1,4)"))))
  end)

  it("slice and slice_and_offset fold the slice offset into the composed offset", function()
    for _, C in ipairs(cases) do
      if cute.rank(C) == 2 then
        local s = cute.shape(C)
        local n0 = cute.size(s[1])
        for _rep = 1, 3 do
          local i = rnd(n0)
          local R, off = cute.slice_and_offset({ i, cute._ }, C)
          local S0 = cute.slice({ i, cute._ }, C)
          assert.are.equal(0, off)
          assert.is_true(cute.is_composed(R))
          assert.are.equal(R, S0)
          for j = 0, cute.size(s[2]) - 1 do assert.are.equal(C({ i, j }), R(j), tostring(R)) end
        end
      end
    end
    local R, off = cute.slice_and_offset({ 3, cute._ }, cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)"))
    assert.are.equal("Sw<3,3,3> o 192 o (64):(1)", tostring(R))
    assert.are.equal(0, off)
    assert.are.equal("Sw<3,3,3> o 200 o (8):(64)",
      tostring(cute.slice({ cute._, 8 }, cute.parse("Sw<3,3,3> o 192 o (8,64):(64,1)"))))
  end)

  it("local_tile and local_partition fold their offsets into the composed offset", function()
    local C = cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)")
    local T = cute.local_tile(C, { 4, 16 }, { 1, 2 })
    assert.is_true(cute.is_composed(T))
    for i = 0, 3 do
      for j = 0, 15 do assert.are.equal(C({ 4 + i, 32 + j }), T({ i, j })) end
    end
    local P = cute.local_partition(C, cute.make_layout({ 2, 8 }, { 8, 1 }), 5)
    assert.is_true(cute.is_composed(P))
    -- thread 5 of a (2,8):(8,1) thread layout is at (0,5): elements (2a, 5 + 8b)
    for a = 0, 3 do
      for b = 0, 7 do assert.are.equal(C({ 2 * a, 5 + 8 * b }), P({ a, b })) end
    end
  end)

  it("tile_to_shape of an atom covers the shape: a bijection onto [0, size) whose first block is the atom", function()
    local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, f16)
    local R = cute.tile_to_shape(atom, { 128, 64, 3 }, { 1, 2, 3 })
    assert.is_true(cute.is_composed(R))
    assert.are.equal(128 * 64 * 3, cute.size(R))
    local shp = cute.shape(R)
    assert.are.same({ 128, 64, 3 }, { cute.size(shp[1]), cute.size(shp[2]), cute.size(shp[3]) })
    local seen, n = {}, 128 * 64 * 3
    for i = 0, n - 1 do
      local x = R(i)
      assert.is_true(x >= 0 and x < n and not seen[x], "not a bijection at " .. i)
      seen[x] = true
    end
    for r = 0, 7 do
      for c = 0, 63 do assert.are.equal(atom({ r, c }), R({ r, c, 0 })) end
    end
    -- stage k starts at k * 8192 elements, each 8x64 block 512 apart down the rows
    assert.are.equal(8192 + 512 + atom({ 1, 5 }), R({ 9, 5, 1 }))
  end)

  it("max_common_vector / max_common_layout stop at the swizzle's base 2^M, as CuTe's", function()
    local plain = cute.make_layout({ 8, 64 }, { 64, 1 })
    local sw = cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)")
    assert.are.equal(512, cute.max_common_vector(plain, plain))
    assert.are.equal(8, cute.max_common_vector(sw, plain))
    assert.are.equal(8, cute.max_common_vector(plain, sw))
    assert.are.equal(2, cute.max_common_vector(cute.parse("Sw<3,1,3> o 0 o (8,64):(64,1)"), plain))
    -- two operands on the same swizzle: it cancels; different swizzles: the smaller base
    assert.are.equal(512, cute.max_common_vector(sw, sw))
    assert.are.equal(2, cute.max_common_vector(sw, cute.parse("Sw<2,1,4> o 0 o (8,64):(64,1)")))
    -- the common layout (domain indices 0, 8, 16, ... hold offsets 0, 1, 2, ...) cut to 8 elements
    assert.are.equal("(64,8):(8,1)", tostring(cute.max_common_layout(plain, plain)))
    assert.are.equal("8:8", tostring(cute.max_common_layout(sw, plain)))
  end)

  it("complement is the inner layout's, as CuTe's", function()
    for _, C in ipairs(cases) do
      assert.are.equal(cute.complement(cute.inner_layout(C)), cute.complement(C))
      assert.are.equal(cute.complement(cute.inner_layout(C), 4096), cute.complement(C, 4096))
    end
    assert.are.equal("2:64", tostring(cute.complement(cute.parse("Sw<3,3,3> o 0 o (4,16):(16,1)"), 128)))
  end)

  it("ops with no meaning for a swizzle are errors naming the op and the value, at the user's line", function()
    local C = cute.parse("Sw<3,3,3> o 0 o (8,64):(64,1)")
    local L = cute.make_layout({ 8, 64 }, { 64, 1 })
    expect_error(function() local _r = cute.right_inverse(C) end, "right_inverse", "L' o Sw")
    expect_error(function() local _r = cute.left_inverse(C) end, "left_inverse", "composed layout")
    expect_error(function() local _r = cute.composition(L, C) end, "composition", "after a swizzle")
    expect_error(function() local _r = cute.stride(C) end, "stride", "composed layout", "Sw<3,3,3> o 0 o (8,64):(64,1)")
    expect_error(function() local _r = cute.idx2crd(5, C) end, "idx2crd")
    expect_error(function() local _r = cute.logical_product(L, C) end, "logical_product", "argument 2", "swizzled tiler")
    expect_error(function() local _r = cute.raked_product(L, C) end, "raked_product", "cute.inner_layout")
    expect_error(function() local _r = cute.append(L, C) end, "append", "only the layout operand")
    expect_error(function() local _r = cute.composition(L, cute.make_swizzle(3, 3, 3)) end, "composition",
      "argument 2 is a swizzle")
    expect_error(function() local _r = cute.size(cute.make_swizzle(3, 3, 3)) end, "size", "a swizzle has no shape")
    expect_error(function() local _r = cute.logical_divide(L, { C }) end, "logical_divide", "cannot be used inside a tuple")
    expect_error(function() local _r = cute.inner_layout(L) end, "cute.inner_layout", "(8,64):(64,1)")
  end)
end)

describe("shared-memory layout atoms", function()
  local kinds = { "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128", "K_INTER", "K_SW32", "K_SW64", "K_SW128" }
  local rowbits = { INTER = 128, SW32 = 256, SW64 = 512, SW128 = 1024 }
  local Bof = { INTER = 0, SW32 = 1, SW64 = 2, SW128 = 3 }

  it("match their definition in bits: 8 rows of R bits under Swizzle<B,4,3> on byte offsets", function()
    for _, k in ipairs(kinds) do
      local major, sw = k:match("^(%a+)_(%w+)$")
      local R, B = rowbits[sw], Bof[sw]
      for _, d in ipairs({ { u8, 8 }, { f16, 16 }, { f32, 32 }, { f64, 64 } }) do
        local A = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind[k], d[1])
        local w = d[2]
        local n = R / w
        assert.are.equal(8 * n, cute.size(A))
        for row = 0, 7 do
          for e = 0, n - 1 do
            local crd = major == "K" and { row, e } or { e, row }
            local byte = (row * R + e * w) / 8
            assert.are.equal(ref_swizzle(B, 4, 3, byte), A(crd) * w / 8, ("%s %d-bit at (%d,%d)"):format(k, w, crd[1], crd[2]))
          end
        end
      end
    end
  end)

  it("print as CuTe's GMMA atoms in elements", function()
    local K = cute.SmemLayoutAtomKind
    assert.are.equal("Sw<3,3,3> o 0 o (8,64):(64,1)", tostring(cute.make_smem_layout_atom(K.K_SW128, f16)))
    assert.are.equal("Sw<2,3,3> o 0 o (8,32):(32,1)", tostring(cute.make_smem_layout_atom(K.K_SW64, f16)))
    assert.are.equal("Sw<1,3,3> o 0 o (8,16):(16,1)", tostring(cute.make_smem_layout_atom(K.K_SW32, f16)))
    assert.are.equal("Sw<0,3,3> o 0 o (8,8):(8,1)", tostring(cute.make_smem_layout_atom(K.K_INTER, f16)))
    assert.are.equal("Sw<3,2,3> o 0 o (32,8):(1,32)", tostring(cute.make_smem_layout_atom(K.MN_SW128, f32)))
    assert.are.equal("Sw<3,4,3> o 0 o (128,8):(1,128)", tostring(cute.make_smem_layout_atom(K.MN_SW128, u8)))
  end)

  it("reject unknown kinds and dtypes at the user's line", function()
    expect_error(function() local _r = cute.make_smem_layout_atom("K_SW256", f16) end,
      "cute.make_smem_layout_atom", "K_SW256", "K_SW128")
    expect_error(function() local _r = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW64, "half") end,
      "cute.make_smem_layout_atom", "half")
  end)
end)

describe("shared-memory tensors on swizzled layouts", function()
  local spec = cute.tensor_spec({ 4096 }, f16)
  local atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, f16)

  -- the byte offsets of the ld/st.shared [cute_dyn_smem+N] accesses, in order
  local function smem_offsets(ptx)
    local t = {}
    for l in ptx:gmatch("[^\n]+") do
      if l:find("shared", 1, true) and l:find("cute_dyn_smem", 1, true) and (l:find("ld%.") or l:find("st%.")) then
        t[#t + 1] = tonumber(l:match("cute_dyn_smem%+(%d+)%]") or (l:find("cute_dyn_smem]", 1, true) and 0))
      end
    end
    return t
  end

  it("constant coordinates address base + 2 * Sw(off + L(crd)), through slices, tiles and partitions", function()
    local L2 = cute.tile_to_shape(atom, { 64, 64 }, { 1, 2 })
    local crds = { { 3, 17 }, { 9, 40 }, { 63, 63 }, { 17, 5 } }
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s = cute.make_dynamic_shared_tensor(L2, f16)
      for _, c in ipairs(crds) do s[c] = A[t] end
      local row = s[{ 10, cute._ }]                          -- a slice: offset 10 * 64 folded in
      row[33] = A[t]
      local tile = cute.local_tile(s, { 16, 32 }, { 2, 1 }) -- rows 32.., columns 32..
      tile[{ 5, 7 }] = A[t]
    end)
    local want = {}
    for i, c in ipairs(crds) do want[i] = 2 * L2(c) end
    want[#want + 1] = 2 * L2({ 10, 33 })
    want[#want + 1] = 2 * L2({ 37, 39 })
    local r = k:compile(spec)
    assert.are.same(want, smem_offsets(r.ptx))
    -- the swizzle does move these elements (the test would not see a missing xor otherwise)
    assert.are_not.equal(2 * cute.inner_layout(L2)({ 9, 40 }), want[2])
    assert.are.equal(1024, tonumber(r.ptx:match("%.align (%d+) %.b8 cute_dyn_smem")))
  end)

  it("a second region is swizzled from its own start; a static shared tensor too", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local pad = cute.make_dynamic_shared_tensor(cute.make_layout(3), f32) -- bytes 0..11
      pad[0] = 1
      local s = cute.make_dynamic_shared_tensor(atom, f16)              -- 1024-aligned
      s[{ 2, 9 }] = A[t]
    end)
    local r = k:compile(spec)
    assert.are.same({ 0, 1024 + 2 * atom({ 2, 9 }) }, smem_offsets(r.ptx))
    local k2 = cute.kernel(function(A)
      local s = cute.make_shared_tensor(atom, f16)
      s[{ 5, 12 }] = A[0]
    end)
    local ir = k2:ir(spec)
    assert.is_true(has(ir, "gep ptr.shared.f16 %") and has(ir, ", " .. atom({ 5, 12 }) .. ":i32"), ir)
    assert.is_true(has(ir, "align=1024"), ir)
  end)

  it("traced coordinates compute the swizzle with and / shr / xor in the IR and the PTX", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s = cute.make_dynamic_shared_tensor(atom, f16)
      s[t] = A[t]
      cute.arch.sync_threads()
      A[t] = s[cute.rem(t + 1, 512)]
    end)
    local ir = k:ir(spec)
    -- Sw<3,3,3>: yyy mask 0b111 << 6 = 448, shifted down by 3
    assert.is_true(has(ir, "and i32") and has(ir, "448:i32"), ir)
    assert.is_true(has(ir, "shr i32") and has(ir, "xor i32"), ir)
    local r = k:compile(spec)
    assert.is_true(r.ptx:find("xor%.b32") ~= nil, r.ptx)
  end)

  it("copies do not vectorise across a swizzle row: 2^M elements at most, and only at aligned offsets", function()
    -- the loads of cute.copy(row 3 of the smem tensor -> a 64-element fragment), by IR type
    local function copy_loads(layout)
      local k = cute.kernel(function(A)
        local s = cute.make_dynamic_shared_tensor(layout, f16)
        local f = cute.make_fragment(cute.make_layout(64), f16)
        cute.copy(s[{ 3, cute._ }], f)
        A[0] = f[5]
      end)
      local n = {}
      for ty in k:ir(spec):gmatch("= load (%S+) %%%d+ align") do n[ty] = (n[ty] or 0) + 1 end
      return n
    end
    -- plain and Sw<3,3,3> (rows of 8 halves): 16-byte vectors
    assert.are.equal(8, copy_loads(cute.make_layout({ 8, 64 }, { 64, 1 })).f16x8)
    assert.are.equal(8, copy_loads(atom).f16x8)
    -- Sw<3,1,3>: 2 halves per swizzle row: 4-byte vectors only
    local n2 = copy_loads(cute.parse("Sw<3,1,3> o 0 o (8,64):(64,1)"))
    assert.are.equal(32, n2.f16x2)
    assert.is_nil(n2.f16x8)
    assert.is_nil(n2.f16x4)
    -- an odd composed offset: single elements only
    local n1 = copy_loads(cute.parse("Sw<3,3,3> o 1 o (8,64):(64,1)"))
    assert.are.equal(65, n1.f16)
    assert.is_nil(n1.f16x2)
  end)

  it("cute.make_tensor(tensor or pointer, composed layout) swizzles from that element", function()
    local k = cute.kernel(function(A)
      local s = cute.make_dynamic_shared_tensor(cute.make_layout(1024), f16)
      local v = cute.make_tensor(s, atom)
      v[{ 3, 17 }] = A[0]
      local w = cute.make_tensor(s:ptr_at(512), atom)
      w[{ 3, 17 }] = A[1]
      local x = cute.make_tensor(w, cute.make_layout(128))
      x[100] = A[2]   -- Sw<3,3,3>(100) = 108; a plain layout over a swizzled tensor keeps its swizzle (CuTe DSL's swizzled pointer)
    end)
    assert.are.same({ 2 * atom({ 3, 17 }), 1024 + 2 * atom({ 3, 17 }), 1024 + 2 * 108 },
      smem_offsets(k:compile(spec).ptx))
    local k2 = cute.kernel(function(A)
      local s = cute.make_dynamic_shared_tensor(atom, f16)
      cute.make_tensor(s, atom)
    end)
    local e = util.err_of(function() return k2:ir(spec) end)
    assert.is_true(has(e, "already swizzled"), e)
  end)

  it("a swizzled tensor and its views print with the swizzle", function()
    local got = {}
    local k = cute.kernel(function(A)
      local s = cute.make_dynamic_shared_tensor(atom, f16)
      got[1] = tostring(s)
      got[2] = tostring(cute.local_tile(s, { 4, 16 }, { 1, 2 }))
      got[3] = tostring(cute.make_fragment_like(s))
    end)
    k:ir(spec)
    assert.are.equal("tensor<f16, shared, Sw<3,3,3> o (8,64):(64,1)>", got[1])
    assert.are.equal("tensor<f16, shared, Sw<3,3,3> o (4,16):(64,1)>", got[2])
    assert.are.equal("tensor<f16, local, (8,64):(1,8)>", got[3])
  end)

  it("a bad alignment or a negative composed offset is an error; the swizzled region is whole swizzle blocks", function()
    local k = cute.kernel(function(A) cute.make_dynamic_shared_tensor(atom, f16, 24) end)
    local e = util.err_of(function() return k:ir(spec) end)
    assert.is_true(has(e, "alignment 24"), e)
    local k2 = cute.kernel(function(A) cute.make_dynamic_shared_tensor(cute.parse("Sw<3,3,3> o -8 o (8,64):(64,1)"), f16) end)
    e = util.err_of(function() return k2:ir(spec) end)
    assert.is_true(has(e, "composed offset -8"), e)
    -- (8,16):(64,1) reaches 464 elements: under Sw<3,3,3> (blocks of 512 halves) one whole block;
    -- at offset 520, 984 elements: two blocks
    local k3 = cute.kernel(function(A)
      local s1 = cute.make_dynamic_shared_tensor(cute.parse("Sw<3,3,3> o 0 o (8,16):(64,1)"), f16)
      s1[0] = A[0]
      local s2 = cute.make_dynamic_shared_tensor(cute.parse("Sw<3,3,3> o 520 o (8,16):(64,1)"), f16)
      s2[0] = A[0]
    end)
    assert.is_true(has(k3:ir(spec), "dynsmem=" .. (1024 + 2 * 1024)), k3:ir(spec))
  end)

  it("a register tensor cannot be swizzled", function()
    local k = cute.kernel(function(A) cute.make_fragment(atom, f16) end)
    local e = util.err_of(function() return k:ir(spec) end)
    assert.is_true(has(e, "cute.make_fragment") and has(e, "Sw<3,3,3>"), e)
  end)

  -- every thread writes elements t, t + 256, ... of a 64x64 16-bit tile through
  -- the swizzled layout (traced coordinates), then reads the raw shared memory
  -- back unswizzled: raw[x] must hold the value of the element C maps to x
  local L2 = cute.tile_to_shape(atom, { 64, 64 }, { 1, 2 })
  local N = 64 * 64
  local round_trip = cute.kernel(function(A, Out)
    local t = cute.arch.thread_idx()
    local s = cute.make_dynamic_shared_tensor(L2, i16)
    for j = 0, idiv(N, 256) - 1 do
      local i = t + 256 * j
      s[{ cute.rem(i, 64), cute.div(i, 64) }] = A[i]
    end
    cute.arch.sync_threads()
    local raw = cute.make_tensor(s:ptr_at({ 0, 0 }), cute.make_layout(N))
    for j = 0, idiv(N, 256) - 1 do Out[t + 256 * j] = raw[t + 256 * j] end
  end)
  local ispec = cute.tensor_spec({ N }, i16)

  it("the round-trip kernel assembles for sm_80 and sm_90a with no spills, the swizzle's xor in its PTX", function()
    local PTXAS = require("cute.ffi").C.cute_ptxas_path() ~= nil
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = round_trip:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(ispec, ispec)
      assert.is_true(r.ptx:find("xor%.b32") ~= nil, r.ptx)
      assert.is_true(r.ptx:find("st%.shared%.b16") ~= nil or r.ptx:find("st%.shared%.u16") ~= nil, r.ptx)
      if PTXAS then
        assert.truthy(r.cubin, arch)
        assert.are.equal(0, r.info.spill_stores, arch)
        assert.are.equal(0, r.info.spill_loads, arch)
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  gpu_it("writes through the swizzle land where the CPU's composed layout puts them", function()
    local vals = {}
    for i = 1, N do vals[i] = (i * 7919) % 30011 - 15000 end
    local dA = cute.from_host(vals, i16, { N })
    local dO = cute.zeros({ N }, i16)
    round_trip:launch{ grid = 1, block = 256 }(dA, dO)
    local got = dO:to_host()
    local bad, first = 0, nil
    for i = 0, N - 1 do
      local x = L2({ i % 64, idiv(i, 64) })
      if got[x] ~= vals[i + 1] then
        bad = bad + 1
        first = first or ("element %d (smem %d): got %s, want %d"):format(i, x, tostring(got[x]), vals[i + 1])
      end
    end
    assert.are.equal(0, bad, tostring(first))
    -- and the swizzle did move elements (a missing xor would fail above)
    local moved = 0
    for i = 0, N - 1 do if L2({ i % 64, idiv(i, 64) }) ~= cute.inner_layout(L2)({ i % 64, idiv(i, 64) }) then moved = moved + 1 end end
    assert.is_true(moved > N / 2)
  end)

  -- a 32 x 32 x 64 GEMM (four warps, f16 m16n8k16) with A and B staged in shared
  -- memory on K_SW128 layouts (tile_to_shape of the atom): the tiled MMA's
  -- partitions of the swizzled tensors keep the swizzle
  local tg = dofile("spec/support/tiled_gemm.lua")
  local tm = tg.tiled_mma(f16, 16, { 2, 2, 1 })
  local GM, GN, GK = 32, 32, 64
  local sLA = cute.tile_to_shape(atom, { GM, GK }, { 1, 2 })
  local sLB = cute.tile_to_shape(atom, { GN, GK }, { 1, 2 })
  local gemm = cute.kernel(function(A, B, Cm)
    local tid = cute.arch.thread_idx()
    local sA = cute.make_dynamic_shared_tensor(sLA, f16)
    local sB = cute.make_dynamic_shared_tensor(sLB, f16)
    for i = 0, GM * GK / tm.size - 1 do
      local e = tid + i * tm.size
      sA[{ cute.div(e, GK), cute.rem(e, GK) }] = A[{ cute.div(e, GK), cute.rem(e, GK) }]
    end
    for i = 0, GN * GK / tm.size - 1 do
      local e = tid + i * tm.size
      sB[{ cute.div(e, GK), cute.rem(e, GK) }] = B[{ cute.div(e, GK), cute.rem(e, GK) }]
    end
    cute.arch.sync_threads()
    local thr = tm:get_slice(tid)
    local tCsA, tCsB, tCgC = thr:partition_A(sA), thr:partition_B(sB), thr:partition_C(Cm)
    local tCrA, tCrB = thr:make_fragment_A(tCsA), thr:make_fragment_B(tCsB)
    local tCrC = thr:make_fragment_C(tCgC)
    cute.copy(tCsA, tCrA)
    cute.copy(tCsB, tCrB)
    tCrC:fill(0)
    cute.gemm(tm, tCrC, tCrA, tCrB, tCrC)
    cute.copy(tCrC, tCgC)
  end, { name = "swizzled_smem_gemm" })
  local gspecs = { cute.tensor_spec({ GM, GK }, f16), cute.tensor_spec({ GN, GK }, f16), cute.tensor_spec({ GM, GN }, f32) }

  it("a tiled-MMA GEMM from swizzled shared memory assembles (sm_80, sm_90a), no spills, xor and mma in its PTX", function()
    local PTXAS = require("cute.ffi").C.cute_ptxas_path() ~= nil
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = gemm:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(gspecs[1], gspecs[2], gspecs[3])
      assert.is_true(has(r.ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), r.ptx)
      assert.is_true(r.ptx:find("xor%.b32") ~= nil, r.ptx)
      if PTXAS then
        assert.are.equal(0, r.info.spill_stores, arch)
        assert.are.equal(0, r.info.spill_loads, arch)
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  gpu_it("the GEMM from swizzled shared memory matches the CPU reference", function()
    local function ints(n)
      local r = util.rand_floats(n, -4, 5)
      local t, o = {}, {}
      for i = 0, n - 1 do t[i] = math.floor(r[i]); o[i + 1] = t[i] end
      return t, o
    end
    local A, A1 = ints(GM * GK)
    local B, B1 = ints(GN * GK)
    local dA, dB = cute.from_host(A1, f16, { GM, GK }), cute.from_host(B1, f16, { GN, GK })
    local dC = cute.zeros({ GM, GN }, f32)
    gemm:launch{ grid = 1, block = tm.size }(dA, dB, dC)
    local got, want = dC:to_host(), tg.reference(A, B, nil, GM, GN, GK)
    for i = 0, GM * GN - 1 do assert.are.equal(want[i], got[i], "C element " .. i) end
    for _, t in ipairs({ dA, dB, dC }) do t:free() end
  end)

  -- TiledCopy partitions of a swizzled tile: 128-bit cp.async global -> shared
  -- (K_SW64: 8-element rows of the swizzle, exactly one copy each), then 128-bit
  -- copies shared -> global; the output must be the input
  local function tiled_copy(op)
    return cute.make_tiled_copy_tv(cute.make_copy_atom(op, f16, { num_bits_per_copy = 128 }),
      cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }, { 8, 1 }))
  end
  local g2s_op = cute.nvgpu.cpasync.CopyG2SOp { cache_mode = cute.nvgpu.cpasync.LoadCacheMode.GLOBAL }
  local sw64 = cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW64, f16), { 64, 32 }, { 1, 2 })
  local cp_round_trip = cute.kernel(function(A, B)
    local t = cute.arch.thread_idx()
    local sA = cute.make_dynamic_shared_tensor(sw64, f16)
    local g2s = tiled_copy(g2s_op)
    local thr = g2s:get_slice(t)
    cute.copy(g2s, thr:partition_S(A), thr:partition_D(sA))
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()
    local s2g = tiled_copy(cute.nvgpu.CopyUniversalOp())
    local thr2 = s2g:get_slice(t)
    cute.copy(s2g, thr2:partition_S(sA), thr2:partition_D(B))
  end, { name = "swizzled_cp_async" })
  local cspec = cute.tensor_spec({ 64, 32 }, f16)

  it("TiledCopy partitions of a swizzled tile: 128-bit cp.async in, 128-bit loads out, the xor in between", function()
    local PTXAS = require("cute.ffi").C.cute_ptxas_path() ~= nil
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = cp_round_trip:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(cspec, cspec)
      local _, n = r.ptx:gsub("cp%.async%.cg%.shared%.global %[[^%]]+%], %[[^%]]+%], 16;", "")
      assert.are.equal(2, n, r.ptx)
      local _, v = r.ptx:gsub("ld%.shared%.v4%.[ub]32", "")
      assert.are.equal(2, v, r.ptx)
      assert.is_true(r.ptx:find("xor%.b32") ~= nil, r.ptx)
      if PTXAS then assert.truthy(r.cubin, arch) end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  gpu_it("a tile copied in through the swizzle with cp.async and out with 128-bit copies comes back unchanged", function()
    local vals = {}
    for i = 1, 64 * 32 do vals[i] = (i * 37) % 2003 - 1000 end
    local dA, dB = cute.from_host(vals, f16, { 64, 32 }), cute.zeros({ 64, 32 }, f16)
    cp_round_trip:launch{ grid = 1, block = 128 }(dA, dB)
    local a, b = dA:to_host(), dB:to_host()
    for i = 0, 64 * 32 - 1 do assert.are.equal(a[i], b[i], "element " .. i) end
    for _, t in ipairs({ dA, dB }) do t:free() end
  end)

  -- one warp: A (16x16) and B (16x8) staged in swizzled shared memory (A on
  -- the K_SW32 atom tiled to 16x16, B on Sw<1,3,3> o 0 o (16,8):(8,1)), then
  -- ldmatrix.x4 / ldmatrix.x2.trans from row pointers T:ptr_at(...), which
  -- apply the swizzle (each 8-element row stays 16 contiguous bytes), and one
  -- mma.sync m16n8k16: D = A B
  local sLA16 = cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW32, f16), { 16, 16 }, { 1, 2 })
  local sLB16 = cute.parse("Sw<1,3,3> o 0 o (16,8):(8,1)")
  local ldsm_mma = cute.kernel(function(A, B, D)
    local lane = cute.arch.lane_idx()
    local sA = cute.make_shared_tensor(sLA16, f16)
    local sB = cute.make_shared_tensor(sLB16, f16)
    for j = 0, 7 do
      local e = lane * 8 + j
      sA[{ cute.div(e, 16), cute.rem(e, 16) }] = A[{ cute.div(e, 16), cute.rem(e, 16) }]
    end
    for j = 0, 3 do
      local e = lane * 4 + j
      sB[{ cute.div(e, 8), cute.rem(e, 8) }] = B[{ cute.div(e, 8), cute.rem(e, 8) }]
    end
    cute.arch.sync_threads()
    local r8, m = cute.rem(lane, 8), cute.div(lane, 8)
    local a = cute.arch.ldmatrix(sA:ptr_at({ r8 + 8 * cute.rem(m, 2), 8 * cute.div(m, 2) }), { num_matrices = 4 })
    local b = cute.arch.ldmatrix(sB:ptr_at({ cute.rem(lane, 16), 0 }), { num_matrices = 2, transpose = true })
    local d = cute.arch.make_fragment_regs(f32, 4)
    local mma = cute.arch.mma_sync{ shape = "m16n8k16", a_type = f16, b_type = f16, c_type = f32, d_type = f32 }
    mma(d, a, b, d)
    local g, t = cute.div(lane, 4), cute.rem(lane, 4)
    for i = 0, 3 do D[{ g + 8 * idiv(i, 2), 2 * t + i % 2 }] = d[i] end
  end, { name = "swizzled_ldmatrix_mma" })
  local lspecs = { cute.tensor_spec({ 16, 16 }, f16), cute.tensor_spec({ 16, 8 }, f16), cute.tensor_spec({ 16, 8 }, f32) }

  it("ldmatrix from swizzled shared memory: the row pointers carry the swizzle; assembles for sm_80 and sm_90a", function()
    assert.are.equal("Sw<1,3,3> o 0 o ((8,2),(16,1)):((16,128),(1,0))", tostring(sLA16))
    local PTXAS = require("cute.ffi").C.cute_ptxas_path() ~= nil
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = ldsm_mma:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(lspecs[1], lspecs[2], lspecs[3])
      assert.is_true(has(r.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), r.ptx)
      assert.is_true(has(r.ptx, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"), r.ptx)
      assert.is_true(r.ptx:find("xor%.b32") ~= nil, r.ptx)
      if PTXAS then
        assert.are.equal(0, r.info.spill_stores, arch)
        assert.are.equal(0, r.info.spill_loads, arch)
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  gpu_it("mma.sync on fragments that ldmatrix loads from swizzled shared memory matches the CPU reference", function()
    local r = util.rand_floats(16 * 16 + 16 * 8)
    local A, B = {}, {}
    for i = 1, 256 do A[i] = math.floor(r[i - 1] * 16) / 8 end
    for i = 1, 128 do B[i] = math.floor(r[255 + i] * 16) / 8 end
    local dA, dB, dD = cute.from_host(A, f16, { 16, 16 }), cute.from_host(B, f16, { 16, 8 }), cute.zeros({ 16, 8 }, f32)
    ldsm_mma:launch{ grid = 1, block = 32 }(dA, dB, dD)
    local got = dD:to_host()
    for m = 0, 15 do
      for n = 0, 7 do
        local want = 0
        for k = 0, 15 do want = want + A[m * 16 + k + 1] * B[k * 8 + n + 1] end
        assert.are.equal(want, got[m * 8 + n], ("D[%d][%d]"):format(m, n))
      end
    end
    for _, t in ipairs({ dA, dB, dD }) do t:free() end
  end)
end)
