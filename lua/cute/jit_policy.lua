-- cute.jit_policy: LuaJIT's trace compiler off for the modules that run while a
-- kernel is traced and compiled (require("cute") installs it first).
--
-- Tracing a kernel runs each of those functions a few times per op over
-- tables of every shape, through pcall, varargs and debug.getinfo: LuaJIT
-- records trace after trace there and aborts most of them, and the code it
-- does compile runs a handful of times per process.  Measured (bench/cold_hit.lua,
-- docs/CACHE.md "Where a cold hit's time goes"): with the compiler off for these
-- modules a cold process's setup (modules, layout algebra) takes 7-10x less CPU
-- time and its first trace 2-3x less; warm traces of a long-running process are
-- about as fast (vector add) to ~10 % slower (the bf16 GEMM's 30 ms).
--
-- The modules of the per-launch hot path keep the compiler: kernel (launch
-- entry), launch (parameter writers), specialise (launch keys), runtime, memory
-- (host transfers), dtype, ffi, cache, fault (the ring of launches), and the launchers cute generates; so do
-- the host-side layout algebra (cute.layout: user loops evaluate layouts at every
-- coordinate; keeping it costs a cold process nothing measurable) and the user's
-- code.  CUTE_JIT_TRACING=1 leaves the compiler on everywhere.
local KEEP = {
  ["cute"] = true, ["cute.ffi"] = true, ["cute.kernel"] = true, ["cute.launch"] = true,
  ["cute.specialise"] = true, ["cute.runtime"] = true, ["cute.memory"] = true, ["cute.dtype"] = true,
  ["cute.cache"] = true, ["cute.jit_policy"] = true, ["cute.cdef"] = true, ["cute.layout"] = true,
  ["cute.fault"] = true, -- (its ring of recent launches is written by every launch)
}

local M = { keep = KEEP, off = {} }
local enabled = os.getenv("CUTE_JIT_TRACING") == nil or os.getenv("CUTE_JIT_TRACING") == "0"
M.enabled = enabled
local loaders = package.loaders

-- a searcher before the file and embedded ones: finds the chunk through them
-- and turns the compiler off for it and every function nested in it
local function searcher(name)
  if name:sub(1, 5) ~= "cute." or KEEP[name] then return nil end
  local why = {}
  for i = 1, #loaders do
    local s = loaders[i]
    if s ~= searcher and s ~= loaders[1] then
      local f = s(name)
      if type(f) == "function" then
        jit.off(f, true)
        M.off[name] = true
        return f
      elseif type(f) == "string" then
        why[#why + 1] = f
      end
    end
  end
  return table.concat(why)
end

if enabled and jit and loaders then table.insert(loaders, 2, searcher) end

return M
