-- cute.arch and friends: GPU operations available inside kernels.
--   cute.arch.thread_idx() -> x, y, z    (also block_idx, block_dim, grid_dim)
--   cute.arch.lane_idx(), warp_idx(), sync_threads(), barrier(id, n), ...
--   cute.math.exp(x [, fast]) ..., cute.printf(fmt, ...), cute.div, cute.min, ...
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")

local T = tr.T
local is_value, fail, setloc, mk, lift = tr.is_value, tr.fail, tr.setloc, tr.mk, tr.lift
local OP = tr.OP

local arch = {}
local M = { arch = arch }

local function S()
  tr.need_trace("this cute.arch operation")
  return tr.state()
end

-- special registers come back as the IR's type (u32); the DSL works in i32
local function sreg(r, div)
  local s = S()
  setloc()
  local ref = C.cute_ir_sreg(s.ir, r)
  local v = mk(ref, C.cute_ir_value_type(s.ir, ref), div)
  if v.t ~= T.I32 then v = tr.cvt(v, T.I32) end
  return v
end

local function sreg3(base)
  return function()
    return sreg(base), sreg(base + 1), sreg(base + 2)
  end
end
arch.thread_idx = sreg3(C.CUTE_SREG_TID_X)
arch.block_idx = sreg3(C.CUTE_SREG_CTAID_X)
arch.block_dim = sreg3(C.CUTE_SREG_NTID_X)
arch.grid_dim = sreg3(C.CUTE_SREG_NCTAID_X)
function arch.lane_idx() return sreg(C.CUTE_SREG_LANEID) end
-- warp index within the block (tid.x / 32 for 1-D blocks; linearised otherwise)
function arch.warp_idx()
  local x, y, z = arch.thread_idx()
  local nx, ny = sreg(C.CUTE_SREG_NTID_X), sreg(C.CUTE_SREG_NTID_Y)
  local lin = x + nx * (y + ny * z)
  return tr.binop(OP.DIV, lin, 32)
end
function arch.smid() return sreg(C.CUTE_SREG_SMID) end
local function sreg64(r)
  local s = S(); setloc()
  local ref = C.cute_ir_sreg(s.ir, r)
  return mk(ref, C.cute_ir_value_type(s.ir, ref))
end
function arch.clock64() return sreg64(C.CUTE_SREG_CLOCK64) end
function arch.globaltimer() return sreg64(C.CUTE_SREG_GLOBALTIMER) end

local function chk(ref)
  cf.ir_check(tr.state().ir, ref)
end

function arch.sync_threads()
  local s = S(); tr.pending_check(); setloc()
  chk(C.cute_ir_barrier(s.ir, 0, 0))
end
-- named barrier: barrier(id, nthreads)
function arch.barrier(id, n)
  local s = S(); setloc()
  if type(id) ~= "number" or (n ~= nil and type(n) ~= "number") then
    fail("cute.arch.barrier(id, nthreads): id and nthreads must be Lua numbers")
  end
  chk(C.cute_ir_barrier(s.ir, id, n or 0))
end
local scopes = { cta = C.CUTE_SCOPE_CTA, gpu = C.CUTE_SCOPE_GPU, sys = C.CUTE_SCOPE_SYS }
local function scope_of(x, what)
  local sc = scopes[x or "gpu"]
  if not sc then fail(("%s: scope must be 'cta', 'gpu' or 'sys', got %s"):format(what, tostring(x))) end
  return sc
end
function arch.fence(scope)
  local s = S(); setloc()
  chk(C.cute_ir_fence(s.ir, scope_of(scope, "cute.arch.fence")))
end
function arch.fence_cta() return arch.fence("cta") end
function arch.fence_gpu() return arch.fence("gpu") end
function arch.fence_sys() return arch.fence("sys") end

-- warp shuffles: shuffle_sync(v, lane [, mask [, width]]) etc.
local FULL = 0xffffffff
-- a lane mask: a Lua number is 32 bits, 0 .. 0xffffffff or negative (-1 = all lanes)
local function lane_mask(mask)
  if mask == nil then return lift(-1, T.I32) end
  if type(mask) == "number" and mask % 1 == 0 and mask >= -2 ^ 31 and mask < 2 ^ 32 then
    return lift(bit.tobit(mask), T.I32)
  end
  return lift(mask, T.I32)
