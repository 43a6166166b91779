-- cute.target_cpu: the CPU execution target (docs/CPU_TARGET.md).
--
-- Kernels run on the host through the IR interpreter of src/cpu_exec.c:
-- the traced kernel's IR is handed to the engine instead of LLVM/PTX, and
-- launches keep CUDA's semantics (grids, blocks, 32-lane warps in lock-step,
-- barriers, shared memory, atomics, printf).  Chosen by
--   cute.kernel(f, {target = "cpu"}),  CUTE_TARGET=cpu,  or automatically
--   when there is no GPU (announced once on stderr; CUTE_TARGET=gpu keeps
--   the GPU path and its "no GPU" errors).
-- In CPU mode the runtime's driver seam (runtime.lua M._use_driver) points
-- at the host: device tensors are host memory behind the same API
-- (cute.empty, zeros, from_host, to_host, copy_from, fill), device 0 is the
-- CPU, streams and events are no-ops (work runs when it is launched).
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local rt = require("cute.runtime")

local M = {} -- M.active: the process is on the CPU target (below)
-- where a launch's cute.printf output goes (after the launch, in thread order)
M.write = function(s) io.stdout:write(s) end

pcall(ffi.cdef, "void *memset(void *s, int c, size_t n);")
local owned = {} -- address of a host allocation -> the cdata holding it
local live = { bytes = 0, count = 0 } -- what `owned` holds (M.live: bench/soak.lua)

local function addr(p) return ffi.cast("void *", ffi.cast("uintptr_t", p)) end
local function ok() return 0 end
local next_handle = 0x1000
local function handle(out) next_handle = next_handle + 16; out[0] = ffi.cast("void *", next_handle); return 0 end
local function fill_n(dst, v, n, size)
  local p = ffi.cast(size == 2 and "uint16_t *" or "uint32_t *", ffi.cast("uintptr_t", dst))
  for i = 0, tonumber(n) - 1 do p[i] = v end
  return 0
end
-- a driver failure: code and message in e (a cute_err[1] or nil)
local function set_err(e, code, msg)
  if e ~= nil then
    e[0].code = code
    ffi.copy(e[0].msg, msg:sub(1, 1000))
  end
  return code
end
local function copy(dst, src, bytes) ffi.copy(addr(dst), addr(src), bytes); return 0 end

local event_time = {}
local function key(h) return tonumber(ffi.cast("uintptr_t", h)) end
-- what cute.device(0) reports on the CPU target (the limits the engine keeps:
-- 1024 threads a block; shared memory is host memory)
local device_info = {
  name = "cuteluajit CPU target (IR interpreter)", ordinal = 0, cc_major = 9, cc_minor = 0, sm_count = 2,
  warp_size = 32, max_threads_per_block = 1024, max_block_dim = { 1024, 1024, 64 },
  max_grid_dim = { 2147483647, 65535, 65535 }, max_threads_per_sm = 1024, max_blocks_per_sm = 1,
  regs_per_block = 65536, regs_per_sm = 65536, smem_per_block = 49152, smem_per_block_optin = 232448,
  smem_per_sm = 233472, smem_reserved_per_block = 0, const_mem = 65536, l2_size = 0, clock_khz = 0,
  mem_clock_khz = 0, mem_bus_width = 0, cluster_launch = 1, integrated = 1, pci_bus_id = 0, pci_device_id = 0,
  total_mem = 0,
}

-- the arch kernels are traced for on the CPU target (compile.device_arch):
-- the newest, so that every kernel traces and the engine refuses, at the
-- launch, only the instructions it cannot run (docs/CPU_TARGET.md)
M.arch = "sm_90a"

