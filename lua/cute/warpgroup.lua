-- cute.warpgroup: Hopper's warpgroup MMA instructions (sm_90a) as traced
-- operations, and the shared-memory matrix descriptors they read
-- (docs/HOPPER.md, "Warpgroup MMA"):
--
--   cute.nvgpu.warpgroup.fence()           wgmma.fence.sync.aligned
--   cute.nvgpu.warpgroup.commit_group()    wgmma.commit_group.sync.aligned
--   cute.nvgpu.warpgroup.wait_group(n)     wgmma.wait_group.sync.aligned n
--   cute.nvgpu.warpgroup.fence_operand(f)  pins a register fragment's values here (no instruction)
--   cute.arch.wgmma_mma_async{shape = "m64n128k16", a_type =, b_type =, c_type =,
--        a_major = "K"|"MN", b_major =, a_src = "smem"|"rmem", overflow = "satfinite"|"wrapped"}
--        -> instr(acc, desc_a_or_a_fragment, desc_b, scale_d) -> acc
--   cute.arch.make_wgmma_desc(smem_ptr_or_tensor, {layout_type =, lbo =, sbo =, base_offset =}) -> u64
--   cute.nvgpu.warpgroup.encode_desc{start_address =, layout_type =, lbo =, sbo =, base_offset =}
--        -> uint64_t (on the host: the same encoding as a number a spec checks by hand)
--
-- The descriptor (PTX ISA, "Matrix Descriptor Format"): start address >> 4 in
-- bits 0-13, leading byte offset >> 4 in 16-29, stride byte offset >> 4 in
-- 32-45, base offset in 49-51, swizzle mode in 62-63 (0 interleave, 1 128B,
-- 2 64B, 3 32B).
local ffi = require("ffi")
local bit = require("bit")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")
local dt = require("cute.dtype")
local na = require("cute.nvgpu_arch")

local T, OP = tr.T, tr.OP
local fail, setloc, mk = tr.fail, tr.setloc, tr.mk

local M = {}

local function tname(t) return ffi.string(C.cute_ir_type_name(tr.state().ir, t)) end
local function show(v)
  if tr.is_value(v) then return "a traced " .. tname(v.t) end
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

