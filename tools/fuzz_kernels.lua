-- Kernel fuzzer (issue 8): random small kernels written as Lua text, with
-- if/elseif/else, and/or/not, comparisons, while/for/repeat loops with break,
-- early return, locals assigned in branches and loops, and integer arithmetic
-- on three scalar parameters.  For each program:
--   * the tracer (through the source front end) either rejects it with an error
--     located at a line of the program, or
--   * its IR (k:ir, traced once with runtime parameters) is run by a small IR
--     interpreter (below) for several random parameter values, and the stores
--     it makes must equal those of the same program run as plain Lua.
--
--   build/cuteluajit tools/fuzz_kernels.lua        FUZZ_SECONDS (default 10), FUZZ_SEED
-- FUZZ_LAUNCH=1 also launches each program for real (one thread) with the same
-- parameters, on the CPU target (CUTE_TARGET=cpu, or no GPU) or on the GPU, and
-- its stores must equal plain Lua's too; FUZZ_RESULTS=file writes every launch's
-- stores, one line each, so that two runs with the same FUZZ_SEED and
-- FUZZ_PROGRAMS (a fixed number of programs instead of FUZZ_SECONDS) can be
-- compared: GPU against CPU target (tools/gpu_fuzz.sh; docs/FUZZ.md).
-- The last line is "N passed, N failed".
local cute = require("cute")
local bit = require("bit")

local SECONDS = tonumber(os.getenv("FUZZ_SECONDS") or "10")
local SEED = tonumber(os.getenv("FUZZ_SEED") or tostring(os.time()))
local VERBOSE = os.getenv("FUZZ_VERBOSE")
local NOUT = 16
local LAUNCH = (os.getenv("FUZZ_LAUNCH") or "") ~= "" and os.getenv("FUZZ_LAUNCH") ~= "0"
local PROGRAMS = tonumber(os.getenv("FUZZ_PROGRAMS") or "")
local RESULTS = os.getenv("FUZZ_RESULTS")
local UNSET = -7777 -- what a launch's Out holds where the program stores nothing

---------------------------------------------------------------------------
-- random numbers (our own generator: the same seed gives the same programs)
---------------------------------------------------------------------------
local rs = SEED % 2147483647
if rs <= 0 then rs = rs + 2147483646 end
local function rnd(n) -- 1..n
  rs = (rs * 16807) % 2147483647
  return rs % n + 1
