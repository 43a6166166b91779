-- Small helpers shared by the specs (load with dofile("spec/support/util.lua")).
local M = {}

-- whole file as a string, or nil if it cannot be opened
function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- plain-text search (no patterns); false for nil
function M.has(s, sub) return s ~= nil and s:find(sub, 1, true) ~= nil end

-- line number of the first line of file containing marker (not counting the
-- lines that call line_of itself)
function M.line_of(file, marker)
  local i = 0
  for l in io.lines(file) do
    i = i + 1
    if l:find(marker, 1, true) and not l:find("line_of", 1, true) then return i end
  end
  error("marker not found: " .. marker)
end

-- the interpreter running the specs (build/cuteluajit, its ASan twin or the
-- bundle's bin/cuteluajit), for specs that run a child process
function M.self_exe()
  local ffi = require("ffi")
  pcall(ffi.cdef, "int getpid(void);")
  local p = io.popen("readlink -f /proc/" .. ffi.C.getpid() .. "/exe")
  local exe = p:read("*l")
  p:close()
  return exe
end

-- A stub CUDA driver for require("cute.kernel")._use_driver (spec/launch_spec.lua
-- has the full one): modules "load" at distinct made-up handles (stub.loads
-- counts them), functions resolve, and every launch, plain or cluster, calls
-- on_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params) (default: counts
-- it in stub.launches); nothing runs.  Returns the driver and stub.
function M.stub_driver(on_launch)
  local ffi = require("ffi")
  local stub = { loads = 0, launches = 0 }
  on_launch = on_launch or function() stub.launches = stub.launches + 1 end
  local driver = {
    available = function() return true end,
    cute_cuda_module_load = function(_, _, _, out)
      stub.loads = stub.loads + 1
      out[0] = ffi.cast("void*", 4096 + 16 * stub.loads)
      return 0
    end,
    cute_cuda_module_get_function = function(mod, _, out)
      out[0] = ffi.cast("void*", ffi.cast("uintptr_t", mod) + 1)
      return 0
    end,
    cute_cuda_module_unload = function() return 0 end,
    cute_cuda_launch = function(fn, gx, gy, gz, bx, by, bz, smem, stream, params)
      return on_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params) or 0
    end,
    cute_cuda_launch_cluster = function(fn, gx, gy, gz, bx, by, bz, _, _, _, smem, stream, params)
      return on_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params) or 0
    end,
    cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
    cute_cuda_get_device = function(out) out[0] = 0; return 0 end,
    cute_cuda_set_device = function() return 0 end,
  }
  return driver, stub
end

-- run a shell command: its output (stdout and stderr) and its exit status
function M.sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)\n?$"))
  return (out:gsub("rc=%d+\n?$", "")), rc
end

-- it(name .. " #gpu", fn) when a GPU is there, else a visible pending test
-- (never a pass) naming why there is none.  busted's it/pending live in the
-- calling spec file's environment.
local gpu, why
-- n random floats in [lo, hi) (default -1..1) as a float[n], from one seeded
-- LCG per process: GPU specs compare against CPU references on them
local seed = 12345
function M.rand_floats(n, lo, hi)
  lo, hi = lo or -1, hi or 1
  local a = require("ffi").new("float[?]", n)
  for i = 0, n - 1 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    a[i] = lo + (hi - lo) * seed / 2147483648
  end
  return a
end

-- the message of the error f raises (fails the test when f does not raise)
function M.err_of(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end

-- f raises an error located at the caller's line (file:line: of the spec line
-- that calls expect_error) and containing every string given
function M.expect_error(f, ...)
  local info = debug.getinfo(2, "Sl")
  local file = info.short_src:match("[^/]+$")
  local e = M.err_of(f)
  assert(e:find(file .. ":" .. info.currentline .. ": ", 1, true), "not at the user's line: " .. e)
  for _, s in ipairs({ ... }) do
    assert(e:find(s, 1, true), ("%q not in: %s"):format(s, e))
  end
