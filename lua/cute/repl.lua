-- cute.repl: how the REPL shows values.
local cute_layout = require("cute.layout")

local M = {}

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

-- One value: layouts and IntTuples in CuTe notation, other values as Lua shows them.
function M.format(v)
  if cute_layout.is_layout(v) or (type(v) == "cdata" and pcall(cute_layout.tostring, v)) then
    local ok, s = pcall(cute_layout.tostring, v)
    if ok then return s end
  end
  if type(v) == "table" and getmetatable(v) == nil and is_tuple(v, 0) then
    local ok, s = pcall(cute_layout.tostring, v)
    if ok then return s end
  end
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

function M.format_all(...)
  local n = select("#", ...)
  local parts = {}
  for i = 1, n do parts[i] = M.format((select(i, ...))) end
  return table.concat(parts, "\t")
end

return M
