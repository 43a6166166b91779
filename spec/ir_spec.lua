-- The kernel IR (include/cute_ir.h through lua/cute/ir.lua): builder, golden
-- text, parser round trip, verifier and builder errors with source locations.
-- Golden files: spec/golden/<name>.ir (CUTE_UPDATE_GOLDEN=1 rewrites them).
if not pcall(require, "cute.ffi") then
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
end
local IR = require("cute.ir")

local util = dofile("spec/support/util.lua")
local read, has = util.read_file, util.has

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

-- ---- representative kernels --------------------------------------------------
local K = {}

-- c[i..i+3] = a[..] + b[..] with 16-byte read-only loads, guarded by n
function K.vadd()
  local m = IR.new()
  m:func("vadd", "kernel")
  m:loc("vadd.lua", 1)
  local a = m:param("ptr.global.f32", "a", { noalias = true, readonly = true, align = 16 })
  local b = m:param("ptr.global.f32", "b", { noalias = true, readonly = true, align = 16 })
  local c = m:param("ptr.global.f32", "c", { noalias = true, align = 16 })
  local n = m:param("i32", "n")
  m:launch_bounds(256, 2)
  m:loc("vadd.lua", 2)
  local i = m:add(m:mul(m:sreg("ctaid.x"), m:sreg("ntid.x")), m:sreg("tid.x"))
  local i4 = m:cvt("i32", m:mul(i, m:k("u32", 4)))
  m:loc("vadd.lua", 3)
  m:if_(m:lt(i4, n))
  local v4 = m:ptr("f32x4", "global")
  local pa = m:ptrcast(v4, m:gep(a, i4))
  local pb = m:ptrcast(v4, m:gep(b, i4))
  local pc = m:ptrcast(v4, m:gep(c, i4))
  m:loc("vadd.lua", 4)
  local x = m:load(pa, { hint = "nc", align = 16 })
  local y = m:load(pb, { hint = "nc", align = 16 })
  m:store(pc, m:add(x, y), { align = 16 })
  m:end_()
  m:ret()
  return m
end

-- block sum: grid-stride loop with a carried var, warp butterfly shuffles,
-- per-warp partials in shared memory, named barrier, shared + global atomics
function K.reduce()
  local m = IR.new()
  m:func("reduce", "kernel")
  m:loc("reduce.lua", 1)
  local x = m:param("ptr.global.f32", "x", { noalias = true, readonly = true })
  local out = m:param("ptr.global.f32", "out")
  local n = m:param("u32", "n")
  m:launch_bounds(128)
  local sm = m:shared("f32", 4, 16)
  local tid = m:sreg("tid.x")
  local gid = m:add(m:mul(m:sreg("ctaid.x"), m:sreg("ntid.x")), tid)
  local stride = m:mul(m:sreg("nctaid.x"), m:sreg("ntid.x"))
  local acc = m:var("f32", m:k("f32", 0))
  m:loc("reduce.lua", 3)
  local i = m:for_(gid, n, stride, 4)
  m:vset(acc, m:add(m:vget(acc), m:load(m:gep(x, i), { hint = "nc" })))
  m:end_()
  m:loc("reduce.lua", 5)
  local s = m:vget(acc)
  local full = m:k("u32", 0xffffffff)
  for _, off in ipairs({ 16, 8, 4, 2, 1 }) do
    s = m:add(s, m:shfl(s, m:k("u32", off), full, { mode = "bfly", width = 32 }))
  end
  m:loc("reduce.lua", 6)
  m:if_(m:eq(m:sreg("laneid"), m:k("u32", 0)))
  m:store(m:gep(sm, m:shr(tid, m:k("u32", 5))), s)
  m:end_()
  m:bar(1, 128)
  m:loc("reduce.lua", 8)
  m:if_(m:lt(tid, m:k("u32", 4)))
  local part = m:load(m:gep(sm, tid))
  m:atom(sm, part, { op = "add" })
  m:atom(out, part, { op = "add", scope = "sys" })
  m:end_()
  m:ret()
  return m
end

-- loops: a counted loop carrying two vars, a fully unrolled inner loop,
-- early exit with break, and a device function
function K.loops()
  local m = IR.new()
  local sq = m:func("axpy", "device", "f32")
  local pa, px, py = m:param("f32", "a"), m:param("f32", "x"), m:param("f32", "y")
  m:ret(m:fma(pa, px, py))
  m:func("loops", "kernel")
  m:loc("loops.lua", 10)
  local p = m:param("ptr.global.f32", "p", { noalias = true })
  local n = m:param("i32", "n")
  local s = m:var("f32", m:k("f32", 0))
  local t = m:var("i32", m:k("i32", 0))
  m:loc("loops.lua", 11)
  local i = m:for_(m:k("i32", 0), n, m:k("i32", 1), "disable")
  local v = m:load(m:gep(p, i))
  m:if_(m:isnan(v))
  m:break_()
  m:end_()
  m:loc("loops.lua", 13)
  local j = m:for_(m:k("i32", 0), m:k("i32", 4), m:k("i32", 1), "full")
  m:vset(s, m:call(sq, m:cvt("f32", j), v, m:vget(s)))
  m:end_()
  m:vset(t, m:add(m:vget(t), m:k("i32", 1)))
  m:end_()
  m:loc("loops.lua", 16)
  m:store(p, m:add(m:vget(s), m:cvt("f32", m:vget(t))))
  m:ret()
  return m