end

-- the error tracing k with these arguments raises (fails when it does not)
function M.trace_error(k, ...)
  local ok, e = pcall(k.ir, k, ...)
  assert(not ok, "expected a trace error")
  return tostring(e)
end

-- e is located at the line of `file` that holds marker
function M.at_line(file, e, marker)
  assert(e:find(file .. ":" .. M.line_of(file, marker) .. ":", 1, true), e)
end

-- how many times the Lua pattern pat matches in s
function M.count(s, pat)
  local _, n = s:gsub(pat, "")
  return n
end

-- how many times the plain string sub occurs in s (not overlapping)
function M.count_plain(s, sub)
  local n, i = 0, 1
  while true do
    local _, e = s:find(sub, i, true)
    if not e then return n end
    n, i = n + 1, e + 1
  end
end

-- the CPU reference of the GEMM specs, in doubles: C[m][n] = C0[m][n] + sum_k
-- A[m][k] B[n][k] over 0-based flat row-major arrays (A M x K; B N x K, or
-- K x N when b_mn_major; C0 may be nil); returns C, 0-based
function M.gemm_reference(A, B, C0, Mm, Nn, Kk, b_mn_major)
  local C = {}
  for m = 0, Mm - 1 do
    for n = 0, Nn - 1 do
      local s = C0 and C0[m * Nn + n] or 0
      if b_mn_major then
        for k = 0, Kk - 1 do s = s + A[m * Kk + k] * B[k * Nn + n] end
      else
        for k = 0, Kk - 1 do s = s + A[m * Kk + k] * B[n * Kk + k] end
      end
      C[m * Nn + n] = s
    end
  end
  return C
end

-- an exact comparison of a rows x cols row-major result with a 0-based
-- reference: how many elements differ, and the first of them as
-- "C[row][col]: got X, want Y".  got is 0-based, or 1-based (a to_table()
-- result) when got_from_1 is true
function M.mismatches(got, want, rows, cols, got_from_1)
  local off = got_from_1 and 1 or 0
  local bad, first = 0, nil
  for i = 0, rows * cols - 1 do
    local g = got[i + off]
    if g ~= want[i] then
      bad = bad + 1
      first = first or ("C[%d][%d]: got %s, want %s"):format(math.floor(i / cols), i % cols, tostring(g),
        tostring(want[i]))
    end
  end
  return bad, first
end

-- t[0 .. n-1] as a Lua sequence
function M.one_based(t, n)
  local o = {}
  for i = 0, n - 1 do o[i + 1] = t[i] end
  return o
end

-- Is this process on the CPU target by CUTE_TARGET=cpu (tools/run_tests.sh's
-- second pass)?  Then the #gpu tests run there (docs/CPU_TARGET.md, "CI").
function M.on_cpu_target() return os.getenv("CUTE_TARGET") == "cpu" end

-- the engine's refusal of an op it does not run yet ("op OP at FILE:LINE is
-- not supported on the CPU target yet"), or the trace's refusal of an op newer
-- than the CPU target's sm_80 (cute.device(0)): that sentence, or nil
local function unsupported(e)
  local s = tostring(e)
  return s:match("(op [^\n]- is not supported on the CPU target yet)")
    or s:match("([^\n]*needs sm_%d+a?[^\n;]- or newer; the kernel is compiled for sm_80)")
end
M.cpu_unsupported = unsupported

