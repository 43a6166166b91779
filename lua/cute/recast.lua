-- cute.recast_tensor(T, dtype): CuTe DSL's recast_tensor / CuTe's recast<T>:
-- the memory of a kernel tensor seen as elements of another width, e.g. one
-- shared-memory buffer holding int8 tiles during a GEMM's main loop and int32
-- results in its epilogue.  The layout is CuTe's recast_layout<Old, New>:
-- to wider elements (n = new bits / old bits) upcast<n> (stride-0 modes kept,
-- the stride-1 mode's size divided by n, other strides divided by n); to
-- narrower ones downcast<n> (the stride-1 mode's size times n, other strides
-- times n); equal widths keep it.  The base pointer is T's first element;
-- what is known of its alignment (bytes) is kept.
local cf = require("cute.ffi")
local C = cf.C
local layout = require("cute.layout")
local ten = require("cute.tensor")
local tr = require("cute.trace")
local dt = require("cute.dtype")

local M = {}

local function dtype_ir(x)
  local name = x
  if type(x) == "table" and type(x.name) == "string" then name = x.name end
  if type(name) == "string" then
    if tr.dtype_ir[name] then return tr.dtype_ir[name], name end
    local c = dt.by_cute[name]
    if c then return tr.dtype_ir[c.dtype], c.dtype end
  end
  return nil
end

-- CuTe's downcast<n>: the stride-1 mode's size times n, other strides times n
local function downcast_leaf(s, d, n)
  if type(s) == "table" then
    local rs, rd = {}, {}
    for i = 1, #s do rs[i], rd[i] = downcast_leaf(s[i], d[i], n) end
    return rs, rd
  end
  if d == 1 or d == -1 then return s * n, d end
  return s, d * n
end

function M.recast_tensor(T, dtype)
  local F = "cute.recast_tensor"
  tr.need_trace(F)
  if not ten.is_tensor(T) or T.space == "identity" then
    cf.failf(F, "%s is not a kernel tensor in memory", ten.is_tensor(T) and tostring(T) or (type(T) .. " " .. tostring(T)))
  end
  local e, name = dtype_ir(dtype)
  if not e then cf.failf(F, "%s is not a dtype (cute.int32, \"float32\", \"Int8\"...)", tostring(dtype)) end
  if ten.ptr_swizzle(T) then
    cf.failf(F, "%s is swizzled: recast the plain buffer first, then make the swizzled view of it", tostring(T))
  end
  if not (ten.is_static(T.layout.shape) and ten.is_static(T.layout.stride)) then
    cf.failf(F, "%s has a layout known only at run time (%s)", tostring(T), ten.layout_str(T.layout))
  end
  local ob, nb = tr.tinfo[T.elem].bits, tr.tinfo[e].bits
  local L = layout.make_layout(T.layout.shape, T.layout.stride)
  local R
  if nb == ob then
    R = L
  elseif nb > ob then
    if nb % ob ~= 0 then cf.failf(F, "%d-bit elements do not recast to %d-bit ones", ob, nb) end
    local ok, r = pcall(require("cute.copy_atom").upcast, L, nb / ob)
    if not ok then
      cf.failf(F, "the layout %s of %s does not recast to %s (%d %d-bit elements per %s)", tostring(L), tostring(T),
        name, nb / ob, ob, name)
    end
    R = r
  else
    if ob % nb ~= 0 then cf.failf(F, "%d-bit elements do not recast to %d-bit ones", ob, nb) end
    local s, d = downcast_leaf(L:shape(), L:stride(), ob / nb)
    R = layout.make_layout(s, d)
  end
  local al = ten.offset_align(T, 0)
  if nb > ob and al * 8 < nb then
    cf.failf(F, "%s is only known to be %d-byte aligned: %s elements need %d bytes", tostring(T), al, name, nb / 8)
  end
  local S = tr.state()
  local p = T:ptr_at(0)
  local sp = require("ffi").new("int[1]")
  C.cute_ir_type_elem(S.ir, p.t, sp)
  local pt = C.cute_ir_t_ptr(S.ir, e, sp[0])
  tr.setloc()
  local q = C.cute_ir_op(S.ir, tr.OP.PTRCAST, pt, 1, require("ffi").new("int32_t[1]", p.ref), 0, 0)
  if q == 0 or pt == 0 then tr.ir_fail() end
  return ten.make(tr.mk(q, pt), 0, { shape = R:shape(), stride = R:stride() }, e, T.space, math.max(al, nb / 8))
end

return M
