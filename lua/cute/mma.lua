-- cute.mma: MMA operations and atoms, with CuTe DSL's names.
--
--   cute.nvgpu.warp.MmaF16BF16Op{ab_dtype=, acc_dtype=, shape_mnk=}   mma.sync f16/bf16 (sm_80)
--   cute.nvgpu.warp.MmaTF32Op{shape_mnk=}                             tf32, f32 accumulators (sm_80)
--   cute.nvgpu.warp.MmaI8Op{a_dtype=, b_dtype=, acc_dtype=, shape_mnk=, overflow=}  s8/u8 -> s32 (sm_80)
--   cute.nvgpu.warp.MmaFP8Op{ab_dtype=, acc_dtype=, shape_mnk=}       e4m3/e5m2 (sm_89)
--   cute.nvgpu.warp.MmaF64Op{shape_mnk=}                              f64 m8n8k4 (sm_80; not in CuTe DSL)
--   cute.nvgpu.MmaUniversalOp(abacc_dtype)                            one thread, one FMA (SIMT)
--   cute.make_mma_atom(op)  -> atom: shape_mnk, thr_id, layout_A_tv / layout_B_tv /
--        layout_C_tv (CuTe's ALayout / BLayout / CLayout; CuTe DSL's tv_layout_A/B/C),
--        instruction, num_registers, register_type, min_arch, min_ptx,
--        atom:supports_arch(arch), atom:check_arch(arch)
--
-- Every constructor takes a keyword table or CuTe DSL's positional order.
-- The layouts map (thread, value) to the column-major index of the element in
-- the M x K (A), N x K (B) or M x N (C) tile, as cute/atom/mma_traits_sm80.hpp
-- and mma_traits_sm89.hpp define them (docs/TENSORCORE.md).
local cf = require("cute.ffi")
local dt = require("cute.dtype")
local layout = require("cute.layout")

local M = {}

-- dtype names: the runtime's (cute.float16, "float16", "Float16",
-- cute.Float16; tf32 and the fp8 formats are runtime dtypes too)
local scalar_fn_name -- cute.Float16 (a kernel scalar constructor) -> "float16"
local function dtype_name(x)
  if type(x) == "table" and type(x.name) == "string" and dt.dtypes[x.name] == x then return x.name end
  if type(x) == "string" then
    if dt.dtypes[x] then return x end
    if dt.by_cute[x] then return dt.by_cute[x].dtype end
    return nil
  end
  if type(x) == "function" then
    if not scalar_fn_name then
      scalar_fn_name = {}
      local k = require("cute.kernel")
      for _, n in ipairs(dt.cute_names) do
        if k[n] then scalar_fn_name[k[n]] = dt.by_cute[n].dtype end
      end
    end
    return scalar_fn_name[x]
  end
  return nil
end

-- PTX type suffix and bits of a dtype (from cute.dtype: tf32, e4m3, e5m2 for
-- the storage-only formats)
local function ptx_type(name)
  local info = dt.by_dtype[name]
  if info.kind == "fp8" then return info.ir:sub(3), info.bits end
  if info.kind == "int" then return "s" .. info.bits, info.bits end
  return info.ir, info.bits -- f16 bf16 f32 f64 u8 u32 ...
end

local function shape_text(s)
  if type(s) ~= "table" then return tostring(s) end
  local t = {}
  for i = 1, #s do t[i] = tostring(s[i]) end
  return "(" .. table.concat(t, ",") .. ")"
end

local function show(v)
  if type(v) == "table" and getmetatable(v) == nil then return shape_text(v) end
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

local function choices(list)
  local t = {}
  for i, v in ipairs(list) do t[i] = shape_text(v) end
  return table.concat(t, ", ")
end

-- Read-only objects: ops and atoms.  Fields live in a hidden table; writing
-- any field is an error naming the object.
local function freeze(kind, fields, mt)
  local obj = setmetatable({}, mt)
  rawset(obj, "__fields", fields)
  rawset(obj, "__kind", kind)
  return obj
end

local Op = {}
Op.__index = function(o, k)
  local f = rawget(o, "__fields")
  return f[k]
