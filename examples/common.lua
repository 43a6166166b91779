-- Shared helpers for the examples: random data, error norms, GPU timing.
local cute = require("cute")
local ffi = require("ffi")

local M = {}

-- the directory holding the examples (this file's directory)
M.dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"

-- An example as a module, without running it (benchmarks, tools and specs): the
-- example returns its module early when CUTE_EXAMPLE_LIB is set.  name: the file
-- in this directory, with or without ".lua"; args: its command line (sizes), as
-- strings or numbers.  arg and CUTE_EXAMPLE_LIB are restored afterwards (also
-- when the example fails: its error is raised again), so loads may nest.
function M.load(name, args)
  local file = M.dir .. (name:gsub("%.lua$", "")) .. ".lua"
  local a = { [0] = file }
  for i, v in ipairs(args or {}) do a[i] = tostring(v) end
  local saved, was = arg, CUTE_EXAMPLE_LIB
  arg, CUTE_EXAMPLE_LIB = a, true
  local ok, m = pcall(dofile, file)
  arg, CUTE_EXAMPLE_LIB = saved, was
  if not ok then error(m, 0) end
  if type(m) ~= "table" then
    error(("examples/common.lua load: %s returned %s, not its module (does it return early when CUTE_EXAMPLE_LIB is set?)")
      :format(file, type(m)), 2)
  end
  return m
end

-- An example's kernel (its module's .kernel), as M.load loads it
function M.load_kernel(name, args)
  return M.load(name, args).kernel
end