-- the traced-op and inline-PTX helpers of cute.nvgpu_arch (Values or fragment
-- Values as operands; asm's rtype 0 for none)
local op, asm, arr_type = na.op, na.asm, na.arr_type

-- wgmma exists on sm_90a only (the arch-specific feature set of sm_90)
local function need_sm90a(what)
  tr.need_trace(what)
  local a = tr.state().arch
  if a and a ~= "sm_90a" then
    fail(("%s needs sm_90a (wgmma is an sm_90a feature); the kernel is compiled for %s (give {arch = \"sm_90a\"})")
      :format(what, a))
  end
end
M.need_sm90a = need_sm90a

---------------------------------------------------------------------------
-- fences and groups
---------------------------------------------------------------------------
function M.fence()
  need_sm90a("cute.nvgpu.warpgroup.fence")
  asm(0, "wgmma.fence.sync.aligned;", "~{memory}", {})
end
function M.commit_group()
  need_sm90a("cute.nvgpu.warpgroup.commit_group")
  asm(0, "wgmma.commit_group.sync.aligned;", "~{memory}", {})
end
function M.wait_group(n)
  local what = "cute.nvgpu.warpgroup.wait_group"
  need_sm90a(what)
  if type(n) ~= "number" or n % 1 ~= 0 or n < 0 or n > 7 then
    fail(("%s(n): n = %s: must be a Lua integer from 0 to 7 (an immediate)"):format(what, show(n)))
  end
  asm(0, ("wgmma.wait_group.sync.aligned %d;"):format(n), "~{memory}", {})
end

-- the registers of fragment f as an operand the compiler may not move across:
-- one empty asm that reads and rewrites each element (CUTLASS's
-- warpgroup_fence_operand), so reads of accumulators stay after wait_group
function M.fence_operand(f)
  local what = "cute.nvgpu.warpgroup.fence_operand"
  tr.need_trace(what)
  if require("cute.mma_partition").is_reg_tensor(f) then f = rawget(f, "_frag") end
  local frags = {}
  if na.is_frag(f) then frags[1] = f
  elseif type(f) == "table" and rawget(f, "_c") then -- a register tensor's storage (chunks)
    local c = rawget(f, "_c")
    for k = 0, #c do frags[#frags + 1] = c[k] end
  else
    fail(("%s: expected a register fragment or register tensor, got %s"):format(what, show(f)))
  end
  for _, fr in ipairs(frags) do
    local v = fr:value()
    local e, n = rawget(fr, "_e"), rawget(fr, "_n")
    local info = tr.tinfo[e]
    local l = (info.bits == 64) and "l" or (info.float and info.bits == 32) and "f" or (info.bits == 32) and "r"
      or (info.bits == 16) and "h" or nil
    if l then
      local cons = {}
      for i = 1, n do cons[i] = "=" .. l end
      for i = 0, n - 1 do cons[#cons + 1] = tostring(i) end
      fr:set(asm(rawget(fr, "_t"), "// warpgroup.fence_operand", table.concat(cons, ","), { v }))
    end
  end
end

---------------------------------------------------------------------------
-- descriptors
---------------------------------------------------------------------------
M.LAYOUT_TYPE = { INTERLEAVE = 0, SW128 = 1, SW64 = 2, SW32 = 3 }
-- the swizzle width B (Swizzle<B,4,3> on bytes) of each type, and back
M.SWIZZLE_BITS = { INTERLEAVE = 0, SW32 = 1, SW64 = 2, SW128 = 3 }
M.LAYOUT_OF_BITS = { [0] = "INTERLEAVE", "SW32", "SW64", "SW128" }

local DESC_KEYS = { layout_type = true, lbo = true, sbo = true, base_offset = true, start_address = true }

local function desc_fields(what, o, with_start)
  if type(o) ~= "table" then
    fail(("%s: expected a table {layout_type = \"SW128\"|\"SW64\"|\"SW32\"|\"INTERLEAVE\", lbo = bytes, sbo = bytes}, got %s")
      :format(what, show(o)))
  end
  for k in pairs(o) do
    if not DESC_KEYS[k] or (k == "start_address" and not with_start) then
      fail(("%s: unknown field %s (layout_type, lbo, sbo, base_offset%s)"):format(what, tostring(k),
        with_start and ", start_address" or ""))
    end
  end
  local lt = o.layout_type or "INTERLEAVE"
  if M.LAYOUT_TYPE[lt] == nil then
    fail(("%s: layout_type = %s: expected \"SW128\", \"SW64\", \"SW32\" or \"INTERLEAVE\""):format(what, show(lt)))
  end
  local function bytes(k, limit)
    local v = o[k] or 0
    if type(v) ~= "number" or v % 16 ~= 0 or v < 0 or v >= limit then
      fail(("%s: %s = %s bytes: must be a multiple of 16 from 0 to %d"):format(what, k, show(v), limit - 16))
    end
    return v / 16
  end
  local lbo, sbo = bytes("lbo", 2 ^ 18), bytes("sbo", 2 ^ 18)
  local start = with_start and bytes("start_address", 2 ^ 18) or 0
  local bo = o.base_offset or 0
  if type(bo) ~= "number" or bo % 1 ~= 0 or bo < 0 or bo > 7 then
    fail(("%s: base_offset = %s: must be an integer from 0 to 7"):format(what, show(bo)))
  end
  return M.LAYOUT_TYPE[lt], lbo, sbo, bo, start
end

-- the 64-bit descriptor from its fields (Lua numbers, in 16-byte units
-- except base offset and type)
local function pack_desc(ltype, lbo16, sbo16, bo, start16)
  local u = ffi.new("uint64_t", 0)
  u = u + ffi.cast("uint64_t", start16)
  u = u + ffi.cast("uint64_t", lbo16) * 2 ^ 16
  u = u + ffi.cast("uint64_t", sbo16) * 2 ^ 32
  u = u + ffi.cast("uint64_t", bo) * 2 ^ 49
  u = u + ffi.cast("uint64_t", ltype) * ffi.cast("uint64_t", 2 ^ 62)
  return u
end

-- cute.nvgpu.warpgroup.encode_desc{start_address =, layout_type =, lbo =, sbo =, base_offset =}
function M.encode_desc(o)
  return pack_desc(desc_fields("cute.nvgpu.warpgroup.encode_desc", o, true))
end

-- a shared-memory address operand: a tensor (its first element, before any
-- swizzle: the hardware swizzles the address bits) or a shared pointer
local function smem_addr(x, what)
  if ten.is_tensor(x) then
    if x.space ~= "shared" then fail(("%s: the tensor is in %s memory, not shared memory"):format(what, x.space)) end
    local p = x.ptr
    local pv = type(p) == "table" and p.sw and tr.mk(p.ref, p.t) or p
    local o = x.off
    setloc()
    local ov = tr.lift(o, (type(o) == "number" or o.t == T.I32) and T.I32 or T.I64)
    local at = mk(C.cute_ir_gep(tr.state().ir, pv.ref, ov.ref), pv.t)
    return at, ten.offset_align(x, 0)
  end
  if tr.is_var(x) then x = x.value end
  if tr.is_value(x) and C.cute_ir_type_kind(tr.state().ir, x.t) == C.CUTE_T_PTR then
    local sp = ffi.new("int[1]")
    C.cute_ir_type_elem(tr.state().ir, x.t, sp)
    if dt.space_names[sp[0]] ~= "shared" then
      fail(("%s: the pointer is in %s memory, not shared memory"):format(what, tostring(dt.space_names[sp[0]])))
    end
    return x, nil
  end
  fail(("%s: expected a shared-memory tensor or pointer, got %s"):format(what, show(x)))
end
M.smem_addr = smem_addr

-- the u64 descriptor of pointer value p with the constant fields of `base`
-- (a uint64_t): base | ((u32(p) >> 4) & 0x3FFF)
local function desc_value(p, base)
  local a = tr.cvt(op(OP.BITCAST, T.U64, { p }), T.U32)
  a = tr.binop(OP.AND, tr.binop(OP.SHR, a, 4), 0x3FFF)
  local a64 = tr.cvt(a, T.U64)
  local s = tr.state()
  setloc()
  local cref = C.cute_ir_const_int(s.ir, T.U64, ffi.cast("int64_t", base))
  return op(OP.OR, T.U64, { a64, mk(cref, T.U64) })
end
M.desc_value = desc_value
M.pack_desc = pack_desc

-- cute.arch.make_wgmma_desc(smem_ptr_or_tensor, {layout_type =, lbo =, sbo =, base_offset =}) -> u64
function M.make_wgmma_desc(x, o)
  local what = "cute.arch.make_wgmma_desc"
  tr.need_trace(what)
  local lt, lbo, sbo, bo = desc_fields(what, o or {}, false)
  local p, al = smem_addr(x, what)
  if al and al < 16 then fail(("%s: the address is only %d-byte aligned; descriptors need 16 bytes"):format(what, al)) end
  return desc_value(p, pack_desc(lt, lbo, sbo, bo, 0))
end

---------------------------------------------------------------------------
-- wgmma.mma_async
---------------------------------------------------------------------------
-- input types: PTX name -> K, allowed accumulators, transposable, allowed N
local function every8() local t = {} for n = 8, 256, 8 do t[n] = true end return t end
local INT_N = { [8] = true, [16] = true, [24] = true }
for n = 32, 256, 16 do INT_N[n] = true end
local KINDS = {
  f16 = { k = 16, acc = { f32 = true, f16 = true }, trans = true, n = every8() },
  bf16 = { k = 16, acc = { f32 = true }, trans = true, n = every8() },
  tf32 = { k = 8, acc = { f32 = true }, trans = false, n = every8() },
  e4m3 = { k = 32, acc = { f32 = true, f16 = true }, trans = false, n = every8(), pair = { e4m3 = 1, e5m2 = 1 } },
  e5m2 = { k = 32, acc = { f32 = true, f16 = true }, trans = false, n = every8(), pair = { e4m3 = 1, e5m2 = 1 } },
  s8 = { k = 32, acc = { s32 = true }, trans = false, n = INT_N, pair = { s8 = 1, u8 = 1 } },
  u8 = { k = 32, acc = { s32 = true }, trans = false, n = INT_N, pair = { s8 = 1, u8 = 1 } },
}
M.KINDS = KINDS

-- PTX type name of a dtype argument (IR names, runtime dtypes, CuTe DSL names)
-- (dtype.lua's info.ptx: the one table of scalar types)
-- a wgmma operand type: an A/B kind of KINDS or an accumulator type of one
local function wgmma_type(n)
  if n == nil then return nil end
  if KINDS[n] then return n end
  for _, k in pairs(KINDS) do if k.acc[n] then return n end end
end
local function ptx_name(x, key, what)
  if x == nil then fail(("%s: %s is missing"):format(what, key)) end
  local info
  if type(x) == "table" and type(x.name) == "string" then info = dt.by_dtype[x.name] end
  if type(x) == "string" then info = dt.by_ptx[x] or dt.by_dtype[x] or dt.by_ir[x] or dt.by_cute[x] end
  if type(x) == "function" then
    local kern = require("cute.kernel")
    for _, n in ipairs(dt.cute_names) do if kern[n] == x then info = dt.by_cute[n] end end
  end
  local n = info and wgmma_type(info.ptx)
  if not n then fail(("%s: %s = %s is not a wgmma type (f16, bf16, tf32, e4m3, e5m2, s8, u8; f32, f16, s32)")
    :format(what, key, show(x))) end
  return n
end
M.ptx_name = ptx_name

local SPEC_KEYS = { shape = true, a_type = true, b_type = true, c_type = true, d_type = true, a_major = true,
  b_major = true, a_src = true, overflow = true }

-- the checked form of a wgmma spec: { n, k, at, bt, ct, ta, tb, rs, sat, ptx }
function M.wgmma_spec(spec, what)
  if type(spec) ~= "table" then fail(what .. "{shape = \"m64nNkK\", a_type = ..., ...}: expected a table") end
  for k in pairs(spec) do
    if not SPEC_KEYS[k] then
      fail(("%s: unknown field %s (shape, a_type, b_type, c_type, a_major, b_major, a_src, overflow)")
        :format(what, tostring(k)))
    end
  end
  local at = ptx_name(spec.a_type, "a_type", what)
  local bt = ptx_name(spec.b_type or spec.a_type, "b_type", what)
  local kind = KINDS[at]
  if not kind then fail(("%s: a_type %s is not an input type of wgmma"):format(what, at)) end
  if not KINDS[bt] or (kind.pair and not kind.pair[bt]) or (not kind.pair and bt ~= at) then
    fail(("%s: b_type %s with a_type %s: wgmma takes %s"):format(what, bt, at,
      kind.pair and "both e4m3/e5m2 or both s8/u8 (mixed allowed)" or "the same type for A and B"))
  end
  local ct = ptx_name(spec.c_type or (at == "s8" or at == "u8") and "s32" or "f32", "c_type", what)
  if spec.d_type ~= nil and ptx_name(spec.d_type, "d_type", what) ~= ct then
    fail(("%s: d_type differs from c_type %s (wgmma accumulates in place)"):format(what, ct))
  end
  if not kind.acc[ct] then
    local l = {}
    for a in pairs(kind.acc) do l[#l + 1] = a end
    table.sort(l)
    fail(("%s: c_type %s with %s inputs: the accumulator is %s"):format(what, ct, at, table.concat(l, " or ")))
  end
  local sh = spec.shape
  local m, n, k
  if type(sh) == "string" then m, n, k = sh:match("^m(%d+)n(%d+)k(%d+)$") end
  m, n, k = tonumber(m), tonumber(n), tonumber(k)
  if not m then fail(("%s: shape = %s: expected \"m64nNk%d\""):format(what, show(sh), kind.k)) end
  if m ~= 64 or k ~= kind.k or not kind.n[n] then
    local l = {}
    for x = 8, 256, 8 do if kind.n[x] then l[#l + 1] = x end end
    fail(("%s: shape = %s is not a wgmma shape for %s (M = 64, K = %d, N in %s)"):format(what, sh, at, kind.k,
      table.concat(l, " ")))
  end
  local function major(key)
    local v = spec[key] or "K"
    if v ~= "K" and v ~= "MN" then fail(("%s: %s = %s: expected \"K\" or \"MN\""):format(what, key, show(v))) end
    if v == "MN" and not kind.trans then
      fail(("%s: %s = \"MN\": only 16-bit inputs (f16, bf16) may be MN-major (transposed); %s must be K-major")
        :format(what, key, at))
    end
    return v == "MN" and 1 or 0
  end
  local ta, tb = major("a_major"), major("b_major")
  local src = spec.a_src or "smem"
  if src ~= "smem" and src ~= "rmem" then fail(("%s: a_src = %s: expected \"smem\" or \"rmem\""):format(what, show(src))) end
  if src == "rmem" and ta ~= 0 then
    fail(("%s: a_major = \"MN\" with a_src = \"rmem\": A in registers is K-major"):format(what))
  end
  local sat = ""
  if at == "s8" or at == "u8" then
    local ov = spec.overflow or "wrapped"
    if ov ~= "satfinite" and ov ~= "wrapped" then
      fail(("%s: overflow = %s: expected \"satfinite\" or \"wrapped\""):format(what, show(ov)))
    end
    sat = ov == "satfinite" and ".satfinite" or ""
  elseif spec.overflow ~= nil then
    fail(("%s: overflow is for s8/u8 inputs only"):format(what))
  end
  local ptx = ("wgmma.mma_async.sync.aligned.m64n%dk%d%s.%s.%s.%s"):format(n, k, sat, ct, at, bt)
  return { n = n, k = k, at = at, bt = bt, ct = ct, ta = ta, tb = tb, rs = src == "rmem", sat = sat, ptx = ptx,
    nacc = ct == "f16" and n / 4 or n / 2 }
end

-- the instruction text and constraints of a checked spec
local function wgmma_text(sp)
  local nd = sp.nacc
  local dl = sp.ct == "f32" and "f" or "r"
  local d = {}
  for i = 0, nd - 1 do d[#d + 1] = "$" .. i end
  local o = 2 * nd
  local a
  if sp.rs then a = ("{$%d,$%d,$%d,$%d}"):format(o, o + 1, o + 2, o + 3); o = o + 4
  else a = "$" .. o; o = o + 1 end
  local b = "$" .. o
  local p = "$" .. (o + 1)
  local tail
  local sixteen_bit = sp.at == "f16" or sp.at == "bf16"
  if sixteen_bit then tail = sp.rs and (", 1, 1, %d"):format(sp.tb) or (", 1, 1, %d, %d"):format(sp.ta, sp.tb)
  elseif sp.at == "tf32" or sp.at == "e4m3" or sp.at == "e5m2" then tail = ", 1, 1"
  else tail = "" end
  local text = ("{\n.reg .pred p;\nsetp.ne.b32 p, %s, 0;\n%s {%s}, %s, %s, p%s;\n}"):format(p, sp.ptx,
    table.concat(d, ","), a, b, tail)
  local cons = {}
  for i = 1, nd do cons[#cons + 1] = "=" .. dl end
  for i = 0, nd - 1 do cons[#cons + 1] = tostring(i) end
  if sp.rs then for _ = 1, 4 do cons[#cons + 1] = "r" end else cons[#cons + 1] = "l" end
  cons[#cons + 1] = "l"
  cons[#cons + 1] = "r"
  cons[#cons + 1] = "~{memory}"
  return text, table.concat(cons, ",")
end
M.wgmma_text = wgmma_text

-- a u64 descriptor operand
local function desc_operand(x, what, which)
  if tr.is_var(x) then x = x.value end
  if type(x) == "cdata" and not tr.is_value(x) and ffi.istype("uint64_t", x) then
    local s = tr.state()
    setloc()
    return mk(C.cute_ir_const_int(s.ir, T.U64, ffi.cast("int64_t", x)), T.U64)
  end
  if tr.is_value(x) then
    local info = tr.tinfo[x.t]
    if info and info.int and info.bits == 64 then
      return x.t == T.U64 and x or op(OP.BITCAST, T.U64, { x })
    end
  end
  fail(("%s: %s must be a 64-bit descriptor (cute.arch.make_wgmma_desc), got %s"):format(what, which, show(x)))
end
M.desc_operand = desc_operand

-- scale-d: a Lua boolean / 0 / 1 or a traced i1 (or integer) -> u32 0/1
local function scale_operand(x, what)
  if x == nil or x == true then return tr.const(T.U32, 1) end
  if x == false then return tr.const(T.U32, 0) end
  if type(x) == "number" and (x == 0 or x == 1) then return tr.const(T.U32, x) end
  if tr.is_var(x) then x = x.value end
  if tr.is_value(x) then
    local info = tr.tinfo[x.t]
    if info and info.bool then return tr.cvt(x, T.U32) end
  end
  fail(("%s: scale_d = %s: must be a Lua boolean, 0, 1 or a traced predicate (false: D = A B, true: D = A B + D)")
    :format(what, show(x)))
end
M.scale_operand = scale_operand

-- the 4 b32 registers of an A fragment in registers: u32[4], or the 8 16-bit /
-- 16 8-bit values of the atom's type packed low first, or 4 tf32 bits
local function a_regs(x, sp, what)
  local v
  if na.is_frag(x) then v = x:value()
  elseif tr.is_value(x) and C.cute_ir_type_kind(tr.state().ir, x.t) == C.CUTE_T_ARR then v = x
  else fail(("%s: with a_src = \"rmem\" A must be a register fragment, got %s"):format(what, show(x))) end
  local np = ffi.new("int[1]")
  local e = C.cute_ir_type_elem(tr.state().ir, v.t, np)
  local n, info = np[0], tr.tinfo[e]
  if info and info.bits == 32 and n == 4 then
    if e == T.U32 then return v end
    local parts = {}
    for i = 0, 3 do parts[#parts + 1] = op(OP.BITCAST, T.U32, { op(OP.EXTRACT, e, { v }, i) }) end
    return op(OP.VEC, arr_type(T.U32, 4), parts)
  end
  if info and (info.bits == 16 or info.bits == 8) and n == 128 / info.bits then
    local per = 32 / info.bits
    local vt = C.cute_ir_t_vec(tr.state().ir, e, per)
    local parts = {}
    for r = 0, 3 do
      local el = {}
      for j = 0, per - 1 do el[#el + 1] = op(OP.EXTRACT, e, { v }, r * per + j) end
      parts[#parts + 1] = op(OP.BITCAST, T.U32, { op(OP.VEC, vt, el) })
    end
    return op(OP.VEC, arr_type(T.U32, 4), parts)
  end
  fail(("%s: A in registers must be 4 b32 registers (u32[4], or 8 16-bit / 16 8-bit values), got %s"):format(what,
    tname(v.t)))
end

-- the accumulator: f32[N/2], s32[N/2] (or u32[N/2]); f16: f16[N/2] or u32[N/4]
local function acc_operand(x, sp, what)
  local v
  if na.is_frag(x) then v = x:value()
  elseif tr.is_value(x) and C.cute_ir_type_kind(tr.state().ir, x.t) == C.CUTE_T_ARR then v = x
  else fail(("%s: the accumulator must be a register fragment (cute.arch.make_fragment_regs), got %s"):format(what,
    show(x))) end
  local np = ffi.new("int[1]")
  local e = C.cute_ir_type_elem(tr.state().ir, v.t, np)
  local n = np[0]
  local info = tr.tinfo[e]
  local nv = sp.n / 2
  if sp.ct == "f32" and e == T.F32 and n == nv then return v, v.t, "f32" end
  if sp.ct == "s32" and info and info.int and info.bits == 32 and n == nv then
    return e == T.U32 and v or (function()
      local parts = {}
      for i = 0, n - 1 do parts[#parts + 1] = op(OP.BITCAST, T.U32, { op(OP.EXTRACT, e, { v }, i) }) end
      return op(OP.VEC, arr_type(T.U32, n), parts)
    end)(), v.t, "s32"
  end
  if sp.ct == "f16" then
    if info and info.int and info.bits == 32 and n == nv / 2 then return v, v.t, "u32" end
    if e == T.F16 and n == nv then
      local v2 = C.cute_ir_t_vec(tr.state().ir, T.F16, 2)
      local parts = {}
      for i = 0, nv / 2 - 1 do
        parts[#parts + 1] = op(OP.BITCAST, T.U32, { op(OP.VEC, v2, { op(OP.EXTRACT, T.F16, { v }, 2 * i),
          op(OP.EXTRACT, T.F16, { v }, 2 * i + 1) }) })
      end
      return op(OP.VEC, arr_type(T.U32, nv / 2), parts), v.t, "f16"
    end
  end
  fail(("%s: the accumulator of m64n%d %s must be %s, got %s"):format(what, sp.n, sp.ct,
    sp.ct == "f16" and ("f16[%d] or u32[%d]"):format(nv, nv / 2) or ("%s[%d]"):format(sp.ct, nv), tname(v.t)))
end

-- issue one wgmma: acc (fragment or fragment Value), A (descriptor or
-- registers), B descriptor, scale_d; returns the new accumulator Value in
-- the accumulator's own type
function M.issue(sp, text, cons, acc, a, b, scale, what)
  local cv, ct, how = acc_operand(acc, sp, what)
  local av = sp.rs and a_regs(a, sp, what) or desc_operand(a, what, "the A descriptor")
  local bv = desc_operand(b, what, "the B descriptor")
  local pv = scale_operand(scale, what)
  local rt = sp.ct == "f32" and arr_type(T.F32, sp.nacc) or arr_type(T.U32, sp.nacc)
  local out = asm(rt, text, cons, { cv, av, bv, pv })
  if how == "f16" then
    local v2 = C.cute_ir_t_vec(tr.state().ir, T.F16, 2)
    local parts = {}
    for i = 0, sp.nacc - 1 do
      local h = op(OP.BITCAST, v2, { op(OP.EXTRACT, T.U32, { out }, i) })
      parts[#parts + 1] = op(OP.EXTRACT, T.F16, { h }, 0)
      parts[#parts + 1] = op(OP.EXTRACT, T.F16, { h }, 1)
    end
    out = op(OP.VEC, ct, parts)
  elseif out.t ~= ct then
    local np = ffi.new("int[1]")
    local e = C.cute_ir_type_elem(tr.state().ir, ct, np)
    local parts = {}
    for i = 0, np[0] - 1 do parts[#parts + 1] = op(OP.BITCAST, e, { op(OP.EXTRACT, T.U32, { out }, i) }) end
    out = op(OP.VEC, ct, parts)
  end
  return out
end

-- cute.arch.wgmma_mma_async{...} -> instr(acc, a, desc_b, scale_d) -> acc
function M.wgmma_mma_async(spec)
  local what = "cute.arch.wgmma_mma_async"
  local sp = M.wgmma_spec(spec, what)
  what = what .. " " .. sp.ptx
  local text, cons = wgmma_text(sp)
  return setmetatable({ ptx = sp.ptx, spec = sp }, {
    __tostring = function() return "cute.arch.wgmma_mma_async " .. sp.ptx end,
    __call = function(_, acc, a, b, scale_d)
      need_sm90a(what)
      local out = M.issue(sp, text, cons, acc, a, b, scale_d, what)
      if na.is_frag(acc) then acc:set(out); return acc end
      return out
    end,
  })
end

-- export into cute.arch
function M.install(arch)
  arch.wgmma_mma_async = M.wgmma_mma_async
  arch.make_wgmma_desc = M.make_wgmma_desc
  arch.wgmma_fence = M.fence
  arch.wgmma_commit_group = M.commit_group
  arch.wgmma_wait_group = M.wait_group
end

return M
