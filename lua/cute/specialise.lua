-- cute.specialise: what a kernel binary is specialised on (docs/DSL.md,
-- "Specialisation keys"), and the checks a call passes before it is traced.
--
-- A cache of binaries by call (launch.lua keeps one per kernel and device,
-- k.caches[device]; M.find and M.group walk one) has one table level per
-- argument, keyed by arg_key(argument); the level after the last argument
-- holds a group
--   { mask = f or false, [overlap mask] = entry }
-- where f(a1, ..., an) is generated per signature: it returns the overlap
-- mask of the call's tensor arguments (bit i-1 set when argument i overlaps
-- another tensor argument; -1 for a tensor without a device address).  The
-- generated launchers (launch.lua) inline the same walk.
--
-- Key spaces never meet:
--   number / boolean      itself (NaN -> "n:nan", -0 -> "n:-0")
--   nil                   M.NIL
--   string                "s:" .. s
--   tensor                its signature, "<dtype>|..." (kernel.lua tensor_sig)
--   typed scalar          "#" .. type code (cute.Int32(x) is a parameter: the value is not in the key)
--   plain table           "{...}": a canonical serialisation, recomputed on every call
--   CuTe value (layout)   "L" .. its CuTe notation
--   function              itself (identity)
--   anything else         M.BAD (never cached: the miss path reports it)
local ffi = require("ffi")
local cf = require("cute.ffi")
local tr = require("cute.trace")
local layout = require("cute.layout")

local M = {}

local value_ct = ffi.typeof(layout.make_layout(1))
local function is_cute_value(x) return type(x) == "cdata" and ffi.istype(value_ct, x) end
M.is_cute_value = is_cute_value

-- kernel.lua owns these (set through M.init)
local tensor_sig, is_scalar, is_host_tensor

