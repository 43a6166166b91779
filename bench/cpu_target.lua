-- The CPU target's speed on one core (docs/CPU_TARGET.md): the 2^20 vector
-- add and the tiled SGEMM at 256^3 of examples/ run by the IR interpreter.
--   CUTE_TARGET=cpu cuteluajit bench/cpu_target.lua [reps]
-- Prints the median (and best) wall time of reps launches each, at least 100 ms
-- (after one warm-up launch that traces and prepares the kernel) and the interpreter's rate in
-- thread-instructions per second.
local cute = require("cute")
local ffi = require("ffi")
local cpu = require("cute.target_cpu")
local C = require("cute.ffi").C
if not cpu.active then cpu.install(nil) end

local reps = tonumber(arg and arg[1]) or 5

local function example(name, args)
  local saved = arg
  arg = { [0] = "examples/" .. name .. ".lua" }
  for i, a in ipairs(args or {}) do arg[i] = tostring(a) end
  CUTE_EXAMPLE_LIB = true
  local m = dofile("examples/" .. name .. ".lua")
  CUTE_EXAMPLE_LIB = nil
  arg = saved
  return m.kernel
end

local function rand(n)
  local t = {}
  for i = 1, n do t[i] = (i * 7919 % 1000) / 500 - 1 end
  return t
end

-- median and best of at least reps launches and at least 100 ms, after a warm-up launch
local function best(launch, entry_of)
  launch() -- trace, prepare
  local prog = entry_of()
  local ts, t_all = {}, 0
  local e0 = tonumber(C.cute_cpu_prog_executed(prog))
  while #ts < reps or t_all < 0.1 do
    local t0 = cute.now_us()
    launch()
    ts[#ts + 1] = (cute.now_us() - t0) / 1e6
    t_all = t_all + ts[#ts]
  end
  local per = (tonumber(C.cute_cpu_prog_executed(prog)) - e0) / #ts
  table.sort(ts)
  local med = ts[math.floor((#ts + 1) / 2)]
  return med, per / med, ts[1]
end

-- vector add, n = 2^20, as examples/vector_add.lua launches it (one float4 per thread)
local n = 2 ^ 20
local vadd = example("vector_add", { n })
local A, B, Cc = cute.from_host(rand(n), cute.float32, { n }), cute.from_host(rand(n), cute.float32, { n }),
  cute.empty({ n }, cute.float32)
local vcfg = { grid = n / 4 / 256, block = 256 }
local tv, rv, bv = best(function() vadd:launch(vcfg)(A, B, Cc) end, function() return vadd:entry(A, B, Cc).prog end)
print(("vector add 2^20 (cpu target, 1 core): median %.4f s (best %.4f s), %.0f M thread-instructions/s"):format(tv, bv, rv / 1e6))

-- tiled SGEMM 256^3
local m = 256
local sgemm = example("sgemm_tiled", { m, m, m })
local SA, SB = cute.from_host(rand(m * m), cute.float32, { m, m }), cute.from_host(rand(m * m), cute.float32, { m, m })
local SC = cute.empty({ m, m }, cute.float32)
local scfg = { grid = { m / 128, m / 128 }, block = 256 }
local ts, rs, bs = best(function() sgemm:launch(scfg)(SA, SB, SC) end, function() return sgemm:entry(SA, SB, SC).prog end)
print(("sgemm_tiled 256^3 (cpu target, 1 core): median %.4f s (best %.4f s), %.0f M thread-instructions/s"):format(ts, bs, rs / 1e6))
