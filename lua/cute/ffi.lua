-- cute.ffi: the only module that calls the C core.  Loads the declarations
-- (generated from include/*.h), finds the library, checks that it is the
-- build these modules belong to, and turns status codes into Lua errors.
-- Other modules use:
--   local cf = require("cute.ffi")
--   cf.C            -- the C namespace
--   cf.lib_path     -- where the library was found; cf.version, cf.abi its version
--   cf.err          -- a reusable cute_err cell (cute_err[1])
--   cf.check(status [, what [, err]])   -- raise the C message at the user's line if status ~= 0
--   cf.fail(msg), cf.ir_check(ir, r), cf.rethrow(e)   -- below
local ffi = require("ffi")

local M = {}

if not pcall(ffi.typeof, "cute_err") then
  ffi.cdef(require("cute.cdef"))
end

-- Where the library comes from, in this order: the process itself (inside
-- cuteluajit, or a host that linked the core statically), CUTE_LIB (a path),
-- <root>/build/libcute.so and <root>/lib/libcute.so beside <root>/lua/cute/
-- (the source tree and the bundle), <prefix>/lib/libcute.so.0 beside
-- <prefix>/share/lua/5.1/cute/ (make install), then the system's search path.
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
  for _, p in ipairs({ dir and (dir .. "/../build/libcute.so"), dir and (dir .. "/../lib/libcute.so"),
      dir and (dir .. "/../../../lib/libcute.so.0"), "libcute.so.0", "libcute.so" }) do
    local ok, lib = pcall(ffi.load, p)
    if ok then return lib, p end
    tried[#tried + 1] = p
  end
  -- (while this module loads: M.fail does not exist yet; the message is complete without a line)
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

-- The one error path of cute's Lua modules: every error raised for the user
-- is located at the user's line (the innermost frame outside cute's modules,
-- whatever the call depth), and names the operation and the offending value.
-- No numeric error levels: the modules call these.

-- Raise msg (a string, prefixed with the user's file:line).
function M.fail(msg)
  local w = M.where()
  error(w and (w .. ": " .. msg) or msg, 0)
end

-- Raise msg located at `where` ("file:line", or nil for none): for an error
-- that belongs to an earlier line than the current one (a pending comparison).
function M.fail_at(where, msg)
  error(where and (where .. ": " .. msg) or msg, 0)
end

-- Raise "fname: " .. fmt:format(...) (an argument error of operation fname).
function M.failf(fname, fmt, ...)
  M.fail(fname .. ": " .. fmt:format(...))
end

-- Raise the C message in err (default M.err), prefixed with `what` when given.
function M.fail_err(what, err)
  local msg = ffi.string((err or M.err)[0].msg)
  if M.on_fault then msg = M.on_fault(msg) end -- (a kernel's fault: reported and recovered, lua/cute/fault.lua)
  M.fail(what and (what .. ": " .. msg) or msg)
end

-- Check a C status: 0 passes; any other raises the C message stored in err
-- (default M.err; `what` prefixes it) at the user's line.
function M.check(status, what, err)
  if status ~= 0 then M.fail_err(what, err) end
  return status
end

-- After an IR builder call that returned r: 0 with the context's sticky error
-- set raises that error at the user's line.  Returns r.
function M.ir_check(ir, r, what)
  if r == 0 and M.C.cute_ir_status(ir, nil) ~= 0 then
    local msg = ffi.string(M.C.cute_ir_error(ir))
    M.fail(what and (what .. ": " .. msg) or msg)
  end
  return r
end

-- Raise the sticky error of IR context ir (the builder call that set it
-- returned 0 and the caller knows it failed).
function M.ir_fail(ir, what)
  local msg = ffi.string(M.C.cute_ir_error(ir))
  M.fail(what and (what .. ": " .. msg) or msg)
end

-- Raise e unchanged: an error caught by pcall (its message already carries
-- the user's location, from M.fail), or an internal signal such as
-- cute.control's retry marker, which is no message at all.
function M.rethrow(e)
  error(e, 0)
end

-- files the runtime hands between processes (cute.autotune's workers, the
-- NCCL id file): the whole file, or nil when it cannot be opened
function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- write text to path through tmp (a name beside it) and a rename, so that a
-- reader never sees half a file; errors name `what` (the operation)
function M.write_atomic(path, text, what, tmp)
  tmp = tmp or path .. ".tmp"
  local f, why = io.open(tmp, "wb")
  if not f then M.fail(("%s: cannot write %s: %s"):format(what, tmp, tostring(why))) end
  f:write(text)
  f:close()
  local ok, e = os.rename(tmp, path)
  if not ok then
    os.remove(tmp)
    M.fail(("%s: cannot rename %s to %s: %s"):format(what, tmp, path, tostring(e)))
  end
end

return M
