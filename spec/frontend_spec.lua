-- The kernel source front end (cute.frontend, cute.control, cute.lua_parse):
-- conditions and loops on traced values become structured IR; on Lua values
-- the rewritten code does exactly what Lua does.  No GPU needed (IR, LLVM text).
local cute = require("cute")
local fe = require("cute.frontend")
local P = require("cute.lua_parse")
local f32, i32 = cute.float32, cute.int32

local THIS = debug.getinfo(1, "S").short_src

local function line_of(marker) return dofile("spec/support/util.lua").line_of(THIS, marker) end

local function spec1(n, dt) return cute.tensor_spec({ n }, dt or f32) end
local function has(s, pat) return s:find(pat, 1, true) ~= nil end
local count = dofile("spec/support/util.lua").count
local function trace_error(k, ...)
  local ok, e = pcall(k.ir, k, ...)
  assert.is_false(ok, "expected a trace error")
  return tostring(e)
end
local function at(e, marker)
  assert.is_truthy(has(e, THIS .. ":" .. line_of(marker) .. ":"), e)
end

describe("front end: conditions on traced values", function()
  it("`if i < n or j < m then` keeps both comparisons (j < m only where i < n fails)", function()
    local k = cute.kernel(function(A, n, m)
      local i, j = cute.arch.thread_idx()
      if i < n or j < m then A[i] = 1.0 end
    end)
    assert.is_true(k.frontend)
    local ir = k:ir(spec1(64), cute.Int32(8), cute.Int32(9))
    assert.is_truthy(ir:find("lt i1 %%4, %%1") or ir:find("lt i1 %%%d+, %%2"), ir)
    assert.equal(2, count(ir, " = lt i1 "), ir)
    -- or: the rhs is evaluated under `if not (i < n)`
    assert.is_truthy(ir:find("not i1") and ir:find("if %%%d+ {"), ir)
    assert.equal(2, count(ir, "\n%s*if %%"), ir)
  end)

  it("`not (i < n) and j < m` is both conditions", function()
    local k = cute.kernel(function(A, n, m)
      local i, j = cute.arch.thread_idx()
      if not (i < n) and j < m then A[i] = 1.0 end
    end)
    local ir = k:ir(spec1(64), cute.Int32(8), cute.Int32(9))
    assert.equal(2, count(ir, " = lt i1 "), ir)
    assert.equal(1, count(ir, " = not i1 "), ir)
  end)

  it("`i < n and A[i] > 0` loads A[i] only inside the branch where i < n", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if i < n and A[i] > 0 then A[i] = 0.0 end
    end)
    local ir = k:ir(spec1(64), cute.Int32(8))
    local lt = ir:find(" = lt i1 ", 1, true)
    local first_if = ir:find("\n%s*if %%")
    local load = ir:find(" = load f32 ", 1, true)
    assert.is_truthy(lt and first_if and load, ir)
    assert.is_true(lt < first_if and first_if < load, ir)
  end)

  it("`if cute.lt(i, n) then` is a traced condition (an IR if), not always true", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if cute.lt(i, n) then A[i] = 1.0 else A[i] = 2.0 end
    end)
    local ir = k:ir(spec1(64), cute.Int32(8))
    assert.is_truthy(has(ir, "} else {"), ir)
    assert.is_truthy(has(ir, "1.0:f32") and has(ir, "2.0:f32"), ir)
  end)

  it("`if A[i] then` (a traced number as a condition) is an error at the line", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      if A[i] then A[i] = 0.0 end -- MARK-truthy
    end)
    local e = trace_error(k, spec1(64))
    at(e, "MARK-truthy")
    assert.is_truthy(has(e, "~= 0"), e)
    assert.is_truthy(has(e, "f32"), e)
  end)

  it("`v == 0` / `v ~= 0` on a cute.var compare on the GPU", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local v = cute.var(t)
      if v == 0 then A[0] = 1.0 end
      if v ~= 0 then A[1] = 1.0 end
    end)
    local ir = k:ir(spec1(64))
    assert.equal(1, count(ir, " = eq i1 "), ir)
    assert.equal(1, count(ir, " = ne i1 "), ir)
    assert.equal(2, count(ir, "\n%s*if %%"), ir)
  end)

  it("comparisons keep Lua's results on Lua values, and elseif chains pick at trace time", function()
    local k = cute.kernel(function(A, mode)
      if mode == "a" then A[0] = 1.0
      elseif mode == "b" and 2 > 1 then A[0] = 2.0
      else A[0] = 3.0 end
    end)
    local ir = k:ir(spec1(4), "b")
    assert.is_falsy(ir:find("\n%s*if "), ir)
    assert.is_truthy(has(ir, "2.0:f32") and not has(ir, "1.0:f32") and not has(ir, "3.0:f32"), ir)
  end)

  it("`c and x or y` with a traced c chooses on the GPU; numbers take the traced type", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      A[i] = i < n and A[i] * 2 or 0.5
    end)
    local ir = k:ir(spec1(64), cute.Int32(8))
    assert.is_truthy(has(ir, "} else {") and has(ir, "var f32"), ir)
  end)

  it("a traced value with `or` is a value (Lua's rule); as a condition it is an error", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      local x = A[i] or 1.0
      A[i] = x + 1
      if not A[i] then A[0] = 0.0 end -- MARK-not
    end)
    local e = trace_error(k, spec1(64))
    at(e, "MARK-not")
  end)