end
local function shfl(mode)
  return function(v, lane, mask, width)
    local s = S()
    local val = lift(v)
    local ln = lift(lane, T.I32)
    local mk_ = lane_mask(mask)
    setloc()
    return mk(C.cute_ir_shfl(s.ir, mode, val.ref, ln.ref, mk_.ref, width or 32), val.t)
  end
end
arch.shuffle_sync = shfl(C.CUTE_SHFL_IDX)
arch.shuffle_sync_up = shfl(C.CUTE_SHFL_UP)
arch.shuffle_sync_down = shfl(C.CUTE_SHFL_DOWN)
arch.shuffle_sync_bfly = shfl(C.CUTE_SHFL_BFLY)

local function vote(mode, rt)
  return function(pred, mask)
    local s = S()
    local c = tr.condition(pred, "vote")
    if type(c) == "boolean" then c = tr.const(T.I1, c and 1 or 0) end
    local m = lane_mask(mask)
    setloc()
    return mk(C.cute_ir_vote(s.ir, mode, m.ref, c.ref), rt)
  end
end
arch.vote_all_sync = vote(C.CUTE_VOTE_ALL, T.I1)
arch.vote_any_sync = vote(C.CUTE_VOTE_ANY, T.I1)
arch.vote_uni_sync = vote(C.CUTE_VOTE_UNI, T.I1)
arch.vote_ballot_sync = vote(C.CUTE_VOTE_BALLOT, T.U32)

-- atomics on a tensor element: atomic_add(T, crd, v [, scope]) -> old value
local function target_ptr(Tn, crd, what)
  if not ten.is_tensor(Tn) then fail(what .. "(tensor, coordinate, value): first argument must be a tensor") end
  return Tn:ptr_at(crd)
end
local function atom(aop, name)
  return function(Tn, crd, v, scope)
    local s = S()
    local p = target_ptr(Tn, crd, "cute.arch." .. name)
    local val = lift(v, Tn.elem)
    if val.t ~= Tn.elem then val = tr.cvt(val, Tn.elem) end
    setloc()
    return mk(C.cute_ir_atom(s.ir, aop, p.ref, val.ref, scope_of(scope, "cute.arch." .. name)), Tn.elem)
  end
end
arch.atomic_add = atom(C.CUTE_ATOM_ADD, "atomic_add")
arch.atomic_min = atom(C.CUTE_ATOM_MIN, "atomic_min")
arch.atomic_max = atom(C.CUTE_ATOM_MAX, "atomic_max")
arch.atomic_and = atom(C.CUTE_ATOM_AND, "atomic_and")
arch.atomic_or = atom(C.CUTE_ATOM_OR, "atomic_or")
arch.atomic_xor = atom(C.CUTE_ATOM_XOR, "atomic_xor")
arch.atomic_exch = atom(C.CUTE_ATOM_EXCH, "atomic_exch")
function arch.atomic_cas(Tn, crd, cmp, v, scope)
  local s = S()
  local p = target_ptr(Tn, crd, "cute.arch.atomic_cas")
  local c, val = lift(cmp, Tn.elem), lift(v, Tn.elem)
  setloc()
  return mk(C.cute_ir_cas(s.ir, p.ref, c.ref, val.ref, scope_of(scope, "cute.arch.atomic_cas")), Tn.elem)
end

function arch.trap()
  local s = S(); setloc()
  chk(C.cute_ir_op(s.ir, C.CUTE_IR_TRAP, 0, 0, nil, 0, 0))
end
function arch.exit() return tr.return_() end

-- inline PTX: cute.arch.asm(result_dtype_or_nil, "ptx $0, $1;", "=r,r", args...)
function arch.asm(rtype, ptx, constraints, ...)
  local s = S()
  local t = rtype and (type(rtype) == "table" and tr.dtype_ir[rtype.name] or rtype) or 1
  local n = select("#", ...)
  local refs = ffi.new("int32_t[?]", math.max(n, 1))
  for i = 1, n do refs[i - 1] = lift((select(i, ...))).ref end
  setloc()
  local r = C.cute_ir_asm(s.ir, t, ptx, constraints, n, refs)
  if rtype then return mk(r, t) end
  chk(r)
end

---------------------------------------------------------------------------
-- math and helpers (cute.math.*, cute.*)
---------------------------------------------------------------------------
local math_ = {}
M.math = math_
local function float_of(x)
  local v = lift(x, T.F32)
  local info = tr.tinfo[v.t]
  if not (info and info.float) then v = tr.cvt(v, T.F32) end
  return v