end
Op.__newindex = function(o, k)
  cf.failf("cute.nvgpu", "%s is read-only (cannot set field %s)", rawget(o, "__kind"), tostring(k))
end
Op.__tostring = function(o)
  local f = rawget(o, "__fields")
  return ("cute.nvgpu.%s(%s)"):format(f.op_name, f.describe)
end

local function is_op(x) return type(x) == "table" and getmetatable(x) == Op end
M.is_op = is_op

-- Arguments: a keyword table ({ab_dtype = ...}) or CuTe DSL's positional order.
local function get_args(fname, names, ...)
  local first = ...
  local args = {}
  if select("#", ...) == 1 and type(first) == "table" and getmetatable(first) == nil then
    local keyword = false
    for k in pairs(first) do
      if type(k) == "string" then keyword = true end
    end
    if keyword then
      local known = {}
      for _, n in ipairs(names) do known[n] = true end
      for k, v in pairs(first) do
        if not known[k] then
          cf.failf(fname, "unknown argument %s = %s (arguments: %s)", tostring(k), show(v), table.concat(names, ", "))
        end
        args[k] = v
      end
      return args
    end
  end
  local n = select("#", ...)
  if n > #names then
    cf.failf(fname, "takes at most %d arguments (%s), got %d", #names, table.concat(names, ", "), n)
  end
  for i = 1, n do args[names[i]] = (select(i, ...)) end
  return args
end

M.get_args = get_args -- (cute.copy_atom's ops take arguments the same way)

local function need(fname, args, name)
  if args[name] == nil then cf.failf(fname, "argument %s is missing", name) end
  return args[name]
end

local function want_dtype(fname, args, name, allowed)
  local v = need(fname, args, name)
  local n = dtype_name(v)
  if not n then
    cf.failf(fname, "%s = %s is not a dtype (allowed: %s)", name, show(v), table.concat(allowed, ", "))
  end
  for _, a in ipairs(allowed) do
    if a == n then return n end
  end
  cf.failf(fname, "%s = %s is not supported (allowed: %s)", name, n, table.concat(allowed, ", "))
end

local function want_shape(fname, args, allowed)
  local v = need(fname, args, "shape_mnk")
  if type(v) == "table" and #v == 3 then
    for _, s in ipairs(allowed) do
      if v[1] == s[1] and v[2] == s[2] and v[3] == s[3] then return { s[1], s[2], s[3] } end
    end
  end
  cf.failf(fname, "shape_mnk = %s is not a shape of this op (allowed: %s)", show(v), choices(allowed))
end

local function make_op(name, fields)
  fields.op_name = name
  return freeze("cute.nvgpu." .. name, fields, Op)
end
M.make_op = make_op -- (cute.wgmma's warpgroup ops)

----------------------------------------------------------------------------
-- The ops
----------------------------------------------------------------------------
local warp = {}
M.warp = warp

local F16BF16 = "cute.nvgpu.warp.MmaF16BF16Op"
function warp.MmaF16BF16Op(...)
  local a = get_args(F16BF16, { "ab_dtype", "acc_dtype", "shape_mnk" }, ...)
  local ab = want_dtype(F16BF16, a, "ab_dtype", { "float16", "bfloat16" })
  local acc = want_dtype(F16BF16, a, "acc_dtype", { "float32", "float16" })
  if ab == "bfloat16" and acc ~= "float32" then
    cf.failf(F16BF16, "acc_dtype = %s with ab_dtype = bfloat16: bf16 inputs accumulate in float32 only", acc)
  end
  local shape = want_shape(F16BF16, a, { { 16, 8, 8 }, { 16, 8, 16 } })
  return make_op("warp.MmaF16BF16Op", {
    kind = "f16bf16", ab_dtype = ab, a_dtype = ab, b_dtype = ab, acc_dtype = acc, shape_mnk = shape,
    describe = ("ab_dtype=%s, acc_dtype=%s, shape_mnk=%s"):format(ab, acc, shape_text(shape)),
  })
end

local TF32 = "cute.nvgpu.warp.MmaTF32Op"
function warp.MmaTF32Op(...)
  local a = get_args(TF32, { "shape_mnk" }, ...)
  local shape = want_shape(TF32, a, { { 16, 8, 4 }, { 16, 8, 8 } })
  return make_op("warp.MmaTF32Op", {
    kind = "tf32", ab_dtype = "tfloat32", a_dtype = "tfloat32", b_dtype = "tfloat32",
    acc_dtype = "float32", shape_mnk = shape, describe = "shape_mnk=" .. shape_text(shape),
  })
end

-- CuTe DSL's MmaIntOverflow: SATURATE (.satfinite, the default) or WRAP
warp.MmaIntOverflow = { SATURATE = "satfinite", WRAP = "wrapped" }

local I8 = "cute.nvgpu.warp.MmaI8Op"
function warp.MmaI8Op(...)
  local a = get_args(I8, { "a_dtype", "b_dtype", "acc_dtype", "shape_mnk", "overflow" }, ...)
  local at = want_dtype(I8, a, "a_dtype", { "int8", "uint8" })
  local bt = want_dtype(I8, a, "b_dtype", { "int8", "uint8" })
  local acc = want_dtype(I8, a, "acc_dtype", { "int32" })
  local shape = want_shape(I8, a, { { 16, 8, 16 }, { 16, 8, 32 } })
  local ov = a.overflow
  if ov == nil then ov = "satfinite" end
  if ov ~= "satfinite" and ov ~= "wrapped" then
    cf.failf(I8, "overflow = %s is not an overflow mode (cute.nvgpu.warp.MmaIntOverflow.SATURATE or WRAP)", show(ov))
  end
  return make_op("warp.MmaI8Op", {
    kind = "i8", a_dtype = at, b_dtype = bt, acc_dtype = acc, shape_mnk = shape, overflow = ov,
    describe = ("a_dtype=%s, b_dtype=%s, acc_dtype=%s, shape_mnk=%s, overflow=%s"):format(at, bt, acc, shape_text(shape), ov),
  })
end

local FP8 = "cute.nvgpu.warp.MmaFP8Op"
function warp.MmaFP8Op(...)
  local a = get_args(FP8, { "ab_dtype", "acc_dtype", "shape_mnk" }, ...)
  local ab = want_dtype(FP8, a, "ab_dtype", { "float8_e4m3fn", "float8_e5m2" })
  local acc = want_dtype(FP8, a, "acc_dtype", { "float32", "float16" })
  local shape = want_shape(FP8, a, { { 16, 8, 32 } })
  return make_op("warp.MmaFP8Op", {
    kind = "fp8", ab_dtype = ab, a_dtype = ab, b_dtype = ab, acc_dtype = acc, shape_mnk = shape,
    describe = ("ab_dtype=%s, acc_dtype=%s, shape_mnk=%s"):format(ab, acc, shape_text(shape)),
  })
end

local F64 = "cute.nvgpu.warp.MmaF64Op"
function warp.MmaF64Op(...)
  local a = get_args(F64, { "shape_mnk" }, ...)
  local shape = want_shape(F64, a, { { 8, 8, 4 } })
  return make_op("warp.MmaF64Op", {
    kind = "f64", ab_dtype = "float64", a_dtype = "float64", b_dtype = "float64",
    acc_dtype = "float64", shape_mnk = shape, describe = "shape_mnk=" .. shape_text(shape),
  })
end

local UNIV = "cute.nvgpu.MmaUniversalOp"
-- the universal op's dtypes: every float, and the 32- and 64-bit integers
local universal_dtypes = {}
for name in dt.dtype_names:gmatch("[%w_]+") do
  local info = dt.by_dtype[name]
  if info.float or ((info.kind == "int" or info.kind == "uint") and info.bits >= 32) then
    universal_dtypes[#universal_dtypes + 1] = name
  end
end
function M.MmaUniversalOp(...)
  local a = get_args(UNIV, { "abacc_dtype" }, ...)
  local d = want_dtype(UNIV, a, "abacc_dtype", universal_dtypes)
  return make_op("MmaUniversalOp", {
    kind = "universal", ab_dtype = d, a_dtype = d, b_dtype = d, acc_dtype = d, abacc_dtype = d,
    shape_mnk = { 1, 1, 1 }, describe = "abacc_dtype=" .. d,
  })
end

----------------------------------------------------------------------------
-- CuTe's traits (cute/atom/mma_traits_sm80.hpp, mma_traits_sm89.hpp,
-- mma_traits.hpp): (thread, value) -> column-major index in the tile
----------------------------------------------------------------------------
local L = layout.make_layout
local SM80_8x4 = function() return L({ { 4, 8 }, 1 }, { { 8, 1 }, 0 }) end
local SM80_8x8_Row = function() return L({ { 4, 8 }, 2 }, { { 16, 1 }, 8 }) end
local SM80_8x16_Row = function() return L({ { 4, 8 }, 4 }, { { 32, 1 }, 8 }) end
local SM80_16x8_Row = function() return L({ { 4, 8 }, { 2, 2 } }, { { 32, 1 }, { 16, 8 } }) end

-- kind .. "/" .. K (M and N follow from the kind) -> A, B, C layouts
local traits = {
  ["f16bf16/8"] = function() return SM80_16x8_Row(), SM80_8x8_Row(), SM80_16x8_Row() end,
  ["f16bf16/16"] = function()
    return L({ { 4, 8 }, { 2, 2, 2 } }, { { 32, 1 }, { 16, 8, 128 } }),
      L({ { 4, 8 }, { 2, 2 } }, { { 16, 1 }, { 8, 64 } }), SM80_16x8_Row()
  end,
  ["tf32/4"] = function() return L({ { 4, 8 }, 2 }, { { 16, 1 }, 8 }), SM80_8x4(), SM80_16x8_Row() end,
  ["tf32/8"] = function()
    return L({ { 4, 8 }, { 2, 2 } }, { { 16, 1 }, { 8, 64 } }), L({ { 4, 8 }, 2 }, { { 8, 1 }, 32 }), SM80_16x8_Row()
  end,
  ["i8/16"] = function()
    return L({ { 4, 8 }, { 4, 2 } }, { { 64, 1 }, { 16, 8 } }), SM80_8x16_Row(), SM80_16x8_Row()
  end,
  ["i8/32"] = function()
    return L({ { 4, 8 }, { 4, 2, 2 } }, { { 64, 1 }, { 16, 8, 256 } }),
      L({ { 4, 8 }, { 4, 2 } }, { { 32, 1 }, { 8, 128 } }), SM80_16x8_Row()
  end,
  ["f64/4"] = function() return SM80_8x4(), SM80_8x4(), SM80_8x8_Row() end,
  ["universal/1"] = function() return L({ 1, 1 }), L({ 1, 1 }), L({ 1, 1 }) end,
}
traits["fp8/32"] = traits["i8/32"] -- MMA_Traits<SM89_16x8x32_F32E4M3E4M3F32_TN>

-- PTX operand registers: how many, and their PTX type.  A/B pack sub-32-bit
-- elements into .b32; f16 accumulators are f16x2 pairs in .b32.
local function regs(dtype, nvalues, is_acc)
  local ty, b = ptx_type(dtype)
  if b == 64 then return nvalues, ty end
  local n = math.floor(nvalues * b / 32)
  if not is_acc or b < 32 then return n, "b32" end
  return n, ty
end

local arch_num = function(a)
  local n = type(a) == "string" and a:match("^sm_(%d+)a?$")
  return n and tonumber(n) or nil
end

local Atom = {}
Atom.__index = function(o, k)
  local f = rawget(o, "__fields")
  local v = f[k]
  if v ~= nil then return v end
  return Atom[k]
end
Atom.__newindex = function(_, k)
  cf.failf("cute.make_mma_atom", "an MMA atom is read-only (cannot set field %s)", tostring(k))
end
Atom.__tostring = function(a)
  local f = rawget(a, "__fields")
  return ("MmaAtom(%s)\n  instruction: %s (%s+)\n  shape_mnk: %s\n  thr_id: %s\n  layout_A_tv: %s\n  layout_B_tv: %s\n  layout_C_tv: %s")
    :format(tostring(f.op), f.instruction, f.min_arch, shape_text(f.shape_mnk), tostring(f.thr_id),
      tostring(f.layout_A_tv), tostring(f.layout_B_tv), tostring(f.layout_C_tv))
end

-- atom:supports_arch(arch): the atom's instruction exists on arch ("sm_80",
-- "sm_90a"...); atom:check_arch(arch): an error at the user's line when not.
-- Installed on MMA atoms here and on copy atoms (cute.copy_atom); kind names
-- the atom in errors ("MmaAtom").
function M.arch_methods(mt, kind)
  function mt.supports_arch(a, arch)
    local n = arch_num(arch)
    if not n then cf.failf(kind .. ":supports_arch", "%s is not an arch (sm_80, sm_89, sm_90a...)", show(arch)) end
    return n >= arch_num(a.min_arch)
  end
  function mt.check_arch(a, arch)
    if not a:supports_arch(arch) then
      cf.fail(("cute.nvgpu.%s: %s needs %s or newer; the target is %s")
        :format(a.op.op_name, a.instruction or "the copy", a.min_arch, arch))
    end
  end
end
M.arch_methods(Atom, "MmaAtom")

local function is_atom(x) return type(x) == "table" and getmetatable(x) == Atom end
M.is_atom = is_atom

function M.make_mma_atom(op)
  if not is_op(op) then
    cf.failf("cute.make_mma_atom", "%s is not an MMA op (cute.nvgpu.warp.MmaF16BF16Op{...}, cute.nvgpu.MmaUniversalOp(dtype)...)",
      is_atom(op) and "an MMA atom" or show(op))
  end
  if op.kind == "wgmma" then return freeze("MmaAtom", require("cute.wgmma").atom_fields(op), Atom) end
  local m, n, k = op.shape_mnk[1], op.shape_mnk[2], op.shape_mnk[3]
  local la, lb, lc = traits[op.kind .. "/" .. k]()
  local nthr = op.kind == "universal" and 1 or 32
  local ra, ta = regs(op.a_dtype, m * k / nthr, false)
  local rb, tb = regs(op.b_dtype, n * k / nthr, false)
  local rc, tc = regs(op.acc_dtype, m * n / nthr, true)
  local instr, min_arch, min_ptx
  if op.kind == "universal" then
    local ty = ptx_type(op.acc_dtype)
    instr = (dt.by_dtype[op.acc_dtype].float and "fma.rn." or "mad.lo.") .. ty
    min_arch = op.acc_dtype == "bfloat16" and "sm_80" or "sm_60"
    min_ptx = op.acc_dtype == "bfloat16" and "7.0" or "6.0"
  else
    local sat = (op.kind == "i8" and op.overflow == "satfinite") and ".satfinite" or ""
    instr = ("mma.sync.aligned.m%dn%dk%d.row.col%s.%s.%s.%s.%s"):format(m, n, k, sat,
      (ptx_type(op.acc_dtype)), (ptx_type(op.a_dtype)), (ptx_type(op.b_dtype)), (ptx_type(op.acc_dtype)))
    min_arch = op.kind == "fp8" and "sm_89" or "sm_80"
    -- PTX ISA versions that introduced each form: fp8 with f32 accumulators
    -- 8.4, with f16 accumulators 8.7; the Ampere shapes 7.0
    min_ptx = op.kind == "fp8" and (op.acc_dtype == "float16" and "8.7" or "8.4") or "7.0"
  end
  return freeze("MmaAtom", {
    op = op, shape_mnk = { m, n, k }, thr_id = L(nthr),
    layout_A_tv = la, layout_B_tv = lb, layout_C_tv = lc,
    tv_layout_A = la, tv_layout_B = lb, tv_layout_C = lc,
    a_dtype = op.a_dtype, b_dtype = op.b_dtype, acc_dtype = op.acc_dtype,
    instruction = instr, min_arch = min_arch, min_ptx = min_ptx,
    num_registers = { A = ra, B = rb, C = rc, D = rc },
    register_type = { A = ta, B = tb, C = tc, D = tc },
  }, Atom)
end

----------------------------------------------------------------------------
-- TiledMMA (cute/atom/mma_atom.hpp): atoms tiled over an MNK layout of
-- atoms, each mode optionally permuted/extended by permutation_mnk.
----------------------------------------------------------------------------
local TiledMma = {}
local tiled_tv = { tv_layout_A_tiled = "A", tv_layout_B_tiled = "B", tv_layout_C_tiled = "C" }
local layout_tv
TiledMma.__index = function(o, k)
  local f = rawget(o, "__fields")
  local v = f[k]
  if v ~= nil then return v end
  if tiled_tv[k] then return layout_tv(o, tiled_tv[k]) end -- CuTe DSL's property names
  return TiledMma[k]
end
TiledMma.__newindex = function(_, k)
  cf.failf("cute.make_tiled_mma", "a tiled MMA is read-only (cannot set field %s)", tostring(k))
end
TiledMma.__tostring = function(t)
  return ("TiledMMA\n  atom: %s\n  thr_layout_vmnk: %s\n  tile_size_mnk: %s\n  permutation_mnk: (%s,%s,%s)\n  layout_A_TV: %s\n  layout_B_TV: %s\n  layout_C_TV: %s")
    :format(t.atom.instruction, tostring(t.thr_layout_vmnk), shape_text(t.tile_size_mnk),
      tostring(t.permutation_mnk[1]), tostring(t.permutation_mnk[2]), tostring(t.permutation_mnk[3]),
      tostring(t:get_layoutA_TV()), tostring(t:get_layoutB_TV()), tostring(t:get_layoutC_TV()))
end

local function is_tiled_mma(x) return type(x) == "table" and getmetatable(x) == TiledMma end
M.is_tiled_mma = is_tiled_mma

local _ = layout._
local mode_of = { A = { 1, 3 }, B = { 2, 3 }, C = { 1, 2 } }

-- a layout (M,K) / (N,K) / (M,N) -> ((ThrV,(Thr0,Thr1)),(FrgV,(Rest0,Rest1)))
local function thrfrg(t, which, ref)
  local i, j = mode_of[which][1], mode_of[which][2]
  local perm, shape, thr = t.permutation_mnk, t.atom.shape_mnk, t.thr_size_vmnk
  local tl = layout.logical_divide(ref, { perm[i], perm[j] })
  local al = layout.zipped_divide(tl, { L(shape[i]), L(shape[j]) })
  local tv = layout.composition(al, { t.atom["layout_" .. which .. "_tv"], _ })
  return layout.zipped_divide(tv, { _, { L(thr[i + 1]), L(thr[j + 1]) } })
end
function TiledMma.thrfrg_A(t, ref) return thrfrg(t, "A", ref) end
function TiledMma.thrfrg_B(t, ref) return thrfrg(t, "B", ref) end
function TiledMma.thrfrg_C(t, ref) return thrfrg(t, "C", ref) end

-- (thread index, value) -> column-major index in the tile_size M x K / N x K / M x N
function layout_tv(t, which)
  local cache = rawget(t, "__tv")
  if cache[which] then return cache[which] end
  local i, j = mode_of[which][1], mode_of[which][2]
  local size, thr = t.tile_size_mnk, t.thr_size_vmnk
  local frg = thrfrg(t, which, L({ size[i], size[j] }))
  if which ~= "C" then
    -- (ThrV,(ThrM,ThrK)) -> (ThrV,(ThrM,ThrN,ThrK)): the threads along the
    -- mode the operand lacks see the same values (stride 0)
    local rep = which == "A" and L({ thr[2], thr[3] }, { 1, 0 }) or L({ thr[2], thr[3] }, { 0, 1 })
    frg = layout.composition(frg, { { _, { rep, _ } }, _ })
  end
  local r = layout.composition(frg, { layout.right_inverse(t.thr_layout_vmnk), _ })
  cache[which] = r
  return r
end
function TiledMma.get_layoutA_TV(t) return layout_tv(t, "A") end
function TiledMma.get_layoutB_TV(t) return layout_tv(t, "B") end
function TiledMma.get_layoutC_TV(t) return layout_tv(t, "C") end

-- inside a kernel (lua/cute/mma_partition.lua): a thread's slice (CuTe's
-- ThrMMA: partition_A/B/C, make_fragment_A/B/C) and register fragments
local function part() return require("cute.mma_partition") end
function TiledMma.get_slice(t, thr_idx) return part().get_slice(t, thr_idx) end
TiledMma.get_thr_slice = TiledMma.get_slice
function TiledMma.make_fragment_A(t, x) return part().make_fragment(t, "A", x) end
function TiledMma.make_fragment_B(t, x) return part().make_fragment(t, "B", x) end
function TiledMma.make_fragment_C(t, x) return part().make_fragment(t, "C", x) end
function M.gemm(...) return part().gemm(...) end
-- tiled_mma:set("accumulate", x) (warpgroup MMAs: cute.wgmma)
function TiledMma.set(t, field, value) return require("cute.wgmma").set_field(t, field, value) end

-- cute.make_tiled_mma(op_or_atom [, atom_layout_mnk [, permutation_mnk]]):
-- atom_layout_mnk a layout or a shape ({2,2,1}: 2 x 2 atoms along M and N,
-- the atom index colexicographic), padded to rank 3; permutation_mnk three
-- entries, each nil / cute._ (atom size x atoms), an integer (that many
-- elements, in order) or a layout (CuTe's permutation of the mode)
function M.make_tiled_mma(op_or_atom, atom_layout_mnk, permutation_mnk)
  local F = "cute.make_tiled_mma"
  local atom = op_or_atom
  if is_op(op_or_atom) then atom = M.make_mma_atom(op_or_atom)
  elseif not is_atom(op_or_atom) then
    cf.failf(F, "%s is not an MMA op or atom", show(op_or_atom))
  end
  local al = atom_layout_mnk
  if al == nil then al = { 1, 1, 1 } end
  if type(al) == "number" or (type(al) == "table" and getmetatable(al) == nil) then
    local ok, r = pcall(L, al)
    if not ok then cf.failf(F, "atom_layout_mnk = %s is not a shape", show(al)) end
    al = r
  elseif not layout.is_layout(al) then
    cf.failf(F, "atom_layout_mnk = %s is not a layout or a shape", show(al))
  end
  local rank = layout.rank(al)
  if rank > 3 then cf.failf(F, "atom_layout_mnk = %s has rank %d (at most 3: M, N, K)", tostring(al), rank) end
  if rank < 3 then al = layout.append(al, L(1, 0), 3) end
  local vmnk = layout.tiled_product(atom.thr_id, al)
  local thr = {}
  for i = 0, 3 do thr[i + 1] = layout.size(layout.get(vmnk, i)) end
  if permutation_mnk ~= nil and (type(permutation_mnk) ~= "table" or getmetatable(permutation_mnk) ~= nil
      or #permutation_mnk > 3) then
    cf.failf(F, "permutation_mnk = %s is not a table of up to 3 entries (nil, cute._, an integer or a layout)", show(permutation_mnk))
  end
  local perm, size = {}, {}
  for i = 1, 3 do
    local p = permutation_mnk and permutation_mnk[i]
    local unit = atom.shape_mnk[i] * thr[i + 1]
    if p == nil or p == _ then p = unit
    elseif type(p) == "number" then
      if p < 1 or p % 1 ~= 0 then cf.failf(F, "permutation_mnk[%d] = %s is not a positive integer", i, show(p)) end
    elseif not layout.is_layout(p) then
      cf.failf(F, "permutation_mnk[%d] = %s is not nil, cute._, an integer or a layout", i, show(p))
    end
    perm[i] = p
    size[i] = type(p) == "number" and p or layout.size(p)
    if size[i] % unit ~= 0 then
      cf.failf(F, "permutation_mnk[%d] = %s covers %d elements, not a multiple of the atom's %d x %d atoms = %d",
        i, tostring(p), size[i], atom.shape_mnk[i], thr[i + 1], unit)
    end
  end
  local t = freeze("TiledMMA", {
    atom = atom, op = atom.op, shape_mnk = atom.shape_mnk, thr_id = atom.thr_id,
    atom_layout_mnk = al, thr_layout_vmnk = vmnk, thr_size_vmnk = thr,
    permutation_mnk = perm, tile_size_mnk = size, size = layout.size(vmnk),
  }, TiledMma)
  rawset(t, "__tv", {})
  return t
end

-- cute.nvgpu: the universal op at the top, the warp ops in cute.nvgpu.warp
M.nvgpu = { warp = warp, MmaUniversalOp = M.MmaUniversalOp }

return M
