-- CPU references for the NCCL collectives (spec/nccl_gpu_spec.lua and the
-- torchrun script spec/data/nccl_ranks.lua; load with dofile).  Every rank's
-- data are small integers (-2..2, 0..4 for unsigned types), exact in every
-- dtype NCCL has (fp8 included), so sums, products, max and min over two
-- ranks are exact and the comparison is exact: the result must equal the
-- reference rounded to the dtype (float32 math, then the dtype's conversion).
local cute = require("cute")
local memory = require("cute.memory")

local M = {}

-- dtypes to test, by name (fp8 only where NCCL has it: M.dtype_names(v))
local BASE = {
  "float32",
  "float16",
  "bfloat16",
  "int32",
  "int8",
  "uint8",
  "float64",
  "int64",
}
local FP8 = {
  "float8_e4m3fn",
  "float8_e5m2",
}
function M.dtype_names(with_fp8)
  local out = {}
  for _, n in ipairs(BASE) do out[#out + 1] = n end
  if with_fp8 then for _, n in ipairs(FP8) do out[#out + 1] = n end end
  return out
end

function M.is_float(dtype) return dtype.name:find("^float") ~= nil or dtype.name == "bfloat16" end

-- the value of element i (0-based) of rank r's data; `salt` varies the data
-- between uses
function M.value(dtype, r, i, salt)
  local v = ((i * 7 + r * 3 + (salt or 0)) % 5) - 2
  if dtype.name:find("^uint") then v = v + 2 end
  return v
end

local fold = {
  sum = function(a, b) return a + b end,
  prod = function(a, b) return a * b end,
  max = math.max,
  min = math.min,
}

-- op over the values f(r) of ranks 0 .. nranks-1 (avg: sum / nranks)
function M.reduce(op, nranks, f)
  local acc = f(0)
  local g = fold[op == "avg" and "sum" or op]
  for r = 1, nranks - 1 do acc = g(acc, f(r)) end
  if op == "avg" then acc = acc / nranks end
  return acc
end

-- v as the dtype stores it (rounded for the floating-point ones)
function M.round(dtype, v)
  if dtype.from_number then return dtype.to_number(dtype.from_number(v)) end
  return v
end

-- a device tensor of n elements f(i) on the current device
function M.upload(dtype, n, f)
  local buf = memory.host_buffer(n, dtype)
  local conv = dtype.from_number
  for i = 0, n - 1 do
    local v = f(i)
    buf[i] = conv and conv(v) or v
  end
  return cute.from_host(buf, dtype, { n })
end

-- nil when tensor t holds want(i) (rounded to its dtype) at every i < n,
-- else "what[i]: got X, want Y" of the first difference and the count
function M.check(t, n, want, what)
  local h = t:to_host()
  local conv = t.dtype.to_number
  local bad, first = 0, nil
  for i = 0, n - 1 do
    local got = conv and conv(h[i]) or tonumber(h[i])
    local w = M.round(t.dtype, want(i))
    if got ~= w then
      bad = bad + 1
      first = first or ("%s[%d]: got %s, want %s"):format(what, i, tostring(got), tostring(w))
    end
  end
  if bad > 0 then return ("%s (%d of %d elements differ, %s)"):format(first, bad, n, t.dtype.name) end
end

return M