-- a test tagged #gpu in the calling spec's environment: pending without a GPU.
-- On the CPU target (CUTE_TARGET=cpu) it runs, unless needs_gpu names why it
-- needs a real GPU (pending with that reason); an op the engine does not run
-- yet makes it pending with the engine's sentence (never a pass, never a
-- failure), so that it runs as soon as the op is supported.
local function gpu_test(env, name, fn, needs_gpu)
  if M.on_cpu_target() then
    if needs_gpu then
      env.it(name .. " #gpu", function() env.pending("needs a real GPU (CPU target): " .. needs_gpu) end)
      return
    end
    env.it(name .. " #gpu", function()
      -- (a spec that swapped in a stub driver restores the GPU driver when it ends)
      require("cute")
      require("cute.target_cpu").install()
      local ok, e = xpcall(fn, function(e)
        if type(e) == "string" and (e:find("no CUDA driver", 1, true) or e:find("cuTensorMapEncode", 1, true)) then
          -- a TMA descriptor is encoded by the CUDA driver (cuTensorMapEncode*)
          for level = 2, 40 do
            local i = debug.getinfo(level, "S")
            if not i then break end
            if i.short_src:match("lua/cute/tma[%w_]*%.lua$") then
              return "op TMA descriptor (cuTensorMapEncode, " .. i.short_src .. ") is not supported on the CPU target yet"
            end
          end
        end
        if type(e) == "string" and not e:match("^[^\n]-:%d+: ") then
          -- (an assert(cond, msg) without a position: the spec's line, found
          -- while the stack is still there, as busted would have)
          for level = 2, 40 do
            local i = debug.getinfo(level, "Sl")
            if not i then break end
            if i.what ~= "C" and i.short_src:match("_spec%.lua$") then
              return i.short_src .. ":" .. i.currentline .. ": " .. e
            end
          end
        end
        return e
      end)
      if ok then return end
      local why_not = type(e) == "string" and unsupported(e)
      if why_not then -- (busted names the place: the kernel's line the engine names)
        return env.pending((why_not:match(" at ([^%s]+:%d+) ") or "CPU target") .. ": " .. why_not)
      end
      error(e, 0)
    end)
    return
  end
  if gpu == nil then gpu, why = require("cute").available() end
  if gpu then
    env.it(name .. " #gpu", fn)
  else
    env.it(name .. " #gpu", function() env.pending("needs a GPU: " .. tostring(why)) end)
  end
end

function M.gpu_it(name, fn) gpu_test(getfenv(2), name, fn) end

-- a size for a #gpu test: gpu_size on a GPU, cpu_size on the CPU target
-- (CI's budget: the interpreter runs some 10^8 .. 10^9 thread-instructions a second)
function M.ci_size(gpu_size, cpu_size) return M.on_cpu_target() and cpu_size or gpu_size end

-- a #gpu test that needs a real GPU (timings, the driver, cubins, ptxas,
-- several devices, peer memory, NCCL, torch...): reason says which; pending
-- on the CPU target with it, a plain #gpu test on a GPU
function M.device_it(name, reason, fn) gpu_test(getfenv(2), name, fn, reason) end

-- is the device an sm_90a one (Hopper: wgmma, TMA, clusters, setmaxnreg)?
-- false and why not otherwise
function M.sm90()
  local arch = require("cute.compile").device_arch()
  if arch == "sm_90a" then return true end
  if not arch then return false, "needs an sm_90a GPU (Hopper): no GPU here" end
  local d = require("cute").device()
  return false, ("needs an sm_90a GPU (Hopper): the device is %s (%s)"):format(d.name, d.arch)
end

-- a #gpu test that needs an sm_90a device: pending without a GPU and on another one
function M.hopper_it(name, fn)
  local env = getfenv(2)
  gpu_test(env, name, function()
    local ok, why = M.sm90() -- (the CPU target compiles for sm_90a: compile.device_arch)
    if not ok then return env.pending(why) end
    fn()
  end)
end

-- In a describe block: the block runs on the CPU target (installed in its setup,
-- taken off again in its teardown unless it was on before)
function M.use_cpu_target()
  local env, cpu, was_active = getfenv(2), require("cute.target_cpu"), nil
  env.setup(function() was_active = cpu.active; cpu.install(nil) end)
  env.teardown(function() if not was_active then cpu.uninstall() end end)
end

return M