-- the host's driver: memory, copies, streams, events, the launch
local driver = {
  available = function() return true end,
  -- host memory: LuaJIT-owned bytes, 256-byte aligned, held by `owned` until freed
  cute_cuda_malloc = function(cell, bytes, e)
    local ok, buf = pcall(ffi.new, "uint8_t[?]", tonumber(bytes) + 256)
    if not ok then
      return set_err(e, C.CUTE_E_NOMEM, ("cute (cpu target): out of host memory (%d bytes)"):format(tonumber(bytes)))
    end
    local a = ffi.cast("uint64_t", ffi.cast("uintptr_t", buf))
    a = a + (256 - a % 256) % 256
    -- the engine's bounds checks know every allocation (cpu_check.c)
    if C.cute_cpu_mem_add(a, bytes, nil, e) ~= 0 then return e ~= nil and e[0].code or C.CUTE_E_NOMEM end
    owned[tonumber(a)] = { buf, bytes }
    live.bytes, live.count = live.bytes + tonumber(bytes), live.count + 1
    cell[0] = a
    return 0
  end,
  cute_cuda_free = function(p)
    local k = tonumber(ffi.cast("uint64_t", p))
    local o = owned[k]
    if o then
      C.cute_cpu_mem_remove(p, o[2]); owned[k] = nil
      live.bytes, live.count = live.bytes - tonumber(o[2]), live.count - 1
    end
    return 0
  end,
  cute_cuda_memset_d8 = function(p, v, n) C.memset(addr(p), v, n); return 0 end,
  cute_cuda_memset_d16 = function(p, v, n) return fill_n(p, v, n, 2) end,
  cute_cuda_memset_d32 = function(p, v, n) return fill_n(p, v, n, 4) end,
  cute_cuda_memcpy_htod = copy, cute_cuda_memcpy_dtoh = copy, cute_cuda_memcpy_dtod = copy,
  cute_cuda_memcpy_htod_async = copy, cute_cuda_memcpy_dtoh_async = copy, cute_cuda_memcpy_dtod_async = copy,
  cute_cuda_stream_create = handle, cute_cuda_stream_destroy = ok, cute_cuda_stream_synchronize = ok,
  cute_cuda_stream_query = function(_, done) done[0] = 1; return 0 end,
  cute_cuda_stream_wait_event = ok,
  cute_cuda_event_create = handle, cute_cuda_event_synchronize = ok,
  cute_cuda_event_destroy = function(h) event_time[key(h)] = nil; return 0 end,
  cute_cuda_event_query = function(_, done) done[0] = 1; return 0 end,
  -- launches run when they are made: an event's time is when it is recorded
  cute_cuda_event_record = function(h) event_time[key(h)] = C.cute_cuda_now_us(); return 0 end,
  cute_cuda_event_elapsed_ms = function(h0, h1, ms, e)
    local t0, t1 = event_time[key(h0)], event_time[key(h1)]
    if not t0 or not t1 then return set_err(e, C.CUTE_E_STATE, "cute (cpu target): elapsed_ms of an event never recorded") end
    ms[0] = (t1 - t0) / 1e3
    return 0
  end,
  cute_cuda_device_props = function(i, p, e)
    if i ~= 0 then return set_err(e, C.CUTE_E_ARG, ("cute (cpu target): device %d does not exist (the CPU target has device 0)"):format(i)) end
    ffi.fill(p, ffi.sizeof(p))
    local f = device_info
    ffi.copy(p.name, f.name)
    for k, v in pairs(f) do if k ~= "name" and k ~= "max_block_dim" and k ~= "max_grid_dim" then p[k] = v end end
    for d = 0, 2 do p.max_block_dim[d] = f.max_block_dim[d + 1]; p.max_grid_dim[d] = f.max_grid_dim[d + 1] end
    return 0
  end,
  cute_cuda_synchronize = ok,
  cute_cuda_get_device = function(out) out[0] = 0; return 0 end,
  cute_cuda_set_device = function(i, e)
    if i == 0 then return 0 end
    return set_err(e, C.CUTE_E_ARG, ("cute (cpu target): device %d does not exist (the CPU target has device 0)"):format(i))
  end,
  cute_cuda_device_count = function(out) out[0] = 1; return 0 end,
  cute_cuda_pointer_device = function(_, out) out[0] = 0; return 0 end,
  cute_cuda_func_set_max_dynamic_smem = ok,
  cute_cuda_launch = function(fn, gx, gy, gz, bx, by, bz, smem, stream, params, e)
    local st = C.cute_cpu_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, e)
    local n = ffi.new("size_t[1]")
    local out = C.cute_cpu_take_output(fn, n)
    if out ~= nil then M.write(ffi.string(out, n[0])) end
    return st
  end,
}
-- clusters: the CTAs of one cluster run together (docs/CPU_TARGET.md, "Hopper (sm_90)")
driver.cute_cuda_launch_cluster = function(fn, gx, gy, gz, bx, by, bz, cx, cy, cz, smem, stream, params, e)
  local st = C.cute_cpu_launch_cluster(fn, gx, gy, gz, bx, by, bz, cx, cy, cz, smem, stream, params, e)
  local n = ffi.new("size_t[1]")
  local out = C.cute_cpu_take_output(fn, n)
  if out ~= nil then M.write(ffi.string(out, n[0])) end
  return st
