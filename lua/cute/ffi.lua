-- cute.ffi: the only module that calls the C core.  Loads the declarations
-- (generated from include/*.h), finds the library, checks that it is the
-- build these modules belong to, and turns status codes into Lua errors.
-- Other modules use:
--   local cf = require("cute.ffi")
--   cf.C            -- the C namespace
--   cf.lib_path     -- where the library was found; cf.version, cf.abi its version
--   cf.err          -- a reusable cute_err cell (cute_err[1])
--   cf.check(status, level)   -- error() with the C message if status ~= 0
local ffi = require("ffi")

local M = {}

if not pcall(ffi.typeof, "cute_err") then
  ffi.cdef(require("cute.cdef"))
end

-- Where the library comes from, in this order: the process itself (inside
-- cuteluajit, or a host that linked the core statically), CUTE_LIB (a path),
-- <root>/build/libcute.so and <root>/lib/libcute.so beside <root>/lua/cute/
-- (the source tree and the bundle), then the system's search path.
-- Returns the library namespace and a description of where it was found.
local function find_lib()
  if pcall(function() return ffi.C.cute_version end) then
    return ffi.C, "the running program (cute linked in)"
  end
  local env = os.getenv("CUTE_LIB")
  if env and env ~= "" then
    local ok, lib = pcall(ffi.load, env)
    if not ok then error("cute: CUTE_LIB=" .. env .. ": cannot load it: " .. tostring(lib), 0) end
    return lib, env
  end
  local src = debug.getinfo(1, "S").source
  local dir = src:match("^@(.*)/cute/ffi%.lua$")
  local tried = {}
  for _, p in ipairs({ dir and (dir .. "/../build/libcute.so"), dir and (dir .. "/../lib/libcute.so"), "libcute.so" }) do
    local ok, lib = pcall(ffi.load, p)
    if ok then return lib, p end
    tried[#tried + 1] = p
  end
  error("cute: cannot find libcute.so (tried " .. table.concat(tried, ", ") .. "); set CUTE_LIB", 0)
end

-- The version handshake.  These modules' ffi.cdef (lua/cute/cdef.lua, made
-- from include/*.h by the same build) declares CUTE_ABI and the version; the
-- library returns its own from cute_abi_version()/cute_version().  A library
-- of another build (through CUTE_LIB, a stale build/ or the system path) is
-- refused here, before any other call reaches it.  `want_abi` (default
-- CUTE_ABI) lets the specs simulate a mismatch.
local function expected()
  local ok, abi = pcall(function() return ffi.C.CUTE_ABI end)
  if not ok then
    error("cute: the declarations of cute in this LuaJIT state come from elsewhere (cute_err is declared, CUTE_ABI is not); load cute before declaring its types", 0)
  end
  return tonumber(abi), ("cuteluajit %d.%d.%d"):format(ffi.C.CUTE_VERSION_MAJOR,
    ffi.C.CUTE_VERSION_MINOR, ffi.C.CUTE_VERSION_PATCH)
end

function M.check_abi(lib, where, want_abi)
  local abi, version = expected()
  want_abi = want_abi or abi
  local mods = debug.getinfo(1, "S").source:gsub("^[@=]", ""):gsub("ffi%.lua$", "")
  local ok_v, have_version = pcall(function() return ffi.string(lib.cute_version()) end)
  if not ok_v then have_version = "not a cuteluajit library (no cute_version)" end
  local ok_a, fn = pcall(function() return lib.cute_abi_version end)
  local have_abi = ok_a and tonumber(fn()) or nil
  if have_abi ~= want_abi then
    error(("cute: version mismatch: the library %s is %s (%s), but the Lua modules in %s are %s (ABI %d): rebuild (make), or set CUTE_LIB to the libcute.so built with these modules")
      :format(where, have_version, have_abi and ("ABI " .. have_abi) or "older than the ABI handshake",
        mods, version, want_abi), 0)
  end
  return have_version, have_abi
end

local lib_path
M.C, lib_path = find_lib()
M.lib_path = lib_path
M.version, M.abi = M.check_abi(M.C, lib_path)
M.err = ffi.new("cute_err[1]")

-- The user's location: the innermost frame outside cute's own modules.
-- cute's chunks are recognised positively; every other chunk is the user's,
-- including "=name" chunks of a C host (luaL_loadbuffer(L, s, n, "=myhost")).
--   "@[embedded]/cute.*.lua"   modules embedded in the binary (src/lua_open.c)
--   "@<dir>/<module>.lua"      files beside this one (wherever cute is installed)
--   "@.../lua/cute/<m>.lua"    the source tree and the bundle (dist/lua/cute)
--   "=[cute ...]"              code that cute generates (kernel.lua launchers)
local lib_dir = debug.getinfo(1, "S").source:match("^(@.*[/\\])ffi%.lua$")
local lib_src_cache = {}
local function is_lib_source(src)
  local v = lib_src_cache[src]
  if v == nil then
    v = (src:find("^@%[embedded%]/cute[%.%w_]*%.lua$") ~= nil)
      or (lib_dir ~= nil and src:sub(1, #lib_dir) == lib_dir
          and src:find("^[%w_]+%.lua$", #lib_dir + 1) ~= nil)
      or (src:find("^@.*/lua/cute/[%w_]+%.lua$") ~= nil)
      or (src:find("^@lua/cute/[%w_]+%.lua$") ~= nil)
      or (src:find("^=%[cute ") ~= nil)
    lib_src_cache[src] = v
  end
  return v
end
M.is_lib_source = is_lib_source

function M.user_frame()
  for level = 3, 60 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if not is_lib_source(info.source) and info.currentline and info.currentline > 0 then
      return info.short_src, info.currentline
    end
  end
  return nil, nil
end

-- "file:line" of the user's code, or nil when there is none (e.g. a REPL tail call)
function M.where()
  local f, l = M.user_frame()
  if not f then return nil end
  return f .. ":" .. l
end

-- Raise msg as a Lua error located at the user's line (any call depth).
function M.fail(msg)
  local w = M.where()
  error(w and (w .. ": " .. msg) or msg, 0)
end

-- Raise the C message in M.err, located at the user's line.
function M.fail_err()
  M.fail(ffi.string(M.err[0].msg))
end

-- Raise the message stored in M.err as a Lua error.  `level` is passed to
-- error() (default 3: the caller of the function that called check).
function M.raise(level)
  local e = M.err[0]
  error(ffi.string(e.msg), level or 3)
end

function M.check(status, level)
  if status ~= 0 then
    local e = M.err[0]
    error(ffi.string(e.msg), (level or 2) + 1)
  end
end

return M
