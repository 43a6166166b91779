-- cute.autotune's output (docs/AUTOTUNE.md): the progress line on a
-- terminal, the results table, CSV and JSON files, and the best
-- configuration per key kept as a note in the disk cache's directory
-- (src/cache_note.c: atomic writes, the directory's safety rules).
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local M = {}

pcall(ffi.cdef, "int isatty(int fd);")

---------------------------------------------------------------------------
-- values as text
---------------------------------------------------------------------------
-- a config value for a table cell, a CSV field or a JSON string
local function value_text(v)
  local tv = type(v)
  if tv == "number" then return v % 1 == 0 and ("%d"):format(v) or ("%.6g"):format(v) end
  if tv == "table" then
    if v.name and getmetatable(v) then return tostring(v.name) end -- (a dtype)
    local parts = {}
    for i = 1, #v do parts[i] = value_text(v[i]) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return tostring(v)
end
M.value_text = value_text

-- the parameter names of a list of configs (sorted; positional configs: 1, 2, ...)
function M.param_names(configs)
  local seen, names = {}, {}
  for _, c in ipairs(configs) do
    for k in pairs(c) do
      if not seen[k] then seen[k] = true; names[#names + 1] = k end
    end
  end
  table.sort(names, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  return names
end

-- "bm=128 bn=256 stages=4"
function M.config_text(c, names)
  local parts = {}
  for _, k in ipairs(names or M.param_names({ c })) do
    if c[k] ~= nil then parts[#parts + 1] = tostring(k) .. "=" .. value_text(c[k]) end
  end
  return table.concat(parts, " ")
end

---------------------------------------------------------------------------
-- progress on a terminal: one line rewritten in place
---------------------------------------------------------------------------
local Progress = {}
Progress.__index = Progress

-- on: true, false or nil (nil: only when stderr is a terminal)
function M.progress(on, out)
  if on == nil then on = ffi.C.isatty(2) == 1 end
  return setmetatable({ on = on and true or false, out = out or io.stderr, t0 = C.cute_cuda_now_us(), last = 0,
    width = 0 }, Progress)
end

local function secs(s)
  if s >= 90 then return ("%dm%02ds"):format(math.floor(s / 60), math.floor(s % 60)) end
  return ("%.1fs"):format(s)
end

-- phase ("compile", "bench"), done, total, best (text or nil); redraws at
-- most every 100 ms unless final
function Progress:update(phase, done, total, best, final)
  if not self.on then return end
  local now = C.cute_cuda_now_us()
  if not final and now - self.last < 1e5 then return end
  self.last = now
  if self.phase ~= phase then self.phase, self.pt0 = phase, now end
  local el = (now - self.pt0) / 1e6
  local rate = el > 0 and done / el or 0
  local eta = rate > 0 and (total - done) / rate or nil
  local line = ("cute.autotune %s %d/%d  %.1f/s  ETA %s%s"):format(phase, done, total, rate,
    eta and secs(eta) or "?", best and ("  best " .. best) or "")
  local pad = self.width > #line and (" "):rep(self.width - #line) or ""
  self.width = #line
  self.out:write("\r", line, pad, final and "\n" or "")
  self.out:flush()
  if final then self.width = 0 end
end

---------------------------------------------------------------------------
-- the results table, CSV, JSON
---------------------------------------------------------------------------
local COLS = { "status", "trace_ms", "compile_ms", "ms", "min_ms", "max_ms", "outliers", "tflops", "regs", "smem",
  "spills", "reason" }

-- the columns: with a "device" column when the sweep ran on several GPUs
local function columns(res)
  if not res.devices then return COLS end
  local c = { COLS[1], "device" }
  for i = 2, #COLS do c[#c + 1] = COLS[i] end
  return c
end

local function cell(r, k)
  local v = r[k]
  if v == nil then return "" end
  if type(v) == "number" then
    if k == "regs" or k == "smem" or k == "spills" or k == "outliers" or k == "device" then return ("%d"):format(v) end
    return ("%.3f"):format(v)
  end
  return tostring(v)
end

-- the results as an aligned text table, best first among the ok ones
function M.table_text(res)
  local names = res.param_names
  local COLS = columns(res)
  local head = {}
  for _, n in ipairs(names) do head[#head + 1] = tostring(n) end
  for _, c in ipairs(COLS) do head[#head + 1] = c end
  local rows = { head }
  for _, r in ipairs(res.results) do
    local row = {}
    for _, n in ipairs(names) do row[#row + 1] = r.config[n] ~= nil and value_text(r.config[n]) or "" end
    for _, c in ipairs(COLS) do
      local t = cell(r, c)
      if c == "reason" and #t > 80 then t = t:sub(1, 77) .. "..." end
      row[#row + 1] = t
    end
    rows[#rows + 1] = row
  end
  local w = {}
  for _, row in ipairs(rows) do
    for i, t in ipairs(row) do w[i] = math.max(w[i] or 0, #t) end
  end
  local out = {}
  for _, row in ipairs(rows) do
    local parts = {}
    for i, t in ipairs(row) do parts[i] = i == #row and t or (t .. (" "):rep(w[i] - #t)) end
    out[#out + 1] = (table.concat(parts, "  "):gsub("%s+$", ""))
  end
  if res.best then
    out[#out + 1] = ("best: %s  %.4f ms%s"):format(M.config_text(res.best, names), res.best_ms,
      res.from_store and " (remembered from an earlier sweep)" or "")
  end
  return table.concat(out, "\n")
end

local function csv_field(t)
  if t:find('[",\n]') then return '"' .. t:gsub('"', '""') .. '"' end
  return t
end

function M.csv_text(res)
  local COLS = columns(res)
  local head = {}
  for _, n in ipairs(res.param_names) do head[#head + 1] = csv_field(tostring(n)) end
  for _, c in ipairs(COLS) do head[#head + 1] = c end
  local out = { table.concat(head, ",") }
  for _, r in ipairs(res.results) do
    local row = {}
    for _, n in ipairs(res.param_names) do row[#row + 1] = csv_field(r.config[n] ~= nil and value_text(r.config[n]) or "") end
    for _, c in ipairs(COLS) do row[#row + 1] = csv_field(cell(r, c)) end
    out[#out + 1] = table.concat(row, ",")
  end
  return table.concat(out, "\n") .. "\n"
end

-- JSON of plain data (numbers, strings, booleans, tables; others as strings)
local function json(v, out)
  local tv = type(v)
  if tv == "number" then
    if v ~= v or v == math.huge or v == -math.huge then out[#out + 1] = "null"
    elseif v % 1 == 0 and math.abs(v) < 2 ^ 53 then out[#out + 1] = ("%d"):format(v)
    else out[#out + 1] = ("%.17g"):format(v) end
  elseif tv == "boolean" then out[#out + 1] = tostring(v)
  elseif tv == "nil" then out[#out + 1] = "null"
  elseif tv == "table" and not (v.name and getmetatable(v)) then
    local n, count = #v, 0
    for _ in pairs(v) do count = count + 1 end
    if count == n and (n > 0 or next(v) == nil) then
      out[#out + 1] = "["
      for i = 1, n do
        if i > 1 then out[#out + 1] = "," end
        json(v[i], out)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = tostring(k) end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        json(k, out)
        out[#out + 1] = ":"
        local val = v[k]
        if val == nil then val = v[tonumber(k)] end
        json(val, out)
      end
      out[#out + 1] = "}"
    end
  else
    local s = tv == "string" and v or value_text(v)
    out[#out + 1] = '"' .. s:gsub('[%c"\\]', function(c)
      local e = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
      return e[c] or ("\\u%04x"):format(c:byte())
    end) .. '"'
  end
end
function M.json_encode(v)
  local out = {}
  json(v, out)
  return table.concat(out)
end

-- a JSON text back to Lua (objects, arrays, strings, numbers, true, false,
-- null as nil); nil, why on malformed text
function M.json_decode(s)
  local pos = 1
  local bad = cf.rethrow -- (caught below: the message becomes the second result)
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == "" then bad("unterminated string") end
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local map = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", n = "\n", t = "\t", r = "\r", b = "\b", f = "\f" }
        if map[e] then out[#out + 1] = map[e]; pos = pos + 2
        elseif e == "u" then
          local h = tonumber(s:sub(pos + 2, pos + 5), 16)
          if not h or h > 127 then bad("unsupported \\u escape") end
          out[#out + 1] = string.char(h); pos = pos + 6
        else bad("bad escape") end
      else
        out[#out + 1] = c; pos = pos + 1
      end
    end
  end
  value = function()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then bad("expected a key at " .. pos) end
        local k = str()
        ws()
        if s:sub(pos, pos) ~= ":" then bad("expected ':' at " .. pos) end
        pos = pos + 1
        t[k] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then bad("expected ',' or '}' at " .. (pos - 1)) end
      end
    elseif c == "[" then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return t end
      while true do
        t[#t + 1] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return t end
        if d ~= "," then bad("expected ',' or ']' at " .. (pos - 1)) end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" or not tonumber(num) then bad("unexpected '" .. c .. "' at " .. pos) end
      pos = pos + #num
      return tonumber(num)
    end
  end
  local ok, v = pcall(function()
    local r = value()
    ws()
    if pos <= #s then bad("trailing text at " .. pos) end
    return r
  end)
  if not ok then return nil, tostring(v) end
  return v
end

-- write text to a user's file (CSV/JSON on request); errors name the operation
function M.write_file(what, path, text)
  if type(path) ~= "string" or path == "" then cf.fail(("%s: expected a file name, got %s"):format(what, tostring(path))) end
  local f, err = io.open(path, "w")
  if not f then cf.fail(("%s: cannot write %s: %s"):format(what, path, tostring(err))) end
  f:write(text)
  f:close()
end

---------------------------------------------------------------------------
-- the best configuration per key, on disk
---------------------------------------------------------------------------
local function note_name(key_text)
  local hex = ffi.new("char[65]")
  C.cute_sha256_hex(key_text, #key_text, hex)
  return "autotune-" .. ffi.string(hex, 40)
end
M.note_name = note_name

-- the stored record for key_text, or nil (absent, unreadable or malformed:
-- the second value says why, nil when simply absent)
function M.load_best(key_text)
  local cap = 65536
  for _ = 1, 2 do
    local buf, len, found = ffi.new("char[?]", cap), ffi.new("size_t[1]"), ffi.new("int[1]")
    if C.cute_cache_note_read(note_name(key_text), buf, cap, len, found, cf.err) ~= 0 then
      return nil, ffi.string(cf.err[0].msg)
    end
    if found[0] == 0 then return nil end
    local n = tonumber(len[0])
    if n <= cap then
      local rec, why = M.json_decode(ffi.string(buf, n))
      if type(rec) ~= "table" or rec.key ~= key_text then return nil, why or "another key's record" end
      return rec
    end
    cap = n
  end
  return nil, "the note changed while it was read"
end

-- store rec (a table with .key = key_text); nil, why when it could not be written
function M.store_best(rec)
  local text = M.json_encode(rec)
  if C.cute_cache_note_write(note_name(rec.key), text, #text, cf.err) ~= 0 then return nil, ffi.string(cf.err[0].msg) end
  return true
end

-- remove the stored record of key_text; true if there was one
function M.forget(key_text)
  local dir = require("cute.cache").dir()
  return os.remove(dir .. "/" .. note_name(key_text) .. ".note") ~= nil
end

return M
