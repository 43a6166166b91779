-- Shrink a failing program of tools/fuzz_kernels.lua: removes statements (a
-- line, or a whole if/for/while/repeat block by its indentation) while the IR
-- and plain Lua still disagree for the given parameters.
--   build/cuteluajit tools/fuzz_kernels_reduce.lua program.lua p1 p2 p3
local cute = require("cute")
rawset(_G, "FUZZ_KERNELS_LIB", true)
local FZ = dofile("tools/fuzz_kernels.lua")

jit.off() -- count hooks are not called from compiled code
local path, p1, p2, p3 = arg[1], tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4])
local f = assert(io.open(path))
local src = f:read("*a")
f:close()

local function show(m)
  local t = {}
  for i = 0, FZ.NOUT - 1 do t[#t + 1] = tostring(m[i]) end
  return table.concat(t, " ")
end

-- does the program still fail? (nil when it is not a valid program any more)
local function fails(text)
  local c1 = load(text)
  if not c1 then return nil end
  setfenv(c1, setmetatable({ cute = cute }, { __index = _G }))
  local c2 = load(text)
  setfenv(c2, setmetatable({ cute = { range = FZ.lua_range, range_constexpr = FZ.lua_range } }, { __index = _G }))
  local ok, k = pcall(function() return cute.kernel(c1(), os.getenv("FUZZ_FALLBACK") and { frontend = false } or nil) end)
  if not ok then return nil end
  local iok, ir = pcall(k.ir, k, cute.tensor_spec({ FZ.NOUT }, cute.int32), cute.Int32(0), cute.Int32(0), cute.Int32(0))
  if not iok then return nil end
  local want = {}
  -- a removed counter can make the Lua loop endless: give up after a while
  local ref = c2()
  debug.sethook(function() error("too long", 0) end, "", 1e7)
  local rok = pcall(ref, want, p1, p2, p3)
  debug.sethook()
  if not rok then return nil end
  local got = {}
  local rok, res = pcall(FZ.run_ir, FZ.parse_ir(ir), { { base = "o", off = 0 }, p1, p2, p3 }, { o = got })
  if not rok then return true end
  return show(got) ~= show(want), ir, show(got), show(want)
end

local lines = {}
for l in src:gmatch("[^\n]*") do lines[#lines + 1] = l end
local function indent(l) return #(l:match("^(%s*)")) end
local function text(ls) return table.concat(ls, "\n") end

assert(fails(text(lines)), "the program does not fail for these parameters")
local changed = true
while changed do
  changed = false
  local i = 2
  while i < #lines do
    local l = lines[i]
    local t = l:gsub("^%s+", "")
    -- the extent of the statement starting at line i
    local j = i
    if t:match("^if ") and not t:match(" end$") or t:match("^for ") or t:match("^while ") or t == "repeat" then
      local ind = indent(l)
      j = i + 1
      while j <= #lines and not (indent(lines[j]) == ind and (lines[j]:match("^%s*end$") or lines[j]:match("^%s*until "))) do
        j = j + 1
      end
    end
    if t:match("^elseif") or t == "else" or t == "end" or t:match("^until") or t:match("^return function") then
      i = i + 1
    else
      local try = {}
      for a = 1, #lines do if a < i or a > j then try[#try + 1] = lines[a] end end
      if fails(text(try)) then
        lines = try
        changed = true
      else
        i = i + 1
      end
    end
  end
end
local _, ir, got, want = fails(text(lines))
print(text(lines))
print("IR stores:  " .. tostring(got))
print("Lua stores: " .. tostring(want))
print(ir)
