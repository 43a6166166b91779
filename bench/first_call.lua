-- bench/first_call.lua: first-call latency of vector add in a fresh process
-- (trace, IR, LLVM, PTX, cubin or driver JIT, module load, launch), then of a
-- second new kernel (LLVM warm), then the cost a cached call adds to a launch.
--   cuteluajit bench/first_call.lua [cubin|ptx] [gap_ms]
-- gap_ms: time the script spends after opening the GPU before its first launch
-- (preparing data, say), during which the background compiler warm-up runs.
local cute = require("cute")
local mode = arg[1] or "ptx"
local gap_ms = tonumber(arg[2]) or 0
local exdir = (arg[0]:match("(.*/)") or "./") .. "../examples/"
if not cute.available() then print("needs a GPU"); return end

local n = 2 ^ 20
-- driver and context first: they are per-process costs, not per-kernel ones
local A, B, C = cute.zeros({ n }, cute.float32), cute.zeros({ n }, cute.float32), cute.zeros({ n }, cute.float32)
cute.synchronize()
local tg = cute.now_us()
while cute.now_us() - tg < gap_ms * 1e3 do end

local ex = dofile(exdir .. "common.lua")
local function load(name)
  -- (cache = false: the compile is measured, not the disk cache; bench/cache.lua measures that)
  return ex.load_kernel(name):with({ use_ptxas = (mode == "cubin"), cache = false })
end

local function first(label, k, ...)
  local t0 = cute.now_us()
  k:launch{ grid = 132, block = 256 }(...)
  local t1 = cute.now_us()
  cute.synchronize()
  print(("%-44s %8.2f ms"):format(label .. " (" .. mode .. (gap_ms > 0 and (", gap " .. gap_ms .. " ms") or "") .. ")",
    (t1 - t0) / 1e3))
  local b = k.last_build
  print(("    trace %.2f ms, compile %.2f ms (LLVM IR %.2f, O3 %.2f, PTX %.2f, ptxas %.2f), load %.2f ms (%s)")
    :format(b.trace_us / 1e3, b.compile_us / 1e3, b.llvm_build_us / 1e3, b.opt_us / 1e3, b.emit_us / 1e3,
      b.ptxas_us / 1e3, b.load_us / 1e3, b.image))
  return (t1 - t0) / 1e3
end

local cold = first("first call, vector add, cold process", load("vector_add"), A, B, C)
local saxpy = load("saxpy")
local warm = first("first call, saxpy, LLVM warm", saxpy, cute.Float32(2), A, B)
-- cached call: launch cost with a hit vs a raw launch of the same entry
local vadd = load("vector_add")
vadd:launch{ grid = 132, block = 256 }(A, B, C)
cute.synchronize()
local reps = 2000
local t0 = cute.now_us()
for _ = 1, reps do vadd:launch{ grid = 132, block = 256 }(A, B, C) end
local t1 = cute.now_us()
cute.synchronize()
print(("%-44s %8.2f us per launch (incl. the driver's enqueue)"):format("cached call, vector add", (t1 - t0) / reps))
print(("first_call_ms=%.2f warm_first_call_ms=%.2f"):format(cold, warm))
