-- The arithmetic rules of docs/DSL.md ("Arithmetic rules") as a reference for
-- the differential test, written independently of lua/cute/arith.lua:
-- integers up to 32 bits are exact Lua numbers (reduced modulo 2^bits, products
-- split into 16-bit halves); 64-bit ones use LuaJIT's int64_t / uint64_t
-- arithmetic; f16 / bf16 rounding searches the table of all their values.
local ffi = require("ffi")
local bit = require("bit")

local R = {}

local TYPES = {
  i8 = { bits = 8, signed = true }, i16 = { bits = 16, signed = true }, i32 = { bits = 32, signed = true },
  i64 = { bits = 64, signed = true }, u8 = { bits = 8 }, u16 = { bits = 16 }, u32 = { bits = 32 },
  u64 = { bits = 64 }, i1 = { bits = 1 },
  f16 = { float = true, bits = 16 }, bf16 = { float = true, bits = 16 }, f32 = { float = true, bits = 32 },
  f64 = { float = true, bits = 64 },
}
R.TYPES = TYPES
R.INTS = { "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64" }
R.FLOATS = { "f16", "bf16", "f32", "f64" }

local I64, U64 = ffi.typeof("int64_t"), ffi.typeof("uint64_t")

function R.range(t)
  local ti = TYPES[t]
  if ti.signed then return -2 ^ (ti.bits - 1), 2 ^ (ti.bits - 1) - 1 end
  return 0, 2 ^ ti.bits - 1
end

---------------------------------------------------------------------------
-- floats
---------------------------------------------------------------------------
local fl = ffi.new("float[1]")
local function f32(x) fl[0] = x; return fl[0] end

local function decode_f16(h)
  local s, e, m = bit.rshift(h, 15), bit.band(bit.rshift(h, 10), 31), bit.band(h, 1023)
  local v
  if e == 0 then v = m * 2 ^ -24
  elseif e == 31 then v = (m == 0) and math.huge or 0 / 0
  else v = (1024 + m) * 2 ^ (e - 25) end
  return s == 1 and -v or v
end
local u32buf = ffi.new("union { uint32_t u; float f; }")
local function decode_bf16(h)
  h = tonumber(h)
  if bit.band(h, 0x7f80) == 0x7f80 and bit.band(h, 0x7f) ~= 0 then return 0 / 0 end -- (no NaN payloads)
  u32buf.u = bit.lshift(h, 16)
  return tonumber(u32buf.f)
end
R.decode_f16, R.decode_bf16 = decode_f16, decode_bf16

-- positive values of a 16-bit format by bit pattern, with the pattern of +inf
-- standing for the value where rounding overflows (2^16 for f16, 2^128 for bf16)
local function table_of(decode, inf_bits, overflow)
  local t = {}
  for h = 0, inf_bits - 1 do t[h] = decode(h) end
  t[inf_bits] = overflow
  return t
end
local F16T = table_of(decode_f16, 0x7c00, 2 ^ 16)
local BF16T = table_of(decode_bf16, 0x7f80, 2 ^ 128)

-- round to nearest, ties to the even bit pattern; returns the bit pattern
local function round16(tab, inf_bits, x)
  if x ~= x then return inf_bits == 0x7c00 and 0x7e00 or 0x7fc0 end -- a quiet NaN
  local sign = (x < 0 or 1 / x < 0) and 0x8000 or 0
  local ax = math.abs(x)
  if ax == math.huge then return sign + inf_bits end
  local lo, hi = 0, inf_bits -- tab[lo] <= ax < tab[hi]
  if ax >= tab[hi] then return sign + inf_bits end
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if tab[mid] <= ax then lo = mid else hi = mid end
  end
  local d1, d2 = ax - tab[lo], tab[hi] - ax
  local pick = (d1 < d2 or (d1 == d2 and lo % 2 == 0)) and lo or hi
  return sign + pick
end
function R.f16_bits(x) return round16(F16T, 0x7c00, x) end
function R.bf16_bits(x) return round16(BF16T, 0x7f80, x) end

-- x rounded to float type t
function R.round(t, x)
  if t == "f64" then return x end
  if t == "f32" then return f32(x) end
  if t == "f16" then return decode_f16(R.f16_bits(x)) end
  return decode_bf16(R.bf16_bits(x))
end

---------------------------------------------------------------------------
-- integers
---------------------------------------------------------------------------
local function is64(t) return TYPES[t].bits == 64 end

