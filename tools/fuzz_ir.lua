-- tools/fuzz_ir.lua: random IR through builder, printer, parser, verifier and
-- code generator, for a bounded time.
--   FUZZ_SECONDS=20 [FUZZ_SEED=n] [FUZZ_PTXAS=1] build/cuteluajit tools/fuzz_ir.lua
-- Three kinds of cases:
--   build   random well-typed op sequences with structured control flow through
--           the builder; must verify, round-trip through text, and compile
--           (ptxas too with FUZZ_PTXAS=1)
--   wild    random opcodes, operands and immediates through cute_ir_op with the
--           builder checks on or off: errors are fine, crashes are not; what the
--           verifier accepts must compile
--   text    printed IR mutated (lines dropped, duplicated, swapped, tokens and
--           numbers changed, garbage) into the parser; same rules
-- Never crashes by design; ends with "N cases" and "N passed, N failed".
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local ffi = require("ffi")
local IR = require("cute.ir")
local cf = require("cute.ffi")
local C = cf.C

local SECONDS = tonumber(os.getenv("FUZZ_SECONDS") or "20")
local SEED = tonumber(os.getenv("FUZZ_SEED") or tostring(os.time()))
local WITH_PTXAS = os.getenv("FUZZ_PTXAS") == "1" and IR.ptxas_path() ~= nil
math.randomseed(SEED)
-- math.random(m[, n]) can return out-of-range integers in JIT-compiled code
-- with LuaJIT 2.1.0-beta3: derive integers from the float form instead.
local rnd, floor = math.random, math.floor
local function R(a, b)
  local x = rnd()
  if not a then return x end
  if not b then a, b = 1, a end
  local v = a + floor(x * (b - a + 1))
  return v > b and b or v
end

local passed, failed, cases = 0, 0, 0
local counts = { build = 0, wild = 0, text = 0, compiled = 0, rejected = 0 }

local function fail(kind, msg, text)
  failed = failed + 1
  if failed <= 10 then
    print(("FAIL [%s] seed=%d case=%d: %s"):format(kind, SEED, cases, msg))
    if text then print(text) end
  end
end

