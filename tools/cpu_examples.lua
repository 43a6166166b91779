-- Runs every examples/*.lua with CI-sized arguments, each in its own process,
-- and counts: each example checks its own result against a host reference
-- (examples/common.lua's ex.check: "NAME: rel. error E (tolerance T) OK", or
-- exit 1); integer kernels are checked exactly (tolerance 0).
--   cuteluajit tools/cpu_examples.lua [--target cpu|gpu] [--out DIR] [--dir D] [NAME...]
-- --target: CUTE_TARGET of the children (default cpu: the CPU target, what
-- tools/run_tests.sh runs in CI; gpu: the same runs on a GPU host, for
-- tools/gpu_cpu_compare.sh).  --out: each example's output kept as DIR/NAME.out
-- and its verdict as DIR/NAME.verdict.  --dir: the examples' directory (default
-- examples; spec/cpu_examples_spec.lua points it at broken ones).  NAMEs: only those.
-- An example that hits an op the CPU target does not run yet is skipped with
-- the engine's sentence ("op OP at FILE:LINE is not supported on the CPU
-- target yet"), never passed: when support lands it runs.  An example that
-- needs more than the CPU target has (several GPUs) is skipped with why.
-- Every examples/*.lua must have an entry below (a new one without is a
-- failure).  Last line: "N passed, N failed, N skipped".
local ffi = require("ffi")

-- name -> arguments (CI sizes: seconds each on the CPU target; the defaults
-- stay what they are on a GPU) and, when it cannot run here, why
local EXAMPLES = {
  { "vector_add", { 65536 } },
  { "saxpy", { 65536 } },
  { "reduce_sum", { 100000 } },
  { "transpose", { 128, 96 } },
  { "softmax", { 8, 1024 } },
  { "sgemm_naive", { 100, 72, 40 } },
  { "sgemm_tiled", { 128, 128, 64 } },
  { "flash_attention_fwd", { 1, 2, 100, 64 } },
  { "flash_attention_sm90", { 1, 1, 100, 64 } },
  { "gemm_bf16", { 136, 72, 64 } },
  { "gemm_bf16_arch", { 136, 72, 64 } },
  { "gemm_fp8", { 72, 40, 64 } },
  { "gemm_fp8_sm90", { 128, 128, 128 } },
  { "gemm_int8", { 72, 40, 64 } },
  { "gemm_int8_multistage", { 72, 40, 64 } },
  { "gemm_tf32", { 72, 40, 36 } },
  { "gemm_tf32_multistage", { 72, 40, 36 } },
  { "gemm_sm90", { 128, 128, 128 } },
  { "tour", {}, verdict = "" }, -- (the layout algebra: no kernel, no reference; its exit status)
  { "allreduce_peer", {}, needs = "two or more GPUs with peer access and NCCL (the CPU target is one device)" },
  { "tp_linear", { 256, 256, 512, 2 }, needs = "two or more GPUs (sm_90a) and NCCL (the CPU target is one device)" },
}
-- files of examples/ that are libraries of the examples, not examples
local LIBS = { common = true, mma_gemm_lib = true, gemm_multistage = true }

local target, out_dir, only, dir = "cpu", nil, nil, "examples"
local i = 1
while arg[i] do
  if arg[i] == "--target" then target, i = arg[i + 1], i + 2
  elseif arg[i] == "--out" then out_dir, i = arg[i + 1], i + 2
  elseif arg[i] == "--dir" then dir, i = arg[i + 1], i + 2
  else only = only or {}; only[arg[i]] = true; i = i + 1 end
end
if target ~= "cpu" and target ~= "gpu" then
  io.stderr:write("cpu_examples: --target cpu or gpu\n"); os.exit(2)
end

pcall(ffi.cdef, "int getpid(void);")
local function read_cmd(cmd)
  local p = io.popen(cmd)
  local s = p:read("*a")
  p:close()
  return s
end
local exe = read_cmd("readlink -f /proc/" .. ffi.C.getpid() .. "/exe"):gsub("%s+$", "")
local timeout = tonumber(os.getenv("CPU_EXAMPLES_TIMEOUT")) or 600

local function now() return tonumber(read_cmd("date +%s.%N")) end
local function write(path, s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end

local passed, failed, skipped = 0, 0, 0
local function report(kind, name, detail, t)
  print(("%-4s %-22s %s%s"):format(kind, name, t and ("%6.1fs  "):format(t) or "", detail))
  if out_dir then write(out_dir .. "/" .. name .. ".verdict", kind .. " " .. detail .. "\n") end
end

local listed = {}
for _, e in ipairs(EXAMPLES) do listed[e[1]] = true end
for f in read_cmd("ls " .. dir .. "/*.lua"):gmatch("[^\n]+") do
  local name = f:match("([^/]-)%.lua$")
  if not listed[name] and not LIBS[name] and (not only or only[name]) then
    failed = failed + 1
    report("FAIL", name, "no entry in tools/cpu_examples.lua (CI arguments, or why it cannot run)")
  end
end

for _, e in ipairs(EXAMPLES) do
  local name, args = e[1], e[2]
  if only and not only[name] then goto continue end
  if e.needs and target == "cpu" then
    skipped = skipped + 1
    report("SKIP", name, "needs " .. e.needs)
    goto continue
  end
  do
    local sargs = {}
    for k, v in ipairs(args) do sargs[k] = tostring(v) end
    local cmd = ("CUTE_TARGET=%s timeout %d %s %s/%s.lua %s 2>&1; echo \"rc=$?\""):format(target, timeout, exe,
      dir, name, table.concat(sargs, " "))
    local t0 = now()
    local out = read_cmd(cmd)
    local t = now() - t0
    local rc = tonumber(out:match("rc=(%d+)\n?$"))
    out = out:gsub("rc=%d+\n?$", "")
    if out_dir then write(out_dir .. "/" .. name .. ".out", out) end
    local unsupported = out:match("(op [^\n]- is not supported on the CPU target yet)")
    if not unsupported and (out:find("cuTensorMapEncode", 1, true) or out:find("no CUDA driver", 1, true))
      and out:find("lua/cute/tma[%w_]*%.lua:%d+: in function") then
      -- (a TMA descriptor is encoded by the CUDA driver: tma.lua calls it directly)
      unsupported = "op TMA descriptor (cuTensorMapEncode, lua/cute/tma.lua) is not supported on the CPU target yet"
    end
    -- the CPU target is an sm_80 device (cute.device(0)): an op of a newer architecture is refused at the trace
    unsupported = unsupported or out:match("([^\n]*needs sm_%d+a?[^\n;]- or newer; the kernel is compiled for sm_80)")
    -- the example's own verdict: ex.check's line (or, for entries with verdict = "", none)
    local verdict = e.verdict or out:match("[^\n]*: rel%. error [^\n]*OK")
    local bad_check = out:match("[^\n]*: rel%. error [^\n]*FAILED")
    local what = ("%s/%s.lua %s"):format(dir, name, table.concat(sargs, " "))
    if target == "cpu" and unsupported and rc ~= 0 then
      skipped = skipped + 1
      report("SKIP", name, unsupported, t)
    elseif e.needs and rc == 0 and not verdict then -- (a GPU host with fewer GPUs: the example says so)
      skipped = skipped + 1
      report("SKIP", name, "needs " .. e.needs, t)
    elseif rc == 0 and verdict and not bad_check then
      passed = passed + 1
      report("PASS", name, verdict ~= "" and verdict or (what .. ": exit 0"), t)
    else
      failed = failed + 1
      local why = bad_check or (rc == 124 and ("timed out after %ds"):format(timeout))
        or (rc == 0 and "exit 0 without its check's OK line (did it run the kernel?)") or ("exit " .. tostring(rc))
      report("FAIL", name, what .. ": " .. why, t)
      local tail = {}
      for l in out:gmatch("[^\n]*") do tail[#tail + 1] = l end
      for k = math.max(1, #tail - 15), #tail do if tail[k] ~= "" then print("     | " .. tail[k]) end end
    end
  end
  ::continue::
end
print(("%d passed, %d failed, %d skipped"):format(passed, failed, skipped))
os.exit(failed == 0 and 0 or 1)
