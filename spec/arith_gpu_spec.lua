-- The differential test, GPU half (issue 8, Deliver): every operator, comparison
-- and conversion traced into a kernel, run on the GPU on edge and random
-- operands, and compared with the Lua reference of the documented rule
-- (spec/support/arith_ref.lua; the CPU half is spec/arith_spec.lua).  One launch
-- per operand type (all operators) and one per source type (all conversions).
-- Every test is tagged #gpu; without a GPU each one is pending.
local cute = require("cute")
local ffi = require("ffi")
local bit = require("bit")

local K = dofile("spec/support/arith_kernels.lua")
local R = K.R

local gpu_it = dofile("spec/support/util.lua").gpu_it

local BLOCK = 256

-- case lists padded to a multiple of the block size (no bounds test in the kernels)
local function padded(A, B)
  local m = #A
  local n = math.ceil(m / BLOCK) * BLOCK
  for i = m + 1, n do
    A[i] = A[1]
    if B then B[i] = B[1] end
  end
  return n
end

-- host array of type t from Lua values (f16 / bf16 as bit patterns)
local function host(t, vals, n)
  local arr = ffi.new(K.DT[t].arr, n)
  for i = 1, n do
    local v = vals[i]
    if t == "f16" then arr[i - 1] = R.f16_bits(v)
    elseif t == "bf16" then arr[i - 1] = R.bf16_bits(v)
    elseif t == "u64" or t == "i64" then arr[i - 1] = R.c64(t, v)
    else arr[i - 1] = v end
  end
  return arr
end

-- element j (0-based) of a device result of type t, as the reference writes it;
-- floats are read through their bits (a NaN payload must never reach LuaJIT)
local function reader(t, arr)
  if t == "f16" then return function(j) return R.decode_f16(arr[j]) end end
  if t == "bf16" then return function(j) return R.decode_bf16(arr[j]) end end
  -- (the closures keep arr itself alive: a pointer cast from it does not, and
  -- the collector freed the array under them in a full-suite run)
  if t == "f32" then
    local u = ffi.cast("uint32_t *", arr)
    return function(j) local _ = arr; return R.f32_of_bits(u[j]) end
  end
  if t == "f64" then
    local u = ffi.cast("uint32_t *", arr)
    return function(j) local _ = arr; return R.f64_of_bits(u[2 * j], u[2 * j + 1]) end
  end
  return function(j) return arr[j] end
end

local checker = R.checker

local function show_pair(a, b)
  local function s(x) return type(x) == "number" and ("%.17g"):format(x) or tostring(x) end
  return function() return ("(%s, %s)"):format(s(a), s(b)) end
end

describe("differential on the GPU: traced operators vs the Lua reference", function()
  for _, t in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64" }) do
    gpu_it("every operator and comparison on " .. t .. " (one launch)", function()
      local A, B = R.pairs(t, 400, 29)
      local n = padded(A, B)
      local vals, cmps = K.ops(t)
      local dA, dB = cute.from_host(host(t, A, n), K.DT[t], { n }), cute.from_host(host(t, B, n), K.DT[t], { n })
      local dV, dP = cute.zeros({ n * #vals }, K.DT[t]), cute.zeros({ n * #cmps }, cute.uint8)
      local k = K.binary_kernel(t, n)
      k:launch{ grid = n / BLOCK, block = BLOCK }(dA, dB, dV, dP)
      local V, P = dV:to_host(), dP:to_host()
      local rd = reader(t, V)
      local ck = checker(t)
      for i = 1, n do
        local a, b = A[i], B[i]
        local d = show_pair(a, b)
        for k_, o in ipairs(vals) do
          local want = o.arity == 2 and R.binary(o.op, t, a, b) or R.unary(o.op, t, a)
          ck.check(o.op, rd((k_ - 1) * n + i - 1), want, d)
        end
        for k_, op in ipairs(cmps) do
          ck.check(op, P[(k_ - 1) * n + i - 1] == 1, R.binary(op, t, a, b), d)
        end
      end
      ck.done()
    end)
  end

  gpu_it("conversions between every pair of types (one launch per source type)", function()
    local ck = checker("conversions")
    for _, s in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64" }) do
      local X = R.operands(s, 300, 31)
      local n = padded(X)
      local args = { cute.from_host(host(s, X, n), K.DT[s], { n }) }
      for k_, t in ipairs(K.TARGETS) do args[k_ + 1] = cute.zeros({ n }, K.DT[t]) end
      local k = K.convert_kernel()
      k:launch{ grid = n / BLOCK, block = BLOCK }(unpack(args))
      for k_, t in ipairs(K.TARGETS) do
        local rd = reader(t == "i1" and "u8" or t, args[k_ + 1]:to_host())
        for i = 1, n do
          local x = X[i]
          ck.check(s .. "->" .. t, rd(i - 1), R.convert(s, t, x),
            function() return ("of %s"):format(type(x) == "number" and ("%.17g"):format(x) or tostring(x)) end)
        end
      end
    end
    ck.done()
  end)
end)

describe("typed scalars reach the GPU exactly (issue 8 item 9)", function()
  gpu_it("extreme values of every integer type, booleans and floats as kernel parameters", function()
    local I64, U64 = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
    local cases = {
      { "Int8", "i8", -128 }, { "Uint8", "u8", 255 }, { "Int16", "i16", -32768 }, { "Uint16", "u16", 65535 },
      { "Int32", "i32", -2 ^ 31 }, { "Uint32", "u32", 2 ^ 32 - 1 }, { "Int64", "i64", -2 ^ 53 },
      { "Int64", "i64", bit.rshift(ffi.cast(I64, -1), 1) }, { "Uint64", "u64", 2 ^ 64 - 2048 },
      { "Uint64", "u64", bit.bnot(ffi.cast(U64, 0)) }, { "Boolean", "i1", true }, { "Float32", "f32", 1.5 },
      { "Float64", "f64", 0.1 },
    }
    -- one kernel, specialised per scalar type: the parameter stored unchanged
    local kk = cute.kernel(function(Ot, s) Ot[0] = s end)
    for _, c in ipairs(cases) do
      local ctor, t, v = c[1], c[2], c[3]
      local out = cute.zeros({ 1 }, K.DT[t])
      kk:launch{ grid = 1, block = 1 }(out, cute[ctor](v))
      local got = reader(t == "i1" and "u8" or t, out:to_host())(0)
      local want = t == "i1" and 1 or v
      if t == "f32" then want = R.round("f32", v) end
      assert.is_true(R.same(got, want), ("%s(%s): got %s"):format(ctor, R.show(v), R.show(got)))
    end
  end)
end)
