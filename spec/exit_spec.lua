-- Process exit is clean: the background LLVM warm-up thread started by
-- cute.kernel never outlives the process (issue 8, item 10).  Before the fix
-- about 1 run in 10 of a script that only traces a kernel aborted with
-- "double free or corruption" / "free(): invalid pointer".

local self_exe = dofile("spec/support/util.lua").self_exe

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- runs `exe script` n times; returns the number of runs that failed and the
-- first failure's stderr
local function runs(exe, script, n, env)
  local dir = os.tmpname()
  os.remove(dir)
  local errf = dir .. ".err"
  local failed, first = 0, nil
  for _ = 1, n do
    local p = io.popen(("%s%s %s 2>%s; echo \"rc=$?\""):format(env or "", exe, script, errf))
    local out = p:read("*a")
    p:close()
    local f = io.open(errf)
    local err = f and f:read("*a") or ""
    if f then f:close() end
    if not out:find("rc=0", 1, true) or err ~= "" then
      failed = failed + 1
      first = first or (out .. err)
    end
  end
  os.remove(errf)
  return failed, first
end

local TRACE_ONLY = [[
local cute = require("cute")
local k = cute.kernel(function(X, Y)
  local i = cute.arch.thread_idx()
  Y[i] = X[i] + 1
end)
local s = cute.tensor_spec({ 256 }, cute.float32)
assert(k:ir(s, s):find("add", 1, true))
]]

describe("process exit", function()
  local exe = self_exe()
  local dir = os.tmpname()

  it("200 runs of a script that only traces a kernel exit cleanly #slow", function()
    local script = dir .. "_trace.lua"
    write(script, TRACE_ONLY)
    local failed, first = runs(exe, script, 200)
    os.remove(script)
    assert.are.equal(0, failed, tostring(first))
  end)

  it("os.exit right after tracing waits for the warm-up too", function()
    local script = dir .. "_exit.lua"
    write(script, TRACE_ONLY .. "os.exit(0)\n")
    -- os.exit skips lua_close by definition, so under ASan everything the
    -- state holds is a "leak"; double frees and crashes still fail the run
    local failed, first = runs(exe, script, 50, "ASAN_OPTIONS=detect_leaks=0 ")
    os.remove(script)
    assert.are.equal(0, failed, tostring(first))
  end)

  it("a C host (examples/embed) that traces a kernel, lua_closes and exits is clean", function()
    local f = io.open("build/embed")
    if not f then return pending("build/embed is not built (make build/embed)") end
    f:close()
    local failed, first = runs("build/embed", ">/dev/null", 30)
    assert.are.equal(0, failed, tostring(first))
  end)

  it("cute_compile_warmup_wait is callable any time and idempotent", function()
    local C = require("cute.ffi").C
    C.cute_compile_warmup_wait()
    C.cute_compile_warmup_wait()
  end)
end)

-- With a GPU: the first context also starts the driver-JIT warm-up thread
-- (src/cuda.c).  A script that opens a context and ends at once, in either
-- order with cute.kernel, hung or aborted at exit before that thread was
-- joined by lua_close / os.exit (seen on an H100 in issue 9).
local gpu_it = dofile("spec/support/util.lua").gpu_it
local OPEN = [[
local cute = require("cute")
local X = cute.empty({ 16 }, cute.float32)
]]
describe("process exit with a GPU context", function()
  local exe = self_exe()
  local dir = os.tmpname()
  local cases = {
    { "a context, then a trace", OPEN .. TRACE_ONLY },
    { "a trace, then a context", TRACE_ONLY .. OPEN },
    { "a context, then a trace, then os.exit", OPEN .. TRACE_ONLY .. "os.exit(0)\n" },
    { "only a context", OPEN },
  }
  for i, c in ipairs(cases) do
    gpu_it("20 runs of a script with " .. c[1] .. " exit cleanly", function()
      local script = ("%s_ctx%d.lua"):format(dir, i)
      write(script, c[2])
      -- (timeout: a regression hangs; it must fail, not stop the suite)
      local failed, first = runs(exe, script, 20, "ASAN_OPTIONS=detect_leaks=0 timeout 60 ")
      os.remove(script)
      assert.are.equal(0, failed, tostring(first))
    end)
  end
end)
