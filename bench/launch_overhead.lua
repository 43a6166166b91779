-- bench/launch_overhead.lua: the Lua cost of one launch, without a GPU.
--
--   CUTE_NO_WARMUP=1 build/cuteluajit bench/launch_overhead.lua [launches]
--   (CUTE_JITV=file: LuaJIT's trace log, to check that each loop is one trace)
--
-- The driver's launch call is replaced by a stub (K._use_driver) and the
-- kernel's build by a fake entry (its parameter writer stores the arguments'
-- pointers and scalar like the generated one), so what is timed is the cache
-- lookup, the overlap test, the parameter writer and the launch plumbing of
-- each call style.  Prints ns per launch, best of 15 repetitions.  The GPU
-- figure against a raw C cuLaunchKernel loop is bench/kernels.lua section 1.
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")

local n = tonumber(arg and arg[1]) or 2000000
if os.getenv("CUTE_JITV") then require("jit.v").on(os.getenv("CUTE_JITV")) end
local launched = 0
K._use_driver({
  cute_cuda_launch = function() launched = launched + 1; return 0 end,
  cute_cuda_launch_cluster = function() return 0 end,
  cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
})

local k = cute.kernel(function(A, B, Cc, s)
  local i = cute.arch.thread_idx()
  Cc[i] = A[i] * s + B[i]
end, { name = "bench_launch" })
local slots_t = ffi.typeof("uint64_t[?]")
k._build = function(self, args, nargs)
  self:trace(unpack(args, 1, nargs))
  local slots = slots_t(4)
  local ptrs = { [4] = ffi.cast("float*", slots + 3) }
  return { fn = ffi.cast("void*", 1), params = ffi.new("void*[4]"), slots = slots, ptrs = ptrs,
    fill = function(sl, p, a1, a2, a3, a4) sl[0] = a1.ptr; sl[1] = a2.ptr; sl[2] = a3.ptr; p[4][0] = a4.value end,
    max_dyn_smem = 48 * 1024, dyn_smem = 0 }
end

local function dev(p) return { ptr = p, shape = { 1024 }, strides = { 1 }, dtype = cute.float32 } end
local A, B, Cc = dev(4096), dev(65536), dev(131072)
local s = cute.Float32(2)

local function best(name, f)
  f(1000)
  local b = math.huge
  for _ = 1, 15 do
    local t0 = os.clock()
    f(n)
    b = math.min(b, (os.clock() - t0) / n * 1e9)
  end
  print(("%-40s %8.1f ns/launch"):format(name, b))
  io.stdout:flush()
  return b
end

print(jit.version .. ", " .. n .. " launches per repetition")
best("l(A, B, C, s)  (launcher kept)", function(m)
  local l = k:launch{ grid = 4, block = 256 }
  for _ = 1, m do l(A, B, Cc, s) end
end)
local cfg = { grid = 4, block = 256 }
best("k:launch(cfg)(A, B, C, s)", function(m)
  for _ = 1, m do k:launch(cfg)(A, B, Cc, s) end
end)
best("k:launch{...}(A, B, C, s)", function(m)
  for _ = 1, m do k:launch{ grid = 4, block = 256 }(A, B, Cc, s) end
end)
best("k(cfg, A, B, C, s)", function(m)
  for _ = 1, m do k(cfg, A, B, Cc, s) end
end)
assert(k.traces == 1, "the benchmark retraced")
assert(launched > 0)
K._use_driver(nil)
