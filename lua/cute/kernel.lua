-- cute.kernel: a Lua function becomes a GPU kernel.
--
--   local k = cute.kernel(function(A, B, C) ... end [, opts])
--   k:launch{grid = {gx, gy, gz}, block = {bx, by, bz}, smem = bytes, stream = s}(A, B, C)
--
-- Each call computes a specialisation signature from its arguments (tensor
-- dtype, shape, strides and alignment; plain Lua numbers and booleans by value;
-- typed scalars such as cute.Int32(n) by type only: those are runtime
-- parameters).  A signature seen before reuses the loaded kernel: no retrace.
-- Otherwise: trace -> IR -> LLVM -> PTX (-> cubin with ptxas) -> module load.
-- The key and the cache tree: lua/cute/specialise.lua; loading, the caches
-- per device and launching: lua/cute/launch.lua.
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")

local M = {}
local T = tr.T

---------------------------------------------------------------------------
-- typed scalars: cute.Int32(n) at launch = a runtime parameter; inside a
-- kernel = a conversion of a traced value.
---------------------------------------------------------------------------
local Scalar = {}
Scalar.__index = Scalar
Scalar.__tostring = function(s) return ("%s(%s)"):format(s.ctor, tostring(s.value)) end
M.Scalar = Scalar

-- CuTe DSL name -> IR type: cute.dtype
local dt = require("cute.dtype")
local scalar_types = {}
for name, info in pairs(dt.by_cute) do scalar_types[name] = info.code end

local arith = require("cute.arith")
for name, t in pairs(scalar_types) do
  local what = "cute." .. name
  M[name] = function(x)
    if tr.is_value(x) then return tr.cvt(x, t) end   -- a conversion (float -> int saturates)
    if tr.is_var(x) then return tr.cvt(x.value, t) end
    if type(x) == "boolean" and t == T.I1 then x = x and 1 or 0 end
    if type(x) == "cdata" and not arith.is64(x) and tonumber(x) then x = tonumber(x) end
    if type(x) ~= "number" and not arith.is64(x) then
      cf.fail(("%s: expected a number, got %s"):format(what, type(x)))
    end
    -- a number must be exactly a value of the type (integers: integral and in range)
    if arith.tinfo[t].int then
      if not arith.integral(x) then cf.fail(("%s: %s is not an integer"):format(what, arith.tostr(x))) end
      if not arith.fits(t, x) then
        cf.fail(("%s: %s does not fit %s"):format(what, arith.tostr(x), arith.tinfo[t].name))
      end
    end
    if tr.active() then return tr.const(t, x, what) end
    if (t == T.F16 or t == T.BF16) and x == x and x ~= math.huge and x ~= -math.huge then
      -- a parameter holds x rounded to nearest even; a finite x must stay finite
      local bits = t == T.F16 and dt.float_to_half(x) or dt.float_to_bf16(x)
      if bit.band(bits, 0x7fff) == (t == T.F16 and 0x7c00 or 0x7f80) then
        cf.fail(("%s: %s is beyond the largest %s (%s)"):format(what, arith.tostr(x), name,
          t == T.F16 and "65504" or "3.3895e38"))
      end
    end
    return setmetatable({ t = t, value = x, ctor = name }, Scalar)
  end
end

local function is_scalar(x) return getmetatable(x) == Scalar end

---------------------------------------------------------------------------
-- host tensor descriptors
---------------------------------------------------------------------------
-- Anything with .dtype (name), .shape and optionally .strides and .ptr works:
-- runtime device tensors and compile-only specs from cute.tensor_spec.
local Spec = {}
Spec.__index = Spec
Spec.__tostring = function(s) return ("tensor_spec<%s, {%s}>"):format(s.dtype.name, table.concat(s.shape, ",")) end

local row_major = require("cute.specialise").row_major
M.row_major = row_major

