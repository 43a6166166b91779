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
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")

local M = {}
local T = tr.T
pcall(ffi.cdef, "size_t strlen(const char *s);")

---------------------------------------------------------------------------
-- typed scalars: cute.Int32(n) at launch = a runtime parameter; inside a
-- kernel = a conversion of a traced value.
---------------------------------------------------------------------------
local Scalar = {}
Scalar.__index = Scalar
Scalar.__tostring = function(s) return ("%s(%s)"):format(s.ctor, tostring(s.value)) end
M.Scalar = Scalar

local scalar_types = {
  Int8 = T.I8, Int16 = T.I16, Int32 = T.I32, Int64 = T.I64,
  Uint8 = T.U8, Uint16 = T.U16, Uint32 = T.U32, Uint64 = T.U64,
  Float16 = T.F16, BFloat16 = T.BF16, Float32 = T.F32, Float64 = T.F64, Boolean = T.I1,
}
local scalar_ctype = {
  [T.I8] = "int8_t*", [T.I16] = "int16_t*", [T.I32] = "int32_t*", [T.I64] = "int64_t*",
  [T.U8] = "uint8_t*", [T.U16] = "uint16_t*", [T.U32] = "uint32_t*", [T.U64] = "uint64_t*",
  [T.F32] = "float*", [T.F64] = "double*", [T.I1] = "uint8_t*",
}

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
    if t == T.F16 or t == T.BF16 then
      error(("cute.%s: half-precision kernel parameters are not supported; pass cute.Float32"):format(name), 2)
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

local function row_major(shape)
  local st, acc = {}, 1
  for i = #shape, 1, -1 do st[i] = acc; acc = acc * shape[i] end
  return st
end
M.row_major = row_major

-- cute.tensor_spec(shape, dtype [, strides [, opts]]): describes a tensor for
-- compiling without a GPU (k:compile / k:ir / k:ptx).
function M.tensor_spec(shape, dtype, strides, opts)
  if type(shape) == "number" then shape = { shape } end
  if type(dtype) ~= "table" or not tr.dtype_ir[dtype.name] then
    error("cute.tensor_spec: unknown dtype " .. tostring(dtype), 2)
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
  if not is_host_tensor(t) then error("cute.dynamic: expected a tensor", 2) end
  if opts ~= nil and type(opts) ~= "table" then
    cf.fail("cute.dynamic(t, opts): opts must be a table such as {index_bits = 32}, got " .. type(opts))
  end
  local bits = opts and opts.index_bits or 64
  if bits ~= 32 and bits ~= 64 then
    cf.fail("cute.dynamic: index_bits must be 32 or 64, got " .. tostring(bits))
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
    index_bits = bits }, { __index = t })
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

local warmed = false
function M.kernel(fn, opts)
  if type(fn) ~= "function" then error("cute.kernel: expected a function, got " .. type(fn), 2) end
  local nparams, isvararg, param_names = sp.param_info(fn) -- (of the function as written)
  if opts ~= nil and type(opts) ~= "table" then
    error("cute.kernel(fn, opts): opts must be a table such as {name = ...}, got " .. type(opts), 2)
  end
  opts = opts or {}
  if not warmed then
    -- a kernel will be compiled soon: get LLVM ready in the background
    warmed = true
    if M.warmup then
      C.cute_compile_warmup(opts.arch or M.gpu_arch() or "sm_90a")
      -- lua_close runs this finaliser: the warm-up thread never outlives the state
      M._warmup_guard = ffi.gc(ffi.new("char[1]"), function() C.cute_compile_warmup_wait() end)
    end
  end
  local k = setmetatable({ fn = fn, opts = opts, name = kernel_name(fn, opts), cache = {},
    traces = 0, compiles = 0 }, Kernel)
  k.nparams, k.isvararg, k.param_names = nparams, isvararg, param_names
  -- the source front end: k.fn becomes the rewritten function (cute.frontend)
  local frontend = require("cute.frontend")
  if frontend.attach then frontend.attach(k, fn, opts) end
  return k
