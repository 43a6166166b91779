-- Arithmetic rules (docs/DSL.md "Arithmetic rules"): one rule per operator,
-- the same whether an operand is a Lua number or traced.  Bug specs for issue 8
-- items 6 and 9, then the differential test's CPU half: every operator folded
-- at trace time against an independent Lua reference (spec/support/arith_ref.lua),
-- and the generated LLVM checked for poison-producing forms.
local cute = require("cute")
local ffi = require("ffi")

local THIS = "spec/arith_spec.lua"
local function spec1(n, dt) return cute.tensor_spec({ n }, dt or cute.float32) end

local function line_of(marker) return dofile("spec/support/util.lua").line_of(THIS, marker) end

local function trace_error(k, ...)
  local ok, e = pcall(k.ir, k, ...)
  assert.is_false(ok, "expected a trace error")
  return tostring(e)
end

local function call_error(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

describe("arithmetic rules (issue 8 item 6)", function()
  it("cute.lshift by >= the width is 0, not poison: the store stays", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      A[i] = cute.lshift(A[i], 32)
    end)
    local r = k:compile(spec1(64, cute.int32))
    assert.is_truthy(r.ptx:find("st%.global"), r.ptx)
    -- with a runtime amount: clamped (no bare shl by a value that may be >= 32)
    local k2 = cute.kernel(function(A, B)
      local i = cute.arch.thread_idx()
      A[i] = cute.lshift(A[i], B[i])
    end)
    local r2 = k2:compile(spec1(64, cute.int32), spec1(64, cute.int32))
    assert.is_truthy(r2.ptx:find("st%.global"), r2.ptx)
    assert.is_truthy(r2.llvm:find("select") or r2.llvm:find("umin"), r2.llvm)
  end)

  it("float -> int conversions saturate (llvm.fpto*i.sat), NaN -> 0", function()
    local k = cute.kernel(function(A, B, U)
      local i = cute.arch.thread_idx()
      B[i] = cute.Int32(A[i])
      U[i] = A[i]
    end)
    local r = k:compile(spec1(64), spec1(64, cute.int32), spec1(64, cute.uint8))
    assert.is_truthy(r.llvm:find("llvm.fptosi.sat", 1, true), r.llvm)
    assert.is_truthy(r.llvm:find("llvm.fptoui.sat", 1, true), r.llvm)
    assert.is_falsy(r.llvm:find("fptosi [^(]") or r.llvm:find("fptoui [^(]"), r.llvm)
    assert.is_truthy(r.ptx:find("st%.global%.u8") or r.ptx:find("st%.global%.b8"), r.ptx)
    -- folded at trace time by the same rule
    local seen = {}
    local k2 = cute.kernel(function(B)
      seen[1] = cute.Int32(cute.Float32(3e9)):constant()
      seen[2] = cute.Int32(cute.Float32(0 / 0)):constant()
      seen[3] = cute.Uint8(cute.Float32(-5.5)):constant()
      seen[4] = cute.Int8(cute.Float32(300)):constant()
      B[0] = seen[1]
    end)
    k2:ir(spec1(4, cute.int32))
    assert.same({ 2147483647, 0, 0, 127 }, seen)
  end)

  it("cvt with a rounding mode to an 8-bit integer saturates to 8 bits (the PTX cvt is 16-bit)", function()
    local m = require("cute.ir").parse([[
kernel @k(%1: ptr.global.f32 "a", %2: ptr.global.i8 "b", %3: ptr.global.u8 "c") {
  %4 = load f32 %1
  %5 = cvt i8 %4 rnd=rz
  store %2, %5
  %7 = cvt u8 %4 rnd=rn
  store %3, %7
  ret
}
]])
    local r = assert(m:compile { arch = "sm_90a", opt_level = 1, use_ptxas = false })
    assert.is_truthy(r.llvm:find("smin%.i16%(i16 %%%d+, i16 127%)") and r.llvm:find("smax%.i16%(i16 %%%d+, i16 %-128%)"), r.llvm)
    assert.is_truthy(r.llvm:find("umin%.i16%(i16 %%%d+, i16 255%)"), r.llvm)
  end)

  it("cute.rshift of a negative Lua number is arithmetic, as on traced i32", function()
    assert.equal(-4, cute.rshift(-8, 1))
    assert.equal(-1, cute.rshift(-8, 40))
    assert.equal(0, cute.lshift(1, 32))
    assert.equal(-2147483648, cute.lshift(1, 31))
    assert.equal(255, cute.band(0xffffffff, 0xff))   -- 0xffffffff is an i64 constant
    assert.equal(-1, cute.bnot(0))
  end)

  it("% is Lua's floored modulo on traced integers too; cute.rem truncates", function()
    local seen = {}
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      A[i] = (i - 1) % n
      seen[1] = (cute.Int32(-1) % 5):constant()
      seen[2] = (cute.Int32(7) % -3):constant()
      seen[3] = cute.rem(cute.Int32(-1), 5):constant()
      seen[4] = cute.div(cute.Int32(-7), 2):constant()
      A[i + 1] = cute.Int32(cute.Float32(i) % 5)
    end)
    local ir = k:ir(spec1(64, cute.int32), cute.Int32(5))
    assert.same({ 4, -2, -1, -3 }, seen)
    assert.is_truthy(ir:find("floor f32", 1, true), ir) -- floats: a - floor(a / b) * b
    assert.is_truthy(ir:find("select i32", 1, true), ir) -- the sign adjustment
    assert.equal(-1, cute.rem(-1, 5))
    assert.equal(-3, cute.div(-7, 2))
  end)

  it("integer division by zero and INT_MIN / -1 are guarded (no LLVM UB)", function()
    local k = cute.kernel(function(A, B)
      local i = cute.arch.thread_idx()
      A[i] = cute.div(A[i], B[i]) + cute.rem(A[i], B[i]) + A[i] % B[i]
    end)
    local r = k:compile(spec1(64, cute.int32), spec1(64, cute.int32))
    assert.is_truthy(r.ptx:find("st%.global"), r.ptx)
    assert.equal(-1, cute.div(7, 0))
    assert.equal(7, cute.rem(7, 0))
    assert.equal(-2147483648, cute.div(-2147483648, -1))
    assert.equal(0, cute.rem(-2147483648, -1))
  end)

  it("integral constants that do not fit the operand type are errors at the user's line", function()
    local function k_of(f) return cute.kernel(f) end
    local e = trace_error(k_of(function(A)
      local x = A[0]
      A[1] = x + 2 ^ 32 + 5 -- MARK_FIT1
    end), spec1(4, cute.int32))
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK_FIT1"), 1, true), e)
    assert.is_truthy(e:find("4294967296 does not fit i32", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = A[0] + 2 ^ 31 end), spec1(4, cute.int32))
    assert.is_truthy(e:find("2147483648 does not fit i32 (in x + 2147483648", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = A[0] * -1 end), spec1(4, cute.uint32))
    assert.is_truthy(e:find("-1 does not fit u32", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = 300 - A[0] end), spec1(4, cute.int8))
    assert.is_truthy(e:find("300 does not fit i8 (in 300 - x", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = cute.band(A[0], 256) end), spec1(4, cute.uint8))
    assert.is_truthy(e:find("256 does not fit u8 (in cute.band(x, 256), x: u8)", 1, true), e)
    -- bitwise operators take a constant as a bit pattern of the width
    local ir = k_of(function(A) A[1] = cute.band(A[0], 0xffff0000) + cute.bxor(A[0], -1) end):ir(spec1(4, cute.int32))
    assert.is_truthy(ir:find("and i32 %%%d+, %-65536:i32"), ir)
    e = trace_error(k_of(function(A) A[1] = cute.bor(A[0], 2 ^ 32) end), spec1(4, cute.int32))
    assert.is_truthy(e:find("4294967296 does not fit i32", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = cute.bxor(cute.lt(A[0], 1), 2) end), spec1(4, cute.int32))
    assert.is_truthy(e:find("2 does not fit i1", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = A[0] + 2 ^ 64 end), spec1(4, cute.uint64))
    assert.is_truthy(e:find("18446744073709551616 does not fit u64", 1, true), e)
    e = trace_error(k_of(function(A) A[1] = A[0] - 40000 end), spec1(4, cute.int16))
    assert.is_truthy(e:find("40000 does not fit i16", 1, true), e)
  end)

  it("a lane mask may be written 0xffffffff (32 bits), any other constant must fit", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      A[i] = cute.arch.shuffle_sync(A[i], 0, 0xffffffff)
      A[i + 32] = cute.arch.vote_ballot_sync(A[i] > 0, 0xffffffff)
    end)
    local ir = k:ir(spec1(64, cute.int32))
    assert.is_truthy(ir:find("-1:i32", 1, true), ir)
    local e = trace_error(cute.kernel(function(A) A[0] = cute.arch.shuffle_sync(A[0], 0, 2 ^ 32) end),
      spec1(4, cute.int32))
    assert.is_truthy(e:find("4294967296 does not fit i32", 1, true), e)
  end)

  it("cute.var(3000000000) is an i64, cute.var(1.5) an f32", function()
    local k = cute.kernel(function(A)
      local v = cute.var(3000000000)
      local w = cute.var(1.5)
      A[0] = v.value + 1
      A[1] = w.value
    end)
    local ir = k:ir(spec1(4, cute.int64))
    assert.is_truthy(ir:find("var i64 3000000000:i64", 1, true), ir)
    assert.is_truthy(ir:find("var f32", 1, true), ir)
  end)

  it("promotion is symmetric: f16 with bf16 is f32, i32 with u32 is u32", function()
    local types = {}
    local k = cute.kernel(function(H, B, I, U)
      types[1] = (H[0] + B[0]):type_name()
      types[2] = (B[0] + H[0]):type_name()
      types[3] = (I[0] + U[0]):type_name()
      types[4] = (U[0] + I[0]):type_name()
      types[5] = (I[0] * H[0]):type_name()
    end)
    k:ir(spec1(4, cute.float16), spec1(4, cute.bfloat16), spec1(4, cute.int32), spec1(4, cute.uint32))
    assert.same({ "f32", "f32", "u32", "u32", "f16" }, types)
  end)
