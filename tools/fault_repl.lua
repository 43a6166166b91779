-- A REPL-like session on the GPU (tools/gpu_fault.sh, docs/FAULTS.md): a failing
-- assert and a long kernel with a timeout, each caught as the REPL does, correct
-- work after each; then an address fault (last: it costs the process its GPU).  Prints "REPL OK" at the end when every step
-- behaved.  FAULT_ONLY=oob: the out-of-bounds step alone (for compute-sanitizer).
io.stdout:setvbuf("no") -- (every step's line out before a crash, if there is one)
local cute = require("cute")
local f32 = cute.float32
local bad = 0
local function step(name, f)
  io.write("-- ", name, "\n")
  local ok, e = pcall(f)
  if not ok then print("error: " .. tostring(e)) end
  return ok, tostring(e)
end
local function expect(cond, what)
  if not cond then bad = bad + 1; print("FAILED: " .. what) else print("ok: " .. what) end
end

local good = cute.kernel(function(A, n)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  if i < n then A[i] = i * 2 end
end)
local function run_good(n)
  local B = cute.zeros(n, f32)
  good:launch{ grid = math.ceil(n / 256), block = 256 }(B, cute.Int32(n))
  local h = B:to_host()
  for i = 0, n - 1 do if h[i] ~= i * 2 then return false end end
  return true
end
local oob = cute.kernel(function(A)
  local i = cute.arch.thread_idx()
  A[i + 1000000000] = 1 -- FAULT_REPL_OOB
end)

expect(select(2, step("a correct kernel", function() assert(run_good(1000)) end)) == "nil", "a correct kernel runs")

-- a failing assert ends its thread: raised at the next wait, the process goes on
local chk = cute.kernel(function(A, n)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  if i < n then
    cute.assert_(A[i] >= 0, "A[i] must not be negative")
    A[i] = A[i] + 1
  end
end)
local host = {}
for i = 1, 256 do host[i] = i == 200 and -5 or i end
local ok, e
if os.getenv("FAULT_ONLY") ~= "oob" then
  ok, e = step("a failing cute.assert_", function()
    chk:launch{ grid = 2, block = 128 }(cute.from_host(host, f32), cute.Int32(256)); cute.synchronize()
  end)
  expect(not ok and e:find("cute.assert_ failed: A[i] must not be negative", 1, true) and
    e:find("thread (71,0,0) of block (1,0,0)", 1, true), "the assert's message, line, thread and block")
  ok = step("the same asserting kernel on good data", function()
    local T = cute.from_host({ 1, 2, 3 }, f32)
    chk:launch{ grid = 1, block = 32 }(T, cute.Int32(3))
    local t = T:to_table()
    assert(t[1] == 2 and t[3] == 4)
  end)
  expect(ok, "the asserting kernel runs again")
  expect(select(1, step("a correct kernel after the assert", function() assert(run_good(1000)) end)), "the session goes on")

  -- a kernel that runs long, waited on with a timeout, then to its end
  local spin = cute.kernel(function(F, cycles)
    local t0 = cute.arch.clock64()
    while cute.arch.clock64() - t0 < cycles do F[1] = F[1] + 1 end
    F[0] = 1
  end, { name = "long_spin" })
  local r1, r2
  local F = cute.zeros(2, cute.int64)
  step("a long kernel, waited on with a timeout", function()
    spin:launch{ grid = 1, block = 1 }(F, cute.Int64(3000000000))
    local t0 = cute.now_us()
    r1, r2 = cute.synchronize{ timeout = 0.3 }
    print("waited " .. math.floor((cute.now_us() - t0) / 1000) .. " ms: " .. tostring(r1) .. ", " .. tostring(r2))
  end)
  expect(r1 == false and tostring(r2):find("long_spin", 1, true), "the timeout gives up and names the kernel")
  expect(cute.synchronize{ timeout = 30 } == true and F:to_table()[1] == 1, "a later wait sees it finish")
end

-- an address fault: CUDA's sticky error, no reset clears it (tools/sticky_probe.py): the
-- error names the kernel and says to restart; later calls are clear errors, not crashes
local Old = cute.zeros(32, f32)
ok, e = step("out of bounds", function() oob:launch{ grid = 1, block = 32 }(Old); cute.synchronize() end)
expect(not ok and e:find("fault_repl.lua:", 1, true) and e:find("faulted", 1, true) and e:find("restart", 1, true),
  "the fault names the kernel and says the process must restart")
ok, e = step("a correct kernel after the fault", function() assert(run_good(1000)) end)
expect(not ok, "after the fault the GPU calls are clear errors (no crash)")
print(bad == 0 and "REPL OK" or ("REPL FAILED: " .. bad))