end

function M.is_kernel(x) return getmetatable(x) == Kernel end

-- build the IR for the given arguments; returns ir (cdata, gc'ed), param plan
function Kernel:trace(...)
  local args = { ... }
  local nargs = select("#", ...)
  local ir = C.cute_ir_new()
  if ir == nil then error("cute.kernel: out of memory", 2) end
  ir = ffi.gc(ir, C.cute_ir_free)
  local prev = tr.begin(ir)
  local plan = {} -- per kernel parameter: { kind = "ptr"|"scalar"|"dim", arg = i, ... }
  local ok, err = xpcall(function()
    C.cute_ir_func(ir, self.name, C.CUTE_FN_KERNEL, T.VOID or 1)
    if self.opts.max_threads or self.opts.min_blocks then
      C.cute_ir_launch_bounds(ir, self.opts.max_threads or 0, self.opts.min_blocks or 0)
    end
    local targs = {}
    local tensor_ptrs = {}
    -- IR (and PTX) parameter names: the Lua parameter's name, "arg<i>" for varargs
    local pnames = self.param_names or {}
    local function pname(i) return pnames[i] or ("arg" .. i) end
    for i = 1, nargs do
      local a = args[i]
      if is_host_tensor(a) then
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
              plan[#plan + 1] = { kind = "dim", arg = i, field = "strides", d = d, bits = it == T.I64 and 64 or 32 }
              stride[d] = tr.mk(dref, it)
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
    error(err, 0)
  end
  local fine, ferr = tr.finish(prev)
  if not fine then error(ferr, 0) end
  if C.cute_ir_status(ir, cf.err) ~= 0 then cf.raise(0) end
  self.traces = self.traces + 1
  return ir, plan
end

-- a method called with '.' instead of ':'
local function check_self(self, method)
  if getmetatable(self) ~= Kernel then
    cf.fail(("cute.kernel: call k:%s(...) with ':' (got %s as the kernel)"):format(method, type(self)))
  end
end

local has_gpu_cache
local function gpu_arch()
  if has_gpu_cache == nil then
    has_gpu_cache = false
    local ok, rt = pcall(require, "cute.runtime")
    if ok and rt.available() then
      local d = rt.device(0)
      has_gpu_cache = ("sm_%d%d%s"):format(d.cc[1], d.cc[2], d.cc[1] >= 9 and "a" or "")
    end
  end
  return has_gpu_cache
end
M.gpu_arch = gpu_arch

-- Compile IR; returns the cute_compiled (gc'ed).
local function compile_ir(self, ir, want_cubin)
  local o = ffi.new("cute_compile_opts")
  local arch = self.opts.arch or gpu_arch() or "sm_90a"
  o.arch = arch
  o.opt_level = self.opts.opt_level or 3
  o.ptx_version = self.opts.ptx_version or 0
  local flags = 0
  if not want_cubin then flags = flags + C.CUTE_C_NO_PTXAS end
  if self.opts.ftz then flags = flags + C.CUTE_C_FTZ end
  o.flags = flags
  local out = ffi.new("cute_compiled*[1]")
  local st = C.cute_compile(ir, o, out, cf.err)
  local cc = out[0] ~= nil and ffi.gc(out[0], C.cute_compiled_free) or nil
  if st ~= 0 then
    local msg = ffi.string(cf.err[0].msg)
    error(("cute.kernel %s: compile failed: %s"):format(self.name, msg), 0)
  end
  self.compiles = self.compiles + 1
  return cc, arch
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

-- k:compile(args...) -> { ir = text, llvm = text, ptx = text, cubin = bool, info = {...}, times = {...} }
function Kernel:compile(...)
  check_self(self, "compile")
  local ir = trace_static(self, ...)
  local cc, arch = compile_ir(self, ir, self.opts.cubin ~= false and C.cute_ptxas_path() ~= nil)
  local info = ffi.new("cute_kernel_info")
  C.cute_compiled_info(cc, nil, info)
  local times = ffi.new("cute_compile_times")
  C.cute_compiled_times(cc, times)
  local function s(p) return p ~= nil and ffi.string(p) or nil end
  return {
    arch = arch,
    ir = s(C.cute_compiled_ir_text(cc)), llvm = s(C.cute_compiled_llvm_ir(cc)),
    ptx = s(C.cute_compiled_ptx(cc)), ptxas_log = s(C.cute_compiled_ptxas_log(cc)),
    cubin = C.cute_compiled_has_cubin(cc) ~= 0,
    info = { regs = info.regs, smem = info.smem_static, smem_dynamic = info.smem_dynamic,
      spill_stores = info.spill_stores,
      spill_loads = info.spill_loads, stack = info.stack },
    times = { build_us = times.build_us, opt_us = times.opt_us, emit_us = times.emit_us,
      ptxas_us = times.ptxas_us, total_us = times.total_us },
  }
end
function Kernel:ptx(...)
  check_self(self, "ptx")
  return self:compile(...).ptx
end

---------------------------------------------------------------------------
-- launch
---------------------------------------------------------------------------
local cu_err = cf.err
local void_pp = ffi.typeof("void*[?]")
local u64_arr = ffi.typeof("uint64_t[?]")

-- load a compiled kernel for the GPU: entry { fn, params, slots, plan }
function Kernel:_build(args, nargs)
  local rt = require("cute.runtime")
  local ok, why = rt.available()
  if not ok then
    cf.fail(("cute.kernel %s: cannot launch without a GPU (%s); k:compile(args) and k:ir(args) work " ..
      "without one"):format(self.name, tostring(why)))
  end
  local t0 = C.cute_cuda_now_us()
  local ir, plan = self:trace(unpack(args, 1, nargs))
  local t1 = C.cute_cuda_now_us()
  local use_cubin = self.opts.cubin
  if use_cubin == nil then use_cubin = M.default_cubin end
  if use_cubin and C.cute_ptxas_path() == nil then use_cubin = false end
  local cc = compile_ir(self, ir, use_cubin)
  local t2 = C.cute_cuda_now_us()
  local image, size, is_ptx
  if C.cute_compiled_has_cubin(cc) ~= 0 then
    local sz = ffi.new("size_t[1]")
    image = C.cute_compiled_cubin(cc, sz); size = sz[0]; is_ptx = 0
  else
    image = C.cute_compiled_ptx(cc); size = C.strlen(image); is_ptx = 1
  end
  local mod = ffi.new("void*[1]")
  if C.cute_cuda_module_load(image, size, is_ptx, mod, nil, 0, cu_err) ~= 0 then cf.fail_err() end
  local fnp = ffi.new("void*[1]")
  if C.cute_cuda_module_get_function(mod[0], self.name, fnp, cu_err) ~= 0 then cf.fail_err() end
  local t3 = C.cute_cuda_now_us()
  local ct = ffi.new("cute_compile_times")
  C.cute_compiled_times(cc, ct)
  -- where the first call's time went (bench/first_call.lua prints it)
  self.last_build = { trace_us = t1 - t0, compile_us = t2 - t1, load_us = t3 - t2,
    llvm_build_us = ct.build_us, opt_us = ct.opt_us, emit_us = ct.emit_us, ptxas_us = ct.ptxas_us,
    image = is_ptx == 1 and "ptx" or "cubin" }
  local n = #plan
  local slots = u64_arr(math.max(n, 1))
  local params = void_pp(math.max(n, 1))
  local ptrs = {}
  for j = 1, n do
    params[j - 1] = slots + (j - 1)
    local p = plan[j]
    if p.kind == "scalar" then ptrs[j] = ffi.cast(scalar_ctype[p.t], slots + (j - 1))
    elseif p.kind == "dim" then ptrs[j] = ffi.cast(p.bits == 64 and "int64_t*" or "int32_t*", slots + (j - 1)) end
  end
  -- a straight-line parameter writer for this signature (generated once)
  local lines = {}
  for j = 1, n do
    local p = plan[j]
    if p.kind == "ptr" then lines[#lines + 1] = ("slots[%d] = a%d.ptr"):format(j - 1, p.arg)
    elseif p.kind == "scalar" then lines[#lines + 1] = ("ptrs[%d][0] = a%d.value"):format(j, p.arg)
    else lines[#lines + 1] = ("ptrs[%d][0] = a%d.%s[%d]"):format(j, p.arg, p.field, p.d) end
  end
  local anames = {}
  for i = 1, math.max(nargs, 1) do anames[i] = "a" .. i end
  local fill = assert(loadstring(("return function(slots, ptrs, %s)\n%s\nend"):format(
    table.concat(anames, ", "), table.concat(lines, "\n")), "=[cute launch fill]"))()
  local entry = { fn = fnp[0], module = mod[0], params = params, slots = slots, plan = plan, ptrs = ptrs,
    fill = fill,
    n = n, cc = cc, max_dyn_smem = 48 * 1024, dyn_smem = M.compiled_dyn_smem(cc) }
  self.modules = self.modules or {}
  self.modules[#self.modules + 1] = mod[0]
  return entry
end

-- The driver calls of a launch (tests replace them: K._use_driver(fake)).
local drv = C

-- The cache (lua/cute/specialise.lua describes the keys): one table level per
-- argument keyed by sp.arg_key, then a group { mask = overlap test or false,
-- [overlap mask] = entry }.  The entry for one call (the miss path of a
-- launch, and k:entry): a hit, or the call is checked (count, kinds, device
-- addresses) and the kernel traced, compiled and loaded for its signature and
-- overlap pattern.
local arg_key, ENTRY, BAD = sp.arg_key, sp.ENTRY, sp.BAD
local function get_entry(self, args, nargs)
  local node = self.cache
  for i = 1, nargs do
    node = node[arg_key(args[i])]
    if not node then break end
  end
  local g = node and node[ENTRY]
  if g then
    local m = g.mask
    local e = g[m and m(unpack(args, 1, nargs)) or 0]
    if e then return e end
  end
  sp.check_args(self, args, nargs, true)
  node = self.cache
  for i = 1, nargs do
    local key = arg_key(args[i])
    if key == BAD then sp.check_args(self, args, nargs, true) end -- (cannot happen: checked above)
    local nx = node[key]
    if not nx then nx = {}; node[key] = nx end
    node = nx
  end
  local copy = {}
  for i = 1, nargs do copy[i] = args[i] end
  g = node[ENTRY]
  if not g then g = { mask = sp.make_mask(copy, nargs) }; node[ENTRY] = g end
  local mask = g.mask and g.mask(unpack(copy, 1, nargs)) or 0
  self._alias_mask = mask
  local e = self:_build(copy, nargs)
  g[mask] = e
  return e
end

local function dims(x, what)
  if type(x) == "number" then return x, 1, 1 end
  if type(x) == "table" then return x[1] or 1, x[2] or 1, x[3] or 1 end
  if x == nil then return 1, 1, 1 end
  if tr.is_value(x) then error((tr.where()) .. ": cute.kernel launch: " .. what .. " must be Lua numbers, not traced values", 0) end
  error(("%s: cute.kernel launch: %s must be a number or {x, y, z}, got %s"):format((tr.where()), what, type(x)), 0)
end

local function bad_dims(gx, gy, gz, bx, by, bz)
  error(("%s: cute.kernel launch: grid and block sizes must be positive integers, got grid {%s,%s,%s} block {%s,%s,%s}")
    :format((tr.where()), tostring(gx), tostring(gy), tostring(gz), tostring(bx), tostring(by), tostring(bz)), 0)
end

local function okdim(v) return type(v) == "number" and v >= 1 and v % 1 == 0 end

-- Dynamic shared memory (make_dynamic_shared_tensor regions).  The bytes a
-- compiled kernel's dynamic shared tensors need (their regions' total):
function M.compiled_dyn_smem(cc)
  local info = ffi.new("cute_kernel_info")
  if C.cute_compiled_info(cc, nil, info) ~= 0 then return 0 end
  return info.smem_dynamic
end
-- The bytes to launch with: cfg.smem, or the kernel's need when omitted; less
-- than the need is an error at the user's line.
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

-- args: a table holding the nargs arguments (reused between calls)
local function do_launch(self, cfg, args, nargs)
  sp.check_cfg(self, cfg)
  while nargs > 0 and type(args[nargs]) == "nil" do nargs = nargs - 1 end -- (a trailing nil is no argument)
  local gx, gy, gz = dims(cfg.grid, "grid")
  local bx, by, bz = dims(cfg.block, "block")
  if not (okdim(gx) and okdim(gy) and okdim(gz) and okdim(bx) and okdim(by) and okdim(bz)) then
    bad_dims(gx, gy, gz, bx, by, bz)
  end
  local entry = get_entry(self, args, nargs)
  entry.fill(entry.slots, entry.ptrs, unpack(args, 1, nargs))
  local smem = M.launch_smem(self, entry, cfg) -- (dynamic shared memory: default and check)
  if smem > entry.max_dyn_smem then
    if drv.cute_cuda_func_set_max_dynamic_smem(entry.fn, smem, cu_err) ~= 0 then cf.fail_err() end
    entry.max_dyn_smem = smem
  end
  local stream = cfg.stream
  local ts = type(stream)
  if ts == "table" then stream = stream.handle
  elseif ts ~= "nil" and ts ~= "cdata" then
    cf.fail(("cute.kernel %s launch: stream must be a cute.stream(), got %s"):format(self.name, tostring(stream)))
  end
  local st
  if cfg.cluster then
    local cx, cy, cz = dims(cfg.cluster, "cluster")
    st = drv.cute_cuda_launch_cluster(entry.fn, gx, gy, gz, bx, by, bz, cx, cy, cz, smem, stream, entry.params, cu_err)
  else
    st = drv.cute_cuda_launch(entry.fn, gx, gy, gz, bx, by, bz, smem, stream, entry.params, cu_err)
  end
  if st ~= 0 then
    error(("%s: cute.kernel %s: launch failed: %s"):format((tr.where()), self.name, ffi.string(cu_err[0].msg)), 0)
  end
end

-- The hot path: for each arity a generated function looks the signature up
-- (one table level per argument, then the group's generated overlap test of
-- the tensor arguments), writes the parameters with the entry's generated
-- writer and launches; no loops, varargs or allocation, so LuaJIT compiles it
-- into the caller's trace.  Misses and unusual calls go to do_launch.
local fast_launchers = {}
local function make_fast_launcher(n)
  local f
  local an = {}
  for i = 1, n do an[i] = "a" .. i end
  local as = table.concat(an, ", ")
  local src = { "local arg_key, ENTRY, dims, okdim, C, cu_err, do_launch, fail_launch = ...",
    ("return function(self, cfg%s)"):format(n > 0 and (", " .. as) or ""),
    "  local node, nx = self.cache" }
  for i = 1, n do
    src[#src + 1] = ("  nx = node[arg_key(a%d)]; if not nx then return do_launch(self, cfg, {%s}, %d) end; node = nx")
      :format(i, as, n)
  end
  src[#src + 1] = ("  local g = node[ENTRY]; if not g then return do_launch(self, cfg, {%s}, %d) end"):format(as, n)
  src[#src + 1] = ("  local m = g.mask; local e = g[m and m(%s) or 0]; if not e then return do_launch(self, cfg, {%s}, %d) end")
    :format(as, as, n)
  src[#src + 1] = ("  local sm = cfg.smem or e.dyn_smem; if cfg.cluster or type(sm) ~= 'number' or sm < e.dyn_smem or sm > e.max_dyn_smem then return do_launch(self, cfg, {%s}, %d) end")
    :format(as, n)
  src[#src + 1] = ("  e.fill(e.slots, e.ptrs%s)"):format(n > 0 and (", " .. as) or "")
  src[#src + 1] = [[
  local gx, gy, gz = dims(cfg.grid, "grid")
  local bx, by, bz = dims(cfg.block, "block")
  if not (okdim(gx) and okdim(gy) and okdim(gz) and okdim(bx) and okdim(by) and okdim(bz)) then
    return do_launch(self, cfg, {]] .. as .. "}, " .. n .. [[)
  end
  local stream = cfg.stream
  local ts = type(stream)
  if ts == "table" then stream = stream.handle
  elseif ts ~= "nil" and ts ~= "cdata" then return do_launch(self, cfg, {]] .. as .. "}, " .. n .. [[) end
  if C.cute_cuda_launch(e.fn, gx, gy, gz, bx, by, bz, sm, stream, e.params, cu_err) ~= 0 then
    fail_launch(self)
  end
end]]
  f = assert(loadstring(table.concat(src, "\n"), "=[cute launch " .. n .. "]"))(
    arg_key, ENTRY, dims, okdim, drv, cu_err, do_launch, function(self)
      error(("%s: cute.kernel %s: launch failed: %s"):format((tr.where()), self.name, ffi.string(cu_err[0].msg)), 0)
    end)
  fast_launchers[n] = f
  return f
end
-- (kept separate from make_fast_launcher: a function that creates closures
-- cannot be compiled by LuaJIT's JIT, and this one is on the hot path)
local function fast_launcher(n) return fast_launchers[n] or make_fast_launcher(n) end

-- Tests: route the launch calls (cute_cuda_launch, cute_cuda_launch_cluster,
-- cute_cuda_func_set_max_dynamic_smem) to a fake; nil restores the driver.
function M._use_driver(d)
  drv = d or C
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

local function call_launch(self, cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...)
  if select("#", ...) > 0 then
    local args = { a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ... }
    return do_launch(self, cfg, args, select("#", ...) + 16)
  end
  local n = nargs16(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
  return fast_launcher(n)(self, cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
end

local Launcher = {}
Launcher.__call = function(l, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...)
  if select("#", ...) > 0 then return call_launch(l.k, l.cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...) end
  return call_launch(l.k, l.cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
end

-- k:launch(cfg) returns a callable taking the kernel's arguments.
function Kernel:launch(cfg)
  check_self(self, "launch")
  sp.check_cfg(self, cfg)
  local l = self._launcher
  if not l then
    l = setmetatable({ k = self }, Launcher)
    self._launcher = l
  end
  l.cfg = cfg
  return l
end

-- direct form: k(cfg, args...)
Kernel.__call = function(self, cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...)
  if type(cfg) ~= "table" then sp.check_cfg(self, cfg) end
  if select("#", ...) > 0 then return call_launch(self, cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, ...) end
  return call_launch(self, cfg, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
end

-- the loaded entry for args (compiling if needed), e.g. to read attributes
function Kernel:entry(...)
  check_self(self, "entry")
  return get_entry(self, { ... }, sp.count(...))
end

-- Launches load PTX and let the driver JIT it: measured faster for a first call
-- than running ptxas as a process (docs/BENCHMARKS.md), and the driver caches
-- the result on disk.  opts.cubin = true (or cute.kernel_defaults.cubin) uses
-- ptxas; k:compile() always runs ptxas when it is present (for its report).
M.default_cubin = false
-- background LLVM warm-up at the first cute.kernel (CUTE_NO_WARMUP=1 turns it off)
M.warmup = os.getenv("CUTE_NO_WARMUP") == nil
return M