end

-- if/else with a result, while loop, early return, select, bf16/f16 conversions
function K.ifelse()
  local m = IR.new()
  m:func("ifelse", "kernel")
  m:loc("ifelse.lua", 20)
  local x = m:param("ptr.global.f32", "x")
  local y = m:param("ptr.global.bf16", "y")
  local tid = m:sreg("tid.x")
  m:if_(m:ge(tid, m:k("u32", 1000)))
  m:ret()
  m:end_()
  m:loc("ifelse.lua", 22)
  local v = m:load(m:gep(x, tid))
  local r = m:if_(m:gt(v, m:k("f32", 0)), "f32")
  m:yield(m:sqrt(v, { math = "accurate" }))
  m:else_()
  m:yield(m:exp2(v, { math = "fast" }))
  m:end_()
  m:loc("ifelse.lua", 26)
  local k = m:var("i32", m:k("i32", 0))
  m:while_()
  m:do_(m:lt(m:vget(k), m:k("i32", 3)))
  m:vset(k, m:add(m:vget(k), m:k("i32", 1)))
  m:end_()
  local z = m:select(m:eq(m:vget(k), m:k("i32", 3)), r, m:neg(r))
  m:store(m:gep(y, tid), m:cvt("bf16", z))
  m:store(m:gep(y, m:add(tid, m:k("u32", 1))), m:cvt("bf16", z, "rz"))
  m:ret()
  return m
end

