-- cute.launch: loading a kernel's binaries and launching them.
--
--   local l = k:launch{grid = {gx, gy, gz}, block = {bx, by, bz}, smem = bytes, stream = s}
--   l(A, B, C)                    -- or k:launch{...}(A, B, C), or k(cfg, A, B, C)
--
-- Every k:launch(cfg) returns a launcher of its own: the configuration is
-- checked and copied when it is made, so later changes to cfg, or other
-- launchers of the same kernel, do not change it.  A launch looks its
-- arguments up in the kernel's cache for the current device (the key:
-- lua/cute/specialise.lua); a miss traces, compiles and loads a binary for
-- them (Kernel:_build) through runtime.lua's Module, which unloads it when the
-- kernel and its entries are collected.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local rt = require("cute.runtime")
local sp = require("cute.specialise")
local tr = require("cute.trace")
local fault = require("cute.fault") -- (the ring of recent launches, the fault record: docs/FAULTS.md)
local T = tr.T
pcall(ffi.cdef, "size_t strlen(const char *s);")

local M = {}
local K, Kernel -- the kernel module and the Kernel metatable (M.init)

local cu_err = cf.err
local okdim = rt.launch_dim_ok
local void_pp = ffi.typeof("void*[?]")
local u64_arr = ffi.typeof("uint64_t[?]")
local ctx = rt.context -- { device = ordinal or false }: the cache in use
local arg_key, ENTRY = sp.arg_key, sp.ENTRY

-- the C type a scalar parameter is written as (f16 / bf16: their bits)
local dt = require("cute.dtype")
local scalar_ctype = setmetatable({}, { __index = function(c, t)
  local s = dt.param_ctype(t); c[t] = s; return s end })
-- how the writer converts a scalar's value (f16 / bf16: round to nearest even;
-- tf32 / fp8: as the device's cvt)
local scalar_conv = { [T.F16] = "f16", [T.BF16] = "bf16" }
local conv_fns = { f16 = dt.float_to_half, bf16 = dt.float_to_bf16 }
for t, info in pairs(dt.scalars) do
  if info.xfloat then scalar_conv[t], conv_fns[info.ir] = info.ir, dt["float_to_" .. info.ir] end
end

---------------------------------------------------------------------------
-- the parameter plan and its writer
---------------------------------------------------------------------------
-- a launch whose run-time stride breaks the divisibility its kernel was
-- compiled for (cute.dynamic(t, {divisibility = n})): an error, never a launch
local function bad_div(t, arg, name, d, n)
  local st = t.strides
  cf.fail(("cute.launch: argument %d (%s): cute.dynamic(t, {divisibility = %d}) but stride %d of the tensor " ..
    "of shape (%s) and strides (%s) is %s, not a multiple of %d"):format(arg, name, n, d - 1,
    table.concat(t.shape, ","), table.concat(st, ","), tostring(st[d]), n))
end

-- A tensor argument on a device other than the launch's (dev): an error,
-- unless cute.enable_peer_access(t.device) was called on dev (the kernel
-- then gets the peer pointer).  (t.device nil: a tensor the caller described,
-- not checked.)
local function other_device(t, arg, name, dev, kname)
  local td = t.device
  if td == nil or td == dev then return end
  local set = rt.peer_enabled[dev]
  if set and set[td] then return end
  cf.fail(("kernel %s: argument %d (%s) is a tensor on device %d, the launch is on device %d " ..
    "(cute.set_device(%d) to launch there, or cute.enable_peer_access(%d) to address it from device %d)")
    :format(kname, arg, name, td, dev, td, td, dev))
end

