-- cute.ir: a thin Lua wrapper over the kernel IR builder and the compiler
-- (include/cute_ir.h).  Used by specs, the fuzzer and the bench; the tracer
-- may call cf.C directly on its hot path.
--
--   local IR = require("cute.ir")
--   local m = IR.new()
--   m:func("vadd", "kernel")
--   local a = m:param("ptr.global.f32", "a", {noalias = true, readonly = true, align = 16})
--   local i = m:sreg("tid.x")
--   local v = m:load(m:gep(a, i), {hint = "nc"})
--   m:store(m:gep(a, i), m:add(v, v))
--   m:ret()
--   print(m:text()); local r = m:compile{arch = "sm_90a"}  -- r.ptx, r.info.regs ...
--
-- Every op of the IR is a method named like the text format (dots become _):
--   m:<op>(operands..., [opts]) where opts = {type = <type>, <imm key> = value}
-- with immediates keyed as printed ("hint", "align", "mode", "scope", "width",
-- "reg", "op", "unroll", "count", "id", "lane", "rnd", "math").
-- Operands are value refs (plain numbers); constants come from m:k(type, v).
-- Errors raise with the C message.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C

local M = {}
local IR = {}
IR.__index = IR

-- scalar type refs by IR name (and void), address spaces: from cute.dtype
local dt = require("cute.dtype")
M.T = { void = C.CUTE_T_VOID }
for code, info in pairs(dt.scalars) do M.T[info.ir] = code end
M.AS = dt.spaces

local opcode = {}
for i = 0, C.CUTE_IR_OP_COUNT_ - 1 do
  opcode[ffi.string(C.cute_ir_op_name(i))] = i
end
M.opcode = opcode

-- errors: the context's sticky error, at the user's line (cute.ffi)
local function fail(self) cf.ir_fail(self.h) end

local function chk(self, r)
  if r == 0 then fail(self) end
  return r
end

