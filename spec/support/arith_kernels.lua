-- Kernels of the differential test (spec/arith_spec.lua compiles them and checks
-- the LLVM; spec/arith_gpu_spec.lua runs them): one kernel per operand type
-- evaluates every operator on loaded operands, one per source type every
-- conversion.  Thread i reads case i and writes op k's result at k * n + i.
local cute = require("cute")
local R = dofile("spec/support/arith_ref.lua")

local K = { R = R }

K.CTOR = { i1 = "Boolean", i8 = "Int8", i16 = "Int16", i32 = "Int32", i64 = "Int64", u8 = "Uint8",
  u16 = "Uint16", u32 = "Uint32", u64 = "Uint64", f16 = "Float16", bf16 = "BFloat16", f32 = "Float32",
  f64 = "Float64" }
K.DT = { i8 = cute.int8, i16 = cute.int16, i32 = cute.int32, i64 = cute.int64, u8 = cute.uint8,
  u16 = cute.uint16, u32 = cute.uint32, u64 = cute.uint64, f16 = cute.float16, bf16 = cute.bfloat16,
  f32 = cute.float32, f64 = cute.float64, i1 = cute.uint8 } -- i1 results are stored as 0 / 1 bytes

local BIN = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return cute.div(a, b) end,
  fdiv = function(a, b) return a / b end,
  rem = function(a, b) return cute.rem(a, b) end, mod = function(a, b) return a % b end,
  min = function(a, b) return cute.min(a, b) end, max = function(a, b) return cute.max(a, b) end,
  band = function(a, b) return cute.band(a, b) end, bor = function(a, b) return cute.bor(a, b) end,
  bxor = function(a, b) return cute.bxor(a, b) end, lshift = function(a, b) return cute.lshift(a, b) end,
  rshift = function(a, b) return cute.rshift(a, b) end,
  lt = function(a, b) return cute.lt(a, b) end, le = function(a, b) return cute.le(a, b) end,
  gt = function(a, b) return cute.gt(a, b) end, ge = function(a, b) return cute.ge(a, b) end,
  eq = function(a, b) return cute.eq(a, b) end, ne = function(a, b) return cute.ne(a, b) end,
}
local UN = { neg = function(a) return -a end, bnot = function(a) return cute.bnot(a) end }
K.BIN, K.UN = BIN, UN

-- the value-producing ops of type t (binary then unary) and the comparisons
function K.ops(t)
  local float = R.TYPES[t].float
  local vals = {}
  for _, op in ipairs(float and R.FLOAT_BINARY or R.INT_BINARY) do vals[#vals + 1] = { op = op, arity = 2 } end
  for _, op in ipairs(float and R.FLOAT_UNARY or R.INT_UNARY) do vals[#vals + 1] = { op = op, arity = 1 } end
  return vals, R.CMP_NAMES
end

-- kernel(A, B, V, P): V[k * n + i] = op_k(A[i], B[i]); P[k * n + i] = cmp_k(A[i], B[i])
function K.binary_kernel(t, n, opts)
  local vals, cmps = K.ops(t)
  local fs = {} -- (a, b) -> result, one per value op
  for k, o in ipairs(vals) do
    local f = BIN[o.op]
    if R.TYPES[t].float and o.op == "div" then f = BIN.fdiv end
    if o.arity == 1 then
      local u = UN[o.op]
      f = function(a) return u(a) end
    end
    fs[k] = f
  end
  local cs = {}
  for k, op in ipairs(cmps) do cs[k] = BIN[op] end
  -- (no `and` / `or` on traced values in here: the kernel's source is rewritten)
  return cute.kernel(function(A, B, V, P)
    local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
    local a, b = A[i], B[i]
    for k = 1, #fs do V[(k - 1) * n + i] = fs[k](a, b) end
    for k = 1, #cs do P[(k - 1) * n + i] = cs[k](a, b) end
  end, opts)
end

-- conversion targets, in the order of the kernel's outputs
K.TARGETS = { "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "i1" }

-- kernel(A, O1 .. O13): O_k[i] = cute.<Target_k>(A[i])
function K.convert_kernel(opts)
  local T = K.TARGETS
  local function c(k, a) return cute[K.CTOR[T[k]]](a) end
  return cute.kernel(function(A, O1, O2, O3, O4, O5, O6, O7, O8, O9, O10, O11, O12, O13)
    local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
    local a = A[i]
    O1[i] = c(1, a); O2[i] = c(2, a); O3[i] = c(3, a); O4[i] = c(4, a); O5[i] = c(5, a)
    O6[i] = c(6, a); O7[i] = c(7, a); O8[i] = c(8, a); O9[i] = c(9, a); O10[i] = c(10, a)
    O11[i] = c(11, a); O12[i] = c(12, a); O13[i] = c(13, a)
  end, opts)
end

return K
