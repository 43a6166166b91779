-- Conditions and loops without the source front end (cute.kernel(f, {frontend = false}):
-- the operator-level tracer), and the loop semantics of cute.range / range_constexpr
-- (issue 8 items 4, 8 and 11), checked on the IR and LLVM text: no GPU needed.
local cute = require("cute")

local spec1 = cute.tensor_spec({ 64 }, cute.int32)

local function ir_of(fn, ...)
  local k = cute.kernel(fn, { frontend = false })
  return k:ir(...)
end

local function err_of(fn, ...)
  local k = cute.kernel(fn, { frontend = false })
  local ok, e = pcall(k.ir, k, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local this_file = "control_spec.lua"

local count = dofile("spec/support/util.lua").count

describe("fallback conditions (operator-level tracer)", function()
  it("cute.logical_and(false, i < n) is refused, not negated", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      cute.if_then(cute.logical_and(false, i < n), function() A[i] = 1 end)
    end, spec1, cute.Int32(5))
    assert.matches("logical_and", e)
    assert.matches(this_file .. ":%d+:", e)
  end)

  it("cute.logical_or(false, i < n) is refused, not negated", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      cute.if_then(cute.logical_or(false, i < n), function() A[i] = 1 end)
    end, spec1, cute.Int32(5))
    assert.matches("logical_or", e)
  end)

  it("cute.logical_and(i ~= n, j < m) keeps the ~=", function()
    local ir = ir_of(function(A, n, m)
      local i, j = cute.arch.thread_idx()
      cute.if_then(cute.logical_and(i ~= n, j < m), function() A[i] = 1 end)
    end, spec1, cute.Int32(5), cute.Int32(6))
    assert.matches("= eq i1", ir)
    assert.matches("= not i1", ir)
    assert.matches("= lt i1", ir)
    assert.matches("= and i1", ir)
  end)

  it("cute.logical_and(cute.lt(i, n), j < m) takes both", function()
    local ir = ir_of(function(A, n, m)
      local i, j = cute.arch.thread_idx()
      cute.if_then(cute.logical_and(cute.lt(i, n), j < m), function() A[i] = 1 end)
    end, spec1, cute.Int32(5), cute.Int32(6))
    assert.equals(2, count(ir, "= lt i1"))
    assert.matches("= and i1", ir)
  end)

  it("`if cute.lt(i, n) then` (always true in Lua) is an error at its line", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      if cute.lt(i, n) then A[i] = 1 end
    end, spec1, cute.Int32(5))
    assert.matches(this_file .. ":%d+:", e)
    assert.matches("never used", e)
  end)

  it("a comparison left pending does not hijack a later cute.if_then(true, f)", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      local c = i < n
      A[0] = 7
      cute.if_then(true, function() A[1] = 2 end)
    end, spec1, cute.Int32(5))
    assert.matches(this_file .. ":%d+:", e)
    assert.matches("Lua boolean", e)
  end)

  it("v == 0 and v ~= 0 on a cute.var are traced comparisons", function()
    local ir = ir_of(function(A, n)
      local v = cute.var(0)
      v.value = n
      cute.if_then(v == 0, function() A[0] = 1 end)
      cute.if_then(v ~= 0, function() A[1] = 1 end)
    end, spec1, cute.Int32(5))
    assert.equals(2, count(ir, "= eq i1"))
    assert.equals(1, count(ir, "= not i1"))
    assert.equals(2, count(ir, "\n%s*if %%"))
  end)

  it("cute.where(i < n, 1, 2) selects between two numbers", function()
    local ir = ir_of(function(A, n)
      local i = cute.arch.thread_idx()
      A[i] = cute.where(i < n, 1, 2)
    end, spec1, cute.Int32(5))
    assert.matches("= select i32 %%%d+, 1:i32, 2:i32", ir)
  end)

  it("cute.where(i < n, x, y) with traced operands", function()
    local ir = ir_of(function(A, n)
      local i = cute.arch.thread_idx()
      A[i] = cute.where(A[i] < n, A[i], n)
    end, spec1, cute.Int32(5))
    assert.matches("= select i32", ir)
  end)

  it("a Lua break out of a cute.range body is an error at the user's file and line", function()
    local e = err_of(function(A, n)
      for i in cute.range(0, n) do
        A[i] = 0
        break
      end
    end, spec1, cute.Int32(5))
    assert.matches("^[^ ]*" .. this_file .. ":%d+: ", e)
    assert.matches("never closed", e)
  end)

  it("a plain Lua `while i < n do` is an error, not a hang", function()
    -- in a child process: a regression would hang, not fail
    local src = [[
      local cute = require("cute")
      local k = cute.kernel(function(A, n)
        local i = cute.arch.thread_idx()
        while i < n do A[i] = 0; i = i + 1 end
      end, { frontend = false })
      local ok, e = pcall(k.ir, k, cute.tensor_spec({ 64 }, cute.int32), cute.Int32(5))
      print(ok, e)
    ]]
    local path = os.tmpname()
    local f = io.open(path, "w"); f:write(src); f:close()
    local p = io.popen("timeout 60 " .. dofile("spec/support/util.lua").self_exe() .. " " .. path .. " 2>&1; echo rc=$?")
    local out = p:read("*a"); p:close()
    os.remove(path)
    assert.matches("false", out)
    assert.matches("Lua boolean", out)
    assert.matches("rc=0", out)
  end)
