-- bench/compile_sm90.lua: cold compile time of the Hopper kernels (issue 11 item 8:
-- "each kernel compiles cold in <= 200 ms"), per stage, without a GPU: a fresh kernel
-- object per run (trace -> IR -> LLVM -> PTX -> cubin), the disk cache off.
--   cuteluajit bench/compile_sm90.lua [runs] [which] [keep]
-- which: bf16, fp8, fa3 or all (default); keep: the compile option (default "ptx": what a
-- launch keeps, the image, plus the PTX that is counted here; "ir,llvm,ptx,cubin" is
-- k:compile's default, which also prints the optimised LLVM module).  Prints the first
-- run, the median of each stage (wall ms), the median CPU ms of the trace, of LLVM and of
-- ptxas (its own process), the PTX size (instructions) and ptxas's registers / spills.
-- The machine's load moves these figures by 2x on a shared 2-core box: docs/HOPPER.md
-- "Compile time" counts instructions with valgrind instead.
local cute = require("cute")
local C = require("cute.ffi").C
local here = (arg[0]:match("(.*/)") or "./")
local exdir = here .. "../examples/"
local RUNS = tonumber(arg[1]) or 5
local WHICH = arg[2] or "all"
local KEEP = arg[3] or "ptx"
local PTXAS = C.cute_ptxas_path() ~= nil
local ffi = require("ffi")
ffi.cdef [[
struct cute_bench_rusage { long utime_s, utime_us, stime_s, stime_us; long rest[14]; };
int getrusage(int who, struct cute_bench_rusage *r);
]]
-- CPU milliseconds of this process (who = 0) or of its finished children (who = -1: ptxas)
local ru = ffi.new("struct cute_bench_rusage")
local function cpu_ms(who)
  ffi.C.getrusage(who, ru)
  return tonumber(ru.utime_s + ru.stime_s) * 1e3 + tonumber(ru.utime_us + ru.stime_us) / 1e3
end

local function example(name)
  local f = assert(loadfile(exdir .. name .. ".lua"))
  local env = getfenv(f)
  env.arg, env.CUTE_EXAMPLE_LIB = { [0] = exdir .. name .. ".lua" }, true
  local m = f()
  env.CUTE_EXAMPLE_LIB = nil
  return m
end

-- each returns a fresh (kernel, args) pair
local function gemm_case(mod, ab, c_dtype)
  return function()
    local g = mod.make_gemm({ bn = 256 })
    local A, B = cute.tensor_spec({ 4096, 4096 }, ab), cute.tensor_spec({ 4096, 4096 }, ab)
    local k, _, ta, mA, tb, mB, c, al, be = g.args(A, B, cute.tensor_spec({ 4096, 4096 }, c_dtype), 1, 0, 66)
    return k, { ta, mA, tb, mB, c, al, be }
  end
end
local CASES = {
  { "bf16", "gemm_sm90 bf16 128x256", function() return gemm_case(example("gemm_sm90"), cute.bfloat16, cute.bfloat16) end },
  { "fp8", "gemm_fp8_sm90 128x256", function() return gemm_case(example("gemm_fp8_sm90"), cute.float8_e4m3fn, cute.bfloat16) end },
  { "fa3", "flash_attention_sm90 D=128", function()
    local FA3 = example("flash_attention_sm90")
    return function()
      local opts = { d = 128 }
      local cfg = FA3.config(opts)
      local t = cute.tensor_spec({ 64, 4096, 128 }, cute.bfloat16)
      return FA3.make_kernel(opts), FA3.kernel_args(cfg, t, t, t, t)
    end
  end },
}

local STAGES = { "trace", "verify", "lower", "link", "optimise", "emit_ptx", "assemble", "load_info" }
local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[math.floor((#s + 1) / 2)]
end
local function ptx_instructions(ptx)
  local n = 0
  for line in ptx:gmatch("[^\n]+") do
    local s = line:match("^%s*(.-)%s*$")
    if s ~= "" and not s:match("^[%.%$/{}]") and not s:match("^%S+:$") and not s:match("^//") then n = n + 1 end
  end
  return n
end

print(("%-28s %s"):format("kernel (ms)", table.concat(STAGES, "  ") .. "  total"))
for _, case in ipairs(CASES) do
  if WHICH == "all" or WHICH == case[1] then
    local make = case[3]()
    local rows = {}
    local last
    for run = 1, RUNS do
      local k, args = make()
      k = k:with{ arch = "sm_90a", use_ptxas = PTXAS, cache = false, keep = KEEP }
      collectgarbage()
      local c0, t0 = cpu_ms(0), cute.now_us()
      k:trace(unpack(args))
      local c1, t1 = cpu_ms(0), cute.now_us()
      local p1 = cpu_ms(-1)
      local r = k:compile(unpack(args))
      local row = { trace = (t1 - t0) / 1e3, cpu_trace = c1 - c0, cpu_ptxas = cpu_ms(-1) - p1 }
      -- the compile traces again (k:compile does not reuse k:trace's IR): its LLVM CPU time
      -- is this process's time less a second trace's
      row.cpu_llvm = cpu_ms(0) - c1 - row.cpu_trace
      for _, s in ipairs(STAGES) do
        if s ~= "trace" then row[s] = (r.times[s] or 0) / 1e3 end
      end
      row.total = row.trace + r.times.total / 1e3
      rows[run] = row
      last = r
      if run == 1 then
        print(("%-28s first run: trace %.1f ms wall (%.1f CPU), compile %.1f ms wall"):format(case[2], row.trace,
          row.cpu_trace, r.times.total / 1e3))
      end
    end
    local med = {}
    for _, s in ipairs(STAGES) do
      local v = {}
      for i, r in ipairs(rows) do v[i] = r[s] end
      med[#med + 1] = ("%5.1f"):format(median(v))
    end
    local tot = {}
    for i, r in ipairs(rows) do tot[i] = r.total end
    print(("%-28s %s  %6.1f (min %.1f)"):format(case[2], table.concat(med, "  "), median(tot), math.min(unpack(tot))))
    local function med_of(f)
      local v = {}
      for i, r in ipairs(rows) do v[i] = r[f] end
      return median(v)
    end
    print(("  CPU ms (median): trace %.1f, LLVM (verify..emit_ptx) %.1f, ptxas %.1f = %.1f"):format(med_of("cpu_trace"),
      med_of("cpu_llvm"), med_of("cpu_ptxas"), med_of("cpu_trace") + med_of("cpu_llvm") + med_of("cpu_ptxas")))
    print(("  PTX %d instructions, %d bytes; %s registers, %d spill bytes"):format(ptx_instructions(last.ptx), #last.ptx,
      tostring(last.info.regs), (last.info.spill_stores or 0) + (last.info.spill_loads or 0)))
  end
end

-- With an sm_90 GPU, also a first launch of each (trace -> PTX -> the driver's JIT inside
-- the module load -> launch; what a first call costs by default, use_ptxas = false), the
-- disk cache off. Run with CUDA_CACHE_DISABLE=1, else the driver's own cache may answer.
if not (cute.available() and cute.device(0).cc[1] >= 9) then return end
print(("\nfirst launch through the driver's JIT (%s%s)"):format(cute.device(0).name,
  os.getenv("CUDA_CACHE_DISABLE") == "1" and "" or "; CUDA_CACHE_DISABLE=1 not set: the driver's cache may answer"))
local function gemm_launch(mod, ab)
  return function()
    local g = mod.make_gemm({ bn = 256 })
    local A, B = cute.zeros({ 4096, 4096 }, ab), cute.zeros({ 4096, 4096 }, ab)
    local k, cfg, ta, mA, tb, mB, c, al, be = g.args(A, B, cute.zeros({ 4096, 4096 }, cute.bfloat16), 1, 0)
    return k, cfg, { ta, mA, tb, mB, c, al, be }
  end
end
local LAUNCHES = {
  { "bf16", "gemm_sm90 bf16 128x256", function() return gemm_launch(example("gemm_sm90"), cute.bfloat16) end },
  { "fp8", "gemm_fp8_sm90 128x256", function() return gemm_launch(example("gemm_fp8_sm90"), cute.float8_e4m3fn) end },
  { "fa3", "flash_attention_sm90 D=128", function()
    local FA3 = example("flash_attention_sm90")
    return function()
      local opts = { d = 128 }
      local t = cute.zeros({ 64, 4096, 128 }, cute.bfloat16)
      return FA3.make_kernel(opts), FA3.launch_cfg(64, 4096), FA3.kernel_args(FA3.config(opts), t, t, t, t)
    end
  end },
}
for _, case in ipairs(LAUNCHES) do
  if WHICH == "all" or WHICH == case[1] then
    local k, cfg, args = case[3]()()
    k = k:with{ cache = false, use_ptxas = false }
    cute.synchronize()
    local t0 = cute.now_us()
    k:launch(cfg)(unpack(args))
    local t1 = cute.now_us()
    cute.synchronize()
    local b = k.last_build or {}
    print(("%-28s %7.1f ms: trace %.1f, compile to PTX %.1f, module load (the JIT) %.1f"):format(case[2],
      (t1 - t0) / 1e3, (b.trace_us or 0) / 1e3, (b.compile_us or 0) / 1e3, (b.load_us or 0) / 1e3))
  end
end