-- plan (from Kernel:trace): per kernel parameter { kind = "ptr" | "scalar" |
-- "dim", arg = i, ... }.  Each parameter has a 64-bit slot; params[j] points
-- at slot j.  The writer is straight-line code generated once per signature:
-- fill(slots, ptrs, a1, ..., an).
-- A "dim" stride with div = n (cute.dynamic's divisibility) is checked first.
-- dev (the device the entry is loaded on; nil: no check): a tensor whose
-- t.device differs goes to other_device (one comparison when it does not);
-- kname, pnames: the kernel's and its parameters' names for that error.
local function make_writer(plan, nargs, dev, kname, pnames)
  local n = #plan
  local slots = u64_arr(math.max(n, 1))
  local params = void_pp(math.max(n, 1))
  local ptrs, lines = {}, {}
  for j = 1, n do
    params[j - 1] = slots + (j - 1)
    local p = plan[j]
    if p.kind == "ptr" then
      lines[j] = ("slots[%d] = a%d.ptr"):format(j - 1, p.arg)
      if dev then
        lines[j] = ("do local d = a%d.device; if d ~= %d and d ~= nil then other_device(a%d, %d, %q, %d, %q) end end\n%s")
          :format(p.arg, dev, p.arg, p.arg, pnames and pnames[p.arg] or ("arg" .. p.arg), dev, kname or "?", lines[j])
      end
    elseif p.kind == "bytes" then -- a by-value parameter (a TMA atom's CUtensorMap): points at its bytes
      ptrs[j] = params
      lines[j] = ("if not a%d.encoded then unencoded(%d, %q) end; ptrs[%d][%d] = a%d.desc"):format(p.arg, p.arg,
        p.name or "", j, j - 1, p.arg)
    elseif p.kind == "scalar" then
      ptrs[j] = ffi.cast(scalar_ctype[p.t], slots + (j - 1))
      local conv = scalar_conv[p.t]
      lines[j] = conv and ("ptrs[%d][0] = %s(a%d.value)"):format(j, conv, p.arg)
        or ("ptrs[%d][0] = a%d.value"):format(j, p.arg)
    else
      ptrs[j] = ffi.cast(p.bits == 64 and "int64_t*" or "int32_t*", slots + (j - 1))
      lines[j] = ("ptrs[%d][0] = a%d.%s[%d]"):format(j, p.arg, p.field, p.d)
      if p.div then -- cute.dynamic(t, {divisibility = n}): the kernel assumed it
        lines[j] = ("if a%d.%s[%d] %% %d ~= 0 then bad_div(a%d, %d, %q, %d, %d) end\n%s"):format(p.arg, p.field,
          p.d, p.div, p.arg, p.arg, p.name or "", p.d, p.div, lines[j])
      end
    end
  end
  local anames = {}
  for i = 1, math.max(nargs, 1) do anames[i] = "a" .. i end
  local locals = {} -- the conversions as upvalues: local f16 = conv.f16 ...
  for name in pairs(conv_fns) do locals[#locals + 1] = ("local %s = conv.%s"):format(name, name) end
  local fill = assert(loadstring(("local conv, bad_div, unencoded, other_device = ...\n%s\nreturn function(slots, ptrs, %s)\n%s\nend"):format(
    table.concat(locals, "\n"), table.concat(anames, ", "), table.concat(lines, "\n")), "=[cute launch fill]"))(
    conv_fns, bad_div, function(...) return require("cute.tma").unencoded(...) end, other_device)
  return slots, params, ptrs, fill
end
M.make_writer = make_writer

---------------------------------------------------------------------------
-- building an entry: trace, compile, load
---------------------------------------------------------------------------
-- The bytes a compiled kernel's dynamic shared tensors need (their regions' total).
function M.compiled_dyn_smem(cc)
  local info = ffi.new("cute_kernel_info")
  if C.cute_compiled_info(cc, nil, info) ~= 0 then return 0 end
  return info.smem_dynamic
end

local function available()
  local d = rt._driver
  if d ~= C and d.available then return d.available() end
  return rt.available()
end

-- Load a compiled kernel for the GPU: the entry { fn, params, slots, ptrs,
-- fill, plan, module, func, cc, dyn_smem, max_dyn_smem } of one signature.
-- (cc: a compile of the IR whose parameter plan is plan; t0..t2: when the
-- trace began, ended and the compile ended, for k.last_build)
local function load_entry(self, cc, plan, nargs, t0, t1, t2)
  local image, size, is_ptx
  if C.cute_compiled_has_cubin(cc) ~= 0 then
    local sz = ffi.new("size_t[1]")
    image = C.cute_compiled_cubin(cc, sz); size = sz[0]; is_ptx = 0
  else
    image = C.cute_compiled_ptx(cc); size = C.strlen(image); is_ptx = 1
  end
  local mod = rt._new_module(image, size, is_ptx, nil, 0)
  if not mod then cf.fail_err() end
  local ok2, func = pcall(mod.get_function, mod, self.name)
  if not ok2 then cf.fail(("cute.kernel %s: %s"):format(self.name, tostring(func))) end
  fault.attach(mod, plan) -- (a kernel with cute.assert_: its fault record)
  local t3 = C.cute_cuda_now_us()
  local ct = ffi.new("cute_compile_times")
  C.cute_compiled_times(cc, ct)
  -- where the first call's time went (bench/first_call.lua prints it)
  self.last_build = { trace_us = t1 - t0, compile_us = t2 - t1, load_us = t3 - t2,
    llvm_build_us = ct.build_us, opt_us = ct.opt_us, emit_us = ct.emit_us, ptxas_us = ct.ptxas_us,
    image = is_ptx == 1 and "ptx" or "cubin" }
  local dev = rt.current_device()
  local slots, params, ptrs, fill = make_writer(plan, nargs, dev >= 0 and dev or nil, self.name, self.param_names)
  return { fn = func.handle, func = func, module = mod, params = params, slots = slots, plan = plan,
    ptrs = ptrs, fill = fill, n = #plan, cc = cc, max_dyn_smem = 48 * 1024, dyn_smem = M.compiled_dyn_smem(cc),
    block_check = plan.block_check }
end
M.load_entry = load_entry

local function build(self, args, nargs)
  local cpu = require("cute.target_cpu") -- the CPU target: the IR goes to its interpreter
  local on_cpu = cpu.uses_cpu(self)
  if on_cpu then return cpu.build(self, args, nargs, make_writer, on_cpu == "mirror") end
  local ok, why = available()
  if not ok then
    cf.fail(("cute.kernel %s: cannot launch without a GPU (%s); k:compile(args) and k:ir(args) work " ..
      "without one"):format(self.name, tostring(why)))
  end
  local t0 = C.cute_cuda_now_us()
  local ir, plan = self:trace(unpack(args, 1, nargs))
  local t1 = C.cute_cuda_now_us()
  -- the kernel's use_ptxas option decides (K.default_cubin: a process-wide override)
  local cc, arch = K.compile_ir(self, ir, K.default_cubin and C.cute_ptxas_path() ~= nil)
  local e = load_entry(self, cc, plan, nargs, t0, t1, C.cute_cuda_now_us())
  e.arch = arch
  return e
end

-- The target the current device compiles for (the kernel's options for it).
local function device_target(self)
  local o = rawget(self, "options") or self.options
  return o and o:for_current_device("cute.kernel " .. self.name).values.arch or false
end

-- Compiled once per arch, loaded per device: the entry for args that another
-- device of the same target already compiled (its image is loaded on the
-- current device by the caller), or nil.
local function sibling_entry(self, args, nargs, dev)
  local target
  for d, root in pairs(self.caches) do
    if d ~= dev then
      local e = sp.find(root, args, nargs)
      if e and e.arch ~= nil then
        if target == nil then target = device_target(self) end
        if e.arch == target then return e end
      end
    end
  end
end

---------------------------------------------------------------------------
-- the cache: per device, then sp's tree (one level per argument, then a group)
---------------------------------------------------------------------------
-- The text that stands for the kernel's compile options: k.options_key (the
-- compile-option table's key text, set by cute.kernel) and the options table
-- by value.  Options are fixed when the kernel is made; a change found at a
-- miss is an error (never a binary of other options beside the cached ones).
local function options_key(self)
  return tostring(rawget(self, "options_key")) .. "|" .. (sp.value_key(self.opts or {}) or "?")
end

-- The cache of the current device (made at its first miss).
local function device_root(self)
  local dev = rt.current_device()
  local caches = rawget(self, "caches")
  if not caches then
    caches = {}
    self.caches = caches
    fault.kernels[self] = true -- (a reset after a fault puts its device's cache aside)
    self._options_seen = options_key(self)
  elseif options_key(self) ~= self._options_seen then
    cf.fail(("cute.kernel %s: its options changed after cute.kernel (%s, now %s); options are fixed per kernel: " ..
      "make another cute.kernel with the new ones"):format(self.name, self._options_seen, options_key(self)))
  end
  local root = caches[dev]
  if not root then root = {}; caches[dev] = root end
  return root
end

-- The entry for one call (the miss path of a launch, and k:entry): a hit, or
-- the call is checked (count, kinds, device addresses) and the kernel traced,
-- compiled and loaded for its signature and overlap pattern.
local function get_entry(self, args, nargs)
  local cpu = require("cute.target_cpu")
  cpu.need() -- (no GPU: the CPU target, chosen before the device's cache is)
  -- (a target = "cpu" kernel in a GPU process: its own cache, which the GPU fast path does not read)
  local root = cpu.mirrored(self) and require("cute.target_cpu_mirror").root(self) or device_root(self)
  local e = sp.find(root, args, nargs)
  if e then return e end
  sp.check_args(self, args, nargs, true)
  local copy = {}
  for i = 1, nargs do copy[i] = args[i] end
  local g, mask = sp.group(root, copy, nargs)
  self._alias_mask = mask
  local sib = sibling_entry(self, copy, nargs, ctx.device)
  if sib then
    local t = C.cute_cuda_now_us()
    e = load_entry(self, sib.cc, sib.plan, nargs, t, t, t)
    e.arch = sib.arch
  else
    e = self:_build(copy, nargs)
  end
  g[mask] = e
  self.specialisations = (rawget(self, "specialisations") or 0) + 1
  return e
end
M.get_entry = get_entry

---------------------------------------------------------------------------
-- launchers
---------------------------------------------------------------------------
local Launcher = {}
M.Launcher = Launcher

-- The bytes to launch with: l.smem, or the kernel's need when omitted; less
-- than the need is an error at the user's line.  (cfg: a launcher or a table
-- with .smem)
function M.launch_smem(self, entry, cfg)
  local smem = cfg.smem
  if smem == nil then return entry.dyn_smem end
  if type(smem) ~= "number" or smem < 0 or smem % 1 ~= 0 then
    cf.fail(("cute.kernel %s launch: smem must be a number of bytes, got %s"):format(self.name, tostring(smem)))
  end
  if smem < entry.dyn_smem then
    cf.fail(("cute.kernel %s launch: smem = %d bytes, but its dynamic shared tensors need %d bytes (omit smem " ..
      "to launch with exactly that)"):format(self.name, smem, entry.dyn_smem))
  end
  return smem
end

-- A cute.stream of another device than the launch's: an error (s.device nil:
-- the default stream, any device's).
local function other_stream(self, s)
  local dev = rt.current_device()
  if s.device == dev then return end
  cf.fail(("kernel %s: the stream is on device %d, the launch is on device %d (a stream launches work of its " ..
    "own device: cute.stream{device = %d}, or cute.set_device(%d))"):format(self.name, s.device, dev, dev, s.device))
end
M.other_stream = other_stream

local function fail_launch(self)
  cf.fail_err(("cute.kernel %s: launch failed"):format(self.name))
end

-- A launcher for cfg (checked here, at the user's k:launch line): its own
-- copy of the dimensions, smem, stream and cluster.
local function launch_what(self)
  local what = rawget(self, "_launch_what")
  if not what then
    what = "cute.kernel " .. self.name .. " launch"
    self._launch_what = what
  end
  return what
end
local function new_launcher(self, cfg)
  if type(cfg) ~= "table" or getmetatable(cfg) ~= nil or cfg.shape ~= nil then sp.check_cfg(self, cfg) end
  local gx, gy, gz, bx, by, bz = cfg.grid, 1, 1, cfg.block, 1, 1
  if not okdim(gx) then gx, gy, gz = rt.launch_dims(gx, "grid", launch_what(self), true) end
  if not okdim(bx) then bx, by, bz = rt.launch_dims(bx, "block", launch_what(self), true) end
  local smem = cfg.smem
  if smem ~= nil and (type(smem) ~= "number" or smem < 0 or smem % 1 ~= 0) then
    cf.fail(("%s: smem must be a number of bytes, got %s"):format(launch_what(self), tostring(smem)))
  end
  local stream, handle = cfg.stream, nil
  local ts = type(stream)
  if ts == "cdata" then stream, handle = nil, stream
  elseif ts ~= "nil" and ts ~= "table" then
    cf.fail(("%s: stream must be a cute.stream(), got %s"):format(launch_what(self), tostring(stream)))
  end
  local l = { k = self, gx = gx, gy = gy, gz = gz, bx = bx, by = by, bz = bz, smem = smem,
    stream = stream, stream_handle = handle }
  local cluster = cfg.cluster
  if cluster ~= nil then
    l.cx, l.cy, l.cz = rt.launch_dims(cluster, "cluster", launch_what(self), false)
  end
  return setmetatable(l, Launcher)
end
M.new_launcher = new_launcher

-- The slow path: args is a table holding the nargs arguments.
-- M.capture: when set (cute.autotune's compile stage), a launch that misses
-- the cache is handed to it instead: capture(kernel, launcher, args, nargs).
local function do_launch(self, l, args, nargs)
  if getmetatable(l) ~= Launcher then l = new_launcher(self, l) end -- (k(cfg, ...) passes its cfg)
  while nargs > 0 and type(args[nargs]) == "nil" do nargs = nargs - 1 end -- (a trailing nil is no argument)
  if M.capture then return M.capture(self, l, args, nargs) end
  for i = 1, nargs do -- (a tensor whose memory a reset after a fault freed: cute.fault)
    local a = args[i]
    if type(a) == "table" and rawget(a, "_lost") then cf.fail(rawget(a, "_lost")) end
  end
  local entry = get_entry(self, args, nargs)
  if not entry.site then entry.site = cf.where() end -- (where it was first launched: fault reports)
  local bc = entry.block_check -- {multiple =, min =, what =}: the kernel's warpgroup MMAs need whole warpgroups
  if bc then
    local t = l.bx * l.by * l.bz
    if t % bc.multiple ~= 0 or t < bc.min then
      cf.fail(("%s: a block of %d threads (%d x %d x %d); %s needs a multiple of %d threads, at least %d")
        :format(launch_what(self), t, l.bx, l.by, l.bz, bc.what, bc.multiple, bc.min))
    end
  end
  entry.fill(entry.slots, entry.ptrs, unpack(args, 1, nargs))
  local smem = M.launch_smem(self, entry, l) -- (dynamic shared memory: default and check)
  if entry.mirror then return require("cute.target_cpu_mirror").launch(self, entry, l, args, smem) end
  local drv = rt._driver
  if smem > entry.max_dyn_smem then
    cf.check(drv.cute_cuda_func_set_max_dynamic_smem(entry.fn, smem, cu_err))
    entry.max_dyn_smem = smem
  end
  local stream = l.stream_handle
  if l.stream then
    if l.stream.device ~= nil then other_stream(self, l.stream) end
    stream = l.stream.handle
  end
  local st
  if l.cx then
    st = drv.cute_cuda_launch_cluster(entry.fn, l.gx, l.gy, l.gz, l.bx, l.by, l.bz, l.cx, l.cy, l.cz, smem,
      stream, entry.params, cu_err)
  else
    st = drv.cute_cuda_launch(entry.fn, l.gx, l.gy, l.gz, l.bx, l.by, l.bz, smem, stream, entry.params, cu_err)
  end
  if st ~= 0 then fail_launch(self) end
  fault.record(self, entry, ctx.device, l.gx, l.gy, l.gz, l.bx, l.by, l.bz)
end

-- The hot path: for each arity a generated function looks the signature up
-- (the device's cache, one table level per argument, then the group's
-- generated overlap test of the tensor arguments), writes the parameters with
-- the entry's generated writer and launches with the configuration it is
-- passed as numbers (a launcher's own, or a cfg parsed at the call); no
-- loops, varargs or allocation, so LuaJIT compiles it into the caller's
-- trace.  Misses and unusual launches go to do_launch with l (a launcher, or
-- the cfg of k(cfg, ...)).
local fast_launchers = {}
local function make_fast_launcher(n)
  local an = {}
  for i = 1, n do an[i] = "a" .. i end
  local as = table.concat(an, ", ")
  local slow = ("return do_launch(self, l, {%s}, %d)"):format(as, n)
  local src = { "local arg_key, ENTRY, ctx, C, cu_err, do_launch, fail_launch, record = ...",
    ("return function(self, l, gx, gy, gz, bx, by, bz, smem, stream%s)"):format(n > 0 and (", " .. as) or ""),
    "  local node, nx = self.caches[ctx.device]",
    "  if not node then " .. slow .. " end" }
  for i = 1, n do
    src[#src + 1] = ("  nx = node[arg_key(a%d)]; if not nx then %s end; node = nx"):format(i, slow)
  end
  src[#src + 1] = ("  local g = node[ENTRY]; if not g then %s end"):format(slow)
  src[#src + 1] = ("  local m = g.mask; local e = g[m and m(%s) or 0]; if not e then %s end"):format(as, slow)
  src[#src + 1] = ("  local sm = smem or e.dyn_smem; if sm < e.dyn_smem or sm > e.max_dyn_smem then %s end")
    :format(slow)
  src[#src + 1] = ("  local bc = e.block_check; if bc then local t = bx * by * bz; " ..
    "if t %% bc.multiple ~= 0 or t < bc.min then %s end end"):format(slow)
  src[#src + 1] = ("  e.fill(e.slots, e.ptrs%s)"):format(n > 0 and (", " .. as) or "")
  src[#src + 1] = [[
  if C.cute_cuda_launch(e.fn, gx, gy, gz, bx, by, bz, sm, stream, e.params, cu_err) ~= 0 then
    fail_launch(self)
  end
  record(self, e, ctx.device, gx, gy, gz, bx, by, bz)
end]]
  local f = assert(loadstring(table.concat(src, "\n"), "=[cute launch " .. n .. "]"))(
    arg_key, ENTRY, ctx, rt._driver, cu_err, do_launch, fail_launch, fault.record)
  fast_launchers[n] = f
  return f
end
-- (kept separate from make_fast_launcher: a function that creates closures
-- cannot be compiled by LuaJIT's JIT, and this one is on the hot path)
local function fast_launcher(n) return fast_launchers[n] or make_fast_launcher(n) end

-- Tests and benchmarks: route the driver calls of loads and launches to a
-- stub (runtime.lua M._use_driver describes it); nil restores the driver.
function M._use_driver(d) rt._use_driver(d) end
rt._driver_listeners[#rt._driver_listeners + 1] = function()
  for n in pairs(fast_launchers) do fast_launchers[n] = nil end
end

-- number of arguments up to the last non-nil one (type(): no == on cdata)
local function nargs16(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
  if type(a16) ~= "nil" then return 16 elseif type(a15) ~= "nil" then return 15
  elseif type(a14) ~= "nil" then return 14 elseif type(a13) ~= "nil" then return 13
  elseif type(a12) ~= "nil" then return 12 elseif type(a11) ~= "nil" then return 11
  elseif type(a10) ~= "nil" then return 10 elseif type(a9) ~= "nil" then return 9
  elseif type(a8) ~= "nil" then return 8 elseif type(a7) ~= "nil" then return 7
  elseif type(a6) ~= "nil" then return 6 elseif type(a5) ~= "nil" then return 5
  elseif type(a4) ~= "nil" then return 4 elseif type(a3) ~= "nil" then return 3
  elseif type(a2) ~= "nil" then return 2 elseif type(a1) ~= "nil" then return 1 end
  return 0
end

-- the general path: any number of arguments, cluster launches
local function slow_launch(self, l, ...)
  return do_launch(self, l, { ... }, select("#", ...))
end

Launcher.__call = function(l, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...)
  if l.cx or select("#", ...) > 0 then
    return slow_launch(l.k, l, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...)
  end
  local stream = l.stream_handle
  local so = l.stream
  if so then
    local sd = so.device
    if sd ~= ctx.device and sd ~= nil then other_stream(l.k, so) end
    stream = so.handle
  end
  local n = nargs16(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
  return fast_launcher(n)(l.k, l, l.gx, l.gy, l.gz, l.bx, l.by, l.bz, l.smem, stream,
    a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
end

-- direct form: k(cfg, args...), cfg read at each call; without a launcher
-- table, so that a loop of these allocates nothing
local function call_direct(self, cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...)
  if select("#", ...) > 0 or type(cfg) ~= "table" or getmetatable(cfg) ~= nil or cfg.shape ~= nil
    or cfg.cluster ~= nil then
    return slow_launch(self, new_launcher(self, cfg), a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
      a15, a16, ...)
  end
  local gx, gy, gz, bx, by, bz = cfg.grid, 1, 1, cfg.block, 1, 1
  if not okdim(gx) then gx, gy, gz = rt.launch_dims(gx, "grid", launch_what(self), true) end
  if not okdim(bx) then bx, by, bz = rt.launch_dims(bx, "block", launch_what(self), true) end
  local smem = cfg.smem
  if smem ~= nil and not (type(smem) == "number" and smem >= 0 and smem % 1 == 0) then
    return slow_launch(self, new_launcher(self, cfg)) -- (raises: smem)
  end
  local stream = cfg.stream
  local ts = type(stream)
  if ts == "table" then
    local sd = stream.device
    if sd ~= ctx.device and sd ~= nil then other_stream(self, stream) end
    stream = stream.handle
  elseif ts ~= "nil" and ts ~= "cdata" then return slow_launch(self, new_launcher(self, cfg)) end -- (raises: stream)
  local n = nargs16(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
  return fast_launcher(n)(self, cfg, gx, gy, gz, bx, by, bz, smem, stream,
    a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
end

local function dims_text(x, y, z) return ("{%d,%d,%d}"):format(x, y, z) end
Launcher.__tostring = function(l)
  local parts = { "grid " .. dims_text(l.gx, l.gy, l.gz), "block " .. dims_text(l.bx, l.by, l.bz) }
  if l.cx then parts[#parts + 1] = "cluster " .. dims_text(l.cx, l.cy, l.cz) end
  parts[#parts + 1] = "smem " .. (l.smem and tostring(l.smem) or "auto")
  if l.stream or l.stream_handle then
    parts[#parts + 1] = "stream " .. tostring(l.stream and l.stream.handle or l.stream_handle)
  end
  return ("cute.launcher(%s: %s)"):format(l.k.name, table.concat(parts, ", "))
end

---------------------------------------------------------------------------
-- the Kernel methods of this stage
---------------------------------------------------------------------------
function M.init(kmod, kernel_mt)
  K, Kernel = kmod, kernel_mt
  -- before a kernel's first launch: an empty cache (never written)
  Kernel.caches = setmetatable({}, { __newindex = function() cf.fail("cute.launch: internal: shared empty cache") end })
  Kernel._build = build

  -- k:launch(cfg) returns a launcher of its own, taking the kernel's arguments.
  function Kernel:launch(cfg)
    if getmetatable(self) ~= Kernel then
      cf.fail(("cute.kernel: call k:launch(...) with ':' (got %s as the kernel)"):format(type(self)))
    end
    return new_launcher(self, cfg)
  end

  Kernel.__call = call_direct

  -- the loaded entry for args (compiling if needed), e.g. to read attributes
  function Kernel:entry(...)
    if getmetatable(self) ~= Kernel then
      cf.fail(("cute.kernel: call k:entry(...) with ':' (got %s as the kernel)"):format(type(self)))
    end
    return get_entry(self, { ... }, sp.count(...))
  end
  return M
end

return M
