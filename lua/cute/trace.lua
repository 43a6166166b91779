-- cute.trace: runs a kernel's Lua function with proxy values, recording IR.
--
-- A traced Value stands for an SSA value of the kernel IR (include/cute_ir.h):
-- arithmetic and comparison operators on it emit IR; Lua numbers mix in as
-- constants.  Control flow is structured: cute.range (loops), cute.if_then,
-- cute.while_, and mutable variables (cute.var) carry values across regions.
--
-- Lua cannot overload truthiness and coerces comparison results to booleans,
-- so a comparison of traced values returns `true` and leaves the IR condition
-- *pending*; cute.if_then / cute.where / cute.while_ consume it.  A comparison
-- still pending at the next region boundary (a loop, a branch, the end of the
-- kernel) was used by Lua itself (`if a < b then`): that raises an error at
-- the comparison's line saying what to write instead.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local M = {}

-- scalar type codes and properties: the one table in cute.dtype
local dt = require("cute.dtype")
local arith = require("cute.arith")
M.T = dt.T
local tinfo = dt.scalars
M.tinfo = tinfo
local T = dt.T
local T_I1, T_I32, T_I64, T_U32, T_U64, T_F32 = T.I1, T.I32, T.I64, T.U32, T.U64, T.F32

-- dtype name (runtime dtypes) -> IR scalar type of its elements in memory
M.dtype_ir = dt.dtype_ir

---------------------------------------------------------------------------
-- trace state
---------------------------------------------------------------------------
local S = nil -- the current trace: { ir, open = {region ids}, pending, ... }

function M.active() return S ~= nil end
function M.state() return S end

local user_frame = cf.user_frame
M.user_frame = user_frame

local function where() return cf.where() or "?" end
M.where = where

-- Raise an error located at the user's line.
local fail = cf.fail
M.fail = fail

-- the sticky IR error of the current trace, at the user's line
local function ir_fail() cf.ir_fail(S.ir) end

-- The op's source location for the IR: the user's frame, its file named by the
-- chunk's whole source path ("@dir/k.lua" -> "dir/k.lua"; Lua's short_src cuts long
-- paths to "...tail", which no tool could open), a chunk named "=name" (a C host's, or
-- load(s, "=name")) by that name with its "=", a chunk named by its text by short_src
-- ([string "..."]).  Codegen makes relative file paths absolute for the PTX's .file
-- (lineinfo) and leaves the other two as they are.
-- (setloc runs for every op: per frame one getinfo "fl"; the function's name for
-- the IR, or false for cute's own, is cached per function: a third less time
-- than getinfo "Sl" per frame.)
local fn_src = setmetatable({}, { __mode = "k" })
local getinfo = debug.getinfo
local function loc_frame()
  for level = 3, 60 do
    local info = getinfo(level, "fl")
    if not info then break end
    local fn = info.func
    local n = fn_src[fn]
    if n == nil then
      local si = getinfo(fn, "S")
      local c = si.source:sub(1, 1)
      n = not cf.is_lib_source(si.source)
        and (c == "@" and si.source:sub(2) or c == "=" and si.source or si.short_src) or false
      fn_src[fn] = n
    end
    if n and info.currentline > 0 then return n, info.currentline end
  end
  return nil, nil
end

local last_file, last_line
local function setloc()
  local f, l = loc_frame()
  if not f then f, l = "?", 0 end
  if l ~= last_line or f ~= last_file then
    last_file, last_line = f, l
    C.cute_ir_set_loc(S.ir, f, l)
  end
  return f, l
end

local function need_trace(what)
  if not S then
    fail((what or "this operation") .. " is only available inside a kernel (cute.kernel) while it is traced")
  end
end
M.need_trace = need_trace

---------------------------------------------------------------------------
-- Values
---------------------------------------------------------------------------
-- Values are cdata (LuaJIT calls a cdata's comparison metamethods also
-- against plain numbers, which Lua tables do not allow).
local V = {}
M.V = V
ffi.cdef [[
typedef struct cute_traced {
  int32_t ref;   /* IR value ref                                  */
  int32_t t;     /* IR type ref                                   */
  int32_t r;     /* region id where it was defined (0: top)       */
  int32_t div;   /* known divisibility of an integer value        */
  int32_t line;  /* Lua source line of the definition             */
  int32_t isc;   /* 1: a constant with value cv                   */
  double cv;     /* the constant's value (floats: rounded to t)   */
  uint64_t cb;   /* an integer constant's bits (exact)            */
} cute_traced;
]]
local tv_t = ffi.typeof("cute_traced")
local istype = ffi.istype

local function is_value(x) return istype(tv_t, x) end
M.is_value = is_value

local function gcd(a, b)
  while b ~= 0 do a, b = b, a % b end
  return math.abs(a)
end

-- new Value for IR ref with type t; div = known divisibility (ints)
local function mk(ref, t, div)
  if ref == 0 then ir_fail() end
  return tv_t(ref, t, S.region, math.min(div or 1, 2 ^ 30), last_line or 0, 0, 0, 0)
end
M.mk = mk

local pending_check -- forward

-- Check a Value may be used here (its region is still open).
local function usable(v)
  if not S.open[v.r] then
    fail(("a traced value defined at line %s inside a loop or branch that has ended is used here; " ..
      "carry values out of cute.range / cute.if_then bodies with cute.var"):format(tostring(v.line)))
  end
  return v