-- reduce an exact integer (|x| < 2^53) to t's range, modulo 2^bits
local function wrap(t, x)
  local ti = TYPES[t]
  local m = 2 ^ ti.bits
  local r = x % m
  if ti.signed and r >= m / 2 then r = r - m end
  return r
end
R.wrap = wrap

local function c64(t, x) -- a value as t's 64-bit ctype
  if t == "i64" then return ffi.new(I64, x) end
  if type(x) == "number" and x < 0 then return ffi.cast(U64, ffi.new(I64, x)) end
  return ffi.cast(U64, x)
end
R.c64 = c64

local function small_mul(t, a, b)
  local m = 2 ^ TYPES[t].bits
  local ua, ub = a % m, b % m
  local ahi, alo = math.floor(ua / 65536), ua % 65536
  local r = ((ahi * ub) % 65536) * 65536 + alo * ub
  return wrap(t, r % m)
end

local INT_OPS = {}
function INT_OPS.add(t, a, b) return wrap(t, a + b) end
function INT_OPS.sub(t, a, b) return wrap(t, a - b) end
INT_OPS.mul = small_mul
function INT_OPS.div(t, a, b)
  if b == 0 then return wrap(t, -1) end
  local q = a / b
  q = q < 0 and math.ceil(q) or math.floor(q)
  return wrap(t, q) -- MIN / -1 wraps to MIN
end
function INT_OPS.rem(t, a, b)
  if b == 0 then return a end
  local q = a / b
  q = q < 0 and math.ceil(q) or math.floor(q)
  return wrap(t, a - q * b)
end
function INT_OPS.mod(t, a, b)
  local r = INT_OPS.rem(t, a, b)
  if r ~= 0 and (r < 0) ~= (b < 0) then r = wrap(t, r + b) end
  return r
end
function INT_OPS.min(_, a, b) return math.min(a, b) end
function INT_OPS.max(_, a, b) return math.max(a, b) end
function INT_OPS.band(t, a, b) return wrap(t, bit.band(a, b)) end
function INT_OPS.bor(t, a, b) return wrap(t, bit.bor(a, b)) end
function INT_OPS.bxor(t, a, b) return wrap(t, bit.bxor(a, b)) end
local function amount(t, b) return b % 2 ^ TYPES[t].bits end -- unsigned
function INT_OPS.lshift(t, a, b)
  local s = amount(t, b)
  if s >= TYPES[t].bits then return 0 end
  return wrap(t, (a * 2 ^ s) % 2 ^ TYPES[t].bits)
end
function INT_OPS.rshift(t, a, b)
  local s = amount(t, b)
  if s >= TYPES[t].bits then return (TYPES[t].signed and a < 0) and -1 or 0 end
  return math.floor(a / 2 ^ s) -- floor division is the arithmetic shift
end
function INT_OPS.neg(t, a) return wrap(t, -a) end
function INT_OPS.bnot(t, a) return wrap(t, -a - 1) end

local OPS64 = {}
local function lim64(t) -- MIN and -1 of t as cdata
  if t == "i64" then return ffi.new(I64, -2 ^ 63), ffi.new(I64, -1) end
  return nil, nil
end
function OPS64.add(_, a, b) return a + b end
function OPS64.sub(_, a, b) return a - b end
function OPS64.mul(_, a, b) return a * b end
function OPS64.div(t, a, b)
  local mn, m1 = lim64(t)
  if b == 0 then return t == "i64" and ffi.new(I64, -1) or bit.bnot(ffi.cast(U64, 0)) end
  if mn and a == mn and b == m1 then return a end
  return a / b
end
function OPS64.rem(t, a, b)
  local mn, m1 = lim64(t)
  if b == 0 then return a end
  if mn and a == mn and b == m1 then return ffi.new(I64, 0) end
  return a % b
end
function OPS64.mod(t, a, b)
  local r = OPS64.rem(t, a, b)
  if t == "i64" and r ~= 0 and (r < 0) ~= (b < 0) then r = r + b end
  return r
end
function OPS64.min(_, a, b) return a < b and a or b end
function OPS64.max(_, a, b) return a > b and a or b end
function OPS64.band(_, a, b) return bit.band(a, b) end
function OPS64.bor(_, a, b) return bit.bor(a, b) end
function OPS64.bxor(_, a, b) return bit.bxor(a, b) end
local function amount64(b) return ffi.cast(U64, b) end
function OPS64.lshift(t, a, b)
  local s = amount64(b)
  if s >= 64 then return c64(t, 0) end
  return bit.lshift(a, tonumber(s))
