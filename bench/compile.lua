-- bench/compile.lua: kernel IR -> PTX compile times (CPU only).
--   build/cuteluajit bench/compile.lua [reps]
-- Targets: vector add IR -> PTX <= 3 ms warm, first compile in a process <= 10 ms.
-- Prints the first (cold) compile, then medians over `reps` warm compiles with
-- a per-stage breakdown, and the same with ptxas (cubin) when it is installed.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local IR = require("cute.ir")
local ffi = require("ffi")

pcall(ffi.cdef, [[ typedef struct cute_bench_ts { long s, ns; } cute_bench_ts;
  int clock_gettime(int clk, cute_bench_ts *ts); ]])
local tsbuf = ffi.new("cute_bench_ts")
local function now_us()
  ffi.C.clock_gettime(1, tsbuf)
  return tonumber(tsbuf.s) * 1e6 + tonumber(tsbuf.ns) / 1e3
end

local reps = tonumber(arg and arg[1]) or 200

local function vadd()
  local m = IR.new()
  m:func("vadd", "kernel")
  local a = m:param("ptr.global.f32", "a", { noalias = true, readonly = true, align = 16 })
  local b = m:param("ptr.global.f32", "b", { noalias = true, readonly = true, align = 16 })
  local c = m:param("ptr.global.f32", "c", { noalias = true, align = 16 })
  local n = m:param("i32", "n")
  local i = m:cvt("i32", m:add(m:mul(m:sreg("ctaid.x"), m:sreg("ntid.x")), m:sreg("tid.x")))
  m:if_(m:lt(i, n))
  m:store(m:gep(c, i), m:add(m:load(m:gep(a, i)), m:load(m:gep(b, i))))
  m:end_()
  m:ret()
  return m
end

local function median(t)
  table.sort(t)
  return t[math.floor(#t / 2) + 1]
end

local function run(label, opts, n)
  local tot, st = {}, { build = {}, opt = {}, emit = {}, ptxas = {}, ir = {} }
  for _ = 1, n do
    local t0 = now_us()
    local m = vadd()
    local t1 = now_us()
    local r = assert(m:compile(opts))
    local t2 = now_us()
    tot[#tot + 1] = t2 - t0
    st.ir[#st.ir + 1] = t1 - t0
    st.build[#st.build + 1] = r.times.verify + r.times.lower
    st.opt[#st.opt + 1] = r.times.optimise
    st.emit[#st.emit + 1] = r.times.emit_ptx
    st.ptxas[#st.ptxas + 1] = r.times.assemble
  end
  print(("%-34s median %8.0f us  [IR build %.0f, verify+LLVM IR %.0f, O3 %.0f, PTX emit %.0f, ptxas %.0f] (n=%d)")
    :format(label, median(tot), median(st.ir), median(st.build), median(st.opt), median(st.emit), median(st.ptxas), n))
  return median(tot)
end

-- the first compile in this process (target machine creation included)
local t0 = now_us()
local first = assert(vadd():compile { arch = "sm_90a", opt_level = 3, use_ptxas = false })
local cold = now_us() - t0
print(("%-34s %8.0f us  [O3 %.0f, PTX emit %.0f]"):format("vadd IR->PTX, first in process", cold, first.times.optimise, first.times.emit_ptx))

local warm = run("vadd IR->PTX (sm_90a, O3, warm)", { arch = "sm_90a", opt_level = 3, use_ptxas = false }, reps)
run("vadd IR->PTX (sm_80, O3, warm)", { arch = "sm_80", opt_level = 3, use_ptxas = false }, reps)
run("vadd IR->PTX (sm_90a, O0, warm)", { arch = "sm_90a", opt_level = 0, use_ptxas = false }, reps)
if IR.ptxas_path() then
  run("vadd IR->cubin (sm_90a, ptxas)", { arch = "sm_90a", opt_level = 3, use_ptxas = true }, math.min(reps, 20))
else
  print("ptxas not found: IR->cubin not measured")
end

-- accurate math links libdevice
local function mathk()
  local m = IR.new()
  m:func("m", "kernel")
  local p = m:param("ptr.global.f32", "p")
  m:store(p, m:exp(m:load(p), { math = "accurate" }))
  m:ret()
  return m
end
local t1 = now_us()
local r = mathk():compile { arch = "sm_90a", use_ptxas = false }
print(("%-34s %8.0f us  [libdevice link %.0f, O3 %.0f]"):format("expf (libdevice), first", now_us() - t1,
  r and r.times.link or -1, r and r.times.optimise or -1))
t1 = now_us()
r = mathk():compile { arch = "sm_90a", use_ptxas = false }
print(("%-34s %8.0f us  [libdevice link %.0f, O3 %.0f]"):format("expf (libdevice), warm", now_us() - t1,
  r and r.times.link or -1, r and r.times.optimise or -1))

print(("targets: first %s (%.1f ms <= 10), warm %s (%.2f ms <= 3)"):format(cold <= 10000 and "ok" or "MISSED", cold / 1000,
  warm <= 3000 and "ok" or "MISSED", warm / 1000))
