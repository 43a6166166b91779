-- cute.frontend: the kernel's Lua source, rewritten so that conditions and
-- loops over traced values become structured IR.
--
-- Lua has no hook on `and`, `or`, `not`, truthiness or the boolean result of a
-- comparison, so the tracer reads the kernel's source (debug.getinfo: a file, a
-- load(string) chunk, or text given to cute.register_source), parses it
-- (cute.lua_parse) and rewrites
--   if / elseif / else, while, repeat, numeric and generic for, break, return
--   inside them, and, or, not, < <= > >= == ~=
-- into calls of cute.control's helpers, which behave exactly as Lua on Lua
-- values and build IR when a value is traced.  Bodies become closures; locals
-- declared outside a construct and assigned inside it are passed to the helper
-- as a getter and a setter, so a traced branch or loop threads them through IR
-- variables.  Every token keeps its line, and the chunk is compiled under the
-- original chunk name, so errors and cf.fail's user line point at the user's
-- source.  The rewritten function shares the original's upvalues
-- (debug.upvaluejoin) and environment.
local cf = require("cute.ffi")
local P = require("cute.lua_parse")
local control = require("cute.control")

local M = {}

local RT = "__cute_rt"

---------------------------------------------------------------------------
-- emitter: tokens on their original lines
---------------------------------------------------------------------------
local W = {}
W.__index = W

local function writer() return setmetatable({ buf = {}, line = 1 }, W) end

