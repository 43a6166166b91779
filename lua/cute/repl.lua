-- cute.repl: the cuteluajit REPL (docs/REPL.md).
--
--   repl.run()            the read-eval-print loop (cuteluajit starts it)
--   repl.format(v)        one value as the REPL shows it
--   repl.format_all(...)  several, one per line when any takes several lines
--   repl.pretty(v)        tables as readable fields
--
-- The line editor, history, Tab and Ctrl-C are "cute.lineedit" (src/lineedit.c,
-- part of the cuteluajit program); a host without it gets plain io.read.
-- Commands (":ptx", ":time", ...) are lua/cute/repl_cmd.lua, completion
-- lua/cute/repl_complete.lua.
local cute_layout = require("cute.layout")

local M = {}

local keywords = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return then " ..
  "true until while"):gmatch("%a+") do keywords[w] = true end
M.keywords = keywords

local function is_tuple(t, depth)
  if depth > 32 then return false end
  if t == cute_layout._ then return true end
  for k, v in pairs(t) do
    if type(k) ~= "number" then return false end
    if type(v) == "table" then
      if not is_tuple(v, depth + 1) then return false end
    elseif type(v) ~= "number" and not cute_layout.is_layout(v) then
      return false
    end
  end
  return #t > 0 or next(t) == nil
end

local function cute_notation(v)
  if type(v) == "cdata" then
    if not require("ffi").istype(cute_layout.value_t, v) then return nil end -- (other cdata: as Lua shows it)
    local ok, s = pcall(cute_layout.tostring, v)
    if ok then return s end
  elseif type(v) == "table" and getmetatable(v) == nil and next(v) ~= nil and is_tuple(v, 0) then
    local ok, s = pcall(cute_layout.tostring, v)
    if ok then return s end
  end
end

local function is_result(v)
  local c = package.loaded["cute.compile"]
  return c and c.Result and getmetatable(v) == c.Result
end

---------------------------------------------------------------------------
-- readable tables
---------------------------------------------------------------------------
local WIDTH, MAX_ITEMS, MAX_DEPTH = 78, 64, 4

local function text_summary(s)
  local lines = select(2, s:gsub("\n", "")) + (s:sub(-1) == "\n" and 0 or 1)
  return ("<text: %d line%s, %d bytes>"):format(lines, lines == 1 and "" or "s", #s)
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k] then return k end
  if type(k) == "string" then return ("[%q]"):format(k) end
  return "[" .. tostring(k) .. "]"
end

