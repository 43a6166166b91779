-- cute.layout: CuTe's layout algebra from Lua, on the C core (src/layout*.c).
--
-- Lua values:
--   integers            Lua numbers
--   IntTuples           nested Lua tables of numbers: {4, {2, 3}}  (cute._ for "_")
--   Layout              cdata `cute_value` (type LAYOUT): callable, tostring, ==
--   ComposedLayout      cdata `cute_value` (type COMPOSED): callable
--   Swizzle             cdata `cute_value` (type SWIZZLE): callable on an offset
--   tiler               a Lua table mixing Layouts, numbers and cute._
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local M = {}

local value_t = ffi.typeof("cute_value")
local value_arr_t = ffi.typeof("cute_value[?]")
local i64_arr_t = ffi.typeof("int64_t[?]")
local istype = ffi.istype
local tonumber, type, select = tonumber, type, select
local HDR = ffi.offsetof("cute_value", "node")
local NODE = ffi.sizeof("cute_node")

local N_INT, N_TUPLE, N_UNDER, N_LAYOUT = C.CUTE_N_INT, C.CUTE_N_TUPLE, C.CUTE_N_UNDER, C.CUTE_N_LAYOUT
local V_INT, V_TUPLE, V_LAYOUT, V_COMPOSED, V_SWIZZLE, V_TILER, V_UNDER =
  C.CUTE_V_INT, C.CUTE_V_TUPLE, C.CUTE_V_LAYOUT, C.CUTE_V_COMPOSED, C.CUTE_V_SWIZZLE,
  C.CUTE_V_TILER, C.CUTE_V_UNDER
local MAXN = C.CUTE_MAX_NODES -- (include/cute.h: the node capacity of a value)
local fail = cf.fail

-- The "_" placeholder of tilers and slice coordinates.
local underscore = setmetatable({}, { __tostring = function() return "_" end, __name = "cute._" })
M._ = underscore

local function is_layout(v) return istype(value_t, v) and v.type == V_LAYOUT end
local function is_value(v) return istype(value_t, v) end
M.is_layout = is_layout

-- Scratch cells reused across calls (no allocation on the hot path).
local args = value_arr_t(4)
local out2 = value_t()
local crdbuf = i64_arr_t(64)
local i64out = i64_arr_t(1)
local textbuf_size = 4096
local textbuf = ffi.new("char[?]", textbuf_size)

---------------------------------------------------------------------------
-- Lua value -> cute_value
---------------------------------------------------------------------------
local describe -- forward

-- A cute_value is plain memory that the user may have written through the FFI:
-- check it (node count, spans, kinds, ...) before Lua copies or walks its nodes.
local function check_value(x, what)
  cf.check(C.cute_value_check(x, what, cf.err))
  return x
end
M.check_value = check_value

local function int_of(x, what)
  local t = type(x)
  if t == "number" then
    if x ~= x or x % 1 ~= 0 or x >= 2^63 or x < -2^63 then
      fail(("%s: %s is not an integer"):format(what, tostring(x)))
    end
    return x
  elseif t == "cdata" and (istype("int64_t", x) or istype("uint64_t", x) or istype("int32_t", x)) then
    return x
  end
  fail(("%s: expected an integer, got %s"):format(what, describe(x)))
end

-- Append the tree of Lua value x to cv starting at node index i; returns next index.
-- mode: "tuple" (ints and _ only) or "tiler" (layouts allowed).
local function put(cv, i, x, what)
  if i >= MAXN then fail(what .. ": value has more than " .. MAXN .. " nodes") end
  local nd = cv.node[i]
  if type(x) == "table" then
    if x == underscore then
      nd.kind = N_UNDER; nd.span = 1; nd.a = 0; nd.b = 0
      return i + 1
    end
    local n = #x
    for k in pairs(x) do
      if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
        fail(("%s: a tuple must be a Lua sequence, found key %s"):format(what, tostring(k)))
      end
    end
    nd.kind = N_TUPLE; nd.a = n; nd.b = 0
    local j = i + 1
    for k = 1, n do j = put(cv, j, x[k], what) end
    cv.node[i].span = j - i
    return j
  elseif is_value(x) then
    if x.type ~= V_LAYOUT then
      fail(("%s: %s cannot be used inside a tuple"):format(what, describe(x)))
    end
    check_value(x, what)
    local n = x.n
    if i + 1 + n > MAXN then fail(what .. ": value has more than " .. MAXN .. " nodes") end
    nd.kind = N_LAYOUT; nd.span = n + 1; nd.a = 0; nd.b = 0
    ffi.copy(cv.node + i + 1, x.node, n * NODE)
    return i + 1 + n
  else
    nd.kind = N_INT; nd.span = 1; nd.a = int_of(x, what); nd.b = 0
    return i + 1
  end