end)

describe("front end: locals assigned in traced branches and loops", function()
  it("a sum over a traced bound needs no cute.var; the Lua 0 becomes f32", function()
    local k = cute.kernel(function(A, n)
      local s = 0
      for j = 0, n - 1 do s = s + A[j] end
      A[0] = s
    end)
    local ir = k:ir(spec1(64), cute.Int32(10))
    assert.is_truthy(has(ir, "var f32 0.0:f32"), ir)
    assert.is_truthy(has(ir, "while {"), ir)
    -- the sum is stored after the loop, read from the variable
    assert.is_truthy(ir:find("}\n%s*%%%d+ = vget f32 %%%d+\n[^\n]*\n?%s*%%%d+ = gep"), ir)
  end)

  it("values assigned in both branches of a traced if are used after it", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      local v
      if i < n then v = A[i] else v = 2.0 end
      A[i] = v
    end)
    local ir = k:ir(spec1(64), cute.Int32(8))
    assert.is_truthy(has(ir, "var f32"), ir)
    assert.equal(2, count(ir, "vset "), ir)
  end)

  it("a local nil on one path of a traced if is an error at the if", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      local v
      if i < n then v = A[i] end -- MARK-nilpath
      A[i] = v
    end)
    local e = trace_error(k, spec1(64), cute.Int32(8))
    at(e, "MARK-nilpath")
    assert.is_truthy(has(e, "`v`"), e)
  end)

  it("a traced i32 local assigned an f32 in a traced branch is a type error", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      local v = i
      if i < n then v = A[i] end -- MARK-conflict
      A[0] = v
    end)
    local e = trace_error(k, spec1(64), cute.Int32(8))
    at(e, "MARK-conflict")
    assert.is_truthy(has(e, "i32") and has(e, "f32"), e)
  end)

  it("a table, a global or a table field assigned in a traced branch are errors; tensor stores work", function()
    local k1 = cute.kernel(function(A, n)
      local t = {}
      local i = cute.arch.thread_idx()
      if i < n then t.x = 1 end -- MARK-field
    end)
    at(trace_error(k1, spec1(4), cute.Int32(2)), "MARK-field")
    local k2 = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if i < n then cute_frontend_spec_global = 1 end -- MARK-global
    end)
    local e2 = trace_error(k2, spec1(4), cute.Int32(2))
    at(e2, "MARK-global")
    assert.is_nil(rawget(_G, "cute_frontend_spec_global"))
    local k3 = cute.kernel(function(A, n)
      local t, u = {}, { 1 }
      local i = cute.arch.thread_idx()
      if i < n then t = u end -- MARK-table
    end)
    at(trace_error(k3, spec1(4), cute.Int32(2)), "MARK-table")
    local k4 = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if i < n then
        local row = {}
        for j = 1, 2 do row[j] = j end -- a table made inside the branch: fine
        A[i] = row[2]
      end
    end)
    assert.is_truthy(has(k4:ir(spec1(4), cute.Int32(2)), "store"))
  end)

  it("a helper function of the kernel filling its own table works when called inside a traced branch", function()
    -- (the table is the function's own: nothing was traced since it was made)
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      local function twice(x)
        local t = {}
        for j = 0, 1 do t[j] = x * (j + 1) end
        return t
      end
      if i < n then
        local t = twice(i)
        A[i] = t[1]
      end
      for j in cute.range(n) do
        local t = twice(j)
        A[j] = t[0]
      end
    end)
    assert.is_truthy(has(k:ir(spec1(4), cute.Int32(2)), "store"))
    -- a table from outside the helper, written by the helper inside a traced branch, stays an error
    local k2 = cute.kernel(function(A, n)
      local outer = {}
      local function put(x) outer.x = x end -- MARK-helper-outer
      local i = cute.arch.thread_idx()
      if i < n then put(i) end
    end)
    at(trace_error(k2, spec1(4), cute.Int32(2)), "MARK-helper-outer")
  end)
