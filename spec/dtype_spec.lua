-- cute.dtype: the one Lua table of scalar types and address spaces agrees with
-- the C core for every type, and the other modules read it (no copies).
local ffi = require("ffi")
local cute = require("cute")
local cf = require("cute.ffi")
local C = cf.C
local dt = require("cute.dtype")
local util = dofile("spec/support/util.lua")

describe("cute.dtype agrees with the C core", function()
  local ir = ffi.gc(C.cute_ir_new(), C.cute_ir_free)

  it("every scalar type of the C table: code, IR name, size, enum name", function()
    local n = 0
    for t = C.CUTE_T_I1, C.CUTE_T_F8E5M2 do
      local info = dt.scalars[t]
      assert.is_table(info, "no entry for type " .. t)
      local name = ffi.string(C.cute_ir_type_name(ir, t))
      assert.equal(name, info.ir)
      assert.equal(t, info.code)
      assert.equal(C.cute_ir_type_size(ir, t), info.size)
      assert.equal(t, C["CUTE_T_" .. name:upper()])  -- the header's enum name
      assert.equal(t, dt.T[name:upper()])
      assert.equal(t, C.cute_ir_type_parse(ir, name)) -- the IR text parser's name
      assert.equal(info, dt.by_ir[name])
      n = n + 1
    end
    local m = 0
    for _ in pairs(dt.scalars) do m = m + 1 end
    assert.equal(n, m)                        -- nothing else (void, vectors, pointers)
    assert.is_nil(dt.scalars[C.CUTE_T_VOID])
    assert.equal(-1, C.cute_ir_scalar_info(C.CUTE_T_VEC, nil, nil, nil))
    assert.equal(-1, C.cute_ir_scalar_info(0, nil, nil, nil))
  end)

  it("classes: integers with their ranges, floats with their formats, the boolean", function()
    for _, info in pairs(dt.scalars) do
      local ctype = info.bool and "uint8_t" or info.ctype
      if info.float or info.xfloat then
        assert.is_nil(info.int)
        assert.is_true(not (info.float and info.xfloat))
        assert.is_number(info.p)
        -- the largest finite value of the format is representable: 2^emax * (2 - 2^(1-p))
        assert.is_true(2 ^ info.emax * (2 - 2 ^ (1 - info.p)) < math.huge)
      else
        assert.is_true(info.int)
        assert.equal(info.signed and -2 ^ (info.bits - 1) or 0, info.min)
        assert.equal(ffi.sizeof(ctype), info.size)
      end
    end
    assert.is_true(dt.by_ir.i1.bool)
    assert.equal(dt.T.U8, dt.storage(dt.T.I1))
    assert.equal(dt.T.F32, dt.storage(dt.T.F32))
    -- tf32 and fp8: storage-only floats (C class XFLOAT), their bits in memory
    for ir, bits in pairs({ tf32 = 32, f8e4m3 = 8, f8e5m2 = 8 }) do
      local info = dt.by_ir[ir]
      assert.is_true(info.xfloat, ir)
      assert.is_nil(info.float)
      assert.equal(bits, info.bits)
      assert.equal(info.code, dt.storage(info.code))
      local cls = ffi.new("int[1]")
      assert.equal(0, C.cute_ir_scalar_info(info.code, nil, nil, cls))
      assert.equal(C.CUTE_TC_XFLOAT, cls[0])
    end
  end)

  it("address spaces: each one's name is the one C prints in pointer types", function()
    local n = 0
    for sp = 0, 15 do
      local name = dt.space_names[sp]
      local ir = ffi.gc(C.cute_ir_new(), C.cute_ir_free) -- fresh: a refused space leaves a sticky error
      local p = C.cute_ir_t_ptr(ir, C.CUTE_T_F32, sp)
      if name then
        n = n + 1
        assert.equal(sp, dt.spaces[name])
        assert.equal("ptr." .. name .. ".f32", ffi.string(C.cute_ir_type_name(ir, p)))
        assert.equal(sp, C["CUTE_AS_" .. (name == "const" and "CONST" or name:upper())])
      else
        assert.is_true(p == 0 or C.cute_ir_type_kind(ir, p) ~= C.CUTE_T_PTR, "space " .. sp .. " exists in C")
      end
    end
    assert.equal(5, n)
  end)
end)