end)

describe("front end: a Lua boolean compared with a traced condition (found by the kernel fuzzer)", function()
  it("b ~= (p > 0) and (p > 0) == true are traced comparisons, not Lua's 'different types'", function()
    local k = cute.kernel(function(Out, p)
      local b = false
      if b ~= (p > 0) then Out[0] = 1 else Out[0] = 2 end
      if (p > 0) == true then Out[1] = 1 end
    end)
    assert.is_true(k.frontend)
    local ir = k:ir(spec1, cute.Int32(0))
    assert.equals(2, count(ir, "\n%s*if %%"))
    assert.matches("store %%%d+, 2:i32", ir)
    assert.equals(1, count(ir, "= ne i1 0:i1, %%%d+") + count(ir, "= ne i1 %%%d+, 0:i1"))
  end)
end)

describe("argument checks of cute.where and cute.logical_and/or (item 11)", function()
  it("cute.where with four values (a function spreading its results) names cute.where and the line", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      A[i] = cute.where(i < n, 1, cute.arch.block_dim())
    end, spec1, cute.Int32(5))
    assert.matches("cute%.where", e)
    assert.matches("got 5", e)
    assert.matches(this_file .. ":%d+:", e)
  end)

  it("cute.where with a table operand names cute.where and the table", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      A[i] = cute.where(i < n, {}, 2)
    end, spec1, cute.Int32(5))
    assert.matches("cute%.where", e)
    assert.matches("table", e)
    assert.matches(this_file .. ":%d+:", e)
  end)

  it("cute.where(true, false, 1) is false, as Lua's if would choose", function()
    local ir = ir_of(function(A)
      local r = cute.where(true, false, 1)
      A[0] = r == false and 5 or 6
    end, spec1)
    assert.matches("store %%%d+, 5:i32", ir)
  end)

  it("cute.where of a cute.var and a number selects its value", function()
    local ir = ir_of(function(A, n)
      local v = cute.var(0)
      v.value = n
      A[0] = cute.where(cute.lt(n, 3), v, 7)
    end, spec1, cute.Int32(5))
    assert.matches("= select i32 %%%d+, %%%d+, 7:i32", ir)
  end)

  it("cute.logical_and with three arguments or a string is an error at the line", function()
    local e = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      cute.if_then(cute.logical_and(cute.lt(i, n), cute.lt(i, 3), cute.lt(i, 4)), function() A[i] = 1 end)
    end, spec1, cute.Int32(5))
    assert.matches("cute%.logical_and", e)
    assert.matches("got 3", e)
    assert.matches(this_file .. ":%d+:", e)
    local e2 = err_of(function(A, n)
      local i = cute.arch.thread_idx()
      cute.if_then(cute.logical_or("yes", cute.lt(i, n)), function() A[i] = 1 end)
    end, spec1, cute.Int32(5))
    assert.matches("cute%.logical_or", e2)
    assert.matches("yes", e2)
    assert.matches(this_file .. ":%d+:", e2)
  end)