end
function OPS64.rshift(t, a, b)
  local s = amount64(b)
  if t == "i64" then return bit.arshift(a, s >= 64 and 63 or tonumber(s)) end
  if s >= 64 then return c64(t, 0) end
  return bit.rshift(a, tonumber(s))
end
function OPS64.neg(t, a) return c64(t, 0) - a end
function OPS64.bnot(_, a) return bit.bnot(a) end

local CMP = {
  lt = function(a, b) return a < b end, le = function(a, b) return a <= b end,
  gt = function(a, b) return a > b end, ge = function(a, b) return a >= b end,
  eq = function(a, b) return a == b end, ne = function(a, b) return a ~= b end,
}
R.CMP_NAMES = { "lt", "le", "gt", "ge", "eq", "ne" }

local FLOAT_OPS = {}
function FLOAT_OPS.add(t, a, b) return R.round(t, a + b) end
function FLOAT_OPS.sub(t, a, b) return R.round(t, a - b) end
function FLOAT_OPS.mul(t, a, b) return R.round(t, a * b) end
function FLOAT_OPS.div(t, a, b) return R.round(t, a / b) end
local function fq(t, a, b, floor)
  local q = R.round(t, a / b)
  if floor or q < 0 then return floor and math.floor(q) or math.ceil(q) end
  return math.floor(q)
end
function FLOAT_OPS.rem(t, a, b) return R.round(t, a - R.round(t, fq(t, a, b, false) * b)) end
function FLOAT_OPS.mod(t, a, b) return R.round(t, a - R.round(t, fq(t, a, b, true) * b)) end
local function nanfree(f)
  return function(_, a, b)
    if a ~= a then return b end
    if b ~= b then return a end
    return f(a, b)
  end
end
FLOAT_OPS.min = nanfree(math.min)
FLOAT_OPS.max = nanfree(math.max)
function FLOAT_OPS.neg(_, a) return -a end

-- op(a, b) in type t by the documented rule (comparisons -> boolean).
-- Integer operands: numbers for up to 32 bits, t's 64-bit ctype for 64 bits.
function R.binary(op, t, a, b)
  if CMP[op] then
    if TYPES[t].float then return CMP[op](a, b) end
    return CMP[op](a, b)
  end
  if TYPES[t].float then return FLOAT_OPS[op](t, a, b) end
  if is64(t) then return OPS64[op](t, c64(t, a), c64(t, b)) end
  return INT_OPS[op](t, a, b)
end
function R.unary(op, t, a)
  if TYPES[t].float then return FLOAT_OPS[op](t, a) end
  if is64(t) then return OPS64[op](t, c64(t, a)) end
  return INT_OPS[op](t, a)
end
R.INT_BINARY = { "add", "sub", "mul", "div", "rem", "mod", "min", "max", "band", "bor", "bxor", "lshift", "rshift" }
R.FLOAT_BINARY = { "add", "sub", "mul", "div", "rem", "mod", "min", "max" }
R.INT_UNARY = { "neg", "bnot" }
R.FLOAT_UNARY = { "neg" }

---------------------------------------------------------------------------
-- conversions
---------------------------------------------------------------------------
-- an exact integer (number or 64-bit cdata) rounded to a float type: shift
-- out the bits below the precision p, round half to even on the integer
local PREC = { f16 = 11, bf16 = 8, f32 = 24, f64 = 53 }
local function int_to_float(t, x)
  if type(x) == "number" then return R.round(t, x) end
  local neg = ffi.istype(I64, x) and x < 0
  local m = neg and (ffi.cast(U64, 0) - ffi.cast(U64, x)) or ffi.cast(U64, x)
  local L = 0
  while L < 64 and bit.rshift(m, L) ~= 0 do L = L + 1 end
  local p = PREC[t]
  local v
  if L <= p then
    v = tonumber(m)
  else
    local k = L - p
    local q = bit.rshift(m, k)
    local r = m - bit.lshift(q, k)
    local half = bit.lshift(ffi.cast(U64, 1), k - 1)
    if r > half or (r == half and bit.band(q, 1) == 1) then q = q + 1 end
    v = tonumber(q) * 2 ^ k
  end
  v = R.round(t, v) -- only overflow to inf can remain (f16)
  return neg and -v or v