end

local function fmt_num(x) return arith.tostr(x) end

-- A constant of type t.  An integer type needs an integral x in its range
-- (`what`: the operation, for the message); a float type rounds x.
local function const(t, x, what)
  local info = tinfo[t]
  local ref, cv, cb
  if type(x) == "boolean" then x = x and 1 or 0 end
  if info and info.xfloat then return M.cvt(const(T.F32, x, what), t) end -- tf32/fp8: the device's cvt
  if info and info.float then
    cv = arith.round(t, tonumber(x))
    ref = C.cute_ir_const_float(S.ir, t, cv)
    cb = 0
  elseif not info then
    ref = C.cute_ir_const_int(S.ir, t, x)
    cv, cb = x, 0
  else
    if not arith.integral(x) then
      fail(("%s%s is not an integer (needed as %s)"):format(what and (what .. ": ") or "", fmt_num(x),
        info and info.name or "?"))
    end
    if info and not arith.fits(t, x) then
      fail(("%s%s does not fit %s"):format(what and (what .. ": ") or "", fmt_num(x), info.name))
    end
    cb = arith.to_bits(t, x)
    x = arith.value(t, cb)
    cv = tonumber(x)
    ref = C.cute_ir_const_int(S.ir, t, ffi.cast("int64_t", cb))
  end
  if ref == 0 then ir_fail() end
  local d = (info and info.int and cv ~= 0) and math.min(math.abs(cv), 2 ^ 30) or (cv == 0 and 2 ^ 30 or 1)
  return tv_t(ref, t, 0, d, last_line or 0, 1, cv, cb)
end
M.const = const

-- Default type of a Lua number mixing into traced code.
-- (an integer in i32 range: i32; a larger integer: i64; otherwise f32)
local num_type = arith.num_type

local function cvt(v, t)
  if v.t == t then return v end
  if v.isc == 1 and tinfo[v.t] and tinfo[t] and not tinfo[t].xfloat then -- fold: the conversion rule of cute.arith
    return const(t, arith.convert(v.t, t, tinfo[v.t].float and v.cv or arith.value(v.t, v.cb)))
  end
  setloc()
  local ref = C.cute_ir_cvt(S.ir, t, v.ref, 0)
  return mk(ref, t, tinfo[t] and tinfo[t].int and v.div or 1)
end
M.cvt = cvt

-- the exact value of a constant Value (number, or int64/uint64 cdata), else nil
local function const_value(v)
  if v.isc ~= 1 then return nil end
  local info = tinfo[v.t]
  if info and info.int then return arith.value(v.t, v.cb) end
  return v.cv
end

local function tname(t) return tinfo[t] and tinfo[t].name or "value" end

local BITWISE = { ["cute.band"] = true, ["cute.bor"] = true, ["cute.bxor"] = true }

-- Bring two operands (Values or numbers) to one type (cute.arith.promote).
-- A Lua number takes the traced operand's type and must fit it; a
-- non-integral number with a traced integer makes both f32.  `sym` names the
-- operation for messages ("+", "cute.band", ...).
local function unify(a, b, sym)
  local av, bv = is_value(a), is_value(b)
  if av and bv then
    usable(a); usable(b)
    if a.t == b.t then return a, b end
    local t = arith.promote(a.t, b.t)
    if not t then
      fail(("%s: operand types %s and %s do not combine"):format(sym or "operation",
        ffi.string(C.cute_ir_type_name(S.ir, a.t)), ffi.string(C.cute_ir_type_name(S.ir, b.t))))
    end
    return cvt(a, t), cvt(b, t)
  end
  if not av and not bv then -- two Lua numbers: each by num_type, then the common type
    if not (type(a) == "number" or arith.is64(a)) or not (type(b) == "number" or arith.is64(b)) then
      fail(("%s: expected numbers or traced values, got %s and %s"):format(sym or "operation", type(a), type(b)))
    end
    local t = arith.promote(num_type(a), num_type(b))
    return const(t, a, sym), const(t, b, sym)
  end
  local v, x = a, b
  if bv then v, x = b, a end
  usable(v)
  local function ctx()
    local l, r = "x", fmt_num(x)
    if bv then l, r = r, l end
    if sym and sym:match("^%a") then return ("in %s(%s, %s), x: %s"):format(sym, l, r, tname(v.t)) end
    return ("in %s %s %s, x: %s"):format(l, sym or "op", r, tname(v.t))
  end
  if type(x) == "boolean" and v.t == T_I1 then x = x and 1 or 0 end
  if type(x) ~= "number" and not arith.is64(x) then
    fail(("%s: cannot combine a traced %s with a %s value (%s)"):format(sym or "operation", tname(v.t),
      type(x), tostring(x)))
  end
  local info = tinfo[v.t]
  if info and info.int and BITWISE[sym] and type(x) == "number" and x % 1 == 0 and
      x >= -2 ^ (info.bits - 1) and x < 2 ^ info.bits then
    x = arith.value(v.t, arith.to_bits(v.t, x)) -- a bit pattern: 0xffffffff is -1 as i32
  end
  if info and info.int then
    if not arith.integral(x) then
      v = cvt(v, T_F32)
    elseif not arith.fits(v.t, x) then
      fail(("%s does not fit %s (%s)"):format(fmt_num(x), info.name, ctx()))
    end
  end
  local c = const(v.t, x, sym)
  if bv then return c, v end
  return v, c