local function pick(t) return t[R(#t)] end

local INT = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64" }
local FLT = { "f16", "bf16", "f32", "f64" }
local NUM = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64" }
local ARCH = { "sm_80", "sm_90a" }

-- ---- well-typed random kernels -------------------------------------------------
local function gen_kernel()
  local m = IR.new()
  -- pools keep explicit counts (no #, table.insert/remove: the JIT of LuaJIT
  -- 2.1.0-beta3 has been seen to leave holes there)
  local pool = {}        -- type name -> {n = count, refs...} usable here
  local scopes = { { n = 0 } } -- per open region: the {type, ref} pairs added
  local function add(t, r)
    assert(type(r) == "number" and r ~= 0, "generator: no value")
    local l = pool[t]
    if not l then l = { n = 0 }; pool[t] = l end
    l.n = l.n + 1
    l[l.n] = r
    local sc = scopes[scopes.n or #scopes]
    sc.n = sc.n + 1
    sc[sc.n] = { t, r }
  end
  scopes.n = 1
  local function open() scopes.n = scopes.n + 1; scopes[scopes.n] = { n = 0 } end
  local function close()
    local sc = scopes[scopes.n]
    scopes[scopes.n] = nil
    scopes.n = scopes.n - 1
    for k = 1, sc.n do
      local e = sc[k]
      local l = pool[e[1]]
      for i = l.n, 1, -1 do
        if l[i] == e[2] then l[i] = l[l.n]; l[l.n] = nil; l.n = l.n - 1; break end
      end
    end
  end
  local function val(t)
    local l = pool[t]
    if l and l.n > 0 and R() < 0.8 then
      local i = R(l.n)
      local v = l[i]
      if v == nil then error(("generator: pool %s[%d] of %d is nil"):format(t, i, l.n)) end
      return v
    end
    if t == "i1" then return m:k("i1", R(0, 1)) end
    if t:sub(1, 1) == "f" or t == "bf16" then return m:k(t, (R() - 0.5) * 100) end
    return m:k(t, R(-100, 100))
  end
  local ptrs, vars = {}, {}
  local dev
  if R() < 0.3 then -- a device function to call (inlining, debug scopes)
    dev = m:func("dev", "device", "f32")
    m:loc("dev.lua", 7)
    local a, b = m:param("f32", "a"), m:param("i32", "b")
    local v = m:fma(a, m:cvt("f32", b), a)
    if R() < 0.5 then
      m:if_(m:lt(b, m:k("i32", 0)))
      m:ret(m:neg(v))
      m:end_()
    end
    m:ret(m:sqrt(v, { math = "fast" }))
  end
  m:func("fz", "kernel")
  m:loc("fuzz.lua", 1)
  local np = R(1, 4)
  for i = 1, np do
    local et = pick({ "f32", "i32", "u32", "f16", "u8", "f64", "u64", "bf16" })
    local p = m:param("ptr.global." .. et, "p" .. i, { noalias = R() < 0.5, readonly = false, align = pick({ 0, 4, 16 }) })
    ptrs[#ptrs + 1] = { et, p }
  end
  local ns = R(0, 3)
  for i = 1, ns do local t = pick(NUM); add(t, m:param(t, "s" .. i)) end
  -- a by-value parameter (bytes<N,A>, grid_constant), read through its generic address
  local blob
  if R() < 0.2 then
    local al = pick({ 4, 8, 16, 64 })
    blob = m:param(m:bytes(al * R(1, 4), al), "blob", { grid_constant = true })
  end
  if R() < 0.3 then m:launch_bounds(pick({ 32, 128, 256, 1024 }), R(0, 4)) end
  add("u32", m:sreg("tid.x"))
  local depth = 0
  local ops = 0
  local nops = R(5, 60)
  local loops = 0
  local budget = { ["if"] = 0 }
  while ops < nops do
    ops = ops + 1
    m:loc("fuzz.lua", ops + 1)
    local c = R(1, 24)
    if c <= 5 then -- arithmetic
      local t = pick(NUM)
      local isf = t:find("f") ~= nil
      local op = pick(isf and { "add", "sub", "mul", "div", "min", "max", "fma", "neg", "abs" }
        or { "add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr", "not", "neg", "mulhi" })
      if op == "mulhi" and (t == "i8" or t == "u8") then op = "add" end
      if op == "abs" and t:sub(1, 1) == "u" then op = "neg" end
      local r
      if op == "fma" then r = m:fma(val(t), val(t), val(t))
      elseif op == "neg" or op == "abs" or op == "not" then r = m:emit(op, nil, { val(t) })
      else r = m:emit(op, nil, { val(t), val(t) }) end
      add(t, r)
    elseif c <= 7 then -- compare / select
      local t = pick(NUM)
      local cc = m:emit(pick({ "eq", "ne", "lt", "le", "gt", "ge" }), nil, { val(t), val(t) })
      add("i1", cc)
      local t2 = pick(NUM)
      add(t2, m:select(cc, val(t2), val(t2)))
    elseif c <= 9 then -- conversions
      local from, to = pick(NUM), pick(NUM)
      local rnd = nil
      if R() < 0.3 and (from:find("f") or to:find("f")) then rnd = pick({ "rn", "rz", "rm", "rp" }) end
      add(to, m:cvt(to, val(from), rnd))
      if R() < 0.2 then add("u32", m:bitcast("u32", val("f32"))) end
    elseif c == 10 then -- math
      local t = pick(FLT)
      local f = pick({ "sqrt", "rsqrt", "rcp", "exp2", "log2", "sin", "cos", "tanh", "floor", "ceil", "trunc", "round", "exp", "log", "erf" })
      local o = nil
      if f ~= "floor" and f ~= "ceil" and f ~= "trunc" and f ~= "round" then o = { math = R() < 0.8 and "fast" or "accurate" } end
      add(t, m:emit(f, nil, { val(t) }, o))
    elseif c <= 13 and #ptrs > 0 then -- memory
      local p = pick(ptrs)
      local idx = m:cvt("i32", m:and_(val("u32"), m:k("u32", 255)))
      local a = m:gep(p[2], idx)
      local hint = R() < 0.3 and pick({ "nc", "cs", "cg", "volatile" }) or nil
      if R() < 0.5 then add(p[1], m:load(a, { hint = hint }))
      else m:store(a, val(p[1]), { hint = hint ~= "nc" and hint or nil }) end
    elseif c == 14 and #ptrs > 0 then -- atomics
      local cands = {}
      for _, p in ipairs(ptrs) do if p[1] == "f32" or p[1] == "i32" or p[1] == "u32" or p[1] == "u64" or p[1] == "f64" then cands[#cands + 1] = p end end
      if #cands > 0 then
        local p = pick(cands)
        local op = (p[1] == "f32" or p[1] == "f64") and "add" or pick({ "add", "min", "max", "and", "or", "xor", "exch" })
        add(p[1], m:atom(p[2], val(p[1]), { op = op, scope = pick({ "gpu", "cta", "sys" }) }))
      end
    elseif c == 15 then -- warp ops
      local t = pick({ "u32", "i32", "f32", "u64", "f64" })
      add(t, m:shfl(val(t), m:and_(val("u32"), m:k("u32", 31)), m:k("u32", -1), { mode = pick({ "idx", "up", "down", "bfly" }), width = pick({ 32, 16, 8 }) }))
      add("u32", m:vote(m:k("u32", -1), val("i1"), { mode = "ballot" }))
    elseif c == 16 then -- bits / sregs
      add("u32", m:popc(val(pick({ "u32", "u64", "i32" }))))
      add("u32", m:sreg(pick({ "laneid", "ctaid.x", "ntid.y", "warpid", "clock" })))
    elseif c == 17 and depth < 4 then -- if
      local t = R() < 0.5 and pick(NUM) or nil
      local r = m:if_(val("i1"), t)
      open(); depth = depth + 1
      local inner = R(1, 3)
      for _ = 1, inner do add("i32", m:add(val("i32"), val("i32"))) end
      if t then m:yield(val(t)) end
      close()
      if t or R() < 0.5 then
        m:else_()
        open()
        if R() < 0.3 then add("u32", m:mul(val("u32"), val("u32"))) end
        if t then m:yield(val(t)) end
        close()
      end
      m:end_()
      depth = depth - 1
      if t then add(t, r) end
    elseif c == 18 and depth < 3 and loops < 3 then -- counted loop with a carried var
      loops = loops + 1
      local v = m:var("f32", m:k("f32", 0))
      vars[#vars + 1] = v
      local iv = m:for_(m:k("i32", 0), m:k("i32", R(1, 8)), m:k("i32", 1), pick({ 0, 2, "full", "disable" }))
      open(); depth = depth + 1
      add("i32", iv)
      m:vset(v, m:add(m:vget(v), m:cvt("f32", iv)))
      if R() < 0.2 then
        m:if_(m:gt(iv, m:k("i32", 3)))
        m:break_()
        m:end_()
      end
      close(); depth = depth - 1
      m:end_()
      add("f32", m:vget(v))
    elseif c == 19 and depth < 3 and loops < 3 then -- while loop
      loops = loops + 1
      local k = m:var("i32", m:k("i32", 0))
      m:while_()
      m:do_(m:lt(m:vget(k), m:k("i32", R(1, 4))))
      m:vset(k, m:add(m:vget(k), m:k("i32", 1)))
      m:end_()
      add("i32", m:vget(k))
    elseif c == 20 and dev then
      add("f32", m:call(dev, val("f32"), val("i32")))
    elseif c == 20 and R() < 0.3 then
      m:bar()
    elseif c == 21 then -- vectors
      local t = pick({ "f32x4", "u32x2", "f16x2", "i16x4" })
      local el = t:match("^(%a+%d+)x")
      local v = m:emit("vec", t, { val(el) })
      add(el, m:extract(m:add(v, v), { lane = 0 }))
    elseif c == 22 then -- fragments: built, sliced, carried through a loop, through asm
      local ft = pick({ { "f32", "f" }, { "u32", "r" }, { "i32", "r" }, { "f64", "d" }, { "u64", "l" }, { "f16x2", "r" } })
      local el, letter = ft[1], ft[2]
      local n = R() < 0.2 and pick({ 64, 128, 256 }) or R(1, 16)
      local F = m:array(el, n)
      local scal = el:match("^(%a+%d+)x")
      local function elem() return scal and m:emit("vec", el, { val(scal) }) or val(el) end
      local fr
      if R() < 0.5 then fr = m:emit("vec", F, { elem() })
      else
        local es = {}
        for k = 1, n do es[k] = elem() end
        fr = m:emit("vec", F, es)
      end
      if depth < 3 and loops < 3 and R() < 0.5 then
        loops = loops + 1
        local v = m:var(F, fr)
        m:for_(m:k("i32", 0), m:k("i32", R(1, 4)), m:k("i32", 1))
        local cur = m:insert(m:vget(v), elem(), { lane = R(0, n - 1) })
        local cons = {}
        for k = 1, n do cons[k] = "=" .. letter end
        for k = 0, n - 1 do cons[n + k + 1] = tostring(k) end
        m:vset(v, m:asm(F, "// fragment $0", table.concat(cons, ","), cur))
        m:end_()
        fr = m:vget(v)
      end
      local x = m:extract(fr, { lane = R(0, n - 1) })
      if scal then add(scal, m:extract(x, { lane = R(0, 1) })) else add(el, x) end
    elseif c == 23 and blob then -- by-value parameter
      local p = m:ptrcast("ptr.generic.u32", m:param_addr(blob))
      add("u32", m:load(p))
    else
      local t = pick(NUM)
      add(t, m:cvt(t, val("u32")))
    end
  end
  if R() < 0.1 then m:printf("v %d\n", m:cvt("i32", val("i32"))) end
  m:ret()
  return m
end

local function check_roundtrip(kind, m)
  local txt = m:text()
  local ok, m2 = pcall(IR.parse, txt)
  if not ok then return fail(kind, "parse(print) failed: " .. tostring(m2), txt) end
  local txt2 = m2:text()
  if txt2 ~= txt then return fail(kind, "parse(print) ~= print", txt .. "\n---- reparsed:\n" .. txt2) end
  return true
end

local function check_compile(kind, m)
  local ptxas = WITH_PTXAS and R() < 0.1
  -- LLVM-only compiles also go to older targets (ptxas 13 starts at sm_75)
  local arch = ptxas and pick(ARCH) or pick({ "sm_80", "sm_90a", "sm_80", "sm_90a", "sm_60", "sm_70", "sm_75", "sm_86", "sm_89" })
  local r, e, code = m:compile { arch = arch, opt_level = R(0, 3), use_ptxas = ptxas, lineinfo = R() < 0.2 }
  if r then counts.compiled = counts.compiled + 1 return true end
  -- accurate math without libdevice is a clean, expected refusal
  if code == C.CUTE_E_UNSUPPORTED then return true end
  -- a few arch limits are reported as codegen errors on purpose
  if e and e:find("needs sm_") then return true end
  fail(kind, ("verified IR did not compile for %s: %s"):format(arch, e), m:text())
end

-- ---- wild: random opcodes and operands --------------------------------------------
local function wild()
  local m = IR.new()
  if R() < 0.5 then C.cute_ir_set_checks(m.h, 0) end
  m:func("w", R() < 0.9 and "kernel" or "device")
  local refs = {}
  for i = 1, R(0, 3) do
    local ok, r = pcall(m.param, m, pick({ "i32", "f32", "ptr.global.f32", "ptr.shared.u32", "u64", "f16x2" }), "p" .. i)
    if ok then refs[#refs + 1] = r end
  end
  local types = { 0, C.CUTE_T_I32, C.CUTE_T_F32, C.CUTE_T_I1, C.CUTE_T_U64, C.CUTE_T_VOID, C.CUTE_T_F16, -1, 999 }
  for _ = 1, R(1, 40) do
    if R() < 0.3 then refs[#refs + 1] = C.cute_ir_const_int(m.h, pick({ C.CUTE_T_I32, C.CUTE_T_U32, C.CUTE_T_I1, C.CUTE_T_F32 }), R(-5, 5)) end
    local op = R(-2, C.CUTE_IR_OP_COUNT_ + 2)
    local n = R(0, 4)
    local args = ffi.new("int32_t[5]")
    for i = 0, n - 1 do
      args[i] = #refs > 0 and R() < 0.9 and refs[R(#refs)] or R(-10, 100)
    end
    local r = C.cute_ir_op(m.h, op, pick(types), n, args, R(-3, 40), R(-3, 40))
    if r ~= 0 then refs[#refs + 1] = r end
  end
  if R() < 0.3 then -- inline PTX with random templates and constraints
    local TP = { "mov.b32 ", "$0", "$1", "$2", "${1}", "${0:x}", "$$", ", ", ";", "%laneid", "$", "{", "}", " " }
    local CP = { "=r", "=h", "=l", "=f", "=d", "=b", "r", "h", "l", "f", "d", "b", "n", "~{memory}", "", "=q", "=&r" }
    local tp, cp = {}, {}
    for i = 1, R(1, 6) do tp[i] = pick(TP) end
    for i = 1, R(0, 4) do cp[i] = pick(CP) end
    local n = R(0, 3)
    local args = ffi.new("int32_t[4]")
    for i = 0, n - 1 do args[i] = #refs > 0 and refs[R(#refs)] or C.cute_ir_const_int(m.h, C.CUTE_T_U32, 1) end
    local r = C.cute_ir_asm(m.h, pick(types), table.concat(tp), table.concat(cp, ","), n, args)
    if r ~= 0 then refs[#refs + 1] = r end
  end
  if R() < 0.7 then C.cute_ir_ret(m.h, 0) end
  local txt = m:text() -- printing never fails, even for broken IR
  assert(type(txt) == "string")
  if C.cute_ir_status(m.h, nil) == 0 and m:verify() then
    if check_roundtrip("wild", m) then check_compile("wild", m) end
  else
    counts.rejected = counts.rejected + 1
  end
  return txt
end

-- ---- text mutation ------------------------------------------------------------------
local corpus = {}
for _, f in ipairs({ "vadd", "reduce", "loops", "ifelse", "fragment" }) do
  local h = io.open("spec/golden/" .. f .. ".ir", "rb")
  if h then corpus[#corpus + 1] = h:read("*a"); h:close() end
end

local TOKENS = { "%1", "%99", "0:i32", "1.5:f32", "-1:i64", "0x7fc00000:f32", "{", "}", "} else {", "} do %2 {", "ret",
  "yield %3", "break", "add", "load", "store", "ptr.global.f32", "u32", "hint=nc", "align=3", "mode=bfly", "loc \"x\" 5",
  "\"", "\\", "=", ",", "@", "fn=@nope", "unroll=full", "reg=laneid", "width=7", "%2 = ", "kernel @z() {", "func @y(%1: f32) -> f32 {",
  "99999999999999999999:i32", "1e400:f64", "-0:u8", "nan:f32", "ptr.shared.ptr.global.f32", "f32x3", "bf16x8",
  "f32[128]", "f32[0]", "f16x2[4]", "u32[257]", "bytes<128,64>", "bytes<0,3>", "grid_constant", "param.addr", "lane=128",
  "\"=f,0\"", "cons=\"=f,=f,0,1,l\"" }

local function mutate(txt)
  local lines = {}
  for l in (txt .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  for _ = 1, R(1, 4) do
    local k = R(1, 7)
    local i = R(#lines)
    if k == 1 then table.remove(lines, i)
    elseif k == 2 then table.insert(lines, i, lines[R(#lines)])
    elseif k == 3 then local j = R(#lines); lines[i], lines[j] = lines[j], lines[i]
    elseif k == 4 then lines[i] = (lines[i] or ""):gsub("%d+", function(d) return R() < 0.5 and tostring(R(0, 60)) or d end)
    elseif k == 5 then
      local l = lines[i] or ""
      local p = R(0, #l)
      lines[i] = l:sub(1, p) .. pick(TOKENS) .. l:sub(p + 1)
    elseif k == 6 then
      local l = lines[i] or ""
      local words = {}
      for w in l:gmatch("%S+") do words[#words + 1] = w end
      if #words > 0 then words[R(#words)] = pick(TOKENS) end
      lines[i] = (l:match("^%s*") or "") .. table.concat(words, " ")
    else
      local l = lines[i] or ""
      local p = R(0, #l)
      lines[i] = l:sub(1, p) .. string.char(R(0, 255)) .. l:sub(p + 2)
    end
  end
  return table.concat(lines, "\n")
end

local function text_case(src)
  local txt = mutate(src)
  local checks = R() < 0.5
  local ok, m = pcall(IR.parse, txt, checks)
  if not ok then counts.rejected = counts.rejected + 1 return end
  m:text()
  if m:verify() then
    if check_roundtrip("text", m) then check_compile("text", m) end
  else
    counts.rejected = counts.rejected + 1
  end
end

-- ---- main loop -------------------------------------------------------------------------
local t_end = os.clock() + SECONDS
while os.clock() < t_end do
  cases = cases + 1
  local kind = R(1, 10)
  local ok, err = xpcall(function()
    if kind <= 4 then
      counts.build = counts.build + 1
      local m = gen_kernel()
      local st, msg = m:status()
      if not st then return fail("build", "builder rejected well-typed IR: " .. msg, m:text()) end
      local v, vm = m:verify()
      if not v then return fail("build", "verifier rejected builder IR: " .. vm, m:text()) end
      if check_roundtrip("build", m) then check_compile("build", m) end
      corpus[#corpus + 1] = m:text()
      if #corpus > 64 then table.remove(corpus, 5) end
    elseif kind <= 6 then
      counts.wild = counts.wild + 1
      wild()
    else
      counts.text = counts.text + 1
      text_case(pick(corpus))
    end
  end, os.getenv("FUZZ_TRACE") and debug.traceback or function(e) return e end)
  if not ok then
    -- Lua errors from the generator itself (not crashes): count the builder's
    -- own refusals of generated IR as failures only for the 'build' kind
    if kind <= 4 then fail("build", "generator error: " .. tostring(err)) end
  else
    passed = passed + 1
  end
  if cases % 50 == 0 then collectgarbage() end
end

print(("fuzz_ir: %d cases in %.0f s (seed %d): build %d, wild %d, text %d; compiled %d, rejected %d%s")
  :format(cases, SECONDS, SEED, counts.build, counts.wild, counts.text, counts.compiled, counts.rejected,
    WITH_PTXAS and ", ptxas on" or ""))
print(("%d passed, %d failed"):format(passed, failed))
collectgarbage()
collectgarbage()
os.exit(failed == 0 and 0 or 1, true) -- close the state: finalizers free every context
