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

M.T = {
  void = C.CUTE_T_VOID, i1 = C.CUTE_T_I1, i8 = C.CUTE_T_I8, i16 = C.CUTE_T_I16,
  i32 = C.CUTE_T_I32, i64 = C.CUTE_T_I64, u8 = C.CUTE_T_U8, u16 = C.CUTE_T_U16,
  u32 = C.CUTE_T_U32, u64 = C.CUTE_T_U64, f16 = C.CUTE_T_F16, bf16 = C.CUTE_T_BF16,
  f32 = C.CUTE_T_F32, f64 = C.CUTE_T_F64,
}
M.AS = { generic = 0, global = 1, shared = 3, const = 4, ["local"] = 5 }

local opcode = {}
for i = 0, C.CUTE_IR_OP_COUNT_ - 1 do
  opcode[ffi.string(C.cute_ir_op_name(i))] = i
end
M.opcode = opcode

local function fail(self, level)
  error(ffi.string(C.cute_ir_error(self.h)), (level or 2) + 1)
end

local function chk(self, r)
  if r == 0 then fail(self, 2) end
  return r
end

function M.new()
  local h = C.cute_ir_new()
  if h == nil then error("cute.ir: out of memory", 2) end
  return setmetatable({ h = ffi.gc(h, C.cute_ir_free) }, IR)
end

-- Parse IR text into a new context (checks: false lets malformed IR through
-- to the verifier).
function M.parse(text, checks)
  local m = M.new()
  if checks == false then C.cute_ir_set_checks(m.h, 0) end
  if C.cute_ir_parse(m.h, text, cf.err) ~= 0 then cf.raise(2) end
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
            error(("%s: unknown %s '%s'"):format(ffi.string(C.cute_ir_op_name(op)), ffi.string(key), v), 4)
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
  if not op then error("cute.ir: unknown op '" .. tostring(name) .. "'", 2) end
  args = args or {}
  local n = #args
  local buf = ffi.new("int32_t[?]", n > 0 and n or 1)
  for i = 1, n do buf[i - 1] = args[i] end
  local imm, imm2 = imms(op, o)
  local r = C.cute_ir_op(self.h, op, t and self:type(t) or 0, n, buf, imm, imm2)
  if r == 0 and C.cute_ir_status(self.h, nil) ~= 0 then fail(self) end
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
  if r == 0 and C.cute_ir_status(self.h, nil) ~= 0 then fail(self) end
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
  if r == 0 and C.cute_ir_status(self.h, nil) ~= 0 then fail(self) end
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

-- Compile: opts {arch="sm_90a", ptx=80, opt=3, ptxas=true, ftz=false, verify=true, lineinfo=false}
-- Returns a table {ir, llvm, ptx, ptxas_log, cubin (string or nil), kernels =
-- {name = info}, info (first kernel), times}; on error nil, message, code, partial.
function M.compile(self, o)
  o = o or {}
  local co = ffi.new("cute_compile_opts")
  co.arch = o.arch or "sm_90a"
  co.ptx_version = o.ptx or 0
  co.opt_level = o.opt or 3
  co.flags = (o.ptxas == false and C.CUTE_C_NO_PTXAS or 0) + (o.ftz and C.CUTE_C_FTZ or 0)
      + (o.verify == false and C.CUTE_C_NO_VERIFY or 0) + (o.lineinfo and C.CUTE_C_LINEINFO or 0)
  co.libdevice = o.libdevice
  local out = ffi.new("cute_compiled*[1]")
  local st = C.cute_compile(self.h, co, out, cf.err)
  local cc = out[0] ~= nil and ffi.gc(out[0], C.cute_compiled_free) or nil
  local r = {}
  if cc ~= nil then
    r.ir = s(C.cute_compiled_ir_text(cc))
    r.llvm = s(C.cute_compiled_llvm_ir(cc))
    r.ptx = s(C.cute_compiled_ptx(cc))
    r.ptxas_log = s(C.cute_compiled_ptxas_log(cc))
    local sz = ffi.new("size_t[1]")
    local cb = C.cute_compiled_cubin(cc, sz)
    r.cubin = cb ~= nil and ffi.string(cb, sz[0]) or nil
    r.kernels = {}
    for i = 0, C.cute_compiled_kernel_count(cc) - 1 do
      local name = ffi.string(C.cute_compiled_kernel_name(cc, i))
      local ki = ffi.new("cute_kernel_info")
      C.cute_compiled_info(cc, name, ki)
      local t = {
        regs = ki.regs, smem_static = ki.smem_static, smem_dynamic = ki.smem_dynamic,
        smem_optin = ki.smem_optin ~= 0, spill_stores = ki.spill_stores, spill_loads = ki.spill_loads,
        stack = ki.stack, cmem = ki.cmem, max_threads = ki.max_threads, min_blocks = ki.min_blocks,
      }
      r.kernels[name] = t
      r.info = r.info or t
    end
    local tm = ffi.new("cute_compile_times")
    C.cute_compiled_times(cc, tm)
    r.times = {
      verify = tm.verify_us, build = tm.build_us, llvm_verify = tm.llvm_verify_us, link = tm.link_us,
      opt = tm.opt_us, emit = tm.emit_us, ptxas = tm.ptxas_us, total = tm.total_us,
    }
  end
  if st ~= 0 then return nil, ffi.string(cf.err[0].msg), st, r end
  return r
end
IR.compile = M.compile

function M.ptxas_path() return s(C.cute_ptxas_path()) end

return M