-- cute.tensor_spec(shape, dtype [, strides [, opts]]): describes a tensor for
-- compiling without a GPU (k:compile / k:ir / k:ptx).
function M.tensor_spec(shape, dtype, strides, opts)
  if type(shape) == "number" then shape = { shape } end
  if type(dtype) ~= "table" or not tr.dtype_ir[dtype.name] then
    cf.fail("cute.tensor_spec: unknown dtype " .. tostring(dtype))
  end
  if opts ~= nil and type(opts) ~= "table" then
    cf.fail("cute.tensor_spec(shape, dtype, strides, opts): opts must be a table, got " .. type(opts))
  end
  local ptr = opts and opts.ptr or 0
  if type(ptr) ~= "number" or ptr < 0 or ptr % 1 ~= 0 then
    cf.fail("cute.tensor_spec: opts.ptr must be a non-negative integer address, got " .. tostring(ptr))
  end
  -- ptr: an address (specs overlap when their byte ranges do); alias: a group
  -- (specs of one group overlap); neither: a distinct allocation
  return setmetatable({ shape = shape, dtype = dtype, strides = strides or row_major(shape), ptr = ptr,
    dynamic = opts and opts.dynamic or false, alias = opts and opts.alias }, Spec)
end

local function is_host_tensor(x)
  return type(x) == "table" and type(x.shape) == "table" and type(x.dtype) == "table" and x.dtype.name ~= nil
    and not ten.is_tensor(x)
end

