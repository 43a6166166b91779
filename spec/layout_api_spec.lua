-- The Lua layout API: constructors, notation, calls, equality, printing, errors.
local cute = require("cute")

describe("cute.make_layout", function()
  it("builds compact column-major layouts by default", function()
    assert.are.equal("(4,(2,3)):(1,(4,8))", tostring(cute.make_layout({ 4, { 2, 3 } })))
    assert.are.equal("8:1", tostring(cute.make_layout(8)))
    assert.are.equal("(8):(1)", tostring(cute.make_layout({ 8 })))
  end)
  it("takes explicit strides, including zero and negative", function()
    local L = cute.make_layout({ 4, 2 }, { 2, 1 })
    assert.are.equal("(4,2):(2,1)", tostring(L))
    assert.are.equal("(4,2):(0,-1)", tostring(cute.make_layout({ 4, 2 }, { 0, -1 })))
  end)
  it("row-major, ordered and identity layouts", function()
    assert.are.equal("(4,2):(2,1)", tostring(cute.make_layout_right({ 4, 2 })))
    assert.are.equal("(4,2):(1,4)", tostring(cute.make_layout_left({ 4, 2 })))
    assert.are.equal("(4,2,3):(2,1,8)", tostring(cute.make_ordered_layout({ 4, 2, 3 }, { 1, 0, 2 })))
  end)
end)

describe("layout objects", function()
  local L = cute.make_layout({ 4, { 2, 3 } })
  it("are callable with an index, flat coordinates, or a hierarchical coordinate", function()
    assert.are.equal(5, L(5))
    assert.are.equal(1 + 4 * 1, L(1, 1))
    assert.are.equal(1 + 4 * 1 + 8 * 2, L({ 1, { 1, 2 } }))
    local R = cute.make_layout({ 4, 8 }, { 8, 1 })
    assert.are.equal(3 * 8 + 5, R({ 3, 5 }))
    assert.are.equal(3 * 8 + 5, R(3, 5))
  end)
  it("compare with == by value", function()
    assert.is_true(L == cute.make_layout({ 4, { 2, 3 } }, { 1, { 4, 8 } }))
    assert.is_false(L == cute.make_layout({ 4, 6 }))
    assert.is_false(L == nil)
  end)
  it("have methods mirroring the free functions", function()
    assert.are.equal(24, L:size())
    assert.are.same({ 4, { 2, 3 } }, L:shape())
    assert.are.same({ 1, { 4, 8 } }, L:stride())
    assert.are.equal(2, L:rank())
    assert.are.equal(2, L:depth())
    assert.are.equal("(2,3):(4,8)", tostring(L:get(1)))
  end)
end)

describe("cute.parse and cute.tostring", function()
  it("round-trip every kind of value", function()
    for _, s in ipairs({ "8", "(2,(3,4))", "(8)", "()", "8:1", "(4,2):(1,4)",
      "((2,2),3):((1,4),8)", "(8):(1)", "():()", "_", "(4:2,_,(2,2):(1,4))",
      "Sw<3,4,3> o 0 o (8,64):(64,1)", "(2,_,3)", "-3" }) do
      assert.are.equal(s, cute.tostring(cute.parse(s)))
    end
  end)
  it("returns the matching Lua values", function()
    assert.are.equal(8, cute.parse("8"))
    assert.are.same({ 2, { 3, 4 } }, cute.parse("(2,(3,4))"))
    assert.are.equal(cute._, cute.parse("_"))
    local t = cute.parse("(4:2,_,8)")
    assert.is_true(cute.is_layout(t[1]))
    assert.are.equal(cute._, t[2])
    assert.are.equal(8, t[3])
  end)
  it("accepts spaces", function()
    assert.are.equal("(4,2):(1,4)", tostring(cute.parse(" ( 4 , 2 ) : ( 1 , 4 ) ")))
  end)
end)

describe("swizzles and composed layouts", function()
  it("swizzle applies x ^ ((x & mask) >> S)", function()
    local sw = cute.make_swizzle(3, 4, 3)
    for x = 0, 1023, 37 do
      local mask = 7 * 2 ^ 7 -- bits [M+S, M+S+B)
      local y = bit.bxor(x, bit.rshift(bit.band(x, mask), 3))
      assert.are.equal(y, sw(x))
    end
  end)
  it("composed layouts are callable", function()
    local C = cute.make_composed_layout(cute.make_swizzle(2, 0, 2), 0, cute.make_layout({ 4, 4 }, { 4, 1 }))
    local seen = {}
    for i = 0, 3 do for j = 0, 3 do
      local v = C({ i, j })
      assert.is_nil(seen[v]); seen[v] = true
    end end
    assert.are.equal("Sw<2,0,2> o 0 o (4,4):(4,1)", tostring(C))
  end)
end)

