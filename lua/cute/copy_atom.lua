-- cute.copy_atom: copy operations, copy atoms and TiledCopy, with CuTe DSL's names.
--
--   cute.nvgpu.CopyUniversalOp()                          one thread, one 8..128-bit load/store
--   cute.nvgpu.cpasync.CopyG2SOp{cache_mode=}             cp.async.ca / .cg global -> shared (sm_80)
--   cute.nvgpu.cpasync.LoadCacheMode.ALWAYS / GLOBAL      .ca / .cg (the others have no cp.async)
--   cute.nvgpu.warp.LdMatrix8x8x16bOp{transpose=, num_matrices=}   ldmatrix (sm_75)
--   cute.nvgpu.warp.StMatrix8x8x16bOp{transpose=, num_matrices=}   stmatrix (sm_90)
--   cute.make_copy_atom(op, dtype, {num_bits_per_copy=}) -> atom: thr_id,
--        layout_src_tv / layout_dst_tv / layout_ref_tv (values of dtype) and
--        layout_src_tv_bits / ..._bits (CuTe's SrcLayout / DstLayout / RefLayout
--        in bits), num_bits_per_copy, instruction, min_arch, min_ptx,
--        atom:supports_arch(arch), atom:check_arch(arch)
--   cute.make_tiled_copy_tv(atom, thr_layout, val_layout) -> TiledCopy: size,
--        tiler_mn, layout_tv_tiled
--   cute.make_tiled_copy_A / _B / _C(atom, tiled_mma)
--   tiled_copy:get_slice(t) (cute.copy_partition), tiled_copy:retile(x) (cute.copy_matrix)
--
-- The bit layouts are those of cute/atom/copy_traits.hpp, copy_traits_sm75.hpp,
-- copy_traits_sm80.hpp and copy_traits_sm90.hpp; the element layouts are
-- CuTe's recast_layout<uint1_t, T> (upcast by the dtype's bits), as
-- Copy_Atom's ValLayoutSrc / ValLayoutDst / ValLayoutRef (docs/TENSORCORE.md).
local cf = require("cute.ffi")
local dt = require("cute.dtype")
local layout = require("cute.layout")

local M = {}
local L = layout.make_layout

local function show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) == "table" and getmetatable(v) == nil then
    local t = {}
    for i = 1, #v do t[i] = show(v[i]) end
    return "(" .. table.concat(t, ",") .. ")"
  end
  return tostring(v)
end

-- dtype -> name, bits: a runtime dtype (cute.float16, cute.tfloat32, ...), its
-- name, CuTe DSL's name ("Float16"), or the scalar constructor (cute.Float16)
local scalar_fn_name
local function dtype_info(x)
  local name
  if type(x) == "table" and type(x.name) == "string" then
    if dt.dtypes[x.name] == x then name = x.name end
  elseif type(x) == "string" then
    if dt.dtypes[x] then name = x
    elseif dt.by_cute[x] then name = dt.by_cute[x].dtype end
  elseif type(x) == "function" then
    if not scalar_fn_name then
      scalar_fn_name = {}
      local k = require("cute.kernel")
      for _, n in ipairs(dt.cute_names) do
        if k[n] then scalar_fn_name[k[n]] = dt.by_cute[n].dtype end
      end
    end
    name = scalar_fn_name[x]
  end
  if not name then return nil end
  return name, dt.by_dtype[name].bits
end

-- Read-only objects (ops, atoms, tiled copies): fields in a hidden table
local function frozen(what)
  local mt = {}
  mt.__index = function(o, k)
    local v = rawget(o, "__fields")[k]
    if v ~= nil then return v end
    return mt[k]
  end
  mt.__newindex = function(_, k)
    cf.fail(("%s is read-only (cannot set field %s)"):format(what, tostring(k)))
  end
  return mt
end
local function freeze(fields, mt)
  local obj = setmetatable({}, mt)
  rawset(obj, "__fields", fields)
  return obj
end

----------------------------------------------------------------------------
-- The ops
----------------------------------------------------------------------------
local Op = frozen("a copy op")
Op.__tostring = function(o)
  local f = rawget(o, "__fields")
  return ("cute.nvgpu.%s(%s)"):format(f.op_name, f.describe)
end
local function is_op(x) return type(x) == "table" and getmetatable(x) == Op end
M.is_copy_op = is_op