function W:at(line)
  if line and line > self.line then
    self.buf[#self.buf + 1] = ("\n"):rep(line - self.line)
    self.line = line
  end
end

function W:put(s, line)
  self:at(line)
  self.buf[#self.buf + 1] = " "
  self.buf[#self.buf + 1] = s
  for _ in s:gmatch("\n") do self.line = self.line + 1 end
end

function W:text() return table.concat(self.buf) end

---------------------------------------------------------------------------
-- rewriter
---------------------------------------------------------------------------
local R = {}
R.__index = R

local cmp_fn = { ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge", ["=="] = "eq", ["~="] = "ne" }

function R:declare(name)
  self.nid = self.nid + 1
  local d = { name = name, id = self.nid }
  self.scope[#self.scope][name] = d
  return d
end

function R:push_scope() self.scope[#self.scope + 1] = {} end
function R:pop_scope() self.scope[#self.scope] = nil end

function R:resolve(name)
  for i = #self.scope, 1, -1 do
    local d = self.scope[i][name]
    if d then return d end
  end
  if self.upnames[name] then return { name = name, id = 0 } end
  return nil
end

-- a rewrite failure: a table caught by M.rewrite (the kernel keeps its function)
function R:fail(line, msg) cf.rethrow({ msg = ("%s:%d: %s"):format(self.chunk, line, msg) }) end

-- record an assignment to `name` for every open construct it crosses
function R:assigned(name)
  local d = self:resolve(name)
  if not d then return nil end
  for i = #self.frames, 1, -1 do
    local f = self.frames[i]
    if d.id < f.start then
      if not f.set[name] then
        f.set[name] = true
        f.list[#f.list + 1] = name
      end
    else
      break
    end
  end
  return d
end

-- how many open constructs enclose the declaration of the root name of an
-- assignment target (0: a global, an upvalue, or not a name)
function R:level_of(e)
  while e.k == "Index" do e = e.obj end
  if e.k ~= "Name" then return 0 end
  local d = self:resolve(e.name)
  if not d then return 0 end
  local n = 0
  for i = 1, #self.frames do
    if self.frames[i].start <= d.id then n = i end
  end
  return n
end

---------------------------------------------------------------------------
-- expressions
---------------------------------------------------------------------------
function R:exprlist(list)
  local w = self.w
  for i, e in ipairs(list) do
    if i > 1 then w:put(",") end
    self:expr(e)
  end
end

-- the level argument(s) of a setf call for a table declared `lvl` constructs
-- deep: inside a nested function, relative to the constructs open when it was
-- entered (a table declared outside the function keeps the absolute level)
-- is the root name of an assignment target declared outside the current function?
function R:outside_fn(target)
  local e = target
  while e.k == "Index" do e = e.obj end
  if e.k ~= "Name" then return true end
  local d = self:resolve(e.name)
  return not (d and d.id >= self.fn.first_id)
end

function R:setf_level(lvl, target)
  if self.fn.top then return (", %d);"):format(lvl) end
  if not self:outside_fn(target) then return (", %d, __cute_cb);"):format(lvl - self.fn.frame_base) end
  return ", 0);" -- declared outside the function: any traced region open at the call is too many
end

function R:rt_call(name, line)
  local w = self.w
  w:put(RT, line); w:put(":" .. name .. "(")
end

-- function() return <e> end (a closure: `...` inside it reads the packed varargs)
function R:expr_closure(e)
  local w = self.w
  w:put("function()", e.line); w:put("return")
  self.fn.closure_depth = self.fn.closure_depth + 1
  self:expr(e)
  self.fn.closure_depth = self.fn.closure_depth - 1
  w:put("end")
end

function R:expr(e)
  local w, k = self.w, e.k
  if k == "Nil" then w:put("nil", e.line)
  elseif k == "True" then w:put("true", e.line)
  elseif k == "False" then w:put("false", e.line)
  elseif k == "Number" or k == "String" then w:put(e.v, e.line)
  elseif k == "Vararg" then
    if self.fn.closure_depth > 0 then
      self.fn.va_used = true
      w:put(RT .. ":up(__cute_va)", e.line)
    else
      w:put("...", e.line)
    end
  elseif k == "Func" then self:func(e)
  elseif k == "Table" then
    w:put("{", e.line)
    for i, it in ipairs(e.items) do
      if i > 1 then w:put(",") end
      if it.kind == "keyed" then
        w:put("["); self:expr(it.key); w:put("]"); w:put("=")
      elseif it.kind == "named" then
        w:put(it.name, it.value.line); w:put("=")
      end
      self:expr(it.value)
    end
    w:put("}", e.endline)
  elseif k == "Binop" then
    local op = e.op
    if op == "or" and e.l.k == "Binop" and e.l.op == "and" then
      -- the ternary idiom `c and x or y`: with a traced c, a select of x and y
      local id = self:new_site("and/or", e.line)
      self:rt_call("ternary", e.line)
      w:put(tostring(id) .. ",")
      self:expr(e.l.l)
      w:put(","); self:expr_closure(e.l.r)
      w:put(","); self:expr_closure(e.r)
      w:put(")")
    elseif op == "and" or op == "or" then
      self:rt_call(op .. "_", e.line)
      self:expr(e.l)
      w:put(","); self:expr_closure(e.r)
      w:put(")")
    elseif cmp_fn[op] then
      self:rt_call(cmp_fn[op], e.line)
      self:expr(e.l); w:put(","); self:expr(e.r); w:put(")")
    else
      w:put("(", e.line); self:expr(e.l); w:put(op, e.opline); self:expr(e.r); w:put(")")
    end
  elseif k == "Unop" then
    if e.op == "not" then
      self:rt_call("not_", e.line); self:expr(e.e); w:put(")")
    elseif e.op == "#" then
      self:rt_call("len", e.line); self:expr(e.e); w:put(")")
    else
      w:put("(", e.line); w:put(e.op); self:expr(e.e); w:put(")")
    end
  elseif k == "Name" then w:put(e.name, e.line)
  elseif k == "Paren" then w:put("(", e.line); self:expr(e.e); w:put(")")
  elseif k == "Index" then
    self:expr(e.obj)
    if e.dotname then w:put("." .. e.dotname, e.key.line)
    else w:put("["); self:expr(e.key); w:put("]") end
  elseif k == "Call" then
    if self.fn.closure_depth > 0 and e.f.k == "Name" and e.f.name == "error" and #e.args == 2
      and not self:resolve("error") then
      -- error(msg, level) inside a construct's closure: the level counts the
      -- frames of the function as written, not the closures and helpers
      self:rt_call("error", e.line); self:exprlist(e.args); w:put(")")
    else
      self:expr(e.f); w:put("(", e.cline); self:exprlist(e.args); w:put(")")
    end
  elseif k == "Method" then
    self:expr(e.obj); w:put(":" .. e.name, e.cline); w:put("("); self:exprlist(e.args); w:put(")")
  else
    self:fail(e.line, "internal: unknown expression " .. tostring(k))
  end
end

---------------------------------------------------------------------------
-- functions
---------------------------------------------------------------------------
function R:func(f, name_target)
  local w = self.w
  w:put("function", f.line)
  if name_target then self:expr(name_target) end
  local params = {}
  for i, p in ipairs(f.params) do
    if not (f.is_method and i == 1) then params[#params + 1] = p end
  end
  if f.vararg then params[#params + 1] = "..." end
  w:put("(" .. table.concat(params, ",") .. ")")
  self:funcbody(f, false)
end

-- the body of a function (params declared here); top: the kernel itself
function R:funcbody(f, top)
  local w = self.w
  local saved_fn, saved_frames = self.fn, self.frames
  self.fn = { top = top, vararg = f.vararg, closure_depth = 0, loops = 0, frame_base = #self.frames,
    first_id = self.nid + 1 }
  self:push_scope()
  for _, p in ipairs(f.params) do self:declare(p) end
  -- a function inside the kernel runs wherever it is called: the constructs
  -- open at its call count from the depth they had on entry
  if not top then w:put("local __cute_cb =", f.line); w:put(RT .. ":cbase();") end
  if f.vararg then w:put("local __cute_va =", f.line); w:put(RT .. ":pk(...)") end
  self:block(f.body)
  self:pop_scope()
  w:put("end", f.endline)
  self.fn = saved_fn
  self.frames = saved_frames
end

---------------------------------------------------------------------------
-- statements
---------------------------------------------------------------------------
function R:block(b)
  self:push_scope()
  for _, st in ipairs(b) do self:stat(st) end
  self:pop_scope()
end

-- a closure for a construct body: function(params) <block> [extra] end
function R:closure(line, params, body, endline, extra)
  local w = self.w
  w:put("function(" .. table.concat(params, ",") .. ")", line)
  self.fn.closure_depth = self.fn.closure_depth + 1
  local plain = self.fn.plain
  self.fn.plain = false
  self:push_scope()
  for _, p in ipairs(params) do self:declare(p) end
  for _, st in ipairs(body) do self:stat(st) end
  if extra then extra() end
  self:pop_scope()
  self.fn.plain = plain
  self.fn.closure_depth = self.fn.closure_depth - 1
  w:put("end", endline)
end

-- getter and setter of the outer locals a construct assigns
function R:accessors(frame, line)
  local w = self.w
  if #frame.list == 0 then w:put(", nil, nil", line); return end
  local names = table.concat(frame.list, ",")
  w:put(", function() return " .. names .. " end", line)
  w:put(", function(...) " .. names .. " = ... end")
end

function R:new_site(kind, line)
  self.nsites = self.nsites + 1
  local s = { kind = kind, line = line, plain_loop = self.fn.plain or nil }
  self.sites[self.nsites] = s
  return self.nsites, s
end

function R:open_frame()
  local f = { start = self.nid + 1, set = {}, list = {} }
  self.frames[#self.frames + 1] = f
  return f
end

function R:close_frame(f, site)
  self.frames[#self.frames] = nil
  site.names = f.list
end

-- `do local __cute_s = rt:pk(<call>) if __cute_s.n > 0 then ... end end`
function R:construct_begin(line)
  self.w:put("do local __cute_s =", line)
  self.w:put(RT .. ":pk(")
end

function R:construct_end(line)
  local w = self.w
  w:put(") if __cute_s.n > 0 then", line)
  -- a break that leaves a Lua loop kept as written (it contains a goto)
  if self.fn.plain then w:put("if __cute_s[1] == 1 then break end") end
  if self.fn.closure_depth > 0 then
    w:put("return " .. RT .. ":up(__cute_s)")
  else
    w:put("return " .. RT .. ":rv(__cute_s)")
  end
  w:put("end end")
end

function R:if_chain(st, i)
  local w = self.w
  local line = i == 1 and st.line or st.lines[i]
  local id, site = self:new_site("if", line)
  local frame = self:open_frame()
  self:construct_begin(line)
  self:rt_call("if_", line)
  w:put(tostring(id) .. ",")
  self:expr(st.conds[i])
  w:put(",")
  local nexti = i + 1
  local endl = st.lines[nexti] or st.elseline or st.endline
  self:closure(st.conds[i].line, {}, st.blocks[i], endl)
  w:put(",")
  if st.conds[nexti] then
    self:closure(st.lines[nexti], {}, {}, st.endline, function() self:if_chain(st, nexti) end)
  elseif st.orelse then
    self:closure(st.elseline, {}, st.orelse, st.endline)
  else
    w:put("nil")
  end
  self:close_frame(frame, site)
  self:accessors(frame, st.endline)
  w:put(")")
  self:construct_end(st.endline)
end

function R:assign(st)
  local w = self.w
  local nf = #self.frames
  local checked = false
  local nested = not self.fn.top -- a function inside the kernel: called wherever, so always checked
  for _, t in ipairs(st.targets) do
    if t.k == "Name" then
      if not self:resolve(t.name) and (nf > 0 or nested) then checked = true end
    elseif self:level_of(t) < nf or (nested and self:outside_fn(t)) then
      checked = true
    end
  end
  if not checked then
    for i, t in ipairs(st.targets) do
      if i > 1 then w:put(",") end
      if t.k == "Name" then self:assigned(t.name) end
      self:expr(t)
    end
    w:put("=")
    self:exprlist(st.exprs)
    w:put(";")
    return
  end
  -- assignments to globals and table fields inside a construct are checked
  -- at run time (an error once a traced region was opened since the table's
  -- declaration, unless a tensor store)
  local tmps = {}
  for i = 1, #st.targets do tmps[i] = "__cute_a" .. i end
  w:put("do local " .. table.concat(tmps, ",") .. " =", st.line)
  self:exprlist(st.exprs)
  w:put(";")
  for i, t in ipairs(st.targets) do
    if t.k == "Name" then
      if self:resolve(t.name) then
        self:assigned(t.name)
        w:put(t.name .. " = " .. tmps[i] .. ";", t.line)
      else
        w:put(("%s = %s:gset(%q, %s, 0);"):format(t.name, RT, t.name, tmps[i]), t.line)
      end
    else
      local lvl = self:level_of(t)
      self:rt_call("setf", t.line)
      self:expr(t.obj); w:put(",")
      if t.dotname then w:put(("%q"):format(t.dotname)) else self:expr(t.key) end
      w:put(", " .. tmps[i] .. self:setf_level(lvl, t))
    end
  end
  w:put("end;")
end

-- `goto L` ... `::L::` as the last statement of a for / while body is Lua's
-- spelling of continue: those gotos become status 4 (the IR continue when the
-- loop is traced) and the label goes, unless a goto to L sits inside a nested
-- loop (or repeat) that does not end with its own ::L:: (it would leave that
-- loop), or the body holds any other goto or label (the loop stays a Lua
-- statement, R:plain); then the gotos stay Lua gotos.
local cont_loops = { While = true, Fornum = true, Forin = true }
local function mark_continue(loop)
  if loop.cont_checked then return end
  loop.cont_checked = true
  local body = loop.body
  local last = body[#body]
  if not (last and last.k == "Label") then return end
  local name, gotos, ok = last.name, {}, true
  local function walk(node, nested)
    if type(node) ~= "table" or node.k == "Func" or not ok then return end
    if node.k == "Goto" and node.name == name then
      if nested then ok = false else gotos[#gotos + 1] = node end
      return
    end
    if node.k == "Label" and node ~= last and node.name == name then ok = false; return end
    local inner = node ~= loop and (cont_loops[node.k] or node.k == "Repeat")
    if inner and cont_loops[node.k] then
      mark_continue(node)
      if node.cont_label == name then return end -- its own continue
    end
    for key, v in pairs(node) do
      if type(v) == "table" and key ~= "cond" and key ~= "conds" and key ~= "exprs" then
        walk(v, nested or inner)
      end
    end
  end
  walk(body, false)
  if not ok then return end
  -- any other goto or label keeps the loop a Lua statement: then these stay Lua gotos too
  local mine = {}
  for _, g in ipairs(gotos) do mine[g] = true end
  local function other(node)
    if type(node) ~= "table" or node.k == "Func" then return false end
    if (node.k == "Goto" or node.k == "Label") and not node.cont and not mine[node] and node ~= last then
      return true
    end
    for key, v in pairs(node) do
      if type(v) == "table" and key ~= "cond" and key ~= "conds" and key ~= "exprs" and other(v) then return true end
    end
    return false
  end
  if other(body) then return end
  for _, g in ipairs(gotos) do g.cont = true end
  last.cont = true
  loop.cont_label = name
end

-- does a statement contain a goto or a label (not counting nested functions
-- and the gotos / labels of a continue)?
local goto_memo = setmetatable({}, { __mode = "k" })
local function has_goto(node)
  if type(node) ~= "table" or node.k == "Func" then return false end
  local m = goto_memo[node]
  if m ~= nil then return m end
  if cont_loops[node.k] then mark_continue(node) end
  m = (node.k == "Goto" or node.k == "Label") and not node.cont
  if not m then
    for key, v in pairs(node) do
      if type(v) == "table" and key ~= "cond" and key ~= "conds" and key ~= "exprs" and has_goto(v) then
        m = true
        break
      end
    end
  end
  goto_memo[node] = m
  return m
end

-- an if / loop containing a goto or a label stays a Lua statement (a goto
-- cannot leave a closure); its conditions and bounds must be Lua values
-- (cute.control raises at the line when one is traced)
function R:plain(st)
  local w, k = self.w, st.k
  local function cond(e, what)
    self:rt_call("lua_cond", e.line); self:expr(e); w:put((", %q)"):format(what))
  end
  local function loop_body(body, params)
    local plain = self.fn.plain
    self.fn.plain = true
    self:push_scope()
    for _, p in ipairs(params or {}) do self:declare(p) end
    for _, s2 in ipairs(body) do self:stat(s2) end
    self:pop_scope()
    self.fn.plain = plain
  end
  if k == "If" then
    for i, c in ipairs(st.conds) do
      w:put(i == 1 and "if" or "elseif", i == 1 and st.line or st.lines[i])
      cond(c, "if")
      w:put("then")
      self:block(st.blocks[i])
    end
    if st.orelse then w:put("else", st.elseline); self:block(st.orelse) end
    w:put("end", st.endline)
  elseif k == "While" then
    w:put("while", st.line); cond(st.cond, "while"); w:put("do")
    loop_body(st.body)
    w:put("end", st.endline)
  elseif k == "Repeat" then
    w:put("repeat", st.line)
    local plain = self.fn.plain
    self.fn.plain = true
    self:push_scope()
    for _, s2 in ipairs(st.body) do self:stat(s2) end
    w:put("until", st.untilline); cond(st.cond, "until")
    self:pop_scope()
    self.fn.plain = plain
  elseif k == "Fornum" then
    w:put("for " .. st.var .. " =", st.line)
    self:rt_call("lua_num", st.a.line); self:expr(st.a); w:put(")"); w:put(",")
    self:rt_call("lua_num", st.b.line); self:expr(st.b); w:put(")")
    if st.c then w:put(","); self:rt_call("lua_num", st.c.line); self:expr(st.c); w:put(")") end
    w:put("do")
    loop_body(st.body, { st.var })
    w:put("end", st.endline)
  else -- Forin
    w:put("for " .. table.concat(st.names, ",") .. " in", st.line)
    self:rt_call("plain_iter", st.line); self:exprlist(st.exprs); w:put(")")
    w:put("do")
    loop_body(st.body, st.names)
    w:put("end", st.endline)
  end
end

local plain_kinds = { If = true, While = true, Repeat = true, Fornum = true, Forin = true }

function R:stat(st)
  local w, k = self.w, st.k
  if plain_kinds[k] and has_goto(st) then return self:plain(st) end
  if k == "Local" then
    w:put("local", st.line)
    w:put(table.concat(st.names, ","))
    if #st.exprs > 0 then w:put("="); self:exprlist(st.exprs) end
    w:put(";")
    for _, n in ipairs(st.names) do self:declare(n) end
  elseif k == "LocalFunction" then
    w:put("local function", st.line)
    self:declare(st.name)
    w:put(st.name)
    local f = st.func
    w:put("(" .. table.concat(f.params, ",") .. (f.vararg and (#f.params > 0 and ",..." or "...") or "") .. ")")
    self:funcbody(f, false)
    w:put(";")
  elseif k == "Function" then
    -- function a.b.c:m(...) end  ==  a.b.c.m = function(self, ...) end
    if st.target.k == "Name" then
      if (#self.frames > 0 or not self.fn.top) and not self:resolve(st.target.name) then
        w:put(("%s = %s:gset(%q,"):format(st.target.name, RT, st.target.name), st.line)
        self:func_expr_plain(st.func)
        w:put(", 0);")
      else
        self:assigned(st.target.name)
        w:put(st.target.name .. " =", st.line)
        self:func_expr_plain(st.func)
        w:put(";")
      end
    else
      local tgt = st.target
      local lvl = self:level_of(tgt)
      if lvl < #self.frames or (not self.fn.top and self:outside_fn(tgt)) then
        self:rt_call("setf", st.line)
        self:expr(tgt.obj); w:put(","); w:put(("%q"):format(tgt.dotname)); w:put(",")
        self:func_expr_plain(st.func)
        w:put(self:setf_level(lvl, tgt))
      else
        self:expr(tgt); w:put("=")
        self:func_expr_plain(st.func)
        w:put(";")
      end
    end
  elseif k == "Assign" then
    self:assign(st)
  elseif k == "CallStat" then
    self:expr(st.call); w:put(";")
  elseif k == "Do" then
    w:put("do", st.line); self:block(st.body); w:put("end", st.endline)
  elseif k == "If" then
    self:if_chain(st, 1)
  elseif k == "While" then
    local id, site = self:new_site("while", st.line)
    local frame = self:open_frame()
    self:construct_begin(st.line)
    self:rt_call("while_", st.line)
    w:put(tostring(id) .. ",")
    self:expr_closure(st.cond)
    w:put(",")
    self:closure(st.body.line, {}, st.body, st.endline)
    self:close_frame(frame, site)
    self:accessors(frame, st.endline)
    w:put(")")
    self:construct_end(st.endline)
  elseif k == "Repeat" then
    local id, site = self:new_site("repeat", st.line)
    local frame = self:open_frame()
    self:construct_begin(st.line)
    self:rt_call("repeat_", st.line)
    w:put(tostring(id) .. ",")
    self:closure(st.line, {}, st.body, st.untilline, function()
      w:put("return 0,", st.untilline)
      self:expr(st.cond)
    end)
    self:close_frame(frame, site)
    self:accessors(frame, st.untilline)
    w:put(")")
    self:construct_end(st.untilline)
  elseif k == "Fornum" then
    local id, site = self:new_site("for", st.line)
    self:construct_begin(st.line)
    self:rt_call("fornum", st.line)
    w:put(tostring(id) .. ",")
    self:expr(st.a); w:put(","); self:expr(st.b); w:put(",")
    if st.c then self:expr(st.c) else w:put("nil") end
    w:put(",")
    local frame = self:open_frame()
    self:closure(st.body.line, { st.var }, st.body, st.endline)
    self:close_frame(frame, site)
    self:accessors(frame, st.endline)
    w:put(")")
    self:construct_end(st.endline)
  elseif k == "Forin" then
    local id, site = self:new_site("forin", st.line)
    self:construct_begin(st.line)
    self:rt_call("forin", st.line)
    w:put(tostring(id) .. "," .. RT .. ":pk(")
    self:exprlist(st.exprs)
    w:put("),")
    local frame = self:open_frame()
    self:closure(st.body.line, st.names, st.body, st.endline)
    self:close_frame(frame, site)
    self:accessors(frame, st.endline)
    w:put(")")
    self:construct_end(st.endline)
  elseif k == "Return" then
    if self.fn.closure_depth > 0 then
      w:put("do return " .. (self.fn.top and "2" or "3"), st.line)
      if #st.exprs > 0 then w:put(","); self:exprlist(st.exprs) end
      w:put("end")
    else
      w:put("do return", st.line)
      self:exprlist(st.exprs)
      w:put("end")
    end
  elseif k == "Break" then
    if self.fn.plain then w:put("break", st.line); return end
    if self.fn.closure_depth == 0 then self:fail(st.line, "'break' outside a loop") end
    w:put("do return 1 end", st.line)
  elseif k == "Goto" then
    -- a continue (mark_continue) inside a rewritten loop: its body returns status 4
    if st.cont and not self.fn.plain then w:put("do return 4 end", st.line); return end
    w:put("goto " .. st.name, st.line)
  elseif k == "Label" then
    if st.cont and not self.fn.plain then return end
    w:put("::" .. st.name .. "::", st.line)
  else
    self:fail(st.line, "internal: unknown statement " .. tostring(k))
  end
end

function R:func_expr_plain(f)
  local w = self.w
  w:put("function", f.line)
  local params = {}
  for _, p in ipairs(f.params) do params[#params + 1] = p end
  if f.vararg then params[#params + 1] = "..." end
  w:put("(" .. table.concat(params, ",") .. ")")
  self:funcbody(f, false)
end

---------------------------------------------------------------------------
-- locating the kernel's source
---------------------------------------------------------------------------
local registry = {} -- chunk name -> list of texts (newest last)

-- cute.register_source(chunkname, text): the text of a chunk compiled with
-- load(text, chunkname) / luaL_loadbuffer, for kernels defined in it.
function M.register_source(chunkname, text)
  if type(chunkname) ~= "string" or type(text) ~= "string" then
    cf.fail(("cute.register_source(chunkname, text): expected two strings, got %s and %s"):format(
      type(chunkname), type(text)))
  end
  local l = registry[chunkname]
  if not l then l = {}; registry[chunkname] = l end
  l[#l + 1] = text
  if #l > 256 then table.remove(l, 1) end
end

local file_cache = {}

local function candidate_texts(src)
  local c = src:sub(1, 1)
  local out = {}
  local reg = registry[src]
  if reg then for i = #reg, 1, -1 do out[#out + 1] = reg[i] end end
  if c == "@" then
    local path = src:sub(2)
    local t = file_cache[path]
    if t == nil then
      local f = io.open(path, "rb")
      t = f and f:read("*a") or false
      if f then f:close() end
      file_cache[path] = t
    end
    if t then out[#out + 1] = t end
  elseif c ~= "=" then
    out[#out + 1] = src -- load(string): the source is the text
  end
  return out
end

-- find the function expression of fn in text: same first and last line, and
-- the same parameter count / vararg
local parsed = {} -- source text -> { fns = functions } | { err = message } (at most 65 texts)
local parsed_n = 0

local function locate(text, chunk, info)
  local pr = parsed[text]
  if not pr then
    local ast, err = P.parse(text, chunk)
    pr = ast and { fns = P.functions(ast) } or { err = err }
    if parsed_n > 64 then parsed, parsed_n = {}, 0 end
    parsed[text], parsed_n = pr, parsed_n + 1
  end
  if pr.err then return nil, pr.err end
  local found = {}
  for _, f in ipairs(pr.fns) do
    local np = #f.params
    if f.line == info.linedefined and f.endline == info.lastlinedefined
      and (info.nparams == nil or np == info.nparams) and (info.isvararg == nil or f.vararg == info.isvararg) then
      found[#found + 1] = f
    end
  end
  if #found == 1 then return found[1] end
  if #found == 0 then return nil, "the function was not found in its source text" end
  return nil, "several functions match its lines"
end

-- rewrite(fn) -> new function, rewritten text, run-time object | nil, reason
-- (once per function: cute.kernel(f) twice rewrites f once)
local rewritten = setmetatable({}, { __mode = "k" })
local rewrite

function M.rewrite(fn)
  local c = rewritten[fn]
  if not c then
    c = { rewrite(fn) }
    rewritten[fn] = c
  end
  return c[1], c[2], c[3]
end

function rewrite(fn)
  local info = debug.getinfo(fn, "Su")
  if not info or info.what ~= "Lua" then return nil, "not a Lua function" end
  local src = info.source
  local texts = candidate_texts(src)
  if #texts == 0 then return nil, "its source text is not available (" .. tostring(src):sub(1, 60) .. ")" end
  local f, why
  for _, text in ipairs(texts) do
    f, why = locate(text, info.short_src, info)
    if f then break end
  end
  if not f then return nil, why end
  -- upvalues of the original, by name
  local upnames, nups = {}, info.nups or 0
  for i = 1, nups do
    local n = debug.getupvalue(fn, i)
    if n then upnames[n] = i end
  end
  local r = setmetatable({ w = writer(), scope = {}, frames = {}, nid = 0, upnames = upnames,
    chunk = info.short_src, sites = {}, nsites = 0 }, R)
  local w = r.w
  local decl = {}
  for n in pairs(upnames) do decl[#decl + 1] = n end
  table.sort(decl)
  w:put("local " .. RT .. " = ...;")
  if #decl > 0 then w:put("local " .. table.concat(decl, ",") .. ";") end
  w:put("return")
  local ok, e = pcall(function()
    w:put("function", f.line)
    w:put("(" .. table.concat(f.params, ",") .. (f.vararg and (#f.params > 0 and ",..." or "...") or "") .. ")")
    w:put(RT .. ":enter();")
    r:funcbody(f, true)
  end)
  if not ok then
    if type(e) == "table" then return nil, e.msg end
    cf.rethrow(e)
  end
  local text = w:text()
  local chunk, lerr = loadstring(text, src)
  if not chunk then return nil, "internal: the rewritten code does not compile: " .. tostring(lerr), text end
  local rt = control.new(r.sites)
  local newf = chunk(rt)
  for i = 1, 255 do
    local n = debug.getupvalue(newf, i)
    if not n then break end
    if n ~= RT and upnames[n] then debug.upvaluejoin(newf, i, fn, upnames[n]) end
  end
  setfenv(newf, getfenv(fn))
  return newf, text, rt
end

M.register = M.register_source

local warned = {}

-- cute.kernel's hook: k.fn becomes the rewritten function.  opts.frontend =
-- false opts out; a kernel whose source cannot be read or rewritten keeps its
-- function (traced with the operator-level checks) and says so once on stderr.
function M.attach(k, fn, opts)
  local fe = opts and opts.frontend
  if fe ~= nil and type(fe) ~= "boolean" then
    cf.fail(("cute.kernel: option frontend must be true or false, got %s"):format(tostring(fe)))
  end
  k.source = function() return nil end
  if fe == false then k.frontend = false; k.frontend_error = "turned off (frontend = false)"; return end
  local newf, text, rt = M.rewrite(fn)
  if not newf then
    k.frontend, k.frontend_error = false, text
    local key = tostring(k.name) .. "\0" .. tostring(text)
    if not warned[key] then
      warned[key] = true
      io.stderr:write(("cute.kernel %s: the source front end is off (%s): conditions and loops are traced " ..
        "with the operator-level checks only (see docs/DSL.md, Conditions and control flow)\n"):format(
        tostring(k.name), tostring(text)))
    end
    return
  end
  k.fn, k.frontend, k.rt = newf, true, rt
  k.source = function() return text end
  local base_trace = getmetatable(k).__index.trace
  -- a Lua number carried through a traced branch takes the type of the traced
  -- value assigned to it: when the trace finds that type, it traces again
  k.trace = function(self, ...)
    rt:reset(false)
    for _ = 1, 32 do
      local r = control.pack(pcall(base_trace, self, ...))
      if r[1] then return unpack(r, 2, r.n) end
      local e = r[2]
      if not (type(e) == "string" and e:find(control.RETRY, 1, true)) then cf.rethrow(e) end
      rt:reset(true)
    end
    cf.fail("cute.kernel " .. tostring(self.name) .. ": the types of the locals carried through traced branches " ..
      "do not settle")
  end
end

return M