describe("cute.print_layout", function()
  it("prints CuTe's 2-D table", function()
    local s = cute.format_layout(cute.make_layout({ 2, 3 }, { 3, 1 }))
    local lines = {}
    for l in s:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("(2,3):(3,1)", lines[1])
    assert.is_truthy(lines[2]:match("^%s+0%s+1%s+2%s*$"))
    assert.is_truthy(lines[3]:match("^%s+%+%-+%+%-+%+%-+%+$"))
    assert.is_truthy(lines[4]:match("^%s*0%s+|%s+0%s+|%s+1%s+|%s+2%s+|$"))
    assert.is_truthy(lines[6]:match("^%s*1%s+|%s+3%s+|%s+4%s+|%s+5%s+|$"))
    assert.are.equal(7, #lines)
  end)
  it("rejects layouts that are not rank 2", function()
    assert.has_error(function() cute.print_layout(cute.make_layout(8)) end,
      "cute.print_layout: layout 8:1 has rank 1; print_layout needs rank 2")
  end)
end)

describe("the extras CuTe users reach for next", function()
  local P = cute.parse
  local function eq(want, got) assert.are.equal(want, cute.tostring(got)) end
  it("append, prepend (with padding), group, flatten, select", function()
    eq("(8,4):(1,2)", cute.append(P("8:1"), P("4:2")))
    eq("(4,8):(2,1)", cute.prepend(P("8:1"), P("4:2")))
    eq("(8,2,1,1):(1,8,0,0)", cute.append(P("(8,2):(1,8)"), P("1:0"), 4))
    eq("(2,(3,4),5):(1,(2,6),24)", cute.group(P("(2,3,4,5):(1,2,6,24)"), 1, 3))
    eq("(2,3,4,5):(1,2,6,24)", cute.flatten(P("((2,3),(4,5)):((1,2),(6,24))")))
    eq("(2,4):(1,6)", cute.select(P("(2,3,4):(1,2,6)"), { 0, 2 }))
  end)
  it("max_common_layout and max_common_vector", function()
    assert.are.equal(32, cute.max_common_vector(P("(8,4):(1,8)"), P("(8,4):(1,8)")))
    assert.are.equal(1, cute.max_common_vector(P("(8,4):(1,8)"), P("(8,4):(4,1)")))
    eq("32:1", cute.max_common_layout(P("(8,4):(1,8)"), P("(4,8):(1,4)")))
  end)
  it("congruent, compatible, weakly_congruent", function()
    assert.is_true(cute.congruent({ 2, 3 }, { 4, 5 }))
    assert.is_false(cute.congruent({ 2, { 3, 4 } }, { 2, 3 }))
    assert.is_true(cute.weakly_congruent(2, { 3, 4 }))
    assert.is_true(cute.compatible(12, { 3, 4 }))
    assert.is_false(cute.compatible({ 3, 4 }, 12))
  end)
  it("tile_to_shape, make_identity_layout, local_tile, local_partition", function()
    eq("((2,2),(2,3)):((1,4),(2,8))", cute.tile_to_shape(P("(2,2):(1,2)"), { 4, 6 }))
    eq("(4,3):(1,4)", cute.make_identity_layout({ 4, 3 }))
    eq("(4,2):(1,8)", cute.local_tile(P("(8,6):(1,8)"), { 4, 2 }, { 1, 2 }))
    -- thread 5 of a (2,4):(4,1) thread layout sits at (1,1): it owns rows 1,3,5,7 x cols 1,5
    local part = cute.local_partition(P("(8,8):(1,8)"), P("(2,4):(4,1)"), 5)
    eq("(4,2):(2,32)", part)
  end)
end)

describe("cute.dice (CuTe DSL's dice(src, dicer): keep the modes paired with an integer)", function()
  local P = cute.parse
  local _ = cute._
  it("on tuples: the modes paired with an integer, nested modes flattened into the result (as CuTe)", function()
    assert.are.same({ 8 }, cute.dice({ 4, 8, 16 }, { _, 3, _ }))
    assert.are.same({ 4, 16 }, cute.dice({ 4, 8, 16 }, { 0, _, 2 }))
    assert.are.same({ 4, 3 }, cute.dice({ 4, { 2, 3 }, 5 }, { 1, { _, 2 }, _ }))
    assert.are.same({ 4, { 2, 3 } }, cute.dice({ 4, { 2, 3 }, 5 }, { 1, 0, _ }))
    assert.are.same({}, cute.dice({ 4, 8 }, { _, _ }))
    assert.are.equal(7, cute.dice(7, 2))           -- dice(int, b) == b
    assert.are.same({ 4, 8 }, cute.dice({ 4, 8 }, 0))
    assert.are.same({}, cute.dice(7, _))
  end)
  it("is the complement of slice: slice keeps the '_' modes, dice the others", function()
    local shape, crd = { 4, { 2, 3 }, 5 }, { _, { 1, _ }, 2 }
    assert.are.same({ 4, 3 }, cute.slice(crd, shape))
    assert.are.same({ 2, 5 }, cute.dice(shape, crd))
  end)
  it("on layouts: dice of the shape and of the stride", function()
    assert.are.equal("(32,8):(1,512)", cute.tostring(cute.dice(P("(32,16,8):(1,32,512)"), { 1, _, 1 })))
    assert.are.equal("(2,8):(4,16)", cute.tostring(cute.dice(P("((4,2),8):((1,4),16)"), { { _, 0 }, 3 })))
    assert.are.equal("(4,2):(2,1)", cute.tostring(cute.dice(P("(4,2):(2,1)"), 5)))
    assert.are.equal("(16):(32)", cute.tostring(cute.dice(P("(32,16,8):(1,32,512)"), { _, 0, _ })))
  end)
  it("a dicer that does not match the profile is an error naming both, at the user's line", function()
    local util = dofile("spec/support/util.lua")
    local ok, e = pcall(cute.dice, { 4, 8, 16 }, { 1, _ }) -- MARK-dice-rank
    assert.is_false(ok)
    assert.is_truthy(util.has(e, "cute.dice"), e)
    assert.is_truthy(util.has(e, "(1,_)") and util.has(e, "(4,8,16)"), e)
    local ok2, e2 = pcall(function()
      local r = cute.dice(P("(4,8):(1,4)"), { 1, "x" }) -- MARK-dice-bad
      return r
    end)
    assert.is_false(ok2)
    assert.is_truthy(util.has(e2, "spec/layout_api_spec.lua:" .. util.line_of("spec/layout_api_spec.lua", "MARK-dice-bad") .. ":"), e2)
    assert.is_truthy(util.has(e2, "x"), e2)
  end)
end)

describe("the op table (names and arities read from the C core)", function()
  local ffi = require("ffi")
  local C = require("cute.ffi").C
  local function arity(k)
    local mn, mx = ffi.new("int[1]"), ffi.new("int[1]")
    assert.are.equal(0, C.cute_op_arity(k, mn, mx))
    return mn[0], mx[0]
  end
  local function err_of(f, ...)
    local ok, e = pcall(f, ...)
    assert.is_false(ok)
    return tostring(e)
  end

  it("every op code has a name, a lookup and an arity; unknown codes have none", function()
    local n = tonumber(C.CUTE_OP_COUNT_)
    assert.is_true(n >= 49, "found " .. n .. " ops")
    for k = 0, n - 1 do
      local name = ffi.string(C.cute_op_name(k))
      assert.are.equal(k, C.cute_op_lookup(name))
      local mn, mx = arity(k)
      assert.is_true(mn >= 1 and mn <= mx and mx <= 4, name .. ": " .. mn .. ".." .. mx)
    end
    for _, k in ipairs({ -1, n, n + 7, 2 ^ 31 - 1 }) do
      assert.are.equal(C.CUTE_E_ARG, C.cute_op_arity(k, nil, nil))
      assert.is_true(C.cute_op_name(k) == nil)
    end
    assert.are.equal(-1, C.cute_op_lookup("no_such_op"))
  end)

  it("cute.<op> accepts exactly the C arity: one argument too many names it", function()
    local L = cute.make_layout({ 4, 2 })
    for k = 0, tonumber(C.CUTE_OP_COUNT_) - 1 do
      local name = ffi.string(C.cute_op_name(k))
      local mn, mx = arity(k)
      local f = cute[name]
      assert.is_function(f, name)
      if mx < 5 and name ~= "slice_and_offset" and not name:find("congruent") and name ~= "compatible" then
        local want = mn == mx and tostring(mn) or (mn .. " to " .. mx)
        local e = err_of(f, L, L, L, L, L)
        assert.is_truthy(e:find("cute." .. name .. ": expected " .. want .. " argument(s), got 5", 1, true), e)
      end
    end
  end)

  it("crd2idx takes (crd, L) as in C, and swizzle takes (Sw, x)", function()
    local L = cute.make_layout({ 4, 2 }, { 2, 1 })
    assert.are.equal(3 * 2 + 1, cute.crd2idx({ 3, 1 }, L))
    assert.are.equal(cute.crd2idx({ 3, 1 }, { 4, 2 }, { 2, 1 }), cute.crd2idx({ 3, 1 }, L))
    local sw = cute.make_swizzle(3, 4, 3)
    for _, x in ipairs({ 0, 1, 127, 1000, 4095 }) do
      assert.are.equal(cute.swizzle(3, 4, 3, x), cute.swizzle(sw, x))
    end
    local e = err_of(cute.crd2idx, 1)
    assert.is_truthy(e:find("cute.crd2idx: expected 2 to 3 argument(s), got 1", 1, true), e)
  end)
end)
