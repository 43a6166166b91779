-- The fuzzers (docs/FUZZ.md) and what they found.  The fuzzers run in
-- `make fuzz` and briefly in `make test` (tools/run_tests.sh); here: each
-- runs for a moment, and every bug they found stays fixed (the smallest
-- program that showed it).  No GPU needed.
local cute = require("cute")
local cpu = require("cute.target_cpu")
local util = dofile("spec/support/util.lua")

describe("regressions found by the kernel fuzzer (FUZZ_LAUNCH=1 on the CPU target)", function()
  util.use_cpu_target()

  -- seed 1, program 4: for j in cute.range(2147483604, 2147483647, 268435457) ran forever on
  -- the CPU target (iv + step wrapped to a negative index, still < hi); the IR's for leaves the
  -- loop where iv + step would leave the type (codegen_body.c: llvm.sadd.with.overflow)
  local function run(lo, hi, step, dtype)
    local k = cute.kernel(function(Out, a, b, s)
      local n = a * 0
      for j in cute.range(a, b, s) do
        Out[n % 8] = j
        n = n + 1
      end
      Out[8] = n
    end)
    local init = {}
    for i = 1, 9 do init[i] = -1 end
    local Out = cute.from_host(init, dtype, { 9 })
    local T = dtype == cute.int32 and cute.Int32 or cute.Int64
    k:launch{ grid = 1, block = 1 }(Out, T(lo), T(hi), step) -- (a constant step: the sign is known)
    local h = Out:to_host()
    return tonumber(h[8]), tonumber(h[0]), tonumber(h[1])
  end
  it("a for loop whose step overflows i32 ends there (no wrap-around)", function()
    assert.are.same({ 1, 2147483604, -1 }, { run(2147483604, 2147483647, 268435457, cute.int32) })
    assert.are.same({ 2, 2147483000, 2147483600 }, { run(2147483000, 2147483647, 600, cute.int32) })
  end)
  it("counting down past the lowest i32 ends there too", function()
    assert.are.same({ 1, -2147483600, -1 }, { run(-2147483600, -2147483648 + 0, -100, cute.int32) })
    assert.are.same({ 2, -2147483000, -2147483600 }, { run(-2147483000, -2147483648, -600, cute.int32) })
  end)
  it("and in i64", function()
    assert.are.same({ 1, 2 ^ 62, -1 }, { run(2 ^ 62, 2 ^ 63 - 1024, 2 ^ 62, cute.int64) })
  end)
end)

describe("the fuzzers run", function()
  local exe = util.self_exe()
  it("tools/fuzz_layout.lua (valid, mutated and random texts, ops on parsed values)", function()
    local out, rc = util.sh("FUZZ_SECONDS=1 FUZZ_SEED=7 " .. exe .. " tools/fuzz_layout.lua")
    assert.are.equal(0, rc, out)
    local cases, parsed, rejected = out:match("(%d+) cases .-; (%d+) parsed, (%d+) rejected")
    assert.is_truthy(cases, out)
    assert.is_true(tonumber(parsed) > 100 and tonumber(rejected) > 100, out)
    assert.is_truthy(out:find("\n" .. math.max(1, math.floor(cases / 1000)) .. " passed, 0 failed\n", 1, true), out)
  end)
  it("tools/fuzz_kernels.lua with FUZZ_LAUNCH=1: each program launched on the CPU target", function()
    local out, rc = util.sh("FUZZ_PROGRAMS=6 FUZZ_SEED=3 FUZZ_LAUNCH=1 CUTE_TARGET=cpu " .. exe ..
      " tools/fuzz_kernels.lua")
    assert.are.equal(0, rc, out)
    assert.is_truthy(out:find("6 programs, %d+ rejected at their line, %d+ launches %(CPU target%)"), out)
    assert.is_truthy(out:find("\n6 passed, 0 failed\n", 1, true), out)
  end)
end)