-- a keyword table or CuTe DSL's positional order (cute.mma's parser)
local get_args = require("cute.mma").get_args

local function make_op(name, fields, describe)
  fields.op_name, fields.describe = name, describe or ""
  return freeze(fields, Op)
end

local nvgpu, warp, cpasync = {}, {}, {}
M.nvgpu, M.warp, M.cpasync = nvgpu, warp, cpasync

function nvgpu.CopyUniversalOp(...)
  get_args("cute.nvgpu.CopyUniversalOp", {}, ...)
  return make_op("CopyUniversalOp", { kind = "universal" })
end

-- CuTe DSL's cute.nvgpu.cpasync.LoadCacheMode; cp.async has ALWAYS (.ca) and GLOBAL (.cg)
cpasync.LoadCacheMode = { ALWAYS = "ALWAYS", GLOBAL = "GLOBAL", STREAMING = "STREAMING", LAST_USE = "LAST_USE", NONE = "NONE" }

function cpasync.CopyG2SOp(...)
  local F = "cute.nvgpu.cpasync.CopyG2SOp"
  local a = get_args(F, { "cache_mode" }, ...)
  local mode = a.cache_mode
  if mode == nil then mode = "ALWAYS" end
  if mode ~= "ALWAYS" and mode ~= "GLOBAL" then
    cf.failf(F, "cache_mode = %s: cp.async caches ALWAYS (.ca) or GLOBAL (.cg) only (cute.nvgpu.cpasync.LoadCacheMode.ALWAYS / GLOBAL)",
      cpasync.LoadCacheMode[mode] and mode or show(mode))
  end
  return make_op("cpasync.CopyG2SOp", { kind = "cp.async", cache_mode = mode }, "cache_mode = " .. mode)
end

local function matrix_op(name)
  local F = "cute.nvgpu.warp." .. name
  return function(...)
    local a = get_args(F, { "transpose", "num_matrices" }, ...)
    local tr, nm = a.transpose, a.num_matrices
    if tr == nil then tr = false end
    if nm == nil then nm = 1 end
    if type(tr) ~= "boolean" then cf.failf(F, "transpose = %s is not a boolean", show(tr)) end
    if nm ~= 1 and nm ~= 2 and nm ~= 4 then cf.failf(F, "num_matrices = %s is not 1, 2 or 4", show(nm)) end
    return make_op("warp." .. name, { kind = name == "LdMatrix8x8x16bOp" and "ldmatrix" or "stmatrix",
      transpose = tr, num_matrices = nm }, ("transpose = %s, num_matrices = %d"):format(tostring(tr), nm))
  end
end
warp.LdMatrix8x8x16bOp = matrix_op("LdMatrix8x8x16bOp")
warp.StMatrix8x8x16bOp = matrix_op("StMatrix8x8x16bOp")

----------------------------------------------------------------------------
-- Traits: (src, dst, ref) layouts in bits, thread count
----------------------------------------------------------------------------
-- Copy_Traits<SM75_U32x{1,2,4}_LDSM_N> / <SM75_U16x{2,4,8}_LDSM_T>: the
-- source gives one 128-bit row per lane (x1, x2: lanes past 8 x num_matrices
-- repeat), the destination one 32-bit register per matrix
local function ldsm(tr, nm)
  local src
  if nm == 4 then src = L({ 32, 128 }, { 128, 1 })
  else src = L({ { 8 * nm, 4 / nm }, 128 }, { { 128, 0 }, 1 }) end
  local dst
  if not tr then
    dst = nm == 1 and L({ 32, 32 }, { 32, 1 }) or L({ 32, { 32, nm } }, { 32, { 1, 1024 } })
  elseif nm == 1 then
    dst = L({ { 4, 8 }, { 16, 2 } }, { { 256, 16 }, { 1, 128 } })
  else
    dst = L({ { 4, 8 }, { 16, 2, nm } }, { { 256, 16 }, { 1, 128, 1024 } })
  end
  return src, dst
end

-- CuTe's upcast<n> of a layout (cute/layout.hpp): stride-0 modes unchanged;
-- otherwise shape / (n / |stride|) and stride / n, each CuTe's shape_div
local function shape_div(a, b)
  if a % b == 0 then return a / b end
  if b % a == 0 then return a < 0 and -1 or 1 end
  cf.failf("cute.copy_atom upcast", "shape_div(%d, %d) is not defined", a, b)