end
local function pick(t) return t[rnd(#t)] end
local function chance(p) return rnd(1000) <= p * 1000 end

---------------------------------------------------------------------------
-- program generator
---------------------------------------------------------------------------
-- Values stay far inside i32: every assignment is reduced `% 1009` (floored,
-- the documented rule for traced and Lua values alike), `*` only takes small
-- constants, loops run a few iterations.
local function gen_program()
  local out = {}
  local ind = "  "
  local function emit(s) out[#out + 1] = ind .. s end
  local locals = { "x1", "x2", "x3" }
  local blocals = { "b1" } -- boolean locals
  local nblock = 0
  local loopvars = {}
  local bigvars = {}
  local nstore = 4
  local depth_loops = 0

  local atom_pool = function()
    local t = { "p1", "p2", "p3" }
    for _, l in ipairs(locals) do t[#t + 1] = l end
    -- a loop variable near the ends of i32 enters arithmetic reduced (i32 would wrap, Lua not)
    for _, l in ipairs(loopvars) do t[#t + 1] = bigvars[l] and "(" .. l .. " % 1009)" or l end
    return t
  end

  local function atom()
    if chance(0.3) then
      local c = rnd(21) - 8
      return c < 0 and "(" .. c .. ")" or tostring(c)
    end
    return pick(atom_pool())
  end

  local expr
  expr = function(d)
    if d <= 0 or chance(0.35) then return atom() end
    local k = rnd(5)
    if k == 1 then return "(" .. expr(d - 1) .. " + " .. expr(d - 1) .. ")" end
    if k == 2 then return "(" .. expr(d - 1) .. " - " .. expr(d - 1) .. ")" end
    if k == 3 then return "(" .. expr(d - 1) .. " * (" .. (rnd(7) - 3) .. "))" end
    if k == 4 then return "(" .. expr(d - 1) .. " % " .. rnd(9) .. ")" end
    return "(-(" .. expr(d - 1) .. "))"
  end

  local cond
  cond = function(d)
    if d <= 0 or chance(0.4) then
      local op = pick({ "<", "<=", ">", ">=", "==", "~=" })
      return expr(1) .. " " .. op .. " " .. expr(1)
    end
    if chance(0.15) then return pick(blocals) end
    if chance(0.05) then return "(" .. pick(blocals) .. pick({ " == ", " ~= " }) .. "(" .. cond(0) .. "))" end
    if chance(0.1) then return "not " .. pick(blocals) end
    local k = rnd(os.getenv("FUZZ_NO_TERNARY") and 3 or 4)
    if k == 1 then return "(" .. cond(d - 1) .. " and " .. cond(d - 1) .. ")" end
    if k == 2 then return "(" .. cond(d - 1) .. " or " .. cond(d - 1) .. ")" end
    if k == 3 then return "not (" .. cond(d - 1) .. ")" end
    -- a boolean in the middle of and/or: (a and b or c)
    return "(" .. cond(d - 1) .. " and " .. cond(d - 1) .. " or " .. cond(d - 1) .. ")"
  end

  local block
  -- the body of a numeric loop over variable v, then its `end`
  local function loop_body(v, d)
    loopvars[#loopvars + 1] = v
    depth_loops = depth_loops + 1
    block(d - 1, true)
    depth_loops = depth_loops - 1
    loopvars[#loopvars] = nil
    emit("end")
  end
  local stat
  stat = function(d, in_loop)
    local k = rnd(in_loop and 11 or 9)
    if d <= 0 then k = rnd(2) end
    if k <= 3 then
      local kk = rnd(6)
      if kk == 1 then
        emit(pick(blocals) .. " = " .. pick({ "true", "false", cond(1) }))
      elseif kk == 2 then
        -- the value ternary: c and x or y (x a number: always true in Lua)
        emit(pick(locals) .. " = (" .. cond(1) .. " and " .. expr(1) .. " or " .. expr(1) .. ") % 1009")
      elseif kk == 3 and d > 0 then
        -- a block local, assigned in nested statements, then used
        nblock = nblock + 1
        local y = "y" .. nblock
        emit("local " .. y .. " = (" .. expr(1) .. ") % 1009")
        locals[#locals + 1] = y
        stat(d - 1, in_loop)
        table.remove(locals)
        emit(pick(locals) .. " = (" .. pick(locals) .. " + " .. y .. ") % 1009")
      elseif kk == 5 and chance(0.5) then
        -- a multiple assignment (a swap, or two values at once)
        local a, b = pick(locals), pick(locals)
        if chance(0.5) then emit(a .. ", " .. b .. " = " .. b .. ", " .. a)
        else emit(a .. ", " .. b .. " = (" .. expr(1) .. ") % 1009, (" .. expr(1) .. ") % 1009") end
      elseif kk == 6 and d > 0 and chance(0.3) then
        -- a local shadowing an outer one inside a block
        local x = pick(locals)
        emit("do")
        emit("  local " .. x .. " = (" .. x .. " + 1) % 1009")
        stat(d - 1, in_loop)
        emit("  Out[4] = " .. x)
        emit("end")
      elseif kk == 4 then
        emit("for c" .. rnd(1000) .. " in cute.range_constexpr(" .. rnd(3) .. ") do " .. pick(locals) .. " = (" ..
          expr(1) .. " + 1) % 1009 end")
      else
        emit(pick(locals) .. " = (" .. expr(2) .. ") % 1009")
      end
    elseif k == 4 then
      local slot = rnd(NOUT - 6) + 5
      emit("Out[" .. slot .. "] = (" .. expr(2) .. ") % 1009")
    elseif k == 5 then
      emit("if " .. cond(2) .. " then")
      block(d - 1, in_loop)
      local ne = rnd(3) - 1
      for _ = 1, ne do
        if chance(0.5) then
          emit("elseif " .. cond(1) .. " then")
          block(d - 1, in_loop)
        end
      end
      if chance(0.5) then
        emit("else")
        block(d - 1, in_loop)
      end
      emit("end")
    elseif k == 6 and depth_loops < 2 then
      -- numeric for: bounds from parameters or constants, steps never 0; at
      -- times near the ends of i32 (a loop must stop there, not wrap)
      local v = "j" .. (#loopvars + 1)
      local a = pick({ "p1", "p2", tostring(rnd(7) - 3), "p1 % 4" })
      local b = pick({ "p2", "p3", tostring(rnd(9) - 2), "p3 % 5 + 2" })
      local step = pick({ "", ", 1", ", -1", ", 2", ", -2", ", p3 % 3 + 1", ", -(p1 % 3 + 1)" })
      if chance(0.15) then
        a, b = "2147483647 - p3 % 9", "2147483647"
        step = pick({ "", ", 3", ", 536870912", ", p2 % 4 + 1" })
        bigvars[v] = true
      elseif chance(0.1) then
        a, b = "-2147483647 + p3 % 9", "-2147483648"
        step = pick({ ", -1", ", -5", ", -536870912" })
        bigvars[v] = true
      end
      emit("for " .. v .. " = " .. a .. ", " .. b .. step .. " do")
      loop_body(v, d)
    elseif k == 7 and depth_loops < 2 then
      -- cute.range: Python's range
      local v = "j" .. (#loopvars + 1)
      local a = pick({ "p1", "0", "p3 % 6" })
      local b = pick({ "p2", "5", "p3 % 7" })
      local step = pick({ "", ", 1", ", 2", ", -1", ", p2 % 2 + 1" })
      if chance(0.15) then
        a, b = "2147483600 + p1 % 7", "2147483647"
        step = pick({ ", 1", ", 7", ", 268435456 + p2 % 3" })
        bigvars[v] = true
      end
      emit("for " .. v .. " in cute.range(" .. a .. ", " .. b .. step .. ") do")
      loop_body(v, d)
    elseif k == 8 and depth_loops < 2 then
      -- while with a guaranteed end: a counter in the condition
      local w = "w" .. rnd(1000)
      emit("local " .. w .. " = 0")
      emit("while " .. w .. " < " .. pick({ "3", "p1 % 4", "p2" }) .. (chance(0.5) and (" and " .. cond(1)) or "") .. " do")
      emit("  " .. w .. " = " .. w .. " + 1")
      depth_loops = depth_loops + 1
      block(d - 1, true)
      depth_loops = depth_loops - 1
      emit("end")
    elseif k == 9 and depth_loops < 2 then
      local r = "r" .. rnd(1000)
      emit("local " .. r .. " = " .. pick({ "0", "p1 - p1" }))
      emit("repeat")
      emit("  " .. r .. " = " .. r .. " + 1")
      depth_loops = depth_loops + 1
      block(d - 1, true)
      depth_loops = depth_loops - 1
      emit("until " .. r .. " >= " .. pick({ "3", "p2 % 4" }) .. (chance(0.5) and (" or " .. cond(1)) or ""))
    elseif k == 10 then
      emit("if " .. cond(1) .. " then break end")
    elseif k == 11 then
      emit("if " .. cond(1) .. " then Out[" .. (NOUT - 1) .. "] = 7; return end")
    else
      emit(pick(locals) .. " = (" .. expr(2) .. ") % 1009")
    end
  end

  block = function(d, in_loop)
    local save = ind
    ind = ind .. "  "
    for _ = 1, rnd(3) do stat(d, in_loop) end
    ind = save
  end

  out[#out + 1] = "return function(Out, p1, p2, p3)"
  emit("local x1, x2, x3 = " .. pick({ "0", "p1", "1" }) .. ", " .. pick({ "p2 % 5", "3", "0" }) .. ", " ..
    pick({ "p3", "2", "0" }))
  emit("local b1 = " .. pick({ "false", "true", "p1 > p2" }))
  for _ = 1, rnd(4) + 1 do stat(3, false) end
  emit("Out[0] = x1")
  emit("Out[1] = x2")
  emit("Out[2] = x3")
  emit("if b1 then Out[3] = 1 else Out[3] = 0 end")
  out[#out + 1] = "end"
  return table.concat(out, "\n")
end

---------------------------------------------------------------------------
-- IR interpreter (the ops the generated kernels use; docs/IR.md)
---------------------------------------------------------------------------
local TYPES = {
  i1 = { bits = 1, signed = false }, i8 = { bits = 8, signed = true }, i16 = { bits = 16, signed = true },
  i32 = { bits = 32, signed = true }, i64 = { bits = 64, signed = true },
  u8 = { bits = 8, signed = false }, u16 = { bits = 16, signed = false }, u32 = { bits = 32, signed = false },
  u64 = { bits = 64, signed = false },
}

-- wrap an integer to type t (64-bit types: values here stay small, kept exact in doubles)
local function wrap(t, x)
  local ti = TYPES[t]
  if not ti then error("interp: unsupported type " .. tostring(t)) end
  if ti.bits == 64 then
    if x >= 2 ^ 53 or x <= -2 ^ 53 then error("interp: 64-bit value out of the exact range") end
    return x
  end
  local m = 2 ^ ti.bits
  x = x % m
  if ti.signed and x >= m / 2 then x = x - m end
  return x
end

-- parse the IR text into a tree: { op, res, type, args = {operand}, kv = {}, body, elseb, cond }
local function parse_ir(text)
  local lines = {}
  for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
  local pos = 1
  local params = {}
  local function operand(s)
    local r = s:match("^%%(%d+)$")
    if r then return { ref = tonumber(r) } end
    local v, t = s:match("^(.-):(%w+)$")
    if v then
      local x = tonumber(v)
      if not x then error("interp: bad constant " .. s) end
      return { const = x, t = t }
    end
    error("interp: bad operand " .. s)
  end
  local block
  local function inst(l)
    l = l:gsub("^%s+", "")
    local res, rest = l:match("^%%(%d+) = (.*)$")
    local s = rest or l
    local opens = s:sub(-1) == "{"
    if opens then s = s:gsub("%s*{$", "") end
    local op, tail = s:match("^([%w%.]+)%s*(.*)$")
    local n = { op = op, res = res and tonumber(res), args = {}, kv = {} }
    if res then
      local t, t2 = tail:match("^([%w%.]+)%s*(.*)$")
      n.type, tail = t, t2
    end
    -- key=value immediates (strings quoted)
    tail = tail:gsub('(%w+)=("[^"]*")', function(k, v) n.kv[k] = v; return "" end)
    tail = tail:gsub("(%w+)=([%w%.%-]+)", function(k, v) n.kv[k] = v; return "" end)
    for a in tail:gmatch("[^,%s]+") do n.args[#n.args + 1] = operand(a) end
    if opens then
      if op == "while" then
        n.cond, n.condref = block("do")
        n.body = block("end")
      else
        local b, term = block("any")
        n.body = b
        if term == "else" then n.elseb = block("end") end
      end
    end
    return n
  end
  block = function(want)
    local out = {}
    while pos <= #lines do
      local l = lines[pos]
      pos = pos + 1
      local t = l:gsub("^%s+", "")
      if t == "}" then return out, "end" end
      if t == "} else {" then return out, "else" end
      local c = t:match("^} do %%(%d+) {$")
      if c then return out, tonumber(c) end
      if not t:match("^loc ") and t ~= "" then out[#out + 1] = inst(t) end
    end
    return out, "eof"
  end
  -- header: kernel @name(%1: type ..., %2: ...) {
  local head = lines[1]
  for ref, ty in head:gmatch("%%(%d+): ([%w%.]+)") do params[#params + 1] = { ref = tonumber(ref), type = ty } end
  pos = 2
  local body = block("end")
  return { params = params, body = body }
end

local Break, Ret, Trap = {}, {}, {}

-- args: the kernel's parameters (pointers as {base =, off =}); args.sreg: special
-- register values by name (tid.x ...), 0 when absent
local function run_ir(prog, args, mem)
  local V = {}
  for i, p in ipairs(prog.params) do V[p.ref] = args[i] end
  local vars = {}
  local function val(o)
    if o.ref then
      local v = V[o.ref]
      if v == nil then error("interp: %" .. o.ref .. " used before it is defined") end
      return v
    end
    return o.const
  end
  local exec
  local function cmp(op, t, a, b)
    local ti = TYPES[t]
    if ti and not ti.signed then
      if a < 0 then a = a + 2 ^ ti.bits end
      if b < 0 then b = b + 2 ^ ti.bits end
    end
    if op == "eq" then return a == b end
    if op == "ne" then return a ~= b end
    if op == "lt" then return a < b end
    if op == "le" then return a <= b end
    if op == "gt" then return a > b end
    return a >= b
  end
  local function optype(n)
    local a = n.args[1]
    if a.ref then return V.types[a.ref] end
    return a.t
  end
  V.types = {}
  for _, p in ipairs(prog.params) do V.types[p.ref] = p.type end
  local function set(n, x)
    V[n.res] = x
    V.types[n.res] = n.type
  end
  local steps = 0
  exec = function(list)
    for _, n in ipairs(list) do
      steps = steps + 1
      if steps > 2e6 then error("interp: too many steps (a loop that does not end?)") end
      local op = n.op
      local a = n.args[1] and val(n.args[1])
      local b = n.args[2] and val(n.args[2])
      if op == "add" then set(n, wrap(n.type, a + b))
      elseif op == "sub" then set(n, wrap(n.type, a - b))
      elseif op == "mul" then set(n, wrap(n.type, a * b))
      elseif op == "div" then
        if b == 0 then error("interp: division by zero") end
        local q = a / b
        set(n, wrap(n.type, q >= 0 and math.floor(q) or math.ceil(q)))
      elseif op == "rem" then
        if b == 0 then error("interp: remainder by zero") end
        set(n, wrap(n.type, math.fmod(a, b)))
      elseif op == "min" then set(n, math.min(a, b))
      elseif op == "max" then set(n, math.max(a, b))
      elseif op == "neg" then set(n, wrap(n.type, -a))
      elseif op == "abs" then set(n, wrap(n.type, math.abs(a)))
      elseif op == "and" or op == "or" or op == "xor" then
        local f = op == "and" and bit.band or op == "or" and bit.bor or bit.bxor
        if n.type == "i1" then set(n, f(a, b) % 2)
        elseif TYPES[n.type].bits <= 32 then set(n, wrap(n.type, f(a, b)))
        else error("interp: 64-bit bit op") end
      elseif op == "not" then
        if n.type == "i1" then set(n, 1 - a) else set(n, wrap(n.type, bit.bnot(a))) end
      elseif op == "shl" then set(n, wrap(n.type, bit.lshift(a, b)))
      elseif op == "shr" then
        set(n, wrap(n.type, TYPES[n.type].signed and bit.arshift(a, b) or bit.rshift(a, b)))
      elseif op == "eq" or op == "ne" or op == "lt" or op == "le" or op == "gt" or op == "ge" then
        set(n, cmp(op, optype(n), a, b) and 1 or 0)
      elseif op == "select" then set(n, a ~= 0 and b or val(n.args[3]))
      elseif op == "cvt" or op == "bitcast" then
        if n.type == "i1" then set(n, a ~= 0 and 1 or 0)
        else
          local from = TYPES[optype(n)]
          if from and not from.signed and a < 0 then a = a + 2 ^ from.bits end
          set(n, wrap(n.type, a))
        end
      elseif op == "var" then
        V[n.res] = { v = a }
        V.types[n.res] = n.type
      elseif op == "vget" then
        local cell = V[n.args[1].ref]
        if cell.v == nil then error("interp: vget of a variable never set") end
        set(n, cell.v)
      elseif op == "vset" then
        V[n.args[1].ref].v = b
      elseif op == "gep" then
        set(n, { base = a.base, off = a.off + b })
      elseif op == "store" then
        mem[a.base][a.off] = b
      elseif op == "load" then
        local x = mem[a.base][a.off]
        if x == nil then error("interp: load of an unwritten element") end
        set(n, x)
      elseif op == "atom" and n.kv.op == "add" then
        local old = mem[a.base][a.off] or 0
        mem[a.base][a.off] = wrap(n.type, old + b)
        set(n, old)
      elseif op == "sreg" then set(n, n.kv.reg and tonumber(args.sreg and args.sreg[n.kv.reg]) or 0)
      elseif op == "assert" then
        if a == 0 then error(Trap) end
      elseif op == "trap" then error(Trap)
      elseif op == "if" then
        if a ~= 0 then exec(n.body) elseif n.elseb then exec(n.elseb) end
      elseif op == "while" then
        while true do
          exec(n.cond)
          if V[n.condref] == 0 then break end
          local ok, e = pcall(exec, n.body)
          if not ok then
            if e == Break then break end
            error(e, 0)
          end
        end
      elseif op == "for" then
        -- Python's range: step > 0: iv < hi; step < 0: iv > hi; 0: no iteration;
        -- the loop ends where iv + step would leave the type
        local t = n.type
        local lo, hi, st = a, b, val(n.args[3])
        local ti = TYPES[t]
        local maxv = ti.signed and 2 ^ (ti.bits - 1) - 1 or 2 ^ ti.bits - 1
        local minv = ti.signed and -2 ^ (ti.bits - 1) or 0
        local iv = lo
        while (st > 0 and iv < hi) or (st < 0 and iv > hi) do
          set(n, iv)
          local ok, e = pcall(exec, n.body)
          if not ok then
            if e == Break then break end
            error(e, 0)
          end
          local nx = iv + st
          if nx > maxv or nx < minv then break end
          iv = nx
        end
      elseif op == "break" then error(Break)
      elseif op == "ret" then error(Ret)
      else
        error("interp: unsupported op " .. tostring(op))
      end
    end
  end
  local ok, e = pcall(exec, prog.body)
  if not ok and e ~= Ret then
    if e == Trap then return "trap" end
    error(e, 0)
  end
  return "ok"
end

---------------------------------------------------------------------------
-- driver
---------------------------------------------------------------------------
local function show(mem)
  local t = {}
  for i = 0, NOUT - 1 do t[#t + 1] = tostring(mem[i]) end
  return table.concat(t, " ")
end

-- cute.range as plain Lua: Python's range (half-open; negative steps count down)
local function lua_range(a, b, st)
  if b == nil then a, b = 0, a end
  st = st or 1
  if st == 0 then error("range: step 0") end
  local i = a - st
  return function()
    i = i + st
    if (st > 0 and i < b) or (st < 0 and i > b) then return i end
  end
end

-- used as a library by spec/control_gpu_spec.lua (the same programs run on the GPU)
if rawget(_G, "FUZZ_KERNELS_LIB") then
  return {
    NOUT = NOUT, gen_program = gen_program, parse_ir = parse_ir, run_ir = run_ir, lua_range = lua_range,
    seed = function(n) rs = n % 2147483647; if rs <= 0 then rs = rs + 2147483646 end end,
    rnd = rnd,
  }
end

local passed, failed, rejected = 0, 0, 0
local function report(src, why)
  failed = failed + 1
  io.write(("FAIL (seed %d, program %d): %s\n%s\n\n"):format(SEED, passed + failed, why, src))
end

-- FUZZ_LAUNCH: the program launched for real (one thread), its 16 stores as text
local results = RESULTS and assert(io.open(RESULTS, "w"))
local launched = 0
local function launch_stores(k, p1, p2, p3)
  local init = {}
  for i = 1, NOUT do init[i] = UNSET end
  local Out = cute.from_host(init, cute.int32, { NOUT })
  if VERBOSE then io.write(("launch (%d, %d, %d)\n"):format(p1, p2, p3)); io.flush() end
  k:launch{ grid = 1, block = 1 }(Out, cute.Int32(p1), cute.Int32(p2), cute.Int32(p3))
  local h = Out:to_host()
  Out:free()
  launched = launched + 1
  local t = {}
  for i = 0, NOUT - 1 do t[#t + 1] = h[i] == UNSET and "nil" or tostring(h[i]) end
  return table.concat(t, " ")
end
local target = "no launch"
if LAUNCH then
  local gpu = require("cute.runtime").available() and os.getenv("CUTE_TARGET") ~= "cpu"
  if not gpu and os.getenv("CUTE_TARGET") == "gpu" then
    io.write("kernel fuzzer: FUZZ_LAUNCH=1 with CUTE_TARGET=gpu, but there is no GPU\n0 passed, 1 failed\n")
    os.exit(1)
  end
  if not gpu then require("cute.target_cpu").install(os.getenv("CUTE_TARGET") ~= "cpu" and "kernel fuzzer" or nil) end
  target = gpu and "GPU" or "CPU target"
end

local t0 = os.clock()
local nprog = 0
while (PROGRAMS and nprog < PROGRAMS) or (not PROGRAMS and os.clock() - t0 < SECONDS) do
  nprog = nprog + 1
  local src = gen_program()
  if VERBOSE == "2" then io.write(("program %d:\n%s\n"):format(nprog, src)) end
  local chunk, lerr0 = load(src)
  if not chunk then error(lerr0 .. "\n" .. src) end
  setfenv(chunk, setmetatable({ cute = cute }, { __index = _G }))
  local kfn = chunk()
  -- the reference: the same text as plain Lua, with cute.range as Python's range
  local ref_chunk = load(src)
  setfenv(ref_chunk, setmetatable({ cute = { range = lua_range, range_constexpr = lua_range } }, { __index = _G }))
  local fn = ref_chunk()
  local FALLBACK = os.getenv("FUZZ_FALLBACK") ~= nil -- the operator-level tracer (frontend = false)
  local k = cute.kernel(kfn, FALLBACK and { frontend = false } or nil)
  local ok, ir = pcall(k.ir, k, cute.tensor_spec({ NOUT }, cute.int32), cute.Int32(0), cute.Int32(0), cute.Int32(0))
  if not ok then
    -- a rejection must point at a line of the program
    local msg = tostring(ir)
    local line = msg:match('^%[string ".-"%]:(%d+):')
    local nlines = select(2, src:gsub("\n", "")) + 1
    if line and tonumber(line) >= 1 and tonumber(line) <= nlines then
      rejected = rejected + 1
      passed = passed + 1
      if VERBOSE then io.write("rejected: ", msg, "\n") end
    else
      report(src, "the tracer failed without the program's line: " .. msg)
    end
  elseif k.frontend == false and not FALLBACK then
    report(src, "the front end did not take the program: " .. tostring(k.frontend_error))
  else
    local prog_ok, prog = pcall(parse_ir, ir)
    if not prog_ok then
      report(src, "cannot parse the IR: " .. tostring(prog) .. "\n" .. ir)
    else
      local good = true
      for _ = 1, 6 do
        local p1, p2, p3 = rnd(17) - 6, rnd(17) - 6, rnd(17) - 6
        local want = {}
        local lok, lerr = pcall(fn, want, p1, p2, p3)
        local got = {}
        local iok, ires = pcall(run_ir, prog, { { base = "out", off = 0 }, p1, p2, p3 }, { out = got })
        if not lok then
          report(src, ("plain Lua failed (%d, %d, %d): %s"):format(p1, p2, p3, tostring(lerr)))
          good = false
          break
        elseif not iok then
          report(src, ("the IR interpreter failed (%d, %d, %d): %s\n%s"):format(p1, p2, p3, tostring(ires), ir))
          good = false
          break
        elseif ires == "trap" then
          report(src, ("the IR trapped (%d, %d, %d)\n%s"):format(p1, p2, p3, ir))
          good = false
          break
        elseif show(got) ~= show(want) then
          report(src, ("different stores for (%d, %d, %d):\n  IR:  %s\n  Lua: %s\n%s"):format(p1, p2, p3,
            show(got), show(want), ir))
          good = false
          break
        end
        if LAUNCH then
          local ok2, dev = pcall(launch_stores, k, p1, p2, p3)
          if results then results:write(("%d %d %d %d: %s\n"):format(nprog, p1, p2, p3, ok2 and dev or "error")) end
          if not ok2 then
            report(src, ("the launch on the %s failed (%d, %d, %d): %s"):format(target, p1, p2, p3, tostring(dev)))
            good = false
            break
          elseif dev ~= show(want) then
            report(src, ("different stores for (%d, %d, %d):\n  %s: %s\n  Lua: %s\n%s"):format(p1, p2, p3,
              target, dev, show(want), ir))
            good = false
            break
          end
        end
      end
      if good then passed = passed + 1 end
    end
  end
  if failed >= 5 then break end
end
if results then results:close() end
io.write(("kernel fuzzer: seed %d, %d programs, %d rejected at their line, %d launches (%s)\n"):format(SEED, nprog,
  rejected, launched, target))
io.write(("%d passed, %d failed\n"):format(passed, failed))
os.exit(failed == 0 and 0 or 1, true) -- (closing the state runs the finalizers: LeakSanitizer sees no program or IR left)
