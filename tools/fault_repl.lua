-- A REPL-like session on the GPU (tools/gpu_fault.sh, docs/FAULTS.md): faults one
-- after another in one process, each error caught and printed as the REPL does,
-- and correct work after each.  Prints "REPL OK" at the end when every step
-- behaved.  FAULT_ONLY=oob: the out-of-bounds step alone (for compute-sanitizer).
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
local Old = cute.zeros(32, f32)
local ok, e = step("out of bounds", function() oob:launch{ grid = 1, block = 32 }(Old); cute.synchronize() end)
expect(not ok and e:find("the kernel that faulted", 1, true) and e:find("was reset", 1, true), "the fault names the kernel and the reset")
if os.getenv("FAULT_ONLY") == "oob" then print(bad == 0 and "REPL OK" or "REPL FAILED"); return end
expect(select(1, step("the same correct kernel again", function() assert(run_good(1000)) end)), "recovered: a correct run")
ok, e = step("a tensor from before the reset", function() return Old:to_table() end)
expect(not ok and e:find("lost in the reset", 1, true), "an old tensor is a clear error")

local chk = cute.kernel(function(A, n)
  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
  if i < n then
    cute.assert_(A[i] >= 0, "A[i] must not be negative")
    A[i] = A[i] + 1
  end
end)
local host = {}
for i = 1, 256 do host[i] = i == 200 and -5 or i end
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
expect(ok, "the asserting kernel loads again and runs")

local inc = cute.kernel(function(A) local i = cute.arch.thread_idx(); A[i] = A[i] + 1 end)
ok, e = step("a misaligned access", function()
  local A = cute.zeros(64, f32)
  inc:launch{ grid = 1, block = 16 }(cute.from_ptr(A.ptr + 2, { 16 }, f32)); cute.synchronize()
end)
expect(not ok and e:find("MISALIGNED", 1, true), "a misaligned access is reported")
expect(select(1, step("correct after the misaligned access", function() assert(run_good(300)) end)), "recovered again")

local spin = cute.kernel(function(F) while F[0] == 0 do cute.arch.atomic_add(F, 1, 1) end end)
local r1, r2
step("a kernel that never ends, waited on with a timeout", function()
  spin:launch{ grid = 1, block = 1 }(cute.zeros(2, cute.int32))
  local t0 = cute.now_us()
  r1, r2 = cute.synchronize{ timeout = 1 }
  print("waited " .. math.floor((cute.now_us() - t0) / 1000) .. " ms: " .. tostring(r1) .. ", " .. tostring(r2))
end)
expect(r1 == false and tostring(r2):find("still running", 1, true), "the timeout gives up and names the kernel")
local t0 = cute.now_us()
ok, e = step("cute.reset_device() stops it", function() cute.reset_device() end)
print(("reset took %.0f ms"):format((cute.now_us() - t0) / 1000))
expect(ok, "cute.reset_device returns")
expect(select(1, step("correct after the reset", function() assert(run_good(5000)) end)), "a correct run after the reset")
print(bad == 0 and "REPL OK" or ("REPL FAILED: " .. bad))