-- tostring(m): "cute.ir module {vadd, helper}" (its functions by name)
IR.__tostring = function(self)
  local names = {}
  for i = 1, C.cute_ir_func_count(self.h) do
    local p = C.cute_ir_func_name(self.h, i)
    names[#names + 1] = p ~= nil and ffi.string(p) or "?"
  end
  local bad = C.cute_ir_status(self.h, nil) ~= 0 and " (failed: see its error)" or ""
  return ("cute.ir module {%s}%s"):format(table.concat(names, ", "), bad)
end

function M.new()
  local h = C.cute_ir_new()
  if h == nil then cf.fail("cute.ir: out of memory") end
  return setmetatable({ h = ffi.gc(h, C.cute_ir_free) }, IR)
end

-- Parse IR text into a new context (checks: false lets malformed IR through
-- to the verifier).
function M.parse(text, checks)
  local m = M.new()
  if checks == false then C.cute_ir_set_checks(m.h, 0) end
  cf.check(C.cute_ir_parse(m.h, text, cf.err))
  return m
end

-- Type from a name ("f32", "u32x4", "ptr.global.f32") or a ref.
function IR:type(t)
  if type(t) == "number" then return t end
  local r = M.T[t] or C.cute_ir_type_parse(self.h, t)
  return chk(self, r)
end
function IR:vec(elem, lanes) return chk(self, C.cute_ir_t_vec(self.h, self:type(elem), lanes)) end
function IR:ptr(elem, space) return chk(self, C.cute_ir_t_ptr(self.h, self:type(elem), M.AS[space or "global"] or space)) end
-- register fragment elem[n] ("f32[128]", "f16x2[4]") and by-value parameter bytes<size,align>
function IR:array(elem, n) return chk(self, C.cute_ir_t_array(self.h, self:type(elem), n)) end
function IR:bytes(size, align) return chk(self, C.cute_ir_t_bytes(self.h, size, align or 1)) end
function IR:type_name(t) return ffi.string(C.cute_ir_type_name(self.h, self:type(t))) end
function IR:type_of(v) return C.cute_ir_value_type(self.h, v) end

function IR:func(name, kind, ret)
  local k = (kind == nil or kind == "kernel") and C.CUTE_FN_KERNEL or C.CUTE_FN_DEVICE
  return chk(self, C.cute_ir_func(self.h, name, k, ret and self:type(ret) or 0))
end
function IR:select_func(fn) if C.cute_ir_func_select(self.h, fn) ~= 0 then fail(self) end end
function IR:param(t, name, o)
  o = o or {}
  local fl = (o.noalias and C.CUTE_P_NOALIAS or 0) + (o.readonly and C.CUTE_P_READONLY or 0)
    + (o.grid_constant and C.CUTE_P_GRID_CONSTANT or 0)
  return chk(self, C.cute_ir_param(self.h, self:type(t), name, fl, o.align or 0))
end
function IR:launch_bounds(maxt, minb)
  if C.cute_ir_launch_bounds(self.h, maxt or 0, minb or 0) ~= 0 then fail(self) end
end
function IR:dyn_smem(bytes) if C.cute_ir_dyn_smem(self.h, bytes) ~= 0 then fail(self) end end
function IR:loc(file, line) C.cute_ir_set_loc(self.h, file, line or 0) end
function IR:checks(on) C.cute_ir_set_checks(self.h, on and 1 or 0) end
function IR:status()
  local st = C.cute_ir_status(self.h, cf.err)
  if st == 0 then return true end
  return false, ffi.string(cf.err[0].msg), st
end

function IR:const(t, v)
  t = self:type(t)
  local k = C.cute_ir_type_kind(self.h, t)
  if k >= C.CUTE_T_F16 and k <= C.CUTE_T_F64 then return chk(self, C.cute_ir_const_float(self.h, t, v)) end
  if type(v) == "boolean" then v = v and 1 or 0 end
  return chk(self, C.cute_ir_const_int(self.h, t, v))
end

local function imms(op, o)
  local imm, imm2 = 0, 0
  if not o then return 0, 0 end
  for slot = 0, 1 do
    local key = C.cute_ir_imm_key(op, slot)
    if key ~= nil then
      local v = o[ffi.string(key)]
      if v ~= nil then
        if type(v) == "string" then
          local out = ffi.new("int64_t[1]")
          if C.cute_ir_imm_lookup(op, slot, v, out) ~= 0 then
            cf.fail(("%s: unknown %s '%s'"):format(ffi.string(C.cute_ir_op_name(op)), ffi.string(key), v))
          end
          v = out[0]
        elseif type(v) == "boolean" then
          v = v and 1 or 0
        end
        if slot == 0 then imm = v else imm2 = v end
      end
    end
  end
  return imm, imm2
end

-- Generic: m:emit(opname, type or nil, {operands}, {imm opts})
function IR:emit(name, t, args, o)
  local op = opcode[name]
  if not op then cf.fail("cute.ir: unknown op '" .. tostring(name) .. "'") end
  args = args or {}
  local n = #args
  local buf = ffi.new("int32_t[?]", n > 0 and n or 1)
  for i = 1, n do buf[i - 1] = args[i] end
  local imm, imm2 = imms(op, o)
  local r = C.cute_ir_op(self.h, op, t and self:type(t) or 0, n, buf, imm, imm2)
  cf.ir_check(self.h, r)
  return r
end

-- Ops with their own entry points (strings, functions, control flow).
function IR:sreg(name) return self:emit("sreg", nil, {}, { reg = name }) end
function IR:cvt(t, v, rnd) return self:emit("cvt", t, { v }, { rnd = rnd }) end
function IR:bitcast(t, v) return self:emit("bitcast", t, { v }) end
function IR:ptrcast(t, v) return self:emit("ptrcast", t, { v }) end
function IR:var(t, init) return chk(self, C.cute_ir_var(self.h, t and self:type(t) or 0, init or 0)) end
function IR:shared(elem, count, align) return chk(self, C.cute_ir_shared(self.h, self:type(elem), count, align or 0)) end
function IR:dynshared(elem, align) return chk(self, C.cute_ir_dyn_shared(self.h, self:type(elem), align or 0)) end
function IR:localarr(elem, count, align) return chk(self, C.cute_ir_local(self.h, self:type(elem), count, align or 0)) end
function IR:bar(id, count) return self:emit("bar", nil, {}, { id = id or 0, count = count or 0 }) end
function IR:call(fn, ...)
  local a = { ... }
  local buf = ffi.new("int32_t[?]", #a > 0 and #a or 1)
  for i = 1, #a do buf[i - 1] = a[i] end
  local r = C.cute_ir_call(self.h, fn, #a, buf)
  cf.ir_check(self.h, r)
  return r
end
function IR:printf(fmt, ...)
  local a = { ... }
  local buf = ffi.new("int32_t[?]", #a > 0 and #a or 1)
  for i = 1, #a do buf[i - 1] = a[i] end
  return chk(self, C.cute_ir_printf(self.h, fmt, #a, buf))
end
function IR:assert(cond, msg) return chk(self, C.cute_ir_assert(self.h, cond, msg)) end
function IR:asm(t, ptx, cons, ...)
  local a = { ... }
  local buf = ffi.new("int32_t[?]", #a > 0 and #a or 1)
  for i = 1, #a do buf[i - 1] = a[i] end
  local r = C.cute_ir_asm(self.h, t and self:type(t) or 0, ptx, cons, #a, buf)
  cf.ir_check(self.h, r)
  return r
end
function IR:for_(lo, hi, step, unroll)
  local u = unroll == "full" and -1 or unroll == "disable" and -2 or unroll or 0
  return chk(self, C.cute_ir_for(self.h, lo, hi, step, u))
end
function IR:if_(cond, t)
  local r = C.cute_ir_if(self.h, cond, t and self:type(t) or 0)
  if r == 0 then fail(self) end
  return r
end
-- Counted loop with loop-carried values (sugar over var/vget/vset, which
-- SROA/mem2reg turn into phis):
--   local s, p = m:for_carry(lo, hi, step, {s0, p0}, function(i, s, p) return m:add(s, i), p end)
function IR:for_carry(lo, hi, step, inits, body, unroll)
  local vars, cur, out = {}, {}, {}
  for k, v in ipairs(inits) do vars[k] = self:var(nil, v) end
  local i = self:for_(lo, hi, step, unroll)
  for k, v in ipairs(vars) do cur[k] = self:vget(v) end
  local nxt = { body(i, unpack(cur, 1, #vars)) }
  for k, v in ipairs(vars) do self:vset(v, nxt[k]) end
  self:end_()
  for k, v in ipairs(vars) do out[k] = self:vget(v) end
  return unpack(out, 1, #vars)
end
function IR:else_() chk(self, C.cute_ir_else(self.h)) end
function IR:while_() chk(self, C.cute_ir_while(self.h)) end
function IR:do_(cond) chk(self, C.cute_ir_do(self.h, cond)) end
function IR:yield(v) chk(self, C.cute_ir_yield(self.h, v)) end
function IR:end_() chk(self, C.cute_ir_end(self.h)) end
function IR:ret(v) chk(self, C.cute_ir_ret(self.h, v or 0)) end

-- every other op: m:add(a, b), m:load(p, {hint="nc"}), m:shfl(v, lane, mask, {mode="bfly"})
-- (a trailing _ is dropped, so m:not_(x), m:and_(a, b), m:or_(a, b) work)
setmetatable(IR, { __index = function(_, name)
  local opname = (name:gsub("_$", ""):gsub("_", "."))
  if not opcode[opname] then return nil end
  return function(self, ...)
    local a = { ... }
    local o
    if type(a[#a]) == "table" then o = table.remove(a) end
    return self:emit(opname, o and o.type, a, o)
  end
end })

-- Constants: m:k("f32", 1.5)
function IR:k(t, v) return self:const(t, v) end

function IR:text() return ffi.string(C.cute_ir_print(self.h)) end
function IR:verify()
  if C.cute_ir_verify(self.h, cf.err) ~= 0 then return false, ffi.string(cf.err[0].msg) end
  return true
end

local function s(p) return p ~= nil and ffi.string(p) or nil end

-- Compile: opts are the compile options of docs/COMPILE.md (arch, opt_level,
-- use_ptxas, lineinfo, ftz, fast_math, keep, dump_dir, ...); ptxas assembles
-- a cubin when present unless use_ptxas = false.  Returns the result table of
-- cute.compile (ir, llvm, ptx, cubin bytes, sass, ptxas_log, kernels, info,
-- times, stages); on error nil, message, code, partial result.
function M.compile(self, o)
  local compile = require("cute.compile")
  local opts = compile.options(o, "cute.ir compile")
  if not opts:given("use_ptxas") and C.cute_ptxas_path() ~= nil then
    opts = opts:with({ use_ptxas = true }, "cute.ir compile")
  end
  local cc, st, msg = compile.run(self.h, opts)
  local r = cc and compile.result(cc) or {}
  if st ~= 0 then return nil, msg, st, r end
  return r
end
IR.compile = M.compile

function M.ptxas_path() return s(C.cute_ptxas_path()) end

return M
