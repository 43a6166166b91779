-- cute.compile: the one Lua translator from a table of compile options to the
-- C option object (include/cute_compile.h), the device's architecture, and
-- the one shape of a compile result, for cute.kernel and cute.ir alike.
--
--   local o = compile.options({opt_level = 2, keep = {"ptx", "sass"}}, "cute.kernel")
--   o.key                 -- canonical text of every option that changes the binary
--   o.values.opt_level    -- 2 (every option, typed)
--   local cc, status = compile.run(ir, o)
--   local r = compile.result(cc)   -- {ir, llvm, ptx, cubin, sass, ptxas_log, kernels, info, times, stages}
--
-- docs/COMPILE.md lists the options; the table itself is in src/compile_opts.h
-- and reaches Lua through reflection (cute_compile_opt_info): nothing here
-- names an option except the renamed old spellings.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local M = {}

-- the option table, reflected from C: list of { name, type, default, env, doc, binary }
local specs, by_name = {}, {}
for i = 0, C.cute_compile_opt_count() - 1 do
  local function f(k) return ffi.string(C.cute_compile_opt_info(i, k)) end
  local s = { name = f(C.CUTE_OPT_NAME), type = f(C.CUTE_OPT_TYPE), default = f(C.CUTE_OPT_DEFAULT),
    env = f(C.CUTE_OPT_ENV), doc = f(C.CUTE_OPT_DOC), binary = f(C.CUTE_OPT_BINARY) == "1" }
  specs[#specs + 1] = s
  by_name[s.name] = s
end
M.specs = specs

local names = {}
for i, s in ipairs(specs) do names[i] = s.name end
local valid = table.concat(names, ", ")

-- old spellings: an error that says the new name
M.renamed = { opt = "opt_level", ptx = "ptx_version", ptxas = "use_ptxas", cubin = "use_ptxas",
  max_threads = "max_threads_per_block", min_blocks = "min_blocks_per_sm", maxrregcount = "max_registers",
  no_verify = "verify", fastmath = "fast_math" }

local function fail(what, msg) cf.fail(("%s: %s"):format(what, msg)) end

-- a Lua value as the option's text, type-checked against the reflected type
local function as_text(what, s, v)
  local t, tv = s.type, type(v)
  local function bad(expect)
    fail(what, ("compile option '%s': expected %s, got %s %s"):format(s.name, expect, tv, tostring(v)))
  end
  if t == "boolean" then
    if tv ~= "boolean" then bad("a boolean") end
    return v and "true" or "false"
  elseif t == "integer" then
    if tv ~= "number" or v % 1 ~= 0 then bad("an integer") end
    return ("%d"):format(v)
  elseif t == "list" then
    if tv == "string" then return v end
    if tv ~= "table" then bad("a list of strings") end
    for i = 1, #v do
      if type(v[i]) ~= "string" or v[i]:find(",", 1, true) then bad("a list of strings (without commas)") end
    end
    return table.concat(v, ",")
  else -- arch, string
    if tv ~= "string" then bad("a string") end
    return v
  end
end

---------------------------------------------------------------------------
-- the device's architecture (cute_arch_for_cc), announced once when the
-- device is newer than every target the code generator can emit
---------------------------------------------------------------------------
M.announce = function(line) io.stderr:write(line, "\n") end
local device_archs = {} -- device ordinal -> { arch =, portable = description or nil } or false
-- M.device_arch([ordinal]): the target of a device (default: the current
-- one), false without a GPU; second result: its description when it runs
-- the portable target (also left in M.portable_device for messages)
function M.device_arch(ordinal)
  local ok, rt = pcall(require, "cute.runtime")
  local tc = package.loaded["cute.target_cpu"]
  if tc and tc.active then return tc.arch end -- (the CPU target: the newest arch, so that every kernel traces)
  if not (ok and rt.available()) then return false end
  if ordinal == nil then
    -- the runtime's device (cute.set_device), without creating a context here
    ordinal = rt.context.device
    if type(ordinal) ~= "number" or ordinal < 0 then ordinal = 0 end
  end
  if device_archs._driver ~= rt._driver then device_archs = { _driver = rt._driver } end -- (a driver swap: asked again)
  local c = device_archs[ordinal]
  if c == nil then
    c = false
    local okd, d = pcall(rt.device, ordinal)
    local portable = ffi.new("int[1]")
    local a = okd and C.cute_arch_for_cc(d.cc[1], d.cc[2], portable) or nil
    if a ~= nil then
      c = { arch = ffi.string(a) }
      if portable[0] ~= 0 then
        c.portable = ("%s (compute capability %d.%d)"):format(d.name, d.cc[1], d.cc[2])
        M.announce(("cute: %s is newer than every target LLVM 19 emits (%s): kernels are compiled for the " ..
          "portable %s and JIT-compiled by the driver; arch-specific (sm_90a) features are unavailable")
          :format(c.portable, ffi.string(C.cute_arch_list()), c.arch))
      end
    end
    device_archs[ordinal] = c
  end
  if not c then return false end
  M.portable_device = c.portable
  return c.arch, c.portable
end
-- tests: the rule alone
function M.arch_for_cc(major, minor)
  local portable = ffi.new("int[1]")
  local a = C.cute_arch_for_cc(major, minor, portable)
  return a ~= nil and ffi.string(a) or nil, portable[0] ~= 0
end
function M.default_arch() return by_name.arch.default end

---------------------------------------------------------------------------
-- options
---------------------------------------------------------------------------
local Options = {}
Options.__index = Options
M.Options = Options
local function frozen() cf.fail("compile options are frozen (copied at creation): make new ones, e.g. k:with{...}") end
-- a frozen Options over the C object h: fields h, key, values (read-only),
-- portable (the arch is the portable target of a device newer than every
-- target), from_device (the arch was not given: it follows the device)
local function make(h, vals, portable, from_device)
  local values = setmetatable({}, { __index = vals, __newindex = frozen })
  local data = { h = h, key = ffi.string(C.cute_compile_opts_key(h)), values = values, _v = vals, portable = portable,
    from_device = from_device }
  return setmetatable({}, { __index = function(_, k) local v = data[k]; if v == nil then return Options[k] end; return v end,
    __newindex = frozen, __tostring = function() return "compile options {" .. data.key .. "}" end,
    __metatable = Options })
end

-- M.options(t, what [, extra]): t a table of options (nil: none), what the
-- operation named in errors ("cute.kernel"), extra a set of other keys the
-- caller accepts (ignored here).  Explicit options beat the environment;
-- arch defaults to the device's.  Returns a frozen Options.
function M.options(t, what, extra, defaults)
  if t ~= nil and type(t) ~= "table" then fail(what, "options must be a table, got " .. type(t)) end
  local h = C.cute_compile_opts_new()
  if h == nil then fail(what, "out of memory") end
  h = ffi.gc(h, C.cute_compile_opts_free)
  local function set(k, text)
    if C.cute_compile_opts_set(h, k, text, cf.err) ~= 0 then fail(what, ffi.string(cf.err[0].msg)) end
  end
  for k, v in pairs(defaults or {}) do set(k, as_text(what, by_name[k], v)) end
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = t[k]
    if not (extra and extra[k]) then
      local s = by_name[k]
      if not s then
        if M.renamed[k] then
          fail(what, ("compile option '%s' is now called '%s'"):format(k, M.renamed[k]))
        end
        fail(what, ("compile option '%s': unknown; valid options: %s"):format(k, valid))
      end
      set(k, as_text(what, s, v))
    end
  end
  if C.cute_compile_opts_apply_env(h, cf.err) ~= 0 then fail(what, ffi.string(cf.err[0].msg)) end
  local from_device, portable
  if C.cute_compile_opts_source(h, "arch") == C.CUTE_OPT_FROM_DEFAULT then
    local a, port = M.device_arch()
    if a then set("arch", a); from_device, portable = true, port ~= nil end
  end
  local values = {}
  for _, s in ipairs(specs) do
    local txt = ffi.string(C.cute_compile_opts_get(h, s.name))
    local v = txt
    if s.type == "boolean" then v = txt == "true"
    elseif s.type == "integer" then v = tonumber(txt)
    elseif s.type == "list" then
      v = {}
      for item in txt:gmatch("[^,]+") do v[#v + 1] = item end
    end
    values[s.name] = v
  end
  return make(h, values, portable or nil, from_device)
end

-- the same options with some changed (a new frozen object)
-- (with flags: portable and from_device of the result)
local function derive(self, changes, what, portable, from_device)
  local h = C.cute_compile_opts_copy(self.h)
  if h == nil then fail(what, "out of memory") end
  h = ffi.gc(h, C.cute_compile_opts_free)
  for k, v in pairs(changes) do
    if C.cute_compile_opts_set(h, k, as_text(what, by_name[k], v), cf.err) ~= 0 then fail(what, ffi.string(cf.err[0].msg)) end
  end
  local values = {}
  for k, v in pairs(self._v) do values[k] = v end
  for k, v in pairs(changes) do values[k] = v end
  return make(h, values, portable, from_device)
end

function Options:with(changes, what)
  if changes.arch ~= nil then return derive(self, changes, what, nil, nil) end
  return derive(self, changes, what, self.portable, self.from_device)
end

-- the options to compile with now: an arch taken from the device follows the
-- current device (kernels keep one cache per device); else self
function Options:for_current_device(what)
  if not self.from_device and self:given("arch") then return self end
  local a, port = M.device_arch()
  if not a or a == self.values.arch then return self end
  return derive(self, { arch = a }, what, port ~= nil or nil, true)
end

-- the option was given explicitly (or by its environment variable)
function Options:given(name) return C.cute_compile_opts_source(self.h, name) ~= C.CUTE_OPT_FROM_DEFAULT end

---------------------------------------------------------------------------
-- compiling and the result
---------------------------------------------------------------------------
-- compile ir (cdata) with o (Options); returns cc (gc'ed, or nil), status, message
-- (the disk cache, docs/CACHE.md: cute_compile looks the compile up and
-- stores it; an unsafe cache directory is announced once per process)
M.cache_warned = false
function M.run(ir, o)
  local out = ffi.new("cute_compiled*[1]")
  local st = C.cute_compile(ir, o.h, out, cf.err)
  local cc = out[0] ~= nil and ffi.gc(out[0], C.cute_compiled_free) or nil
  local msg = st ~= 0 and ffi.string(cf.err[0].msg) or nil
  if cc and not M.cache_warned and ffi.string(C.cute_compiled_cache_status(cc)) == "refused" then
    M.cache_warned = true
    local where = cf.where()
    M.announce((where and (where .. ": ") or "") .. "cute: " .. ffi.string(C.cute_compiled_cache_detail(cc)) ..
      " (compiling without the disk cache)")
  end
  return cc, st, msg
end

local function s(p) return p ~= nil and ffi.string(p) or nil end

local Result = {}
Result.__index = Result
Result.__tostring = function(r)
  local ks = {}
  for name in pairs(r.kernels) do ks[#ks + 1] = name end
  table.sort(ks)
  return ("compiled {%s} for %s: %s%s"):format(table.concat(ks, ", "), r.arch,
    r.cubin and ("cubin " .. #r.cubin .. " bytes") or "PTX for the driver JIT",
    r.failed_stage and (", failed at " .. r.failed_stage) or "")
end
M.Result = Result

-- the one result shape:
--   ir, llvm, ptx, sass, ptxas_log  stage texts (nil when not run or not kept)
--   cubin                           the cubin bytes as a string (nil: none)
--   cache = {status, detail, key}   what the disk cache did (docs/CACHE.md)
--   arch, key                       the target and the options key
--   kernels = {name = info}, info   per kernel; info is the first kernel's
--   times = {<stage> = us, total = us}, stages = {{name, time_us, text, ran}...}
--   failed_stage                    the stage that failed (nil: none)
function M.result(cc)
  local r = setmetatable({ kernels = {}, times = {}, stages = {} }, Result)
  r.ir = s(C.cute_compiled_ir_text(cc))
  r.llvm = s(C.cute_compiled_llvm_ir(cc))
  r.ptx = s(C.cute_compiled_ptx(cc))
  r.ptxas_log = s(C.cute_compiled_ptxas_log(cc))
  r.arch = s(C.cute_compiled_arch(cc))
  r.key = s(C.cute_compiled_key(cc))
  r.failed_stage = s(C.cute_compiled_failed_stage(cc))
  local sz = ffi.new("size_t[1]")
  local cb = C.cute_compiled_cubin(cc, sz)
  r.cubin = cb ~= nil and ffi.string(cb, sz[0]) or nil
  local total = 0
  for i = 0, C.cute_compiled_stage_count(cc) - 1 do
    local name = ffi.string(C.cute_compiled_stage_name(cc, i))
    local us = C.cute_compiled_stage_time_us(cc, i)
    r.stages[#r.stages + 1] = { name = name, time_us = us, text = s(C.cute_compiled_stage_text(cc, i)),
      ran = C.cute_compiled_stage_ran(cc, i) ~= 0 }
    r.times[name] = us
    total = total + us
  end
  r.times.total = total
  r.sass = r.stages[8] and r.stages[8].text
  -- the disk cache: status (hit, stored, off, skipped, refused, failed,
  -- none), detail (why) and the entry's key
  r.cache = { status = ffi.string(C.cute_compiled_cache_status(cc)), detail = ffi.string(C.cute_compiled_cache_detail(cc)),
    key = ffi.string(C.cute_compiled_cache_key(cc)) }
  for i = 0, C.cute_compiled_kernel_count(cc) - 1 do
    local name = ffi.string(C.cute_compiled_kernel_name(cc, i))
    local ki = ffi.new("cute_kernel_info")
    C.cute_compiled_info(cc, name, ki)
    local t = {
      regs = ki.regs, smem_static = ki.smem_static, smem = ki.smem_static, smem_dynamic = ki.smem_dynamic,
      smem_optin = ki.smem_optin ~= 0, spill_stores = ki.spill_stores, spill_loads = ki.spill_loads,
      stack = ki.stack, cmem = ki.cmem, max_threads = ki.max_threads, min_blocks = ki.min_blocks,
    }
    r.kernels[name] = t
    r.info = r.info or t
  end
  return r
end

-- the SASS of a compiled result (disassembling on first use); errors at the
-- user's line naming what was searched when no disassembler exists
function M.sass(cc, what)
  local p = C.cute_compiled_sass(cc, cf.err)
  if p == nil then fail(what, ffi.string(cf.err[0].msg)) end
  return ffi.string(p)
end

-- the message of a failed compile, with the device when it runs portable PTX
function M.explain(o, msg)
  if o.portable and M.portable_device then
    return ("%s\n  (device %s runs the portable target %s: arch-specific features such as sm_90a " ..
      "instructions are not available on it)"):format(msg, M.portable_device, o.values.arch)
  end
  return msg
end

return M