end
-- TMA tensor maps: the engine's own 128-byte record (the GPU's is opaque)
driver.cute_tensor_map_encode_tiled = function(...) return C.cute_cpu_tensor_map_encode_tiled(...) end
driver.cute_tensor_map_encode_im2col = function(...) return C.cute_cpu_tensor_map_encode_im2col(...) end
M.driver = driver
-- the host "device" memory still allocated: bytes, allocations (the CPU target's
-- counterpart of cuMemGetInfo for leak checks: bench/soak.lua, docs/SOAK.md)
function M.live() return live.bytes, live.count end

-- Host memory a kernel may access on the CPU target besides its tensors:
-- [ptr, ptr + bytes) stays legitimate for the bounds checks until the
-- returned handle is collected or handle:release() is called.
local Reg = {}
Reg.__index = Reg
function Reg:release()
  if self.cell[0] ~= 0 then C.cute_cpu_mem_remove(self.cell[0], self.bytes); self.cell[0] = 0 end
end
function M.register(ptr, bytes, what)
  local p = ffi.cast("uint64_t", ffi.cast("uintptr_t", ptr))
  if type(bytes) ~= "number" or bytes < 0 or bytes % 1 ~= 0 then
    cf.fail(("cute.target_cpu.register: bytes must be a non-negative integer, got %s"):format(tostring(bytes)))
  end
  cf.check(C.cute_cpu_mem_add(p, bytes, what, cf.err))
  local cell = ffi.gc(ffi.new("uint64_t[1]", p), function(c) if c[0] ~= 0 then C.cute_cpu_mem_remove(c[0], bytes) end end)
  return setmetatable({ cell = cell, bytes = bytes }, Reg)
end

-- The name of an allocation in bounds errors ("float32 tensor (1024)": memory.lua).
function M.describe(p, bytes, what)
  if C.cute_cpu_mem_add(p, bytes, what, nil) == 0 then C.cute_cpu_mem_remove(p, bytes) end
end

-- The checking mode's flags (cute.kernel option check, CUTE_CHECK): true or
-- "all", false, or names joined by commas: race, sync, init.
local check_bits = { race = 1, sync = 2, init = 4, all = 7 }
function M.check_flags(v, what)
  if v == true then return 7 elseif v == false or v == nil or v == "" or v == "0" then return 0 end
  if v == "1" then return 7 end
  local bits = type(v) == "string" and 0 or nil
  if bits then
    for name in v:gmatch("[^,%s]+") do
      if not check_bits[name] then bits = nil; break end
      bits = bit.bor(bits, check_bits[name])
    end
  end
  if not bits then
    cf.fail(("%s must be true, false or names joined by commas (race, sync, init, all), got %s"):format(what,
      tostring(v)))
  end
  return bits
end