-- cute.dynamic(t [, {index_bits = 32|64}]): the same tensor, with its shape
-- and strides passed at launch (runtime values inside the kernel) instead of
-- compiled in.  Offsets are 64-bit unless index_bits = 32, which this tensor
-- must then allow (every offset it reaches below 2^31).
function M.dynamic(t, opts)
  if not is_host_tensor(t) then cf.fail("cute.dynamic: expected a tensor") end
  if opts ~= nil and type(opts) ~= "table" then
    cf.fail("cute.dynamic(t, opts): opts must be a table such as {index_bits = 32}, got " .. type(opts))
  end
  local bits = opts and opts.index_bits or 64
  if bits ~= 32 and bits ~= 64 then
    cf.fail("cute.dynamic: index_bits must be 32 or 64, got " .. tostring(bits))
  end
  -- divisibility = n: every run-time stride is a multiple of n elements
  -- (checked at each launch; the trace's strides carry it for alignment)
  local div = opts and opts.divisibility or 1
  if type(div) ~= "number" or div % 1 ~= 0 or div < 1 or div > 2 ^ 30 then
    cf.fail("cute.dynamic: divisibility must be a positive integer (elements), got " .. tostring(div))
  end
  if opts then
    for k in pairs(opts) do
      if k ~= "index_bits" and k ~= "divisibility" then
        cf.fail("cute.dynamic: unknown option " .. tostring(k) .. " (index_bits, divisibility)")
      end
    end
  end
  local strides = t.strides or row_major(t.shape)
  if bits == 32 then
    local m = ten.max_offset(t.shape, strides)
    if not m or m > 2 ^ 31 - 1 then
      cf.fail(("cute.dynamic: index_bits = 32, but a tensor of shape (%s) and strides (%s) reaches offset %s, " ..
        "beyond 2^31 - 1: use 64-bit indexing (the default)"):format(table.concat(t.shape, ","),
        table.concat(strides, ","), tostring(m)))
    end
  end
  return setmetatable({ base = t, shape = t.shape, strides = strides, dtype = t.dtype, dynamic = true,
    index_bits = bits, divisibility = div > 1 and div or nil }, { __index = t })
end

-- The specialisation signature of a tensor argument: dtype, shape and strides
-- (static) or rank, which strides are 1 (those become constants) and the
-- index width (dynamic), and 16-byte alignment.  Cached on the table with the
-- shape, strides, dtype and ptr it was computed from: assigning any of those
-- recomputes it (a table copied with its cached signature too).
-- the cached extents and strides still equal the table's (edited in place?)
local function same_dims(dims, shape, strides)
  local n = #shape
  if dims.n ~= n then return false end
  for d = 1, n do if shape[d] ~= dims[d] then return false end end
  if strides then
    for d = 1, n do if strides[d] ~= dims[n + d] then return false end end
  end
  return true
end

local function tensor_sig(t)
  local shape, strides, ptr, dtype = t.shape, t.strides, t.ptr, t.dtype
  local s = rawget(t, "_cute_sig")
  if s and rawequal(rawget(t, "_cute_sig_shape"), shape) and rawequal(rawget(t, "_cute_sig_strides"), strides)
    and rawequal(rawget(t, "_cute_sig_ptr"), ptr) and rawequal(rawget(t, "_cute_sig_dtype"), dtype)
    and same_dims(rawget(t, "_cute_sig_dims"), shape, strides) then
    return s
  end
  local st = strides or row_major(shape)
  local dims = { n = #shape }
  for d = 1, #shape do dims[d], dims[#shape + d] = shape[d], st[d] end
  if t.dynamic then
    local mask = {}
    for d = 1, #shape do mask[d] = st[d] == 1 and "1" or "0" end
    s = dtype.name .. "|dyn" .. #shape .. "|u" .. table.concat(mask) .. (t.index_bits == 32 and "|i32" or "|i64")
      .. (t.divisibility and ("|d" .. t.divisibility) or "")
  else
    s = dtype.name .. "|" .. table.concat(shape, ",") .. "|" .. table.concat(st, ",")
  end
  local aligned = (tonumber(ptr or 0) or 0) % 16 == 0
  s = s .. (aligned and "|a16" or "|a1")
  rawset(t, "_cute_sig", s)
  rawset(t, "_cute_sig_shape", shape); rawset(t, "_cute_sig_strides", strides)
  rawset(t, "_cute_sig_ptr", ptr); rawset(t, "_cute_sig_dtype", dtype); rawset(t, "_cute_sig_dims", dims)
  return s
end
M.tensor_sig = tensor_sig

---------------------------------------------------------------------------
-- kernels
---------------------------------------------------------------------------
local Kernel = {}
Kernel.__index = Kernel
M.Kernel = Kernel

-- specialisation keys, overlap masks and call checks (lua/cute/specialise.lua)
local sp = require("cute.specialise").init{ tensor_sig = tensor_sig, is_scalar = is_scalar,
  is_host_tensor = is_host_tensor }

local function kernel_name(fn, opts)
  if opts.name then return opts.name end
  local info = debug.getinfo(fn, "S")
  local base = (info.short_src or "kernel"):match("([%w_]+)%.lua$") or "kernel"
  return ("%s_%d"):format(base, info.linedefined or 0)
end

-- options of cute.kernel that are not compile options
local kernel_keys = { name = true, frontend = true, target = true, check = true } -- (target, check: lua/cute/target_cpu.lua)

local warmed = false
function M.kernel(fn, opts)
  if type(fn) ~= "function" then cf.fail("cute.kernel: expected a function, got " .. type(fn)) end
  local nparams, isvararg, param_names = sp.param_info(fn) -- (of the function as written)
  if opts ~= nil and type(opts) ~= "table" then
    cf.fail("cute.kernel(fn, opts): opts must be a table such as {name = ...}, got " .. type(opts))
  end
  -- the options are copied and frozen: they are part of the kernel's identity
  local copy = {}
  for key, v in pairs(opts or {}) do copy[key] = v end
  opts = copy
  if opts.name ~= nil and (type(opts.name) ~= "string" or not opts.name:match("^[%a_][%w_]*$")) then
    cf.fail("cute.kernel: option 'name' must be an identifier string, got " .. tostring(opts.name))
  end
  if opts.target ~= nil then require("cute.target_cpu").check_target(opts.target) end
  if opts.check ~= nil then require("cute.target_cpu").check_flags(opts.check, "cute.kernel: option check") end
  local options = require("cute.compile").options(opts, "cute.kernel", kernel_keys)
  if not warmed then
    -- a kernel will be compiled soon: get LLVM ready in the background
    warmed = true
    if M.warmup then
      C.cute_compile_warmup(options.values.arch)
      -- lua_close runs this finaliser: the warm-up thread never outlives the state
      M._warmup_guard = ffi.gc(ffi.new("char[1]"), function() C.cute_compile_warmup_wait() end)
    end
  end
  local k = setmetatable({ fn = fn, source_fn = fn, opts = opts, options = options, options_key = options.key,
    name = kernel_name(fn, opts), cache = {}, compiled = {}, traces = 0, compiles = 0 }, Kernel)
  k.nparams, k.isvararg, k.param_names = nparams, isvararg, param_names
  -- the source front end: k.fn becomes the rewritten function (cute.frontend)
  local frontend = require("cute.frontend")
  if frontend.attach then frontend.attach(k, fn, opts) end
  return k
end

-- k:with(opts): the same function as a new kernel, its options changed by opts
function Kernel:with(opts)
  if getmetatable(self) ~= Kernel then cf.fail("cute.kernel: call k:with(opts) with ':'") end
  if type(opts) ~= "table" then cf.fail("cute.kernel k:with(opts): opts must be a table, got " .. type(opts)) end
  local merged = {}
  for key, v in pairs(self.opts) do merged[key] = v end
  for key, v in pairs(opts) do merged[key] = v end
  return M.kernel(self.source_fn, merged)
end

function M.is_kernel(x) return getmetatable(x) == Kernel end

-- tostring(k): "cute.kernel name(A, B, n): 2 specialisations, options {...}"
local function options_summary(k)
  local key = rawget(k, "options_key")
  if type(key) == "string" then return key end
  local names = {}
  for name, v in pairs(k.opts or {}) do
    if type(name) == "string" and name ~= "name" and type(v) ~= "table" and type(v) ~= "function" then
      names[#names + 1] = name .. "=" .. tostring(v)
    end
  end
  table.sort(names)
  return "{" .. table.concat(names, ", ") .. "}"
end
Kernel.__tostring = function(k)
  local params = {}
  for i = 1, k.nparams or 0 do params[i] = k.param_names[i] end
  if k.isvararg then params[#params + 1] = "..." end
  local n = rawget(k, "specialisations") or 0
  return ("cute.kernel %s(%s): %d specialisation%s, %d trace%s, options %s"):format(k.name,
    table.concat(params, ", "), n, n == 1 and "" or "s", k.traces, k.traces == 1 and "" or "s", options_summary(k))
end

-- build the IR for the given arguments; returns ir (cdata, gc'ed), param plan
function Kernel:trace(...)
  local args = { ... }
  local nargs = select("#", ...)
  local ir = C.cute_ir_new()
  if ir == nil then cf.fail("cute.kernel: out of memory") end
  ir = ffi.gc(ir, C.cute_ir_free)
  local prev = tr.begin(ir)
  local tstate = tr.state()
  -- the target, for operations that need a newer SM (cute.arch.cp_async: sm_80)
  tr.state().arch = self.options and self.options:for_current_device("cute.kernel " .. self.name).values.arch
  local plan = {} -- per kernel parameter: { kind = "ptr"|"scalar"|"dim", arg = i, ... }
  local ok, err = xpcall(function()
    C.cute_ir_func(ir, self.name, C.CUTE_FN_KERNEL, T.VOID or 1)
    local targs = {}
    local tensor_ptrs = {}
    -- IR (and PTX) parameter names: the Lua parameter's name, "arg<i>" for varargs
    local pnames = self.param_names or {}
    local function pname(i) return pnames[i] or ("arg" .. i) end
    for i = 1, nargs do
      local a = args[i]
      local amt = type(a) == "table" and getmetatable(a)
      if amt and amt.__cute_param then -- argument kinds of other modules (TMA atoms: cute.tma_copy)
        targs[i] = amt.__cute_param(a, { ir = ir, name = pname(i), plan = plan, arg = i })
      elseif is_host_tensor(a) then
        local elem = tr.dtype_ir[a.dtype.name]
        if not elem then cf.fail(("cute.kernel %s: argument %d: unsupported dtype %s"):format(self.name, i, tostring(a.dtype.name))) end
        local pt = C.cute_ir_t_ptr(ir, elem, C.CUTE_AS_GLOBAL)
        local aligned = (tonumber(a.ptr or 0) or 0) % 16 == 0
        local flags = sp.noalias_flag(self._alias_mask, i) -- (the call's overlap pattern)
        local ref = C.cute_ir_param(ir, pt, pname(i), flags, aligned and 16 or 0)
        plan[#plan + 1] = { kind = "ptr", arg = i }
        local pv = tr.mk(ref, pt)
        local shape, stride = {}, {}
        local strides = a.strides or row_major(a.shape)
        -- runtime extents: i64 parameters (64-bit offset math) unless the
        -- tensor opted into 32-bit (cute.dynamic(t, {index_bits = 32}));
        -- strides equal to 1 are constants (the signature records which)
        local it = a.index_bits == 32 and T.I32 or T.I64
        for d = 1, #a.shape do
          if a.dynamic then
            local sref = C.cute_ir_param(ir, it, ("%s_shape%d"):format(pname(i), d), 0, 0)
            plan[#plan + 1] = { kind = "dim", arg = i, field = "shape", d = d, bits = it == T.I64 and 64 or 32 }
            shape[d] = tr.mk(sref, it)
            if strides[d] == 1 then stride[d] = 1
            else
              local dref = C.cute_ir_param(ir, it, ("%s_stride%d"):format(pname(i), d), 0, 0)
              plan[#plan + 1] = { kind = "dim", arg = i, field = "strides", d = d, bits = it == T.I64 and 64 or 32,
                div = a.divisibility, name = pname(i) }
              stride[d] = tr.mk(dref, it, a.divisibility)
            end
          else
            shape[d], stride[d] = a.shape[d], strides[d]
          end
        end
        local L = { shape = shape, stride = stride }
        targs[i] = ten.make(pv, 0, L, elem, "global", aligned and 16 or tr.tinfo[elem].bits / 8, it)
        tensor_ptrs[#tensor_ptrs + 1] = i
      elseif is_scalar(a) then
        local ref = C.cute_ir_param(ir, a.t, pname(i), 0, 0)
        plan[#plan + 1] = { kind = "scalar", arg = i, t = a.t }
        targs[i] = tr.mk(ref, a.t)
      elseif type(a) == "number" or type(a) == "boolean" or type(a) == "string" or a == nil
        or type(a) == "function" or sp.is_cute_value(a) then
        targs[i] = a -- compile-time constant
      elseif type(a) == "table" then
        targs[i] = a -- plain Lua data: compile-time
      else
        cf.fail(("cute.kernel %s: argument %d: cannot pass a %s to a kernel (tensors, cute.Int32(x)-style " ..
          "scalars, numbers, booleans, strings, tables and layouts can be passed)"):format(self.name, i, type(a)))
      end
    end
    self.fn(unpack(targs, 1, nargs))
    tr.pending_check()
    C.cute_ir_ret(ir, 0)
  end, function(e)
    e = tostring(e)
    if e:find("'for' [%w ]+ must be a number") then
      e = e .. "\n  (a traced value cannot bound a Lua numeric for loop: write `for i in cute.range(a, b) do`)"
    elseif e:find("attempt to compare") and e:find("cute_traced") == nil and e:find("table") then
      e = e .. "\n  (compare traced values with numbers or other traced values; for a cute.var use v.value)"
    end
    return e
  end)
  if not ok then
    tr.abort(prev)
    if os.getenv("CUTE_DUMP_IR") then io.stderr:write(ffi.string(C.cute_ir_print(ir)), "\n") end
    cf.rethrow(err)
  end
  local fine, ferr = tr.finish(prev)
  if not fine then cf.rethrow(ferr) end
  cf.check(C.cute_ir_status(ir, cf.err))
  self.traces = self.traces + 1
  plan.block_check = tstate.block_check -- (launch-time checks of the block size: warpgroup MMAs)
  plan.asserts = tstate.asserts -- (ref -> {file, line, msg} of each cute.assert_: the fault record's key)
  return ir, plan
end

-- a method called with '.' instead of ':'
local function check_self(self, method)
  if getmetatable(self) ~= Kernel then
    cf.fail(("cute.kernel: call k:%s(...) with ':' (got %s as the kernel)"):format(method, type(self)))
  end
end

-- the current device's target (cute_arch_for_cc), or false without a GPU
local function gpu_arch() return require("cute.compile").device_arch() end
M.gpu_arch = gpu_arch

-- Compile IR with the kernel's options (want_cubin: assemble with ptxas even
-- if use_ptxas is off, when ptxas is present); returns the cute_compiled
-- (gc'ed) and the arch.  A failure is an error at the user's line.
-- (launch_options: the options a launch compiles with; cute.autotune uses them too)
local function launch_options(self, want_cubin)
  local o = self.options:for_current_device("cute.kernel " .. self.name)
  if o.portable then
    -- a device newer than every target: its portable PTX goes to the driver's
    -- JIT (a cubin for sm_90 would not load on it)
    if o.values.use_ptxas then o = o:with({ use_ptxas = false }, "cute.kernel " .. self.name) end
  elseif want_cubin and not o.values.use_ptxas and C.cute_ptxas_path() ~= nil then
    o = o:with({ use_ptxas = true }, "cute.kernel " .. self.name)
  end
  -- a launch reads no stage text: without keep or dump_dir given, keep only
  -- the image, so that the disk cache (whose entries hold no LLVM text) serves it
  if o.values.cache and not o:given("keep") and not o:given("dump_dir") then
    o = o:with({ keep = "ptx,cubin" }, "cute.kernel " .. self.name)
  end
  return o
end
local function compile_ir(self, ir, want_cubin)
  local compile = require("cute.compile")
  local o = launch_options(self, want_cubin)
  local cc, st, msg = compile.run(ir, o)
  if st ~= 0 then
    self._failed = cc and compile.result(cc) or nil
    cf.fail(("cute.kernel %s: compile failed: %s"):format(self.name, compile.explain(o, msg)))
  end
  self.compiles = self.compiles + 1
  return cc, o.values.arch
end

-- Stages as text for given arguments (no GPU needed with cute.tensor_spec):
-- checked like a launch, traced with the overlap pattern of the tensors given
-- (sp.static_mask: distinct specs do not alias), so the text is the binary
-- that a launch with that pattern runs.
local function trace_static(self, ...)
  local nargs = sp.count(...)
  local args = { ... }
  sp.check_args(self, args, nargs, false)
  self._alias_mask = sp.static_mask(args, nargs)
  return self:trace(unpack(args, 1, nargs))
end

function Kernel:ir(...)
  check_self(self, "ir")
  local ir = trace_static(self, ...)
  return ffi.string(C.cute_ir_print(ir))
end

-- The compiled entry for args, through the kernel's cache of compiles: one
-- table level per argument keyed by sp.arg_key (as launches are), then the
-- static overlap mask.  A second identical call neither traces nor compiles.
-- Returns the entry { cc, result } or nil, message, partial result when a
-- stage failed.
local function compiled_entry(self, what, ...)
  local nargs = sp.count(...)
  local args = { ... }
  sp.check_args(self, args, nargs, false)
  -- one tree per target: an arch taken from the device follows the current device
  local o = self.options:for_current_device(what)
  local node = self.compiled[o.values.arch]
  if not node then node = {}; self.compiled[o.values.arch] = node end
  for i = 1, nargs do
    local key = sp.arg_key(args[i])
    local nx = node[key]
    if not nx then nx = {}; node[key] = nx end
    node = nx
  end
  local mask = sp.static_mask(args, nargs)
  local g = node[sp.ENTRY]
  if not g then g = {}; node[sp.ENTRY] = g end
  local e = g[mask]
  if e then return e end
  self._alias_mask = mask
  local ir = self:trace(unpack(args, 1, nargs))
  local compile = require("cute.compile")
  -- an inspection assembles with ptxas when present, unless use_ptxas was given
  if not o:given("use_ptxas") and C.cute_ptxas_path() ~= nil then o = o:with({ use_ptxas = true }, what) end
  local cc, st, msg = compile.run(ir, o)
  local r = cc and compile.result(cc) or nil
  if st ~= 0 then return nil, compile.explain(o, msg), r end
  self.compiles = self.compiles + 1
  e = { cc = cc, result = r }
  g[mask] = e
  return e
end

-- k:compile(args...) -> the compile result (lua/cute/compile.lua): ir, llvm,
-- ptx, cubin (bytes), sass (when kept), ptxas_log, arch, key, kernels, info,
-- times, stages.  A failed stage is an error at the user's line; k.last_failure
-- then holds the partial result (every stage's text up to the failure).
function Kernel:compile(...)
  check_self(self, "compile")
  local e, msg, partial = compiled_entry(self, "cute.kernel " .. self.name .. " compile", ...)
  if not e then
    self.last_failure = partial
    cf.fail(("cute.kernel %s: compile failed: %s"):format(self.name, msg))
  end
  return e.result
end

-- k:ptx(args...): the PTX, also when a later stage (ptxas) fails: then the
-- second value is the error message.
function Kernel:ptx(...)
  check_self(self, "ptx")
  local e, msg, partial = compiled_entry(self, "cute.kernel " .. self.name .. " ptx", ...)
  if e then return e.result.ptx end
  self.last_failure = partial
  if partial and partial.ptx then return partial.ptx, msg end
  cf.fail(("cute.kernel %s: compile failed: %s"):format(self.name, msg))
end

-- k:sass(args...): the SASS through nvdisasm or cuobjdump (an error naming
-- where they were searched when neither is installed)
function Kernel:sass(...)
  check_self(self, "sass")
  local what = "cute.kernel " .. self.name .. " sass"
  local e, msg, partial = compiled_entry(self, what, ...)
  if not e then
    self.last_failure = partial
    cf.fail(("cute.kernel %s: compile failed: %s"):format(self.name, msg))
  end
  if not e.result.sass then e.result.sass = require("cute.compile").sass(e.cc, what) end
  return e.result.sass
end

---------------------------------------------------------------------------
-- load and launch (lua/cute/launch.lua): Kernel:_build, Kernel:launch,
-- k(cfg, ...), Kernel:entry
---------------------------------------------------------------------------
M.compile_ir = compile_ir
M.launch_options = launch_options
local launch = require("cute.launch").init(M, Kernel)
M.launch_smem = launch.launch_smem
M.compiled_dyn_smem = launch.compiled_dyn_smem
M._use_driver = launch._use_driver

-- Launches load PTX and let the driver JIT it: measured faster for a first call
-- than running ptxas as a process (docs/BENCHMARKS.md), and the driver caches
-- the result on disk.  The option use_ptxas = true (or
-- require("cute.kernel").default_cubin = true for every kernel) uses ptxas;
-- k:compile() always runs ptxas when it is present (for its report).
M.default_cubin = false
-- background LLVM warm-up at the first cute.kernel (CUTE_NO_WARMUP=1 turns it off)
M.warmup = os.getenv("CUTE_NO_WARMUP") == nil
return M