end
M.unify = unify

-- Lift a number or Value to a Value (of type t when a number; default by value).
local function lift(x, t)
  if is_value(x) then return usable(x) end
  if type(x) == "boolean" then return const(T_I1, x and 1 or 0) end
  if type(x) ~= "number" then fail("expected a number or a traced value, got " .. type(x) .. " " .. tostring(x)) end
  return const(t or num_type(x), x)
end
M.lift = lift

local OP = {}
for _, n in ipairs({ "ADD", "SUB", "MUL", "DIV", "REM", "MIN", "MAX", "AND", "OR", "XOR", "SHL", "SHR",
  "NEG", "ABS", "NOT", "FMA", "EQ", "NE", "LT", "LE", "GT", "GE", "SELECT", "ISNAN",
  "SQRT", "RSQRT", "RCP", "EXP", "EXP2", "LOG", "LOG2", "SIN", "COS", "TANH", "ERF", "POW",
  "FLOOR", "CEIL", "TRUNC", "ROUND", "POPC", "CLZ", "BREV", "PRMT", "EXTRACT", "INSERT", "VEC",
  "BITCAST", "PTRCAST", "MULHI" }) do
  OP[n] = C["CUTE_IR_" .. n]
end
M.OP = OP

-- operator names for messages, and the cute.arith rule of each op
local SYM = { [OP.ADD] = "+", [OP.SUB] = "-", [OP.MUL] = "*", [OP.DIV] = "/", [OP.REM] = "cute.rem",
  [OP.MIN] = "cute.min", [OP.MAX] = "cute.max", [OP.AND] = "cute.band", [OP.OR] = "cute.bor",
  [OP.XOR] = "cute.bxor", [OP.SHL] = "cute.lshift", [OP.SHR] = "cute.rshift", [OP.POW] = "^" }
M.SYM = SYM
local RULE = { [OP.ADD] = "add", [OP.SUB] = "sub", [OP.MUL] = "mul", [OP.DIV] = "div", [OP.REM] = "rem",
  [OP.MIN] = "min", [OP.MAX] = "max", [OP.AND] = "and", [OP.OR] = "or", [OP.XOR] = "xor",
  [OP.SHL] = "shl", [OP.SHR] = "shr", [OP.NEG] = "neg", [OP.NOT] = "not", [OP.ABS] = "abs" }

-- two integer constants fold by the rule the GPU code follows
local function foldable(a, b)
  local i = tinfo[a.t]
  return a.isc == 1 and (b == nil or b.isc == 1) and i and i.int and a.t ~= T_I1
end

local function binop(opc, a, b, divf, sym)
  a, b = unify(a, b, sym or SYM[opc])
  if RULE[opc] and foldable(a, b) then
    return const(a.t, arith.fold2(RULE[opc], a.t, const_value(a), const_value(b)))
  end
  setloc()
  local ref = C.cute_ir_op2(S.ir, opc, a.ref, b.ref)
  return mk(ref, a.t, divf and divf(a, b) or 1)
end
M.binop = binop

local function unop(opc, a)
  a = lift(a)
  if RULE[opc] and foldable(a) then return const(a.t, arith.fold1(RULE[opc], a.t, const_value(a))) end
  setloc()
  return mk(C.cute_ir_op1(S.ir, opc, a.ref), a.t)
end
M.unop = unop

-- a % b, Lua's floored modulo: the result has the divisor's sign.
-- Integers: r = rem(a, b); r + b when r ~= 0 and r, b differ in sign.
-- Floats: a - floor(a / b) * b, each step in the operand type (as Lua does).
-- mod(a, b, true) is cute.rem: C's truncating remainder (trunc for floor).
local function mod(a, b, trunc)
  a, b = unify(a, b, trunc and "cute.rem" or "%")
  local info = tinfo[a.t]
  if info and info.int and trunc then return binop(OP.REM, a, b) end
  if info and info.int and a.t ~= T_I1 then
    if foldable(a, b) then return const(a.t, arith.fold2("mod", a.t, const_value(a), const_value(b))) end
    setloc()
    local r = mk(C.cute_ir_op2(S.ir, OP.REM, a.ref, b.ref), a.t)
    if not info.signed then return r end
    local zero = const(a.t, 0)
    local nz = C.cute_ir_op2(S.ir, OP.NE, r.ref, zero.ref)
    local sx = C.cute_ir_op2(S.ir, OP.LT, C.cute_ir_op2(S.ir, OP.XOR, r.ref, b.ref), zero.ref)
    local c = C.cute_ir_op2(S.ir, OP.AND, nz, sx)
    local adj = C.cute_ir_op2(S.ir, OP.ADD, r.ref, b.ref)
    return mk(C.cute_ir_op3(S.ir, OP.SELECT, c, adj, r.ref), a.t)
  end
  if info and info.float then
    setloc()
    local q = C.cute_ir_op2(S.ir, OP.DIV, a.ref, b.ref)
    local fq = C.cute_ir_op1(S.ir, trunc and OP.TRUNC or OP.FLOOR, q)
    local p = C.cute_ir_op2(S.ir, OP.MUL, fq, b.ref)
    return mk(C.cute_ir_op2(S.ir, OP.SUB, a.ref, p), a.t)
  end
  fail(("%%: needs numbers, got %s"):format(tname(a.t)))
end
M.mod = mod

