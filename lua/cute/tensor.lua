-- cute.tensor: tensors inside kernels = pointer + layout.
--
-- A kernel-side tensor holds a traced base pointer (global, shared or local
-- memory), an element offset (Lua number or traced value) and a layout whose
-- shape and stride leaves are Lua numbers (static) or traced values (dynamic,
-- e.g. a size passed at launch).  T[crd] loads, T[crd] = v stores, through
-- crd2idx on (possibly traced) coordinates; a coordinate with cute._ slices.
-- Static layouts use the C layout algebra; dynamic ones support the flat
-- by-mode tiling that local_tile / local_partition / divides need.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local lay = require("cute.layout")
local dt = require("cute.dtype")

local M = {}
local is_value, fail, setloc, mk = tr.is_value, tr.fail, tr.setloc, tr.mk
local T_I32, T_I64 = tr.T.I32, tr.T.I64
local LIM32 = 2 ^ 31 - 1
local _ = lay._

local Tensor = {}
M.Tensor = Tensor

local function is_tensor(x) return getmetatable(x) == Tensor end
M.is_tensor = is_tensor

---------------------------------------------------------------------------
-- integer index arithmetic with constant folding
---------------------------------------------------------------------------
-- number or Value -> same, checking integer-ness.  Traced coordinates become
-- `it` (the tensor's index type, i32 by default); a coordinate that does not
-- fit i32 (i64, u64, u32) makes the offset math 64-bit: never truncated.
local wide_int = { [tr.T.I64] = true, [tr.T.U64] = true, [tr.T.U32] = true }
local function iv(x, it)
  if type(x) == "number" then
    if x % 1 ~= 0 then fail("index " .. x .. " is not an integer") end
    return x
  end
  if is_value(x) then
    local info = tr.tinfo[x.t]
    if not (info and info.int) then fail("index must be an integer, got a traced " .. (info and info.name or "value")) end
    local want = (it == T_I64 or wide_int[x.t]) and T_I64 or T_I32
    if x.t ~= want then return tr.cvt(x, want) end
    return x
  end
  if tr.is_var(x) then return iv(x.value, it) end
  fail("index must be an integer or a traced integer, got " .. type(x) .. " " .. tostring(x))
end

-- (never compare a possibly-traced value with == here: that emits IR)
local function isn(x, v) return type(x) == "number" and x == v end
local function iadd(a, b)
  if type(a) == "number" and type(b) == "number" then return a + b end
  if isn(a, 0) then return b end
  if isn(b, 0) then return a end
  return a + b
end
local function imul(a, b)
  if type(a) == "number" and type(b) == "number" then return a * b end
  if isn(a, 0) or isn(b, 0) then return 0 end
  if isn(a, 1) then return b end
  if isn(b, 1) then return a end
  return a * b
end
local function idiv(a, b)
  if type(a) == "number" and type(b) == "number" then
    local q = a / b
    return q >= 0 and math.floor(q) or math.ceil(q)
  end
  if isn(b, 1) then return a end
  return tr.binop(tr.OP.DIV, a, b)
end
local function imod(a, b)
  if type(a) == "number" and type(b) == "number" then return math.fmod(a, b) end
  if isn(b, 1) then return 0 end
  return tr.binop(tr.OP.REM, a, b)
end
local function iceil_div(a, b)
  if type(a) == "number" and type(b) == "number" then return math.ceil(a / b) end
  return idiv(iadd(a, b - 1), b)
end
M.iadd, M.imul, M.idiv, M.imod = iadd, imul, idiv, imod

---------------------------------------------------------------------------
-- layouts with static or traced leaves: { shape = tree, stride = tree }
---------------------------------------------------------------------------
local function tsize(s)
  if type(s) == "table" then
    local p = 1
    for i = 1, #s do p = imul(p, tsize(s[i])) end
    return p
  end
  return s
end
M.tsize = tsize

local function is_static(t)
  if type(t) == "table" then
    for i = 1, #t do if not is_static(t[i]) then return false end end
    return true
  end
  return type(t) == "number"
end
M.is_static = is_static -- (mma_partition and copy_atom use it too)

-- crd2idx for a (possibly traced) coordinate; `it`: the index type (T_I32 or
-- T_I64) traced coordinates are converted to before any multiply
local function crd2idx(c, s, d, it)
  if type(c) == "table" and not is_value(c) then
    if rawequal(c, _) then fail("crd2idx: '_' is only allowed when slicing") end
    if type(s) ~= "table" then
      if #c == 1 then return crd2idx(c[1], s, d, it) end
      fail(("coordinate %s does not match a mode of shape %s"):format(M.describe(c), M.describe(s)))
    end
    if #c ~= #s then
      fail(("coordinate %s has rank %d but the shape %s has rank %d"):format(M.describe(c), #c, M.describe(s), #s))
    end
    local r = 0
    for i = 1, #s do r = iadd(r, crd2idx(c[i], s[i], d[i], it)) end
    return r
  end
  c = iv(c, it)
  if type(s) == "table" then
    -- split an integer colexicographically over the modes
    local r, n = 0, #s
    for i = 1, n do
      local si = tsize(s[i])
      local ci
      if i < n then ci = imod(c, si); c = idiv(c, si) else ci = c end
      r = iadd(r, crd2idx(ci, s[i], d[i], it))
    end
    return r
  end
  return imul(c, d)
end
M.crd2idx = crd2idx

-- shapes, strides and coordinates as text: a traced value shows as its type
-- (`i32`), cute._ as `_`
function M.describe(t)
  if rawequal(t, _) then return "_" end
  if type(t) == "table" and not is_value(t) then
    local p = {}
    for i = 1, #t do p[i] = M.describe(t[i]) end
    return "(" .. table.concat(p, ",") .. ")"
  end
  if is_value(t) then return tr.tinfo[t.t] and tr.tinfo[t.t].name or "?" end
  if tr.is_var(t) then return "var" end
  return tostring(t)
end

local function layout_str(L) return M.describe(L.shape) .. ":" .. M.describe(L.stride) end
M.layout_str = layout_str

-- slice a layout with a coordinate that contains cute._ : returns the layout of
-- the '_' modes (flattened one level, as CuTe's slice) and the offset of the rest.
local function slice(c, s, d, outs, outd, it)
  if rawequal(c, _) then
    outs[#outs + 1] = s; outd[#outd + 1] = d
    return 0
  end
  if type(c) == "table" and not is_value(c) then
    if type(s) ~= "table" or #c ~= #s then
      fail(("slice coordinate %s does not match shape %s"):format(M.describe(c), M.describe(s)))
    end
    local off = 0
    for i = 1, #s do off = iadd(off, slice(c[i], s[i], d[i], outs, outd, it)) end
    return off
  end
  return crd2idx(c, s, d, it)
end

local function has_under(c)
  if rawequal(c, _) then return true end
  if type(c) == "table" and not is_value(c) then
    for i = 1, #c do if has_under(c[i]) then return true end end
  end
  return false
end
M.has_under = has_under

local function static_layout(L)
  return lay.make_layout(L.shape, L.stride)
end

local function from_static(Lc)
  return { shape = Lc:shape(), stride = Lc:stride() }
end

-- A ComposedLayout Sw o k o L: its swizzle {B, M, S} and offset k (nil if x is
-- not one); composed_inner(x): L in tree form
function M.composed_parts(x)
  if lay.is_composed(x) then return { x.sw_b, x.sw_m, x.sw_s }, tonumber(x.offset) end
  return nil
end
function M.composed_inner(x) return from_static(lay.inner_layout(x)) end

-- Lua-side layout (tree form) from a Layout cdata, a table {shape, stride}, or a shape
function M.as_layout(x, what)
  if lay.is_layout(x) then return from_static(x) end
  if type(x) == "table" and x.shape then return x end
  if type(x) == "table" or type(x) == "number" then return from_static(lay.make_layout(x)) end
  fail((what or "layout") .. ": expected a layout, got " .. tostring(x))
end

-- zipped_divide on tree layouts: static through C, dynamic for flat modes
local function zdivide(L, tiler, opname)
  if is_static(L.shape) and is_static(L.stride) then
    return from_static(lay.zipped_divide(static_layout(L), tiler))
  end
  -- dynamic: every mode a leaf, tiler a table of integers (one per mode)
  local s, d = L.shape, L.stride
  if type(s) ~= "table" then s, d = { s }, { d } end
  if type(tiler) == "number" then tiler = { tiler } end
  if type(tiler) ~= "table" or #tiler ~= #s then
    fail(("%s: with dynamic shapes the tiler must give one integer per mode of %s"):format(opname, layout_str(L)))
  end
  local ts, td, rs, rd = {}, {}, {}, {}
  for i = 1, #s do
    local t = tiler[i]
    if lay.is_layout(t) then
      if lay.size(t) ~= lay.cosize(t) or t(1) ~= 1 and lay.size(t) > 1 then
        fail(opname .. ": with dynamic shapes tiler modes must be integers or compact n:1 layouts")
      end
      t = lay.size(t)
    end
    if type(t) ~= "number" or type(s[i]) == "table" then
      fail(("%s: with dynamic shapes only flat modes and integer tiles are supported (layout %s)"):format(opname, layout_str(L)))
    end
    ts[i], td[i] = t, d[i]
    rs[i], rd[i] = iceil_div(s[i], t), imul(t, d[i])
  end
  return { shape = { ts, rs }, stride = { td, rd } }
end

---------------------------------------------------------------------------
-- tensors
---------------------------------------------------------------------------
-- Largest offset a static layout reaches: sum over modes of (shape-1)*|stride|
-- (nil when a leaf is traced).
local function max_offset(s, d)
  if type(s) == "table" then
    if type(d) ~= "table" then return nil end
    local m = 0
    for i = 1, #s do
      local x = max_offset(s[i], d[i])
      if not x then return nil end
      m = m + x
    end
    return m
  end
  if type(s) ~= "number" or type(d) ~= "number" then return nil end
  -- an extent or stride beyond i32 needs i64 math even where it adds nothing
  -- (a mode of extent 1 with a huge stride; a huge extent with stride 0)
  if s > LIM32 or math.abs(d) > LIM32 then return LIM32 + 1 end
  return (s - 1) * math.abs(d)
end
M.max_offset = max_offset

-- Index type of a layout's offset math: i32 when every reachable offset fits
-- (static layouts, checked), i64 otherwise; traced layouts are i64 unless the
-- tensor they come from opted into 32-bit (`idx`, inherited by its views).
local function index_type(layout, idx)
  local m = max_offset(layout.shape, layout.stride)
  if m then return m > LIM32 and T_I64 or T_I32 end
  return idx or T_I64
end
M.index_type = index_type

-- new tensor: ptr (Value of pointer type), off (number|Value), layout (tree),
-- elem (IR scalar type); idx: the index type of a traced layout (default i64)
function M.make(ptr, off, layout, elem, space, align, idx)
  return setmetatable({ ptr = ptr, off = off, layout = layout, elem = elem, space = space,
    align = align or 1, idx = index_type(layout, idx) }, Tensor)
end

local function elem_bytes(t)
  return math.max(1, (tr.tinfo[t].bits) / 8)
end
M.elem_bytes = elem_bytes

-- a + b for element offsets: 64-bit when either part is i64 or a number
-- outside i32 (an i32 part is widened before the add, never truncated)
local function fits32(x) return type(x) == "number" and x >= -LIM32 - 1 and x <= LIM32 end
local function is64(x) return is_value(x) and x.t == T_I64 end
local function off_add(a, b)
  if type(a) == "number" and type(b) == "number" then return a + b end
  if is64(a) or is64(b) or (type(a) == "number" and not fits32(a)) or (type(b) == "number" and not fits32(b)) then
    if is_value(a) and a.t ~= T_I64 then a = tr.cvt(a, T_I64) end
    if is_value(b) and b.t ~= T_I64 then b = tr.cvt(b, T_I64) end
  end
  return iadd(a, b)
end
M.off_add = off_add

-- Swizzled tensors (a ComposedLayout Sw o k o L): T.layout is the inner layout
-- L, T.off starts at k, and the swizzle rides on the base pointer (a table
-- { ref, t, sw = {b, m, s} } in place of the traced pointer), so every view
-- made with M.make (slices, tiles, partitions) keeps it and folds its offsets
-- into T.off: element crd lives at base + Sw(T.off + L(crd)), computed with
-- traced and / shift / xor when the offset is traced.
local function swizzle_off(sw, o)
  local b, m, s = sw[1], sw[2], sw[3]
  if b == 0 or s == 0 then return o end
  local yyy = (2 ^ b - 1) * 2 ^ (m + math.max(s, 0))
  if type(o) == "number" then return lay.swizzle(b, m, s, o) end -- 64-bit, in the C core
  local OP = tr.OP
  if yyy > LIM32 and o.t ~= T_I64 then o = tr.cvt(o, T_I64) end -- the mask needs 64 bits
  local t = tr.binop(OP.AND, o, yyy)
  t = s > 0 and tr.binop(OP.SHR, t, s) or tr.binop(OP.SHL, t, -s)
  return tr.binop(OP.XOR, o, t)
end
M.swizzle_off = swizzle_off

-- the swizzle {B, M, S} of T's base pointer, or nil
local function ptr_swizzle(T)
  local p = T.ptr
  return type(p) == "table" and p.sw or nil
end
M.ptr_swizzle = ptr_swizzle

local function element_ptr(T, off)
  local S = tr.state()
  local o = off_add(T.off, off)
  local sw = ptr_swizzle(T)
  if sw then o = swizzle_off(sw, o) end
  local ov = tr.lift(o, fits32(o) and T_I32 or T_I64)
  setloc()
  return mk(C.cute_ir_gep(S.ir, T.ptr.ref, ov.ref), T.ptr.t)
end
M.element_ptr = element_ptr

-- the largest power of two (up to 2^20) known to divide x (number or Value)
local function pow2_div(x)
  local d
  if type(x) == "number" then
    if x == 0 then return 2 ^ 20 end
    d = x
  else
    d = x.div
  end
  local p = 1
  while p < 2 ^ 20 and d % (p * 2) == 0 do p = p * 2 end
  return p
end

-- alignment in bytes guaranteed for element offset o of T (no IR emitted)
local function offset_align(T, o)
  local eb = elem_bytes(T.elem)
  local d
  if type(T.off) == "number" and type(o) == "number" then d = pow2_div(T.off + o)
  else d = math.min(pow2_div(T.off), pow2_div(o)) end
  -- a swizzled tensor: contiguous only inside one 2^M-element row of the swizzle
  local sw = ptr_swizzle(T)
  if sw and sw[1] > 0 and sw[3] ~= 0 then d = math.min(d, 2 ^ sw[2]) end
  return math.min(T.align, d * eb)
end
M.offset_align = offset_align

-- identity tensors (cute.make_identity_tensor): no memory; the "offset" packs
-- the coordinate, one IDENT_BITS-bit digit per mode (CuTe's E<i> basis
-- strides), so tiles that run past the shape keep exact coordinates
local function ident_crd(T, off)
  local o = off_add(T.off, off)
  local r, bits = T.ptr.rank, T.ptr.bits
  if r == 1 then return o end
  local c = {}
  for i = 1, r do
    local x = idiv(o, 2 ^ (bits * (i - 1)))
    c[i] = i < r and imod(x, 2 ^ bits) or x
    if is_value(c[i]) and c[i].t ~= T_I32 then c[i] = tr.cvt(c[i], T_I32) end
  end
  return c
end

local function load_at(T, off)
  if T.space == "identity" then return ident_crd(T, off) end
  local S = tr.state()
  local p = element_ptr(T, off)
  setloc()
  return mk(C.cute_ir_load(S.ir, p.ref, 0, math.min(offset_align(T, off), elem_bytes(T.elem))), T.elem)
end

local function store_at(T, off, v)
  if T.space == "identity" then fail("cannot store into an identity tensor (cute.make_identity_tensor)") end
  local S = tr.state()
  local val = tr.lift(v, T.elem)
  if val.t ~= T.elem then val = tr.cvt(val, T.elem) end
  local p = element_ptr(T, off)
  setloc()
  cf.ir_check(S.ir, C.cute_ir_store(S.ir, p.ref, val.ref, 0, math.min(offset_align(T, off), elem_bytes(T.elem))))
end

local function index_offset(T, k)
  local L = T.layout
  if type(k) == "table" and #k == 0 and not rawequal(k, _) then
    fail("empty coordinate {}")
  end
  return crd2idx(k, L.shape, L.stride, T.idx)
end

-- T:slice(crd) / T[crd with _]: sub-tensor
function Tensor.slice(T, c)
  local outs, outd = {}, {}
  local off = slice(c, T.layout.shape, T.layout.stride, outs, outd, T.idx)
  local shape, stride = outs, outd
  return M.make(T.ptr, off_add(T.off, off), { shape = shape, stride = stride }, T.elem, T.space, T.align, T.idx)
end

Tensor.__index = function(T, k)
  local m = Tensor[k]
  if m then return m end
  if type(k) == "string" then
    if k == "shape" then return T.layout.shape end
    if k == "stride" then return T.layout.stride end
    if k == "iterator" then return element_ptr(T, 0) end -- CuTe DSL's t.iterator: the first element's address
    return nil
  end
  if T.space ~= "identity" then tr.need_trace("tensor indexing") end
  if has_under(k) then return Tensor.slice(T, k) end
  return load_at(T, index_offset(T, k))
end

Tensor.__newindex = function(T, k, v)
  if rawget(T, "space") == "identity" then fail("cannot store into an identity tensor (cute.make_identity_tensor)") end
  tr.need_trace("tensor stores")
  if type(k) == "string" then fail("cannot set field '" .. k .. "' of a tensor") end
  if has_under(k) then fail("cannot store into a slice with '_': index single elements") end
  store_at(T, index_offset(T, k), v)
end

Tensor.__tostring = function(T)
  if T.space == "identity" then return "identity_tensor<" .. layout_str(T.layout) .. ">" end
  local info = dt.scalars[T.elem]
  local sw = ptr_swizzle(T)
  local swz = sw and ("Sw<%d,%d,%d> o "):format(sw[1], sw[2], sw[3]) or ""
  return ("tensor<%s, %s, %s%s>"):format(info and info.ir or "?", T.space, swz, layout_str(T.layout))
end

Tensor.__len = function(T) return tsize(T.layout.shape) end

-- cute.size(T [, mode]): a Lua number when static and below 2^31, else a
-- traced value: an i64 constant for a larger static size, the product of the
-- runtime extents (i64, or i32 for a tensor with index_bits = 32) otherwise.
function M.size_of(T, mode)
  local s = T.layout.shape
  if mode ~= nil then
    if type(mode) ~= "number" or mode % 1 ~= 0 or mode < 0 or mode >= (type(s) == "table" and #s or 1) then
      fail(("cute.size: mode %s is out of range for the shape %s"):format(tostring(mode), M.describe(s)))
    end
    s = type(s) == "table" and s[mode + 1] or s
  end
  local n = tsize(s)
  if type(n) == "number" and n > LIM32 and tr.active() then return tr.const(T_I64, n) end
  return n
end
function Tensor.size(T) return M.size_of(T) end
-- t:load() / t:store(v) without a coordinate: the whole tensor as a TensorSSA (cute.tensor_ssa)
function Tensor.load(T, crd)
  if crd == nil then return require("cute.tensor_ssa").load(T, "Tensor:load") end
  return load_at(T, index_offset(T, crd))
end
function Tensor.store(T, crd, v)
  if v == nil and require("cute.tensor_ssa").is_tensor_ssa(crd) then
    return require("cute.tensor_ssa").store(T, crd, "Tensor:store")
  end
  store_at(T, index_offset(T, crd), v)
end
-- pointer to element crd (for atomics and raw access)
function Tensor.ptr_at(T, crd) return element_ptr(T, index_offset(T, crd or 0)) end

-- fill every element (static size) with v
function Tensor.fill(T, v)
  local n = tsize(T.layout.shape)
  if type(n) ~= "number" then fail("fill: tensor size must be static") end
  for i = 0, n - 1 do store_at(T, index_offset(T, i), v) end
end

---------------------------------------------------------------------------
-- tiling and partitioning
---------------------------------------------------------------------------
local function under_list(n)
  local t = {}
  for i = 1, n do t[i] = _ end
  return t
end

local function rank_of(s) return type(s) == "table" and #s or 1 end

-- zipped_divide etc. on tensors
function M.zipped_divide(T, tiler)
  local Z = zdivide(T.layout, tiler, "zipped_divide")
  return M.make(T.ptr, T.off, Z, T.elem, T.space, T.align, T.idx)
end

function M.logical_divide(T, tiler)
  if is_static(T.layout.shape) and is_static(T.layout.stride) then
    local r = lay.logical_divide(static_layout(T.layout), tiler)
    return M.make(T.ptr, T.off, from_static(r), T.elem, T.space, T.align, T.idx)
  end
  local Z = zdivide(T.layout, tiler, "logical_divide")
  -- regroup ((t0,t1..),(r0,r1..)) into ((t0,r0),(t1,r1),...)
  local s, d = {}, {}
  for i = 1, #Z.shape[1] do
    s[i] = { Z.shape[1][i], Z.shape[2][i] }; d[i] = { Z.stride[1][i], Z.stride[2][i] }
  end
  return M.make(T.ptr, T.off, { shape = s, stride = d }, T.elem, T.space, T.align, T.idx)
end

function M.tiled_divide(T, tiler)
  local Z = zdivide(T.layout, tiler, "tiled_divide")
  local s, d = { Z.shape[1] }, { Z.stride[1] }
  local rs, rd = Z.shape[2], Z.stride[2]
  if type(rs) ~= "table" then rs, rd = { rs }, { rd } end
  for i = 1, #rs do s[#s + 1] = rs[i]; d[#d + 1] = rd[i] end
  return M.make(T.ptr, T.off, { shape = s, stride = d }, T.elem, T.space, T.align, T.idx)
end

function M.flat_divide(T, tiler)
  local Z = zdivide(T.layout, tiler, "flat_divide")
  local s, d = {}, {}
  for part = 1, 2 do
    local ps, pd = Z.shape[part], Z.stride[part]
    if type(ps) ~= "table" then ps, pd = { ps }, { pd } end
    for i = 1, #ps do s[#s + 1] = ps[i]; d[#d + 1] = pd[i] end
  end
  return M.make(T.ptr, T.off, { shape = s, stride = d }, T.elem, T.space, T.align, T.idx)
end

-- cute.dice(T, dicer): the tensor over the modes paired with an integer in
-- dicer (same data, no offset: CuTe's dice of the layout)
function M.dice(T, dicer)
  local L = T.layout
  local s = lay.dice_tree(L.shape, dicer, "cute.dice", M.describe)
  local d = lay.dice_tree(L.stride, dicer, "cute.dice", M.describe)
  return M.make(T.ptr, T.off, { shape = s, stride = d }, T.elem, T.space, T.align, T.idx)
end

-- local_tile(T, tiler, coord): the tile at coord (coord may hold cute._ to keep
-- the whole range of tiles along a mode): result (tile modes..., kept rest modes).
function M.local_tile(T, tiler, coord)
  local Z = zdivide(T.layout, tiler, "local_tile")
  local r0 = rank_of(Z.shape[1])
  local r1 = rank_of(Z.shape[2])
  local c = coord
  if type(c) ~= "table" or rawequal(c, _) then c = { c } end
  if type(Z.shape[2]) ~= "table" then
    if #c ~= 1 then fail(("local_tile: coordinate %s for a single rest mode"):format(M.describe(coord))) end
    c = c[1]
  else
    if #c > r1 then
      fail(("local_tile: coordinate %s has more modes than the tiled tensor's rest %s"):format(
        M.describe(coord), M.describe(Z.shape[2])))
    end
    local cc = {}
    for i = 1, r1 do if c[i] == nil then cc[i] = _ else cc[i] = c[i] end end
    c = cc
  end
  local tile_c = type(Z.shape[1]) == "table" and under_list(r0) or _
  local sub = M.make(T.ptr, T.off, Z, T.elem, T.space, T.align, T.idx)
  return Tensor.slice(sub, { tile_c, c })
end

-- thread coordinate of index idx in thread layout TL: per leaf (idx / d) % s
local function idx2crd(idx, s, d)
  if type(s) == "table" then
    local t = {}
    for i = 1, #s do t[i] = idx2crd(idx, s[i], d[i]) end
    return t
  end
  if s == 1 then return 0 end
  return imod(idiv(idx, d), s)
end

local function shape_each(s) -- product_each
  if type(s) ~= "table" then return { s } end
  local t = {}
  for i = 1, #s do t[i] = tsize(s[i]) end
  return t
end

-- local_partition(T, thr_layout, thr_idx): the elements of T owned by thread
-- thr_idx when T is tiled by thr_layout (CuTe's outer partition).
function M.local_partition(T, thr_layout, idx)
  local TL = M.as_layout(thr_layout, "local_partition")
  if not (is_static(TL.shape) and is_static(TL.stride)) then
    fail("local_partition: the thread layout must be static")
  end
  local tshape = shape_each(TL.shape)
  local Z = zdivide(T.layout, tshape, "local_partition")
  local crd = idx2crd(iv(idx), TL.shape, TL.stride)
  -- flatten the thread coordinate to one entry per tiler mode
  local flat = {}
  if type(TL.shape) ~= "table" then flat = { crd }
  else
    for i = 1, #TL.shape do
      local s, d = TL.shape[i], TL.stride[i]
      if type(s) == "table" then
        -- hierarchical thread mode: linear coordinate within the mode
        local lin, mul = 0, 1
        for j = 1, #s do lin = iadd(lin, imul(crd[i][j], mul)); mul = mul * tsize(s[j]) end
        flat[i] = lin
      else
        flat[i] = crd[i]
      end
    end
  end
  local tile_c = (type(Z.shape[1]) == "table") and flat or flat[1]
  local r1 = rank_of(Z.shape[2])
  local rest_c = type(Z.shape[2]) == "table" and under_list(r1) or _
  local sub = M.make(T.ptr, T.off, Z, T.elem, T.space, T.align, T.idx)
  return Tensor.slice(sub, { tile_c, rest_c })
end

---------------------------------------------------------------------------
-- copies
---------------------------------------------------------------------------
local function flat_offsets(T, n)
  -- static element offsets (relative to T.off) of elements 0..n-1
  local offs = {}
  local Ls = static_layout(T.layout)
  for i = 0, n - 1 do offs[i] = Ls(i) end
  return offs
end


local function vec_type(S, elem, v)
  return C.cute_ir_t_vec(S.ir, elem, v)
end

-- cute.copy(src, dst): element-wise copy of equal-size tensors.  With static
-- layouts, runs of contiguous, aligned elements move as 16/8/4-byte vectors.
function M.copy(src, dst)
  tr.need_trace("cute.copy")
  -- a register tensor (cute.mma_partition) on either side copies itself
  for _, x in ipairs({ src, dst }) do
    local mt = type(x) == "table" and getmetatable(x)
    if mt and mt.__copy then return mt.__copy(src, dst) end
  end
  if not (is_tensor(src) and is_tensor(dst)) then fail("cute.copy(src, dst): both must be tensors") end
  local n, m = tsize(src.layout.shape), tsize(dst.layout.shape)
  if type(n) ~= "number" or type(m) ~= "number" then
    fail("cute.copy: tensor sizes must be static")
  end
  if n ~= m then fail(("cute.copy: sizes differ (%d vs %d)"):format(n, m)) end
  local S = tr.state()
  local static = is_static(src.layout.stride) and is_static(dst.layout.stride)
  if src.elem ~= dst.elem or not static then
    for i = 0, n - 1 do store_at(dst, index_offset(dst, i), load_at(src, index_offset(src, i))) end
    return
  end
  local so, do_ = flat_offsets(src, n), flat_offsets(dst, n)
  local eb = elem_bytes(src.elem)
  local i = 0
  while i < n do
    local v = 1
    for _, cand in ipairs({ 16, 8, 4 }) do
      local w = cand / eb
      if w >= 2 and w % 1 == 0 and i + w <= n then
        local ok = true
        for k = 1, w - 1 do
          if so[i + k] ~= so[i] + k or do_[i + k] ~= do_[i] + k then ok = false; break end
        end
        if ok and offset_align(src, so[i]) >= cand and offset_align(dst, do_[i]) >= cand then
          v = w; break
        end
      end
    end
    if v == 1 then
      store_at(dst, do_[i], load_at(src, so[i]))
    else
      -- the access is v * eb bytes: as v lanes of the element type, or (8-bit
      -- elements, or more than 8 lanes) as 32-bit words
      local vt
      if eb >= 2 and v <= 8 then vt = vec_type(S, src.elem, v)
      elseif v * eb == 4 then vt = tr.T.U32
      else vt = vec_type(S, tr.T.U32, v * eb / 4) end
      if vt == 0 then cf.ir_fail(S.ir, "cute.copy") end
      local sp = element_ptr(src, so[i])
      local dp = element_ptr(dst, do_[i])
      local sspace, dspace = dt.spaces[src.space], dt.spaces[dst.space]
      setloc()
      local spv = C.cute_ir_op(S.ir, tr.OP.PTRCAST, C.cute_ir_t_ptr(S.ir, vt, sspace), 1,
        ffi.new("int32_t[1]", sp.ref), 0, 0)
      local dpv = C.cute_ir_op(S.ir, tr.OP.PTRCAST, C.cute_ir_t_ptr(S.ir, vt, dspace), 1,
        ffi.new("int32_t[1]", dp.ref), 0, 0)
      local function refuse() cf.ir_fail(S.ir, "cute.copy") end
      if spv == 0 or dpv == 0 then refuse() end
      local val = C.cute_ir_load(S.ir, spv, 0, v * eb)
      if val == 0 then refuse() end
      cf.ir_check(S.ir, C.cute_ir_store(S.ir, dpv, val, 0, v * eb), "cute.copy")
    end
    i = i + v
  end
end

---------------------------------------------------------------------------
-- register and shared-memory tensors
---------------------------------------------------------------------------
local public_name = { make_fragment = "cute.make_fragment", shared = "cute.make_shared_tensor",
  dynshared = "cute.make_dynamic_shared_tensor" }
local function alloc_tensor(kind, layout, dtype, align)
  tr.need_trace("cute.make_fragment / shared tensors")
  kind = public_name[kind] or kind
  tr.pending_check()
  local sw, k = M.composed_parts(layout)
  if sw and kind == "cute.make_fragment" then
    fail(("%s: a register tensor cannot have the swizzled layout %s"):format(kind, tostring(layout)))
  end
  local L = sw and M.composed_inner(layout) or M.as_layout(layout, kind)
  if not (is_static(L.shape) and is_static(L.stride)) then fail(kind .. ": the layout must be static") end
  local elem = type(dtype) == "table" and tr.dtype_ir[dtype.name] or dtype
  if not tr.tinfo[elem] then fail(kind .. ": unknown dtype " .. tostring(dtype)) end
  local n = lay.cosize(static_layout(L))
  local S = tr.state()
  setloc()
  if align ~= nil and (type(align) ~= "number" or align < 1 or align > 1024 or align % 1 ~= 0
    or math.floor(math.log(align) / math.log(2) + 0.5) ~= math.log(align) / math.log(2)) then
    fail(("%s: alignment %s is not a power of two from 1 to 1024"):format(kind, tostring(align)))
  end
  if sw then
    -- Sw permutes offsets inside each aligned block of P = 2^(B+M+|S|) elements
    -- (and the block rows are what smem banks see): whole blocks, P-aligned
    local P = 2 ^ (sw[1] + sw[2] + math.abs(sw[3]))
    if k < 0 then fail(("%s: the composed offset %d of %s is negative"):format(kind, k, tostring(layout))) end
    n = math.ceil((n + k) / P) * P
    align = math.max(align or 16, math.min(1024, P * elem_bytes(elem)))
  end
  local eb = elem_bytes(elem)
  align = math.max(align or 16, eb)
  local bytes = n * eb
  local ref, space, off = nil, nil, 0
  if kind == "cute.make_fragment" then
    if bytes > 512 * 1024 then
      fail(("%s: %d elements of %d bytes (%d bytes) exceed the 512 KiB of local memory a thread can have")
        :format(kind, n, eb, bytes))
    end
    ref = C.cute_ir_local(S.ir, elem, n, align); space = "local"
  elseif kind == "cute.make_shared_tensor" then
    -- the kernel's static shared memory: at most 48 KiB in all
    local before = S.smem_static or 0
    local total = math.ceil(before / align) * align + bytes
    if total > M.STATIC_SMEM_LIMIT then
      fail(("%s: %d bytes here plus %d bytes of static shared memory allocated before make %d bytes, over " ..
        "the %d-byte (48 KiB) static limit; use cute.make_dynamic_shared_tensor (up to the device's opt-in " ..
        "limit, 227 KiB on an H100)"):format(kind, bytes, before, total, M.STATIC_SMEM_LIMIT))
    end
    S.smem_static = total
    ref = C.cute_ir_shared(S.ir, elem, n, align); space = "shared"
  else
    -- successive regions of the one dynamic buffer, each aligned; the total
    -- is recorded in the IR (dynsmem=) and checked at launch
    local before = S.smem_dyn or 0
    local start = math.ceil(before / align) * align
    local total = start + bytes
    if total + (S.smem_static or 0) > M.DYN_SMEM_LIMIT then
      fail(("%s: %d bytes here (at offset %d) make %d bytes of dynamic shared memory, plus %d static: over " ..
        "the %d-byte (227 KiB) limit of a thread block"):format(kind, bytes, start, total, S.smem_static or 0,
        M.DYN_SMEM_LIMIT))
    end
    S.smem_dyn = total
    if C.cute_ir_dyn_smem(S.ir, total) ~= 0 then tr.ir_fail() end
    ref = C.cute_ir_dyn_shared(S.ir, elem, align); space = "shared"
    off = start / eb
  end
  if ref == 0 then tr.ir_fail() end
  local pv = tr.mk(ref, C.cute_ir_value_type(S.ir, ref))
  if sw then
    if off ~= 0 then pv = element_ptr(M.make(pv, 0, L, elem, space, align), off) end
    return M.make({ ref = pv.ref, t = pv.t, sw = sw }, k, L, elem, space, align)
  end
  return M.make(pv, off, L, elem, space, align)
end
M.STATIC_SMEM_LIMIT = 48 * 1024
M.DYN_SMEM_LIMIT = 227 * 1024

-- cute.make_tensor(x, layout): x is a tensor (its memory, reinterpreted with a
-- new layout) or a traced pointer (e.g. T:ptr_at(crd)).
function M.make_tensor(x, layout)
  tr.need_trace("cute.make_tensor")
  local sw, k = M.composed_parts(layout)
  if sw then
    -- a swizzled view: the swizzle rides on a base pointer at x's element 0
    local base, align = x, nil
    if is_tensor(x) then
      if ptr_swizzle(x) or x.space == "identity" then
        fail(("cute.make_tensor: %s is already swizzled or has no memory; give a plain tensor or pointer for %s")
          :format(tostring(x), tostring(layout)))
      end
      base, align = element_ptr(x, 0), offset_align(x, 0) -- (a view keeps what is known of x's alignment)
    end
    local T = M.make_tensor(base, M.composed_inner(layout))
    return M.make({ ref = T.ptr.ref, t = T.ptr.t, sw = sw }, k, T.layout, T.elem, T.space, align or T.align, T.idx)
  end
  local L = M.as_layout(layout, "cute.make_tensor")
  if is_tensor(x) then return M.make(x.ptr, x.off, L, x.elem, x.space, x.align, x.idx) end
  if is_value(x) then
    local S = tr.state()
    local sp = ffi.new("int[1]")
    local elem = C.cute_ir_type_elem(S.ir, x.t, sp)
    if elem == 0 or C.cute_ir_type_kind(S.ir, x.t) ~= C.CUTE_T_PTR then
      fail("cute.make_tensor: expected a tensor or a traced pointer")
    end
    return M.make(x, 0, L, elem, dt.space_names[sp[0]] or "generic", dt.scalars[elem] and dt.scalars[elem].size or 1)
  end
  fail("cute.make_tensor: expected a tensor or a traced pointer, got " .. type(x))
end

-- cute.make_identity_tensor(shape): T[c] is the coordinate c itself (a Lua
-- number or table of numbers / traced i32), for residue predicates with
-- cute.elem_less; tiled, sliced and partitioned like any tensor.  Flat
-- shapes of rank 1..4 (static or traced extents), each mode < 2^(52/rank - 1).
function M.make_identity_tensor(shape)
  local F = "cute.make_identity_tensor"
  local s = shape
  if tr.is_var(s) then s = s.value end
  local flat = type(s) == "table" and not is_value(s)
  local list = flat and s or { s }
  if #list < 1 or #list > 4 then fail(("%s: shape %s must have rank 1 to 4"):format(F, M.describe(shape))) end
  local bits = math.floor(52 / #list)
  if #list == 1 then bits = 31 end
  local sh, st = {}, {}
  for i, x in ipairs(list) do
    if tr.is_var(x) then x = x.value end
    if type(x) == "table" and not is_value(x) then
      fail(("%s: shape %s: nested modes are not supported (give a flat shape)"):format(F, M.describe(shape)))
    end
    if type(x) == "number" and (x % 1 ~= 0 or x < 1 or x >= 2 ^ (bits - 1)) then
      fail(("%s: shape %s: extent %s must be an integer from 1 to %d"):format(F, M.describe(shape), tostring(x), 2 ^ (bits - 1) - 1))
    end
    if not (type(x) == "number" or (is_value(x) and tr.tinfo[x.t].int)) then
      fail(("%s: shape %s: extent %d is not an integer"):format(F, M.describe(shape), i))
    end
    sh[i], st[i] = x, 2 ^ (bits * (i - 1))
  end
  local L = flat and { shape = sh, stride = st } or { shape = sh[1], stride = 1 }
  return M.make({ rank = #list, bits = bits }, 0, L, nil, "identity", 1, #list == 1 and T_I32 or T_I64)
end

-- cute.elem_less(a, b): every mode of coordinate a below b's (a Lua boolean
-- when both are known, else a traced i1)
function M.elem_less(a, b)
  local F = "cute.elem_less"
  local la = (type(a) == "table" and not is_value(a)) and a or { a }
  local lb = (type(b) == "table" and not is_value(b)) and b or { b }
  if #la ~= #lb then
    fail(("%s: %s and %s have different ranks (%d, %d)"):format(F, M.describe(a), M.describe(b), #la, #lb))
  end
  local r = true
  for i = 1, #la do
    local x, y = la[i], lb[i]
    if tr.is_var(x) then x = x.value end
    if tr.is_var(y) then y = y.value end
    if (type(x) == "table" and not is_value(x)) or (type(y) == "table" and not is_value(y)) then
      local c = M.elem_less(x, y)
      if c == false then return false end
      if c ~= true then r = (r == true) and c or tr.binop(tr.OP.AND, r, c) end
    else
      if not ((type(x) == "number" or is_value(x)) and (type(y) == "number" or is_value(y))) then
        fail(("%s: mode %d: %s, %s are not integers"):format(F, i, tostring(x), tostring(y)))
      end
      if type(x) == "number" and type(y) == "number" then
        if not (x < y) then return false end
      else
        local c = tr.cmp_value(tr.OP.LT, x, y)
        r = (r == true) and c or tr.binop(tr.OP.AND, r, c)
      end
    end
  end
  return r
end

function M.make_fragment(layout, dtype) return alloc_tensor("make_fragment", layout, dtype) end
function M.make_fragment_like(T, dtype)
  -- a register tensor (cute.mma_partition) makes a register tensor of its shape
  local mt = type(T) == "table" and getmetatable(T)
  if mt and mt.__fragment_like then return mt.__fragment_like(T, dtype) end
  if not is_tensor(T) then fail("make_fragment_like: expected a tensor") end
  local L = T.layout
  if not (is_static(L.shape)) then fail("make_fragment_like: the tensor's shape must be static") end
  local compact = lay.make_layout(L.shape)
  return alloc_tensor("make_fragment", compact, dtype or T.elem)
end
function M.make_shared_tensor(layout, dtype, align) return alloc_tensor("shared", layout, dtype, align) end
function M.make_dynamic_shared_tensor(layout, dtype, align) return alloc_tensor("dynshared", layout, dtype, align) end

return M
