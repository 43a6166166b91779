-- cute.arith: the arithmetic rules of kernel values, evaluated on Lua numbers.
--
-- One rule per operator (docs/DSL.md, "Arithmetic rules"), used three ways:
--   * trace.lua folds operations on traced constants with it,
--   * the cute.* helpers (cute.div, cute.band, cute.lshift, ...) fold two Lua
--     numbers with it,
--   * the code generator implements the same rule on the GPU.
-- Integers wrap (two's complement, modulo 2^bits); shifts clamp; division by
-- zero and INT_MIN / -1 have defined results; float -> int conversions
-- saturate (NaN -> 0); floats round to nearest even in their own precision.
--
-- Values: integers are Lua numbers, or int64_t / uint64_t cdata when a 64-bit
-- value is not exactly a double; floats are Lua numbers.
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")

local M = {}

-- scalar type codes and properties: the one table in cute.dtype
local dt = require("cute.dtype")
local T = dt.T
local T_I1, T_I32, T_I64, T_U64, T_F32, T_F64 = T.I1, T.I32, T.I64, T.U64, T.F32, T.F64
M.T = T

-- scalar type properties (name, bits, int, signed, float; min/max of integers;
-- p, emin, emax: float precision and exponent range)
local tinfo = dt.scalars
M.tinfo = tinfo

local u64, i64 = ffi.typeof("uint64_t"), ffi.typeof("int64_t")
local ZERO, ONE = ffi.cast(u64, 0), ffi.cast(u64, 1)
local ALL = bit.bnot(ZERO)
local function is64(x) return ffi.istype(i64, x) or ffi.istype(u64, x) end
M.is64 = is64

---------------------------------------------------------------------------
-- types
---------------------------------------------------------------------------
local function integral(x)
  if type(x) == "number" then return x % 1 == 0 end -- false for NaN and +-inf
  return is64(x)
end
M.integral = integral

-- The type a Lua number takes where nothing else decides: an integer in i32
-- range is i32, a larger integer (below 2^63 in magnitude) is i64, anything
-- else f32.
function M.num_type(x)
  if is64(x) then return ffi.istype(u64, x) and T_U64 or T_I64 end
  if x % 1 == 0 then
    if x >= -2 ^ 31 and x < 2 ^ 31 then return T_I32 end
    if x >= -2 ^ 63 and x < 2 ^ 63 then return T_I64 end
  end
  return T_F32
end

-- The common type of two operand types (symmetric): a float beats an integer;
-- of two floats the wider (f16 with bf16: f32); of two integers the wider, and
-- at equal width the unsigned one (C's usual conversions); i1 yields to any.
function M.promote(a, b)
  if a == b then return a end
  local x, y = tinfo[a], tinfo[b]
  if not (x and y) then return nil end
  if x.float and y.float then
    if x.bits == y.bits then return T_F32 end
    return x.bits > y.bits and a or b
  end
  if x.float then return a end
  if y.float then return b end
  if x.bits ~= y.bits then return x.bits > y.bits and a or b end
  return x.signed and b or a
end

-- Does the exact integer x (number or 64-bit cdata) lie in t's range?
function M.fits(t, x)
  local i = tinfo[t]
  if not i then return false end
  if i.float then return type(x) == "number" or is64(x) end
  if not integral(x) then return false end
  if type(x) == "number" then return x >= i.min and x < i.max + 1 end -- (2^63 - 1 is no double)
  if ffi.istype(u64, x) then
    if i.bits == 64 then return not i.signed or x < bit.lshift(ONE, 63) end
    return x <= i.max
  end
  if i.bits == 64 then return i.signed or x >= 0 end
  return x >= i.min and x <= i.max
end

---------------------------------------------------------------------------
-- integers: a value of type t is kept as uint64 bits (its low `bits` bits)
---------------------------------------------------------------------------
local function mask_of(n) return n >= 64 and ALL or bit.lshift(ONE, n) - 1 end

-- exact integer (number within [-2^63, 2^64) or 64-bit cdata) -> its bits in t
local function to_bits(t, x)
  local b
  if type(x) == "number" then
    if x < 0 then b = ffi.cast(u64, ffi.cast(i64, x)) else b = ffi.cast(u64, x) end
  else
    b = ffi.cast(u64, x)
  end
  return bit.band(b, mask_of(tinfo[t].bits))
end
M.to_bits = to_bits

-- bits of t -> its value as int64 (signed types) or uint64 (unsigned)
local function sval(t, b)
  local i = tinfo[t]
  if not i.signed then return b end
  if i.bits < 64 and bit.band(b, bit.lshift(ONE, i.bits - 1)) ~= ZERO then
    b = bit.bor(b, bit.bnot(mask_of(i.bits)))
  end
  return ffi.cast(i64, b)
end

-- a 64-bit value as a Lua number when exact, else the cdata itself
local function out(v)
  if v <= 2 ^ 53 and (ffi.istype(u64, v) or v >= -2 ^ 53) then return tonumber(v) end
  return v
end

-- the value of bits b of type t (number when exact)
function M.value(t, b) return out(sval(t, b)) end

local function ibin(op, t, a, b)
  local i = tinfo[t]
  local n, m = i.bits, mask_of(i.bits)
  if op == "add" then return bit.band(a + b, m)
  elseif op == "sub" then return bit.band(a - b, m)
  elseif op == "mul" then return bit.band(a * b, m)
  elseif op == "and" then return bit.band(a, b)
  elseif op == "or" then return bit.bor(a, b)
  elseif op == "xor" then return bit.bxor(a, b)
  elseif op == "shl" then
    if b >= n then return ZERO end -- the amount is unsigned: a negative one is huge
    return bit.band(bit.lshift(a, tonumber(b)), m)
  elseif op == "shr" then
    if i.signed then
      local s = b >= n and n - 1 or tonumber(b) -- sign fill
      return bit.band(ffi.cast(u64, bit.arshift(sval(t, a), s)), m)
    end
    if b >= n then return ZERO end
    return bit.rshift(a, tonumber(b))
  end
  local va, vb = sval(t, a), sval(t, b)
  if op == "min" then return (va <= vb) and a or b
  elseif op == "max" then return (va >= vb) and a or b
  elseif op == "lt" then return va < vb
  elseif op == "le" then return va <= vb
  elseif op == "gt" then return va > vb
  elseif op == "ge" then return va >= vb
  elseif op == "eq" then return va == vb
  elseif op == "ne" then return va ~= vb
  end
  -- division: x / 0 = -1 (all bits set), x rem 0 = x, MIN / -1 = MIN, MIN rem -1 = 0
  local zero = b == ZERO
  local ovf = i.signed and a == bit.lshift(ONE, n - 1) and b == m
  if op == "div" then
    if zero then return m end
    if ovf then return a end
    return bit.band(ffi.cast(u64, va / vb), m)
  elseif op == "rem" or op == "mod" then
    local r
    if zero then r = a
    elseif ovf then r = ZERO
    else r = bit.band(ffi.cast(u64, va % vb), m) end
    if op == "mod" and i.signed and r ~= ZERO and (sval(t, r) < 0) ~= (vb < 0) then
      r = bit.band(r + b, m) -- floored: the result takes the divisor's sign
    end
    return r
  end
  cf.fail("cute.arith: no integer rule for " .. tostring(op))
end

local function iun(op, t, a)
  local i = tinfo[t]
  local m = mask_of(i.bits)
  if op == "neg" then return bit.band(ZERO - a, m)
  elseif op == "not" then return bit.band(bit.bnot(a), m)
  elseif op == "abs" then
    if i.signed and sval(t, a) < 0 then return bit.band(ZERO - a, m) end
    return a
  end
  cf.fail("cute.arith: no integer rule for " .. tostring(op))
end

---------------------------------------------------------------------------
-- floats: round to nearest even in t's precision (overflow -> inf)
---------------------------------------------------------------------------
local fbuf = ffi.new("float[1]")
local function round_to(t, x)
  if t == T_F64 or x ~= x or x == 0 or x == math.huge or x == -math.huge then return x end
  if t == T_F32 then fbuf[0] = x; return fbuf[0] end
  local i = tinfo[t]
  local ax = math.abs(x)
  local _, e = math.frexp(ax) -- ax in [2^(e-1), 2^e)
  local E = math.max(e - 1, i.emin)
  local q = 2 ^ (E - (i.p - 1)) -- the spacing of t's values near x
  local n = ax / q
  local fl = math.floor(n)
  local d = n - fl
  if d > 0.5 or (d == 0.5 and fl % 2 == 1) then fl = fl + 1 end
  local r = fl * q
  if r >= 2 ^ (i.emax + 1) then r = math.huge end
  return x < 0 and -r or r
end
M.round = round_to

local function fbin(op, t, a, b)
  if op == "add" then return round_to(t, a + b)
  elseif op == "sub" then return round_to(t, a - b)
  elseif op == "mul" then return round_to(t, a * b)
  elseif op == "div" then return round_to(t, a / b)
  elseif op == "rem" or op == "mod" then
    -- rem: a - trunc(a / b) * b; mod (Lua's %): a - floor(a / b) * b; each step
    -- rounded to t (the GPU may fuse the last two into one fma)
    local q = round_to(t, a / b)
    q = (op == "mod" or q >= 0) and math.floor(q) or math.ceil(q)
    return round_to(t, a - round_to(t, q * b))
  elseif op == "min" or op == "max" then -- minNum / maxNum: a NaN operand yields the other
    if a ~= a then return b end
    if b ~= b then return a end
    if op == "min" then return a <= b and a or b end
    return a >= b and a or b
  elseif op == "lt" then return a < b
  elseif op == "le" then return a <= b
  elseif op == "gt" then return a > b
  elseif op == "ge" then return a >= b
  elseif op == "eq" then return a == b
  elseif op == "ne" then return a ~= b -- unordered: true with a NaN
  end
  cf.fail("cute.arith: " .. tostring(op) .. " needs integers")
end

---------------------------------------------------------------------------
-- public folds
---------------------------------------------------------------------------
-- op(a, b) in type t; a, b are values of t (exact integers / numbers).
-- Returns a value of t, or a boolean for comparisons.
function M.fold2(op, t, a, b)
  if tinfo[t].float then return fbin(op, t, tonumber(a), tonumber(b)) end
  local r = ibin(op, t, to_bits(t, a), to_bits(t, b))
  if type(r) == "boolean" then return r end
  return M.value(t, r)
end

function M.fold1(op, t, a)
  if tinfo[t].float then
    a = tonumber(a)
    if op == "neg" then return -a elseif op == "abs" then return math.abs(a) end
    cf.fail("cute.arith: " .. tostring(op) .. " needs integers")
  end
  return M.value(t, iun(op, t, to_bits(t, a)))
end

-- exact integer -> float t, rounded once: a 64-bit magnitude is rounded to
-- t's precision as an integer (half to even), so the double it becomes is
-- exact (LuaJIT's own uint64 -> double can round twice in compiled code)
local function int_to_float(t, x)
  if type(x) == "number" then return round_to(t, x) end
  local neg = ffi.istype(i64, x) and x < 0
  local m = neg and (ZERO - ffi.cast(u64, x)) or ffi.cast(u64, x)
  local p = tinfo[t].p
  local L = 0
  while L < 64 and bit.rshift(m, L) ~= ZERO do L = L + 1 end
  local d
  if L <= p then
    d = tonumber(m)
  else
    local k = L - p
    local q = bit.rshift(m, k)
    local r = m - bit.lshift(q, k)
    local half = bit.lshift(ONE, k - 1)
    if r > half or (r == half and bit.band(q, ONE) ~= ZERO) then q = q + 1 end
    d = tonumber(q) * 2 ^ k
  end
  return round_to(t, neg and -d or d) -- only an overflow (f16: inf) is left to round
end

-- convert value x of type from to type to (the rule of `cvt` without rounding
-- mode): int -> int wraps; float -> int truncates toward zero and saturates
-- (NaN -> 0); -> float rounds to nearest even; -> i1 is `x ~= 0`.
function M.convert(from, to, x)
  local fi, ti = tinfo[from], tinfo[to]
  if to == T_I1 then
    if fi.float then return (x ~= 0) and 1 or 0 end
    return to_bits(from, x) ~= ZERO and 1 or 0
  end
  if ti.float then
    if fi.float then return round_to(to, x) end
    return int_to_float(to, fi.bits == 64 and sval(from, to_bits(from, x)) or x)
  end
  if fi.float then
    if x ~= x then return 0 end
    x = x < 0 and math.ceil(x) or math.floor(x)
    if x <= ti.min then return ti.min end
    if ti.bits == 64 and x >= ti.max then -- 2^63 - 1 and 2^64 - 1 are not doubles
      return ti.signed and ffi.cast(i64, bit.rshift(ALL, 1)) or ALL
    end
    if x >= ti.max then return ti.max end
    return x
  end
  return M.value(to, to_bits(to, M.value(from, to_bits(from, x)) ))
end

-- integral value of x for cdata-aware formatting in messages
function M.tostr(x)
  if is64(x) then return (tostring(x):gsub("U?LL$", "")) end
  if type(x) == "number" and x % 1 == 0 and math.abs(x) <= 2 ^ 64 then return ("%.0f"):format(x) end
  return tostring(x)
end

-- Fold op over two Lua numbers, as cute.<name>(a, b) does outside traced code:
-- integers take their num_type (i32, else i64) and the common type of the two;
-- if either is not an integer the operation runs in double precision (f64).
local int_only = { ["and"] = true, ["or"] = true, xor = true, shl = true, shr = true }
function M.fold_numbers(op, a, b, what)
  if integral(a) and integral(b) then
    local t = M.promote(M.num_type(a), M.num_type(b))
    return M.fold2(op, t, a, b)
  end
  if int_only[op] then
    local bad = integral(a) and b or a
    cf.fail(("%s: %s is not an integer"):format(what or op, M.tostr(bad)))
  end
  return M.fold2(op, T_F64, a, b)
end

return M
