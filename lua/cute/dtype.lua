-- cute.dtype: the one table of scalar types and address spaces on the Lua
-- side, built from the C core's type table (cute_ir_scalar_info,
-- cute_ir_space_name: src/irdef.h) by reflection.  Every other module reads
-- it; none keeps its own list.
--
--   local dt = require("cute.dtype")
--   dt.T.F32                  -- IR type code (CUTE_T_F32)
--   dt.scalars[code]          -- info: ir ("f32"), code, bits, size, int, signed,
--                             --   float, bool, cute ("Float32", CuTe DSL's name),
--                             --   dtype (runtime dtype name "float32"), ctype,
--                             --   min/max (integers), p/emin/emax (floats)
--   dt.by_ir.f32, dt.by_cute.Float32, dt.by_dtype.float32   -- the same infos
--   dt.cute_names             -- CuTe DSL names in type-code order
--   dt.dtypes.float32         -- runtime dtype objects (cute.float32): name, size,
--                             --   ctype, kind, is_float, ct/arr/ptr ctypes, ir
--                             --   (the IR type of its elements in memory)
--   dt.dtype_ir.float32       -- IR type code of a runtime dtype's elements
--   dt.spaces.global, dt.space_names[1]   -- address spaces (NVPTX numbering)
--   dt.float_to_half/half_to_float/float_to_bf16/bf16_to_float   -- bit conversions
--   dt.float_to_tf32/tf32_to_float, dt.float_to_f8e4m3/f8e4m3_to_float,
--   dt.float_to_f8e5m2/f8e5m2_to_float   -- tf32 and fp8 bits, as the device's cvt
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")
local C = cf.C
local band, bor, rshift, lshift = bit.band, bit.bor, bit.rshift, bit.lshift
local huge = math.huge

local M = {}

---------------------------------------------------------------------------
-- float formats: precision p and exponent range, by IR name (the C table
-- knows bits and class; these are the Lua-side rounding rules' parameters)
---------------------------------------------------------------------------
local float_format = {
  f16 = { p = 11, emin = -14, emax = 15 },
  bf16 = { p = 8, emin = -126, emax = 127 },
  f32 = { p = 24, emin = -126, emax = 127 },
  f64 = { p = 53, emin = -1022, emax = 1023 },
  -- storage-only formats (class XFLOAT: converted through cvt, no arithmetic)
  tf32 = { p = 11, emin = -126, emax = 127, inf = true },
  f8e4m3 = { p = 4, emin = -6, emax = 8, inf = false },   -- E4M3FN: finite, NaN 0x7f/0xff
  f8e5m2 = { p = 3, emin = -14, emax = 15, inf = true },  -- IEEE-like: inf 0x7c, NaN 0x7d-0x7f
}

---------------------------------------------------------------------------
-- scalar types from the C table
---------------------------------------------------------------------------
local TC_SINT, TC_UINT, TC_FLOAT, TC_BOOL = C.CUTE_TC_SINT, C.CUTE_TC_UINT, C.CUTE_TC_FLOAT, C.CUTE_TC_BOOL
local TC_XFLOAT = C.CUTE_TC_XFLOAT

-- CuTe DSL's name of a scalar type: Int32, Uint8, Float16, BFloat16, Boolean,
-- TFloat32, Float8E4M3FN (finite only: FN), Float8E5M2
local function cute_name(ir, cls, bits)
  if cls == TC_BOOL then return "Boolean" end
  if cls == TC_XFLOAT then
    if ir:sub(1, 2) == "tf" then return "TFloat" .. bits end
    return "Float" .. bits .. ir:sub(3):upper() .. (float_format[ir].inf and "" or "FN")
  end
  if cls == TC_SINT then return "Int" .. bits end
  if cls == TC_UINT then return "Uint" .. bits end
  if ir:sub(1, 2) == "bf" then return "BFloat" .. bits end
  return "Float" .. bits
end

M.T = {}             -- I32 = 5, ...
M.scalars = {}       -- code -> info
M.by_ir, M.by_cute, M.by_dtype, M.by_ptx = {}, {}, {}, {}
M.cute_names = {}
local namep, bitsp, clsp = ffi.new("const char *[1]"), ffi.new("int[1]"), ffi.new("int[1]")
for t = C.CUTE_T_VOID, C.CUTE_T_F8E5M2 do
  if C.cute_ir_scalar_info(t, namep, bitsp, clsp) == 0 and clsp[0] ~= 0 then
    local ir, bits, cls = ffi.string(namep[0]), bitsp[0], clsp[0]
    local info = {
      code = t, ir = ir, name = ir, bits = bits, size = math.max(1, bits / 8),
      int = cls ~= TC_FLOAT, float = cls == TC_FLOAT or nil, bool = cls == TC_BOOL or nil,
      signed = cls == TC_SINT,
      cute = cute_name(ir, cls, bits),
    }
    if cls == TC_XFLOAT then
      info.int, info.xfloat = nil, true
      local f = float_format[ir] or cf.fail("cute.dtype: no float format for the C core's type " .. ir)
      info.p, info.emin, info.emax = f.p, f.emin, f.emax
      info.kind = bits == 8 and "fp8" or "tf32"
      info.ctype = "uint" .. bits .. "_t"   -- the bits, as float16's
      -- tfloat32, float8_e4m3fn, float8_e5m2
      info.dtype = bits == 8 and ("float8_" .. info.cute:sub(7):lower()) or info.cute:lower()
    elseif cls == TC_FLOAT then
      info.int = nil
      local f = float_format[ir] or cf.fail("cute.dtype: no float format for the C core's type " .. ir)
      info.p, info.emin, info.emax = f.p, f.emin, f.emax
      info.kind = ir == "f16" and "half" or ir == "bf16" and "bf16" or "float"
      info.ctype = bits == 32 and "float" or bits == 64 and "double" or ("uint" .. bits .. "_t")
      info.dtype = info.cute:lower()
    elseif cls == TC_BOOL then
      info.min, info.max = 0, 1
      info.kind, info.ctype, info.dtype = "bool", "bool", "bool"
    else
      if cls == TC_SINT then info.min, info.max = -2 ^ (bits - 1), 2 ^ (bits - 1) - 1
      else info.min, info.max = 0, 2 ^ bits - 1 end
      info.kind = cls == TC_SINT and "int" or "uint"
      info.ctype = (cls == TC_SINT and "int" or "uint") .. bits .. "_t"
      info.dtype = info.cute:lower()
    end
    -- the PTX ISA's type name: f16 bf16 tf32 f32 f64 e4m3 e5m2 s8..s64 u8..u64 pred
    info.ptx = info.kind == "int" and ("s" .. bits) or info.kind == "uint" and ("u" .. bits)
      or info.kind == "bool" and "pred" or info.kind == "fp8" and ir:sub(3) or ir
    M.T[ir:upper()] = t
    M.scalars[t] = info
    M.by_ir[ir], M.by_cute[info.cute], M.by_dtype[info.dtype], M.by_ptx[info.ptx] = info, info, info, info
    M.cute_names[#M.cute_names + 1] = info.cute
  end
end

-- storage of a scalar in memory and in kernel parameters: a Boolean is a byte
function M.storage(t) return M.scalars[t].bool and M.T.U8 or t end

-- the ctype of a pointer to a kernel parameter of scalar type t
function M.param_ctype(t)
  local info = M.scalars[t]
  return (info.bool and "uint8_t" or info.ctype) .. "*"
end

---------------------------------------------------------------------------
-- address spaces
---------------------------------------------------------------------------
M.spaces, M.space_names = {}, {}
for sp = 0, 15 do
  local n = C.cute_ir_space_name(sp)
  if n ~= nil then
    n = ffi.string(n)
    M.spaces[n], M.space_names[sp] = sp, n
  end
end

---------------------------------------------------------------------------
-- float16 / bfloat16 bit conversions
---------------------------------------------------------------------------
local bits32 = ffi.new("union { float f; uint32_t u; }")

-- float32 bit pattern -> IEEE half bit pattern, round to nearest even.
local function f32bits_to_half(u)
  local sign = band(rshift(u, 16), 0x8000)
  local exp = band(rshift(u, 23), 0xff)
  local mant = band(u, 0x7fffff)
  if exp == 255 then                                   -- inf / nan (kept quiet)
    if mant == 0 then return sign + 0x7c00 end
    return sign + bor(0x7e00, rshift(mant, 13))
  end
  local e = exp - 112                                  -- rebias 127 -> 15
  if e >= 31 then return sign + 0x7c00 end             -- overflow -> inf
  if e <= 0 then                                       -- half subnormal or zero
    if e < -10 then return sign end
    mant = mant + 0x800000
    local shift = 14 - e
    local h = rshift(mant, shift)
    local rem, halfway = band(mant, lshift(1, shift) - 1), lshift(1, shift - 1)
    if rem > halfway or (rem == halfway and band(h, 1) == 1) then h = h + 1 end
    return sign + h
  end
  local h = e * 1024 + rshift(mant, 13)
  local rem = band(mant, 0x1fff)
  if rem > 0x1000 or (rem == 0x1000 and band(h, 1) == 1) then h = h + 1 end  -- may carry to inf
  return sign + h
end

-- Lua number -> float16 bits (uint16 value), round to nearest even.  (The
-- number is first rounded to float32; that double rounding is exact for
-- float16 and bfloat16 because float32 has more than 2p+1 bits.)
function M.float_to_half(x)
  bits32.f = x
  return f32bits_to_half(bits32.u)
end

function M.half_to_float(h)
  local sign = band(h, 0x8000) ~= 0 and -1 or 1
  local e, m = band(rshift(h, 10), 0x1f), band(h, 0x3ff)
  if e == 0 then return sign * m * 2 ^ -24 end
  if e == 31 then return m == 0 and sign * huge or 0 / 0 end
  return sign * (1024 + m) * 2 ^ (e - 25)
end

function M.float_to_bf16(x)
  bits32.f = x
  local u = bits32.u
  if band(u, 0x7f800000) == 0x7f800000 and band(u, 0x7fffff) ~= 0 then
    return bor(rshift(u, 16), 0x40)                    -- quiet nan
  end
  return band(rshift(u + 0x7fff + band(rshift(u, 16), 1), 16), 0xffff)
end

function M.bf16_to_float(h)
  if band(h, 0x7f80) == 0x7f80 and band(h, 0x7f) ~= 0 then return 0 / 0 end
  bits32.u = band(h, 0xffff) * 65536
  return bits32.f
end

---------------------------------------------------------------------------
-- tfloat32 and fp8 bit conversions, as the device's cvt (PTX ISA):
--   f32 -> tf32   cvt.rna.tf32.f32: 10 mantissa bits, to nearest, ties away
--                 from zero (may reach inf); the f32 layout, low 13 bits zero
--   f32 -> fp8    cvt.rn.satfinite.{e4m3,e5m2}x2.f32: to nearest even; beyond
--                 the largest finite value (inf included) ±max; NaN -> 0x7f
-- A Lua number is first rounded to float32 (the device's input).
---------------------------------------------------------------------------
function M.float_to_tf32(x)
  bits32.f = x
  local u = bits32.u
  if band(u, 0x7f800000) == 0x7f800000 then          -- inf, nan (kept quiet)
    if band(u, 0x7fffff) == 0 then return u end
    return band(bor(u, 0x400000), 0xffffe000) % 2 ^ 32
  end
  return band(u + 0x1000, 0xffffe000) % 2 ^ 32
end

function M.tf32_to_float(b)
  bits32.u = b
  return bits32.f
end

local frexp, floor = math.frexp, math.floor

local function fp8_format(ir)
  local f = float_format[ir]
  local mb = f.p - 1
  -- the largest finite value: 1.11..b * 2^emax, or 1.110b for E4M3FN (1.111b is NaN)
  local top = 2 ^ mb - (f.inf and 1 or 2)
  local fmt = { mb = mb, emin = f.emin, bias = 1 - f.emin, inf = f.inf,
    max = (2 ^ mb + top) * 2 ^ (f.emax - mb), maxbits = (1 - f.emin + f.emax) * 2 ^ mb + top }
  M[ir .. "_max"] = fmt.max
  M[ir .. "_to_float"] = function(b)
    local s = b >= 128 and -1 or 1
    local a = b % 128
    local e, m = floor(a / 2 ^ mb), a % 2 ^ mb
    if fmt.inf and e == fmt.bias + f.emax + 1 then return m == 0 and s * huge or 0 / 0 end
    if not fmt.inf and a == 127 then return 0 / 0 end
    if e == 0 then return s * m * 2 ^ (fmt.emin - mb) end
    return s * (2 ^ mb + m) * 2 ^ (e - fmt.bias - mb)
  end
  M["float_to_" .. ir] = function(x)
    bits32.f = x
    local v = bits32.f
    if v ~= v then return 0x7f end
    local s = (v < 0 or (v == 0 and 1 / v < 0)) and 128 or 0
    local a = math.abs(v)
    if a > fmt.max then return s + fmt.maxbits end -- satfinite (inf too); rounding below max never exceeds it
    local _, ex = frexp(a)
    local e = math.max(ex - 1, fmt.emin)
    local q = 2 ^ (e - mb)                            -- the format's spacing at a
    local n = a / q
    local r = floor(n)
    local fr = n - r
    if fr > 0.5 or (fr == 0.5 and r % 2 == 1) then r = r + 1 end
    local val = r * q
    if val > fmt.max then return s + fmt.maxbits end
    if val == 0 then return s end
    _, ex = frexp(val)
    e = ex - 1
    if e < fmt.emin then return s + val / 2 ^ (fmt.emin - mb) end
    return s + (e + fmt.bias) * 2 ^ mb + (val / 2 ^ (e - mb) - 2 ^ mb)
  end
end
fp8_format("f8e4m3")
fp8_format("f8e5m2")

---------------------------------------------------------------------------
-- runtime dtypes (cute.float32, ...): element types of device tensors
---------------------------------------------------------------------------
local Dtype = {}
Dtype.__index = Dtype
Dtype.__tostring = function(d) return "cute." .. d.name end
M.Dtype = Dtype

M.dtypes, M.dtype_ir = {}, {}
local dtype_list = {}
-- in the order of the runtime's documentation: floats first, then integers, bool
local order = { float = 1, half = 2, bf16 = 3, tf32 = 3.25, fp8 = 3.5, int = 5, uint = 6, bool = 7 }
local infos = {}
for _, info in pairs(M.scalars) do infos[#infos + 1] = info end
table.sort(infos, function(a, b)
  local oa, ob = order[a.kind] + (a.kind == "float" and a.bits == 64 and 3 or 0),
    order[b.kind] + (b.kind == "float" and b.bits == 64 and 3 or 0)
  if oa ~= ob then return oa < ob end
  if a.bits ~= b.bits then return a.bits < b.bits end
  return a.code < b.code
end)
for _, info in ipairs(infos) do
  local name, ctype = info.dtype, info.ctype
  local d = setmetatable({
    name = name, size = info.size, ctype = ctype, kind = info.kind,
    is_float = info.float == true, ir = M.storage(info.code), scalar = info.code, cute = info.cute,
    ct = ffi.typeof(ctype), arr = ffi.typeof(ctype .. "[?]"), ptr = ffi.typeof(ctype .. " *"),
    elem = tostring(ffi.typeof(ctype)):match("^ctype<(.*)>$"),
  }, Dtype)
  if info.kind == "half" then
    d.from_number, d.to_number = M.float_to_half, M.half_to_float
  elseif info.kind == "bf16" then
    d.from_number, d.to_number = M.float_to_bf16, M.bf16_to_float
  elseif info.xfloat then
    d.from_number, d.to_number = M["float_to_" .. info.ir], M[info.ir .. "_to_float"]
  end
  M.dtypes[name] = d
  M.dtype_ir[name] = d.ir
  dtype_list[#dtype_list + 1] = name
end
M.dtype_names = table.concat(dtype_list, ", ")

-- A dtype from a dtype object, its name ("float32") or CuTe DSL's scalar
-- name ("Float32"); nil -> float32.  fname names the operation in errors.
function M.to_dtype(x, fname)
  if x == nil then return M.dtypes.float32 end
  if getmetatable(x) == Dtype then return x end
  if type(x) == "string" then
    local d = M.dtypes[x] or (M.by_cute[x] and M.dtypes[M.by_cute[x].dtype])
    if d then return d end
  end
  cf.fail(("%s: %s is not a dtype (one of %s)"):format(fname, tostring(x), M.dtype_names))
end

-- the public names (merged into cute by cute/init.lua): cute.float32 ...,
-- cute.dtypes, cute.dtype(x), the bit conversions
M.exports = {
  dtypes = M.dtypes,
  dtype = function(x) return M.to_dtype(x, "cute.dtype") end,
  float_to_half = M.float_to_half, half_to_float = M.half_to_float,
  float_to_bf16 = M.float_to_bf16, bf16_to_float = M.bf16_to_float,
  float_to_tf32 = M.float_to_tf32, tf32_to_float = M.tf32_to_float,
  float_to_f8e4m3 = M.float_to_f8e4m3, f8e4m3_to_float = M.f8e4m3_to_float,
  float_to_f8e5m2 = M.float_to_f8e5m2, f8e5m2_to_float = M.f8e5m2_to_float,
}
for name, d in pairs(M.dtypes) do M.exports[name] = d end

return M
