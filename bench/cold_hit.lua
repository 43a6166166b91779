-- bench/cold_hit.lua: where a cold process's cache hit spends its CPU time,
-- with LuaJIT's trace compiler kept out of the tracing modules (the default,
-- lua/cute/jit_policy.lua) and everywhere on (CUTE_JIT_TRACING=1), alternating.
-- Each measurement is a new process (no GPU needed; the compile path of the
-- first call: k:compile with keep = {"ptx"}), CPU time of the process (the LLVM
-- warm-up thread off: CUTE_NO_WARMUP=1, it does no work a hit needs):
--   setup  require("cute"), loading the example, building the kernel object
--   hit    the first k:compile: trace, specialise, print and hash the IR, read the entry
--   cuteluajit bench/cold_hit.lua [runs]          docs/CACHE.md quotes the results
local exdir = (arg[0]:match("(.*/)") or "./") .. "../examples/"

if arg[1] == "--child" then
  local t00 = os.clock()
  local cute = require("cute")
  local c0 = os.clock()
  local k, specs
  local ex = dofile(exdir .. "common.lua")
  if arg[2] == "gemm" then
    k = ex.load("gemm_bf16_arch").make_gemm{}.kernel
    local function sp(r, c) return cute.dynamic(cute.tensor_spec({ r, c }, cute.bfloat16), { index_bits = 32 }) end
    specs = { sp(1024, 1024), sp(1024, 1024), sp(1024, 1024), cute.Float32(1), cute.Float32(0) }
  else
    k = ex.load_kernel("vector_add")
    local s = cute.tensor_spec({ 2 ^ 20 }, cute.float32)
    specs = { s, s, s }
  end
  k = k:with({ use_ptxas = false, keep = { "ptx" } })
  local c1 = os.clock()
  local r = k:compile(unpack(specs))
  local c2 = os.clock()
  print(("RESULT status=%s require=%.2f setup=%.2f hit=%.2f"):format(r.cache.status, (c0 - t00) * 1e3,
    (c1 - c0) * 1e3, (c2 - c1) * 1e3))
  return
end

local runs = tonumber(arg[1]) or 7
local timing = dofile((arg[0]:match("(.*/)") or "./") .. "timing.lua")
local dir = os.tmpname()
os.remove(dir)

local function child(which, jit_everywhere)
  local env = ("CUTE_NO_WARMUP=1 CUTE_CACHE_DIR=%s%s"):format(dir, jit_everywhere and " CUTE_JIT_TRACING=1" or "")
  return timing.child(env, which, "hit")
end

local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

print(("cold cache hit, CPU ms of a new process (median / min of %d)"):format(runs))
for _, which in ipairs({ "vadd", "gemm" }) do
  child(which, false) -- the miss that stores the entry
  local rows = { [false] = { setup = {}, hit = {} }, [true] = { setup = {}, hit = {} } }
  for _ = 1, runs do
    for _, everywhere in ipairs({ true, false }) do
      local r = child(which, everywhere)
      assert(r.status == "hit", which .. ": not a hit: " .. tostring(r.status))
      local t = rows[everywhere]
      t.setup[#t.setup + 1], t.hit[#t.hit + 1] = r.setup, r.hit
    end
  end
  for _, everywhere in ipairs({ true, false }) do
    local t = rows[everywhere]
    local function mm(l) local m = median(l); return ("%6.1f / %6.1f"):format(m, math.min(unpack(l))) end
    print(("  %-5s %-32s setup %s   hit %s"):format(which,
      everywhere and "trace compiler everywhere" or "jit_policy (default)", mm(t.setup), mm(t.hit)))
  end
end
os.execute("rm -rf " .. dir)