end
local function upcast_leaf(s, d, n)
  if type(s) == "table" then
    local rs, rd = {}, {}
    for i = 1, #s do rs[i], rd[i] = upcast_leaf(s[i], d[i], n) end
    return rs, rd
  end
  if d == 0 then return s, d end
  return shape_div(s, shape_div(n, math.abs(d))), shape_div(d, n)
end
local function upcast(l, n)
  if n == 1 then return l end
  local s, d = upcast_leaf(layout.shape(l), layout.stride(l), n)
  return L(s, d)
end
M.upcast = upcast


local Atom = frozen("a copy atom")
Atom.__tostring = function(a)
  local f = rawget(a, "__fields")
  return ("CopyAtom(%s, %s)\n  instruction: %s (%s+)\n  num_bits_per_copy: %d\n  thr_id: %s\n  layout_src_tv: %s\n  layout_dst_tv: %s\n  layout_ref_tv: %s")
    :format(tostring(f.op), f.value_type, f.instruction or "(ld/st)", f.min_arch, f.num_bits_per_copy,
      tostring(f.thr_id), tostring(f.layout_src_tv), tostring(f.layout_dst_tv), tostring(f.layout_ref_tv))
end
local function is_atom(x) return type(x) == "table" and getmetatable(x) == Atom end
M.is_copy_atom = is_atom

require("cute.mma").arch_methods(Atom, "CopyAtom")

-- cute.make_copy_atom(op, dtype [, {num_bits_per_copy = n}])
function M.make_copy_atom(op, dtype, opts)
  local F = "cute.make_copy_atom"
  if not is_op(op) then
    cf.failf(F, "%s is not a copy op (cute.nvgpu.CopyUniversalOp(), cute.nvgpu.cpasync.CopyG2SOp{...}, cute.nvgpu.warp.LdMatrix8x8x16bOp{...}...)",
      is_atom(op) and "a copy atom" or show(op))
  end
  local name, bits = dtype_info(dtype)
  if not name then cf.failf(F, "%s is not a dtype (cute.float16, \"bfloat16\", cute.Float32...)", show(dtype)) end
  if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
    cf.failf(F, "options %s are not a table ({num_bits_per_copy = 128})", show(opts))
  end
  for k, v in pairs(opts or {}) do
    if k ~= "num_bits_per_copy" then
      cf.failf(F, "unknown argument %s = %s (arguments: num_bits_per_copy)", tostring(k), show(v))
    end
  end
  local nb = opts and opts.num_bits_per_copy
  local OF = F .. " " .. op.op_name
  local thr, src, dst, ref, instr, min_arch, min_ptx
  if op.kind == "universal" or op.kind == "cp.async" then
    local allowed = op.kind == "universal" and { 8, 16, 32, 64, 128 } or { 32, 64, 128 }
    local text = op.kind == "universal" and "8, 16, 32, 64 or 128" or "32, 64 or 128 (4, 8 or 16 bytes)"
    if nb == nil then
      if op.kind == "cp.async" then cf.failf(OF, "num_bits_per_copy is missing (%s)", text) end
      nb = bits
    end
    local ok = false
    for _, b in ipairs(allowed) do ok = ok or nb == b end
    if not ok then cf.failf(OF, "num_bits_per_copy = %s is not %s", show(nb), text) end
    if nb % bits ~= 0 then
      cf.failf(OF, "num_bits_per_copy = %d is not a whole number of %s elements (%s is %d bits)", nb, name, name, bits)
    end
    if op.kind == "cp.async" and op.cache_mode == "GLOBAL" and nb ~= 128 then
      cf.failf(OF, "num_bits_per_copy = %d with cache_mode GLOBAL: cp.async.cg copies 128 bits (16 bytes) only", nb)
    end
    -- Copy_Traits<UniversalCopy<S,D>> and <SM80_CP_ASYNC_CACHE{ALWAYS,GLOBAL}<S,D>>:
    -- one thread, (1, bits)
    thr = L(1)
    src = L({ 1, nb })
    dst, ref = src, src
    if op.kind == "cp.async" then
      instr = op.cache_mode == "GLOBAL" and "cp.async.cg.shared.global" or "cp.async.ca.shared.global"
      min_arch, min_ptx = "sm_80", "7.0"
    else
      min_arch, min_ptx = "sm_50", "6.0"
    end
  else
    if nb ~= nil then
      cf.failf(OF, "num_bits_per_copy = %s: the copy size of %s is fixed (num_matrices x 32 bits per thread)", show(nb), op.op_name)
    end
    -- ldmatrix without .trans moves 16-byte rows as b16 pairs whatever the
    -- elements are: 8-bit and 32-bit K-major elements too (CuTe's
    -- SM75_U32x*_LDSM_N on int8 / tf32 data), the layouts recast below
    if bits ~= 16 and (op.kind ~= "ldmatrix" or op.transpose or (bits ~= 8 and bits ~= 32)) then
      if op.kind == "ldmatrix" and not op.transpose and bits ~= 8 and bits ~= 32 then
        cf.failf(OF, "dtype %s is %d bits: ldmatrix moves 8-, 16- or 32-bit elements", name, bits)
      end
      cf.failf(OF, "dtype %s is %d bits: %s moves 16-bit elements (float16, bfloat16, int16, uint16)%s", name, bits,
        op.kind == "ldmatrix" and "ldmatrix with transpose" or "stmatrix",
        op.kind == "ldmatrix" and "; without transpose also 8- and 32-bit ones" or "")
    end
    nb = 32 * op.num_matrices
    thr = L(32)
    local s, d = ldsm(op.transpose, op.num_matrices)
    if op.kind == "ldmatrix" then
      src, dst, ref = s, d, d
      min_arch, min_ptx = "sm_75", "6.5"
    else -- Copy_Traits<SM90_U32x*_STSM_N / SM90_U16x*_STSM_T>: LDSM's, swapped
      src, dst, ref = d, s, d
      min_arch, min_ptx = "sm_90", "7.8"
    end
    instr = ("%s.sync.aligned.m8n8.x%d%s.shared.b16"):format(op.kind, op.num_matrices, op.transpose and ".trans" or "")
  end
  return freeze({
    op = op, value_type = name, num_bits_per_copy = nb, thr_id = thr,
    layout_src_tv_bits = src, layout_dst_tv_bits = dst, layout_ref_tv_bits = ref,
    layout_src_tv = upcast(src, bits), layout_dst_tv = upcast(dst, bits), layout_ref_tv = upcast(ref, bits),
    instruction = instr, min_arch = min_arch, min_ptx = min_ptx,
  }, Atom)