-- xorshift random floats in [-1, 1) into a new float[n] (seeded per call site;
-- the first seed from the clock unless M.seed(n) fixes it: a script whose
-- processes must make the same data, e.g. cute.autotune's device workers)
-- CUTE_EXAMPLE_SEED=n fixes it (and math.random's) for the whole run: the same data on
-- the GPU and on the CPU target (tools/gpu_cpu_compare.sh)
local seed_state = tonumber(os.getenv("CUTE_EXAMPLE_SEED")) or os.time() % 100000 + 1
if os.getenv("CUTE_EXAMPLE_SEED") then math.randomseed(seed_state) end
function M.seed(n) seed_state = n end
function M.rand_floats(n, lo, hi)
  lo, hi = lo or -1, hi or 1
  local a = ffi.new("float[?]", n)
  local x = seed_state
  seed_state = seed_state + 7919
  local s = bit.tobit(x * 2654435761)
  for i = 0, n - 1 do
    s = bit.bxor(s, bit.lshift(s, 13)); s = bit.bxor(s, bit.rshift(s, 17)); s = bit.bxor(s, bit.lshift(s, 5))
    a[i] = lo + (hi - lo) * ((s % 16777216 + 16777216) % 16777216) / 16777216
  end
  return a
end

-- the attention benchmarks' and tools' sizes from a command line [B] [H] [S] [D]
-- (default 4 16 4096 128: batch, heads, sequence length, head dimension)
function M.attention_sizes(args)
  return tonumber(args[1]) or 4, tonumber(args[2]) or 16, tonumber(args[3]) or 4096, tonumber(args[4]) or 128
end

-- a square GEMM's operands for benchmarks: random n x n A and B of dtype ab
-- (values in [-1, 1)) and a zero n x n C of dtype c (default: ab)
function M.square_operands(n, ab, c)
  return cute.from_host(M.rand_floats(n * n), ab, { n, n }), cute.from_host(M.rand_floats(n * n), ab, { n, n }),
    cute.zeros({ n, n }, c or ab)
end

-- ||out - ref|| / ||ref|| over n elements (ref as a Lua function or array); NaN fails
function M.rel_error(out, ref, n)
  local num, den = 0, 0
  for i = 0, n - 1 do
    local r = type(ref) == "function" and ref(i) or ref[i]
    local d = out[i] - r
    if out[i] ~= out[i] then return math.huge end
    num = num + d * d; den = den + r * r
  end
  if den == 0 then return math.sqrt(num) end
  return math.sqrt(num / den)
end

-- median time in ms of fn() over reps runs, timed with events (after warmup)
function M.time_ms(fn, reps, warmup)
  reps, warmup = reps or 20, warmup or 3
  -- warm up for at least 100 ms of GPU work as well, so clocks have ramped up
  local t0 = cute.now_us()
  local i = 0
  repeat
    fn(); i = i + 1
    if i % 4 == 0 then cute.synchronize() end
  until i >= warmup and cute.now_us() - t0 > 1e5
  cute.synchronize()
  local e0, e1 = cute.event(), cute.event()
  local t = {}
  for i = 1, reps do
    e0:record(); fn(); e1:record(); e1:synchronize()
    t[i] = cute.elapsed_ms(e0, e1)
  end
  table.sort(t)
  return t[math.floor((reps + 1) / 2)]
end

-- relative error of a row-major M x N product C = A (M x K) * B (K x N)
-- against a double-precision reference, over every row_step-th row
function M.gemm_error(ha, hb, hc, M_, N_, K_, row_step)
  local num, den = 0, 0
  for i = 0, M_ - 1, row_step or 1 do
    for j = 0, N_ - 1 do
      local s = 0
      for k = 0, K_ - 1 do s = s + ha[i * K_ + k] * hb[k * N_ + j] end
      local c = hc[i * N_ + j]
      if c ~= c then return math.huge end
      num = num + (c - s) ^ 2; den = den + s * s
    end
  end
  return math.sqrt(num / den)
end

-- a device tensor's values as a 0-based double array, through the dtype's own
-- host conversion (t:to_table(): float16 / bfloat16 bits become numbers)
function M.host_values(t)
  local tab = t:to_table()
  local o = ffi.new("double[?]", #tab)
  for i = 1, #tab do o[i - 1] = tab[i] end
  return o
end

-- C = alpha A B^T + beta C0 for K-major A (m x k) and B (n x k), 0-based arrays:
-- f(i, j, out_ij) is called for every row_step-th row i with the reference value;
-- returns ||out - ref|| / ||ref|| over those rows (NaN in out: math.huge)
function M.gemm_tn_compare(a, b, c0, out, m, n, k, alpha, beta, row_step, f)
  local num, den = 0, 0
  for i = 0, m - 1, row_step or 1 do
    for j = 0, n - 1 do
      local s = 0
      for kk = 0, k - 1 do s = s + a[i * k + kk] * b[j * k + kk] end
      local ref = alpha * s + beta * c0[i * n + j]
      local c = out[i * n + j]
      if f then f(i, j, c, ref) end
      if c ~= c then return math.huge end
      num = num + (c - ref) ^ 2; den = den + ref * ref
    end
  end
  if den == 0 then return math.sqrt(num) end
  return math.sqrt(num / den)
end

-- the bf16 "TN" GEMM examples' self-check: random A (m x k), B (n x k), C (m x n)
-- in bf16, gemm(A, B, C, 1.5, -0.5), the error against the reference on the
-- rounded inputs over about `rows` rows (ex.check, tolerance 1e-2); returns the
-- device tensors for timing
function M.check_bf16_gemm_tn(name, gemm, m, n, k, rows)
  local bf16 = cute.bfloat16
  local A = cute.from_host(M.rand_floats(m * k), bf16, { m, k })
  local B = cute.from_host(M.rand_floats(n * k), bf16, { n, k })
  local C = cute.from_host(M.rand_floats(m * n), bf16, { m, n })
  local a, b, c0 = M.host_values(A), M.host_values(B), M.host_values(C)
  gemm(A, B, C, 1.5, -0.5)
  local err = M.gemm_tn_compare(a, b, c0, M.host_values(C), m, n, k, 1.5, -0.5,
    math.max(1, math.floor(m / (rows or 64))))
  M.check(name, err, 1e-2)
  return A, B, C
end

function M.check(name, err, tol)
  local ok = err <= tol
  print(("%s: rel. error %.3e (tolerance %.0e) %s"):format(name, err, tol, ok and "OK" or "FAILED"))
  if not ok then os.exit(1) end
end

-- true when a GPU is usable; otherwise prints why (examples then compile only)
function M.gpu()
  if require("cute.target_cpu").active then return true end -- (CUTE_TARGET=cpu: run on the CPU target)
  local ok, why = cute.available()
  if not ok then
    print("no GPU here (" .. tostring(why) .. "): compiling only")
  end
  return ok
end

return M
