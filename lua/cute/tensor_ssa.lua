-- cute.tensor_ssa: whole-fragment values (CuTe DSL's TensorSSA).
--
--   local v = t:load()              -- t a register tensor or a static tensor
--   local w = cute.math.exp2(v - m) -- elementwise: + - * / (values, scalars), unary -
--   local p = v:gt(0)               -- comparisons give a boolean TensorSSA
--   local x = cute.where(p, v, 0)   -- select elementwise
--   local s = v:reduce(cute.ReductionOp.ADD, 0.0, 0)        -- full reduction: a scalar
--   local r = v:reduce(cute.ReductionOp.MAX, -math.huge, { cute._, 1 }) -- along mode 1
--   t:store(w:to(cute.bfloat16))    -- shape and dtype checked
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

-- an operand: a TensorSSA (shape checked against `shape`), a number or a traced scalar
local function operand(x, shape, what)
  if is_ssa(x) then
    if not same_shape(x._shape, shape) then
      failf(what, "shapes %s and %s differ (v:broadcast_to(shape) repeats modes of size 1)", ten.describe(shape),
        ten.describe(x._shape))
    end
    return function(i) return x._vals[i] end
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

-- elementwise f(x1, x2, ...) over TensorSSAs and scalars
local function map(what, f, ...)
  tr.need_trace(what)
  local s = first_ssa(...)
  local n, shape = s._n, s._shape
  local args = { ... }
  local nargs = select("#", ...)
  local get = {}
  for j = 1, nargs do get[j] = operand(args[j], shape, what) end
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

local function mode_size(s) return ten.tsize(s) end

-- v:reduce(op, init, reduction_profile): profile 0 reduces every element to a
-- traced scalar; a table with one entry per mode of v's shape (1: reduce that
-- mode, cute._: keep it) gives a TensorSSA of the kept modes
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
  if type(profile) ~= "table" or type(shape) ~= "table" or #profile ~= #shape then
    failf(what, "reduction_profile %s must be 0 or have one entry per mode of the shape %s (1: reduce, cute._: keep)",
      type(profile) == "table" and ten.describe(profile) or tostring(profile), ten.describe(shape))
  end
  local sizes, keep, kshape = {}, {}, {}
  for k = 1, #shape do
    sizes[k] = mode_size(shape[k])
    local p = profile[k]
    if p == layout._ or p == false then
      keep[k] = true; kshape[#kshape + 1] = shape[k]
    elseif p == 1 then
      keep[k] = false
    else
      failf(what, "reduction_profile entry %d is %s (1: reduce the mode, cute._: keep it)", k, tostring(p))
    end
  end
  if #kshape == 0 then return v:reduce(op, init, 0) end
  local nout = 1
  for k = 1, #shape do if keep[k] then nout = nout * sizes[k] end end
  local acc = {}
  for i = 0, v._n - 1 do
    -- the column-major coordinate of i per mode, and its index among the kept modes
    local rest, o, ostride = i, 0, 1
    for k = 1, #shape do
      local c = rest % sizes[k]
      rest = (rest - c) / sizes[k]
      if keep[k] then o = o + c * ostride; ostride = ostride * sizes[k] end
    end
    acc[o] = f(acc[o] or cast(init), v._vals[i])
  end
  return make(acc, kshape, nout)
end

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
  for i = 0, n - 1 do vals[i] = t[i] end
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
