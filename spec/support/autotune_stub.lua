-- A stand-in GPU for cute.autotune's benchmark stage without one (used by
-- spec/autotune_spec.lua and spec/data/autotune_child.lua): the driver's
-- loads and launches are recorded (K._use_driver, as spec/launch_spec.lua
-- does), and the runtime's device, events and synchronize are replaced so
-- that each launch "takes" cost(block size) milliseconds.
local ffi = require("ffi")
local K = require("cute.kernel")
local rt = require("cute.runtime")

local M = { launches = {}, loads = 0 }
local next_handle = 4096
local driver = {
  available = function() return true end,
  cute_cuda_module_load = function(_, _, _, out)
    next_handle = next_handle + 16
    out[0] = ffi.cast("void*", next_handle)
    M.loads = M.loads + 1
    return 0
  end,
  cute_cuda_module_get_function = function(mod, _, out) out[0] = ffi.cast("void*", ffi.cast("uintptr_t", mod) + 1); return 0 end,
  cute_cuda_module_unload = function() return 0 end,
  cute_cuda_launch = function(fn, gx, gy, gz, bx, by, bz)
    M.launches[#M.launches + 1] = { fn = tonumber(ffi.cast("uintptr_t", fn)), block = bx * by * bz, grid = gx * gy * gz }
    if bx * by * bz == 512 and os.getenv("CUTE_AUTOTUNE_WORKER") and os.getenv("CUTE_STUB_DIE") == os.getenv("CUDA_VISIBLE_DEVICES") then
      io.stderr:write("stub: the worker of device ", os.getenv("CUDA_VISIBLE_DEVICES"), " dies\n")
      os.exit(3)
    end
    if M.log then -- (CUTE_STUB_LOG: every launch of every process, for multi-device specs)
      local f = io.open(M.log, "a")
      f:write(("%s %s %d\n"):format(os.getenv("CUTE_AUTOTUNE_WORKER") and "worker" or "parent",
        os.getenv("CUDA_VISIBLE_DEVICES") or "-", bx * by * bz))
      f:close()
    end
    return 0
  end,
  cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
  cute_cuda_get_device = function(out) out[0] = 0; return 0 end,
  cute_cuda_set_device = function() return 0 end,
}

-- milliseconds a launch of this block size "takes": 128 threads is fastest
M.cost = function(block) return 1 + math.abs(block - 128) / 64 end

-- CUTE_STUB_DEVICES: how many stand-in GPUs (default 1); CUTE_STUB_MIXED:
-- device 1 is another model; CUTE_STUB_DIE=d: a worker of cute.autotune on
-- device d exits (status 3) at its first launch of 512 threads
local saved = {}
local replaced = {
  available = function() return true end,
  device_count = function() return tonumber(os.getenv("CUTE_STUB_DEVICES") or "1") end,
  device = function(i)
    local name = (i == 1 and os.getenv("CUTE_STUB_MIXED")) and "other stub GPU" or "stub GPU"
    return { name = name, cc = { 9, 0, major = 9, minor = 0 }, smem_per_block_optin = 232448,
    max_threads_per_block = 1024, regs_per_block = 65536 } end,
  synchronize = function() end,
  event = function() return { record = function(self) self.n = #M.launches end } end,
  elapsed_ms = function(e0, e1)
    local ms = 0
    for i = e0.n + 1, e1.n do ms = ms + M.cost(M.launches[i].block) end
    return ms
  end,
}

function M.install()
  K._use_driver(driver)
  for k, f in pairs(replaced) do saved[k] = rt[k]; rt[k] = f end
  M.launches, M.loads = {}, 0
  M.log = os.getenv("CUTE_STUB_LOG")
end
function M.remove()
  for k in pairs(replaced) do rt[k] = saved[k] end
  K._use_driver(nil)
end
return M
