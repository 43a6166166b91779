-- cute.tensor_ssa: whole-fragment values (CuTe DSL's TensorSSA).
--
--   local v = t:load()              -- t a register tensor or a static tensor
--   local w = cute.math.exp2(v - m) -- elementwise: + - * / (values, scalars), unary -
--   local p = v:gt(0)               -- comparisons give a boolean TensorSSA
--   local x = cute.where(p, v, 0)   -- select elementwise
--   local s = v:reduce(cute.ReductionOp.ADD, 0.0, 0)        -- full reduction: a scalar
--   local r = v:reduce(cute.ReductionOp.MAX, -math.huge, { cute._, 1 }) -- along mode 1
--   t:store(w:to(cute.bfloat16))    -- shape and dtype checked
--   v + r                           -- implicit broadcasting: r of shape (2) against (2,3) ...
--   v[{ cute._, 1 }]                -- a slice: a TensorSSA of the modes marked cute._
--   v:reduce(op, init, {{1, cute._}, cute._, 1})  -- nested profiles
--   v:compose(layout)               -- the value seen through a layout
--   cute.threadquad_reduce_max(r)   -- across the 4 lanes of an MMA C-fragment row (shuffles)
--
-- A TensorSSA holds one traced scalar per element, in the column-major order
-- of its shape's compact layout: everything stays in registers (no arrays, no
-- memory), see docs/TENSORCORE.md, "Whole-fragment values".
local cf = require("cute.ffi")
local tr = require("cute.trace")
local dt = require("cute.dtype")
local ten = require("cute.tensor")
local layout = require("cute.layout")

local M = {}
local fail, failf = cf.fail, cf.failf
local OP = tr.OP

local TensorSSA = {}
local ssa_mt = {}
M.TensorSSA = TensorSSA
local function is_ssa(x) return getmetatable(x) == ssa_mt end
M.is_tensor_ssa = is_ssa

local function dtype_of_t(t)
  local info = dt.scalars[t]
  return info and info.dtype or nil
end

-- a TensorSSA from a table of values (0-based) of one IR type
local function make(vals, shape, n)
  local t = tr.is_value(vals[0]) and vals[0].t or nil
  return setmetatable({ _vals = vals, _shape = shape, _n = n, _t = t }, ssa_mt)
end
M.make = make

ssa_mt.__index = function(v, k)
  if type(k) == "string" then
    if TensorSSA[k] then return TensorSSA[k] end
    if k == "shape" then return rawget(v, "_shape") end
    if k == "dtype" or k == "element_type" then
      local name = dtype_of_t(rawget(v, "_t"))
      return name and dt.dtypes[name]
    end
    if k == "layout" then return layout.make_layout(rawget(v, "_shape")) end
    return nil
  end
  if type(k) == "table" then return M.slice(v, k) end
  if type(k) ~= "number" or k % 1 ~= 0 or k < 0 or k >= rawget(v, "_n") then
    failf("TensorSSA", "index %s is out of range 0..%d (Lua integers only)", tostring(k), rawget(v, "_n") - 1)
  end
  return rawget(v, "_vals")[k]
end
ssa_mt.__newindex = function(_, k) failf("TensorSSA", "a TensorSSA is a value: cannot set %s", tostring(k)) end
ssa_mt.__len = function(v) return v._n end
ssa_mt.__tostring = function(v)
  return ("TensorSSA<%s, %s>"):format(tostring(dtype_of_t(v._t)), ten.describe(v._shape))
end
function TensorSSA.size(v) return v._n end

-- shapes agree when equal after unwrapping rank-1 tuples ((4) is 4)
local function norm(s)
  if type(s) ~= "table" then return s end
  if #s == 1 then return norm(s[1]) end
  local o = {}
  for i = 1, #s do o[i] = norm(s[i]) end
  return o
end
local function same_shape(a, b)
  return ten.describe(norm(a)) == ten.describe(norm(b))
end