end
for name, op in pairs({ sqrt = OP.SQRT, rsqrt = OP.RSQRT, rcp = OP.RCP, exp = OP.EXP, exp2 = OP.EXP2,
  log = OP.LOG, log2 = OP.LOG2, sin = OP.SIN, cos = OP.COS, tanh = OP.TANH, erf = OP.ERF }) do
  math_[name] = function(x, fast)
    if type(x) == "number" and not tr.active() then return math[name] and math[name](x) end
    local s = S()
    local v = float_of(x)
    setloc()
    return mk(C.cute_ir_math(s.ir, op, v.ref, fast and 1 or 0), v.t)
  end
end
for name, op in pairs({ floor = OP.FLOOR, ceil = OP.CEIL, trunc = OP.TRUNC, round = OP.ROUND }) do
  math_[name] = function(x)
    local s = S()
    local v = float_of(x)
    setloc()
    return mk(C.cute_ir_op1(s.ir, op, v.ref), v.t)
  end
end
function math_.pow(a, b, fast)
  local s = S()
  local x, y = tr.unify(float_of(a), float_of(b))
  setloc()
  local args = ffi.new("int32_t[2]", x.ref, y.ref)
  return mk(C.cute_ir_op(s.ir, OP.POW, 0, 2, args, fast and 1 or 0, 0), x.t)
end
function math_.fma(a, b, c)
  local s = S()
  local x, y = tr.unify(a, b)
  local _, z = tr.unify(x, c)
  if z.t ~= x.t then x, y = tr.cvt(x, z.t), tr.cvt(y, z.t) end
  setloc()
  return mk(C.cute_ir_op3(s.ir, OP.FMA, x.ref, y.ref, z.ref), x.t)
end
function math_.abs(a) S(); return tr.unop(OP.ABS, a) end
function math_.popc(a) S(); return tr.unop(OP.POPC, a) end
function math_.clz(a) S(); return tr.unop(OP.CLZ, a) end
function math_.brev(a) S(); return tr.unop(OP.BREV, a) end
function math_.isnan(a)
  local s = S(); local v = float_of(a); setloc()
  return mk(C.cute_ir_op1(s.ir, OP.ISNAN, v.ref), T.I1)
end

-- Two Lua numbers fold by cute.arith's rule for their types (integers: i32,
-- or i64 beyond i32 range, wrapping as on the GPU; otherwise f64); anything
-- traced emits the op.
local arith = require("cute.arith")
local function number_like(x) return type(x) == "number" or arith.is64(x) end
local function folded(rule, name, a, b)
  return arith.fold_numbers(rule, a, b, name) -- (its errors are at the user's line)
end

local function minmax(op, rule, name)
  local function f(a, b, ...)
    if select("#", ...) > 0 then return f(f(a, b), ...) end
    if number_like(a) and number_like(b) then return folded(rule, name, a, b) end
    S()
    return tr.binop(op, a, b)
  end
  return f
end
M.min = minmax(OP.MIN, "min", "cute.min")
M.max = minmax(OP.MAX, "max", "cute.max")
math_.min, math_.max = M.min, M.max

-- integer division truncates toward zero; cute.rem is C's remainder (the sign
-- of the dividend).  x / 0 = -1, x rem 0 = x, INT_MIN / -1 = INT_MIN.
function M.div(a, b)
  if number_like(a) and number_like(b) then return folded("div", "cute.div", a, b) end
  S()
  return tr.binop(OP.DIV, a, b, nil, "cute.div")
end
function M.rem(a, b)
  if number_like(a) and number_like(b) then return folded("rem", "cute.rem", a, b) end
  S()
  return tr.mod(a, b, true)
end
function M.ceil_div_(a, b) return M.div(a + (b - 1), b) end

-- bitwise; shift amounts are unsigned and clamp: lshift by >= the width is 0,
-- rshift of a signed value sign-fills, of an unsigned one gives 0
for name, op in pairs({ band = OP.AND, bor = OP.OR, bxor = OP.XOR, lshift = OP.SHL, rshift = OP.SHR }) do
  local rule = ({ band = "and", bor = "or", bxor = "xor", lshift = "shl", rshift = "shr" })[name]
  M[name] = function(a, b)
    if number_like(a) and number_like(b) then return folded(rule, "cute." .. name, a, b) end
    S()
    return tr.binop(op, a, b)
  end
end
function M.bnot(a)
  if number_like(a) then
    if not arith.integral(a) then fail("cute.bnot: " .. arith.tostr(a) .. " is not an integer") end
    return arith.fold1("not", arith.num_type(a), a)
  end
  S(); return tr.unop(OP.NOT, a)
