-- The version handshake between libcute.so and the Lua modules (issue 9,
-- item 5): CUTE_ABI and the version are written once (include/cute.h), the
-- library reports its own, and lua/cute/ffi.lua refuses a library of another
-- build with both versions and the library's path.
local ffi = require("ffi")
local cute = require("cute")
local cf = require("cute.ffi")
local C = cf.C

local sh = dofile("spec/support/util.lua").sh

local function have(tool)
  return select(2, sh("command -v " .. tool .. " >/dev/null")) == 0
end

describe("cute.version", function()
  it("is the library's version, the one include/cute.h declares", function()
    local v = ("cuteluajit %d.%d.%d"):format(C.CUTE_VERSION_MAJOR, C.CUTE_VERSION_MINOR,
      C.CUTE_VERSION_PATCH)
    assert.are.equal(v, cute.version)
    assert.are.equal(v, ffi.string(C.cute_version()))
    assert.are.equal(tonumber(C.CUTE_ABI), tonumber(C.cute_abi_version()))
    assert.are.equal(tonumber(C.CUTE_ABI), cf.abi)
    assert.is_string(cf.lib_path)
  end)
end)

describe("the handshake", function()
  it("accepts the library of the same build", function()
    local v, abi = cf.check_abi(C, "this library")
    assert.are.equal(cute.version, v)
    assert.are.equal(tonumber(C.CUTE_ABI), abi)
  end)

  it("refuses another ABI, naming both versions and the library's path", function()
    local want = tonumber(C.CUTE_ABI) + 1
    local ok, e = pcall(cf.check_abi, C, "/somewhere/else/libcute.so", want)
    assert.is_false(ok)
    e = tostring(e)
    assert.is_truthy(e:find("version mismatch", 1, true), e)
    assert.is_truthy(e:find("/somewhere/else/libcute.so", 1, true), e)
    assert.is_truthy(e:find(cute.version .. " (ABI " .. tonumber(C.CUTE_ABI) .. ")", 1, true), e)
    assert.is_truthy(e:find("(ABI " .. want .. ")", 1, true), e)
    assert.is_truthy(e:find("CUTE_LIB", 1, true), e)
  end)
end)

-- Plain LuaJIT loading the modules from lua/ and the library through CUTE_LIB.
describe("loading through CUTE_LIB", function()
  local root = sh("pwd"):match("^([^\n]*)")
  local has_tree = io.open(root .. "/lua/cute/ffi.lua") ~= nil and io.open(root .. "/build/libcute.so") ~= nil
  local dir = os.tmpname()
  os.remove(dir)

  local function load_with(lib, before)
    local path = ("%s/lua/?.lua;%s/lua/?/init.lua;;"):format(root, root)
    return sh(("cd /tmp && CUTE_LIB='%s' LUA_PATH='%s' luajit -e '%s local cute = require(\"cute\"); " ..
      "print(\"loaded \" .. cute.version .. \" from \" .. require(\"cute.ffi\").lib_path)'"):format(lib, path, before or ""))
  end

  -- a stand-in library: cute_version always, cute_abi_version when abi is given
  local function fake(name, abi)
    local src = dir .. "/" .. name .. ".c"
    local f = assert(io.open(src, "w"))
    f:write('const char *cute_version(void) { return "cuteluajit 9.8.7"; }\n')
    if abi then f:write(("int cute_abi_version(void) { return %d; }\n"):format(abi)) end
    f:close()
    local so = dir .. "/" .. name .. "/libcute.so"
    local out, rc = sh(("mkdir -p '%s/%s' && cc -shared -fPIC -o '%s' '%s'"):format(dir, name, so, src))
    assert(rc == 0, out)
    return so
  end

  local function ready()
    if not has_tree then pending("needs lua/ and build/libcute.so (run from the repository root)") return false end
    if not have("luajit") or not have("cc") then pending("needs luajit and cc on PATH") return false end
    sh("mkdir -p '" .. dir .. "'")
    return true
  end

  it("loads the library of the same build from the path given", function()
    if not ready() then return end
    local link = dir .. "/same/libcute.so"
    sh(("mkdir -p '%s/same' && ln -sf '%s/build/libcute.so' '%s'"):format(dir, root, link))
    local out, rc = load_with(link)
    assert.is_truthy(out:find("loaded " .. cute.version .. " from " .. link, 1, true), out)
    assert.are.equal(0, rc, out)
  end)

  it("refuses a library of another ABI: both versions and its path", function()
    if not ready() then return end
    local so = fake("other", tonumber(C.CUTE_ABI) + 41)
    local out, rc = load_with(so)
    assert.are_not.equal(0, rc, out)
    assert.is_truthy(out:find("version mismatch: the library " .. so .. " is cuteluajit 9.8.7 (ABI "
      .. (tonumber(C.CUTE_ABI) + 41) .. ")", 1, true), out)
    assert.is_truthy(out:find(cute.version .. " (ABI " .. tonumber(C.CUTE_ABI) .. ")", 1, true), out)
  end)

  it("refuses a library older than the handshake", function()
    if not ready() then return end
    local so = fake("old", nil)
    local out, rc = load_with(so)
    assert.are_not.equal(0, rc, out)
    assert.is_truthy(out:find("the library " .. so .. " is cuteluajit 9.8.7 (older than the ABI handshake)", 1, true), out)
  end)

  it("a CUTE_LIB that cannot be loaded is named", function()
    if not ready() then return end
    local out, rc = load_with(dir .. "/nowhere/libcute.so")
    assert.are_not.equal(0, rc, out)
    assert.is_truthy(out:find("CUTE_LIB=" .. dir .. "/nowhere/libcute.so: cannot load it", 1, true), out)
  end)

  it("declarations of cute_err made before cute loads are refused, not trusted", function()
    if not ready() then return end
    local out, rc = load_with(root .. "/build/libcute.so",
      'require("ffi").cdef("typedef struct cute_err { int code; char msg[1020]; } cute_err;")')
    assert.are_not.equal(0, rc, out)
    assert.is_truthy(out:find("cute_err is declared, CUTE_ABI is not", 1, true), out)
  end)

  teardown(function() sh("rm -rf '" .. dir .. "'") end)
end)