local function sorted_keys(t, n)
  local ks = {}
  for k in pairs(t) do
    if not (type(k) == "number" and k >= 1 and k <= n and k % 1 == 0) then ks[#ks + 1] = k end
  end
  table.sort(ks, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return ks
end

local pretty

local function pretty_table(t, indent, depth, seen)
  if seen[t] then return "<cycle>" end
  local n = #t
  local ks = sorted_keys(t, n)
  if n + #ks == 0 then return "{}" end
  if depth >= MAX_DEPTH then return ("{...%d fields}"):format(n + #ks) end
  seen[t] = true
  local items = {}
  for i = 1, math.min(n, MAX_ITEMS) do items[#items + 1] = pretty(t[i], indent .. "  ", depth + 1, seen) end
  for i = 1, #ks do
    if #items >= MAX_ITEMS then break end
    local k = ks[i]
    items[#items + 1] = key_text(k) .. " = " .. pretty(t[k], indent .. "  ", depth + 1, seen)
  end
  local more = n + #ks - #items
  if more > 0 then items[#items + 1] = ("... %d more"):format(more) end
  seen[t] = nil
  local flat = "{ " .. table.concat(items, ", ") .. " }"
  if #flat + #indent <= WIDTH and not flat:find("\n") then return flat end
  return "{\n" .. indent .. "  " .. table.concat(items, ",\n" .. indent .. "  ") .. ",\n" .. indent .. "}"
end

function pretty(v, indent, depth, seen)
  indent, depth, seen = indent or "", depth or 0, seen or {}
  local tv = type(v)
  if tv == "string" then
    if #v > 60 or v:find("\n") then return text_summary(v) end
    return ("%q"):format(v)
  end
  local cn = cute_notation(v)
  if cn then return cn end
  if tv == "table" then
    local mt = getmetatable(v)
    if is_result(v) then
      return tostring(v) .. " " .. pretty_table(v, indent, depth, seen)
    end
    if mt ~= nil and mt.__tostring then
      local ok, s = pcall(tostring, v)
      if ok then return (s:gsub("\n", "\n" .. indent)) end
    end
    if mt == nil or type(mt) == "table" then return pretty_table(v, indent, depth, seen) end
  end
  return tostring(v)
end
M.pretty = function(v) return pretty(v) end

-- One value as the REPL shows it: strings as text, layouts and IntTuples in
-- CuTe notation, tables as readable fields, other values as Lua shows them.
function M.format(v)
  if type(v) == "string" then return v end
  return pretty(v)
end

function M.format_all(...)
  local n = select("#", ...)
  local parts, multi = {}, false
  for i = 1, n do
    parts[i] = M.format((select(i, ...)))
    if parts[i]:find("\n") then multi = true end
  end
  return table.concat(parts, multi and "\n" or "\t")
end

---------------------------------------------------------------------------
-- the loop
---------------------------------------------------------------------------
-- Without cuteluajit's line editor (a C host calling repl.run()): plain stdio.
local plain_editor = {
  readline = function(prompt) io.write(prompt); io.flush(); return io.read("*l") end,
  history_file = function() return 0 end,
  history_add = function() end,
  set_completer = function() end,
  call = function(f, handler) return xpcall(f, handler) end,
  interactive = function() return false end,
  columns = function() return 80 end,
}

local function handler(e)
  if os.getenv("CUTE_TRACEBACK") then return debug.traceback(tostring(e), 2) end
  if type(e) ~= "string" then
    local ok, s = pcall(tostring, e)
    return ok and s or ("(error object is a " .. type(e) .. " value)")
  end
  return e
end
M.handler = handler

function M.report(msg)
  io.stdout:flush()
  io.stderr:write("cuteluajit: ", tostring(msg), "\n")
  io.stderr:flush()
end

-- print the results of a call (after the status)
local function print_results(ok, ...)
  if not ok then return M.report((...)) end
  if select("#", ...) == 0 then return end
  local fine, text = pcall(M.format_all, ...)
  if not fine then return M.report(text) end
  io.write(text, "\n")
  io.stdout:flush()
end
M.print_results = print_results

-- Compile a chunk typed at the prompt ("=stdin", as lua.c names it), giving
-- its text to the kernel front end; prompt code runs in LuaJIT's interpreter
-- unless :jit on, so that Ctrl-C can always stop it.
function M.load_chunk(state, code)
  local f, err = loadstring(code, "=stdin")
  if f then
    local fe = package.loaded["cute.frontend"] or (pcall(require, "cute.frontend") and package.loaded["cute.frontend"])
    if fe and fe.register_source then pcall(fe.register_source, "=stdin", code) end
    if not state.jit then jit.off(f, true) end
  end
  return f, err
end

local function incomplete(err) return err and err:sub(-7) == "'<eof>'" end

-- Read (more lines while the chunk is unfinished), evaluate, print.  Returns
-- false at the end of input.
local function eval_chunk(state, line)
  local le = state.le
  local code = line
  if code:sub(1, 1) == "=" then code = "return " .. code:sub(2) end
  while true do
    local f, err = M.load_chunk(state, "return " .. code)
    if not f then f, err = M.load_chunk(state, code) end
    if f then
      print_results(le.call(f, handler))
      return true
    end
    if not incomplete(err) then M.report(err); return true end
    local more = le.readline(">> ")
    if more == nil then return false end
    if more == false then return true end -- Ctrl-C: the chunk is dropped
    if more:find("%S") then le.history_add(more) end
    code = code .. "\n" .. more
  end
end

-- One line typed at the prompt; false ends the session.
function M.handle(state, line)
  local s = line:match("^%s*(.-)%s*$")
  if s == "" then return true end
  if s:sub(1, 1) == ":" then return require("cute.repl_cmd").run(state, s) end
  return eval_chunk(state, line)
end

local function history_path()
  local p = os.getenv("CUTE_HISTORY")
  if p then return p ~= "" and p or nil end
  local home = os.getenv("HOME")
  return home and home ~= "" and (home .. "/.cuteluajit_history") or nil
end

function M.run(opts)
  opts = opts or {}
  local ok, le = pcall(require, "cute.lineedit")
  if not ok or type(le) ~= "table" then le = plain_editor end
  local state = { le = le, jit = false }
  M.state = state
  local hp = history_path()
  if hp then le.history_file(hp) end
  le.set_completer(function(text) return require("cute.repl_complete").complete(text) end)
  require("cute.repl_cmd").install(state)
  if le.interactive() then
    io.write(require("cute").version, " -- LuaJIT 2.1 with cute. :help for help, Ctrl-D to quit.\n")
  end
  while true do
    local line = le.readline("cute> ")
    if line == nil then break end
    if line ~= false then
      if line:find("%S") then le.history_add(line) end
      if not M.handle(state, line) then break end
    end
  end
  if le.interactive() then io.write("\n") end
end

return M