end)

describe("loops: cute.range and cute.range_constexpr", function()
  local function values(it)
    local t = {}
    for i in it do t[#t + 1] = i end
    return table.concat(t, ",")
  end

  it("range_constexpr counts down with a negative step", function()
    assert.equals("3,2,1,0", values(cute.range_constexpr(3, -1, -1)))
    assert.equals("5,3,1", values(cute.range_constexpr(5, 0, -2)))
    assert.equals("0,1,2,3", values(cute.range_constexpr(4)))
    assert.equals("", values(cute.range_constexpr(4, 4)))
    assert.equals("", values(cute.range_constexpr(0, 4, -1)))
  end)

  it("range_constexpr refuses a zero step (instead of looping forever)", function()
    local ok, e = pcall(cute.range_constexpr, 0, 4, 0)
    assert.is_false(ok)
    assert.matches("step", tostring(e))
    assert.matches(this_file .. ":%d+:", tostring(e))
  end)

  it("cute.range(63, -1, -1) is a loop counting down", function()
    local ir = ir_of(function(A)
      for i in cute.range(63, -1, -1) do A[i] = i end
    end, spec1)
    assert.matches("= for i32 63:i32, %-1:i32, %-1:i32", ir)
  end)

  it("cute.range with a Lua step of 0 is an error at the user's line", function()
    local e = err_of(function(A)
      for i in cute.range(0, 10, 0) do A[i] = i end
    end, spec1)
    assert.matches("step", e)
    assert.matches(this_file .. ":%d+:", e)
  end)

  it("cute.range with a traced step guards against 0 (the GPU traps, never hangs)", function()
    local ir = ir_of(function(A, s)
      for i in cute.range(0, 64, s) do A[i] = i end
    end, spec1, cute.Int32(3))
    assert.matches("assert", ir)
  end)

  it("a traced negative step counts down in the LLVM IR (sign picked at run time)", function()
    local k = cute.kernel(function(A, s)
      for i in cute.range(63, -1, s) do A[i] = i end
    end, { frontend = false })
    local c = k:compile(spec1, cute.Int32(-1))
    assert.is_truthy(c.llvm:find("icmp sgt") or c.llvm:find("icmp slt"))
  end)

  it("a grid-stride loop cannot wrap past 2^31 - 1: the increment checks overflow", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      local s = cute.arch.block_dim()
      for i in cute.range(t, n, s) do A[0] = i end
    end, { frontend = false, opt_level = 0 })
    local c = k:compile(spec1, cute.Int32(5))
    assert.matches("sadd%.with%.overflow", c.llvm)
  end)

  it("an i64 bound makes the induction variable i64", function()
    local ir = ir_of(function(A, n)
      for i in cute.range(0, n) do A[0] = 1 end
    end, spec1, cute.Int64(5))
    assert.matches("= for i64", ir)
  end)

  it("cute.range(t, n, cute.arch.block_dim()) names cute.range and the user's line (item 11)", function()
    local e = err_of(function(A, n)
      local t = cute.arch.thread_idx()
      for i in cute.range(t, n, cute.arch.block_dim()) do A[i] = 0 end
    end, spec1, cute.Int32(5))
    assert.matches("cute%.range", e)
    assert.matches(this_file .. ":%d+:", e)
    assert.is_nil(e:find("cute_traced", 1, true))
  end)
end)