-- Implicit broadcasting (as v:broadcast_to): two shapes are aligned mode by
-- mode from the left, the one of lower rank padded with 1s on the right; a
-- mode of size 1 repeats against the other's mode (nested or not); other
-- modes must be equal ((4) equals 4). bshape gives the common shape or nil
-- and the first modes that disagree.
local function size_of(s) return ten.tsize(s) end
local function bshape(a, b)
  local ta, tb = type(a) == "table", type(b) == "table"
  if not ta and not tb then
    if a == b or b == 1 then return a end
    if a == 1 then return b end
    return nil, a, b
  end
  if ta and #a == 1 and not (tb and #b > 1) then return bshape(a[1], b) end
  if tb and #b == 1 and not (ta and #a > 1) then return bshape(a, b[1]) end
  if not ta then
    if a == 1 then return b end
    return nil, a, b
  end
  if not tb then
    if b == 1 then return a end
    return nil, a, b
  end
  local out = {}
  for k = 1, math.max(#a, #b) do
    local r, x, y = bshape(a[k] or 1, b[k] or 1)
    if r == nil then return nil, x, y end
    out[k] = r
  end
  return out
end

-- leaf sizes of a shape (a flat list)
local function leaf_sizes(s)
  local out = {}
  local function walk(x)
    if type(x) == "table" then for i = 1, #x do walk(x[i]) end else out[#out + 1] = x end
  end
  walk(s)
  return out
end

-- the strides of src (compact, column-major) for every leaf of out, 0 for
-- the leaves src repeats (src broadcasts to out: bshape(src, out) is out)
local function bstrides(src, out, base, acc)
  if type(out) ~= "table" then
    local n = size_of(src)
    acc[#acc + 1] = n == 1 and 0 or base
    return base * n
  end
  if type(src) ~= "table" then
    if src == 1 then
      for _ = 1, #leaf_sizes(out) do acc[#acc + 1] = 0 end
      return base
    end
    return bstrides(src, out[1], base, acc) -- out is (src)
  end
  if #src == 1 and #out == 1 then return bstrides(src[1], out[1], base, acc) end
  for k = 1, #out do base = bstrides(src[k] or 1, out[k], base, acc) end
  return base
end

-- index map i -> j of a TensorSSA of shape src seen as shape out
local function bindex(src, out, n)
  local st = {}
  bstrides(src, out, 1, st)
  local sz = leaf_sizes(out)
  local idx = {}
  for i = 0, n - 1 do
    local rest, j = i, 0
    for k = 1, #sz do
      local c = rest % sz[k]
      rest = (rest - c) / sz[k]
      j = j + c * (st[k] or 0)
    end
    idx[i] = j
  end
  return idx
end

-- an operand: a TensorSSA (broadcast to shape), a number or a traced scalar
local function operand(x, shape, n, what)
  if is_ssa(x) then
    if same_shape(x._shape, shape) then return function(i) return x._vals[i] end end
    local idx = bindex(x._shape, shape, n)
    return function(i) return x._vals[idx[i]] end
  end
  if type(x) == "number" or tr.is_value(x) then return function() return x end end
  if type(x) == "boolean" then return function() return x end end
  failf(what, "operand %s is not a TensorSSA, a number or a traced scalar", tostring(x))
end

-- the first TensorSSA among the arguments
local function first_ssa(...)
  for i = 1, select("#", ...) do
    local x = select(i, ...)
    if is_ssa(x) then return x end
  end
end

-- the common shape of the TensorSSA arguments
local function common_shape(what, args, nargs)
  local shape, first
  for j = 1, nargs do
    local x = args[j]
    if is_ssa(x) then
      if shape == nil then
        shape, first = x._shape, x._shape
      elseif not same_shape(shape, x._shape) then
        local r, a, b = bshape(shape, x._shape)
        if r == nil then
          failf(what, "shapes %s and %s differ and do not broadcast (modes %s and %s: each must be 1 or equal)",
            ten.describe(first), ten.describe(x._shape), ten.describe(a), ten.describe(b))
        end
        shape = r
      end
    end
  end
  return shape
end

-- elementwise f(x1, x2, ...) over TensorSSAs (broadcast to a common shape) and scalars
local function map(what, f, ...)
  tr.need_trace(what)
  local args = { ... }
  local nargs = select("#", ...)
  local shape = common_shape(what, args, nargs)
  local n = ten.tsize(shape)
  if n > cf.C.CUTE_ARR_MAX then
    failf(what, "the result %s holds %d values; at most %d", ten.describe(shape), n, cf.C.CUTE_ARR_MAX)
  end
  local get = {}
  for j = 1, nargs do get[j] = operand(args[j], shape, n, what) end
  local out, xs = {}, {}
  for i = 0, n - 1 do
    for j = 1, nargs do xs[j] = get[j](i) end
    local r = f(unpack(xs, 1, nargs))
    if not tr.is_value(r) then r = tr.lift(r) end
    out[i] = r
  end
  return make(out, shape, n)
end
M.map = map

ssa_mt.__add = function(a, b) return map("TensorSSA +", function(x, y) return x + y end, a, b) end
ssa_mt.__sub = function(a, b) return map("TensorSSA -", function(x, y) return x - y end, a, b) end
ssa_mt.__mul = function(a, b) return map("TensorSSA *", function(x, y) return x * y end, a, b) end
ssa_mt.__div = function(a, b) return map("TensorSSA /", function(x, y) return x / y end, a, b) end
ssa_mt.__unm = function(a) return map("TensorSSA -", function(x) return -x end, a) end
ssa_mt.__lt = function() fail("'<' on a TensorSSA: Lua comparisons give one boolean; use v:lt(x) (or cute.lt(v, x))") end
ssa_mt.__le = function() fail("'<=' on a TensorSSA: Lua comparisons give one boolean; use v:le(x) (or cute.le(v, x))") end

-- comparisons: boolean TensorSSAs
for name, opc in pairs({ lt = OP.LT, le = OP.LE, gt = OP.GT, ge = OP.GE, eq = OP.EQ, ne = OP.NE }) do
  TensorSSA[name] = function(a, b)
    return map("TensorSSA:" .. name, function(x, y) return tr.cmp_value(opc, x, y) end, a, b)
  end
end

-- cute.where(pred, a, b) with a boolean TensorSSA pred (a, b TensorSSAs or scalars)
function M.where(pred, a, b)
  if not is_ssa(pred) then
    failf("cute.where", "with a TensorSSA operand the condition must be a boolean TensorSSA, got %s", tostring(pred))
  end
  if pred._t ~= tr.T.I1 then
    failf("cute.where", "the condition is a TensorSSA of %s, not of bool", tostring(dtype_of_t(pred._t)))
  end
  return map("cute.where", function(c, x, y) return tr.select(c, x, y) end, pred, a, b)
end

-- the IR scalar type of a dtype argument: cute.bfloat16, "bfloat16", "BFloat16" or cute.BFloat16
local function scalar_of(x, what)
  if type(x) == "function" then
    local kern = require("cute.kernel")
    for _, n in ipairs(dt.cute_names) do
      if kern[n] == x then return dt.dtypes[dt.by_cute[n].dtype].scalar end
    end
  end
  if getmetatable(x) == dt.Dtype or type(x) == "string" then
    local ok, d = pcall(dt.to_dtype, x, what)
    if ok then return d.scalar end
  end
  failf(what, "%s is not a dtype (one of %s)", tostring(x), dt.dtype_names)
end

-- v:to(dtype): every element converted (cvt: round to nearest even)
function TensorSSA.to(v, dtype)
  local t = scalar_of(dtype, "TensorSSA:to")
  return map("TensorSSA:to", function(x) return tr.cvt(x, t) end, v)
end

-- v:broadcast_to(shape): v's modes, padded with 1s on the right to the rank of
-- shape, each of size 1 (repeated) or equal to shape's mode: a TensorSSA of shape
function TensorSSA.broadcast_to(v, shape)
  local what = "TensorSSA:broadcast_to"
  tr.need_trace(what)
  if not ten.is_static(shape) then failf(what, "the shape %s must be static", ten.describe(shape)) end
  local tgt = type(shape) == "table" and shape or { shape }
  local src = type(v._shape) == "table" and v._shape or { v._shape }
  if #src > #tgt then
    failf(what, "%s has more modes than %s", ten.describe(v._shape), ten.describe(shape))
  end
  local tsz, ssz = {}, {}
  for k = 1, #tgt do
    tsz[k] = ten.tsize(tgt[k])
    ssz[k] = src[k] == nil and 1 or ten.tsize(src[k])
    if ssz[k] ~= 1 and not same_shape(src[k], tgt[k]) then
      failf(what, "mode %d of %s is %s: it must be 1 or %s", k, ten.describe(v._shape), ten.describe(src[k]),
        ten.describe(tgt[k]))
    end
  end
  local n = ten.tsize(shape)
  if n > cf.C.CUTE_ARR_MAX then failf(what, "%s holds %d values; at most %d", ten.describe(shape), n, cf.C.CUTE_ARR_MAX) end
  local out = {}
  for i = 0, n - 1 do
    local rest, j, jstride = i, 0, 1
    for k = 1, #tgt do
      local c = rest % tsz[k]
      rest = (rest - c) / tsz[k]
      if ssz[k] ~= 1 then j = j + c * jstride end
      jstride = jstride * ssz[k]
    end
    out[i] = v._vals[j]
  end
  return make(out, shape, n)
end

-- cute.ReductionOp (CuTe DSL): ADD, MUL, MAX, MIN
M.ReductionOp = { ADD = "add", MUL = "mul", MAX = "max", MIN = "min" }
local combine = {
  add = function(a, b) return a + b end,
  mul = function(a, b) return a * b end,
  max = function(a, b) return require("cute.arch").max(a, b) end,
  min = function(a, b) return require("cute.arch").min(a, b) end,
}

-- the leaves of shape matched against a profile or coordinate tree: walk
-- calls leaf(size, entry) for every leaf in column-major order, where entry
-- is the innermost profile/coordinate entry that is not a table; returns the
-- kept shape built by keep(sub_shape) for entries equal to cute._
local function tree_walk(what, label, shape, tree, on_leafs)
  local function walk(sh, t, path)
    if type(t) == "table" and getmetatable(t) == nil then
      local shs = type(sh) == "table" and sh or { sh }
      if #t ~= #shs and path == "" then
        failf(what, "%s %s has %d entries where the shape %s has %d modes", label, ten.describe(tree), #t,
          ten.describe(shape), #shs)
      elseif #t ~= #shs then
        failf(what, "%s %s: the entry %s at mode %s has %d entries where that mode of the shape %s, %s, has %d",
          label, ten.describe(tree), ten.describe(t), path, #t, ten.describe(shape), ten.describe(sh), #shs)
      end
      local kept = {}
      for k = 1, #t do
        local r = walk(shs[k], t[k], path == "" and tostring(k - 1) or path .. "," .. (k - 1))
        if r ~= nil then kept[#kept + 1] = r end
      end
      if #kept == 0 then return nil end
      if #kept == 1 and path ~= "" then return kept[1] end
      return kept
    end
    on_leafs(sh, t, path)
    if t == layout._ or t == false then return sh end
    return nil
  end
  return walk(shape, tree, "")
end

-- v:reduce(op, init, reduction_profile): profile 0 reduces every element to a
-- traced scalar; a tree with one entry per mode of v's shape (1: reduce that
-- mode, cute._: keep it, a table: the same for the sub-modes of a nested
-- mode) gives a TensorSSA of the kept modes
function TensorSSA.reduce(v, op, init, profile)
  local what = "TensorSSA:reduce"
  tr.need_trace(what)
  local f = combine[op]
  if not f then failf(what, "op %s is not a cute.ReductionOp (ADD, MUL, MAX, MIN)", tostring(op)) end
  if not (type(init) == "number" or tr.is_value(init)) then
    failf(what, "init %s is not a number or a traced scalar", tostring(init))
  end
  local function cast(x)
    if type(x) == "number" and v._t then return tr.const(v._t, x, what) end
    if tr.is_value(x) and v._t and x.t ~= v._t then return tr.cvt(x, v._t) end
    return x
  end
  if profile == nil or profile == 0 then
    local acc = cast(init)
    for i = 0, v._n - 1 do acc = f(acc, v._vals[i]) end
    return acc
  end
  local shape = v._shape
  if type(profile) ~= "table" or type(shape) ~= "table" then
    failf(what, "reduction_profile %s must be 0 or have one entry per mode of the shape %s (1: reduce, cute._: keep)",
      type(profile) == "table" and ten.describe(profile) or tostring(profile), ten.describe(shape))
  end
  local sizes, keep = {}, {}
  local kshape = tree_walk(what, "reduction_profile", shape, profile, function(sh, p, path)
    local k = p == layout._ or p == false
    if not k and p ~= 1 then
      failf(what, "reduction_profile entry %s is %s (1: reduce the mode, cute._: keep it)",
        path:find(",") and "(" .. path .. ")" or tostring(tonumber(path) + 1), tostring(p))
    end
    for _, n in ipairs(leaf_sizes(sh)) do sizes[#sizes + 1] = n; keep[#keep + 1] = k end
  end)
  if kshape == nil then return v:reduce(op, init, 0) end
  local nout = ten.tsize(kshape)
  local acc = {}
  for i = 0, v._n - 1 do
    -- the column-major coordinate of i per leaf, and its index among the kept leaves
    local rest, o, ostride = i, 0, 1
    for k = 1, #sizes do
      local c = rest % sizes[k]
      rest = (rest - c) / sizes[k]
      if keep[k] then o = o + c * ostride; ostride = ostride * sizes[k] end
    end
    acc[o] = f(acc[o] or cast(init), v._vals[i])
  end
  return make(acc, kshape, nout)
end

-- v[{c0, c1, ...}]: a coordinate per mode (nested for nested modes), each a
-- Lua integer (an index into the mode, column-major) or cute._ (keep the
-- mode): a TensorSSA of the kept modes, or the element when none is kept
function M.slice(v, crd)
  local what = "TensorSSA slice"
  local shape = v._shape
  local base, stride, kl = 0, 1, {}
  local kept = tree_walk(what, "coordinate", type(shape) == "table" and shape or { shape }, crd, function(sh, c)
    local n = ten.tsize(sh)
    if c == layout._ then
      for _, m in ipairs(leaf_sizes(sh)) do kl[#kl + 1] = { m, stride }; stride = stride * m end
      return
    end
    if type(c) ~= "number" or c % 1 ~= 0 or c < 0 or c >= n then
      failf(what, "coordinate %s of %s: %s is not an integer in 0..%d (or cute._)", ten.describe(crd),
        ten.describe(shape), tostring(c), n - 1)
    end
    base = base + c * stride
    stride = stride * n
  end)
  if kept == nil then return v._vals[base] end
  local kshape = #kept == 1 and kept[1] or kept
  local n = ten.tsize(kshape)
  local out = {}
  for i = 0, n - 1 do
    local rest, j = i, base
    for k = 1, #kl do
      local c = rest % kl[k][1]
      rest = (rest - c) / kl[k][1]
      j = j + c * kl[k][2]
    end
    out[i] = v._vals[j]
  end
  return make(out, kshape, n)
end

-- v:compose(layout): the value seen through a layout (CuTe's composition of
-- a tensor with a layout): element c of the result is v[layout(c)]
function TensorSSA.compose(v, L)
  local what = "TensorSSA:compose"
  tr.need_trace(what)
  if not layout.is_layout(L) then
    failf(what, "%s is not a layout (cute.make_layout(shape, stride))", tostring(L))
  end
  local lay = L
  local shape = ten.as_layout(L, what).shape
  local n = ten.tsize(shape)
  if n > cf.C.CUTE_ARR_MAX then failf(what, "%s holds %d values; at most %d", tostring(lay), n, cf.C.CUTE_ARR_MAX) end
  local out = {}
  for i = 0, n - 1 do
    local j = lay(i)
    if j < 0 or j >= v._n then
      failf(what, "the layout %s maps %d to %d, outside the value's 0..%d", tostring(lay), i, j, v._n - 1)
    end
    out[i] = v._vals[j]
  end
  return make(out, shape, n)
end

-- Reductions across the lanes of a warp (butterfly shuffles): every lane
-- ends with op over the lanes l xor (any combination of offsets), e.g.
-- offsets {2, 1}: the 4 lanes 4g .. 4g+3 that hold one row of an MMA C
-- fragment (cute.threadquad_reduce). x is a traced scalar or a TensorSSA
-- (elementwise).
function M.butterfly_reduce(x, op, offsets, what)
  what = what or "cute.butterfly_reduce"
  tr.need_trace(what)
  local f = combine[op]
  if not f then failf(what, "op %s is not a cute.ReductionOp (ADD, MUL, MAX, MIN)", tostring(op)) end
  if type(offsets) ~= "table" or #offsets == 0 then
    failf(what, "offsets %s must be a list of lane offsets (powers of two below 32)", tostring(offsets))
  end
  for _, o in ipairs(offsets) do
    if type(o) ~= "number" or o < 1 or o > 16 or bit.band(o, o - 1) ~= 0 then
      failf(what, "lane offset %s is not a power of two in 1..16", tostring(o))
    end
  end
  local bfly = require("cute.arch").arch.shuffle_sync_bfly
  local function red(e)
    if type(e) == "number" then e = tr.lift(e) end
    for _, o in ipairs(offsets) do e = f(e, bfly(e, o)) end
    return e
  end
  if is_ssa(x) then return map(what, red, x) end
  if not tr.is_value(x) then failf(what, "%s is not a TensorSSA or a traced scalar", tostring(x)) end
  return red(x)
end
function M.threadquad_reduce(x, op) return M.butterfly_reduce(x, op, { 2, 1 }, "cute.threadquad_reduce") end
function M.threadquad_reduce_max(x) return M.butterfly_reduce(x, "max", { 2, 1 }, "cute.threadquad_reduce_max") end
function M.threadquad_reduce_sum(x) return M.butterfly_reduce(x, "add", { 2, 1 }, "cute.threadquad_reduce_sum") end

-- cute.full(shape, value, dtype), cute.full_like(v, value [, dtype]),
-- cute.zeros_like(v [, dtype]): constant TensorSSAs (CuTe DSL's)
function M.full(shape, value, dtype)
  local what = "cute.full"
  tr.need_trace(what)
  if not ten.is_static(shape) then failf(what, "the shape %s must be static", ten.describe(shape)) end
  local t = scalar_of(dtype, what)
  local n = ten.tsize(shape)
  if n > cf.C.CUTE_ARR_MAX then failf(what, "%s holds %d values; at most %d", ten.describe(shape), n, cf.C.CUTE_ARR_MAX) end
  if not (type(value) == "number" or tr.is_value(value)) then
    failf(what, "value %s is not a number or a traced scalar", tostring(value))
  end
  local x = tr.is_value(value) and (value.t == t and value or tr.cvt(value, t)) or tr.const(t, value, what)
  local vals = {}
  for i = 0, n - 1 do vals[i] = x end
  return make(vals, shape, n)
end
function M.full_like(v, value, dtype)
  if not is_ssa(v) then failf("cute.full_like", "%s is not a TensorSSA", tostring(v)) end
  return M.full(v._shape, value, dtype or v.dtype)
end
function M.zeros_like(v, dtype) return M.full_like(v, 0, dtype) end

-- cute.reduce(v, op, init, profile) (a function form)
function M.reduce(v, ...)
  if not is_ssa(v) then failf("cute.reduce", "%s is not a TensorSSA (take one with t:load())", tostring(v)) end
  return v:reduce(...)
end

-- t:load() of a register tensor or a tensor with a static shape
function M.load(t, what)
  tr.need_trace(what)
  local shape = t.shape
  if not ten.is_static(shape) then
    failf(what, "the tensor's shape %s must be static (take a static tile of it first)", ten.describe(shape))
  end
  local n = ten.tsize(shape)
  if n > cf.C.CUTE_ARR_MAX then
    failf(what, "the tensor holds %d values; a TensorSSA holds at most %d", n, cf.C.CUTE_ARR_MAX)
  end
  local vals = {}
  local f = rawget(t, "_frag")
  if f and require("cute.nvgpu_arch").is_frag(f) then
    vals = f:elements() -- a register tensor: one read of its fragment
  else
    for i = 0, n - 1 do vals[i] = t[i] end
  end
  return make(vals, shape, n)
end

-- t:store(v): v's shape and dtype must be t's
function M.store(t, v, what)
  tr.need_trace(what)
  if not is_ssa(v) then
    failf(what, "%s is not a TensorSSA (store a whole value from t:load(), or index single elements)", tostring(v))
  end
  local shape = t.shape
  if not same_shape(shape, v._shape) then
    failf(what, "the tensor's shape %s and the value's shape %s differ", ten.describe(shape), ten.describe(v._shape))
  end
  local want = rawget(t, "elem") and dtype_of_t(t.elem) or (t.dtype and t.dtype.name)
  local have = dtype_of_t(v._t)
  if want and have and want ~= have then
    failf(what, "the tensor holds %s and the value is of %s (convert with v:to(cute.%s))", want, have, want)
  end
  local f = rawget(t, "_frag")
  if f and require("cute.nvgpu_arch").is_frag(f) then return f:set_elements(v._vals) end -- one write
  for i = 0, v._n - 1 do t[i] = v._vals[i] end
end

-- cute.math.<f>(v, ...) elementwise when v is a TensorSSA
function M.wrap_math(math_)
  for _, name in ipairs({ "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "rcp", "tanh", "sin", "cos", "erf",
    "abs", "floor", "ceil", "trunc", "round" }) do
    local f = math_[name]
    if f then
      math_[name] = function(x, ...)
        if is_ssa(x) then
          local extra = { ... }
          return map("cute.math." .. name, function(e) return f(e, unpack(extra)) end, x)
        end
        return f(x, ...)
      end
    end
  end
  for _, name in ipairs({ "max", "min", "pow", "fma" }) do
    local f = math_[name]
    if f then
      math_[name] = function(...)
        if first_ssa(...) then return map("cute.math." .. name, f, ...) end
        return f(...)
      end
    end
  end
end

return M