end

-- comparisons that return traced booleans (keep them in variables)
-- (two Lua numbers compare at trace time and give a Lua boolean)
for name, op in pairs({ lt = OP.LT, le = OP.LE, gt = OP.GT, ge = OP.GE, eq = OP.EQ, ne = OP.NE }) do
  M[name] = function(a, b)
    if number_like(a) and number_like(b) then return folded(name, "cute." .. name, a, b) end
    S(); return tr.cmp_value(op, a, b)
  end
end
-- Two conditions for cute.logical_and/or.  Without the front end a comparison
-- written inline (`a < b`) reaches us as the Lua boolean Lua made of it (true,
-- or false for `~=`) with the IR comparison pending; Values and Lua booleans
-- are the other kinds.
local function two_conditions(a, b, what)
  local ba, bb = type(a) == "boolean", type(b) == "boolean"
  local np = tr.npending()
  if np > 0 and (ba or bb) then
    if ba and bb and np == 2 then
      local p = tr.take_pending(2, { a, b })
      return p[1], p[2]
    end
    if np == 1 and ba ~= bb then
      -- one comparison and one traced Value: the boolean is the comparison
      local p = tr.take_pending(1, { ba and a or b })
      if ba then return p[1], tr.condition(b, what) end
      return tr.condition(a, what), p[1]
    end
    tr.fail(("%s(%s, %s): a Lua boolean and %d comparison(s) of traced values: without the source front end " ..
      "the tracer cannot tell which argument is the comparison; write it as cute.lt(a, b) (cute.le, cute.eq, " ..
      "cute.ne, ...)"):format(what, tostring(a), tostring(b), np))
  end
  return tr.condition(a, what), tr.condition(b, what)
end

local function logical(op, name)
  return function(...)
    S()
    local n = select("#", ...)
    if n ~= 2 then
      tr.fail(("%s(a, b): expected 2 arguments, got %d (nest the calls for more: %s(a, %s(b, c)))"):format(
        name, n, name, name))
    end
    local a, b = ...
    for i, x in ipairs({ a, b }) do
      if not (type(x) == "boolean" or tr.is_value(x)) then
        tr.fail(("%s: argument %d must be a comparison, a traced boolean or a Lua boolean, got %s %s"):format(
          name, i, type(x), tostring(x)))
      end
    end
    local x, y = two_conditions(a, b, name)
    if type(x) == "boolean" then x = tr.const(T.I1, x and 1 or 0) end
    if type(y) == "boolean" then y = tr.const(T.I1, y and 1 or 0) end
    return tr.binop(op, x, y)
  end
end
M.logical_and = logical(OP.AND, "cute.logical_and")
M.logical_or = logical(OP.OR, "cute.logical_or")
M.and_, M.or_ = M.logical_and, M.logical_or

-- device printf (vprintf): cute.printf("x=%d y=%f\n", x, y)
function M.printf(fmt, ...)
  local s = S()
  if type(fmt) ~= "string" then fail("cute.printf: the format must be a Lua string") end
  local n = select("#", ...)
  local refs = ffi.new("int32_t[?]", math.max(n, 1))
  for i = 1, n do refs[i - 1] = lift((select(i, ...))).ref end
  setloc()
  chk(C.cute_ir_printf(s.ir, fmt, n, refs))
end

-- device assertion with a message (traps when false)
function M.assert_(cond, msg)
  local s = S()
  local c = tr.condition(cond, "cute.assert_")
  if type(c) == "boolean" then
    if not c then fail("cute.assert_: condition is false at trace time: " .. tostring(msg)) end
    return
  end
  local file, line = setloc()
  local ref = C.cute_ir_assert(s.ir, c.ref, msg or "assertion failed")
  chk(ref)
  -- (the fault record names the failing one by its ref: docs/FAULTS.md)
  s.asserts = s.asserts or {}
  s.asserts[ref] = { file = file, line = line, msg = tostring(msg or "assertion failed") }
end

-- tensor-core instructions (mma.sync, ldmatrix, stmatrix, cp.async): cute.nvgpu_arch
require("cute.nvgpu_arch").install(arch)
-- Hopper: mbarriers, fences, elect, named barriers, setmaxnreg, clusters, bulk copies: cute.nvgpu_sm90
require("cute.nvgpu_sm90").install(arch)
-- acquire / release / relaxed / volatile flag loads and stores, fences: cute.nvgpu_sys
require("cute.nvgpu_sys").install(arch)

return M