end

local function has_layout(x)
  if is_value(x) then return true end
  if type(x) == "table" and x ~= underscore then
    for k = 1, #x do if has_layout(x[k]) then return true end end
  end
  return false
end

-- Fill cv from Lua value x.
local function to_value(cv, x, what)
  if is_value(x) then
    check_value(x, what)
    ffi.copy(cv, x, HDR + x.n * NODE)
    return cv
  end
  cv.sw_b, cv.sw_m, cv.sw_s, cv.offset = 0, 0, 0, 0
  if x == underscore then
    cv.type = V_UNDER; cv.n = 1
    local nd = cv.node[0]; nd.kind = N_UNDER; nd.span = 1; nd.a = 0; nd.b = 0
  elseif type(x) == "table" then
    cv.type = has_layout(x) and V_TILER or V_TUPLE
    cv.n = put(cv, 0, x, what)
  else
    cv.type = V_INT; cv.n = 1
    local nd = cv.node[0]; nd.kind = N_INT; nd.span = 1; nd.a = int_of(x, what); nd.b = 0
  end
  return cv
end
M.to_value = to_value

---------------------------------------------------------------------------
-- cute_value -> Lua value
---------------------------------------------------------------------------
local function num(x)
  local v = tonumber(x)
  return v
end

local function get_tree(cv, i)
  local nd = cv.node[i]
  local k = nd.kind
  if k == N_INT then return num(nd.a), i + 1 end
  if k == N_UNDER then return underscore, i + 1 end
  if k == N_LAYOUT then
    local L = value_t()
    L.type = V_LAYOUT
    local n = nd.span - 1
    L.n = n
    ffi.copy(L.node, cv.node + i + 1, n * NODE)
    return L, i + nd.span
  end
  local t, j = {}, i + 1
  for c = 1, tonumber(nd.a) do t[c], j = get_tree(cv, j) end
  return t, j
end

local function from_value(cv)
  local ty = cv.type
  if ty == V_INT then return num(cv.node[0].a) end
  if ty == V_UNDER then return underscore end
  if ty == V_TUPLE or ty == V_TILER then return (get_tree(cv, 0)) end
  local r = value_t()
  ffi.copy(r, cv, HDR + cv.n * NODE)
  return r
end
M.from_value = from_value

-- Leaf values of a layout as Lua tree (shape when field == "a", stride "b").
local function tree_of(cv, i, field)
  local nd = cv.node[i]
  if nd.kind == N_INT then return num(nd[field]), i + 1 end
  local t, j = {}, i + 1
  for c = 1, tonumber(nd.a) do t[c], j = tree_of(cv, j, field) end
  return t, j
end

---------------------------------------------------------------------------
-- printing and parsing
---------------------------------------------------------------------------
local function format_cv(cv)
  -- cute_format returns the bytes needed including the terminating NUL
  local n = tonumber(C.cute_format(cv, textbuf, textbuf_size))
  if n > textbuf_size then
    local big = ffi.new("char[?]", n)
    C.cute_format(cv, big, n)
    return ffi.string(big, n - 1)
  end
  return ffi.string(textbuf, n - 1)
end