end)

describe("front end: loops", function()
  it("numeric for over traced bounds: inclusive, i32 stepped in 64 bits (cannot wrap)", function()
    local k = cute.kernel(function(A, a, b)
      for j = a, b do A[j] = 1.0 end
    end)
    local ir = k:ir(spec1(64), cute.Int32(0), cute.Int32(7))
    assert.is_truthy(has(ir, " = le i1 "), ir)
    assert.is_truthy(has(ir, "cvt i64"), ir)
    assert.is_truthy(has(ir, "add i64"), ir)
  end)

  it("numeric for with a negative Lua step counts down; a traced step asserts it is not 0", function()
    local k = cute.kernel(function(A, n, s)
      for j = n, 0, -1 do A[j] = 1.0 end
      for j = 0, n, s do A[j] = 2.0 end
    end)
    local ir = k:ir(spec1(64), cute.Int32(7), cute.Int32(2))
    assert.is_truthy(has(ir, " = ge i1 "), ir)
    assert.is_truthy(has(ir, 'str="for: the step is 0"'), ir)
    assert.is_truthy(has(ir, "select i1"), ir)
  end)

  it("a Lua step of 0 is an error at the line", function()
    local k = cute.kernel(function(A, n)
      for j = 0, n, 0 do A[j] = 1.0 end -- MARK-step0
    end)
    at(trace_error(k, spec1(4), cute.Int32(2)), "MARK-step0")
  end)

  it("while over a traced condition is an IR while (no hang); repeat too", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      while i < n do
        A[i] = 1.0
        i = i + 32
      end
      local j = 0
      repeat
        A[j] = 2.0
        j = j + 1
      until j >= n
    end)
    local ir = k:ir(spec1(64), cute.Int32(64))
    assert.equal(2, count(ir, "while {"), ir)
  end)

  it("break in a traced loop is the IR break after storing the carried locals", function()
    local k = cute.kernel(function(A, n)
      local found = -1
      for j in cute.range(n) do
        if A[j] > 0 then
          found = j
          break
        end
      end
      A[0] = found
    end)
    local ir = k:ir(spec1(64), cute.Int32(64))
    assert.is_truthy(ir:find("vset %%%d+, %%%d+\n%s*break"), ir)
    assert.is_truthy(has(ir, "var i32 -1:i32"), ir)
  end)

  it("break under a traced condition makes a Lua-number loop an IR loop; in a Lua iterator it is an error", function()
    local k = cute.kernel(function(A, p)
      for j = 0, 3 do
        if A[j] > 0 then break end
      end
      local r = 0
      repeat
        r = r + 1
        if r > p then break end
      until r >= 3
      A[0] = r
    end)
    local ir = k:ir(spec1(4), cute.Int32(1))
    assert.equal(2, count(ir, "while {"), ir)
    assert.equal(2, count(ir, "\n%s*break\n"), ir)
    local k2 = cute.kernel(function(A)
      for _, j in ipairs({ 0, 1, 2 }) do
        if A[j] > 0 then break end -- MARK-unrolled
      end
    end)
    local e = trace_error(k2, spec1(4))
    at(e, "MARK-unrolled")
    assert.is_truthy(has(e, "break"), e)
  end)

  it("`a and b or c` with a Lua-true a and an i1 b is b or c (found by the kernel fuzzer)", function()
    local k = cute.kernel(function(O, p, q)
      local x = 3
      if x > 0 and p > 0 or q > 0 then O[0] = 1 end
    end)
    local ir = k:ir(spec1(4, i32), cute.Int32(0), cute.Int32(1))
    assert.equal(2, count(ir, " = gt i1 "), ir)
  end)

  it("`a and b or c` with i1 operands is (a and b) or c, not a ternary", function()
    local k = cute.kernel(function(O, a, b, c)
      if a > 0 and b > 0 or c > 0 then O[0] = 1 else O[0] = 2 end
    end)
    local ir = k:ir(spec1(4, i32), cute.Int32(1), cute.Int32(0), cute.Int32(1))
    -- where a > 0: b > 0, and where that fails c > 0 (evaluated in a nested if)
    assert.is_truthy(ir:find("if %%%d+ {[^}]*gt i1 [^}]*if %%%d+ {[^}]*gt i1"), ir)
  end)

  it("return in a traced branch is an early return; with values it is an error", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if i >= n then return end
      A[i] = 1.0
    end)
    local ir = k:ir(spec1(64), cute.Int32(8))
    assert.is_truthy(ir:find("if %%%d+ {\n%s*ret\n"), ir)
    local k2 = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if i >= n then return 1 end -- MARK-retval
    end)
    at(trace_error(k2, spec1(64), cute.Int32(8)), "MARK-retval")
  end)

  it("cute.range: Python's range; a negative step counts down; zero steps refused; options checked", function()
    local k = cute.kernel(function(A, s)
      for j in cute.range(63, -1, -1) do A[j] = 1.0 end
      for j in cute.range(0, 64, s) do A[j] = 2.0 end
    end)
    local ir = k:ir(spec1(64), cute.Int32(2))
    assert.is_truthy(has(ir, "for i32 63:i32, -1:i32, -1:i32"), ir)
    assert.is_truthy(has(ir, 'str="cute.range: the step is 0"'), ir)
    local k2 = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      for j in cute.range(t, n, cute.arch.block_dim()) do A[j] = 1.0 end -- MARK-blockdim
    end)
    local e = trace_error(k2, spec1(64), cute.Int32(8))
    at(e, "MARK-blockdim")
    assert.is_truthy(has(e, "block_dim"), e)
    local k3 = cute.kernel(function(A)
      for j in cute.range(0, 8, 0) do A[j] = 1.0 end -- MARK-range0
    end)
    at(trace_error(k3, spec1(64)), "MARK-range0")
  end)

  it("cute.range with a runtime step: i64 with an i64 bound; the compare follows the step's sign", function()
    local k = cute.kernel(function(A, n, s)
      for j in cute.range(n, 0, s) do A[j] = 1.0 end
    end, { opt_level = 0 })
    local r = k:compile(spec1(64), cute.Int64(8), cute.Int32(-1))
    assert.is_truthy(r.ir:find("= for i64 %%2, 0:i64, %%%d+ {"), r.ir)
    -- iv < hi where step > 0, iv > hi where step < 0 (the old code only tested iv < hi)
    assert.is_truthy(r.llvm:find("icmp sgt i64 %%i, 0") and r.llvm:find("icmp slt i64 %%i, 0"), r.llvm)
    assert.is_truthy(has(r.llvm, "llvm.sadd.with.overflow.i64"), r.llvm)
  end)

  it("goto in a kernel: Lua conditions around it work, a traced one is an error at its line", function()
    local k = cute.kernel(function(A, n)
      for i = 0, 7 do
        if i > 3 then goto continue end
        if A[i] > 0 then A[i] = 2.0 end
        ::continue::
      end
    end)
    assert.is_true(k.frontend)
    assert.equal(4, count(k:ir(spec1(8), cute.Int32(3)), "\n%s*if %%"))
    -- a goto to a label that is not the end of the loop body stays a Lua goto
    local k2 = cute.kernel(function(A, n)
      for i = 0, 7 do
        if A[i] > 0 then goto skip end -- MARK-gototraced
        A[i] = 1.0
        ::skip::
        A[i] = 2.0
      end
    end)
    local e = trace_error(k2, spec1(8), cute.Int32(3))
    at(e, "MARK-gototraced")
    assert.is_truthy(has(e, "goto"), e)
    local k3 = cute.kernel(function(A, n)
      for i = 0, 7 do
        if A[i] > 0 then break end -- MARK-gotobreak
        if i == 5 then goto skip end
        A[i] = 1.0
        ::skip::
        A[i] = 3.0
      end
    end)
    at(trace_error(k3, spec1(8), cute.Int32(3)), "MARK-gotobreak")
  end)

  it("`goto continue` to a label ending a cute.range body is the IR continue, after storing the carried locals", function()
    local k = cute.kernel(function(A, n)
      local s = 0
      for i in cute.range(n) do
        if A[i] < 0 then goto continue end
        s = s + A[i]
        ::continue::
      end
      A[0] = s
    end)
    local ir = k:ir(spec1(64), cute.Int32(64))
    assert.equal(1, count(ir, "\n%s*continue\n"), ir)
    assert.is_truthy(ir:find("vset %%%d+, %%%d+\n%s*continue"), ir)
    assert.equal(1, count(ir, "= for i32 "), ir)
  end)

  it("`goto continue` in a numeric for with traced bounds steps the index before the IR continue", function()
    local k = cute.kernel(function(A, n)
      for i = 0, n - 1 do
        if A[i] < 0 then goto continue end
        A[i] = A[i] * 2
        ::continue::
      end
    end)
    local ir = k:ir(spec1(64), cute.Int32(64))
    assert.equal(1, count(ir, "\n%s*continue\n"), ir)
    -- the step (index and in-range flag) is written twice: before the continue and at the end of the body
    assert.equal(2, count(ir, "= add i64 "), ir)
    assert.is_truthy(ir:find("vset %%%d+, %%%d+\n%s*vset %%%d+, %%%d+\n%s*continue"), ir)
  end)

  it("`goto continue` under a traced condition makes a Lua-number loop an IR loop; while loops too", function()
    local k = cute.kernel(function(A, n)
      for i = 0, 7 do
        if A[i] > 0 then goto continue end
        A[i] = 1.0
        ::continue::
      end
      local j = cute.arch.thread_idx()
      while j < n do
        j = j + 32
        if A[j - 32] == 0 then goto continue end
        A[j - 32] = 5.0
        ::continue::
      end
    end)
    local ir = k:ir(spec1(64), cute.Int32(64))
    assert.equal(2, count(ir, "while {"), ir)
    assert.equal(2, count(ir, "\n%s*continue\n"), ir)
  end)

  it("break and goto continue together in one cute.range body", function()
    local k = cute.kernel(function(A, n)
      for i in cute.range(n) do
        if A[i] < 0 then break end
        if A[i] == 0 then goto continue end
        A[i] = 1.0 / A[i]
        ::continue::
      end
    end)
    local ir = k:ir(spec1(64), cute.Int32(64))
    assert.equal(1, count(ir, "\n%s*continue\n"), ir)
    assert.equal(1, count(ir, "\n%s*break\n"), ir)
  end)

  it("a traced `goto continue` inside a loop over a Lua iterator is an error at its line", function()
    local k = cute.kernel(function(A)
      for _, j in ipairs({ 0, 1, 2 }) do
        if A[j] > 0 then goto continue end -- MARK-contunrolled
        A[j] = 1.0
        ::continue::
      end
    end)
    local e = trace_error(k, spec1(4))
    at(e, "MARK-contunrolled")
    assert.is_truthy(has(e, "goto continue"), e)
  end)

  it("cute.if_then, cute.while_ and cute.return_ check their arguments at the user's line", function()
    local k1 = cute.kernel(function(A)
      cute.if_then(A[0] > 0, function() end, function() end, 3) -- MARK-ifargs
    end, { frontend = false })
    at(trace_error(k1, spec1(4)), "MARK-ifargs")
    local k2 = cute.kernel(function(A)
      cute.while_(function() return A[0] > 0 end) -- MARK-whileargs
    end)
    at(trace_error(k2, spec1(4)), "MARK-whileargs")
    local k3 = cute.kernel(function(A)
      cute.return_(1) -- MARK-retargs
    end)
    at(trace_error(k3, spec1(4)), "MARK-retargs")
  end)

  it("cute.range_constexpr: half-open, negative steps, a zero step is an error", function()
    local got = {}
    local k = cute.kernel(function(A)
      for j in cute.range_constexpr(3, -1, -1) do got[#got + 1] = j end
      for j in cute.range_constexpr(0, 7, 3) do got[#got + 1] = j end
    end, { frontend = false })
    k:ir(spec1(4))
    assert.same({ 3, 2, 1, 0, 0, 3, 6 }, got)
    local k2 = cute.kernel(function(A)
      for j in cute.range_constexpr(0, 4, 0) do A[j] = 1.0 end -- MARK-constexpr0
    end)
    at(trace_error(k2, spec1(4)), "MARK-constexpr0")
  end)

  it("loop increments cannot wrap: the LLVM of a grid-stride cute.range checks overflow", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      local s = cute.arch.block_dim()
      for j in cute.range(t, n, s) do A[j] = 1.0 end
    end, { opt_level = 1 })
    local r = k:compile(spec1(64), cute.Int32(8))
    assert.is_truthy(has(r.llvm, "llvm.sadd.with.overflow.i32"), r.llvm)
    -- a unit step needs no check: i < n implies i + 1 does not wrap
    local k2 = cute.kernel(function(A, n)
      for j in cute.range(n) do A[j] = 1.0 end
    end, { opt_level = 0 })
    local r2 = k2:compile(spec1(64), cute.Int32(8))
    assert.is_truthy(has(r2.llvm, "add nsw i32"), r2.llvm)
    assert.is_falsy(has(r2.llvm, "with.overflow"), r2.llvm)
  end)
end)

