-- cute.target_cpu_mirror: cute.kernel(f, {target = "cpu"}) in a process that
-- uses the GPU (docs/CPU_TARGET.md, "A CPU-target kernel in a GPU process").
--
-- The kernel is traced as usual and run by the CPU target's engine, on host
-- copies of its tensors: at each launch the device's work is waited for, every
-- distinct allocation a pointer parameter reaches is copied to the host
-- (registered with the engine's bounds checks under the tensor's name), the
-- engine runs the launch (with the checking mode when the kernel asks for it),
-- and the copies go back to the device.  So a kernel can be checked on the very
-- tensors of a GPU session: cute.kernel(f, {target = "cpu", check = true}).
-- Launches go through launch.lua's slow path (the fast path launches on the GPU);
-- the entries live in the kernel's own "cpu mirror" cache.
local ffi = require("ffi")
local cf = require("cute.ffi")
local rt = require("cute.runtime")
local C = cf.C

local M = {}

-- the bytes tensor t's elements reach from t.ptr (non-negative strides)
local function span_bytes(t)
  local n, shape, st = 1, t.shape, t.strides
  if not shape or not st then return t._bytes end
  for i = 1, #shape do
    if shape[i] == 0 then return 0 end
    if st[i] < 0 then return nil end
    n = n + (shape[i] - 1) * st[i]
  end
  return n * t.dtype.size
end

local function u64(x) return ffi.cast("uint64_t", x) end

-- host copies of the device memory the launch's pointer parameters reach: the
-- slots are rewritten to point into them; returns the list of copies
local function mirror_in(k, e, args)
  local d, err = rt._driver, ffi.new("cute_err[1]")
  local copies, by_base = {}, {}
  for j, p in ipairs(e.plan) do
    if p.kind == "bytes" then
      cf.fail(("cute (cpu target): kernel %s: target = \"cpu\" in a GPU process: parameter %d is a TMA descriptor " ..
        "the GPU's driver encoded (opaque to the CPU target): run the process with CUTE_TARGET=cpu"):format(k.name, j))
    elseif p.kind == "ptr" then
      local t = args[p.arg]
      if type(t) ~= "table" or t.ptr == nil then
        cf.fail(("cute (cpu target): kernel %s: parameter %d is not a tensor"):format(k.name, j))
      end
      local base, bytes = u64(t.ptr), span_bytes(t)
      if not bytes then
        cf.fail(("cute (cpu target): kernel %s: argument %d has a negative stride: not supported by target = " ..
          "\"cpu\" in a GPU process"):format(k.name, p.arg))
      end
      local key = tonumber(base)
      local m = by_base[key]
      if m and m.bytes < bytes then m = nil end -- (a longer view of the same base: its own copy)
      if not m then
        local buf = ffi.new("uint8_t[?]", bytes + 256)
        local host = u64(ffi.cast("uintptr_t", buf))
        host = host + (256 - host % 256) % 256
        if bytes > 0 then cf.check(d.cute_cuda_memcpy_dtoh(ffi.cast("void *", host), base, bytes, err)) end
        local name = ("%s tensor {%s} (argument %d, a host copy)"):format(t.dtype and t.dtype.name or "?",
          table.concat(t.shape or {}, ","), p.arg)
        m = { buf = buf, host = host, base = base, bytes = bytes,
          reg = require("cute.target_cpu").register(host, bytes, name) }
        by_base[key] = m
        copies[#copies + 1] = m
      end
      e.slots[j - 1] = m.host + (u64(e.slots[j - 1]) - base)
    end
  end
  return copies
end

local function mirror_out(copies, back)
  local d, err = rt._driver, ffi.new("cute_err[1]")
  local first
  -- (copies of one base overlap: the longest goes back last)
  table.sort(copies, function(a, b) return a.bytes < b.bytes end)
  for _, m in ipairs(copies) do
    if back and m.bytes > 0 and not first then
      if d.cute_cuda_memcpy_htod(m.base, ffi.cast("void *", m.host), m.bytes, err) ~= 0 then
        first = ffi.string(err[0].msg)
      end
    end
    m.reg:release()
  end
  if first then cf.fail(first) end
end

-- launch.lua's do_launch for a mirrored entry (e.fill has written the slots)
function M.launch(k, e, l, args, smem)
  rt.synchronize() -- (the GPU's work on these tensors first)
  local copies = mirror_in(k, e, args)
  local err = ffi.new("cute_err[1]")
  local st = C.cute_cpu_launch_cluster(e.fn, l.gx, l.gy, l.gz, l.bx, l.by, l.bz, l.cx or 1, l.cy or 1, l.cz or 1,
    smem, nil, e.params, err)
  local n = ffi.new("size_t[1]")
  local out = C.cute_cpu_take_output(e.fn, n)
  if out ~= nil then require("cute.target_cpu").write(ffi.string(out, n[0])) end
  if st ~= 0 then
    local msg = ffi.string(err[0].msg)
    mirror_out(copies, false) -- (a failed launch leaves the device's tensors as they were)
    cf.fail(msg)
  end
  mirror_out(copies, true)
end

-- the kernel's cache of mirrored entries (launch.lua's root, apart from the
-- device caches that the fast path reads)
function M.root(k)
  local r = rawget(k, "_cpu_mirror_root")
  if not r then r = {}; k._cpu_mirror_root = r end
  return r
end

return M
