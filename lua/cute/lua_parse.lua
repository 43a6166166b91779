-- cute.lua_parse: a lexer and parser for LuaJIT's syntax (Lua 5.1 plus goto and
-- labels, LuaJIT's numeric literals 1ULL / 1LL / 1i / 0x1p4 / 0b101, long
-- strings and comments).  It produces an AST whose nodes carry the line of
-- their first token, so that the front end (cute.frontend) can print rewritten
-- code with every token on its original line.  Literals keep their source text.
--
-- parse(text, chunkname) -> block | nil, "chunkname:line: message"
-- AST: statements {k = "Local" | "Assign" | "Call" | "Do" | "While" | "Repeat" | "If" |
-- "Fornum" | "Forin" | "Function" | "LocalFunction" | "Return" | "Break" | "Goto" |
-- "Label"}, expressions {k = "Nil" | "True" | "False" | "Number" | "String" |
-- "Vararg" | "Func" | "Table" | "Binop" | "Unop" | "Name" | "Index" | "Call" |
-- "Method" | "Paren"}.  Every node has .line; blocks have .endline.
local M = {}

local keywords = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
  repeat return then true until while]]):gmatch("%a+") do keywords[w] = true end
M.keywords = keywords

local function lex_error(chunk, line, msg) error({ msg = ("%s:%d: %s"):format(chunk, line, msg) }, 0) end

-- long bracket at position i ("[" followed by "="* and "["): returns level or nil
local function long_open(s, i)
  local j = i + 1
  while s:sub(j, j) == "=" do j = j + 1 end
  if s:sub(j, j) == "[" then return j - i - 1, j end
  return nil
end

function M.lex(s, chunk)
  local toks, n = {}, 0
  local i, line, len = 1, 1, #s
  if s:sub(1, 1) == "#" then -- shebang line
    local e = s:find("\n", 1, true) or len + 1
    i = e
  end
  local function count_nl(a, b)
    local c = 0
    for _ in s:sub(a, b):gmatch("\n") do c = c + 1 end
    return c
  end
  local function long_string(at, what)
    local level, j = long_open(s, at)
    local close = "]" .. ("="):rep(level) .. "]"
    local e = s:find(close, j + 1, true)
    if not e then lex_error(chunk, line, "unfinished long " .. what) end
    return e + #close - 1
  end
  while true do
    -- whitespace and comments
    while i <= len do
      local c = s:sub(i, i)
      if c == "\n" then line = line + 1; i = i + 1
      elseif c == " " or c == "\t" or c == "\r" or c == "\f" or c == "\v" then i = i + 1
      elseif c == "-" and s:sub(i + 1, i + 1) == "-" then
        if s:sub(i + 2, i + 2) == "[" and long_open(s, i + 2) then
          local e = long_string(i + 2, "comment")
          line = line + count_nl(i, e); i = e + 1
        else
          local e = s:find("\n", i, true) or len + 1
          i = e
        end
      else break end
    end
    if i > len then n = n + 1; toks[n] = { t = "eof", v = "<eof>", line = line }; break end
    local c = s:sub(i, i)
    local tline = line
    if c:match("[%a_]") then
      local e = s:find("[^%w_]", i) or len + 1
      local w = s:sub(i, e - 1)
      n = n + 1; toks[n] = { t = keywords[w] and "kw" or "name", v = w, line = tline }
      i = e
    elseif c:match("%d") or (c == "." and s:sub(i + 1, i + 1):match("%d")) then
      local j
      if s:sub(i, i + 1):lower() == "0x" then
        j = i + 2
        while true do
          local d = s:sub(j, j)
          if d:match("[%x%.]") then j = j + 1
          elseif d:match("[pP]") then
            j = j + 1
            if s:sub(j, j):match("[%+%-]") then j = j + 1 end
          else break end
        end
      elseif s:sub(i, i + 1):lower() == "0b" then
        j = i + 2
        while s:sub(j, j):match("[01]") do j = j + 1 end
      else
        j = i
        while true do
          local d = s:sub(j, j)
          if d:match("[%d%.]") then j = j + 1
          elseif d:match("[eE]") then
            j = j + 1
            if s:sub(j, j):match("[%+%-]") then j = j + 1 end
          else break end
        end
      end
      -- LuaJIT suffixes: LL, ULL, i
      local rest = s:sub(j, j + 2):upper()
      if rest == "ULL" then j = j + 3
      elseif rest:sub(1, 2) == "LL" then j = j + 2
      elseif rest:sub(1, 1) == "I" and not s:sub(j + 1, j + 1):match("[%w_]") then j = j + 1 end
      if s:sub(j, j):match("[%w_]") then lex_error(chunk, tline, "malformed number near '" .. s:sub(i, j) .. "'") end
      n = n + 1; toks[n] = { t = "num", v = s:sub(i, j - 1), line = tline }
      i = j
    elseif c == '"' or c == "'" then
      local j = i + 1
      while true do
        local d = s:sub(j, j)
        if d == "" or d == "\n" then lex_error(chunk, tline, "unfinished string") end
        if d == "\\" then
          local nx = s:sub(j + 1, j + 1)
          if nx == "\n" then line = line + 1
          elseif nx == "z" then
            local k = j + 2
            while s:sub(k, k):match("%s") do
              if s:sub(k, k) == "\n" then line = line + 1 end
              k = k + 1
            end
            j = k - 2
          end
          j = j + 2
        elseif d == c then break
        else j = j + 1 end
      end
      n = n + 1; toks[n] = { t = "str", v = s:sub(i, j), line = tline }
      i = j + 1
    elseif c == "[" and long_open(s, i) then
      local e = long_string(i, "string")
      n = n + 1; toks[n] = { t = "str", v = s:sub(i, e), line = tline }
      line = line + count_nl(i, e)
      i = e + 1
    else
      local three, two = s:sub(i, i + 2), s:sub(i, i + 1)
      local op
      if three == "..." then op = three
      elseif two == ".." or two == "==" or two == "~=" or two == "<=" or two == ">=" or two == "::" then op = two
      elseif c:match("[%+%-%*/%%%^#<>=%(%){}%[%];:,%.]") then op = c
      else lex_error(chunk, tline, "unexpected symbol near '" .. c .. "'") end
      n = n + 1; toks[n] = { t = "op", v = op, line = tline }
      i = i + #op
    end
  end
  return toks