end

-- convert value x of type s to type t (the rule of cute.<Type>(x) on traced values)
function R.convert(s, t, x)
  local si, ti = TYPES[s], TYPES[t]
  if t == "i1" then return (x ~= 0) and 1 or 0 end
  if ti.float then
    if si.float then return R.round(t, x) end
    if si.bits == 64 then return int_to_float(t, c64(s, x)) end
    return R.round(t, x)
  end
  if si.float then
    if x ~= x then return ti.bits == 64 and c64(t, 0) or 0 end
    x = x < 0 and math.ceil(x) or math.floor(x)
    local lo, hi = R.range(t)
    if ti.bits == 64 then
      if x <= lo then return c64(t, lo) end
      if x >= 2 ^ (ti.signed and 63 or 64) then
        return t == "i64" and bit.rshift(ffi.cast(I64, -1), 1) or bit.bnot(ffi.cast(U64, 0))
      end
      return c64(t, x)
    end
    return math.max(lo, math.min(hi, x))
  end
  -- integer -> integer: the low bits, read as t
  if ti.bits == 64 then return c64(t, si.bits == 64 and c64(s, x) or x) end
  if si.bits == 64 then
    local low = tonumber(bit.band(c64(s, x), 0xffffffffULL)) -- exact below 2^32
    return wrap(t, low)
  end
  return wrap(t, x)
end

-- exact equality of two results (64-bit cdata, numbers; NaN equals NaN; +0 == -0)
function R.same(a, b)
  if type(a) == "boolean" or type(b) == "boolean" then return a == b end
  if type(a) == "number" and type(b) == "number" then
    if a ~= a then return b ~= b end
    return a == b
  end
  local ok, eq = pcall(function() return a == b end)
  if ok and eq then return true end
  -- a number against a cdata
  local na, nb = tonumber(a), tonumber(b)
  if na and nb and math.abs(na) < 2 ^ 53 and math.abs(nb) < 2 ^ 53 then return na == nb end
  return false
end

function R.show(x)
  if type(x) == "number" and x % 1 == 0 and math.abs(x) < 2 ^ 63 then return ("%.0f"):format(x) end
  return tostring(x)
end

---------------------------------------------------------------------------
-- operands: edge values and seeded random ones, all exact values of t
---------------------------------------------------------------------------
local seed = 0
local function rnd32() -- 0 .. 2^32-1
  seed = (seed * 1664525 + 1013904223) % 4294967296
  return seed
end
local f32u = ffi.new("union { uint32_t u; float f; }")
local f64u = ffi.new("union { uint32_t w[2]; double d; }")

-- floats from bit patterns; a NaN becomes Lua's own NaN (LuaJIT must never
-- see a NaN payload: some of them are its tagged values, and reading one
-- crashes the VM)
local f32b = ffi.new("union { uint32_t u; float f; }")
function R.f32_of_bits(u)
  u = tonumber(u)
  if bit.band(u, 0x7f800000) == 0x7f800000 and bit.band(u, 0x7fffff) ~= 0 then return 0 / 0 end
  f32b.u = u
  return f32b.f
end
local f64b = ffi.new("union { uint32_t w[2]; double d; }")
function R.f64_of_bits(lo, hi)
  lo, hi = tonumber(lo), tonumber(hi)
  if bit.band(hi, 0x7ff00000) == 0x7ff00000 and (bit.band(hi, 0xfffff) ~= 0 or lo ~= 0) then return 0 / 0 end
  f64b.w[0], f64b.w[1] = lo, hi
  return f64b.d
end