local fmt_cell = value_t()
function M.tostring(x)
  if is_value(x) then return format_cv(x) end
  local t = type(x)
  if t == "number" and x % 1 == 0 then return ("%d"):format(x) end
  if t == "table" or t == "number" or t == "cdata" then
    to_value(fmt_cell, x, "cute.tostring")
    return format_cv(fmt_cell)
  end
  return tostring(x)
end

describe = function(x)
  local ok, s = pcall(M.tostring, x)
  if ok then return s end
  return type(x) .. " " .. tostring(x)
end
M.describe = describe

function M.parse(text)
  if type(text) ~= "string" then
    fail("cute.parse: expected a string, got " .. type(text))
  end
  local r = value_t()
  cf.check(C.cute_parse(text, r, cf.err))
  local ty = r.type
  if ty == V_LAYOUT or ty == V_COMPOSED or ty == V_SWIZZLE then return r end
  return from_value(r)
end

---------------------------------------------------------------------------
-- generic op call
---------------------------------------------------------------------------
local opcode = {}
local function op_code(name)
  local c = opcode[name]
  if not c then
    c = C.cute_op_lookup(name)
    if c < 0 then fail("cute: unknown layout op " .. name) end
    opcode[name] = c
  end
  return c
end

-- call(name, nargs, a1, a2, a3, a4): returns the Lua result (and the offset
-- for slice_and_offset).  Errors are located at the user's line (cf.fail).
local function call(name, nargs, a1, a2, a3, a4)
  local code = op_code(name)
  local what = "cute." .. name
  if nargs >= 1 then to_value(args[0], a1, what) end
  if nargs >= 2 then to_value(args[1], a2, what) end
  if nargs >= 3 then to_value(args[2], a3, what) end
  if nargs >= 4 then to_value(args[3], a4, what) end
  local r = value_t()
  local st = C.cute_op(code, args, nargs, r, out2, cf.err)
  cf.check(st)
  return r
end

local function result(r)
  local ty = r.type
  if ty == V_LAYOUT or ty == V_COMPOSED or ty == V_SWIZZLE then return r end
  return from_value(r)
end

-- number of arguments up to the last non-nil one (no == on cdata: that would
-- call their __eq)
local function count(a1, a2, a3, a4, a5)
  if type(a5) ~= "nil" then return 5 end
  if type(a4) ~= "nil" then return 4 end
  if type(a3) ~= "nil" then return 3 end
  if type(a2) ~= "nil" then return 2 end
  if type(a1) ~= "nil" then return 1 end
  return 0
end