end

---------------------------------------------------------------------------
-- parser
---------------------------------------------------------------------------
local P = {}
P.__index = P

function P:peek(k) return self.toks[self.pos + (k or 0)] end
function P:next() local t = self.toks[self.pos]; self.pos = self.pos + 1; return t end
function P:err(msg, tok)
  tok = tok or self:peek()
  error({ msg = ("%s:%d: %s near '%s'"):format(self.chunk, tok.line, msg, tok.v) }, 0)
end
function P:is(v) local t = self:peek(); return (t.t == "op" or t.t == "kw") and t.v == v end
function P:accept(v) if self:is(v) then return self:next() end end
function P:expect(v, what)
  if not self:is(v) then self:err("'" .. v .. "' expected" .. (what and (" (" .. what .. ")") or "")) end
  return self:next()
end
function P:name()
  local t = self:peek()
  if t.t ~= "name" then self:err("<name> expected") end
  self.pos = self.pos + 1
  return t.v, t.line
end

local block_end = { ["end"] = true, ["else"] = true, ["elseif"] = true, ["until"] = true, ["<eof>"] = true }

function P:block()
  local b = { line = self:peek().line }
  while true do
    local t = self:peek()
    if (t.t == "kw" and block_end[t.v]) or t.t == "eof" then break end
    if t.t == "kw" and t.v == "return" then
      b[#b + 1] = self:retstat()
      break
    end
    local st = self:statement()
    if st then b[#b + 1] = st end
  end
  b.endline = self:peek().line
  return b
end

function P:retstat()
  local t = self:next()
  local st = { k = "Return", line = t.line, exprs = {} }
  local p = self:peek()
  if not ((p.t == "kw" and block_end[p.v]) or p.t == "eof" or self:is(";")) then st.exprs = self:exprlist() end
  self:accept(";")
  return st
end

function P:statement()
  local t = self:peek()
  local line = t.line
  if t.t == "op" and t.v == ";" then self:next(); return nil end
  if t.t == "op" and t.v == "::" then
    self:next()
    local nm = self:name()
    self:expect("::")
    return { k = "Label", line = line, name = nm }
  end
  if t.t == "kw" then
    local v = t.v
    if v == "if" then
      self:next()
      local st = { k = "If", line = line, conds = {}, blocks = {}, lines = {} }
      st.conds[1] = self:expr(); self:expect("then"); st.blocks[1] = self:block()
      while self:is("elseif") do
        local e = self:next()
        st.lines[#st.conds + 1] = e.line
        st.conds[#st.conds + 1] = self:expr(); self:expect("then"); st.blocks[#st.blocks + 1] = self:block()
      end
      if self:is("else") then
        st.elseline = self:next().line
        st.orelse = self:block()
      end
      st.endline = self:expect("end", "to close 'if' at line " .. line).line
      return st
    elseif v == "while" then
      self:next()
      local c = self:expr(); self:expect("do")
      local b = self:block()
      local e = self:expect("end", "to close 'while' at line " .. line)
      return { k = "While", line = line, cond = c, body = b, endline = e.line }
    elseif v == "do" then
      self:next()
      local b = self:block()
      local e = self:expect("end", "to close 'do' at line " .. line)
      return { k = "Do", line = line, body = b, endline = e.line }
    elseif v == "for" then
      self:next()
      local n1 = self:name()
      if self:is("=") then
        self:next()
        local a = self:expr(); self:expect(",")
        local b = self:expr()
        local c
        if self:accept(",") then c = self:expr() end
        self:expect("do")
        local body = self:block()
        local e = self:expect("end", "to close 'for' at line " .. line)
        return { k = "Fornum", line = line, var = n1, a = a, b = b, c = c, body = body, endline = e.line }
      end
      local names = { n1 }
      while self:accept(",") do names[#names + 1] = self:name() end
      self:expect("in")
      local exprs = self:exprlist()
      self:expect("do")
      local body = self:block()
      local e = self:expect("end", "to close 'for' at line " .. line)
      return { k = "Forin", line = line, names = names, exprs = exprs, body = body, endline = e.line }
    elseif v == "repeat" then
      self:next()
      local b = self:block()
      local u = self:expect("until", "to close 'repeat' at line " .. line)
      local c = self:expr()
      return { k = "Repeat", line = line, body = b, cond = c, untilline = u.line }
    elseif v == "function" then
      self:next()
      local nm, nl = self:name()
      local target = { k = "Name", name = nm, line = nl }
      local is_method = false
      while self:is(".") or self:is(":") do
        local sep = self:next().v
        local key, kl = self:name()
        target = { k = "Index", obj = target, key = { k = "String", v = ("%q"):format(key), line = kl },
          line = nl, dotname = key }
        if sep == ":" then is_method = true; break end
      end
      local f = self:funcbody(line, is_method)
      return { k = "Function", line = line, target = target, func = f }
    elseif v == "local" then
      self:next()
      if self:accept("function") then
        local nm = self:name()
        local f = self:funcbody(line, false)
        return { k = "LocalFunction", line = line, name = nm, func = f }
      end
      local names = { (self:name()) }
      while self:accept(",") do names[#names + 1] = self:name() end
      local exprs = {}
      if self:accept("=") then exprs = self:exprlist() end
      return { k = "Local", line = line, names = names, exprs = exprs }
    elseif v == "return" then
      return self:retstat()
    elseif v == "break" then
      self:next()
      return { k = "Break", line = line }
    elseif v == "goto" then
      self:next()
      local nm = self:name()
      return { k = "Goto", line = line, name = nm }
    end
  end
  -- expression statement: call or assignment
  local e = self:suffixedexp()
  if self:is("=") or self:is(",") then
    local targets = { e }
    while self:accept(",") do targets[#targets + 1] = self:suffixedexp() end
    for _, x in ipairs(targets) do
      if x.k ~= "Name" and x.k ~= "Index" then self:err("syntax error (cannot assign)") end
    end
    self:expect("=")
    local exprs = self:exprlist()
    return { k = "Assign", line = line, targets = targets, exprs = exprs }
  end
  if e.k ~= "Call" and e.k ~= "Method" then self:err("syntax error") end
  return { k = "CallStat", line = line, call = e }
end

function P:funcbody(line, is_method)
  self:expect("(")
  local params, vararg = {}, false
  if is_method then params[1] = "self" end
  if not self:is(")") then
    repeat
      if self:accept("...") then vararg = true; break end
      params[#params + 1] = self:name()
    until not self:accept(",")
  end
  self:expect(")")
  local body = self:block()
  local e = self:expect("end", "to close 'function' at line " .. line)
  return { k = "Func", line = line, params = params, vararg = vararg, body = body, endline = e.line,
    is_method = is_method }
end

function P:exprlist()
  local l = { self:expr() }
  while self:accept(",") do l[#l + 1] = self:expr() end
  return l
end

function P:primaryexp()
  local t = self:peek()
  if t.t == "name" then
    self:next()
    return { k = "Name", name = t.v, line = t.line }
  elseif self:is("(") then
    self:next()
    local e = self:expr()
    self:expect(")")
    return { k = "Paren", e = e, line = t.line }
  end
  self:err("unexpected symbol")
end

function P:callargs()
  local t = self:peek()
  if t.t == "str" then self:next(); return { { k = "String", v = t.v, line = t.line } } end
  if self:is("{") then return { self:table() } end
  self:expect("(")
  local args = {}
  if not self:is(")") then args = self:exprlist() end
  self:expect(")")
  return args
end

function P:suffixedexp()
  local e = self:primaryexp()
  while true do
    local t = self:peek()
    if self:is(".") then
      self:next()
      local nm, nl = self:name()
      e = { k = "Index", obj = e, key = { k = "String", v = ("%q"):format(nm), line = nl }, dotname = nm, line = e.line }
    elseif self:is("[") then
      self:next()
      local key = self:expr()
      self:expect("]")
      e = { k = "Index", obj = e, key = key, line = e.line }
    elseif self:is(":") then
      self:next()
      local nm = self:name()
      e = { k = "Method", obj = e, name = nm, args = self:callargs(), line = e.line, cline = t.line }
    elseif self:is("(") or self:is("{") or t.t == "str" then
      e = { k = "Call", f = e, args = self:callargs(), line = e.line, cline = t.line }
    else
      return e
    end
  end
end

function P:table()
  local t = self:expect("{")
  local items = {}
  while not self:is("}") do
    if self:is("[") then
      self:next()
      local key = self:expr(); self:expect("]"); self:expect("=")
      items[#items + 1] = { kind = "keyed", key = key, value = self:expr() }
    elseif self:peek().t == "name" and self:peek(1).t == "op" and self:peek(1).v == "=" then
      local nm = self:name(); self:next()
      items[#items + 1] = { kind = "named", name = nm, value = self:expr() }
    else
      items[#items + 1] = { kind = "pos", value = self:expr() }
    end
    if not (self:accept(",") or self:accept(";")) then break end
  end
  local e = self:expect("}")
  return { k = "Table", items = items, line = t.line, endline = e.line }
end

function P:simpleexp()
  local t = self:peek()
  if t.t == "num" then self:next(); return { k = "Number", v = t.v, line = t.line } end
  if t.t == "str" then self:next(); return { k = "String", v = t.v, line = t.line } end
  if t.t == "kw" then
    if t.v == "nil" then self:next(); return { k = "Nil", line = t.line } end
    if t.v == "true" then self:next(); return { k = "True", line = t.line } end
    if t.v == "false" then self:next(); return { k = "False", line = t.line } end
    if t.v == "function" then self:next(); return self:funcbody(t.line, false) end
  end
  if self:is("...") then self:next(); return { k = "Vararg", line = t.line } end
  if self:is("{") then return self:table() end
  return self:suffixedexp()
end

-- precedence (left, right) as in lparser.c
local binprec = {
  ["or"] = { 1, 1 }, ["and"] = { 2, 2 },
  ["<"] = { 3, 3 }, [">"] = { 3, 3 }, ["<="] = { 3, 3 }, [">="] = { 3, 3 }, ["~="] = { 3, 3 }, ["=="] = { 3, 3 },
  [".."] = { 5, 4 }, ["+"] = { 6, 6 }, ["-"] = { 6, 6 }, ["*"] = { 7, 7 }, ["/"] = { 7, 7 }, ["%"] = { 7, 7 },
  ["^"] = { 10, 9 },
}
local UNARY_PREC = 8
M.binprec = binprec

function P:expr(limit)
  limit = limit or 0
  local e
  local t = self:peek()
  if (t.t == "kw" and t.v == "not") or (t.t == "op" and (t.v == "-" or t.v == "#")) then
    self:next()
    e = { k = "Unop", op = t.v, e = self:expr(UNARY_PREC), line = t.line }
  else
    e = self:simpleexp()
  end
  while true do
    local o = self:peek()
    local p = (o.t == "op" or o.t == "kw") and binprec[o.v]
    if not p or p[1] <= limit then break end
    self:next()
    local r = self:expr(p[2])
    e = { k = "Binop", op = o.v, l = e, r = r, line = e.line, opline = o.line }
  end
  return e
end

-- Parse a whole chunk.  Returns the block, or nil and a message.
function M.parse(text, chunk)
  chunk = chunk or "?"
  local ok, res = pcall(function()
    local p = setmetatable({ toks = M.lex(text, chunk), pos = 1, chunk = chunk }, P)
    local b = p:block()
    if p:peek().t ~= "eof" then p:err("'<eof>' expected") end
    return b
  end)
  if ok then return res end
  if type(res) == "table" then return nil, res.msg end
  error(res, 0)
end

-- All function expressions / statements of a block (depth first), for
-- locating a function by its lines.
function M.functions(node, out)
  out = out or {}
  if type(node) ~= "table" then return out end
  if node.k == "Func" then out[#out + 1] = node end
  for k, v in pairs(node) do
    if type(v) == "table" and k ~= "parent" then M.functions(v, out) end
  end
  return out
end

return M