-- Fragments and by-value parameters (docs/IR.md, "Fragments and wide values"):
-- a 128 x f32 accumulator carried through a for loop by a var, sliced by
-- constant index, passed whole through one asm with 258 operands (128 outputs,
-- 128 tied inputs, two 64-bit inputs); an array of vectors built from scalars;
-- a 128-byte, 64-aligned grid_constant parameter whose generic address is read.
-- out[tid*129 + j] = fragment element j, out[tid*129 + 128] = a word of the blob.
function K.fragment(nfrag)
  nfrag = nfrag or 128
  local m = IR.new()
  m:func("frag", "kernel")
  m:loc("frag.lua", 1)
  local out = m:param("ptr.global.f32", "out", { noalias = true })
  local blob = m:param(m:bytes(128, 64), "desc", { grid_constant = true })
  local n = m:param("i32", "n")
  local s = m:param("f32", "s")
  local F = m:array("f32", nfrag)
  m:loc("frag.lua", 2)
  local acc = m:var(F, m:emit("vec", F, { s }))
  local pa = m:param_addr(blob)
  local d = m:bitcast("u64", pa)
  local words = m:load(m:gep(m:ptrcast("ptr.generic.u32", pa), m:k("i32", 5)))
  m:loc("frag.lua", 3)
  local H = m:array("f16x2", 4)
  local h = {}
  for j = 1, 4 do h[j] = m:emit("vec", "f16x2", { m:cvt("f16", s), m:k("f16", j) }) end
  local hf = m:emit("vec", H, h)
  local i = m:for_(m:k("i32", 0), n, m:k("i32", 1))
  m:loc("frag.lua", 4)
  local cur = m:vget(acc)
  local x5 = m:extract(cur, { lane = 5 })
  cur = m:insert(cur, m:add(x5, m:k("f32", 2)), { lane = 7 })
  local tmpl, cons = {}, {}
  for j = 0, nfrag - 1 do
    tmpl[#tmpl + 1] = ("add.f32 $%d, $%d, 0f3F800000;"):format(j, j)
    cons[#cons + 1] = "=f"
  end
  for j = 0, nfrag - 1 do cons[#cons + 1] = tostring(j) end
  cons[#cons + 1] = "l"; cons[#cons + 1] = "l"
  tmpl[#tmpl + 1] = ("{ .reg .b64 t; add.s64 t, $%d, $%d; }"):format(2 * nfrag, 2 * nfrag + 1)
  m:loc("frag.lua", 5)
  cur = m:asm(F, table.concat(tmpl, " "), table.concat(cons, ","), cur, d, d)
  m:vset(acc, cur)
  m:end_()
  m:loc("frag.lua", 6)
  local fin = m:vget(acc)
  local tid = m:sreg("tid.x")
  local base = m:gep(out, m:mul(tid, m:k("u32", nfrag + 1)))
  for j = 0, nfrag - 1 do m:store(m:gep(base, m:k("i32", j)), m:extract(fin, { lane = j })) end
  -- the f16x2[4] fragment through an asm with 'r' operands: element 2, lane 1 (= 3.0)
  local h2 = m:asm("f16x2", "mov.b32 $0, $3;", "=r,r,r,r,r", hf)
  local w = m:add(m:cvt("f32", m:bitcast("u32", words)), m:cvt("f32", m:extract(h2, { lane = 1 })))
  m:store(m:gep(base, m:k("i32", nfrag)), w)
  m:ret()
  return m
end

local NAMES = { "vadd", "reduce", "loops", "ifelse", "fragment" }
package.loaded["spec.ir_kernels"] = K

describe("cute.ir golden text", function()
  for _, name in ipairs(NAMES) do
    it(name .. " prints as spec/golden/" .. name .. ".ir", function()
      local m = K[name]()
      assert.is_true(m:status())
      assert.is_true(m:verify())
      local txt = m:text()
      local path = "spec/golden/" .. name .. ".ir"
      local gold = read(path)
      if os.getenv("CUTE_UPDATE_GOLDEN") == "1" or not gold then
        local f = assert(io.open(path, "wb"))
        f:write(txt)
        f:close()
        gold = txt
      end
      assert.are.equal(gold, txt)
    end)
    it(name .. ": parse(print(ir)) == print(ir)", function()
      local txt = K[name]():text()
      local m2 = IR.parse(txt)
      assert.are.equal(txt, m2:text())
      assert.is_true(m2:verify())
    end)
  end
  it("parses hand-written IR with comments and arbitrary value numbers", function()
    local m = IR.parse([[
; a comment
kernel @k(%10: ptr.global.f32, %20: i32) {
  %30 = sreg u32 reg=tid.x   ; thread
  %31 = gep ptr.global.f32 %10, %30
  store %31, 1.5:f32
  ret
}
]])
    assert.is_true(m:verify())
    assert.truthy(has(m:text(), "store %4, 1.5:f32"))
  end)
  it("round-trips special float constants and strings", function()
    local m = IR.new()
    m:func("k", "kernel")
    local p = m:param("ptr.global.f32", "p")
    m:store(p, m:k("f32", 1 / 0))
    m:store(p, m:k("f32", -0.0))
    m:store(p, m:k("f32", 0.1))
    m:printf("x=%f \"q\"\n\t", m:k("f64", 2.5))
    m:ret()
    local txt = m:text()
    assert.truthy(has(txt, "0x7f800000:f32"))
    assert.truthy(has(txt, "-0.0:f32"))
    assert.truthy(has(txt, [[str="x=%f \"q\"\n\t"]]))
    assert.are.equal(txt, IR.parse(txt):text())
  end)
end)

describe("cute.ir builder", function()
  it("interns constants (same ref for the same type and value)", function()
    local m = IR.new()
    m:func("k", "kernel")
    assert.are.equal(m:k("i32", 7), m:k("i32", 7))
    assert.are_not.equal(m:k("i32", 7), m:k("u32", 7))
    assert.is_true(m:k("i32", 7) < 0)
  end)
  it("infers result types and takes explicit ones", function()
    local m = IR.new()
    m:func("k", "kernel")
    local a = m:param("f16x2", "a")
    assert.are.equal("f16x2", m:type_name(m:type_of(m:add(a, a))))
    assert.are.equal("i1", m:type_name(m:type_of(m:lt(m:k("i32", 1), m:k("i32", 2)))))
    assert.are.equal("u64", m:type_name(m:type_of(m:sreg("clock64"))))
    assert.are.equal("u32", m:type_name(m:type_of(m:vote(m:k("u32", -1), m:k("i1", 1), { mode = "ballot" }))))
  end)
  it("keeps the first error (sticky) with operation, operands and file:line", function()
    local m = IR.new()
    m:func("k", "kernel")
    m:loc("user.lua", 42)
    local ok, e = pcall(m.add, m, m:k("i32", 1), m:k("f32", 2))
    assert.is_false(ok)
    assert.truthy(has(e, "user.lua:42"))
    assert.truthy(has(e, "add: operand types differ"))
    assert.truthy(has(e, "1:i32") and has(e, "2.0:f32") or has(e, "2:f32"))
    -- later calls are no-ops returning 0
    assert.are.equal(0, IR.opcode and require("cute.ffi").C.cute_ir_op2(m.h, IR.opcode.add, 0, 0))
    local ok2, msg = m:status()
    assert.is_false(ok2)
    assert.truthy(has(msg, "user.lua:42"))
  end)
  it("rejects wrong address spaces, bad hints and bad types at build time", function()
    local m = IR.new()
    m:func("k", "kernel")
    local g = m:param("ptr.global.f32", "g")
    assert.truthy(has(err_of(m.ptrcast, m, m:ptr("f32", "shared"), g), "wrong address space"))
    local m2 = IR.new()
    m2:func("k", "kernel")
    local s = m2:shared("f32", 16)
    assert.truthy(has(err_of(m2.load, m2, s, { hint = "nc" }), "global pointer"))
    local m3 = IR.new()
    m3:func("k", "kernel")
    local c = m3:param("ptr.const.f32", "c")
    assert.truthy(has(err_of(m3.store, m3, c, m3:k("f32", 1)), "const"))
    local m4 = IR.new()
    m4:func("k", "kernel")
    local x = m4:param("f32", "x")
    assert.truthy(has(err_of(m4.shl, m4, x, x), "needs integers"))
  end)
  it("rejects static shared memory over 48 KiB and records dynamic shared bytes", function()
    local m = IR.new()
    m:func("k", "kernel")
    assert.truthy(has(err_of(m.shared, m, "f32", 20000), "48 KiB"))
    local m2 = IR.new()
    m2:func("k", "kernel")
    m2:dyn_smem(100 * 1024)
    local d = m2:dynshared("f32", 16)
    m2:store(d, m2:k("f32", 1))
    m2:ret()
    assert.truthy(has(m2:text(), "dynsmem=102400"))
    local r = assert(m2:compile { arch = "sm_90a", ptxas = false })
    assert.are.equal(102400, r.info.smem_dynamic)
    assert.is_true(r.info.smem_optin)
  end)
  it("reserves op slots for tensor-core and async-copy ops", function()
    for _, op in ipairs({ "mma", "ldmatrix", "cp.async", "mbarrier.init" }) do
      assert.truthy(IR.opcode[op], op)
    end
    local m = IR.new()
    m:func("k", "kernel")
    assert.truthy(has(err_of(m.emit, m, "mma", "void", {}), "reserved"))
  end)
end)

describe("cute.ir verifier", function()
  local function verr(text)
    -- nesting errors (else/end/yield placement) are caught while parsing
    local pok, m = pcall(IR.parse, text, false)
    if not pok then return tostring(m) end
    local ok, e = m:verify()
    assert.is_false(ok, "expected a verifier error")
    return e
  end
  it("reports type mismatches with file:line", function()
    local e = verr('kernel @k(%1: i32) {\n  loc "t.lua" 7\n  %2 = add i32 %1, 1.0:f32\n  ret\n}\n')
    assert.truthy(has(e, "t.lua:7"))
    assert.truthy(has(e, "operand types differ"))
  end)
  it("reports a value used outside its region", function()
    local e = verr("kernel @k() {\n  %1 = sreg u32 reg=tid.x\n  if 1:i1 {\n    %3 = add u32 %1, %1\n  }\n  %5 = add u32 %3, %3\n  ret\n}\n")
    assert.truthy(has(e, "%3 is used outside its region"))
  end)
  it("reports a loop variable used after its loop", function()
    local e = verr("kernel @k() {\n  %1 = for i32 0:i32, 4:i32, 1:i32 {\n  }\n  %3 = add i32 %1, %1\n  ret\n}\n")
    assert.truthy(has(e, "outside its loop"))
  end)
  it("reports a missing terminator", function()
    assert.truthy(has(verr("kernel @k() {\n  %1 = sreg u32 reg=tid.x\n}\n"), "missing terminator"))
    local e = verr("kernel @k() {\n  %1 = if f32 1:i1 {\n    yield 1.0:f32\n  } else {\n  }\n  ret\n}\n")
    assert.truthy(has(e, "missing terminator") or has(e, "yield"))
  end)
  it("reports a wrong address space", function()
    local e = verr("kernel @k(%1: ptr.global.f32) {\n  %2 = ptrcast ptr.shared.f32 %1\n  ret\n}\n")
    assert.truthy(has(e, "wrong address space"))
    e = verr("kernel @k(%1: ptr.local.f32) {\n  %2 = atom f32 %1, 1.0:f32 op=add\n  ret\n}\n")
    assert.truthy(has(e, "wrong address space"))
  end)
  it("reports break outside a loop and yield outside an if", function()
    assert.truthy(has(verr("kernel @k() {\n  break\n  ret\n}\n"), "not inside a loop"))
    assert.truthy(has(verr("kernel @k() {\n  yield 1:i32\n  ret\n}\n"), "yield outside"))
  end)
  it("reports parse errors with the line number", function()
    local ok, e = pcall(IR.parse, "kernel @k() {\n  %1 = frob i32 1:i32\n  ret\n}\n")
    assert.is_false(ok)
    assert.truthy(has(e, "line 2") and has(e, "unknown op 'frob'"))
  end)
end)
