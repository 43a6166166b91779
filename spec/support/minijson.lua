-- A small JSON reader for the test vectors (objects, arrays, strings, integers,
-- true/false/null).  Not a general-purpose parser: numbers are integers or floats.
local M = {}

local function skip(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local decode_value

local escapes = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }

local function decode_string(s, i) -- s:sub(i,i) == '"'
  local out, j = {}, i + 1
  while true do
    local c = s:sub(j, j)
    if c == "" then error("json: unterminated string at " .. i) end
    if c == '"' then return table.concat(out), j + 1 end
    if c == "\\" then
      local e = s:sub(j + 1, j + 1)
      if e == "u" then
        out[#out + 1] = string.char(tonumber(s:sub(j + 2, j + 5), 16) % 256); j = j + 6
      else
        out[#out + 1] = escapes[e] or error("json: bad escape at " .. j); j = j + 2
      end
    else
      out[#out + 1] = c; j = j + 1
    end
  end
end

decode_value = function(s, i)
  i = skip(s, i)
  local c = s:sub(i, i)
  if c == "{" then
    local t = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "}" then return t, i + 1 end
    while true do
      local k; k, i = decode_string(s, skip(s, i))
      i = skip(s, i); assert(s:sub(i, i) == ":", "json: expected ':'")
      t[k], i = decode_value(s, i + 1)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "}" then return t, i + 1 end
      assert(d == ",", "json: expected ',' or '}' at " .. i)
      i = i + 1
    end
  elseif c == "[" then
    local t = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "]" then return t, i + 1 end
    while true do
      t[#t + 1], i = decode_value(s, i)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "]" then return t, i + 1 end
      assert(d == ",", "json: expected ',' or ']' at " .. i)
      i = i + 1
    end
  elseif c == '"' then
    return decode_string(s, i)
  elseif s:sub(i, i + 3) == "true" then return true, i + 4
  elseif s:sub(i, i + 4) == "false" then return false, i + 5
  elseif s:sub(i, i + 3) == "null" then return nil, i + 4
  else
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
    if not num or num == "" then error("json: unexpected '" .. c .. "' at " .. i) end
    return tonumber(num), i + #num
  end
end

function M.decode(s)
  local v, i = decode_value(s, 1)
  i = skip(s, i)
  if i <= #s then error("json: trailing text at " .. i) end
  return v
end

return M