end)

describe("typed scalars check their value (issue 8 item 9)", function()
  it("non-integral, out-of-range and NaN integers are errors naming the constructor", function()
    local e = call_error(cute.Int32, 1.5) -- MARK_SC1
    assert.is_truthy(e:find("cute.Int32: 1.5 is not an integer", 1, true), e)
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK_SC1"), 1, true) or e:find("arith_spec", 1, true), e)
    assert.is_truthy(call_error(cute.Int32, 3e9):find("cute.Int32: 3000000000 does not fit i32", 1, true))
    assert.is_truthy(call_error(cute.Int32, 0 / 0):find("cute.Int32: nan is not an integer", 1, true) or
      call_error(cute.Int32, 0 / 0):find("is not an integer", 1, true))
    assert.is_truthy(call_error(cute.Int8, 300):find("cute.Int8: 300 does not fit i8", 1, true))
    assert.is_truthy(call_error(cute.Boolean, 2):find("cute.Boolean: 2 does not fit", 1, true))
    assert.is_truthy(call_error(cute.Uint32, -1):find("cute.Uint32: -1 does not fit u32", 1, true))
    assert.is_truthy(call_error(cute.Int64, 2 ^ 63):find("does not fit i64", 1, true))
    assert.is_truthy(call_error(cute.Uint8, 1 / 0):find("is not an integer", 1, true))
  end)

  it("values in range pass unchanged", function()
    assert.equal(-2147483648, cute.Int32(-2 ^ 31).value)
    assert.equal(4294967295, cute.Uint32(2 ^ 32 - 1).value)
    assert.equal(1, cute.Boolean(true).value)
    assert.equal(0, cute.Boolean(0).value)
    assert.equal(2 ^ 53, cute.Int64(2 ^ 53).value)
    assert.equal(1.5, cute.Float32(1.5).value)
  end)

  it("inside a kernel a Lua number must fit; a traced float converts with saturation", function()
    local k = cute.kernel(function(A) A[0] = cute.Int8(200) end) -- MARK_SC2
    local e = trace_error(k, spec1(4, cute.int8))
    assert.is_truthy(e:find("cute.Int8: 200 does not fit i8", 1, true), e)
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK_SC2"), 1, true), e)
    local k2 = cute.kernel(function(A, B) B[0] = cute.Int16(A[0]) end)
    local r = k2:compile(spec1(4), spec1(4, cute.int16))
    assert.is_truthy(r.llvm:find("llvm.fptosi.sat", 1, true), r.llvm)
  end)
end)