-- Is the host driver the one in use?  (A test that swaps in a stub driver,
-- or restores the GPU's, takes the process off the CPU target.)
local function in_use() return rt._driver.cute_cuda_launch == driver.cute_cuda_launch end
setmetatable(M, { __index = function(_, k) if k == "active" then return in_use() end end })

-- Put the process on the CPU target (why: nil when chosen explicitly, else
-- the reason it was chosen, announced once on stderr).
local announced = false
function M.install(why)
  if M.active then return end
  if why and not announced then
    announced = true
    io.stderr:write(("cute: no GPU (%s): kernels run on the CPU target (an interpreter of the kernel IR; " ..
      "CUTE_TARGET=cpu chooses it, CUTE_TARGET=gpu turns this off)\n"):format(tostring(why)))
  end
  require("cute.kernel")._use_driver(driver)
end

-- Back to the GPU driver (tests).
function M.uninstall()
  if not M.active then return end
  -- host tensors no longer reachable are freed now, through the host driver
  -- (a finalizer that runs later goes through the GPU driver's context switch)
  collectgarbage(); collectgarbage()
  require("cute.kernel")._use_driver(nil)
end

-- At load (cute/init.lua): CUTE_TARGET=cpu, or no GPU and CUTE_TARGET unset.
function M.startup()
  local env = os.getenv("CUTE_TARGET")
  if env == "cpu" then M.install(nil)
  elseif env ~= nil and env ~= "" and env ~= "gpu" then
    cf.fail(("cute: CUTE_TARGET=%s: expected cpu or gpu"):format(env))
  elseif env == nil or env == "" then
    M.auto = true -- (chosen at the first allocation or launch without a GPU: M.need)
  end
end

-- Before an allocation or a launch: the automatic choice when there is no GPU.
function M.need()
  if M.active or not M.auto or rt._driver ~= C then return end -- (a stub driver in use: left alone)
  local yes, why = rt.available()
  if not yes then
    M.auto = false -- (once: a test that later restores the GPU driver keeps it)
    M.install(why or "no CUDA driver")
  end
end

-- cute.kernel's option target: "cpu" or "gpu"
function M.check_target(v)
  if v ~= "cpu" and v ~= "gpu" then
    cf.fail(("cute.kernel: option target must be \"cpu\" or \"gpu\", got %s"):format(tostring(v)))
  end
end

-- Is kernel k a CPU-target kernel in a process that uses a GPU (or a stub
-- driver)?  Its launches run on host copies of its tensors
-- (lua/cute/target_cpu_mirror.lua).
function M.mirrored(k)
  if M.active or not (k.opts and k.opts.target == "cpu") then return false end
  return rt._driver ~= C or (rt.available())
end

-- Does kernel k run on the CPU target?  (true; "mirror" for a target = "cpu"
-- kernel in a process that uses the GPU: M.mirrored)
function M.uses_cpu(k)
  local want = k.opts and k.opts.target
  if M.mirrored(k) then return "mirror" end
  if want == "cpu" and not M.active then M.install(nil) end
  if k.opts and k.opts.check and not M.active then
    cf.fail(("cute.kernel %s: option check needs the CPU target (target = \"cpu\", or CUTE_TARGET=cpu); on a GPU " ..
      "use compute-sanitizer"):format(k.name))
  end
  if M.active and want == "gpu" then
    cf.fail(("cute.kernel %s: target = \"gpu\", but the process is on the CPU target (%s)"):format(k.name,
      os.getenv("CUTE_TARGET") == "cpu" and "CUTE_TARGET=cpu" or "no GPU"))
  end
  return M.active
end

-- The launch entry of kernel k for args (launch.lua's build on the CPU
-- target): traced as for the GPU, the IR prepared by the engine, the
-- parameters written by the same writer as a GPU launch's.
function M.build(k, args, nargs, make_writer, mirror)
  local ir, plan = k:trace(unpack(args, 1, nargs))
  local out = ffi.new("cute_cpu_prog *[1]")
  if C.cute_cpu_prog_new(ir, k.name, out, cf.err) ~= 0 then cf.fail(ffi.string(cf.err[0].msg)) end
  local prog = ffi.gc(out[0], C.cute_cpu_prog_free)
  local opt, what = k.opts and k.opts.check, "cute.kernel: option check"
  if opt == nil then opt, what = os.getenv("CUTE_CHECK"), "CUTE_CHECK" end
  C.cute_cpu_prog_set_check(prog, M.check_flags(opt, what))
  local slots, params, ptrs, fill = make_writer(plan, nargs, not mirror and 0 or nil, k.name, k.param_names)
  k.last_build = { image = "cpu" }
  return { fn = prog, prog = prog, ir = ir, params = params, slots = slots, plan = plan, ptrs = ptrs, fill = fill,
    n = #plan, max_dyn_smem = 2 ^ 31, dyn_smem = C.cute_cpu_prog_dyn_smem(prog), block_check = plan.block_check,
    arch = "cpu", mirror = mirror or nil }
end

return M