describe("names", function()
  it("CuTe DSL's scalar names are the kernel scalar constructors, one per IR scalar type", function()
    local want = { i1 = "Boolean", i8 = "Int8", i16 = "Int16", i32 = "Int32", i64 = "Int64", u8 = "Uint8",
      u16 = "Uint16", u32 = "Uint32", u64 = "Uint64", f16 = "Float16", bf16 = "BFloat16", f32 = "Float32",
      f64 = "Float64", tf32 = "TFloat32", f8e4m3 = "Float8E4M3FN", f8e5m2 = "Float8E5M2" }
    for ir, cname in pairs(want) do
      assert.equal(cname, dt.by_ir[ir].cute)
      assert.is_function(cute[cname])
    end
    assert.equal(#dt.cute_names, 16)
  end)

  it("runtime dtypes: one per scalar type, named as before, read by every module", function()
    for name, d in pairs(dt.dtypes) do
      assert.equal(d, cute[name])
      assert.equal(d, require("cute.runtime")[name])
      assert.equal(d, cute.dtype(name))
      assert.equal(d.ir, require("cute.trace").dtype_ir[name])
      assert.equal(ffi.sizeof(d.ct), d.size)
    end
    assert.equal(cute.float32, cute.dtype("Float32"))
    assert.equal(dt.T.U8, cute.bool.ir)
    assert.equal(dt.T.BF16, cute.bfloat16.ir)
    assert.equal("float32, float16, bfloat16, tfloat32, float8_e4m3fn, float8_e5m2, float64, int8, int16, int32, int64, "
      .. "uint8, uint16, uint32, uint64, bool", dt.dtype_names)
    -- CuTe DSL's names of the low-precision formats, and their elements' IR types
    assert.equal(cute.float8_e4m3fn, cute.dtype("Float8E4M3FN"))
    assert.equal(cute.float8_e5m2, cute.dtype("Float8E5M2"))
    assert.equal(cute.tfloat32, cute.dtype("TFloat32"))
    assert.equal(dt.T.F8E4M3, cute.float8_e4m3fn.ir)
    assert.equal(dt.T.F8E5M2, cute.float8_e5m2.ir)
    assert.equal(dt.T.TF32, cute.tfloat32.ir)
    assert.equal(1, cute.float8_e4m3fn.size)
    assert.equal(4, cute.tfloat32.size)
    assert.equal(dt.float_to_f8e4m3, cute.float8_e4m3fn.from_number)
    assert.equal(dt.tf32_to_float, cute.tfloat32.to_number)
  end)

  it("an unknown dtype is an error naming the value and the valid names, at the user's line", function()
    local ok, e = pcall(function()
      local d = cute.dtype("float8") -- MARK-bad-dtype
      return d
    end)
    assert.is_false(ok)
    assert.is_truthy(util.has(e, "spec/dtype_spec.lua:" .. util.line_of("spec/dtype_spec.lua", "MARK-bad-dtype") .. ":"), e)
    assert.is_truthy(util.has(e, "cute.dtype: float8 is not a dtype (one of float32,"), e)
  end)
end)

describe("one table", function()
  it("the other modules hold the same tables, not copies", function()
    local tr, arith, IR = require("cute.trace"), require("cute.arith"), require("cute.ir")
    assert.equal(dt.T, tr.T)
    assert.equal(dt.T, arith.T)
    assert.equal(dt.scalars, tr.tinfo)
    assert.equal(dt.scalars, arith.tinfo)
    assert.equal(dt.dtype_ir, tr.dtype_ir)
    assert.equal(dt.spaces, IR.AS)
    for code, info in pairs(dt.scalars) do assert.equal(code, IR.T[info.ir]) end
  end)

  it("no other Lua module spells out a table of scalar type or address space names", function()
    local names = { "generic", "global", "shared" }
    for _, info in pairs(dt.scalars) do
      names[#names + 1] = info.ir; names[#names + 1] = info.cute; names[#names + 1] = info.dtype
    end
    local p = io.popen("ls lua/cute/*.lua")
    for file in p:lines() do
      if not file:find("/dtype%.lua$") and not file:find("/cdef%.lua$") then
        local i = 0
        for line in io.lines(file) do
          i = i + 1
          local hits = 0
          for _, n in ipairs(names) do
            -- as a table key (`f32 =`, `[...] = "f32"`) or a quoted string
            if line:find("[^%w_.]" .. n .. "%s*=[^=]") or line:find("^" .. n .. "%s*=[^=]")
              or line:find('"' .. n .. '"', 1, true) then
              hits = hits + 1
            end
          end
          assert.is_true(hits < 3, ("%s:%d lists scalar types or address spaces: %s"):format(file, i, line))
        end
      end
    end
    p:close()
  end)
end)

describe("float16 / bfloat16 bit conversions", function()
  it("round to nearest even and keep NaN, on every exponent of random values", function()
    local seed = 7
    local function rnd()
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    end
    for _ = 1, 2000 do
      local x = (rnd() - 0.5) * 2 ^ math.floor(rnd() * 36 - 20) -- within half's range
      local h = dt.float_to_half(x)
      local back = dt.half_to_float(h)
      -- the nearest: no half value between x and back (neighbours are farther or equal)
      for _, nb in ipairs({ h - 1, h + 1 }) do
        if nb >= 0 and nb < 0x7c00 + 0x8000 and bit.band(nb, 0x7c00) ~= 0x7c00 then
          assert.is_true(math.abs(dt.half_to_float(nb) - x) >= math.abs(back - x), tostring(x))
        end
      end
      local b = dt.float_to_bf16(x)
      local bb = dt.bf16_to_float(b)
      assert.is_true(math.abs(bb - x) <= math.abs(x) * 2 ^ -8, tostring(x))
    end
    assert.is_true(dt.half_to_float(dt.float_to_half(0 / 0)) ~= dt.half_to_float(dt.float_to_half(0 / 0)))
    assert.equal(math.huge, dt.half_to_float(dt.float_to_half(1e6)))
    assert.equal(cute.float_to_half, dt.float_to_half)
  end)
end)
