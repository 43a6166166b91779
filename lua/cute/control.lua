-- cute.control: the run-time helpers that kernels rewritten by cute.frontend
-- call in place of if / while / repeat / for / break / return / and / or / not
-- and comparisons.  Each behaves exactly as Lua when its operands are Lua
-- values, and builds structured IR when one is traced:
--   * a traced condition must be an i1 (a comparison, not/and/or of them);
--     any other traced value as a condition is an error (Lua treats every
--     number as true, the GPU 0 as false: neither is assumed);
--   * `a and b` / `a or b` on a traced `a` evaluate `b` inside an IR if (short
--     circuit: `i < n and A[i] > 0` never loads out of bounds);
--   * locals declared outside a construct and assigned inside it ("slots",
--     read and written through the getter/setter the rewriter passes) become
--     IR variables when the construct is traced; a Lua number takes the type
--     of the traced value assigned to it (found by tracing again), else i32 /
--     f32 by its value; tables and other Lua values must not change.
-- Bodies are closures returning a status: nothing / 0 (fell through; repeat
-- adds its `until` value), 1 (break), 2 (return from the kernel, + values),
-- 3 (return from a function defined in the kernel, + values), 4 (`goto
-- continue` to the label ending a loop body: cute.frontend's mark_continue).
local ffi = require("ffi")
local cf = require("cute.ffi")
local tr = require("cute.trace")
local C = cf.C
local T, OP, tinfo = tr.T, tr.OP, tr.tinfo
local fail = cf.fail
local is_value = tr.is_value

local M = {}
M.RETRY = "\1cute.control: trace again with the types found\1"
-- trace again (cute.frontend's k.trace catches the marker; no message, no location)
local function retry() cf.rethrow(M.RETRY) end

local RT = {}
RT.__index = RT

-- one per rewritten kernel: its construct sites, type hints and stacks
function M.new(sites)
  return setmetatable({ sites = sites, hints = {}, loops = {}, cstack = {} }, RT)
end

-- reset per top-level trace (hints survive the retries of one trace)
function RT:reset(keep_hints)
  if not keep_hints then self.hints = {} end
  self.loops, self.cstack = {}, {}
end

local function pk(...) return { n = select("#", ...), ... } end
M.pack = pk

-- the rewritten kernel's first call: its comparisons are all consumed by the
-- helpers (the fallback's check for unused comparisons does not apply: a
-- while condition found traced before its loop is left unused, and the trace
-- is redone with the loop an IR loop from its start)
function RT:enter()
  local st = tr.state()
  if st then st.check_unused = false end
end
function RT:pk(...) return { n = select("#", ...), ... } end
function RT:up(t) return unpack(t, 1, t.n) end
function RT:rv(t) return unpack(t, 2, t.n) end

local function S() return tr.state() end
local function chk(ok)
  cf.ir_check(S().ir, ok)
end
local function tname(t) return tinfo[t] and tinfo[t].name or "value" end
local function describe(x)
  if is_value(x) then return "a traced " .. tname(x.t) end
  return ("%s %s"):format(type(x), tostring(x))
end

local function unvar(x)
  if tr.is_var(x) and tr.active() then return x.value end
  return x
end

-- a condition: true / false (Lua truthiness) or a traced i1
local function truth(c, what)
  c = unvar(c)
  if is_value(c) then
    if c.t ~= T.I1 then
      fail(("%s: a traced %s is used as a condition: Lua treats every number as true and the GPU treats 0 " ..
        "as false, so neither is assumed: write a comparison, e.g. `x ~= 0`"):format(what, tname(c.t)))
    end
    return tr.lift(c)
  end
  if tr.active() then tr.pending_check() end
  if c then return true end
  return false
end
M.truth = truth

local function const_i1(b) return tr.const(T.I1, b and 1 or 0) end

---------------------------------------------------------------------------
-- comparisons, not, and, or
---------------------------------------------------------------------------
local function traced_pair(a, b)
  return tr.active() and (is_value(a) or is_value(b))
    and (type(a) == "number" or is_value(a)) and (type(b) == "number" or is_value(b))
end

local function cmpf(op, luaf)
  return function(self, a, b)
    a, b = unvar(a), unvar(b)
    if traced_pair(a, b) then return tr.cmp_value(op, a, b) end
    -- a traced i1 stands for a Lua boolean: == / ~= against a Lua boolean compare the two
    -- (Lua's "different types" answer would be a silent constant)
    if (op == OP.EQ or op == OP.NE) and tr.active() then
      if type(a) == "boolean" and is_value(b) and b.t == T.I1 then return tr.cmp_value(op, const_i1(a), b) end
      if type(b) == "boolean" and is_value(a) and a.t == T.I1 then return tr.cmp_value(op, a, const_i1(b)) end
    end
    local ta, tb = type(a), type(b)
    if ta == tb and (ta == "number" or ta == "string") then return luaf(a, b) end
    local ok, r = pcall(luaf, a, b)
    if ok then return r end
    fail((tostring(r):gsub("^[^:]*:%d+: ", ""))) -- Lua's message, at the user's line
  end
end
RT.lt = cmpf(OP.LT, function(a, b) return a < b end)
RT.le = cmpf(OP.LE, function(a, b) return a <= b end)
RT.gt = cmpf(OP.GT, function(a, b) return a > b end)
RT.ge = cmpf(OP.GE, function(a, b) return a >= b end)
RT.eq = cmpf(OP.EQ, function(a, b) return a == b end)
RT.ne = cmpf(OP.NE, function(a, b) return a ~= b end)

function RT:not_(x)
  x = unvar(x)
  if is_value(x) then
    local c = truth(x, "not")
    tr.setloc()
    return tr.mk(C.cute_ir_op1(S().ir, OP.NOT, c.ref), T.I1)
  end
  if tr.active() then tr.pending_check() end
  return not x
end

-- the rhs of a traced and/or: an i1 or a Lua boolean
local function bool_operand(b, what)
  b = unvar(b)
  if is_value(b) then
    if b.t ~= T.I1 then
      fail(("%s: a traced condition is combined with %s: both sides must be conditions (comparisons); " ..
        "to choose a value write cute.where(cond, x, y)"):format(what, describe(b)))
    end
    return tr.lift(b)
  end
  if tr.active() then tr.pending_check() end
  if type(b) ~= "boolean" then
    fail(("%s: a traced condition is combined with %s: both sides must be conditions (comparisons); " ..
      "to choose a value write cute.where(cond, x, y)"):format(what, describe(b)))
  end
  return const_i1(b)
end

local function short_circuit(self, c, bf, is_and)
  local st = S()
  local what = is_and and "and" or "or"
  tr.setloc()
  local v = C.cute_ir_var(st.ir, T.I1, c.ref)
  if v == 0 then tr.ir_fail() end
  local test = c
  if not is_and then test = tr.mk(C.cute_ir_op1(st.ir, OP.NOT, c.ref), T.I1) end
  chk(C.cute_ir_if(st.ir, test.ref, 0))
  tr.push_region("if", 0)
  local b = bool_operand(bf(), what)
  tr.setloc()
  chk(C.cute_ir_vset(st.ir, v, b.ref))
  tr.pop_region("if")
  chk(C.cute_ir_end(st.ir))
  tr.setloc()
  return tr.mk(C.cute_ir_vget(st.ir, v), T.I1)
end

-- a traced i1 on the left: short circuit in IR.  Any other traced value is a
-- value, not a condition, and (as in Lua) true: `x or 0` is x.  Used as a
-- condition later (if, while, not), it is an error there.
function RT:and_(a, bf)
  a = unvar(a)
  if is_value(a) then
    if a.t == T.I1 then return short_circuit(self, truth(a, "and"), bf, true) end
    tr.lift(a)
    return bf()
  end
  if tr.active() then tr.pending_check() end
  if not a then return a end
  return bf()
end

function RT:or_(a, bf)
  a = unvar(a)
  if is_value(a) then
    if a.t == T.I1 then return short_circuit(self, truth(a, "or"), bf, false) end
    return tr.lift(a)
  end
  if tr.active() then tr.pending_check() end
  if a then return a end
  return bf()
end

-- `c and x or y`: Lua's (c and x) or y on Lua values; with a traced i1 c, x is
-- evaluated only where c holds, y only where it does not, and the result is
-- one IR variable (its type: found by tracing again, from x and y)
local function value_type(x, y)
  local tx, ty = is_value(x) and x.t, is_value(y) and y.t
  if tx and ty and tx ~= ty then return nil end
  if tx or ty then return tx or ty end
  if type(x) == "boolean" and type(y) == "boolean" then return T.I1 end
  if type(x) == "number" and type(y) == "number" then
    if x % 1 ~= 0 or y % 1 ~= 0 then return T.F32 end
    return T.I32
  end
  return nil
end

function RT:ternary(id, a, bf, cf)
  a = unvar(a)
  if not (is_value(a) and a.t == T.I1) then
    if is_value(a) then tr.lift(a) elseif tr.active() then tr.pending_check() end
    if a then
      local b = unvar(bf())
      if is_value(b) and b.t == T.I1 then return short_circuit(self, tr.lift(b), cf, false) end
      if b then return b end
    end
    return cf()
  end
  local site = self.sites[id]
  local st = S()
  local hk = "t" .. id
  local t = self.hints[hk]
  tr.setloc()
  local v = 0
  if t then
    v = C.cute_ir_var(st.ir, t, 0)
    if v == 0 then tr.ir_fail() end
  end
  local got = {}
  local function arm(f, k)
    local x = unvar(f())
    if k == 1 then
      -- (c and x) or y where c holds: x, unless x is false (then y); an i1 x
      -- is `x or y`, short-circuited on the GPU
      if x == nil or x == false then x = unvar(cf())
      elseif is_value(x) and x.t == T.I1 then x = short_circuit(self, tr.lift(x), cf, false) end
    end
    got[k] = x
    if not (is_value(x) or type(x) == "number" or type(x) == "boolean") then
      fail(("`c and x or y` with a traced condition c: x and y must be numbers, booleans or traced values, " ..
        "got %s"):format(describe(x)))
    end
    if t then
      local xv
      if is_value(x) then
        if x.t ~= t then
          fail(("`c and x or y` with a traced condition c: x and y have different types (%s and %s): " ..
            "convert one (cute.Float32(x), ...)"):format(tname(t), tname(x.t)))
        end
        xv = tr.lift(x)
      elseif type(x) == "boolean" then
        if t ~= T.I1 then fail(("`c and x or y`: a boolean and a %s"):format(tname(t))) end
        xv = const_i1(x)
      else
        if t == T.I1 or (tinfo[t].int and x % 1 ~= 0) then
          fail(("`c and x or y`: %s and a %s"):format(tostring(x), tname(t)))
        end
        xv = tr.const(t, x)
      end
      tr.setloc()
      chk(C.cute_ir_vset(st.ir, v, xv.ref))
    end
  end
  chk(C.cute_ir_if(st.ir, a.ref, 0))
  tr.push_region("if", site.line)
  arm(bf, 1)
  tr.pop_region("if")
  chk(C.cute_ir_else(st.ir))
  tr.push_region("if", site.line)
  arm(cf, 2)
  tr.pop_region("if")
  chk(C.cute_ir_end(st.ir))
  if not t then
    local vt = value_type(got[1], got[2])
    if not vt then
      fail(("`c and x or y` with a traced condition c: x and y have different types (%s and %s): convert one " ..
        "(cute.Float32(x), ...)"):format(describe(got[1]), describe(got[2])))
    end
    self.hints[hk] = vt
    retry()
  end
  tr.setloc()
  return tr.mk(C.cute_ir_vget(st.ir, v), t)
end

-- error(msg, level) written inside an if / loop body: the frames of the
-- construct's closures and of these helpers do not count.  The one place in
-- cute's modules that passes error() a numeric level: it is the user's own
-- error call, whose level means frames of the function as written
-- (spec/frontend_spec.lua, "error(msg, level) inside a construct")
local this_source = debug.getinfo(1, "S").source
function RT:error(msg, level)
  if type(level) ~= "number" or level < 2 then error(msg, level) end
  local lv, logical = 2, 1
  local closure_src = debug.getinfo(2, "S").source
  while true do
    local info = debug.getinfo(lv, "S")
    if not info then break end
    local caller = debug.getinfo(lv + 1, "S")
    local skip = info.source == this_source
      or (info.source == closure_src and caller and caller.source == this_source)
    if not skip then
      if logical == level then break end
      logical = logical + 1
    end
    lv = lv + 1
  end
  error(msg, lv) -- (debug.getinfo levels and error levels agree: 1 is this function)
end

-- statements containing a goto or a label stay Lua statements: their
-- conditions, bounds and iterators must be Lua values
local function plain_fail(what, x)
  fail(("%s: %s in a statement that contains a goto or a label: such statements stay Lua code (a goto " ..
    "cannot jump out of a traced region); restructure it without goto (e.g. an if around the rest of " ..
    "the loop body)"):format(what, describe(x)))
end

function RT:lua_cond(c, what)
  c = unvar(c)
  if is_value(c) then plain_fail(what .. " condition", c) end
  if tr.active() then tr.pending_check() end
  return c
end

function RT:lua_num(x)
  x = unvar(x)
  if is_value(x) then plain_fail("'for' bound", x) end
  return x
end

function RT:plain_iter(f, s, v)
  if tr.range_iters[f] then plain_fail("'for ... in cute.range'", "a traced loop") end
  return f, s, v
end

---------------------------------------------------------------------------
-- assignments that cannot follow a traced branch
---------------------------------------------------------------------------
-- level: how many constructs enclose the declaration of the assigned table
-- (0: a global or a table from outside the kernel's constructs).  A traced
-- region opened since then makes the assignment unsafe (it would happen once,
-- at trace time, whatever the GPU decides).
function RT:traced_since(level, base)
  local d = self.cstack[level + 1 + (base or 0)]
  local st = S()
  return d ~= nil and st ~= nil and #st.stack > d
end

function RT:gset(name, v, level)
  if self:traced_since(level or 0) then
    fail(("assignment to the global `%s` inside a traced branch or loop: the GPU cannot change a Lua " ..
      "global; declare it as a local before the branch"):format(name))
  end
  return v
end

-- `#x`: LuaJIT (Lua 5.1) ignores __len on tables, so the length of a tensor,
-- register tensor, fragment or TensorSSA value (tables with __len) would be 0
local getmetatable_, rawlen = getmetatable, function(x) return #x end
function RT:len(x)
  local mt = type(x) == "table" and getmetatable_(x)
  local f = mt and rawget(mt, "__len")
  if f then return f(x) end
  return rawlen(x)
end

-- the construct depth on entry to a function defined inside the kernel
function RT:cbase() return #self.cstack end

function RT:setf(o, k, v, level, base)
  if self:traced_since(level or 0, base) and not require("cute.tensor").is_tensor(o) and not tr.is_var(o)
    and not require("cute.mma_partition").is_reg_tensor(o) then -- register tensors are variables too
    fail(("assignment to the field %s of a %s declared outside a traced branch or loop: the GPU cannot " ..
      "change a Lua table; use a local, a fragment (cute.make_fragment) or a tensor"):format(tostring(k), type(o)))
  end
  o[k] = v
end

---------------------------------------------------------------------------
-- slots: outer locals assigned inside a traced construct
---------------------------------------------------------------------------
local function default_type(x)
  if x % 1 == 0 and x >= -2 ^ 31 and x < 2 ^ 31 then return T.I32 end
  return T.F32
end

function RT:open_slots(id, G, loop)
  local site = self.sites[id]
  local names = site.names
  if not G or #names == 0 then return nil end
  local st = S()
  local vals = pk(G())
  local slots = { id = id, site = site, vals = vals, vars = {}, kinds = {}, loop = loop }
  for k = 1, #names do
    local x = vals[k]
    local hint = self.hints[id .. ":" .. k]
    local kind, t
    if is_value(x) then kind, t = "traced", x.t
    elseif type(x) == "number" then kind, t = "number", hint or default_type(x)
    elseif type(x) == "boolean" then kind, t = "bool", T.I1
    elseif x == nil then
      if hint and not loop then kind, t = "nil", hint else kind = "unset" end
    else kind = "opaque" end
    slots.kinds[k] = kind
    if t then
      local init = 0
      if kind == "traced" then init = tr.lift(x).ref
      elseif kind == "number" then
        if tinfo[t].int and x % 1 ~= 0 then
          fail(("`%s` holds %s before the traced %s at line %d and a traced %s is assigned to it inside"):format(
            names[k], tostring(x), site.kind, site.line, tname(t)))
        end
        init = tr.const(t, x).ref
      elseif kind == "bool" then init = const_i1(x).ref end
      tr.setloc()
      local ref = C.cute_ir_var(st.ir, t, init)
      if ref == 0 then tr.ir_fail() end
      slots.vars[k] = { ref = ref, t = t }
    end
  end
  return slots
end

-- traced values whose type is a Lua number's default (weak keys): value -> slot key
local soft = setmetatable({}, { __mode = "k" })


local function type_of(x)
  if is_value(x) then return x.t end
  if type(x) == "number" then return default_type(x) end
  if type(x) == "boolean" then return T.I1 end
  return nil
end

-- write the current values of the slots into their IR variables
function RT:store(slots, G)
  if not slots then return end
  local st = S()
  local site, names = slots.site, slots.site.names
  local cur = pk(G())
  for k = 1, #names do
    local x, kind, var = cur[k], slots.kinds[k], slots.vars[k]
    local hk = slots.id .. ":" .. k
    local name = names[k]
    if tr.is_var(x) and not rawequal(x, slots.vals[k]) then x = x.value end
    if kind == "opaque" then
      if not rawequal(x, slots.vals[k]) then
        fail(("`%s` (%s) is reassigned inside the traced %s at line %d: only numbers, booleans and traced " ..
          "values can change in traced code"):format(name, describe(slots.vals[k]), site.kind, site.line))
      end
    elseif kind == "unset" then
      if x ~= nil then
        local t = type_of(x)
        if not t or slots.loop then
          fail(("`%s` has no value before the traced %s at line %d and is assigned %s inside it: give it a " ..
            "value of its type before the %s"):format(name, site.kind, site.line, describe(x), site.kind))
        end
        self.hints[hk] = t
        retry()
      end
    else
      if x == nil then
        fail(("`%s` is nil at the end of a path through the traced %s at line %d: give it a value on every " ..
          "path (or before the %s)"):format(name, site.kind, site.line, site.kind))
      end
      local v
      if is_value(x) then
        if x.t ~= var.t then
          if (kind == "number" or kind == "nil") and not self.hints[hk] then
            self.hints[hk] = x.t
            retry()
          end
          -- a value whose type came from a Lua number's default (a slot of an
          -- earlier construct): give that slot this type
          local origin = soft[x]
          if origin and not self.hints[origin] then
            self.hints[origin] = var.t
            retry()
          end
          origin = kind == "traced" and soft[slots.vals[k]]
          if origin and not self.hints[origin] then
            self.hints[origin] = x.t
            retry()
          end
          fail(("`%s` is a %s before the traced %s at line %d and a %s is assigned to it inside: convert " ..
            "explicitly (cute.%s(x)) or start from a value of that type"):format(
            name, tname(var.t), site.kind, site.line, tname(x.t), tinfo[var.t] and tinfo[var.t].cute or "Float32"))
        end
        v = tr.lift(x)
      elseif type(x) == "number" and var.t ~= T.I1 then
        if tinfo[var.t].int and x % 1 ~= 0 then
          if kind == "number" and not self.hints[hk] then
            self.hints[hk] = T.F32
            retry()
          end
          fail(("`%s` is a %s in the traced %s at line %d and %s is assigned to it"):format(
            name, tname(var.t), site.kind, site.line, tostring(x)))
        end
        v = tr.const(var.t, x)
      elseif type(x) == "boolean" and var.t == T.I1 then
        v = const_i1(x)
      else
        fail(("`%s` is a %s in the traced %s at line %d and %s is assigned to it"):format(
          name, tname(var.t), site.kind, site.line, describe(x)))
      end
      tr.setloc()
      chk(C.cute_ir_vset(st.ir, var.ref, v.ref))
    end
  end
end

-- set the locals to the variables' current values
function RT:reload(slots, Sx)
  if not slots then return end
  local st = S()
  local n = #slots.site.names
  local out = {}
  tr.setloc()
  for k = 1, n do
    local var = slots.vars[k]
    if var then
      out[k] = tr.mk(C.cute_ir_vget(st.ir, var.ref), var.t)
      local kind = slots.kinds[k]
      local hk = slots.id .. ":" .. k
      if kind == "number" and not self.hints[hk] then soft[out[k]] = hk
      elseif kind == "traced" and soft[slots.vals[k]] then soft[out[k]] = soft[slots.vals[k]] end
    else out[k] = slots.vals[k] end
  end
  Sx(unpack(out, 1, n))
end

---------------------------------------------------------------------------
-- statuses of traced bodies
---------------------------------------------------------------------------
-- returns true when the body ended with break / return (the region is terminated)
function RT:traced_status(r, site)
  local s = r[1]
  if r.n == 0 or s == nil or s == 0 then return false end
  local st = S()
  if s == 1 then
    if site.plain_loop then
      fail(("break under the traced %s at line %d, in a loop that contains a goto or a label (kept as a Lua " ..
        "loop): it cannot stop at a condition known only on the GPU; restructure it without goto"):format(
        site.kind, site.line))
    end
    local L = self.loops[#self.loops]
    if not L then fail("break outside a loop") end
    if not L.traced and L.id and not self.hints["L" .. L.id] then
      -- a GPU condition decides when this loop ends: trace it again as an IR loop
      self.hints["L" .. L.id] = true
      retry()
    end
    if not L.traced then
      fail(("break inside the traced %s at line %d, in a loop unrolled at trace time (line %d: its bounds " ..
        "are Lua numbers): it cannot stop at a condition known only on the GPU; give the loop traced bounds " ..
        "or use cute.range"):format(site.kind, site.line, L.line or 0))
    end
    L.store()
    tr.setloc()
    chk(C.cute_ir_op(st.ir, C.CUTE_IR_BREAK, 0, 0, nil, 0, 0))
    return true
  end
  if s == 2 then
    if r.n > 1 then
      fail(("return with values inside the traced %s at line %d: a kernel returns nothing; write `return` " ..
        "alone"):format(site.kind, site.line))
    end
    tr.setloc()
    chk(C.cute_ir_ret(st.ir, 0))
    return true
  end
  if s == 4 then return self:traced_continue(site) end
  fail(("return inside the traced %s at line %d of a function defined in the kernel: the GPU cannot leave " ..
    "it there; assign the result to a local and return it at the end"):format(site.kind, site.line))
end

-- `goto continue` (status 4) under the traced construct site: store the
-- carried locals, step a numeric for's index, then the IR continue
function RT:traced_continue(site)
  local L = self.loops[#self.loops]
  if not L then fail("goto continue outside a loop") end
  if not L.traced and L.id and not self.hints["L" .. L.id] then
    self.hints["L" .. L.id] = true -- a GPU condition decides: trace the loop again as an IR loop
    retry()
  end
  if not L.traced then
    fail(("goto continue inside the traced %s at line %d, in a loop unrolled at trace time (line %d: a loop " ..
      "over a Lua iterator): it cannot skip on a condition known only on the GPU; loop with cute.range or " ..
      "traced bounds"):format(site.kind, site.line, L.line or 0))
  end
  L.store()
  if L.advance then L.advance() end
  tr.setloc()
  chk(C.cute_ir_op(S().ir, C.CUTE_IR_CONTINUE, 0, 0, nil, 0, 0))
  return true
end

-- run a traced body; on fall-through store the slots.  Returns fell, r.
-- loop: true for a loop body, or a function that steps the loop (a numeric
-- for's index) before a continue
function RT:run_body(slots, G, site, loop, f, ...)
  local st = S()
  local depth = #st.stack
  if loop then
    self.loops[#self.loops + 1] = { traced = true, line = site.line, store = function() self:store(slots, G) end,
      advance = type(loop) == "function" and loop or nil }
  end
  local r = pk(f(...))
  tr.pending_check()
  if #st.stack ~= depth then fail(("the body of the %s at line %d left a region open"):format(site.kind, site.line)) end
  local term = self:traced_status(r, site)
  if loop then self.loops[#self.loops] = nil end
  if not term then self:store(slots, G) end
  return not term, r
end

-- a Lua (trace-time) loop iteration: returns "next", "break" or the packed return
function RT:lua_iter(site, f, id, ...)
  local L = { traced = false, line = site.line, id = id }
  self.loops[#self.loops + 1] = L
  local r = pk(f(...))
  self.loops[#self.loops] = nil
  local s = r[1]
  if r.n == 0 or s == nil or s == 0 then return "next", r end
  if s == 1 then return "break" end
  if s == 4 then return "next", r end -- goto continue
  return "return", r
end

local function with_cstack(impl)
  return function(self, ...)
    local cs = self.cstack
    local st = S()
    cs[#cs + 1] = st and #st.stack or 0
    local r = pk(impl(self, ...))
    cs[#cs] = nil
    return unpack(r, 1, r.n)
  end
end

---------------------------------------------------------------------------
-- if / elseif / else
---------------------------------------------------------------------------
RT.if_ = with_cstack(function(self, id, c, tf, ef, G, Sx)
  local site = self.sites[id]
  local cond = truth(c, "if")
  if not is_value(cond) then
    if cond then return tf() end
    if ef then return ef() end
    return
  end
  local st = S()
  local slots = self:open_slots(id, G, false)
  tr.setloc()
  chk(C.cute_ir_if(st.ir, cond.ref, 0))
  tr.push_region("if", site.line)
  self:run_body(slots, G, site, false, tf)
  tr.pop_region("if")
  if slots and not ef then
    for k = 1, #site.names do
      if slots.kinds[k] == "nil" then
        fail(("`%s` is nil where the condition of the traced if at line %d is false: give it a value on every " ..
          "path (or before the if)"):format(site.names[k], site.line))
      end
    end
  end
  if ef then
    if slots then Sx(unpack(slots.vals, 1, #site.names)) end
    tr.setloc()
    chk(C.cute_ir_else(st.ir))
    tr.push_region("if", site.line)
    self:run_body(slots, G, site, false, ef)
    tr.pop_region("if")
  end
  tr.setloc()
  chk(C.cute_ir_end(st.ir))
  self:reload(slots, Sx)
end)

---------------------------------------------------------------------------
-- loops
---------------------------------------------------------------------------
-- while cond do body end: Lua iterations while the condition is a Lua value;
-- from the first traced condition on, an IR while loop
RT.while_ = with_cstack(function(self, id, condf, bodyf, G, Sx)
  local site = self.sites[id]
  local c
  if self.hints["L" .. id] then c = const_i1(true) else c = truth(condf(), "while") end
  while not is_value(c) do
    if not c then return end
    local what, r = self:lua_iter(site, bodyf, id)
    if what == "break" then return end
    if what == "return" then return unpack(r, 1, r.n) end
    c = truth(condf(), "while")
  end
  if not self.hints["L" .. id] then
    -- the condition became traced here, outside the loop: its ops (an atomic,
    -- a store in a helper) would run once more than the Lua says.  Trace again
    -- with the loop an IR loop from its start, its condition evaluated only in it
    self.hints["L" .. id] = true
    retry()
  end
  local st = S()
  local slots = self:open_slots(id, G, true)
  tr.setloc()
  chk(C.cute_ir_while(st.ir))
  tr.push_region("while", site.line)
  self:reload(slots, Sx)
  local c2 = truth(condf(), "while")
  if not is_value(c2) then c2 = const_i1(c2) end
  tr.setloc()
  chk(C.cute_ir_do(st.ir, c2.ref))
  self:run_body(slots, G, site, true, bodyf)
  tr.pop_region("while")
  tr.setloc()
  chk(C.cute_ir_end(st.ir))
  self:reload(slots, Sx)
end)

-- repeat body until cond: the body ends with `return 0, cond`
RT.repeat_ = with_cstack(function(self, id, bodyf, G, Sx)
  local site = self.sites[id]
  local forced = self.hints["L" .. id]
  while true do
    local c
    if forced then
      c = const_i1(false)
    else
      local what, r = self:lua_iter(site, bodyf, id)
      if what == "break" then return end
      if what == "return" then return unpack(r, 1, r.n) end
      c = truth(r[2], "until")
    end
    if not is_value(c) then
      if c then return end
    else
      -- the iterations so far ran at trace time; the rest is an IR loop
      local st = S()
      local slots = self:open_slots(id, G, true)
      tr.setloc()
      local flag = C.cute_ir_var(st.ir, T.I1, c.ref)
      if flag == 0 then tr.ir_fail() end
      chk(C.cute_ir_while(st.ir))
      tr.push_region("while", site.line)
      local f = tr.mk(C.cute_ir_vget(st.ir, flag), T.I1)
      local nf = tr.mk(C.cute_ir_op1(st.ir, OP.NOT, f.ref), T.I1)
      chk(C.cute_ir_do(st.ir, nf.ref))
      self:reload(slots, Sx)
      local fell, r2 = self:run_body(slots, G, site, true, bodyf)
      if fell then
        local c3 = truth(r2[2], "until")
        if not is_value(c3) then c3 = const_i1(c3) end
        tr.setloc()
        chk(C.cute_ir_vset(st.ir, flag, c3.ref))
      end
      tr.pop_region("while")
      tr.setloc()
      chk(C.cute_ir_end(st.ir))
      self:reload(slots, Sx)
      return
    end
  end
end)

local function for_number(x, what)
  if type(x) ~= "number" then
    fail(("'for' %s must be a number, got %s"):format(what, describe(x)))
  end
  return x
end

local function for_traced(x, what)
  if is_value(x) then
    local i = tinfo[x.t]
    if not (i and i.int and x.t ~= T.I1) then
      fail(("'for' %s must be an integer, got %s"):format(what, describe(x)))
    end
  elseif type(x) ~= "number" or x % 1 ~= 0 then
    fail(("'for' %s must be an integer when another bound is traced, got %s"):format(what, describe(x)))
  end
  return x
end

-- step > 0 ? x <= y : x >= y  (step a Lua number or a traced value)
local function dir_cmp(st, step, x, y)
  if type(step) == "number" then return tr.cmp_value(step > 0 and OP.LE or OP.GE, x, y) end
  local pos = tr.cmp_value(OP.GT, st, 0)
  local le, ge = tr.cmp_value(OP.LE, x, y), tr.cmp_value(OP.GE, x, y)
  tr.setloc()
  return tr.mk(C.cute_ir_op3(S().ir, OP.SELECT, pos.ref, le.ref, ge.ref), T.I1)
end

local function to_type(x, t)
  local v = tr.lift(x, t)
  if v.t ~= t then v = tr.cvt(v, t) end
  return v
end

-- for i = a, b [, c] do body end (Lua's semantics: inclusive bound, negative
-- steps count down; a zero step is an error, or an assertion when traced)
RT.fornum = with_cstack(function(self, id, a, b, c, bodyf, G, Sx)
  local site = self.sites[id]
  a, b, c = unvar(a), unvar(b), unvar(c)
  if c == nil then c = 1 end
  if not (is_value(a) or is_value(b) or is_value(c)) and not self.hints["L" .. id] then
    for_number(a, "initial value"); for_number(b, "limit"); for_number(c, "step")
    if c == 0 then fail("'for' step is 0 (the loop would never end)") end
    for i = a, b, c do
      local what, r = self:lua_iter(site, bodyf, id, i)
      if what == "break" then return end
      if what == "return" then return unpack(r, 1, r.n) end
    end
    return
  end
  for_traced(a, "initial value"); for_traced(b, "limit"); for_traced(c, "step")
  if type(c) == "number" and c == 0 then fail("'for' step is 0 (the loop would never end)") end
  local st = S()
  local it = T.I32
  for _, x in ipairs({ a, b, c }) do
    if is_value(x) and (x.t == T.I64 or x.t == T.U64 or x.t == T.U32) then it = T.I64 end
  end
  local lo, hi, step = to_type(a, it), to_type(b, it), to_type(c, it)
  if is_value(c) then
    local nz = tr.cmp_value(OP.NE, step, 0)
    tr.setloc()
    chk(C.cute_ir_assert(st.ir, nz.ref, "for: the step is 0"))
  end
  local slots = self:open_slots(id, G, true)
  tr.setloc()
  local ivar = C.cute_ir_var(st.ir, it, lo.ref)
  if ivar == 0 then tr.ir_fail() end
  local go = dir_cmp(step, c, lo, hi)
  local gvar = C.cute_ir_var(st.ir, T.I1, go.ref)
  if gvar == 0 then tr.ir_fail() end
  chk(C.cute_ir_while(st.ir))
  tr.push_region("while", site.line)
  local g = tr.mk(C.cute_ir_vget(st.ir, gvar), T.I1)
  chk(C.cute_ir_do(st.ir, g.ref))
  local x = tr.mk(C.cute_ir_vget(st.ir, ivar), it)
  self:reload(slots, Sx)
  -- the next value and whether it is still in range, without overflow:
  -- i32 loops step in 64 bits; i64 loops compare x against hi - step
  local function advance()
    local cont, nx
    if it == T.I32 then
      local x64, s64, h64 = tr.cvt(x, T.I64), tr.cvt(step, T.I64), tr.cvt(hi, T.I64)
      tr.setloc()
      local n64 = tr.mk(C.cute_ir_op2(st.ir, OP.ADD, x64.ref, s64.ref), T.I64)
      cont = dir_cmp(s64, c, n64, h64)
      nx = tr.cvt(n64, T.I32)
    else
      tr.setloc()
      local lim = tr.mk(C.cute_ir_op2(st.ir, OP.SUB, hi.ref, step.ref), it)
      cont = dir_cmp(step, c, x, lim)
      nx = tr.mk(C.cute_ir_op2(st.ir, OP.ADD, x.ref, step.ref), it)
    end
    tr.setloc()
    chk(C.cute_ir_vset(st.ir, ivar, nx.ref))
    chk(C.cute_ir_vset(st.ir, gvar, cont.ref))
  end
  if self:run_body(slots, G, site, advance, bodyf, x) then advance() end
  tr.pop_region("while")
  tr.setloc()
  chk(C.cute_ir_end(st.ir))
  self:reload(slots, Sx)
end)

-- for names in explist do body end: Lua's generic for; over cute.range, one
-- IR loop whose body is traced once (with slots, break and return)
RT.forin = with_cstack(function(self, id, e, bodyf, G, Sx)
  local site = self.sites[id]
  local f, s, v = e[1], e[2], e[3]
  if tr.active() and tr.range_iters[f] then
    local st = S()
    local slots = self:open_slots(id, G, true)
    local iv = f()
    self:reload(slots, Sx)
    self:run_body(slots, G, site, true, bodyf, iv)
    f()
    self:reload(slots, Sx)
    return
  end
  local mt = type(f) ~= "function" and getmetatable(f)
  if type(f) ~= "function" and not (mt and mt.__call) then
    fail(("'for ... in': the iterator is %s, not a function (write `for k, v in pairs(t)` or " ..
      "`for i in cute.range(n)`)"):format(describe(f)))
  end
  while true do
    local vals = pk(f(s, v))
    if vals[1] == nil then return end
    v = vals[1]
    local what, r = self:lua_iter(site, bodyf, nil, unpack(vals, 1, vals.n))
    if what == "break" then return end
    if what == "return" then return unpack(r, 1, r.n) end
  end
end)

return M