---------------------------------------------------------------------------
-- the differential test, CPU half: (1) folded at trace time vs (3) the Lua
-- reference of the documented rule (spec/support/arith_ref.lua); the GPU half
-- (2) is spec/arith_gpu_spec.lua
---------------------------------------------------------------------------
local R = dofile("spec/support/arith_ref.lua")
local CTOR = { i1 = "Boolean", i8 = "Int8", i16 = "Int16", i32 = "Int32", i64 = "Int64", u8 = "Uint8",
  u16 = "Uint16", u32 = "Uint32", u64 = "Uint64", f16 = "Float16", bf16 = "BFloat16", f32 = "Float32",
  f64 = "Float64" }
local DT = { i8 = cute.int8, i16 = cute.int16, i32 = cute.int32, i64 = cute.int64, u8 = cute.uint8,
  u16 = cute.uint16, u32 = cute.uint32, u64 = cute.uint64, f16 = cute.float16, bf16 = cute.bfloat16,
  f32 = cute.float32, f64 = cute.float64 }

-- the traced operator for each rule name (a, b: traced values or Lua numbers)
local BIN = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return cute.div(a, b) end,
  rem = function(a, b) return cute.rem(a, b) end, mod = function(a, b) return a % b end,
  min = cute.min, max = cute.max, band = cute.band, bor = cute.bor, bxor = cute.bxor,
  lshift = cute.lshift, rshift = cute.rshift,
  lt = cute.lt, le = cute.le, gt = cute.gt, ge = cute.ge, eq = cute.eq, ne = cute.ne,
}
local UN = { neg = function(a) return -a end, bnot = cute.bnot }

