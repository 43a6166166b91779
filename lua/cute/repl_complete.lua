-- cute.repl_complete: Tab completion for the REPL (docs/REPL.md).
--
-- complete(text_before_cursor) -> start, candidates: the byte position where
-- the word being completed starts and the words that may replace it.  Knows
-- globals and keywords, table fields (through __index tables), methods after
-- ':' (functions only; strings' and layouts' methods too) and REPL commands.
-- Functions are offered with "(" appended.  Never raises and never calls a
-- function other than an __index metamethod (under pcall).
local M = {}

-- methods of layout values (cdata: their metatable cannot be listed)
local layout_methods = { "shape", "stride", "size", "cosize", "rank", "depth", "get", "kind" }

local function is_name(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

local function callable(v)
  if type(v) == "function" then return true end
  local mt = (type(v) == "table") and getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

-- the fields of v: { name = value }
local function fields_of(v)
  local out = {}
  local function add_table(t)
    for k, val in next, t do
      if is_name(k) and out[k] == nil and not k:match("^__") then out[k] = val end
    end
  end
  if type(v) == "cdata" then
    local layout = package.loaded["cute.layout"]
    if layout and (layout.is_layout(v) or layout.is_composed(v)) then
      for _, k in ipairs(layout_methods) do out[k] = layout[k] or true end
    end
    return out
  end
  local t, depth = v, 0
  while t ~= nil and depth < 8 do
    local mt
    if type(t) == "table" then
      add_table(t)
      mt = debug.getmetatable(t)
    elseif type(t) == "string" then
      mt = debug.getmetatable("")
    else
      break
    end
    if type(mt) ~= "table" then break end
    local idx = rawget(mt, "__index")
    if type(idx) == "table" then
      t = idx
    else
      -- an __index function: offer what the metatable itself holds (the
      -- usual "methods in the metatable" shape) and a __fields table
      if type(idx) == "function" then
        add_table(mt)
        if type(t) == "table" and type(rawget(t, "__fields")) == "table" then add_table(rawget(t, "__fields")) end
      end
      break
    end
    depth = depth + 1
  end
  return out
end

local function sorted(list)
  table.sort(list)
  local out, last = {}, nil
  for _, s in ipairs(list) do
    if s ~= last then out[#out + 1] = s end
    last = s
  end
  return out
end

-- the value a dotted path names, or nil
local function resolve(path)
  local v = _G
  for name in path:gmatch("[^%.]+") do
    if not is_name(name) then return nil end
    local tv = type(v)
    if tv ~= "table" and tv ~= "cdata" and tv ~= "string" and tv ~= "userdata" then return nil end
    local ok, nv = pcall(function() return v[name] end)
    if not ok or nv == nil then return nil end
    v = nv
  end
  return v
end

function M.complete(text)
  if type(text) ~= "string" then return 1, {} end
  -- a REPL command
  local cmd = text:match("^%s*:([%w_]*)$")
  if cmd then
    local out = {}
    for _, name in ipairs(require("cute.repl_cmd").names()) do
      if name:sub(1, #cmd) == cmd then out[#out + 1] = name end
    end
    return #text - #cmd + 1, sorted(out)
  end
  -- inside a string literal: nothing (an odd number of quotes before the cursor)
  local _, sq = text:gsub("'", "")
  local _, dq = text:gsub('"', "")
  if sq % 2 == 1 or dq % 2 == 1 then return #text + 1, {} end
  local word = text:match("[%w_%.:]*$")
  local start = #text - #word + 1
  if word:match("^[%d%.]") and not word:match("^%.%.") then return start, {} end
  local base, sep, partial = word:match("^(.*)([%.:])([%w_]*)$")
  local out = {}
  local function offer(name, val)
    if name:sub(1, #partial) ~= partial then return end
    if name:sub(1, 1) == "_" and partial:sub(1, 1) ~= "_" and name ~= "_" then return end
    out[#out + 1] = name .. (callable(val) and "(" or "")
  end
  if not base then
    partial = word
    for k, v in pairs(fields_of(_G)) do offer(k, v) end
    for k in pairs(require("cute.repl").keywords) do
      if k:sub(1, #partial) == partial then out[#out + 1] = k end
    end
    return start, sorted(out)
  end
  if base == "" or base:find(":") or base:find("%.%.") or base:match("%.$") then return #text + 1, {} end
  local v = resolve(base)
  if v == nil then return #text + 1, {} end
  for k, val in pairs(fields_of(v)) do
    if sep == "." or callable(val) then offer(k, val) end
  end
  return #text - #partial + 1, sorted(out)
end

return M