end

----------------------------------------------------------------------------
-- TiledCopy (cute/atom/copy_atom.hpp): an atom over a (thread, value) ->
-- tile-coordinate layout and the tile it covers
----------------------------------------------------------------------------
local TiledCopy = frozen("a TiledCopy")
TiledCopy.__tostring = function(t)
  local f = rawget(t, "__fields")
  local tl = {}
  for i, v in ipairs(f.tiler_mn) do tl[i] = tostring(v) end
  return ("TiledCopy\n  atom: %s\n  size: %d\n  tiler_mn: (%s)\n  layout_tv_tiled: %s")
    :format(f.atom.instruction or (f.atom.op.op_name .. " " .. f.atom.num_bits_per_copy .. "b"), f.size,
      table.concat(tl, ","), tostring(f.layout_tv_tiled))
end
local function is_tiled_copy(x) return type(x) == "table" and getmetatable(x) == TiledCopy end
M.is_tiled_copy = is_tiled_copy

-- CuTe's TiledCopy::tile2thrfrg on the tile itself: the tiled (thread, value)
-- layout cut into atoms, ((atom_thr, atom_val), (rest_thr, rest_val)), each
-- atom's reference (thread, value) turned into the source's or destination's
-- by right_inverse(ref) o trg, then zipped to ((trg_thr, rest_thr), (trg_val, rest_val))
local function tiled_trg(t, trg)
  local a = t.atom
  local athr = layout.size(a.thr_id)
  local aval = layout.size(layout.get(a.layout_ref_tv, 1))
  local z = layout.zipped_divide(t.layout_tv_tiled, { L(athr), L(aval) })
  local ref2trg = layout.composition(layout.right_inverse(a.layout_ref_tv), trg)
  local tv = layout.composition(z, { ref2trg, layout._ })
  local function part(i, j)
    local m = layout.get(layout.get(tv, i), j)
    return layout.shape(m), layout.stride(m)
  end
  local s00, d00 = part(0, 0)
  local s01, d01 = part(0, 1)
  local s10, d10 = part(1, 0)
  local s11, d11 = part(1, 1)
  -- coalesced by CuTe's profile (_1, (_1, _1)): the thread mode, each value mode
  local thr = layout.coalesce(L({ s00, s10 }, { d00, d10 }))
  local v0, v1 = layout.coalesce(L(s01, d01)), layout.coalesce(L(s11, d11))
  return L({ layout.shape(thr), { layout.shape(v0), layout.shape(v1) } },
    { layout.stride(thr), { layout.stride(v0), layout.stride(v1) } })