-- the strides of a compact row-major tensor of this shape (cute.memory's)
local row_major = require("cute.memory").row_major
M.row_major = row_major

local NIL, ENTRY, BAD = {}, {}, {}
M.NIL, M.ENTRY, M.BAD = NIL, ENTRY, BAD
local NAN_KEY, NEGZERO_KEY = "n:nan", "n:-0"

-- (a memo of string keys, bounded: a sweep over distinct string values must
-- not keep every one forever; docs/SOAK.md)
local str_keys, nstr_keys
local str_mt = { __index = function(t, s)
  local v = "s:" .. s
  if nstr_keys >= 4096 then str_keys, nstr_keys = setmetatable({}, getmetatable(t)), 0 end
  rawset(str_keys, s, v)
  nstr_keys = nstr_keys + 1
  return v
end }
str_keys, nstr_keys = setmetatable({}, str_mt), 0
local scalar_keys = setmetatable({}, { __index = function(t, c)
  local v = "#" .. tostring(c)
  rawset(t, c, v)
  return v
end })

---------------------------------------------------------------------------
-- compile-time values by value
---------------------------------------------------------------------------
-- functions and metatables inside values: by identity, as a number that is
-- never reused
local ids = setmetatable({}, { __mode = "k" })
local nids = 0
local function ident(x)
  local id = ids[x]
  if not id then
    nids = nids + 1
    id = nids
    ids[x] = id
  end
  return id
end

local dtype_mt
local function is_dtype(x)
  if dtype_mt == nil then
    local ok, rt = pcall(require, "cute.runtime")
    dtype_mt = ok and getmetatable(rt.float32) or false
  end
  return dtype_mt ~= false and getmetatable(x) == dtype_mt
end

local function num_text(x)
  if x ~= x then return "nan" end
  if x == 0 and 1 / x < 0 then return "-0" end
  if x % 1 == 0 and x > -1e14 and x < 1e14 then return tostring(x) end -- (exact: %.14g)
  return ("%.17g"):format(x)
end

-- strings: length-prefixed, so any bytes are unambiguous without quoting
local function str_text(x) return #x .. ":" .. x end

local key_rank = { number = 1, string = 2, boolean = 3 }
local function key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return key_rank[ta] < key_rank[tb] end
  if ta == "boolean" then return (not a) and b end
  return a < b
end

-- ser(v, out, seen) appends v's canonical text to out; on failure returns
-- false, why, path (a list of keys from the inside out)
local ser
local function ser_table(x, out, seen)
  if seen[x] then return false, "contains itself", {} end
  seen[x] = true
  local keys, n, seq = {}, 0, true
  for k in next, x do
    if not key_rank[type(k)] then
      return false, ("has a key of type %s (keys of compile-time tables must be numbers, strings or booleans)")
        :format(type(k)), {}
    end
    n = n + 1
    keys[n] = k
    seq = seq and k == n
  end
  if not seq then table.sort(keys, key_less) end -- (a sequence 1..n visited in order needs no sort)
  local mt = getmetatable(x)
  out[#out + 1] = mt and ("{@" .. ident(mt) .. "|") or "{"
  for i = 1, n do
    local k = keys[i]
    local tk = type(k)
    out[#out + 1] = tk == "number" and num_text(k) or tk == "string" and str_text(k) or tostring(k)
    out[#out + 1] = "="
    local ok, why, path = ser(rawget(x, k), out, seen)
    if not ok then
      path[#path + 1] = k
      return false, why, path
    end
    out[#out + 1] = ","
  end
  out[#out + 1] = "}"
  seen[x] = nil -- shared (not cyclic) subtables are fine
  return true
end

ser = function(v, out, seen)
  local tv = type(v)
  if tv == "number" then out[#out + 1] = num_text(v)
  elseif tv == "string" then out[#out + 1] = "s" .. str_text(v)
  elseif tv == "boolean" then out[#out + 1] = v and "T" or "F"
  elseif tv == "function" then out[#out + 1] = "f#" .. ident(v)
  elseif tv == "table" then
    if is_dtype(v) then out[#out + 1] = "D:" .. v.name
    elseif is_scalar(v) then
      return false, "holds a typed scalar (" .. tostring(v) .. "): runtime parameters must be arguments of their own", {}
    elseif is_host_tensor(v) then
      return false, "holds a tensor: tensors must be arguments of their own", {}
    else
      return ser_table(v, out, seen)
    end
  elseif tv == "cdata" and is_cute_value(v) then out[#out + 1] = "L" .. tostring(v)
  else
    local what = tv == "cdata" and ("a cdata of type " .. tostring(ffi.typeof(v))) or ("a " .. tv)
    return false, "holds " .. what .. " (compile-time tables may hold numbers, strings, booleans, tables, " ..
      "dtypes, layouts and functions)", {}
  end
  return true
end

local function path_text(path)
  local parts = {}
  for i = #path, 1, -1 do
    local k = path[i]
    parts[#parts + 1] = type(k) == "string" and k:match("^[%a_][%w_]*$") and ("." .. k) or ("[" .. tostring(k) .. "]")
  end
  return table.concat(parts)
end

-- the canonical text of a plain table, or nil, why
function M.value_key(t)
  local out = {}
  local ok, why, path = ser(t, out, {})
  if not ok then
    local p = path_text(path)
    return nil, p ~= "" and (why .. " at " .. p) or why
  end
  return table.concat(out)
end

---------------------------------------------------------------------------
-- arg_key: the hot path (a tensor argument costs one rawget and its signature)
---------------------------------------------------------------------------
local function arg_key(a)
  local ta = type(a)
  if ta == "table" then
    if rawget(a, "_cute_sig") then return tensor_sig(a) end
    if is_scalar(a) then return scalar_keys[a.t] end
    local mt = getmetatable(a)
    if mt and mt.__cute_key then return a._key end -- (TMA atoms and coordinate tensors: their own key)
    if is_host_tensor(a) then return tensor_sig(a) end
    return M.value_key(a) or BAD
  elseif ta == "number" then
    if a ~= a then return NAN_KEY end
    if a == 0 and 1 / a < 0 then return NEGZERO_KEY end
    return a
  elseif ta == "nil" then return NIL
  elseif ta == "string" then return str_keys[a]
  elseif ta == "boolean" or ta == "function" then return a
  elseif ta == "cdata" and is_cute_value(a) then return "L" .. tostring(a)
  end
  return BAD
end
M.arg_key = arg_key

-- why an argument cannot be a kernel argument (arg_key gave BAD)
local function explain(a)
  local ta = type(a)
  if ta == "table" then return select(2, M.value_key(a)) or "cannot be keyed" end
  if ta == "cdata" then
    return ("a cdata of type %s cannot be passed to a kernel (pass device tensors, cute.Int32(x)-style " ..
      "scalars, numbers, booleans, strings, tables, dtypes, layouts or functions)"):format(tostring(ffi.typeof(a)))
  end
  return ("a %s cannot be passed to a kernel (pass device tensors, cute.Int32(x)-style scalars, numbers, " ..
    "booleans, strings, tables, dtypes, layouts or functions)"):format(ta)
end

---------------------------------------------------------------------------
-- the cache tree (launch.lua keeps one per device; any other cache of
-- binaries by call, such as k:compile's, can keep one the same way)
---------------------------------------------------------------------------
-- The entry stored for the call args[1..nargs] under root, or nil.
function M.find(root, args, nargs)
  local node = root
  for i = 1, nargs do
    node = node[arg_key(args[i])]
    if not node then return nil end
  end
  local g = node[ENTRY]
  if not g then return nil end
  local m = g.mask
  return g[m and m(unpack(args, 1, nargs)) or 0]
end

-- The group for args (created with its overlap test when new) and the call's
-- overlap mask: store the entry as group[mask].  args must be checked
-- (M.check_args) and not change afterwards (the cache keeps the tables).
function M.group(root, args, nargs)
  local node = root
  for i = 1, nargs do
    local key = arg_key(args[i])
    assert(key ~= BAD, "cute.specialise: an argument that cannot be keyed reached the cache")
    local nx = node[key]
    if not nx then nx = {}; node[key] = nx end
    node = nx
  end
  local g = node[ENTRY]
  if not g then g = { mask = M.make_mask(args, nargs) }; node[ENTRY] = g end
  return g, g.mask and g.mask(unpack(args, 1, nargs)) or 0
end

---------------------------------------------------------------------------
-- argument counts and kinds
---------------------------------------------------------------------------
-- n, isvararg, names of a kernel function's parameters
function M.param_info(fn)
  local info = debug.getinfo(fn, "u")
  local n, names = info.nparams or 0, {}
  for i = 1, n do names[i] = debug.getlocal(fn, i) or ("arg" .. i) end
  return n, info.isvararg and true or false, names
end

-- the number of arguments: up to the last non-nil one (the launch path cannot
-- tell a trailing nil from a missing argument, so no entry point does)
function M.count(...)
  local n = select("#", ...)
  while n > 0 and type((select(n, ...))) == "nil" do n = n - 1 end
  return n
end

local function param_list(k)
  local names = {}
  for i = 1, k.nparams do names[i] = k.param_names[i] end
  if k.isvararg then names[#names + 1] = "..." end
  return table.concat(names, ", ")
end

local function arg_name(k, i)
  return k.param_names[i] or "..."
end

-- Raise at the user's line unless the call args[1..nargs] fits kernel k.
-- launching: the tensors must have device addresses.
function M.check_args(k, args, nargs, launching)
  local np, va = k.nparams, k.isvararg
  if nargs < np or (nargs > np and not va) then
    cf.fail(("cute.kernel %s: expected %s%d argument%s (%s), got %d%s"):format(k.name, va and "at least " or "",
      np, np == 1 and "" or "s", param_list(k), nargs,
      nargs < np and " (nil arguments count only before the last non-nil one; pass false for an absent option)"
      or ""))
  end
  for i = 1, nargs do
    local a = args[i]
    if type(a) == "table" and is_host_tensor(a) then
      if launching and (tonumber(a.ptr) or 0) == 0 then
        cf.fail(("cute.kernel %s: argument %d (%s): a tensor without a device address (a cute.tensor_spec, or a " ..
          "freed tensor) cannot be launched; k:ir, k:compile and k:ptx take specs"):format(k.name, i, arg_name(k, i)))
      end
    elseif arg_key(a) == BAD then
      cf.fail(("cute.kernel %s: argument %d (%s): %s"):format(k.name, i, arg_name(k, i), explain(a)))
    end
  end
end

-- The launch configuration k(cfg, ...) / k:launch(cfg) must be a plain table.
function M.check_cfg(k, cfg)
  if type(cfg) ~= "table" or is_host_tensor(cfg) or is_scalar(cfg) then
    local what = type(cfg) == "table" and (is_host_tensor(cfg) and "a tensor" or "a typed scalar") or ("a " .. type(cfg))
    cf.fail(("cute.kernel %s: the first argument of k(cfg, args...) is the launch configuration " ..
      "{grid = ..., block = ...}, got %s"):format(k.name, what))
  end
end

---------------------------------------------------------------------------
-- overlap of tensor arguments
---------------------------------------------------------------------------
local function elem_bytes(t)
  local e = tr.dtype_ir[t.dtype.name]
  return e and tr.tinfo[e] and tr.tinfo[e].bits / 8 or t.dtype.size or 1
end


-- byte offsets [lo, hi) from the tensor's pointer that it may touch
local function extent(t)
  local shape = t.shape
  local st = t.strides or row_major(shape)
  local lo, hi = 0, 1
  for d = 1, #shape do
    local e = (shape[d] - 1) * st[d]
    if e < 0 then lo = lo + e else hi = hi + e end
  end
  local b = elem_bytes(t)
  return lo * b, hi * b
end
M.extent = extent

-- The overlap test of a signature, generated once per cache group: straight
-- line code (no loops or allocation).  Static tensors' extents are constants
-- (the signature fixes shape and strides); dynamic ones are computed from
-- their shape and strides at each call.  false when no tensor is passed.
function M.make_mask(args, nargs)
  local tens = {}
  for i = 1, nargs do
    local a = args[i]
    if type(a) == "table" and is_host_tensor(a) then tens[#tens + 1] = i end
  end
  if #tens == 0 then return false end
  local an = {}
  for i = 1, nargs do an[i] = "a" .. i end
  local src = { "local tonumber, row_major = ...", ("return function(%s)"):format(table.concat(an, ", ")) }
  for _, i in ipairs(tens) do
    local a = args[i]
    src[#src + 1] = ("  local l%d = tonumber(a%d.ptr) or 0; if l%d == 0 then return -1 end"):format(i, i, i)
    if a.dynamic then
      src[#src + 1] = ("  local h%d; do local s = a%d.shape; local st = a%d.strides or row_major(s); local lo, hi, e = 0, 1")
        :format(i, i, i)
      for d = 1, #a.shape do
        src[#src + 1] = ("    e = (s[%d] - 1) * st[%d]; if e < 0 then lo = lo + e else hi = hi + e end"):format(d, d)
      end
      local b = elem_bytes(a)
      src[#src + 1] = ("    h%d = l%d + hi * %d; l%d = l%d + lo * %d end"):format(i, i, b, i, i, b)
    else
      local lo, hi = extent(a)
      src[#src + 1] = ("  local h%d = l%d + %d; l%d = l%d + %d"):format(i, i, hi, i, i, lo)
    end
  end
  if #tens == 1 then
    src[#src + 1] = "  return 0"
  else
    local sum = {}
    for x = 1, #tens do
      local i = tens[x]
      src[#src + 1] = ("  local o%d = false"):format(i)
      sum[#sum + 1] = ("(o%d and %d or 0)"):format(i, 2 ^ (i - 1))
    end
    for x = 1, #tens do
      for y = x + 1, #tens do
        local i, j = tens[x], tens[y]
        src[#src + 1] = ("  if l%d < h%d and l%d < h%d then o%d = true; o%d = true end"):format(i, j, j, i, i, j)
      end
    end
    src[#src + 1] = "  return " .. table.concat(sum, " + ")
  end
  src[#src + 1] = "end"
  return assert(loadstring(table.concat(src, "\n"), "=[cute launch overlap]"))(tonumber, row_major)
end

-- The overlap mask for k:ir / k:compile / k:ptx: tensors overlap when they
-- are the same table (or views of it through cute.dynamic), share an alias
-- group (cute.tensor_spec(..., {alias = g})), or both have device addresses
-- (runtime tensors, specs with {ptr = p}) and their byte ranges meet.  Specs
-- without an address or a group are distinct allocations.
function M.static_mask(args, nargs)
  local info = {}
  for i = 1, nargs do
    local a = args[i]
    if type(a) == "table" and is_host_tensor(a) then
      local p = tonumber(a.ptr) or 0
      local lo, hi = extent(a)
      info[#info + 1] = { i = i, base = rawget(a, "base") or a, group = a.alias,
        lo = p ~= 0 and p + lo or nil, hi = p ~= 0 and p + hi or nil }
    end
  end
  local over = {}
  for x = 1, #info do
    for y = x + 1, #info do
      local u, v = info[x], info[y]
      if rawequal(u.base, v.base) or (u.group ~= nil and u.group == v.group)
        or (u.lo and v.lo and u.lo < v.hi and v.lo < u.hi) then
        over[u.i], over[v.i] = true, true
      end
    end
  end
  local m = 0
  for i in pairs(over) do m = m + 2 ^ (i - 1) end
  return m
end

-- C.CUTE_P_NOALIAS for tensor argument i unless the mask says it overlaps
-- another one (no mask: not noalias)
function M.noalias_flag(mask, i)
  if mask == nil or mask < 0 then return 0 end
  return math.floor(mask / 2 ^ (i - 1)) % 2 == 1 and 0 or cf.C.CUTE_P_NOALIAS
end

function M.init(deps)
  tensor_sig, is_scalar, is_host_tensor = deps.tensor_sig, deps.is_scalar, deps.is_host_tensor
  return M
end

return M