function R.operands(t, nrand, s)
  seed = s or 12345
  local ti = TYPES[t]
  local out = {}
  if ti.float then
    local big = { 0, -0.0, 1, -1, 0.5, -0.5, 1.5, 2.5, -2.5, 3, 7, 100.7, -100.7, 127.9, 128, -128.5, -129,
      255.5, 256, 1e4, 32767.5, 65504, 65520, 65535.9, 1e5, 2 ^ 24 + 1, 2 ^ 31, -2 ^ 31, 2 ^ 31 - 64, 2 ^ 32,
      2 ^ 63, -2 ^ 63, 2 ^ 64, 1e20, -1e20, 3.4e38, 1e300, -1e300, 2 ^ -126, 2 ^ -140, 2 ^ -1070, 6e-8,
      math.huge, -math.huge, 0 / 0 }
    for _, x in ipairs(big) do out[#out + 1] = R.round(t, x) end
    for _ = 1, nrand do
      local x
      if t == "f16" then x = decode_f16(rnd32() % 65536)
      elseif t == "bf16" then x = decode_bf16(rnd32() % 65536)
      elseif t == "f32" then f32u.u = rnd32(); x = R.f32_of_bits(f32u.u)
      else x = R.f64_of_bits(rnd32(), rnd32()) end
      out[#out + 1] = x
      out[#out + 1] = R.round(t, (rnd32() / 2 ^ 32 - 0.5) * 2 ^ (rnd32() % 24))
    end
    return out
  end
  local lo, hi = R.range(t)
  local cand = { 0, 1, -1, 2, -2, 3, -3, 7, ti.bits - 1, ti.bits, ti.bits + 1, 100, -100, 127, 128, 255, 256,
    -32768, 65535, 1e9, -1e9, lo, lo + 1, hi, hi - 1 }
  for _, x in ipairs(cand) do
    if ti.bits == 64 then
      if x >= lo and x <= hi then
        out[#out + 1] = (x == hi) and (t == "i64" and bit.rshift(ffi.cast(I64, -1), 1) or bit.bnot(ffi.cast(U64, 0)))
          or (x == hi - 1) and (t == "i64" and bit.rshift(ffi.cast(I64, -1), 1) - 1 or bit.bnot(ffi.cast(U64, 0)) - 1)
          or c64(t, x)
      end
    elseif x >= lo and x <= hi then
      out[#out + 1] = x
    end
  end
  for _ = 1, nrand do
    if ti.bits == 64 then
      local v = bit.bor(bit.lshift(ffi.cast(U64, rnd32()), 32), ffi.cast(U64, rnd32()))
      out[#out + 1] = t == "i64" and ffi.cast(I64, v) or v
      out[#out + 1] = c64(t, (rnd32() % 200) - (t == "i64" and 100 or 0))
    else
      out[#out + 1] = wrap(t, rnd32())
      out[#out + 1] = wrap(t, (rnd32() % (ti.bits + 6)) - 3) -- shift amounts, small divisors
    end
  end
  return out
end

-- a few integer edge values of t (0, +-1, shift widths, MIN, MAX)
function R.edges(t)
  local ti = TYPES[t]
  local lo, hi = R.range(t)
  local out = {}
  for _, x in ipairs({ 0, 1, -1, 7, ti.bits - 1, ti.bits, ti.bits + 1, lo, hi }) do
    if x >= lo and x <= hi then
      if ti.bits == 64 and x == hi then
        x = t == "i64" and bit.rshift(ffi.cast(I64, -1), 1) or bit.bnot(ffi.cast(U64, 0))
      elseif ti.bits == 64 then
        x = c64(t, x)
      end
      out[#out + 1] = x
    end
  end
  return out
end

-- operand pairs: edges x edges, then random pairs
function R.pairs(t, nrand, s)
  local ops = R.operands(t, nrand, s)
  local A, B = {}, {}
  local ne = math.min(#ops, 45)
  for i = 1, ne do
    for j = 1, ne do A[#A + 1], B[#B + 1] = ops[i], ops[j] end
  end
  for i = ne + 1, #ops do
    A[#A + 1], B[#B + 1] = ops[i], ops[ne + 1 + (i * 7) % (#ops - ne)]
  end
  return A, B
end

-- A mismatch collector for the differential specs: every case is compared,
-- and done() fails with the count per operator and the first few cases of each.
function R.checker(what)
  local bad, nbad, n = {}, {}, 0
  local self = {}
  function self.check(op, got, want, detail)
    n = n + 1
    if not R.same(got, want) then
      nbad[op] = (nbad[op] or 0) + 1
      if nbad[op] <= 4 then
        bad[#bad + 1] = ("%s %s: got %s, want %s"):format(op, detail(), R.show(got), R.show(want))
      end
    end
  end
  function self.done()
    if n == 0 then error(what .. ": no case was compared", 0) end
    if #bad > 0 then
      local ops = {}
      for op, c in pairs(nbad) do ops[#ops + 1] = op .. "=" .. c end
      table.sort(ops)
      error(("%s: %s mismatches of %d cases\n  %s"):format(what, table.concat(ops, " "), n,
        table.concat(bad, "\n  ")), 0)
    end
    return n
  end
  return self
end

return R
