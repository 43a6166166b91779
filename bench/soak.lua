-- Soak test (issue 14): N cycles of compile + load + launch + check + free of
-- varied kernels, watching host RSS and device memory for growth.
--
--   cuteluajit bench/soak.lua [cycles [every]]      (default 10000 cycles, a sample every cycles/20)
--
-- Each cycle makes a new kernel object (one of four bodies) and calls it with
-- a compile-time number and a tensor length that change every cycle, so the
-- cycle really traces, compiles and loads a new binary; it launches it, checks
-- the result against plain Lua, frees the tensors and drops the kernel.
-- What a cycle exercises depends on the target and SOAK_MODE:
--   launch   the launch path: on a GPU trace + LLVM + PTX + module load +
--            launch; on the CPU target trace + the engine's prepare + launch
--            (no LLVM there: docs/CPU_TARGET.md)
--   compile  trace + LLVM to PTX only (k:ptx on cute.tensor_specs; no launch)
--   both     launch, then the same kernel compiled to PTX (the default on the
--            CPU target, so that LLVM is soaked too; on a GPU the default is launch)
-- Every `every` cycles (after a full collect) it samples host RSS
-- (/proc/self/statm), the device memory in use (cuMemGetInfo on a GPU, the
-- host driver's live bytes on the CPU target), the Lua heap, and how many of
-- the kernels made so far are still alive (a weak table: 0 or 1 means the
-- kernels, their launch caches and their modules / CPU programs were
-- collected).  Verdict: from the sample at the end of the warm-up (the first
-- SOAK_WARMUP fraction, default 0.2) to the last, RSS grows by at most
-- SOAK_MAX_RSS_MB (default 8 MiB), device memory by at most SOAK_MAX_DEV_MB
-- (default 2 MiB), and no kernel is kept.
-- SOAK_SVG=file.svg writes the RSS / device-memory curve; SOAK_CSV=file the samples.
-- The last line is "N passed, N failed" (tools/run_tests.sh counts it).
local cute = require("cute")
local ffi = require("ffi")
local rt = require("cute.runtime")
local tcpu = require("cute.target_cpu")

local N = math.floor(tonumber(arg and arg[1]) or tonumber(os.getenv("SOAK_CYCLES") or "") or 10000)
local EVERY = math.max(1, math.floor(tonumber(arg and arg[2]) or math.max(1, N / 20)))
local WARMUP = tonumber(os.getenv("SOAK_WARMUP") or "0.2")
local MAX_RSS = tonumber(os.getenv("SOAK_MAX_RSS_MB") or "8") * 2 ^ 20
local MAX_DEV = tonumber(os.getenv("SOAK_MAX_DEV_MB") or "2") * 2 ^ 20

-- the binaries must really be built every cycle: no disk cache
local KOPTS = { cache = false }

-- Does a launch run anywhere?  (A GPU, or the CPU target: chosen explicitly or
-- automatically without a GPU; CUTE_TARGET=gpu on a machine without one: compile only.)
local gpu_ok = rt.available()
if not gpu_ok and os.getenv("CUTE_TARGET") ~= "gpu" then tcpu.install("soak: no GPU") end
local on_cpu = tcpu.active
local can_launch = gpu_ok or on_cpu
local MODE = os.getenv("SOAK_MODE") or (on_cpu and "both" or (can_launch and "launch" or "compile"))
if MODE ~= "launch" and MODE ~= "compile" and MODE ~= "both" then
  io.stderr:write("soak: SOAK_MODE must be launch, compile or both, got " .. MODE .. "\n"); os.exit(2)
end
if MODE ~= "compile" and not can_launch then
  io.stderr:write("soak: SOAK_MODE=" .. MODE .. " needs a GPU or the CPU target\n"); os.exit(2)
end

---------------------------------------------------------------------------
-- measurements
---------------------------------------------------------------------------
pcall(ffi.cdef, "long sysconf(int name);")
local PAGE = tonumber(ffi.C.sysconf(30)) -- _SC_PAGESIZE on Linux
local function rss_bytes()
  local f = io.open("/proc/self/statm")
  if not f then return 0 end
  local _, res = f:read("*n", "*n")
  f:close()
  return (res or 0) * PAGE
end
local function dev_bytes()
  if on_cpu then return (tcpu.live()) end
  if not gpu_ok then return 0 end
  local free, total = rt.mem_info()
  return total - free
end

---------------------------------------------------------------------------
-- the kernels: four bodies, each specialised on c (a compile-time number)
---------------------------------------------------------------------------
local bodies = {
  { name = "axpb", dtype = cute.float32, -- Y = X * c + 1
    fn = function(X, Y, c)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(i < cute.size(X), function() Y[i] = X[i] * c + 1 end)
    end,
    ref = function(x, c) return x * c + 1 end },
  { name = "unrolled", dtype = cute.int32, -- Y = sum over j < c % 5 + 1 of (X + j)
    fn = function(X, Y, c)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(i < cute.size(X), function()
        local s = X[i] * 0
        for j in cute.range_constexpr(c % 5 + 1) do s = s + X[i] + j end
        Y[i] = s
      end)
    end,
    ref = function(x, c) local s = 0; for j = 0, c % 5 do s = s + x + j end; return s end },
  { name = "branch", dtype = cute.int32, -- Y = X odd ? X * 3 : X - c
    fn = function(X, Y, c)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(i < cute.size(X), function()
        cute.if_then(X[i] % 2 == 1, function() Y[i] = X[i] * 3 end, function() Y[i] = X[i] - c end)
      end)
    end,
    ref = function(x, c) return x % 2 == 1 and x * 3 or x - c end },
  { name = "smem_reverse", dtype = cute.int32, -- Y = X reversed in blocks of 64, plus c
    fn = function(X, Y, c)
      local t, b = cute.arch.thread_idx(), cute.arch.block_idx()
      local S = cute.make_shared_tensor(cute.make_layout({ 64 }), cute.int32)
      local i = b * 64 + t
      cute.if_then(i < cute.size(X), function() S[t] = X[i] end, function() S[t] = c end)
      cute.arch.sync_threads()
      cute.if_then(i < cute.size(X), function() Y[i] = S[63 - t] + c end)
    end,
    -- (lanes past the end read c from the padding: the reference does the same)
    ref = nil },
}

local function expected(body, host, n, c, i) -- 0-based i
  if body.ref then return body.ref(host[i + 1], c) end
  local b, t = math.floor(i / 64), i % 64
  local j = b * 64 + 63 - t
  return (j < n and host[j + 1] or c) + c
end

local kept = setmetatable({}, { __mode = "k" }) -- every kernel made: alive ones stay
local bad = 0
local first_bad

local function cycle(k)
  local body = bodies[k % #bodies + 1]
  local c = k % 1009 + 2                         -- a new compile-time value ...
  local n = 64 + (k * 37) % 193                  -- ... and a new length, every cycle
  local kern = cute.kernel(body.fn, KOPTS)
  kept[kern] = true
  if MODE ~= "compile" then
    local host = {}
    for i = 1, n do host[i] = (i * 7 + k) % 101 end
    local X = cute.from_host(host, body.dtype, { n })
    local Y = cute.zeros({ n }, body.dtype)
    kern:launch{ grid = math.ceil(n / 64), block = 64 }(X, Y, c)
    local out = Y:to_host()
    for i = 0, n - 1 do
      local want = expected(body, host, n, c, i)
      if out[i] ~= want then
        bad = bad + 1
        first_bad = first_bad or ("cycle %d (%s, c=%d, n=%d): Y[%d] = %s, expected %s"):format(k, body.name, c, n, i,
          tostring(out[i]), tostring(want))
        break
      end
    end
    X:free(); Y:free()
  end
  if MODE ~= "launch" then
    local S = cute.tensor_spec({ n }, body.dtype)
    local ptx = kern:ptx(S, cute.tensor_spec({ n }, body.dtype), c)
    if not ptx:find(".entry", 1, true) then
      bad = bad + 1
      first_bad = first_bad or ("cycle %d: no .entry in the PTX"):format(k)
    end
  end
end

---------------------------------------------------------------------------
-- the run
---------------------------------------------------------------------------
local target = gpu_ok and ("GPU " .. cute.device(0).name) or (on_cpu and "CPU target" or "no device (compile only)")
io.write(("soak: %d cycles, mode %s, %s, a sample every %d cycles\n"):format(N, MODE, target, EVERY))
io.write(("%8s %10s %10s %10s %9s %6s %8s\n"):format("cycle", "rss_MiB", "dev_MiB", "lua_MiB", "alive", "bad", "s"))
local samples = {}
local t0 = os.clock()
local wall0 = os.time()
local function sample(k)
  collectgarbage(); collectgarbage()
  local alive = 0
  for _ in pairs(kept) do alive = alive + 1 end
  local s = { cycle = k, rss = rss_bytes(), dev = dev_bytes(), lua = collectgarbage("count") * 1024, alive = alive,
    t = os.clock() - t0 }
  samples[#samples + 1] = s
  io.write(("%8d %10.2f %10.3f %10.2f %9d %6d %8.1f\n"):format(k, s.rss / 2 ^ 20, s.dev / 2 ^ 20, s.lua / 2 ^ 20,
    alive, bad, s.t))
  io.flush()
end
sample(0)
for k = 1, N do
  cycle(k)
  if k % 16 == 0 then collectgarbage("step", 200) end
  if k % EVERY == 0 or k == N then sample(k) end
end
if samples[#samples].cycle ~= N then sample(N) end

---------------------------------------------------------------------------
-- verdict
---------------------------------------------------------------------------
local base = samples[1]
for _, s in ipairs(samples) do
  if s.cycle >= WARMUP * N then base = s; break end
end
local last = samples[#samples]
local span = math.max(1, last.cycle - base.cycle)
local drss, ddev, dlua = last.rss - base.rss, last.dev - base.dev, last.lua - base.lua
io.write(("after warm-up (cycle %d -> %d): RSS %+.2f MiB (%+.1f bytes/cycle), device %+.3f MiB, Lua heap %+.2f MiB; " ..
  "%.1f s CPU, %d s wall\n"):format(base.cycle, last.cycle, drss / 2 ^ 20, drss / span, ddev / 2 ^ 20, dlua / 2 ^ 20,
  os.clock() - t0, os.time() - wall0))

local passed, failed = 0, 0
local function verdict(ok, what)
  if ok then passed = passed + 1 else failed = failed + 1 end
  io.write((ok and "ok   " or "FAIL ") .. what .. "\n")
end
verdict(bad == 0, ("every cycle's result right (%d wrong)%s"):format(bad, first_bad and (": " .. first_bad) or ""))
verdict(drss <= MAX_RSS, ("host RSS growth after warm-up %.2f MiB <= %.0f MiB"):format(drss / 2 ^ 20, MAX_RSS / 2 ^ 20))
verdict(ddev <= MAX_DEV, ("device memory growth after warm-up %.3f MiB <= %.0f MiB"):format(ddev / 2 ^ 20,
  MAX_DEV / 2 ^ 20))
verdict(last.alive <= 1, ("kernels collected (%d of %d still alive after a full collect)"):format(last.alive, N))

local function write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end
if os.getenv("SOAK_CSV") then
  local rows = { "cycle,rss_bytes,dev_bytes,lua_bytes,alive,cpu_s" }
  for _, s in ipairs(samples) do
    rows[#rows + 1] = ("%d,%d,%d,%d,%d,%.2f"):format(s.cycle, s.rss, s.dev, s.lua, s.alive, s.t)
  end
  write_file(os.getenv("SOAK_CSV"), table.concat(rows, "\n") .. "\n")
end
if os.getenv("SOAK_SVG") then
  write_file(os.getenv("SOAK_SVG"), dofile((arg[0]:match("(.*/)") or "./") .. "soak_svg.lua")(samples, {
    title = ("cuteluajit soak: %d cycles, %s, mode %s"):format(N, target, MODE), warmup = base.cycle }))
end
io.write(("%d passed, %d failed\n"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
