-- tools/fuzz_layout.lua: the layout parser (src/tuple_text.c, cute_parse) and
-- the layout algebra on what it parses, for a bounded time (docs/FUZZ.md).
--   FUZZ_SECONDS=20 [FUZZ_SEED=n] build/asan/cuteluajit tools/fuzz_layout.lua
-- Three kinds of cases:
--   valid    random CuTe notation (ints, nested tuples, layouts shape:stride,
--            "_", tilers, "Sw<B,M,S> o off o L"), sometimes past the parser's
--            limits (128 nodes, depth, i64): it parses (or, past a limit, fails
--            with a message), cute_value_check accepts it, cute_format gives a
--            text that parses back to the same text
--   mutated  valid texts with characters dropped, inserted, swapped, digits
--            turned huge or negative, parentheses unbalanced, pieces repeated:
--            parse or fail cleanly; what parses round-trips
--   algebra  random ops (cute_op, every op with its arities) on parsed values:
--            errors are fine, crashes and malformed results are not
--   bytes    random bytes (NULs cut the string) into the parser
-- A failure is a crash (ASan, UBSan), a parse failure without a message, a
-- success whose value cute_value_check rejects, or a round trip that changes
-- the text.  Ends with "N passed, N failed": N passed counts batches of 1,000
-- good cases, N failed every failing case.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local SECONDS = tonumber(os.getenv("FUZZ_SECONDS") or "20")
local SEED = tonumber(os.getenv("FUZZ_SEED") or tostring(os.time()))
math.randomseed(SEED)
-- (integers from the float form: math.random(m, n) can misbehave under LuaJIT 2.1.0-beta3's JIT)
local function R(a, b)
  local x = math.random()
  if not a then return x end
  if not b then a, b = 1, a end
  local v = a + math.floor(x * (b - a + 1))
  return v > b and b or v
end
local function pick(t) return t[R(#t)] end

local passed, failed, cases = 0, 0, 0
local counts = { valid = 0, mutated = 0, algebra = 0, bytes = 0, parsed = 0, rejected = 0, op_ok = 0, op_err = 0 }
local function fail(kind, msg, text)
  failed = failed + 1
  if failed <= 10 then
    print(("FAIL [%s] seed=%d case=%d: %s"):format(kind, SEED, cases, msg))
    if text then print("  text: " .. ("%q"):format(text)) end
  end
end

local err = ffi.new("cute_err[1]")
local vals = ffi.new("cute_value[4]")
local buf = ffi.new("char[?]", 65536)

-- format v: the text (nil when it does not fit)
local function format(v)
  local n = tonumber(C.cute_format(v, buf, 65536))
  if n >= 65536 then return nil end
  return ffi.string(buf, n)
end

-- parse text into vals[slot]: ok, or nil and the message.  Every success is
-- checked (cute_value_check) and round-tripped through cute_format.
local function parse(kind, text, slot)
  local v = vals + (slot or 0)
  err[0].code = 0
  err[0].msg[0] = 0
  if C.cute_parse(text, v, err) ~= 0 then
    local msg = ffi.string(err[0].msg)
    if err[0].code == 0 or msg == "" then fail(kind, "a parse failure without an error code or message", text) end
    counts.rejected = counts.rejected + 1
    return nil, msg
  end
  counts.parsed = counts.parsed + 1
  if C.cute_value_check(v, "fuzz", err) ~= 0 then
    fail(kind, "cute_value_check rejects what cute_parse made: " .. ffi.string(err[0].msg), text)
    return nil
  end
  local f1 = format(v)
  if not f1 then return true end
  local w = vals + 3
  if C.cute_parse(f1, w, err) ~= 0 then
    fail(kind, ("the formatted text %q does not parse: %s"):format(f1, ffi.string(err[0].msg)), text)
    return nil
  end
  local f2 = format(w)
  if f2 ~= f1 then fail(kind, ("round trip: %q -> %q"):format(f1, tostring(f2)), text); return nil end
  return true
end

---------------------------------------------------------------------------
-- random notation
---------------------------------------------------------------------------
local function int(big)
  if big and R(20) == 1 then return pick({ "9223372036854775807", "9223372036854775808", "-1", "0", "4294967296",
    "99999999999999999999", "-9223372036854775808" }) end
  return tostring(pick({ 1, 1, 2, 2, 3, 4, 4, 8, 8, 16, 32, 5, 6, 7, 12, 64 }))
end

-- a shape and a congruent stride, as texts (depth-limited)
local function shape_stride(d, big)
  if d <= 0 or R(10) <= 5 then
    local s = int(big)
    local st = R(8) == 1 and "0" or int(big)
    return s, st
  end
  local n = R(4)
  local sh, st = {}, {}
  for i = 1, n do sh[i], st[i] = shape_stride(d - 1, big) end
  return "(" .. table.concat(sh, ",") .. ")", "(" .. table.concat(st, ",") .. ")"
end

local function tuple(d, big)
  if d <= 0 or R(10) <= 5 then return R(6) == 1 and "_" or int(big) end
  local t = {}
  for i = 1, R(4) do t[i] = tuple(d - 1, big) end
  return "(" .. table.concat(t, ",") .. ")"
end

local function layout(d, big, strict)
  local sh, st = shape_stride(d, big)
  if not strict and R(5) == 1 then return sh end -- a compact layout's shape (or a tuple)
  return sh .. ":" .. st
end

local function valid_text(big)
  local k = R(7)
  local d = R(big and 7 or 3)
  if k == 1 then return int(big) end
  if k == 2 then return tuple(d, big) end
  if k <= 4 then return layout(d, big) end
  if k == 5 then
    return ("Sw<%d,%d,%d> o %d o %s"):format(R(0, 4), R(0, 5), R(0, 5), R(0, 64), layout(d, big, true))
  end
  if k == 6 then return "_" end
  local t = {}
  for i = 1, R(3) do t[i] = R(3) == 1 and tuple(1, big) or layout(1, big) end
  return "(" .. table.concat(t, ",") .. ")" -- a tiler
end

local ALPHA = { "(", ")", ",", ":", "_", "<", ">", " ", "o", "S", "w", "-", "+", "0", "1", "9", "e", "x", ".", "@",
  "\t", "\n", "Sw<", " o ", "(((((", ")))))", "99999999999999999999", "-1" }
local function mutate(s)
  for _ = 1, R(4) do
    local n = #s
    local i = R(math.max(1, n))
    local k = R(8)
    if k == 1 and n > 0 then s = s:sub(1, i - 1) .. s:sub(i + 1)
    elseif k == 2 then s = s:sub(1, i - 1) .. pick(ALPHA) .. s:sub(i)
    elseif k == 3 and n > 1 then
      local j = R(n)
      local a, b = s:sub(i, i), s:sub(j, j)
      s = s:sub(1, i - 1) .. b .. s:sub(i + 1)
      s = s:sub(1, j - 1) .. a .. s:sub(j + 1)
    elseif k == 4 then s = s:gsub("%d+", function(x) return R(3) == 1 and pick({ "99999999999999999999",
        "-" .. x, "0", "9223372036854775807" }) or x end, 1)
    elseif k == 5 then s = s:sub(1, i)
    elseif k == 6 then
      local j = R(i, math.max(i, n))
      s = s:sub(1, j) .. s:sub(i, j) .. s:sub(j + 1)
    elseif k == 7 then s = string.rep("(", R(1, 200)) .. s .. string.rep(")", R(1, 200))
    else s = s .. pick(ALPHA) end
  end
  return s
end

---------------------------------------------------------------------------
-- ops on parsed values
---------------------------------------------------------------------------
local nops = tonumber(C.CUTE_OP_COUNT_)
local out, out2 = ffi.new("cute_value[1]"), ffi.new("cute_value[1]")
local function algebra()
  local op = R(0, nops - 1)
  local mn, mx = ffi.new("int[1]"), ffi.new("int[1]")
  if C.cute_op_arity(op, mn, mx) ~= 0 then fail("algebra", "cute_op_arity fails for op " .. op); return end
  local nargs = R(mn[0], math.min(mx[0], 3))
  local texts = {}
  for i = 1, nargs do
    local t = R(3) == 1 and tuple(2) or (R(6) == 1 and int() or layout(2))
    texts[i] = t
    if not parse("algebra", t, i - 1) then return end
  end
  local name = ffi.string(C.cute_op_name(op))
  err[0].code = 0
  if C.cute_op(op, vals, nargs, out, out2, err) == 0 then
    counts.op_ok = counts.op_ok + 1
    if C.cute_value_check(out, "fuzz", err) ~= 0 then
      fail("algebra", ("%s(%s) returned a malformed value: %s"):format(name, table.concat(texts, ", "),
        ffi.string(err[0].msg)))
    end
  else
    counts.op_err = counts.op_err + 1
    if err[0].code == 0 or err[0].msg[0] == 0 then
      fail("algebra", ("%s(%s) failed without a message"):format(name, table.concat(texts, ", ")))
    end
  end
end

local t0 = os.clock()
while os.clock() - t0 < SECONDS do
  cases = cases + 1
  local f0 = failed
  local k = R(10)
  if k <= 3 then
    counts.valid = counts.valid + 1
    local big = R(4) == 1
    local text = valid_text(big)
    local ok, msg = parse("valid", text)
    -- a small valid text must parse (a big one may pass a limit)
    if not ok and msg and not big then fail("valid", "a valid text does not parse: " .. msg, text) end
  elseif k <= 7 then
    counts.mutated = counts.mutated + 1
    parse("mutated", mutate(valid_text(R(3) == 1)))
  elseif k <= 9 then
    counts.algebra = counts.algebra + 1
    algebra()
  else
    counts.bytes = counts.bytes + 1
    local b = {}
    for i = 1, R(0, 64) do b[i] = string.char(R(1, 255)) end
    parse("bytes", table.concat(b))
  end
  if failed == f0 then passed = passed + 1 end
end
-- (tens of thousands of cases a second: the summary counts batches of 1,000
-- cases without a failure as passes, so that make test's total stays readable)
local batches = math.floor(passed / 1000)
print(("layout fuzzer: seed %d, %d cases (%d valid, %d mutated, %d algebra, %d bytes); %d parsed, %d rejected; " ..
  "ops %d ok, %d errors"):format(SEED, cases, counts.valid, counts.mutated, counts.algebra, counts.bytes, counts.parsed,
  counts.rejected, counts.op_ok, counts.op_err))
print(("%d passed, %d failed"):format(failed == 0 and math.max(batches, 1) or batches, failed))
os.exit(failed == 0 and 0 or 1)