local checker = R.checker

-- run fn(...) while a kernel is traced (constants need a trace)
local function in_trace(fn)
  local k = cute.kernel(function(A) fn(); A[0] = 0 end)
  k:ir(spec1(4, cute.int32))
end

describe("differential: folded at trace time vs the Lua reference", function()
  for _, t in ipairs(R.INTS) do
    it("integer operators on traced " .. t .. " constants", function()
      local A, B = R.pairs(t, 150, 7)
      local ck = checker(t)
      local ctor = cute[CTOR[t]]
      in_trace(function()
        for i = 1, #A do
          local a, b = A[i], B[i]
          local ca, cb = ctor(a), ctor(b)
          local function d() return ("(%s, %s)"):format(R.show(a), R.show(b)) end
          for _, op in ipairs(R.INT_BINARY) do
            local r = BIN[op](ca, cb)
            ck.check(op, r:constant(), R.binary(op, t, a, b), d)
          end
          for _, op in ipairs(R.CMP_NAMES) do
            ck.check(op, BIN[op](ca, cb):constant() == 1, R.binary(op, t, a, b), d)
          end
          for _, op in ipairs(R.INT_UNARY) do
            ck.check(op, UN[op](ca):constant(), R.unary(op, t, a), d)
          end
        end
      end)
      ck.done()
    end)
  end

  it("integer operators on two Lua numbers (i32) and 64-bit cdata (i64, u64)", function()
    for _, t in ipairs({ "i32", "i64", "u64" }) do
      local A, B = R.pairs(t, 150, 11)
      local ck = checker(t .. " numbers")
      for i = 1, #A do
        local a, b = A[i], B[i]
        local function d() return ("(%s, %s)"):format(R.show(a), R.show(b)) end
        for _, op in ipairs({ "div", "rem", "min", "max", "band", "bor", "bxor", "lshift", "rshift",
          "lt", "le", "gt", "ge", "eq", "ne" }) do
          ck.check(op, BIN[op](a, b), R.binary(op, t, a, b), d)
        end
        ck.check("bnot", cute.bnot(a), R.unary("bnot", t, a), d)
        if t == "i32" and b ~= 0 then -- Lua's own % on numbers is the floored rule
          ck.check("mod", a % b, R.binary("mod", t, a, b), d)
        end
      end
      ck.done()
    end
  end)

  it("float operators on two Lua numbers (f64)", function()
    local A, B = R.pairs("f64", 150, 13)
    local ck = checker("f64 numbers")
    for i = 1, #A do
      local a, b = A[i], B[i]
      local function d() return ("(%.17g, %.17g)"):format(a, b) end
      for _, op in ipairs({ "add", "sub", "mul", "mod", "min", "max", "lt", "le", "gt", "ge", "eq", "ne" }) do
        ck.check(op, BIN[op](a, b), R.binary(op, "f64", a, b), d)
      end
      ck.check("div", a / b, R.binary("div", "f64", a, b), d)
      if a % 1 ~= 0 or b % 1 ~= 0 then -- (two integral numbers fold as integers: i32 / i64)
        ck.check("cute.div", cute.div(a, b), R.binary("div", "f64", a, b), d)
        ck.check("rem", cute.rem(a, b), R.binary("rem", "f64", a, b), d)
      end
    end
    ck.done()
  end)

  it("conversions between every pair of types, folded on traced constants", function()
    local ck = checker("conversions")
    local srcs = { "i1" }
    for _, t in ipairs(R.INTS) do srcs[#srcs + 1] = t end
    for _, t in ipairs(R.FLOATS) do srcs[#srcs + 1] = t end
    in_trace(function()
      for _, s in ipairs(srcs) do
        local xs = s == "i1" and { 0, 1 } or R.operands(s, 60, 17)
        for _, x in ipairs(xs) do
          local c = cute[CTOR[s]](x)
          for _, t in ipairs(srcs) do
            local function d() return ("%s -> %s of %s"):format(s, t, R.show(x)) end
            ck.check(s .. "->" .. t, cute[CTOR[t]](c):constant(), R.convert(s, t, x), d)
          end
        end
      end
    end)
    ck.done()
  end)
end)

describe("differential: the generated code has no poison-producing forms", function()
  local K = dofile("spec/support/arith_kernels.lua")
  local N = 256

  -- every shift amount and divisor is a constant or a select (the clamp / guard);
  -- float -> int conversions are the saturating intrinsics
  local function check_llvm(llvm, what)
    local def = {}
    for name, op in llvm:gmatch("\n%s*(%%[%w_.]+) = (%a+)") do def[name] = op end
    local n = 0
    for line in llvm:gmatch("[^\n]+") do
      local op, y = line:match("= (%a+) [%w<> ]-[%w%%_.]+, ([%w%%_.-]+)%s*$")
      if op == "shl" or op == "lshr" or op == "ashr" or op == "sdiv" or op == "udiv" or op == "srem" or
          op == "urem" then
        n = n + 1
        assert(not y:match("^%%") or def[y] == "select",
          ("%s: %s by %s, which is not clamped or guarded:\n%s"):format(what, op, y, line))
      end
      assert(not line:match("= fpto[su]i "), what .. ": a bare float -> int conversion (poison out of range): " .. line)
    end
    return n
  end

  for _, t in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64" }) do
    it("operators on " .. t .. ": guarded at O0, every store kept at O3", function()
      local args = { spec1(N, K.DT[t]), spec1(N, K.DT[t]), spec1(N * 16, K.DT[t]), spec1(N * 6, cute.uint8) }
      local r0 = K.binary_kernel(t, N, { opt_level = 0 }):compile(unpack(args))
      local guarded = check_llvm(r0.llvm, t)
      if not R.TYPES[t].float then assert.is_true(guarded >= 5, r0.llvm) end -- shl, shr, div, rem, %
      local r3 = K.binary_kernel(t, N):compile(unpack(args))
      local vals, cmps = K.ops(t)
      local _, stores = r3.ptx:gsub("st%.global", "")
      assert.equal(#vals + #cmps, stores, r3.ptx)
    end)
  end

  it("conversions from every type: saturating, every store kept", function()
    for _, s in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64" }) do
      local args = { spec1(N, K.DT[s]) }
      for k, t in ipairs(K.TARGETS) do args[k + 1] = spec1(N, K.DT[t]) end
      local r0 = K.convert_kernel({ opt_level = 0 }):compile(unpack(args))
      check_llvm(r0.llvm, s)
      if R.TYPES[s].float then
        assert.is_truthy(r0.llvm:find("llvm.fptosi.sat", 1, true) and r0.llvm:find("llvm.fptoui.sat", 1, true), r0.llvm)
      end
      local r3 = K.convert_kernel():compile(unpack(args))
      local _, stores = r3.ptx:gsub("st%.global", "")
      assert.equal(#K.TARGETS, stores, s .. "\n" .. r3.ptx)
    end
  end)
end)

describe("differential: the lowering of each operator, evaluated by LLVM's constant folder", function()
  -- Operands go through cute.var, so the trace does not fold: the IR holds the
  -- operator, the code generator lowers it (clamps, guards, sign fix-ups) and
  -- LLVM's folder (opt_level 1) computes the stored constants, which are
  -- compared with the reference.  Checks the GPU path's code on the CPU.
  local K = dofile("spec/support/arith_kernels.lua")

  -- byte offset -> stored constant, from `store iN C, ptr ... %p` lines
  local function stores(llvm, elem_bytes)
    local gep = {}
    for name, base, off in llvm:gmatch("(%%[%w_.]+) = getelementptr inbounds i8, ptr addrspace%(1%) (%%[%w_.]+), i64 (%d+)") do
      gep[name] = { base = base, off = tonumber(off) }
    end
    local out = {}
    local function where(p)
      local inl_base, inl_off = p:match("getelementptr inbounds %(i8, ptr addrspace%(1%) (%%[%w_.]+), i64 (%d+)%)")
      if inl_base then return inl_base, tonumber(inl_off) end
      if gep[p] then return gep[p].base, gep[p].off end
      return p, 0
    end
    for _, v, p in llvm:gmatch("store (i%d+) (%-?%d+), ptr addrspace%(1%) ([^,]+), align") do
      local base, off = where(p)
      out[base] = out[base] or {}
      out[base][off] = v
    end
    -- runs of equal bytes become a memset
    for p, v, len in llvm:gmatch("@llvm%.memset[%w.]*%(ptr addrspace%(1%) [%w ]-(%%[%w_.]+), i8 (%-?%d+), i64 (%d+)") do
      local base, off = where(p)
      out[base] = out[base] or {}
      for o = off, off + tonumber(len) - 1 do out[base][o] = v end
    end
    return out
  end

  -- LLVM prints iN constants signed: the value as type t
  local function as_t(t, s)
    if R.TYPES[t].bits == 64 then
      local v = ffi.new("int64_t", 0)
      local neg = s:sub(1, 1) == "-"
      for d in s:gmatch("%d") do v = v * 10 + tonumber(d) end
      if neg then v = -v end
      if t == "u64" then return ffi.cast("uint64_t", v) end
      return v
    end
    return R.wrap(t, tonumber(s))
  end

  for _, t in ipairs(R.INTS) do
    it("integer operators on " .. t, function()
      local ops = R.edges(t)
      local A, B = {}, {}
      for i = 1, #ops do for j = 1, #ops do A[#A + 1], B[#B + 1] = ops[i], ops[j] end end
      local vals, cmps = K.ops(t)
      local ctor = cute[K.CTOR[t]]
      local n = #A
      local k = cute.kernel(function(V, P)
        for i = 1, n do
          local a, b = cute.var(ctor(A[i])).value, cute.var(ctor(B[i])).value
          for j, o in ipairs(vals) do
            local f = K.BIN[o.op] or K.UN[o.op]
            V[(j - 1) * n + i - 1] = f(a, b)
          end
          -- (1 / 2, not 0 / 1: LLVM merges runs of zero stores into a memset)
          for j, op in ipairs(cmps) do P[(j - 1) * n + i - 1] = K.BIN[op](a, b):to(cute.uint8) + 1 end
        end
      end, { opt_level = 1 })
      local eb = R.TYPES[t].bits / 8
      local r = k:compile(spec1(n * #vals, K.DT[t]), spec1(n * #cmps, cute.uint8))
      local st = stores(r.llvm, eb)
      local sv, sp = st["%V"] or {}, st["%P"] or {}
      local ck = checker(t .. " lowered")
      for i = 1, n do
        local a, b = A[i], B[i]
        local function d() return ("(%s, %s)"):format(R.show(a), R.show(b)) end
        for j, o in ipairs(vals) do
          local got = sv[((j - 1) * n + i - 1) * eb]
          local want = o.arity == 2 and R.binary(o.op, t, a, b) or R.unary(o.op, t, a)
          ck.check(o.op, got and as_t(t, got) or "no constant store", want, d)
        end
        for j, op in ipairs(cmps) do
          local got = sp[(j - 1) * n + i - 1]
          local v = "no constant store"
          if got then v = R.wrap("u8", tonumber(got)) == 2 end
          ck.check(op, v, R.binary(op, t, a, b), d)
        end
      end
      ck.done()
    end)
  end

  it("conversions to every integer type, from every type", function()
    local ck = checker("conversions lowered")
    for _, src in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64" }) do
      local X = R.TYPES[src].float and R.operands(src, 0, 5) or R.edges(src)
      local ctor = cute[K.CTOR[src]]
      local k = cute.kernel(function(O1, O2, O3, O4, O5, O6, O7, O8)
        local O = { O1, O2, O3, O4, O5, O6, O7, O8 }
        for i = 1, #X do
          local a = cute.var(ctor(X[i])).value
          for j, t in ipairs(R.INTS) do O[j][i - 1] = cute[K.CTOR[t]](a) end
        end
      end, { opt_level = 1 })
      local args = {}
      for j, t in ipairs(R.INTS) do args[j] = spec1(#X, K.DT[t]) end
      local st = stores(k:compile(unpack(args)).llvm)
      for j, t in ipairs(R.INTS) do
        local got_t = st["%O" .. j] or {}
        for i = 1, #X do
          local x = X[i]
          local got = got_t[(i - 1) * R.TYPES[t].bits / 8]
          ck.check(src .. "->" .. t, got and as_t(t, got) or "no constant store", R.convert(src, t, x),
            function() return "of " .. R.show(x) end)
        end
      end
    end
    ck.done()
  end)
end)
