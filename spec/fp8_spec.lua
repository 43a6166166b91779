-- tfloat32 and fp8 (issue 10, item 3).  Host conversions exactly as the
-- device's cvt (PTX ISA: cvt.rn.satfinite.{e4m3,e5m2}x2.f32, cvt.rna.tf32.f32),
-- checked against references written here independently (the nearest of the
-- 256 decoded values, ties to the even pattern, saturation at the largest
-- finite value); the device side: the IR types, the cvt instructions in the
-- PTX of a traced kernel assembled for sm_89 and sm_90a, clear errors below
-- sm_89 (fp8) and sm_80 (tf32), and on the GPU (#gpu) a kernel's conversions
-- of random f32 compared bit for bit with the host's.
local cute = require("cute")
local ffi = require("ffi")
local bit = require("bit")
local dt = require("cute.dtype")
local IR = require("cute.ir")
local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it
local PTXAS = IR.ptxas_path()

local u = ffi.new("union { float f; uint32_t u; }")
local function f32(x) u.f = x; return u.f end
local function f32_of_bits(b) u.u = b; return u.f end
local function bits_of(x) u.f = x; return u.u end
local function hex(x) return ("%.9g (0x%08x)"):format(x, bits_of(x)) end
local function is_neg(x) return x < 0 or (x == 0 and 1 / x < 0) end

-- the formats, read from the bits here (not through cute.dtype)
local FORMATS = {
  { name = "e4m3", enc = dt.float_to_f8e4m3, dec = dt.f8e4m3_to_float, max = 448, maxbits = 0x7e,
    decode = function(b)
      local s = b >= 0x80 and -1 or 1
      local e, m = bit.band(bit.rshift(b, 3), 15), bit.band(b, 7)
      if e == 15 and m == 7 then return 0 / 0 end               -- NaN 0x7f / 0xff, no inf
      if e == 0 then return s * m / 8 * 2 ^ -6 end
      return s * (1 + m / 8) * 2 ^ (e - 7)
    end },
  { name = "e5m2", enc = dt.float_to_f8e5m2, dec = dt.f8e5m2_to_float, max = 57344, maxbits = 0x7b,
    decode = function(b)
      local s = b >= 0x80 and -1 or 1
      local e, m = bit.band(bit.rshift(b, 2), 31), bit.band(b, 3)
      if e == 31 then return m == 0 and s * math.huge or 0 / 0 end
      if e == 0 then return s * m / 4 * 2 ^ -14 end
      return s * (1 + m / 4) * 2 ^ (e - 15)
    end },
}

-- reference encoding of an f32 value: NaN -> 0x7f; |x| at or beyond max (inf
-- too) -> ±max; else the nearest of the non-negative finite patterns
-- 0..maxbits, an equal distance going to the even pattern; the sign bit kept
local function ref_encode(F, x)
  if x ~= x then return 0x7f end
  local s = is_neg(x) and 0x80 or 0
  local a = math.abs(x)
  if a >= F.max then return s + F.maxbits end
  local best, bd
  for p = 0, F.maxbits do
    local d = math.abs(F.decode(p) - a)
    if not best or d < bd or (d == bd and p % 2 == 0) then best, bd = p, d end
  end
  return s + best
end

local seed = 99
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
end

-- f32 inputs: every decoded value, the midpoints between neighbours (ties)
-- and one f32 ulp either side, around max, the subnormals, zeros, inf, NaN,
-- f32 subnormals and extremes, random values over 2^-30 .. 2^20; and negated
local function inputs(F)
  local xs = { 0, 1e-45, 1e-40, 3.4e38, math.huge, 0 / 0, F.max * 2, 2 ^ 20 }
  local function add(x)
    x = f32(x)
    xs[#xs + 1] = x
    if x == x and x ~= 0 and math.abs(x) ~= math.huge then
      local b = bits_of(x)
      xs[#xs + 1] = f32_of_bits(b + 1)
      xs[#xs + 1] = f32_of_bits(b - 1)
    end
  end
  for p = 0, F.maxbits do
    add(F.decode(p))
    add((F.decode(p) + F.decode(p + 1)) / 2)
  end
  add(F.decode(1) / 2); add(F.decode(1) / 4); add(F.decode(1) * 0.75)
  -- the tie between max and the next value the exponent would give (464, 61440)
  add(F.max + (F.max - F.decode(F.maxbits - 1)) / 2)
  for _ = 1, 4000 do
    add((1 + rnd()) * 2 ^ math.floor(rnd() * 50 - 30))
  end
  local n = #xs
  for i = 1, n do xs[#xs + 1] = -xs[i] end
  return xs
end

describe("fp8 host conversions (float8_e4m3fn, float8_e5m2)", function()
  for _, F in ipairs(FORMATS) do
    it(F.name .. ": every one of the 256 bit patterns decodes as its bits say and round-trips", function()
      for p = 0, 255 do
        local v, want = F.dec(p), F.decode(p)
        if want ~= want then
          assert.is_true(v ~= v, ("0x%02x is NaN"):format(p))
          assert.equal(0x7f, F.enc(v))
        else
          assert.equal(want, v, ("0x%02x"):format(p))
          assert.equal(is_neg(want), is_neg(v), ("0x%02x sign"):format(p))
          if math.abs(v) == math.huge then       -- e5m2's inf saturates to ±max
            assert.equal((p >= 0x80 and 0x80 or 0) + F.maxbits, F.enc(v))
          else
            assert.equal(p, F.enc(v), ("0x%02x"):format(p))
          end
        end
      end
      assert.equal(F.max, F.dec(F.maxbits))
      assert.equal(-F.max, F.dec(F.maxbits + 0x80))
    end)

    it(F.name .. ": f32 -> bits matches the nearest-even, saturating reference on ties, ±max±ulp, "
      .. "subnormals, inf, NaN and random values", function()
      local xs = inputs(F)
      assert.is_true(#xs > 8000)
      for _, x in ipairs(xs) do
        local got, want = F.enc(x), ref_encode(F, x)
        if got ~= want then
          error(("%s(%s) = 0x%02x, reference 0x%02x"):format(F.name, hex(x), got, want))
        end
      end
      -- the rules by name
      assert.equal(F.maxbits, F.enc(math.huge))
      assert.equal(0x80 + F.maxbits, F.enc(-math.huge))
      assert.equal(0x7f, F.enc(0 / 0))
      assert.equal(0x80, F.enc(-0.0))
      assert.equal(0x80, F.enc(-F.decode(1) / 2))            -- a tie with 0 goes to (-)0
      assert.equal(0x02, F.enc(F.decode(1) * 1.5))           -- tie 1.5 ulp -> 2 (even)
      assert.equal(F.maxbits, F.enc(F.max * 1.0001))
    end)
  end

  it("a Lua number is rounded to float32 first, as the device's input", function()
    -- 1 + 2^-4 + 2^-30 is above the e4m3 tie 1 + 2^-4, but rounds to it in f32
    assert.equal(dt.float_to_f8e4m3(f32(1 + 2 ^ -4 + 2 ^ -30)), dt.float_to_f8e4m3(1 + 2 ^ -4 + 2 ^ -30))
    assert.equal(0x38, dt.float_to_f8e4m3(1 + 2 ^ -4 + 2 ^ -30))
  end)
end)

-- tf32 reference: 10 fraction bits, f32's exponent range (subnormals spaced
-- 2^-136), nearest with ties away from zero; a carry past the largest f32 is inf
local function ref_tf32(x)
  if x ~= x then return nil end
  local a = math.abs(x)
  if a == 0 or a == math.huge then return bits_of(x) end
  local _, ex = math.frexp(a)
  local q = 2 ^ (math.max(ex - 1, -126) - 10)
  local r = math.floor(a / q + 0.5)
  return bits_of((is_neg(x) and -1 or 1) * r * q)
end

describe("tfloat32 host conversion", function()
  it("f32 -> tf32 bits: nearest, ties away from zero (cvt.rna), on random bit patterns, ties, "
    .. "subnormals, the largest f32, inf and NaN", function()
    local xs = { 0, -0.0, math.huge, -math.huge, f32_of_bits(0x7f7fffff), f32_of_bits(0x7f7fefff),
      f32_of_bits(0x00000fff), f32_of_bits(0x00001000), f32_of_bits(0x00003000), f32_of_bits(0x80001000) }
    for _ = 1, 20000 do
      local b = math.floor(rnd() * 2 ^ 32)
      if bit.band(b, 0x7f800000) ~= 0x7f800000 then
        xs[#xs + 1] = f32_of_bits(b)
        xs[#xs + 1] = f32_of_bits(bit.bor(bit.band(b, 0xffffe000), 0x1000) % 2 ^ 32) -- a tie
      end
    end
    for _, x in ipairs(xs) do
      local got, want = dt.float_to_tf32(x), ref_tf32(x)
      if got ~= want then error(("tf32(%s) = 0x%08x, reference 0x%08x"):format(hex(x), got, want)) end
      assert.equal(0, bit.band(got, 0x1fff))
      assert.equal(f32_of_bits(got), dt.tf32_to_float(got))
    end
    assert.equal(0x3f802000, dt.float_to_tf32(1 + 2 ^ -11))   -- tie: away from zero
    assert.equal(0xbf802000, dt.float_to_tf32(-(1 + 2 ^ -11)))
    assert.equal(0x7f800000, dt.float_to_tf32(f32_of_bits(0x7f7fffff))) -- carries into inf
    local nan = dt.float_to_tf32(0 / 0)
    assert.is_true(dt.tf32_to_float(nan) ~= dt.tf32_to_float(nan))
    assert.equal(0, bit.band(nan, 0x1fff))
  end)
end)

---------------------------------------------------------------------------
-- device side
---------------------------------------------------------------------------
-- X (f32) -> E4, E5 (fp8), T (tf32), and back to f32 (B4, B5 through f16, BT);
-- H: E4 from X through f16 (cvt.rn.satfinite.e4m3x2.f16x2)
local function convert_kernel(arch)
  return cute.kernel(function(X, E4, E5, T, B4, B5, BT, H)
    local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
    local x = X[i]
    E4[i] = cute.Float8E4M3FN(x)
    E5[i] = cute.Float8E5M2(x)
    T[i] = cute.TFloat32(x)
    B4[i] = cute.Float32(E4[i])
    B5[i] = cute.Float32(cute.Float16(E5[i]))
    BT[i] = cute.Float32(T[i])
    H[i] = cute.Float8E4M3FN(cute.Float16(x))
  end, { arch = arch, use_ptxas = PTXAS ~= nil })
end
local function specs(n)
  local f, s = cute.tensor_spec({ n }, cute.float32), cute.tensor_spec
  return f, s({ n }, cute.float8_e4m3fn), s({ n }, cute.float8_e5m2), s({ n }, cute.tfloat32), f, f, f,
    s({ n }, cute.float8_e4m3fn)
end

describe("tf32 and fp8 on the device", function()
  it("IR types tf32, f8e4m3, f8e5m2: printed and parsed, loaded, stored and converted", function()
    local text = [[
kernel @k(%1: ptr.global.f32 "x", %2: ptr.global.f8e4m3 "a", %3: ptr.global.f8e5m2 "b", %4: ptr.global.tf32 "t") {
  %5 = load f32 %1
  %6 = cvt f8e4m3 %5
  store %2, %6
  %7 = load f8e5m2 %3
  %8 = cvt f16 %7
  %9 = cvt f8e5m2 %8
  store %3, %9
  %10 = cvt tf32 %5
  store %4, %10
  %11 = load tf32 %4
  %12 = cvt f32 %11
  store %1, %12
  ret
}
]]
    local m = IR.parse(text)
    local printed = m:text()
    assert.truthy(printed:find("ptr.global.f8e4m3", 1, true), printed)
    assert.truthy(printed:find("= load f8e5m2 %3", 1, true), printed)
    assert.truthy(printed:find("= cvt tf32 %5", 1, true), printed)
    assert.equal(printed, IR.parse(printed):text())
    local r = assert(m:compile { arch = "sm_90a", use_ptxas = PTXAS ~= nil })
    for _, want in ipairs({ "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.f16x2.e5m2x2", "cvt.rn.satfinite.e5m2x2.f16x2",
      "cvt.rna.tf32.f32", "ld.global.u8", "st.global.u8" }) do
      assert.truthy(r.ptx:find(want, 1, true), want)
    end
  end)

  it("the verifier: only f32 <-> tf32, f32/f16 -> fp8, fp8 -> f16/f32; no arithmetic on them", function()
    local function verr(body, ty)
      local text = ("kernel @k(%%1: ptr.global.%s \"p\") {\n  %%2 = load %s %%1\n%s\n  ret\n}\n"):format(ty, ty, body)
      local ok, e = pcall(IR.parse, text) -- (the parser verifies)
      if ok then ok, e = e:verify() end
      return ok and "" or tostring(e)
    end
    assert.truthy(util.has(verr("  %3 = cvt i32 %2", "f8e4m3"), "cannot convert f8e4m3 to i32"))
    assert.truthy(util.has(verr("  %3 = cvt f64 %2", "tf32"), "cannot convert tf32 to f64"))
    assert.truthy(util.has(verr("  %3 = cvt f8e5m2 %2", "f8e4m3"), "cannot convert f8e4m3 to f8e5m2"))
    assert.truthy(util.has(verr("  %3 = add f8e4m3 %2, %2", "f8e4m3"), "needs numbers"))
    assert.truthy(util.has(verr("  %3 = cvt f32 %2 rnd=rz", "f8e5m2"), "fp8 conversions round to nearest even (rn) only"))
    assert.truthy(util.has(verr("  %3 = cvt tf32 %2 rnd=rn", "f32"), "cvt.rna"))
    assert.equal("", verr("  %3 = cvt f32 %2", "f8e5m2"))
  end)

  it("a traced kernel's PTX has the cvt instructions; ptxas assembles it for sm_89 and sm_90a", function()
    for _, arch in ipairs({ "sm_89", "sm_90a" }) do
      local r = convert_kernel(arch):compile(specs(256))
      for _, want in ipairs({ "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32", "cvt.rna.tf32.f32",
        "cvt.rn.f16x2.e4m3x2", "cvt.rn.f16x2.e5m2x2", "cvt.rn.satfinite.e4m3x2.f16x2" }) do
        assert.truthy(r.ptx:find(want, 1, true), arch .. ": " .. want)
      end
      -- sm_89 has the fp8 cvt from PTX 8.1 (sm_90 from 7.8)
      local major, minor = r.ptx:match("%.version (%d+)%.(%d+)")
      assert.is_true(tonumber(major) * 10 + tonumber(minor) >= (arch == "sm_89" and 81 or 78), r.ptx:sub(1, 300))
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  it("fp8 below sm_89 and tf32 below sm_80 are errors at the user's line", function()
    local ok, e = pcall(function()
      local k = cute.kernel(function(X, E)
        local i = cute.arch.thread_idx()
        E[i] = cute.Float8E5M2(X[i]) -- MARK-fp8-sm80
      end, { arch = "sm_80", use_ptxas = false })
      return k:compile(cute.tensor_spec({ 32 }, cute.float32), cute.tensor_spec({ 32 }, cute.float8_e5m2))
    end)
    assert.is_false(ok)
    e = tostring(e)
    assert.truthy(util.has(e, "spec/fp8_spec.lua:" .. util.line_of("spec/fp8_spec.lua", "MARK-fp8-sm80") .. ":"), e)
    assert.truthy(util.has(e, "cvt f32 -> f8e5m2 (fp8) needs sm_89 or newer (target sm_80)"), e)
    ok, e = pcall(function()
      local k = cute.kernel(function(X, T)
        local i = cute.arch.thread_idx()
        T[i] = cute.TFloat32(X[i]) -- MARK-tf32-sm75
      end, { arch = "sm_75", use_ptxas = false })
      return k:compile(cute.tensor_spec({ 32 }, cute.float32), cute.tensor_spec({ 32 }, cute.tfloat32))
    end)
    assert.is_false(ok)
    e = tostring(e)
    assert.truthy(util.has(e, "spec/fp8_spec.lua:" .. util.line_of("spec/fp8_spec.lua", "MARK-tf32-sm75") .. ":"), e)
    assert.truthy(util.has(e, "cvt f32 -> tf32 needs sm_80 or newer (target sm_75)"), e)
    -- tf32 itself is fine on sm_80
    local k = cute.kernel(function(X, T)
      local i = cute.arch.thread_idx()
      T[i] = cute.TFloat32(X[i])
    end, { arch = "sm_80", use_ptxas = PTXAS ~= nil })
    local r = k:compile(cute.tensor_spec({ 32 }, cute.float32), cute.tensor_spec({ 32 }, cute.tfloat32))
    assert.truthy(r.ptx:find("cvt.rna.tf32.f32", 1, true))
  end)

  it("cute.copy moves tf32 and fp8 tensors in 16-byte accesses (global -> registers -> global)", function()
    for _, d in ipairs({ cute.float8_e4m3fn, cute.float8_e5m2, cute.tfloat32 }) do
      local k = cute.kernel(function(A, B)
        local i = cute.arch.thread_idx()
        local a, b = cute.local_tile(A, { 16 }, { i }), cute.local_tile(B, { 16 }, { i })
        local f = cute.make_fragment(cute.make_layout(16), d)
        cute.copy(a, f)
        cute.copy(f, b)
      end, { arch = "sm_90a", use_ptxas = PTXAS ~= nil })
      local r = k:compile(cute.tensor_spec({ 1024 }, d), cute.tensor_spec({ 1024 }, d))
      assert.truthy(r.ptx:find("ld.global.nc.v4.u32", 1, true), d.name)
      assert.truthy(r.ptx:find("st.global.v4.u32", 1, true), d.name)
    end
  end)

  it("arithmetic on an fp8 value in a kernel is an error at the user's line", function()
    local ok, e = pcall(function()
      local k = cute.kernel(function(E)
        local i = cute.arch.thread_idx()
        E[i] = E[i] + E[i] -- MARK-fp8-add
      end, { arch = "sm_90a", use_ptxas = false })
      return k:compile(cute.tensor_spec({ 32 }, cute.float8_e4m3fn))
    end)
    assert.is_false(ok)
    e = tostring(e)
    assert.truthy(util.has(e, "spec/fp8_spec.lua:" .. util.line_of("spec/fp8_spec.lua", "MARK-fp8-add") .. ":"), e)
  end)

  gpu_it("a kernel converts random f32 to fp8 and tf32 and back, bit for bit as the host (sm_89+)", function()
    -- (the CPU target traces for an sm_89 and runs what its engine supports)
    local arch = util.on_cpu_target() and "sm_89" or require("cute.compile").device_arch()
    local sm = tonumber(tostring(arch):match("sm_(%d+)"))
    if not sm or sm < 89 then pending("fp8 cvt needs an sm_89+ GPU (this one: " .. tostring(arch) .. ")") return end
    local n = 2 ^ 16
    -- random f32 over 2^-20 .. 2^18 (both signs), with the special values first
    local hx = ffi.new("float[?]", n)
    local special = { 0, -0.0, 0 / 0, math.huge, -math.huge, 448, 449, 464, 57344, 61440, 1e30, -1e30,
      2 ^ -10, 2 ^ -17, 3 * 2 ^ -11, 1 + 2 ^ -11, f32_of_bits(0x7f7fffff), f32_of_bits(0x00001000) }
    for i = 0, n - 1 do
      local s = special[i + 1]
      hx[i] = s or (rnd() < 0.5 and -1 or 1) * (1 + rnd()) * 2 ^ math.floor(rnd() * 38 - 20)
    end
    local k = convert_kernel(arch)
    local X = cute.from_host(hx, cute.float32, { n })
    local E4, E5 = cute.empty({ n }, cute.float8_e4m3fn), cute.empty({ n }, cute.float8_e5m2)
    local T, H = cute.empty({ n }, cute.tfloat32), cute.empty({ n }, cute.float8_e4m3fn)
    local B4, B5, BT = cute.empty({ n }, cute.float32), cute.empty({ n }, cute.float32), cute.empty({ n }, cute.float32)
    k:launch { grid = math.floor(n / 256), block = 256 }(X, E4, E5, T, B4, B5, BT, H)
    local e4, e5, t, h = E4:to_host(), E5:to_host(), T:to_host(), H:to_host()
    -- (the host arrays kept alive in locals: a cast pointer does not keep them)
    local hb4, hb5, hbt = B4:to_host(), B5:to_host(), BT:to_host()
    local b4, b5, bt = ffi.cast("uint32_t *", hb4), ffi.cast("uint32_t *", hb5), ffi.cast("uint32_t *", hbt)
    local function same_f32(bits, want, what, i)
      local got = f32_of_bits(bits)
      if want ~= want then
        assert(got ~= got, what .. " at " .. i .. ": NaN expected")
      else
        assert(bits == bits_of(want), ("%s at %d: 0x%08x, host %s"):format(what, i, bits, hex(want)))
      end
    end
    -- a NaN's sign and payload are not the ISA's to promise: NaN in, some NaN out
    local function fp8_nan(b, dec) return dec(b) ~= dec(b) end
    for i = 0, n - 1 do
      local x = hx[i]
      if x ~= x then
        assert(fp8_nan(e4[i], dt.f8e4m3_to_float) and fp8_nan(e5[i], dt.f8e5m2_to_float) and
          fp8_nan(h[i], dt.f8e4m3_to_float), "fp8(NaN) is NaN")
      else
      assert(e4[i] == dt.float_to_f8e4m3(x), ("e4m3(%s): 0x%02x, host 0x%02x"):format(hex(x), e4[i], dt.float_to_f8e4m3(x)))
      assert(e5[i] == dt.float_to_f8e5m2(x), ("e5m2(%s): 0x%02x, host 0x%02x"):format(hex(x), e5[i], dt.float_to_f8e5m2(x)))
      -- f32 -> f16 (round to nearest even) -> e4m3
      local hx16 = dt.half_to_float(dt.float_to_half(x))
      assert(h[i] == dt.float_to_f8e4m3(hx16), ("e4m3(f16(%s)): 0x%02x, host 0x%02x"):format(hex(x), h[i],
        dt.float_to_f8e4m3(hx16)))
      end
      if x == x then
        assert(t[i] == dt.float_to_tf32(x), ("tf32(%s): 0x%08x, host 0x%08x"):format(hex(x), t[i], dt.float_to_tf32(x)))
        same_f32(bt[i], dt.tf32_to_float(t[i]), "tf32 -> f32", i)
      else
        assert(f32_of_bits(t[i]) ~= f32_of_bits(t[i]), "tf32(NaN) is NaN")
      end
      same_f32(b4[i], dt.f8e4m3_to_float(e4[i]), "e4m3 -> f32", i)
      same_f32(b5[i], dt.f8e5m2_to_float(e5[i]), "e5m2 -> f16 -> f32", i)
    end
    local _ = { hb4, hb5, hbt, e4, e5, t, h }
  end)
end)

describe("tf32 and fp8 kernel parameters", function()
  it("a scalar argument is written as the host conversion's bits", function()
    local launch = require("cute.launch")
    local T = dt.T
    local plan = { { kind = "scalar", t = T.F8E4M3, arg = 1 }, { kind = "scalar", t = T.F8E5M2, arg = 2 },
      { kind = "scalar", t = T.TF32, arg = 3 } }
    local slots, _, ptrs, fill = launch.make_writer(plan, 3)
    local x = 300.7
    fill(slots, ptrs, cute.Float8E4M3FN(x), cute.Float8E5M2(x), cute.TFloat32(1 + 2 ^ -11))
    local b = ffi.cast("uint8_t *", slots)
    assert.equal(dt.float_to_f8e4m3(x), b[0])
    assert.equal(dt.float_to_f8e5m2(x), b[8])
    assert.equal(0x3f802000, ffi.cast("uint32_t *", slots)[4])
    assert.equal(0x7e, dt.float_to_f8e4m3(1e6)) -- (beyond max: saturates, as the device's cvt would)
    -- float16 / bfloat16 parameters beside them still written as their bits
    slots, _, ptrs, fill = launch.make_writer({ { kind = "scalar", t = T.F16, arg = 1 },
      { kind = "scalar", t = T.BF16, arg = 2 } }, 2)
    fill(slots, ptrs, cute.Float16(1.5), cute.BFloat16(1.5))
    assert.equal(0x3e00, ffi.cast("uint16_t *", slots)[0])
    assert.equal(0x3fc0, ffi.cast("uint16_t *", slots)[4])
  end)
end)
