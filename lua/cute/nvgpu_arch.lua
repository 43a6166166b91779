-- cute.nvgpu_arch: the low-level tensor-core instructions of sm_80+ as traced
-- operations, exported from cute.arch (docs/TENSORCORE.md, "Low-level
-- tensor-core operations"):
--   cute.arch.make_fragment_regs(dtype, n [, init])  -> a register fragment
--   cute.arch.mma_sync{shape = "m16n8k16", a_type = "bf16", b_type = "bf16",
--                      c_type = "f32", d_type = "f32"}(d, a, b, c)
--   cute.arch.ldmatrix(smem, {num_matrices = 4, transpose = false}) -> fragment
--   cute.arch.stmatrix(smem, frag, {num_matrices = 4, transpose = false})  (sm_90)
--   cute.arch.cp_async(dst_smem, src_gmem, bytes, {cache = "ca", src_size = n})
--   cute.arch.cp_async_commit_group(), cp_async_wait_group(n), cp_async_wait_all()
--
-- A register fragment is a cute.var of the IR's fragment type E[n]
-- (docs/IR.md, "Fragments and wide values"): f[i] (i a Lua integer, from 0)
-- reads an element through `extract`, f[i] = x writes it through `insert`;
-- being a variable it can be updated inside cute.range / cute.if_then bodies
-- and read after them.  It is never in memory at opt_level >= 1.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")
local dt = require("cute.dtype")

local T, OP = tr.T, tr.OP
local fail, setloc, mk = tr.fail, tr.setloc, tr.mk

local M = {}

local function S(what)
  tr.need_trace(what)
  return tr.state()
end

local function tname(t) return ffi.string(C.cute_ir_type_name(tr.state().ir, t)) end

local function refs_of(list)
  local a = ffi.new("int32_t[?]", math.max(#list, 1))
  for i, v in ipairs(list) do a[i - 1] = v.ref end
  return a
end

-- generic op helper: result type t, operands (Values), immediate
local function op(opc, t, args, imm)
  local s = tr.state()
  setloc()
  return mk(C.cute_ir_op(s.ir, opc, t, #args, refs_of(args), imm or 0, 0), t)
end

-- IR element type of a dtype argument: a runtime dtype (cute.bfloat16), a
-- numeric type (cute.BFloat16) or a name (IR, dtype or CuTe DSL spelling)
local function elem_of(x, what)
  if type(x) == "table" and x.ir and tr.tinfo[x.ir] then return x.ir end
  if type(x) == "string" then
    local info = dt.by_ir[x] or dt.by_dtype[x] or dt.by_cute[x]
    if info then return info.code end
  end
  if type(x) == "function" then -- CuTe DSL's numeric types: cute.BFloat16, cute.Float32
    local kern = require("cute.kernel")
    for _, n in ipairs(dt.cute_names) do
      if kern[n] == x then return dt.by_cute[n].code end
    end
  end
  fail(("%s: unknown dtype %s"):format(what, tostring(x)))
end

-- the target's SM number (80 for sm_80, 90 for sm_90a); nil when unknown
local function sm_of(s)
  local a = s.arch
  return a and tonumber(a:match("^sm_(%d+)")), a
end
local function need_sm(s, min, what)
  local n, a = sm_of(s)
  if n and n < min then
    fail(("%s needs sm_%d or newer; the kernel is compiled for %s (give {arch = \"sm_80\"} or newer)")
      :format(what, min, a))
  end
end

---------------------------------------------------------------------------
-- register fragments
---------------------------------------------------------------------------
local Frag = {}
local frag_mt = {}
M.Frag = Frag
local function is_frag(x) return getmetatable(x) == frag_mt end
M.is_frag = is_frag

local function frag_check(f)
  local s = tr.state()
  if not s or rawget(f, "_state") ~= s or not s.open[rawget(f, "_region")] then
    fail(("a register fragment made at line %s inside a loop or branch that has ended (or in another trace) " ..
      "is used here; make it before the loop"):format(tostring(rawget(f, "_line"))))
  end
  return s
end

-- the fragment's current value (a traced Value of type E[n])
function Frag.value(f)
  local s = frag_check(f)
  setloc()
  return mk(C.cute_ir_vget(s.ir, rawget(f, "_var")), rawget(f, "_t"))
end
-- replace the whole fragment by a Value of its type
function Frag.set(f, v)
  local s = frag_check(f)
  if is_frag(v) then v = v:value() end
  if not tr.is_value(v) or v.t ~= rawget(f, "_t") then
    fail(("fragment:set: expected a %s value, got %s"):format(tname(rawget(f, "_t")),
      tr.is_value(v) and tname(v.t) or type(v)))
  end
  setloc()
  cf.ir_check(s.ir, C.cute_ir_vset(s.ir, rawget(f, "_var"), v.ref))
end
function Frag.size(f) return rawget(f, "_n") end
-- every element as a traced scalar (a Lua table from 0), one read of the fragment
function Frag.elements(f)
  local v, e, out = f:value(), rawget(f, "_e"), {}
  for i = 0, rawget(f, "_n") - 1 do out[i] = op(OP.EXTRACT, e, { v }, i) end
  return out
end
-- replace the elements given in vals (a table from 0; nil keeps one), one write
function Frag.set_elements(f, vals)
  local v, e = f:value(), rawget(f, "_e")
  for i = 0, rawget(f, "_n") - 1 do
    local x = vals[i]
    if x ~= nil then
      x = tr.lift(x, e)
      if x.t ~= e then x = tr.cvt(x, e) end
      v = op(OP.INSERT, rawget(f, "_t"), { v, x }, i)
    end
  end
  f:set(v)
end
function Frag.fill(f, x)
  local vals = {}
  for i = 0, rawget(f, "_n") - 1 do vals[i] = x end
  f:set_elements(vals)
end

local function frag_index(f, k)
  local n = rawget(f, "_n")
  if type(k) ~= "number" or k % 1 ~= 0 or k < 0 or k >= n then
    fail(("register fragment %s: index %s: must be a Lua integer from 0 to %d (registers cannot be indexed " ..
      "by a value known only on the GPU)"):format(tname(rawget(f, "_t")),
      tr.is_value(k) and "(a traced value)" or tostring(k), n - 1))
  end
  return k
end

frag_mt.__index = function(f, k)
  if type(k) == "string" then
    local m = Frag[k]
    if m then return m end
    fail(("register fragment: no method or field %q"):format(k))
  end
  frag_index(f, k)
  return op(OP.EXTRACT, rawget(f, "_e"), { f:value() }, k)
end
frag_mt.__newindex = function(f, k, x)
  frag_index(f, k)
  local e = rawget(f, "_e")
  local v = tr.lift(x, e)
  if v.t ~= e then v = tr.cvt(v, e) end
  f:set(op(OP.INSERT, rawget(f, "_t"), { f:value(), v }, k))
end
frag_mt.__len = function(f) return rawget(f, "_n") end
frag_mt.__tostring = function(f)
  return ("<register fragment %s>"):format(tr.active() and tname(rawget(f, "_t")) or "")
end

-- a fragment variable holding Value v (of fragment type)
local function frag_of_value(v, what)
  local s = tr.state()
  local np = ffi.new("int[1]")
  local e = C.cute_ir_type_elem(s.ir, v.t, np)
  if C.cute_ir_type_kind(s.ir, v.t) ~= C.CUTE_T_ARR then fail(what .. ": not a fragment value: " .. tname(v.t)) end
  setloc()
  local ref = C.cute_ir_var(s.ir, v.t, v.ref)
  if ref == 0 then tr.ir_fail() end
  local _, line = tr.user_frame()
  return setmetatable({ _var = ref, _t = v.t, _e = e, _n = np[0], _state = s, _region = s.region, _line = line },
    frag_mt)
end

local function arr_type(e, n) return C.cute_ir_t_array(tr.state().ir, e, n) end

-- cute.arch.make_fragment_regs(dtype, n [, init = 0]): n registers of dtype
function M.make_fragment_regs(dtype, n, init)
  S("cute.arch.make_fragment_regs")
  local e = elem_of(dtype, "cute.arch.make_fragment_regs")
  if type(n) ~= "number" or n % 1 ~= 0 or n < 1 or n > C.CUTE_ARR_MAX then
    fail(("cute.arch.make_fragment_regs: n = %s: must be a Lua integer from 1 to %d"):format(tostring(n),
      C.CUTE_ARR_MAX))
  end
  local iv = tr.lift(init or 0, e)
  if iv.t ~= e then iv = tr.cvt(iv, e) end
  return frag_of_value(op(OP.VEC, arr_type(e, n), { iv }), "cute.arch.make_fragment_regs")
end

-- the fragment Value of an operand (a register fragment or a fragment Value)
local function frag_value(x, what)
  if is_frag(x) then return x:value() end
  if tr.is_value(x) and C.cute_ir_type_kind(tr.state().ir, x.t) == C.CUTE_T_ARR then return tr.lift(x) end
  fail(("%s: expected a register fragment (cute.arch.make_fragment_regs), got %s"):format(what,
    tr.is_value(x) and ("a traced " .. tname(x.t)) or (type(x) .. " " .. tostring(x))))
end

local function frag_shape(v)
  local np = ffi.new("int[1]")
  local e = C.cute_ir_type_elem(tr.state().ir, v.t, np)
  return e, np[0]
end

-- n b32 registers (u32[n]) from a fragment of n 32-bit integers or 2n 16-bit
-- values of type e16 (packed in pairs, element 2i in the low half)
local function b32_regs(x, n, e16, what)
  local v = frag_value(x, what)
  local e, len = frag_shape(v)
  local info = tr.tinfo[e]
  if info and info.int and info.bits == 32 and len == n then
    if e ~= T.U32 then
      local parts = {}
      for i = 0, n - 1 do parts[#parts + 1] = op(OP.BITCAST, T.U32, { op(OP.EXTRACT, e, { v }, i) }) end
      return op(OP.VEC, arr_type(T.U32, n), parts)
    end
    return v
  end
  if e16 and e == e16 and len == 2 * n then
    local v2 = C.cute_ir_t_vec(tr.state().ir, e16, 2)
    local parts = {}
    for i = 0, n - 1 do
      local lo, hi = op(OP.EXTRACT, e, { v }, 2 * i), op(OP.EXTRACT, e, { v }, 2 * i + 1)
      parts[#parts + 1] = op(OP.BITCAST, T.U32, { op(OP.VEC, v2, { lo, hi }) })
    end
    return op(OP.VEC, arr_type(T.U32, n), parts)
  end
  fail(("%s must be a fragment of %s%d b32 registers, got %s"):format(what,
    e16 and ("%d %s or "):format(2 * n, tr.tinfo[e16].name) or "", n, tname(v.t)))
end

local function list(n, f)
  local t = {}
  for i = 0, n - 1 do t[#t + 1] = f(i) end
  return table.concat(t, ",")
end

-- inline PTX: Values or fragment Values as operands; rtype 0 for none
local function asm(rtype, ptx, cons, args)
  local s = tr.state()
  setloc()
  local r = C.cute_ir_asm(s.ir, rtype == 0 and C.CUTE_T_VOID or rtype, ptx, cons, #args, refs_of(args))
  if rtype == 0 then cf.ir_check(s.ir, r); return nil end
  return mk(r, rtype)
end

---------------------------------------------------------------------------
-- mma.sync
---------------------------------------------------------------------------
-- registers per thread of A, B and of an f32 accumulator; the oldest SM per input type
local MMA = {
  m16n8k16 = { a = 4, b = 2, c = 4, sm = { f16 = 80, bf16 = 80 } },
  m16n8k8 = { a = 2, b = 1, c = 4, sm = { f16 = 75, bf16 = 80 } },
}
local MMA_KEYS = { shape = true, a_type = true, b_type = true, c_type = true, d_type = true }

local function type_name(x, key, what)
  if x == nil then fail(("%s: %s is missing"):format(what, key)) end
  local e = elem_of(x, what .. " " .. key)
  return tr.tinfo[e].name, e
end

-- inline-PTX operand groups numbered in order: asm_groups(4, 2) -> "{$0,$1,$2,$3}", "{$4,$5}"
function M.asm_groups(...)
  local out, o = {}, 0
  for g = 1, select("#", ...) do
    local r = {}
    for i = 1, (select(g, ...)) do r[i] = "$" .. o; o = o + 1 end
    out[g] = "{" .. table.concat(r, ",") .. "}"
  end
  return unpack(out)
end

-- cute.arch.mma_sync{shape, a_type, b_type, c_type, d_type} -> instr(d, a, b, c)
function M.mma_sync(spec)
  local what = "cute.arch.mma_sync"
  if type(spec) ~= "table" then fail(what .. "{shape = ..., a_type = ..., ...}: expected a table") end
  for k in pairs(spec) do
    if not MMA_KEYS[k] then fail(("%s: unknown field %s (shape, a_type, b_type, c_type, d_type)"):format(what, tostring(k))) end
  end
  local shp = MMA[spec.shape]
  if not shp then fail(("%s: shape %s: expected \"m16n8k16\" or \"m16n8k8\""):format(what, tostring(spec.shape))) end
  local at, ae = type_name(spec.a_type, "a_type", what)
  local bt = type_name(spec.b_type or spec.a_type, "b_type", what)
  local ct = type_name(spec.c_type or "f32", "c_type", what)
  local dtn = type_name(spec.d_type or spec.c_type or "f32", "d_type", what)
  what = what .. " " .. spec.shape .. " " .. at
  if not shp.sm[at] then fail(("%s: a_type %s: expected f16 or bf16"):format(what, at)) end
  if bt ~= at then fail(("%s: b_type %s differs from a_type %s"):format(what, bt, at)) end
  for _, p in ipairs({ { "c_type", ct }, { "d_type", dtn } }) do
    if p[2] ~= "f32" and not (p[2] == "f16" and at == "f16") then
      fail(("%s: %s %s: expected f32%s"):format(what, p[1], p[2], at == "f16" and " or f16" or " (bf16 accumulates in f32)"))
    end
  end
  local nc, nd = ct == "f32" and 4 or 2, dtn == "f32" and 4 or 2
  local ptx = ("mma.sync.aligned.%s.row.col.%s.%s.%s.%s"):format(spec.shape, dtn, at, bt, ct)
  local dr, ar, br, cr = M.asm_groups(nd, shp.a, shp.b, nc)
  local text = ("%s %s, %s, %s, %s;"):format(ptx, dr, ar, br, cr)
  local cons = list(nd, function() return dtn == "f32" and "=f" or "=r" end) .. "," ..
    list(shp.a + shp.b, function() return "r" end) .. "," .. list(nc, function() return ct == "f32" and "f" or "r" end)
  local min_sm = shp.sm[at]

  -- an accumulator operand: f32[4] as is; f16: 2 b32 registers (from f16[4] or u32[2])
  local function acc_in(x, ty, which)
    if ty == "f32" then
      local v = frag_value(x, what .. ": " .. which)
      local e, n = frag_shape(v)
      if e ~= T.F32 or n ~= 4 then fail(("%s: %s must be a fragment of 4 f32, got %s"):format(what, which, tname(v.t))) end
      return v
    end
    return b32_regs(x, 2, T.F16, what .. ": " .. which)
  end

  local instr = { ptx = ptx, shape = spec.shape, a_type = at, b_type = bt, c_type = ct, d_type = dtn }
  setmetatable(instr, {
    __tostring = function() return "cute.arch.mma_sync " .. ptx end,
    __call = function(_, d, a, b, c)
      local s = S(what)
      need_sm(s, min_sm, what)
      if not is_frag(d) then
        fail(("%s(d, a, b, c): d must be a register fragment (cute.arch.make_fragment_regs), got %s")
          :format(what, tr.is_value(d) and "a traced value" or type(d)))
      end
      local de = rawget(d, "_e")
      local dn = rawget(d, "_n")
      local d_ok = dtn == "f32" and de == T.F32 and dn == 4
        or dtn == "f16" and ((de == T.F16 and dn == 4) or (tr.tinfo[de].bits == 32 and tr.tinfo[de].int and dn == 2))
      if not d_ok then
        fail(("%s: d must be a fragment of %s, got %s"):format(what, dtn == "f32" and "4 f32" or "4 f16 or 2 b32",
          tname(rawget(d, "_t"))))
      end
      local av = b32_regs(a, shp.a, ae, what .. ": a")
      local bv = b32_regs(b, shp.b, ae, what .. ": b")
      local cv = acc_in(c == nil and d or c, ct, "c")
      local out = asm(arr_type(dtn == "f32" and T.F32 or T.U32, nd), text, cons, { av, bv, cv })
      if dtn == "f16" and de == T.F16 then
        -- unpack the two f16x2 registers into f16[4]
        local v2 = C.cute_ir_t_vec(s.ir, T.F16, 2)
        local parts = {}
        for i = 0, 1 do
          local h = op(OP.BITCAST, v2, { op(OP.EXTRACT, T.U32, { out }, i) })
          parts[#parts + 1] = op(OP.EXTRACT, T.F16, { h }, 0)
          parts[#parts + 1] = op(OP.EXTRACT, T.F16, { h }, 1)
        end
        out = op(OP.VEC, rawget(d, "_t"), parts)
      elseif out.t ~= rawget(d, "_t") then
        local parts = {}
        for i = 0, dn - 1 do parts[#parts + 1] = op(OP.BITCAST, de, { op(OP.EXTRACT, T.U32, { out }, i) }) end
        out = op(OP.VEC, rawget(d, "_t"), parts)
      end
      d:set(out)
      return d
    end,
  })
  return instr
end

---------------------------------------------------------------------------
-- addresses
---------------------------------------------------------------------------
local SPACE_NAME = dt.space_names

-- a tensor (its first element) or a traced pointer -> pointer Value, space
-- name, known alignment in bytes (nil: unknown), element bytes
local function address(x, what, which)
  if ten.is_tensor(x) then
    local p = x:ptr_at(0)
    local al = type(x.off) == "number" and ten.offset_align(x, 0) or nil
    return p, x.space, al, ten.elem_bytes(x.elem)
  end
  if tr.is_value(x) and C.cute_ir_type_kind(tr.state().ir, x.t) == C.CUTE_T_PTR then
    local sp = ffi.new("int[1]")
    local e = C.cute_ir_type_elem(tr.state().ir, x.t, sp)
    return tr.lift(x), SPACE_NAME[sp[0]] or "generic", nil, ten.elem_bytes(e)
  end
  fail(("%s: %s must be a tensor or a traced pointer, got %s"):format(what, which,
    tr.is_value(x) and ("a traced " .. tname(x.t)) or (type(x) .. " " .. tostring(x))))
end

local function need_space(space, allowed, what, which)
  for _, a in ipairs(allowed) do if space == a then return end end
  fail(("%s: %s must be in %s memory, got %s memory"):format(what, which, table.concat(allowed, " or "), space))
end

-- a shared-memory address as a 32-bit register, a global one as 64 bits
local function shared_u32(p)
  return tr.cvt(op(OP.BITCAST, T.U64, { p }), T.U32)
end
local function global_u64(p) return op(OP.BITCAST, T.U64, { p }) end

---------------------------------------------------------------------------
-- ldmatrix / stmatrix
---------------------------------------------------------------------------
local function matrix_opts(opts, what)
  opts = opts or {}
  if type(opts) ~= "table" then fail(what .. ": options must be a table {num_matrices = 1|2|4, transpose = bool}") end
  for k in pairs(opts) do
    if k ~= "num_matrices" and k ~= "transpose" then
      fail(("%s: unknown option %s (num_matrices, transpose)"):format(what, tostring(k)))
    end
  end
  local n = opts.num_matrices or 1
  if n ~= 1 and n ~= 2 and n ~= 4 then fail(("%s: num_matrices = %s: must be 1, 2 or 4"):format(what, tostring(n))) end
  if opts.transpose ~= nil and type(opts.transpose) ~= "boolean" then
    fail(("%s: transpose = %s: must be a Lua boolean"):format(what, tostring(opts.transpose)))
  end
  return n, opts.transpose and ".trans" or ""
end

local function smem_rows(p, space, al, eb, what)
  need_space(space, { "shared" }, what, "the address")
  if eb ~= 2 then fail(("%s: the matrices hold 16-bit elements, got %d-byte elements"):format(what, eb)) end
  if al and al < 16 then fail(("%s: the row address is %d-byte aligned; rows must be 16-byte aligned"):format(what, al)) end
  return shared_u32(p)
end

-- cute.arch.ldmatrix(smem, {num_matrices, transpose}) -> fragment of n b32 (u32)
function M.ldmatrix(smem, opts)
  local what = "cute.arch.ldmatrix"
  local s = S(what)
  local n, trans = matrix_opts(opts, what)
  need_sm(s, 75, what)
  local p, space, al, eb = address(smem, what, "the address")
  local a = smem_rows(p, space, al, eb, what)
  local ptx = ("ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, [$%d];"):format(n, trans,
    list(n, function(i) return "$" .. i end), n)
  local cons = list(n, function() return "=r" end) .. ",r,~{memory}"
  return frag_of_value(asm(arr_type(T.U32, n), ptx, cons, { a }), what)
end

-- cute.arch.stmatrix(smem, frag, {num_matrices, transpose}): sm_90
function M.stmatrix(smem, frag, opts)
  local what = "cute.arch.stmatrix"
  local s = S(what)
  local n, trans = matrix_opts(opts, what)
  need_sm(s, 90, what)
  local p, space, al, eb = address(smem, what, "the address")
  local a = smem_rows(p, space, al, eb, what)
  local v = b32_regs(frag, n, nil, what .. ": the fragment")
  local ptx = ("stmatrix.sync.aligned.m8n8.x%d%s.shared.b16 [$0], {%s};"):format(n, trans,
    list(n, function(i) return "$" .. (i + 1) end))
  asm(0, ptx, "r," .. list(n, function() return "r" end) .. ",~{memory}", { a, v })
end

---------------------------------------------------------------------------
-- cp.async
---------------------------------------------------------------------------
-- cute.arch.cp_async(dst_smem, src_gmem, bytes, {cache = "ca"|"cg", src_size = n})
function M.cp_async(dst, src, bytes, opts)
  local what = "cute.arch.cp_async"
  local s = S(what)
  need_sm(s, 80, what)
  if bytes ~= 4 and bytes ~= 8 and bytes ~= 16 then
    fail(("%s: bytes = %s: must be 4, 8 or 16"):format(what, tostring(bytes)))
  end
  opts = opts or {}
  if type(opts) ~= "table" then fail(what .. ": options must be a table {cache = \"ca\"|\"cg\", src_size = n}") end
  for k in pairs(opts) do
    if k ~= "cache" and k ~= "src_size" then fail(("%s: unknown option %s (cache, src_size)"):format(what, tostring(k))) end
  end
  local cache = opts.cache or "ca"
  if cache ~= "ca" and cache ~= "cg" then fail(("%s: cache = %s: must be \"ca\" or \"cg\""):format(what, tostring(cache))) end
  if cache == "cg" and bytes ~= 16 then
    fail(("%s: cache = \"cg\" copies 16 bytes only, got bytes = %d (use \"ca\")"):format(what, bytes))
  end
  local dp, dspace, dal = address(dst, what, "the destination")
  local sp, sspace, sal = address(src, what, "the source")
  need_space(dspace, { "shared" }, what, "the destination")
  need_space(sspace, { "global", "generic" }, what, "the source")
  for _, x in ipairs({ { "destination", dal }, { "source", sal } }) do
    if x[2] and x[2] < bytes then
      fail(("%s: the %s is %d-byte aligned; a %d-byte copy needs %d-byte alignment"):format(what, x[1], x[2], bytes, bytes))
    end
  end
  local args = { shared_u32(dp), global_u64(sp) }
  local ss = opts.src_size
  local tail = ""
  if ss ~= nil and not (type(ss) == "number" and ss == bytes) then
    if type(ss) == "number" then
      if ss % 1 ~= 0 or ss < 0 or ss > bytes then
        fail(("%s: src_size = %s: must be an integer from 0 to %d"):format(what, tostring(ss), bytes))
      end
      ss = tr.const(T.U32, ss)
    elseif tr.is_value(ss) or tr.is_var(ss) then
      if tr.is_var(ss) then ss = ss.value end
      local info = tr.tinfo[ss.t]
      if not (info and info.int and not info.bool) then
        fail(("%s: src_size must be an integer, got a traced %s"):format(what, tname(ss.t)))
      end
      if ss.t ~= T.U32 then ss = tr.cvt(ss, T.U32) end
    else
      fail(("%s: src_size must be a number or a traced integer, got %s"):format(what, type(ss)))
    end
    args[3] = ss
    tail = ", $2"
  end
  local ptx = ("cp.async.%s.shared.global [$0], [$1], %d%s;"):format(cache, bytes, tail)
  asm(0, ptx, (#args == 3 and "r,l,r" or "r,l") .. ",~{memory}", args)
end

function M.cp_async_commit_group()
  local what = "cute.arch.cp_async_commit_group"
  local s = S(what)
  need_sm(s, 80, what)
  asm(0, "cp.async.commit_group;", "~{memory}", {})
end

function M.cp_async_wait_group(n)
  local what = "cute.arch.cp_async_wait_group"
  local s = S(what)
  need_sm(s, 80, what)
  if type(n) ~= "number" or n % 1 ~= 0 or n < 0 or n > 255 then
    fail(("%s(n): n = %s: must be a Lua integer from 0 to 255 (an immediate)"):format(what,
      tr.is_value(n) and "(a traced value)" or tostring(n)))
  end
  asm(0, ("cp.async.wait_group %d;"):format(n), "~{memory}", {})
end

function M.cp_async_wait_all()
  local what = "cute.arch.cp_async_wait_all"
  local s = S(what)
  need_sm(s, 80, what)
  asm(0, "cp.async.wait_all;", "~{memory}", {})
end

-- helpers shared with the Hopper instructions (cute.nvgpu_sm90)
M.address, M.need_space, M.shared_u32, M.global_u64 = address, need_space, shared_u32, global_u64
M.asm, M.op, M.sm_of, M.arr_type, M.elem_of = asm, op, sm_of, arr_type, elem_of

-- export into the cute.arch table
function M.install(arch)
  for _, k in ipairs({ "make_fragment_regs", "mma_sync", "ldmatrix", "stmatrix", "cp_async",
    "cp_async_commit_group", "cp_async_wait_group", "cp_async_wait_all" }) do
    arch[k] = M[k]
  end
  arch.is_fragment_regs = is_frag
end

return M