describe("front end: Lua values behave exactly as in Lua", function()
  -- the same function, plain and rewritten, on Lua values
  local function both(f, ...)
    local g, text = fe.rewrite(f)
    assert.is_function(g, text)
    local a = { pcall(f, ...) }
    local b = { pcall(g, ...) }
    return a, b, text
  end

  local upv = 10
  local function sample(x, y, ...)
    local out = {}
    local n = select("#", ...)
    if x > y and not (x == 3) then out[#out + 1] = "gt" elseif x == y then out[#out + 1] = "eq" else out[#out + 1] = "lt" end
    local s, p = 0, nil
    for i = x, y, (x <= y) and 1 or -1 do
      s = s + i
      if i == 4 then break end
    end
    local j = 0
    while j < 10 do
      j = j + 3
      if j % 2 == 0 then p = (p or 0) + j end
    end
    repeat local q = j; j = j - 4 until q < 5
    local nv = 0
    while nv < select("#", ...) and select(nv + 1, ...) ~= "stop" do nv = nv + 1 end
    if n > 0 then out[#out + 1] = "va" .. select("#", ...) .. tostring((...)) .. nv end
    for k, v in ipairs({ ... }) do
      if v == "stop" then break end
      out[#out + 1] = k .. "=" .. tostring(v)
    end
    local function inner(z)
      if z then return "yes", z end
      return "no"
    end
    upv = upv + 1
    out[#out + 1] = table.concat({ s, tostring(p), j, n, inner(x > 2), upv, x and y or 0, nil or false and 1 or 2 }, ",")
    if x == 7 then return "early", out end
    return out
  end

  it("a function with every construct gives the same results plain and rewritten", function()
    for _, args in ipairs({ { 1, 5 }, { 5, 1, "a", "stop", "b" }, { 3, 3 }, { 7, 2, 1, 2 }, { 4, 9, "x" } }) do
      upv = 10
      local a = { pcall(sample, unpack(args)) }
      upv = 10
      local g = assert(fe.rewrite(sample))
      local b = { pcall(g, unpack(args)) }
      assert.same(a, b)
    end
  end)

  it("goto and labels: statements containing them stay Lua statements, with the same results", function()
    local function f(n, ...)
      local out = {}
      for i = 1, n do
        if i % 2 == 0 then goto continue end
        for _, v in ipairs({ ... }) do
          if v == i then break end
          if v > 10 then goto done end
        end
        out[#out + 1] = i
        ::continue::
      end
      ::done::
      local j = 0
      while j < 3 do j = j + 1; if j == 2 then goto skip end; out[#out + 1] = "j" .. j; ::skip:: end
      return table.concat(out, ",")
    end
    local g = assert(fe.rewrite(f))
    for _, args in ipairs({ { 7, 3, 5 }, { 7, 3, 50 }, { 0 }, { 9, 9, 1, 2 } }) do
      assert.equal(f(unpack(args)), g(unpack(args)))
    end
  end)

  it("goto continue on Lua values: the rewritten loops give Lua's results (nested loops, a shadowing label)", function()
    local function f(n, m)
      local out = {}
      for i = 1, n do
        if i % 3 == 0 then goto continue end
        local j = 0
        while j < m do
          j = j + 1
          if j == 2 then goto continue end
          for k = 1, 2 do
            if k == j then goto continue end
            out[#out + 1] = i .. ":" .. j .. ":" .. k
            ::continue::
          end
          if j > 3 then break end
          ::continue::
        end
        for _, v in ipairs({ i, i + 1 }) do
          if v % 2 == 0 then goto continue end
          out[#out + 1] = "v" .. v
          ::continue::
        end
        ::continue::
      end
      return table.concat(out, ",")
    end
    local g = assert(fe.rewrite(f))
    for _, args in ipairs({ { 7, 5 }, { 4, 1 }, { 0, 3 }, { 9, 9 } }) do
      assert.equal(f(unpack(args)), g(unpack(args)))
    end
  end)

  it("the rewritten function shares the original's upvalues (joined, not copied)", function()
    local counter = 0
    local function f() counter = counter + 1; return counter end
    local g = assert(fe.rewrite(f))
    g(); g()
    assert.equal(2, counter)
    counter = 40
    assert.equal(41, g())
  end)

  it("error(msg, 2) inside a branch still blames the caller", function()
    local function f(x)
      if x then error("boom", 2) end
    end
    local g = assert(fe.rewrite(f))
    local ok, e = pcall(function() g(true) end) -- MARK-errlevel
    assert.is_false(ok)
    assert.is_truthy(has(tostring(e), THIS .. ":" .. line_of("MARK-errlevel") .. ":"), e)
  end)

  it("every function of the library itself can be rewritten (a corpus for the parser and printer)", function()
    local seen, n = {}, 0
    local function visit(t, depth)
      if depth > 3 or seen[t] then return end
      seen[t] = true
      for _, v in pairs(t) do
        if type(v) == "function" then
          local info = debug.getinfo(v, "S")
          if info.what == "Lua" and info.source:sub(1, 1) == "@" then
            local g, why = fe.rewrite(v)
            assert.is_function(g, info.short_src .. ":" .. info.linedefined .. ": " .. tostring(why))
            n = n + 1
          end
        elseif type(v) == "table" then visit(v, depth + 1) end
      end
    end
    local mods = { "cute", "cute.trace", "cute.tensor", "cute.kernel", "cute.layout", "cute.arch",
      "cute.lua_parse", "cute.frontend", "cute.control", "cute.ir" }
    -- an interpreter without lua/ beside it (build/asan/cuteluajit) runs the
    -- modules embedded in the library: give the front end their text
    local ls = io.popen("ls lua/cute")
    for file in ls:lines() do
      local name = file:match("^(.*)%.lua$")
      local text = name and dofile("spec/support/util.lua").read_file("lua/cute/" .. file)
      if text then
        cute.register_source("@[embedded]/" .. (name == "init" and "cute" or "cute." .. name) .. ".lua", text)
      end
    end
    ls:close()
    for _, m in ipairs(mods) do visit(require(m), 0) end
    assert.is_true(n > 300, tostring(n))
  end)

  it("errors raised by rewritten code name the user's file and line", function()
    local function f(t)
      if t.x > 1 then return 1 end -- MARK-luaerr
    end
    local g = assert(fe.rewrite(f))
    local ok, e = pcall(g, {})
    assert.is_false(ok)
    assert.is_truthy(has(tostring(e), THIS .. ":" .. line_of("MARK-luaerr") .. ":"), e)
  end)
end)

describe("front end: sources", function()
  it("the parser reads LuaJIT's literals, long strings, comments and goto", function()
    local src = "local a = 1ULL + 0x1p4 + 2LL + 0x10 + 1e3 + .5 + 3i\n" ..
      "local s = [==[x]]\n]==] .. 'q\\'' .. \"\\z\n   r\"\n--[[ c\n]] ::top:: goto top\n"
    local b, err = P.parse(src, "t")
    assert.is_table(b, err)
    assert.equal("Label", b[3].k)
    assert.equal(6, b[4].line)
    local bad, e = P.parse("if x then", "t")
    assert.is_nil(bad)
    assert.is_truthy(has(e, "t:1:"), e)
  end)

  it("kernels from load(string) and cute.register_source chunks are rewritten", function()
    local text = "return function(A, n)\n local i = cute.arch.thread_idx()\n if i < n then A[i] = 1.0 end\nend"
    local f = assert(loadstring(text))
    setfenv(f, setmetatable({ cute = cute }, { __index = _G }))
    local k = cute.kernel(f())
    assert.is_true(k.frontend)
    assert.is_truthy(has(k:ir(spec1(8), cute.Int32(4)), "if %"))
    cute.register_source("=myhost", text)
    local f2 = assert(loadstring(text, "=myhost"))
    setfenv(f2, setmetatable({ cute = cute }, { __index = _G }))
    local k2 = cute.kernel(f2())
    assert.is_true(k2.frontend)
    assert.is_truthy(has(k2:source(), "__cute_rt"))
  end)

  it("a kernel whose source cannot be read is traced as before and says so", function()
    local f = assert(loadstring("return function(A) A[0] = 1.0 end", "=nosuchsource"))()
    local k = cute.kernel(f)
    assert.is_false(k.frontend)
    assert.is_string(k.frontend_error)
    assert.is_truthy(has(k:ir(spec1(4)), "store"))
    local k2 = cute.kernel(function(A) A[0] = 1.0 end, { frontend = false })
    assert.is_false(k2.frontend)
    assert.is_nil(k2:source())
  end)

  it("a function is rewritten once, whatever the number of kernels made of it", function()
    local f = function(A) A[0] = 1.0 end
    local k1, k2 = cute.kernel(f), cute.kernel(f)
    assert.equal(k1.fn, k2.fn)
    assert.is_true(k1.fn ~= f)
  end)

  it("every token keeps its line in the rewritten text", function()
    local k = cute.kernel(function(A, n)
      local i = cute.arch.thread_idx()
      if i < n then
        A[i] = 1.0 -- MARK-keepline
      end
    end)
    local text = k:source()
    local ln = 0
    for l in (text .. "\n"):gmatch("([^\n]*)\n") do
      ln = ln + 1
      if l:find("1.0", 1, true) then break end
    end
    assert.equal(line_of("MARK-keepline"), ln)
  end)
end)

describe("front end: the length operator", function()
  it("`#t` of a register tensor, a kernel tensor or a fragment is its size (LuaJIT ignores __len on tables)", function()
    local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = cute.bfloat16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } }
    local tm = cute.make_tiled_mma(op, { 1, 1, 1 })
    local sizes = {}
    local k = cute.kernel(function(A, Out)
      local tid = cute.arch.thread_idx()
      local acc = tm:get_slice(tid):partition_fragment_C(Out)
      local frag = cute.arch.make_fragment_regs(f32, 6)
      local plain = { 1, 2, 3 }
      sizes = { #acc, #A, #frag, #plain, #"abcd" }
      local c = cute.make_fragment_like(acc, f32)
      for e = 0, #c - 1 do c[e] = A[e] end
      Out[tid] = c:load():reduce(cute.ReductionOp.ADD, 0.0, 0)
    end)
    local ir = k:ir(cute.tensor_spec({ 16, 8 }, f32), cute.tensor_spec({ 16, 8 }, f32))
    assert.are.same({ 4, 128, 6, 3, 4 }, sizes)
    assert.are.equal(4, count(ir, "load "))
  end)
end)

describe("front end: a while condition with a side effect (found by the peer-kernel helper)", function()
  it("runs the condition's side effect once per test, none before the loop", function()
    local k = cute.kernel(function(F, n)
      while cute.arch.atomic_add(F, 0, 1) < n do end
    end)
    local ir = k:ir(cute.tensor_spec({ 4 }, cute.int32), cute.Int32(8))
    -- (one atom, inside the loop's condition; a second one before the `while` ran the
    -- condition an extra time: one more increment than the Lua says)
    assert.equal(1, count(ir, "atom"), ir)
  end)
  it("keeps the Lua iterations before the condition becomes traced", function()
    local k = cute.kernel(function(F, n)
      local i = 0
      while i < 2 or cute.arch.atomic_add(F, 0, 1) < n do i = i + 1 end
      F[1] = i
    end)
    local ir = k:ir(cute.tensor_spec({ 4 }, cute.int32), cute.Int32(8))
    assert.equal(1, count(ir, "atom"), ir)
  end)
end)