end
-- (thread, value) -> the tile's column-major index, as the source / destination
-- of the atoms see their values (CuTe's get_layoutS_TV / get_layoutD_TV)
function TiledCopy.get_layoutS_TV(t) return tiled_trg(t, t.atom.layout_src_tv) end
function TiledCopy.get_layoutD_TV(t) return tiled_trg(t, t.atom.layout_dst_tv) end
-- tiled_copy:get_slice(t) -> ThrCopy (partition_S / partition_D): cute.copy_partition
function TiledCopy.get_slice(t, idx) return require("cute.copy_partition").get_slice(t, idx) end
TiledCopy.get_thr_slice = TiledCopy.get_slice
-- tiled_copy:retile(frag): the fragment in the atoms' value order (cute.copy_matrix)
function TiledCopy.retile(t, x) return require("cute.copy_matrix").retile(t, x, "TiledCopy:retile") end
local tiled_props = { layout_src_tv_tiled = TiledCopy.get_layoutS_TV, layout_dst_tv_tiled = TiledCopy.get_layoutD_TV }
local tc_index = TiledCopy.__index
TiledCopy.__index = function(o, k)
  if tiled_props[k] then return tiled_props[k](o) end -- CuTe DSL's property names
  return tc_index(o, k)
end

-- make_tiled_copy_impl: checks that the (thread, value) layout is made of whole atoms
local function tiled_copy(F, atom, layout_tv, tiler, what)
  local athr = layout.size(atom.thr_id)
  local aval = layout.size(layout.get(atom.layout_ref_tv, 1))
  local nthr = layout.size(layout.get(layout_tv, 0))
  local nval = layout.size(layout.get(layout_tv, 1))
  if nthr % athr ~= 0 then
    cf.failf(F, "%s has %d threads, not a multiple of the atom's %d (%s)", what, nthr, athr, atom.op.op_name)
  end
  if nval % aval ~= 0 then
    cf.failf(F, "%s has %d values per thread, not a multiple of the atom's %d (%d-bit copies of %s)",
      what, nval, aval, atom.num_bits_per_copy, atom.value_type)
  end
  return freeze({ atom = atom, layout_tv_tiled = layout_tv, tiler_mn = tiler, size = nthr }, TiledCopy)
end

local function want_atom(F, atom)
  if not is_atom(atom) then
    cf.failf(F, "%s is not a copy atom (cute.make_copy_atom(op, dtype, ...))", is_op(atom) and tostring(atom) or show(atom))
  end
end

-- CuTe DSL's make_tiled_copy_tv / make_layout_tv: layout_mn = raked_product(thr, val)
-- maps the tile's (m, n) to thread + size(thr) * value; its right inverse,
-- shaped (size(thr), size(val)), maps (thread, value) to the tile's
-- column-major index; the tile is product_each(shape(layout_mn))
function M.make_tiled_copy_tv(atom, thr_layout, val_layout)
  local F = "cute.make_tiled_copy_tv"
  want_atom(F, atom)
  if not layout.is_layout(thr_layout) then cf.failf(F, "thr_layout = %s is not a layout", show(thr_layout)) end
  if not layout.is_layout(val_layout) then cf.failf(F, "val_layout = %s is not a layout", show(val_layout)) end
  local layout_mn = layout.raked_product(thr_layout, val_layout)
  local tv = layout.composition(layout.right_inverse(layout_mn),
    L({ layout.size(thr_layout), layout.size(val_layout) }))
  local tiler = {}
  for i = 0, layout.rank(layout_mn) - 1 do tiler[i + 1] = layout.size(layout.get(layout_mn, i)) end
  return tiled_copy(F, atom, tv, tiler, ("thr_layout %s x val_layout %s"):format(tostring(thr_layout), tostring(val_layout)))
end

-- make_tiled_copy_A/B/C: the TiledMMA's layout of the operand, its tile (M,K) / (N,K) / (M,N)
local modes = { A = { 1, 3 }, B = { 2, 3 }, C = { 1, 2 } }
for which, ij in pairs(modes) do
  M["make_tiled_copy_" .. which] = function(atom, tiled_mma)
    local F = "cute.make_tiled_copy_" .. which
    want_atom(F, atom)
    if not require("cute.mma").is_tiled_mma(tiled_mma) then
      cf.failf(F, "%s is not a TiledMMA (cute.make_tiled_mma(...))", show(tiled_mma))
    end
    local tv = tiled_mma["get_layout" .. which .. "_TV"](tiled_mma)
    local ts = tiled_mma.tile_size_mnk
    return tiled_copy(F, atom, tv, { ts[ij[1]], ts[ij[2]] }, "the TiledMMA's " .. which .. " layout")
  end
end

----------------------------------------------------------------------------
-- cute.copy(atom, src, dst) with a universal-copy atom: the values of src
-- and dst, in groups of num_bits_per_copy bits (colexicographic order),
-- each group one load and one store of that width.  Each group must be
-- contiguous and aligned to its width in both tensors (static layouts).
----------------------------------------------------------------------------
local is_static = require("cute.tensor").is_static

function M.copy(atom, src, dst)
  local F = "cute.copy"
  local tensor = require("cute.tensor")
  local tr = require("cute.trace")
  tr.need_trace(F)
  if is_tiled_copy(atom) then atom = atom.atom end
  want_atom(F, atom)
  if atom.op.kind ~= "universal" then
    cf.failf(F, "%s atoms are not lowered by cute.copy yet: call cute.arch.%s in the kernel", atom.op.op_name,
      atom.op.kind == "cp.async" and "cp_async" or atom.op.kind)
  end
  for _, x in ipairs({ { "src", src }, { "dst", dst } }) do
    local T = x[2]
    if not tensor.is_tensor(T) then cf.failf(F, "%s = %s is not a kernel-side tensor", x[1], show(T)) end
    if T.elem ~= tr.dtype_ir[atom.value_type] then
      cf.failf(F, "%s holds %s, the atom copies %s", x[1], tostring(tr.tinfo[T.elem] and tr.tinfo[T.elem].dtype or T.elem),
        atom.value_type)
    end
    if not (is_static(T.layout.shape) and is_static(T.layout.stride)) then
      cf.failf(F, "%s has a layout known only at run time (%s): the atom's groups must be known when tracing",
        x[1], tensor.layout_str(T.layout))
    end
  end
  local ls = layout.make_layout(src.layout.shape, src.layout.stride)
  local ld = layout.make_layout(dst.layout.shape, dst.layout.stride)
  local n, m = layout.size(ls), layout.size(ld)
  if n ~= m then cf.failf(F, "src has %d values, dst %d", n, m) end
  local _, bits = dtype_info(atom.value_type)
  local v = atom.num_bits_per_copy / bits
  if n % v ~= 0 then
    cf.failf(F, "%d values are not a whole number of the atom's %d-value (%d-bit) copies", n, v, atom.num_bits_per_copy)
  end
  local bytes = atom.num_bits_per_copy / 8
  for g = 0, n / v - 1 do
    local subs = {}
    for i, x in ipairs({ { "src", src, ls }, { "dst", dst, ld } }) do
      local T, Lx = x[2], x[3]
      local o = Lx(g * v)
      for j = 1, v - 1 do
        if Lx(g * v + j) ~= o + j then
          cf.failf(F, "%s values %d..%d are not contiguous (layout %s): a %d-bit copy needs %d adjacent elements",
            x[1], g * v, g * v + v - 1, tostring(Lx), atom.num_bits_per_copy, v)
        end
      end
      local al = tensor.offset_align(T, o)
      if al < bytes then
        cf.failf(F, "%s values %d..%d are only known to be %d-byte aligned: a %d-bit copy needs %d bytes",
          x[1], g * v, g * v + v - 1, al, atom.num_bits_per_copy, bytes)
      end
      subs[i] = tensor.make(T.ptr, tensor.off_add(T.off, o), { shape = v, stride = 1 }, T.elem, T.space, T.align, T.idx)
    end
    -- contiguous and aligned: tensor.copy moves the group as one vector
    tensor.copy(subs[1], subs[2])
  end
end

return M