-- Wrap an op with a fixed arity range (no varargs, no pcall: the JIT compiles it;
-- errors are located at the user's line by cf.fail).
local function def(name, minargs, maxargs, lname)
  M[lname or name] = function(a1, a2, a3, a4, a5)
    local n = count(a1, a2, a3, a4, a5)
    if n < minargs or n > maxargs then
      fail(("cute.%s: expected %s argument(s), got %d"):format(name,
        minargs == maxargs and minargs or (minargs .. " to " .. maxargs), n))
    end
    return result(call(name, n, a1, a2, a3, a4))
  end
end

-- Every op of the C table (src/layout_api.c) under its own name, with the
-- arity the C table gives it; the ops with their own results are redefined below.
do
  local lo, hi = ffi.new("int[1]"), ffi.new("int[1]")
  for k = 0, tonumber(C.CUTE_OP_COUNT_) - 1 do
    local name = C.cute_op_name(k)
    if name ~= nil and C.cute_op_arity(k, lo, hi) == 0 then
      def(ffi.string(name), lo[0], hi[0])
    end
  end
end

for _, name in ipairs({ "congruent", "compatible", "weakly_congruent" }) do
  M[name] = function(a, b)
    return tonumber(call(name, 2, a, b).node[0].a) ~= 0
  end
end

function M.slice_and_offset(crd, L)
  local r = call("slice_and_offset", 2, crd, L)
  return result(r), tonumber(out2.node[0].a)
end

---------------------------------------------------------------------------
-- dice: CuTe's complement of slice
---------------------------------------------------------------------------
-- A tree (shape, stride or coordinate; leaves may be traced values) as text.
local function tree_str(x, leaf)
  if rawequal(x, underscore) then return "_" end
  if type(x) == "table" then
    local p = {}
    for k = 1, #x do p[k] = tree_str(x[k], leaf) end
    return "(" .. table.concat(p, ",") .. ")"
  end
  return leaf and leaf(x) or tostring(x)
end

-- cute.dice on trees: the leaves / sub-trees of src paired with an integer
-- (anything but cute._) in dicer, concatenated into one tuple as CuTe's
-- filter_tuple does; a dicer that is an integer keeps src whole, cute._ gives ().
-- leaf: optional text of a leaf for messages (traced values).
function M.dice_tree(src, dicer, what, leaf)
  local function bad()
    fail(("%s: dicer %s does not match the profile of %s"):format(what, tree_str(dicer, leaf), tree_str(src, leaf)))
  end
  local function is_int(d)
    local t = type(d)
    if t == "number" then return d % 1 == 0 end
    return t == "cdata"
  end
  local function lift(d, x, out)
    if rawequal(d, underscore) then return end
    if type(d) == "table" then
      if type(x) ~= "table" or #x ~= #d then bad() end
      for k = 1, #d do lift(d[k], x[k], out) end
      return
    end
    if not is_int(d) then
      fail(("%s: dicer %s holds %s; its leaves must be integers or cute._"):format(what, tree_str(dicer, leaf),
        type(d) == "string" and ("%q"):format(d) or tostring(d)))
    end
    out[#out + 1] = x
  end
  if rawequal(dicer, underscore) then return {} end
  if type(dicer) ~= "table" then
    lift(dicer, src, {})
    return src
  end
  if type(src) ~= "table" or #src ~= #dicer then bad() end
  local out = {}
  for k = 1, #dicer do lift(dicer[k], src[k], out) end
  return out
end

-- cute.dice(src, dicer): CuTe DSL's dice on an IntTuple or a Layout (kernel
-- tensors: cute.tensor.dice through the cute.dice dispatch)
function M.dice(src, dicer)
  if is_layout(src) then
    local sh, st = tree_of(src, 0, "a"), tree_of(src, 0, "b")
    local dsh = M.dice_tree(sh, dicer, "cute.dice")
    return M.make_layout(dsh, M.dice_tree(st, dicer, "cute.dice"))
  end
  if is_value(src) then fail("cute.dice: expected an IntTuple or a layout, got " .. describe(src)) end
  return M.dice_tree(src, dicer, "cute.dice")
end

-- CuTe DSL spellings
M.is_congruent, M.is_compatible, M.is_weakly_congruent = M.congruent, M.compatible, M.weakly_congruent
M.group_modes = M.group
M.slice_ = M.slice

---------------------------------------------------------------------------
-- constructors
---------------------------------------------------------------------------
-- Build a LAYOUT cute_value from shape and stride Lua trees.
local function put_layout(cv, i, s, d, shape, stride)
  if i >= MAXN then fail("cute.make_layout: layout has more than " .. MAXN .. " nodes") end
  local nd = cv.node[i]
  if type(s) == "table" then
    if type(d) ~= "table" or #d ~= #s then
      fail(("cute.make_layout: shape %s and stride %s are not congruent"):format(
        describe(shape), describe(stride)))
    end
    nd.kind = N_TUPLE; nd.a = #s; nd.b = 0
    local j = i + 1
    for k = 1, #s do j = put_layout(cv, j, s[k], d[k], shape, stride) end
    cv.node[i].span = j - i
    return j
  end
  if type(d) == "table" then
    fail(("cute.make_layout: shape %s and stride %s are not congruent"):format(
      describe(shape), describe(stride)))
  end
  local sv = int_of(s, "cute.make_layout: shape " .. describe(shape))
  if sv <= 0 then
    fail(("cute.make_layout: shape %s has a non-positive extent %s"):format(describe(shape),
      tostring(s)))
  end
  nd.kind = N_INT; nd.span = 1; nd.a = sv
  nd.b = int_of(d, "cute.make_layout: stride " .. describe(stride))
  return i + 1
end

-- cute.make_layout(shape [, stride]): compact column-major when no stride.
function M.make_layout(shape, stride)
  if is_layout(shape) and stride == nil then return shape end
  if stride == nil then
    local ok, r = pcall(call, "make_layout_left", 1, shape)
    if not ok then cf.rethrow((tostring(r):gsub("make_layout_left", "make_layout"))) end
    return r
  end
  local L = value_t()
  L.type = V_LAYOUT
  L.n = put_layout(L, 0, shape, stride, shape, stride)
  return L
end

function M.make_swizzle(b, m, s)
  for _, v in ipairs({ b, m, s }) do
    if type(v) ~= "number" or v % 1 ~= 0 then
      fail("cute.make_swizzle: B, M, S must be integers, got " .. tostring(v))
    end
  end
  if b < 0 or m < 0 then
    fail(("cute.make_swizzle: B=%d and M=%d must be non-negative"):format(b, m))
  end
  if b > 0 and math.abs(s) < b then
    fail(("cute.make_swizzle: |S|=%d must be at least B=%d"):format(math.abs(s), b))
  end
  local r = value_t()
  r.type = V_SWIZZLE; r.n = 0; r.sw_b = b; r.sw_m = m; r.sw_s = s
  return r
end

-- cute.make_composed_layout(swizzle, offset, layout): swizzle o offset o layout
function M.make_composed_layout(sw, offset, L)
  if not (is_value(sw) and sw.type == V_SWIZZLE) then
    fail("cute.make_composed_layout: first argument must be a swizzle (cute.make_swizzle), got " ..
      describe(sw))
  end
  if not is_layout(L) then
    fail("cute.make_composed_layout: third argument must be a layout, got " .. describe(L))
  end
  int_of(offset, "cute.make_composed_layout: offset")
  check_value(L, "cute.make_composed_layout: layout")
  local r = value_t()
  ffi.copy(r, L, HDR + L.n * NODE)
  r.type = V_COMPOSED; r.sw_b = sw.sw_b; r.sw_m = sw.sw_m; r.sw_s = sw.sw_s; r.offset = offset
  return r
end

-- The parts of a ComposedLayout Sw o off o L: cute.inner_layout(C) = L,
-- cute.composed_swizzle(C) = Sw, cute.composed_offset(C) = off.
local function want_composed(C, what)
  if not (is_value(C) and C.type == V_COMPOSED) then
    fail(("%s: expected a composed layout (cute.make_composed_layout), got %s"):format(what, describe(C)))
  end
  check_value(C, what)
end
function M.inner_layout(C)
  want_composed(C, "cute.inner_layout")
  local r = value_t()
  ffi.copy(r, C, HDR + C.n * NODE)
  r.type = V_LAYOUT; r.sw_b = 0; r.sw_m = 0; r.sw_s = 0; r.offset = 0
  return r
end
function M.composed_swizzle(C)
  want_composed(C, "cute.composed_swizzle")
  return M.make_swizzle(C.sw_b, C.sw_m, C.sw_s)
end
function M.composed_offset(C)
  want_composed(C, "cute.composed_offset")
  return tonumber(C.offset)
end
M.is_composed = function(v) return is_value(v) and v.type == V_COMPOSED end

---------------------------------------------------------------------------
-- Layout objects: methods, call, tostring, ==
---------------------------------------------------------------------------
local methods = {}

local function layout_call(L, c, ...)
  local ty = L.type
  if ty == V_SWIZZLE then
    return M.swizzle(L.sw_b, L.sw_m, L.sw_s, c)
  end
  local nextra = select("#", ...)
  if ty == V_LAYOUT and type(c) == "number" and nextra == 0 then
    crdbuf[0] = c
    cf.check(C.cute_layout_crd2idx(L, crdbuf, 1, i64out, cf.err))
    return tonumber(i64out[0])
  end
  if ty == V_LAYOUT and nextra > 0 then
    -- L(i, j, k): one integer per top-level mode
    local n = nextra + 1
    if n > 64 then fail(("layout call: %d coordinates, at most 64"):format(n)) end
    crdbuf[0] = c
    for k = 1, nextra do crdbuf[k] = (select(k, ...)) end
    cf.check(C.cute_layout_crd2idx(L, crdbuf, n, i64out, cf.err))
    return tonumber(i64out[0])
  end
  if ty == V_COMPOSED then
    return tonumber(call("composed_layout", 2, L, c).node[0].a)
  end
  if ty ~= V_LAYOUT then fail("cute: " .. describe(L) .. " is not callable") end
  -- hierarchical coordinate: crd2idx(crd, shape, stride)
  check_value(L, "layout call")
  return tonumber(call("crd2idx", 3, c, tree_of(L, 0, "a"), tree_of(L, 0, "b")).node[0].a)
end

local function layout_eq(a, b)
  if not (is_value(a) and is_value(b)) then return false end
  if a.type ~= b.type or a.n ~= b.n or a.sw_b ~= b.sw_b or a.sw_m ~= b.sw_m or a.sw_s ~= b.sw_s
    or a.offset ~= b.offset then
    return false
  end
  if a.n < 0 or a.n > MAXN then check_value(a, "layout ==") end
  for i = 0, a.n - 1 do
    local x, y = a.node[i], b.node[i]
    if x.kind ~= y.kind or x.span ~= y.span or x.a ~= y.a or x.b ~= y.b then return false end
  end
  return true
end

function methods.shape(L) return M.shape(L) end
function methods.stride(L) return M.stride(L) end
function methods.size(L) return M.size(L) end
function methods.cosize(L) return M.cosize(L) end
function methods.rank(L) return M.rank(L) end
function methods.depth(L) return M.depth(L) end
function methods.get(L, i) return M.get(L, i) end
function methods.kind(L)
  local ty = L.type
  return ty == V_LAYOUT and "Layout" or ty == V_COMPOSED and "ComposedLayout"
    or ty == V_SWIZZLE and "Swizzle" or "value"
end

ffi.metatype(value_t, {
  __index = function(L, k)
    local m = methods[k]
    if m then return m end
    return nil
  end,
  __call = layout_call,
  __tostring = format_cv,
  __eq = layout_eq,
})

---------------------------------------------------------------------------
-- print_layout: CuTe's 2-D table of a rank-2 layout
---------------------------------------------------------------------------
function M.format_layout(L)
  if not is_value(L) or (L.type ~= V_LAYOUT and L.type ~= V_COMPOSED) then
    fail("cute.print_layout: expected a layout, got " .. describe(L))
  end
  check_value(L, "cute.print_layout")
  local base = L
  if L.type == V_COMPOSED then
    base = value_t(); ffi.copy(base, L, HDR + L.n * NODE); base.type = V_LAYOUT
  end
  local r = M.rank(base)
  if r ~= 2 then
    fail(("cute.print_layout: layout %s has rank %d; print_layout needs rank 2"):format(
      describe(L), r))
  end
  local m, n = M.size(M.get(base, 0)), M.size(M.get(base, 1))
  -- cell width as CuTe's print_layout: digits of cosize, plus padding
  local w = #tostring(math.abs(M.cosize(base))) + 2
  local out = { format_cv(L) }
  local hdr = { "    " }
  for j = 0, n - 1 do hdr[#hdr + 1] = ("  %" .. (w - 2) .. "d "):format(j) end
  out[#out + 1] = table.concat(hdr)
  local sep = "    " .. string.rep("+" .. string.rep("-", w), n) .. "+"
  for i = 0, m - 1 do
    out[#out + 1] = sep
    local row = { ("%2d  "):format(i) }
    for j = 0, n - 1 do row[#row + 1] = ("| %" .. (w - 2) .. "d "):format(L({ i, j })) end
    row[#row + 1] = "|"
    out[#out + 1] = table.concat(row)
  end
  out[#out + 1] = sep
  return table.concat(out, "\n")
end

function M.print_layout(L)
  io.write(M.format_layout(L), "\n")
end

M.value_t = value_t
return M
