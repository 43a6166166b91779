-- The public headers as LuaJIT sees them: each CDEF block (what
-- tools/gen_cdef.sh copies into lua/cute/cdef.lua for ffi.cdef) is plain C,
-- every function it declares is exported by the library, and every function
-- the library exports is declared in a CDEF block (or, taking a lua_State, in
-- include/cute_lua.h or include/cute_host.h).  (spec/runtime_spec.lua
-- checks cute_cuda.h's constants; this covers every header.)
require("cute")
local C = require("cute.ffi").C
local read_file = dofile("spec/support/util.lua").read_file

-- every public header with a CDEF block (cute_lua.h has none: it is for C hosts)
local HEADERS = {}
do
  local p = io.popen("ls include/*.h")
  for path in p:lines() do
    local f = io.open(path); local text = f:read("*a"); f:close()
    if text:find("CDEF BEGIN", 1, true) then HEADERS[#HEADERS + 1] = path:match("[^/]+$") end
  end
  p:close()
end

-- the CDEF block of a header without its comments, or nil and why
local function cdef_block(name)
  local text = read_file("include/" .. name)
  if not text then return nil, "include/" .. name .. " not found (run from the repository root)" end
  local _, begins = text:gsub("CDEF BEGIN", "")
  local _, ends = text:gsub("/%* CDEF END %*/", "")
  assert.are.equal(1, begins, name .. ": one CDEF BEGIN marker")
  assert.are.equal(1, ends, name .. ": one CDEF END marker")
  local block = text:match("/%* CDEF BEGIN " .. name:gsub("%.", "%%.") .. " %*/(.-)/%* CDEF END %*/")
  assert.is_string(block, name .. ": the CDEF BEGIN marker names the header")
  return (block:gsub("/%*.-%*/", " "):gsub("//[^\n]*", " "))
end

-- function names declared in a block: an identifier followed by "(", not
-- inside a function-pointer declarator "(*name)("
local function functions(block)
  local names = {}
  for name in block:gmatch("([%a_][%w_]*)%s*%(") do
    if name:find("^cute_") then names[#names + 1] = name end
  end
  return names
end

for _, name in ipairs(HEADERS) do
  describe(name, function()
    it("CDEF block is plain C: no preprocessor lines; every function is exported", function()
      local block, why = cdef_block(name)
      if not block then pending(why) return end
      for line in block:gmatch("[^\n]+") do
        assert.is_falsy(line:match("^%s*#"), name .. ": preprocessor line in CDEF: " .. line)
      end
      local fns = functions(block)
      assert.is_true(#fns >= 5, name .. ": found " .. #fns .. " functions")
      for _, fn in ipairs(fns) do
        local ok = pcall(function() return C[fn] end)
        assert.is_true(ok, name .. ": " .. fn .. " is declared but not exported by the library")
      end
    end)
  end)
end

describe("libcute.so", function()
  it("exports no cute_ function that a CDEF block does not declare", function()
    local declared = {}
    for _, name in ipairs(HEADERS) do
      local block, why = cdef_block(name)
      if not block then pending(why) return end
      for _, fn in ipairs(functions(block)) do declared[fn] = true end
    end
    -- the C hosts' headers (functions of a lua_State, the host API) have no CDEF block
    for _, hdr in ipairs({ "include/cute_lua.h", "include/cute_host.h" }) do
      local host = read_file(hdr)
      assert.is_string(host)
      assert.is_falsy(host:find("CDEF BEGIN", 1, true))
      for _, fn in ipairs(functions(host:gsub("/%*.-%*/", " "))) do declared[fn] = true end
    end
    local p = io.popen("nm -D --defined-only build/libcute.so 2>/dev/null")
    local out = p:read("*a")
    p:close()
    if out == "" then pending("needs nm and build/libcute.so") return end
    local n = 0
    for sym in out:gmatch("%x+ T (cute_[%w_]+)") do
      n = n + 1
      assert.is_true(declared[sym] == true, sym .. " is exported but declared in no CDEF block")
    end
    assert.is_true(n >= 100, "found " .. n .. " exported cute_ functions")
  end)
end)