local function add_div(a, b) return gcd(a.div, b.div) end
local function mul_div(a, b) return math.min(a.div * b.div, 2 ^ 30) end

-- constant folding helpers: both constants -> Lua number arithmetic is done by
-- callers (index math) before reaching here.
-- pointer +/- integer (CuTe DSL's `ptr + n`): the address n elements on
local function is_ptr(x) return is_value(x) and C.cute_ir_type_kind(S.ir, x.t) == C.CUTE_T_PTR end
local function ptr_add(p, n, neg)
  local o = lift(n)
  if not (tinfo[o.t] and tinfo[o.t].int and o.t ~= T_I1) then
    fail(("pointer arithmetic: a pointer moves by an integer number of elements, got %s"):format(tname(o.t)))
  end
  if neg then o = unop(OP.NEG, o) end
  setloc()
  return mk(C.cute_ir_gep(S.ir, p.ref, o.ref), p.t)
end
V.__add = function(a, b)
  if is_ptr(a) then return ptr_add(a, b) end
  if is_ptr(b) then return ptr_add(b, a) end
  return binop(OP.ADD, a, b, add_div)
end
V.__sub = function(a, b)
  if is_ptr(a) and not is_ptr(b) then return ptr_add(a, b, true) end
  return binop(OP.SUB, a, b, add_div)
end
V.__mul = function(a, b) return binop(OP.MUL, a, b, mul_div) end
V.__div = function(a, b)
  local x = is_value(a) and a or b
  local info = tinfo[x.t]
  if info and info.int then
    local other = rawequal(x, a) and b or a
    if not (is_value(other) and tinfo[other.t].float) and not (type(other) == "number" and other % 1 ~= 0) then
      fail("'/' on traced integers is ambiguous in Lua: write cute.div(a, b) for integer (truncating) " ..
        "division, or convert first, e.g. cute.Float32(a) / b")
    end
  end
  return binop(OP.DIV, a, b)
end
V.__mod = function(a, b) return mod(a, b) end
V.__unm = function(a) return unop(OP.NEG, a) end
V.__pow = function(a, b)
  a, b = unify(a, b, "^")
  if not tinfo[a.t].float then a, b = cvt(a, T_F32), cvt(b, T_F32) end
  setloc()
  return mk(C.cute_ir_op(S.ir, OP.POW, 0, 2, ffi.new("int32_t[2]", a.ref, b.ref), 0, 0), a.t)
end
V.__concat = function(a, b) fail("'..' on a traced value: traced values are not strings; use cute.printf") end
V.__len = function() fail("'#' on a traced value: use cute.size for tensors") end
V.__tostring = function(v)
  local t = tinfo[v.t]
  return ("<traced %s %%%d>"):format(t and t.name or ffi.string(C.cute_ir_type_name(S and S.ir, v.t)), v.ref)
end

-- comparisons: emit, leave pending, return true
local CSYM = { [OP.LT] = "<", [OP.LE] = "<=", [OP.GT] = ">", [OP.GE] = ">=", [OP.EQ] = "==", [OP.NE] = "~=" }
local CRULE = { [OP.LT] = "lt", [OP.LE] = "le", [OP.GT] = "gt", [OP.GE] = "ge", [OP.EQ] = "eq", [OP.NE] = "ne" }
local function cmp(opc, a, b)
  a, b = unify(a, b, CSYM[opc])
  local f, l = setloc()
  local ref = C.cute_ir_op2(S.ir, opc, a.ref, b.ref)
  local v = mk(ref, T_I1)
  local p = S.pending
  p[#p + 1] = { v = v, where = f .. ":" .. l }
  return true
end
V.__lt = function(a, b) return cmp(OP.LT, a, b) end
V.__le = function(a, b) return cmp(OP.LE, a, b) end
V.__eq = function(a, b)
  -- LuaJIT calls __eq of a cdata against anything: only numbers and traced
  -- values compare on the GPU; anything else (nil, tables) is simply unequal.
  local ta, tb = type(a), type(b)
  if not ((ta == "number" or is_value(a)) and (tb == "number" or is_value(b))) then return false end
  if not S then return rawequal(a, b) end
  return cmp(OP.EQ, a, b)
end

-- explicit comparison functions returning Values (usable in variables)
function M.cmp_value(opc, a, b)
  a, b = unify(a, b, CSYM[opc])
  if foldable(a, b) and CRULE[opc] then
    return const(T_I1, arith.fold2(CRULE[opc], a.t, const_value(a), const_value(b)) and 1 or 0)
  end
  setloc()
  return mk(C.cute_ir_op2(S.ir, opc, a.ref, b.ref), T_I1)
end

pending_check = function()
  if S and #S.pending > 0 then
    local w = S.pending[1].where
    S.pending = {}
    cf.fail_at(w, "a comparison of traced values was used as a Lua boolean (Lua cannot branch on " ..
      "values known only on the GPU). Write cute.if_then(a < b, function() ... end), " ..
      "cute.where(a < b, x, y), or keep the condition with cute.lt(a, b) / cute.eq(a, b)")
  end
end
M.pending_check = pending_check

-- Turn a condition argument into an i1 Value (consuming a pending comparison),
-- or return a Lua boolean for compile-time conditions.  fresh: the caller's
-- other arguments emit no IR (cute.if_then, cute.while_), so a comparison
-- meant for this call is the last instruction; an older one was left pending
-- by Lua itself (`if a < b then`) and must not become this condition.
function M.condition(c, what, fresh)
  if is_value(c) then
    pending_check()
    usable(c)
    if c.t ~= T_I1 then return M.cmp_value(OP.NE, c, 0) end
    return c
  end
  if type(c) == "boolean" then
    local p = S and S.pending
    if p and #p > 0 then
      if #p > 1 then
        local w = p[#p].where
        S.pending = {}
        cf.fail_at(w, (what or "condition") .. ": several traced comparisons are combined with Lua's " ..
          "and/or/not, which cannot see traced values: combine them with cute.logical_and(a < b, c < d) / " ..
          "cute.logical_or")
      end
      local pv = p[1].v
      if fresh and pv.ref ~= C.cute_ir_count(S.ir) then pending_check() end
      S.pending = {}
      if c then return pv end
      setloc()
      return mk(C.cute_ir_op1(S.ir, OP.NOT, pv.ref), T_I1)
    end
    return c
  end
  if M.is_var(c) then
    fail((what or "condition") .. ": a cute.var is not a condition: compare its value, e.g. v.value ~= 0")
  end
  fail((what or "condition") .. ": expected a comparison, a traced boolean or a Lua boolean, got " ..
    type(c) .. " " .. tostring(c))
end

-- Take the n pending comparisons behind n Lua booleans bools[1..n] (the
-- results Lua made of them: `~=` gives false, so that one is negated), oldest
-- first, for cute.logical_and(a < b, c ~= d).  Returns nil unless there are
-- exactly n pending.
function M.take_pending(n, bools)
  local p = S.pending
  if #p ~= n then return nil end
  local r = {}
  for i = 1, n do
    r[i] = p[i].v
    if bools and bools[i] == false then
      setloc()
      r[i] = mk(C.cute_ir_op1(S.ir, OP.NOT, r[i].ref), T_I1)
    end
  end
  S.pending = {}
  return r
end

-- The number of comparisons left pending (a Lua boolean stands for one of them).
function M.npending() return S and #S.pending or 0 end

-- methods on Values
function V.to(v, dt)
  local t = type(dt) == "table" and M.dtype_ir[dt.name] or dt
  if not t then fail("to: unknown dtype " .. tostring(dt)) end
  return cvt(usable(v), t)
end
function V.eq(a, b) return M.cmp_value(OP.EQ, a, b) end
function V.ne(a, b) return M.cmp_value(OP.NE, a, b) end
function V.lt(a, b) return M.cmp_value(OP.LT, a, b) end
function V.le(a, b) return M.cmp_value(OP.LE, a, b) end
function V.gt(a, b) return M.cmp_value(OP.GT, a, b) end
function V.ge(a, b) return M.cmp_value(OP.GE, a, b) end
function V.type_name(v) return ffi.string(C.cute_ir_type_name(S.ir, v.t)) end
-- the exact value when v is a constant (folded at trace time), else nil
function V.constant(v) return const_value(v) end
V.__index = V

---------------------------------------------------------------------------
-- regions and control flow
---------------------------------------------------------------------------
local function push_region(kind, line)
  S.nregion = S.nregion + 1
  local id = S.nregion
  S.open[id] = true
  S.stack[#S.stack + 1] = { id = id, kind = kind, line = line, file = last_file, parent = S.region }
  S.region = id
  return id
end

local function pop_region(kind)
  local top = S.stack[#S.stack]
  if not top or top.kind ~= kind then
    fail(("internal: region mismatch (%s)"):format(kind))
  end
  S.stack[#S.stack] = nil
  S.open[top.id] = nil
  S.region = top.parent
  return top
end
M.push_region, M.pop_region = push_region, pop_region

-- for i in cute.range(a, b [, step] [, {unroll = n | true | false}]) do ... end
-- cute.range(n) iterates 0..n-1: Python's range, half-open, a negative step
-- counts down (cute.range(63, -1, -1) is 63..0).  The body is traced once into
-- an IR loop.  A zero step is an error (a Lua number) or traps on the GPU (a
-- traced step: an assertion before the loop).  The induction variable is i64
-- when a bound is i64, else i32; the increment cannot wrap (codegen).
M.range_iters = setmetatable({}, { __mode = "k" })

local function range_bound(x, what, name)
  if type(x) == "number" then
    if x % 1 ~= 0 then fail(("%s: the %s must be an integer, got %s"):format(name, what, tostring(x))) end
    return x
  end
  if is_value(x) then
    local info = tinfo[x.t]
    if not (info and info.int and x.t ~= T_I1) then
      fail(("%s: the %s must be an integer, got a traced %s"):format(name, what, info and info.name or "value"))
    end
    return x
  end
  fail(("%s: the %s must be an integer (a Lua number or a traced integer), got %s %s"):format(
    name, what, type(x), tostring(x)))
end

function M.range(...)
  need_trace("cute.range")
  pending_check()
  local n = select("#", ...)
  local a, b, step, opts = ...
  if n > 4 then
    fail(("cute.range(a, b [, step] [, opts]): expected at most 4 arguments, got %d (a function returning " ..
      "several values, like cute.arch.block_dim(), spreads them all: take one with `local x = f()`)"):format(n))
  end
  if type(step) == "table" and opts == nil and n <= 3 then opts, step = step, nil end
  if opts ~= nil and type(opts) ~= "table" then
    fail(("cute.range: the 4th argument must be an options table {unroll = n | true | false}, got %s " ..
      "(a function returning several values, like cute.arch.block_dim(), spreads them all: take one " ..
      "with `local x = f()`)"):format(tostring(opts)))
  end
  if n == 0 or a == nil then fail("cute.range: expected cute.range(n) or cute.range(a, b [, step]), got no bound") end
  if b == nil then a, b = 0, a end
  if step == nil then step = 1 end
  a = range_bound(a, "start", "cute.range")
  b = range_bound(b, "end", "cute.range")
  step = range_bound(step, "step", "cute.range")
  if type(step) == "number" and step == 0 then fail("cute.range: the step is 0 (the loop would never end)") end
  local unroll = 0
  if opts then
    for k in pairs(opts) do
      if k ~= "unroll" then fail("cute.range: unknown option " .. tostring(k) .. " (only unroll)") end
    end
    local u = opts.unroll
    if u == true then unroll = C.CUTE_UNROLL_FULL
    elseif u == false then unroll = C.CUTE_UNROLL_DISABLE
    elseif type(u) == "number" and u >= 0 and u % 1 == 0 then unroll = u
    elseif u ~= nil then fail("cute.range: unroll must be true, false or a count, got " .. tostring(u)) end
  end
  local it = T_I32
  for _, x in ipairs({ a, b, step }) do
    if is_value(x) and (x.t == T_I64 or x.t == T_U64 or x.t == T_U32) then it = T_I64 end
  end
  local lo, hi, st = lift(a, it), lift(b, it), lift(step, it)
  if lo.t ~= it then lo = cvt(lo, it) end
  if hi.t ~= it then hi = cvt(hi, it) end
  if st.t ~= it then st = cvt(st, it) end
  if is_value(step) then
    setloc()
    local nz = M.cmp_value(OP.NE, st, 0)
    cf.ir_check(S.ir, C.cute_ir_assert(S.ir, nz.ref, "cute.range: the step is 0"))
  end
  local state = 0
  local depth
  local iter = function()
    if state == 0 then
      state = 1
      local f, l = setloc()
      local iv = C.cute_ir_for(S.ir, lo.ref, hi.ref, st.ref, unroll)
      if iv == 0 then ir_fail() end
      push_region("for", l)
      depth = #S.stack
      local d = 1
      if type(a) == "number" and type(step) == "number" then d = gcd(a, step) end
      return mk(iv, it, d)
    elseif state == 1 then
      state = 2
      pending_check()
      if #S.stack ~= depth then
        fail("cute.range: the loop body left a region open")
      end
      pop_region("for")
      setloc()
      cf.ir_check(S.ir, C.cute_ir_end(S.ir))
      return nil
    end
    return nil
  end
  -- the front end (cute.control.forin) reads the loop from here instead of
  -- calling the iterator, so the body can carry locals and break
  M.range_iters[iter] = { t = it, lo = lo, hi = hi, st = st, unroll = unroll,
    div = (type(a) == "number" and type(step) == "number") and gcd(a, step) or 1 }
  return iter
end

-- the loop of a cute.range iterator not yet started (nil for anything else)
function M.range_spec(f)
  local s = M.range_iters[f]
  if type(s) == "table" and not s.used then
    s.used = true
    return s
  end
  return nil
end

-- for i in cute.range_constexpr(a, b [, step]): unrolled at trace time, the
-- same values as cute.range (half-open, negative steps count down).
function M.range_constexpr(...)
  local n = select("#", ...)
  local a, b, step = ...
  if n == 0 or n > 3 then
    fail(("cute.range_constexpr(a, b [, step]): expected 1 to 3 arguments, got %d"):format(n))
  end
  if b == nil then a, b = 0, a end
  if step == nil then step = 1 end
  for _, x in ipairs({ a, b, step }) do
    if type(x) ~= "number" then
      fail("cute.range_constexpr: bounds must be Lua numbers (known at trace time), got " .. tostring(x) ..
        "; use cute.range for loops over traced values")
    end
  end
  if step == 0 then fail("cute.range_constexpr: the step is 0 (the loop would never end)") end
  local i = a - step
  return function()
    i = i + step
    if (step > 0 and i < b) or (step < 0 and i > b) then return i end
  end
end

local function run_branch(fn, kind)
  local depth = #S.stack
  local r = fn()
  pending_check()
  if r ~= nil then
    fail("cute.if_then: branch functions cannot return traced values; assign results to a cute.var " ..
      "declared before the if (v.value = x)")
  end
  if #S.stack ~= depth then fail("cute.if_then: a branch left a region open") end
end

-- cute.if_then(cond, then_fn [, else_fn]).  A Lua boolean condition selects a
-- branch at trace time; a traced condition emits an IR if/else.
function M.if_then(...)
  need_trace("cute.if_then")
  local cond, then_fn, else_fn = ...
  local n = select("#", ...)
  if n < 2 or n > 3 then
    fail(("cute.if_then(cond, then_fn [, else_fn]): expected 2 or 3 arguments, got %d"):format(n))
  end
  local c = M.condition(cond, "cute.if_then", true)
  if type(then_fn) ~= "function" or (else_fn ~= nil and type(else_fn) ~= "function") then
    fail(("cute.if_then(cond, then_fn [, else_fn]): branches must be functions, got %s%s"):format(
      type(then_fn) ~= "function" and ("then_fn = " .. tostring(then_fn)) or "",
      (else_fn ~= nil and type(else_fn) ~= "function") and (" else_fn = " .. tostring(else_fn)) or ""))
  end
  if type(c) == "boolean" then
    if c then then_fn() elseif else_fn then else_fn() end
    return
  end
  local f, l = setloc()
  cf.ir_check(S.ir, C.cute_ir_if(S.ir, c.ref, 0))
  push_region("if", l)
  run_branch(then_fn)
  pop_region("if")
  if else_fn then
    setloc()
    cf.ir_check(S.ir, C.cute_ir_else(S.ir))
    push_region("if", l)
    run_branch(else_fn)
    pop_region("if")
  end
  setloc()
  cf.ir_check(S.ir, C.cute_ir_end(S.ir))
end

-- cute.while_(cond_fn, body_fn): cond_fn is traced (returns a condition).
function M.while_(...)
  need_trace("cute.while_")
  local cond_fn, body_fn = ...
  local n = select("#", ...)
  if n ~= 2 or type(cond_fn) ~= "function" or type(body_fn) ~= "function" then
    fail(("cute.while_(cond_fn, body_fn): expected two functions, got %d argument%s (%s, %s)"):format(
      n, n == 1 and "" or "s", tostring(cond_fn), tostring(body_fn)))
  end
  pending_check()
  local f, l = setloc()
  cf.ir_check(S.ir, C.cute_ir_while(S.ir))
  push_region("while", l)
  local c = M.condition(cond_fn(), "cute.while_", true)
  if type(c) == "boolean" then c = const(T_I1, c and 1 or 0) end
  setloc()
  cf.ir_check(S.ir, C.cute_ir_do(S.ir, c.ref))
  run_branch(body_fn)
  pop_region("while")
  setloc()
  cf.ir_check(S.ir, C.cute_ir_end(S.ir))
end

-- cute.where(cond, a, b) (M.select): a where cond holds, else b; a Lua boolean
-- cond picks one at trace time.  a, b: numbers, booleans, traced values or cute.vars.
local function where_operand(x, which)
  if M.is_var(x) then return x.value end
  if is_value(x) or type(x) == "number" or type(x) == "boolean" then return x end
  fail(("cute.where: the %s value must be a number, a boolean, a traced value or a cute.var, got %s %s")
    :format(which, type(x), tostring(x)))
end
function M.select(...)
  need_trace("cute.where")
  local n = select("#", ...)
  if n ~= 3 then
    fail(("cute.where(cond, a, b): expected 3 arguments, got %d (a function returning several values, like " ..
      "cute.arch.block_dim(), spreads them all: take one with `local x = f()`)"):format(n))
  end
  local cond, a, b = ...
  local c = M.condition(cond, "cute.where")
  a, b = where_operand(a, "second"), where_operand(b, "third")
  if type(c) == "boolean" then
    if c then return a end
    return b
  end
  if type(a) == "boolean" then a = lift(a) end
  if type(b) == "boolean" then b = lift(b) end
  if not is_value(a) and not is_value(b) then a = lift(a) end
  a, b = unify(a, b)
  setloc()
  return mk(C.cute_ir_op3(S.ir, OP.SELECT, c.ref, a.ref, b.ref), a.t)
end

-- early return from the kernel
function M.return_(...)
  need_trace("cute.return_")
  if select("#", ...) > 0 then
    fail(("cute.return_(): a kernel returns nothing, got %d argument%s (%s)"):format(select("#", ...),
      select("#", ...) == 1 and "" or "s", tostring((...))))
  end
  pending_check()
  setloc()
  cf.ir_check(S.ir, C.cute_ir_ret(S.ir, 0))
end

---------------------------------------------------------------------------
-- mutable variables
---------------------------------------------------------------------------
-- A cute.var is a cdata, like a traced value, so that LuaJIT calls its
-- metamethods against plain numbers too: `v == 0` and `v ~= 0` are traced
-- comparisons (on a Lua table, `==` with a number is simply false).
ffi.cdef [[
typedef struct cute_tvar {
  int32_t ref;   /* IR var ref                        */
  int32_t t;     /* value type                        */
  int32_t r;     /* region id where it was declared   */
} cute_tvar;
]]
local var_t = ffi.typeof("cute_tvar")
local Var = {}
M.Var = Var
local function is_var(x) return istype(var_t, x) end

local function var_get(v)
  if not S or not S.open[v.r] then fail("a cute.var declared inside an ended loop or branch (or another trace) is used here") end
  setloc()
  return mk(C.cute_ir_vget(S.ir, v.ref), v.t, 1)
end

Var.__index = function(v, k)
  if k == "value" then return var_get(v) end
  return Var[k]
end
Var.__newindex = function(v, k, x)
  if k ~= "value" then fail("cute.var: only .value can be assigned (got ." .. tostring(k) .. ")") end
  if is_var(x) then x = var_get(x) end
  local val = lift(x, v.t)
  if val.t ~= v.t then val = cvt(val, v.t) end
  setloc()
  cf.ir_check(S.ir, C.cute_ir_vset(S.ir, v.ref, val.ref))
end
function Var.get(v) return var_get(v) end
function Var.set(v, x) Var.__newindex(v, "value", x) end
for _, mm in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__lt", "__le" }) do
  Var[mm] = function(a, b)
    if is_var(a) then a = var_get(a) end
    if is_var(b) then b = var_get(b) end
    return V[mm](a, b)
  end
end
Var.__eq = function(a, b)
  if is_var(a) and is_var(b) and a.ref == b.ref then return true end
  local ta, tb = type(a), type(b)
  if not ((ta == "number" or is_value(a) or is_var(a)) and (tb == "number" or is_value(b) or is_var(b))) then
    return false
  end
  if is_var(a) then a = var_get(a) end
  if is_var(b) then b = var_get(b) end
  return V.__eq(a, b)
end
Var.__unm = function(a) return V.__unm(var_get(a)) end
Var.__tostring = function(v) return ("<cute.var %s>"):format(tinfo[v.t] and tinfo[v.t].name or "?") end
ffi.metatype(var_t, Var)

-- cute.var(init [, dtype]): a mutable variable (lowered to a register).
function M.var(init, dt)
  need_trace("cute.var")
  pending_check()
  local t
  if dt then
    t = type(dt) == "table" and M.dtype_ir[dt.name] or dt
    if not tinfo[t] then fail("cute.var: unknown dtype " .. tostring(dt)) end
  end
  if is_var(init) then init = var_get(init) end
  local iv = lift(init, t)
  if t and iv.t ~= t then iv = cvt(iv, t) end
  setloc()
  local ref = C.cute_ir_var(S.ir, iv.t, iv.ref)
  if ref == 0 then ir_fail() end
  return var_t(ref, iv.t, S.region)
end

M.is_var = is_var

---------------------------------------------------------------------------
-- trace session
---------------------------------------------------------------------------
-- begin(ir): make ir current; returns the previous state (to support nesting).
-- Pending comparisons live in S.pending: S routes every `S.pending = t` through
-- its metatable, which gives t a guard.  A comparison is consumed (or
-- reported) by the next condition, region or barrier; dozens left pending
-- mean a Lua loop runs on one (`while i < n do` without the front end: true
-- forever at trace time), which is reported instead of hanging the tracer.
local MAX_PENDING = 64
local pending_mt = { __newindex = function(t, k, v)
  rawset(t, k, v)
  if type(k) == "number" and k > MAX_PENDING then
    local w = t[1].where
    cf.fail_at(w, "a comparison of traced values was used as a Lua boolean again and again (a Lua `while` or " ..
      "`repeat` on a traced condition never ends at trace time): write cute.while_(function() return a < b end, " ..
      "function() ... end)")
  end
end }
local state_mt = {
  __index = function(t, k) if k == "pending" then return rawget(t, "_pending") end end,
  __newindex = function(t, k, v)
    if k == "pending" then rawset(t, "_pending", setmetatable(v, pending_mt)) else rawset(t, k, v) end
  end,
}

-- Comparisons whose result nothing uses: without the front end, `if cute.lt(a, b) then`
-- makes one (Lua takes the traced value for true).  Returns "file:line: message" or nil.
function M.unused_comparison(ir)
  local text = ffi.string(C.cute_ir_print(ir))
  local defs, order, used = {}, {}, {}
  local file, line = "?", 0
  for l in text:gmatch("[^\n]+") do
    local f, n = l:match('^%s*loc "(.-)" (%d+)')
    if f then
      file, line = f, n
    else
      local def, rest = l:match("^%s*%%(%d+) = (.*)$")
      local op = rest and rest:match("^(%a+) i1 ")
      if op == "lt" or op == "le" or op == "gt" or op == "ge" or op == "eq" or op == "ne" then
        defs[def] = file .. ":" .. line
        order[#order + 1] = def
      end
      for u in (rest or l):gmatch("%%(%d+)") do used[u] = true end
    end
  end
  for _, d in ipairs(order) do
    if not used[d] then
      return defs[d] .. ": the result of this comparison is never used: if it is the condition of a Lua `if` " ..
        "(`if cute.lt(a, b) then`), Lua takes the traced value for true; write cute.if_then(cute.lt(a, b), " ..
        "function() ... end)"
    end
  end
  return nil
end

function M.begin(ir)
  local prev = S
  S = setmetatable({ ir = ir, open = { [0] = true }, stack = {}, region = 0, nregion = 0 }, state_mt)
  S.pending = {}
  last_file, last_line = nil, nil
  return prev
end

function M.finish(prev)
  local cur = S
  local ok, err = true, nil
  if #cur.pending > 0 then
    ok, err = false, cur.pending[1].where .. ": a comparison of traced values was used as a Lua boolean " ..
      "(Lua cannot branch on values known only on the GPU). Write cute.if_then(a < b, function() ... end)"
  elseif #cur.stack == 0 and cur.check_unused ~= false then
    local e = M.unused_comparison(cur.ir)
    if e then ok, err = false, e end
  end
  if ok and #cur.stack > 0 then
    local top = cur.stack[#cur.stack]
    ok, err = false, ("%s:%s: a %s region was never closed (a Lua `break` or `return` inside a cute.range " ..
      "body leaves it without closing it: let the front end rewrite the kernel, or use cute.if_then / " ..
      "cute.return_)"):format(tostring(top.file or "?"), tostring(top.line), top.kind)
  end
  S = prev
  last_file, last_line = nil, nil
  return ok, err
end

function M.abort(prev)
  S = prev
  last_file, last_line = nil, nil
end

M.setloc = setloc
M.ir_fail = ir_fail
ffi.metatype(tv_t, V)
M.gcd = gcd
return M
