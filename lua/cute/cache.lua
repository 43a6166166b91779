-- cute.cache: the on-disk cache of compiled kernels (docs/CACHE.md), from Lua.
-- The lookups and stores happen inside cute_compile (src/compile.c, src/cache.c);
-- a compile result tells what the cache did (r.cache = {status, detail, key}).
-- These inspect and clear it, as `cuteluajit --cache list|stats|clear` does.
--
--   cute.cache.dir()        -- the directory (created 0700); an error when unsafe
--   cute.cache.stats()      -- {entries, bytes, cap, temps, dir}
--   cute.cache.list()       -- the listing text (least recently used first)
--   cute.cache.clear()      -- entries removed
--   cute.cache.evict(cap)   -- evict LRU entries down to cap bytes (default: the cap)
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local M = {}

function M.dir()
  local buf = ffi.new("char[1024]")
  cf.check(C.cute_cache_dir(buf, 1024, cf.err), "cute.cache.dir")
  return ffi.string(buf)
end

function M.stats()
  local st = ffi.new("cute_cache_stats")
  cf.check(C.cute_cache_stats_get(st, cf.err), "cute.cache.stats")
  return { entries = tonumber(st.entries), bytes = tonumber(st.bytes), cap = tonumber(st.cap),
    temps = tonumber(st.temps), dir = ffi.string(st.dir) }
end

function M.list()
  local out = ffi.new("char*[1]")
  cf.check(C.cute_cache_list(out, cf.err), "cute.cache.list")
  local s = ffi.string(out[0])
  C.cute_cache_text_free(out[0])
  return s
end

function M.clear()
  local n = ffi.new("int64_t[1]")
  cf.check(C.cute_cache_clear(n, cf.err), "cute.cache.clear")
  return tonumber(n[0])
end

function M.evict(cap)
  if cap ~= nil and (type(cap) ~= "number" or cap < 0 or cap % 1 ~= 0) then
    cf.fail("cute.cache.evict(cap): cap must be a non-negative integer number of bytes, got " .. tostring(cap))
  end
  local n = ffi.new("int64_t[1]")
  cf.check(C.cute_cache_evict(cap or -1, n, cf.err), "cute.cache.evict")
  return tonumber(n[0])
end

-- the SHA-256 of a string as 64 hex digits (the hash of keys and checksums)
function M.sha256(s)
  if type(s) ~= "string" then cf.fail("cute.cache.sha256(s): s must be a string, got " .. type(s)) end
  local out = ffi.new("char[65]")
  C.cute_sha256_hex(s, #s, out)
  return ffi.string(out)
end

return M
