-- cute.wgmma: warpgroup MMA atoms with CuTe DSL's names, their shared-memory
-- descriptor "fragments" and cute.gemm on them (docs/HOPPER.md, "Warpgroup MMA").
--
--   cute.nvgpu.warpgroup.MmaF16BF16Op(ab_dtype, acc_dtype, {64, N, 16} [, {a_src =, a_major =, b_major =}])
--   cute.nvgpu.warpgroup.MmaTF32Op({64, N, 8} [, opts]), MmaF8Op(a_dtype, b_dtype, acc_dtype, {64, N, 32} [, opts]),
--   cute.nvgpu.warpgroup.MmaI8Op(a_dtype, b_dtype, acc_dtype, {64, N, 32} [, opts])   (also keyword tables)
--   cute.make_tiled_mma(op, {wg_m, wg_n, 1})       atoms over warpgroups (128 threads each)
--   thr:partition_A(sA), tiled_mma:make_fragment_A(tCsA)   -> descriptor tensor (1, MMA_M, MMA_K[, stages])
--   tiled_mma:set("accumulate", bool or traced i1)
--   cute.gemm(tiled_mma, acc, tCrA[{_, _, k, stage}], tCrB[{_, _, k, stage}], acc)   one wgmma per (k, m, n)
--   cute.sm90_utils.make_smem_layout_a/b(major, tile_mnk, dtype, stages), make_trivial_tiled_mma(...)
--
-- The atoms have CuTe's layouts (cute/atom/mma_traits_sm90_gmma.hpp): 128
-- threads; A and B from shared memory are the whole M x K / N x K tile for
-- every thread (ABLayout, thread stride 0), read through a descriptor; C is
-- the m64nN accumulator layout of the PTX ISA's wgmma register fragments.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local layout = require("cute.layout")
local ten = require("cute.tensor")
local tr = require("cute.trace")
local dt = require("cute.dtype")
local wg = require("cute.warpgroup")

local T, OP = tr.T, tr.OP
local failf, fail = cf.failf, cf.fail
local L = layout.make_layout
local _ = layout._

local M = {}

local function mma() return require("cute.mma") end

local function show(v)
  if type(v) == "table" and getmetatable(v) == nil then
    local t = {}
    for i = 1, #v do t[i] = show(v[i]) end
    return "(" .. table.concat(t, ",") .. ")"
  end
  if type(v) == "string" then return ("%q"):format(v) end
  if tr.is_value(v) then return "(a traced value)" end
  return tostring(v)
end

----------------------------------------------------------------------------
-- the ops
----------------------------------------------------------------------------
local warpgroup = {
  fence = wg.fence, commit_group = wg.commit_group, wait_group = wg.wait_group,
  fence_operand = wg.fence_operand, encode_desc = wg.encode_desc,
  make_smem_layout_atom = function(kind, dtype) return require("cute.smem_atom").make_smem_layout_atom(kind, dtype) end,
  -- CuTe DSL's enums, as the strings the ops take
  OperandSource = { SMEM = "smem", RMEM = "rmem" },
  OperandMajorMode = { K = "K", MN = "MN" },
  Field = { ACCUMULATE = "accumulate" },
}
M.warpgroup = warpgroup

local function dtype_name(fname, key, x, allowed)
  local n
  if type(x) == "table" and type(x.name) == "string" and dt.dtypes[x.name] == x then n = x.name
  elseif type(x) == "string" then n = dt.dtypes[x] and x or (dt.by_cute[x] and dt.by_cute[x].dtype)
  elseif type(x) == "function" then
    local k = require("cute.kernel")
    for _, c in ipairs(dt.cute_names) do if k[c] == x then n = dt.by_cute[c].dtype end end
  end
  if x == nil then failf(fname, "argument %s is missing", key) end
  if not n or not dt.dtypes[n] then failf(fname, "%s = %s is not a dtype (allowed: %s)", key, show(x), table.concat(allowed, ", ")) end
  for _, a in ipairs(allowed) do if a == n then return n end end
  failf(fname, "%s = %s is not supported (allowed: %s)", key, n, table.concat(allowed, ", "))
end

local OPT_KEYS = { a_src = true, a_major = true, b_major = true, overflow = true }
-- (positional..., [opts]) or one keyword table -> args table
local function get_args(fname, names, ...)
  local n = select("#", ...)
  local first = ...
  local args = {}
  if n == 1 and type(first) == "table" and getmetatable(first) == nil and first[1] == nil and next(first) ~= nil then
    for k, v in pairs(first) do
      local known = OPT_KEYS[k]
      for _, nm in ipairs(names) do if nm == k then known = true end end
      if not known then
        failf(fname, "unknown argument %s = %s (arguments: %s, a_src, a_major, b_major)", tostring(k), show(v),
          table.concat(names, ", "))
      end
      args[k] = v
    end
    return args
  end
  for i = 1, math.min(n, #names) do args[names[i]] = (select(i, ...)) end
  if n > #names then
    local o = select(#names + 1, ...)
    if n > #names + 1 or type(o) ~= "table" or getmetatable(o) ~= nil then
      failf(fname, "takes %s and an options table {a_src =, a_major =, b_major =}; got %d arguments",
        table.concat(names, ", "), n)
    end
    for k, v in pairs(o) do
      if not OPT_KEYS[k] then failf(fname, "unknown option %s (a_src, a_major, b_major%s)", tostring(k),
        fname:find("I8") and ", overflow" or "") end
      args[k] = v
    end
  end
  return args
end

-- PTX type names by dtype name, from dtype.lua's one table (info.ptx)
local PTX = setmetatable({}, { __index = function(_, name)
  local info = require("cute.dtype").by_dtype[name]
  return info and info.ptx
end })

local function make_op(fname, short, a, at, bt, acc)
  local sh = a.shape_mnk
  if type(sh) ~= "table" or #sh ~= 3 then failf(fname, "shape_mnk = %s: expected {64, N, K}", show(sh)) end
  for k, v in pairs({ a_major = a.a_major, b_major = a.b_major }) do
    if v ~= nil and v ~= "K" and v ~= "MN" then failf(fname, "%s = %s: expected \"K\" or \"MN\"", k, show(v)) end
  end
  if a.a_src ~= nil and a.a_src ~= "smem" and a.a_src ~= "rmem" then
    failf(fname, "a_src = %s: expected \"smem\" or \"rmem\" (cute.nvgpu.warpgroup.OperandSource.SMEM / RMEM)", show(a.a_src))
  end
  local spec = { shape = ("m%sn%sk%s"):format(tostring(sh[1]), tostring(sh[2]), tostring(sh[3])), a_type = PTX[at],
    b_type = PTX[bt], c_type = PTX[acc], a_major = a.a_major, b_major = a.b_major, a_src = a.a_src,
    overflow = a.overflow }
  -- the instruction's own checks (shape, N, majors), named as this op
  local sp = wg.wgmma_spec(spec, fname)
  local fields = {
    kind = "wgmma", a_dtype = at, b_dtype = bt, ab_dtype = at == bt and at or nil, acc_dtype = acc,
    shape_mnk = { 64, sp.n, sp.k }, a_src = sp.rs and "rmem" or "smem", a_major = sp.ta == 1 and "MN" or "K",
    b_major = sp.tb == 1 and "MN" or "K", wgmma = sp,
    describe = ("a_dtype=%s, b_dtype=%s, acc_dtype=%s, shape_mnk=(64,%d,%d), a_src=%s, a_major=%s, b_major=%s")
      :format(at, bt, acc, sp.n, sp.k, sp.rs and "rmem" or "smem", sp.ta == 1 and "MN" or "K", sp.tb == 1 and "MN" or "K"),
  }
  return mma().make_op("warpgroup." .. short, fields)
end

local F16 = "cute.nvgpu.warpgroup.MmaF16BF16Op"
function warpgroup.MmaF16BF16Op(...)
  local a = get_args(F16, { "ab_dtype", "acc_dtype", "shape_mnk" }, ...)
  local ab = dtype_name(F16, "ab_dtype", a.ab_dtype, { "float16", "bfloat16" })
  local acc = dtype_name(F16, "acc_dtype", a.acc_dtype, { "float32", "float16" })
  if ab == "bfloat16" and acc ~= "float32" then
    failf(F16, "acc_dtype = %s with ab_dtype = bfloat16: bf16 inputs accumulate in float32 only", acc)
  end
  return make_op(F16, "MmaF16BF16Op", a, ab, ab, acc)
end

local TF32 = "cute.nvgpu.warpgroup.MmaTF32Op"
function warpgroup.MmaTF32Op(...)
  local a = get_args(TF32, { "shape_mnk" }, ...)
  return make_op(TF32, "MmaTF32Op", a, "tfloat32", "tfloat32", "float32")
end

local F8 = "cute.nvgpu.warpgroup.MmaF8Op"
function warpgroup.MmaF8Op(...)
  local a = get_args(F8, { "a_dtype", "b_dtype", "acc_dtype", "shape_mnk" }, ...)
  local f8 = { "float8_e4m3fn", "float8_e5m2" }
  local at, bt = dtype_name(F8, "a_dtype", a.a_dtype, f8), dtype_name(F8, "b_dtype", a.b_dtype, f8)
  local acc = dtype_name(F8, "acc_dtype", a.acc_dtype, { "float32", "float16" })
  return make_op(F8, "MmaF8Op", a, at, bt, acc)
end

local I8 = "cute.nvgpu.warpgroup.MmaI8Op"
function warpgroup.MmaI8Op(...)
  local a = get_args(I8, { "a_dtype", "b_dtype", "acc_dtype", "shape_mnk" }, ...)
  local ints = { "int8", "uint8" }
  local at, bt = dtype_name(I8, "a_dtype", a.a_dtype, ints), dtype_name(I8, "b_dtype", a.b_dtype, ints)
  local acc = dtype_name(I8, "acc_dtype", a.acc_dtype, { "int32" })
  return make_op(I8, "MmaI8Op", a, at, bt, acc)
end

----------------------------------------------------------------------------
-- the atom (called by cute.make_mma_atom for kind "wgmma")
----------------------------------------------------------------------------
-- C/D: ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512)) (CuTe's CLayout_64xN)
local function c_layout(n)
  if n == 8 then return L({ { 4, 8, 4 }, { 2, 2 } }, { { 128, 1, 16 }, { 64, 8 } }) end
  return L({ { 4, 8, 4 }, { 2, 2, n / 8 } }, { { 128, 1, 16 }, { 64, 8, 512 } })
end
M.c_layout = c_layout
-- A in registers: by K (16-bit k16, 32-bit k8, 8-bit k32)
local function a_reg_layout(k)
  if k == 16 then return c_layout(16) end
  if k == 8 then return L({ { 4, 8, 4 }, { 2, 2 } }, { { 64, 1, 16 }, { 8, 256 } }) end
  return L({ { 4, 8, 4 }, { 4, 2, 2 } }, { { 256, 1, 16 }, { 64, 8, 1024 } })
end
M.a_reg_layout = a_reg_layout
local function ab_layout(mn, k) return L({ 128, { mn, k } }, { 0, { 1, mn } }) end

function M.atom_fields(op)
  local sp = op.wgmma
  local n, k = sp.n, sp.k
  local la = sp.rs and a_reg_layout(k) or ab_layout(64, k)
  local lb, lc = ab_layout(n, k), c_layout(n)
  local creg = sp.ct == "f32" and "f32" or sp.ct == "s32" and "s32" or "b32"
  return {
    op = op, shape_mnk = { 64, n, k }, thr_id = L(128),
    layout_A_tv = la, layout_B_tv = lb, layout_C_tv = lc, tv_layout_A = la, tv_layout_B = lb, tv_layout_C = lc,
    a_dtype = op.a_dtype, b_dtype = op.b_dtype, acc_dtype = op.acc_dtype,
    instruction = sp.ptx, min_arch = "sm_90a", min_ptx = "8.0",
    num_registers = { A = sp.rs and 4 or 1, B = 1, C = sp.nacc, D = sp.nacc },
    register_type = { A = sp.rs and "b32" or "b64", B = "b64", C = creg, D = creg },
  }
end

----------------------------------------------------------------------------
-- the thread block of a kernel using a warpgroup tiled MMA: whole
-- warpgroups, at least the tiled MMA's threads.  Known at the launch only:
-- the trace records it (the kernel's plan.block_check) and every launch
-- checks it (lua/cute/launch.lua); no device code (a device assertion's
-- vprintf call would make ptxas serialize every wgmma of the kernel).
----------------------------------------------------------------------------
function M.check_block(t)
  local s = tr.state()
  local bc = s.block_check
  if bc and bc.min >= t.size then return end
  local file, line = tr.user_frame()
  s.block_check = { multiple = 128, min = t.size,
    what = ("the warpgroup tiled MMA of %d threads (%s, sliced at %s:%s)"):format(t.size, t.atom.instruction,
      tostring(file and file:match("[^/]+$") or "?"), tostring(line)) }
end

----------------------------------------------------------------------------
-- tiled_mma:set("accumulate", x)
----------------------------------------------------------------------------
function M.set_field(t, field, value)
  local what = "TiledMMA:set"
  if t.atom.op.kind ~= "wgmma" then
    failf(what, "%s: fields are for warpgroup MMAs (cute.nvgpu.warpgroup.*); this tiled MMA issues %s",
      show(field), t.atom.instruction)
  end
  if field ~= "accumulate" then
    failf(what, "unknown field %s (\"accumulate\", cute.nvgpu.warpgroup.Field.ACCUMULATE)", show(field))
  end
  if tr.is_var(value) then value = value.value end
  if type(value) ~= "boolean" then
    local info = tr.is_value(value) and tr.tinfo[value.t]
    if not (info and info.bool) then
      failf(what, "accumulate = %s: expected a Lua boolean or a traced predicate (i1)", show(value))
    end
  end
  local st = tr.active() and tr.state() or nil
  local _, line = tr.user_frame()
  rawset(t, "__accumulate", { value = value, state = st, depth = st and #st.stack or 0, line = line })
end

-- the accumulate flag for a gemm traced here: true unless set (on the host,
-- or earlier in this trace); a Lua false
-- set outside a loop this gemm is in is an error (it would hold on every
-- iteration of the loop on the GPU, not only the first)
local function accumulate_flag(t, what)
  local a = rawget(t, "__accumulate")
  local s = tr.state()
  -- unset, or set while tracing another kernel: the default (accumulate)
  if not a or (a.state ~= nil and a.state ~= s) then return true end
  if a.value == false and #s.stack > a.depth then
    for i = a.depth + 1, #s.stack do
      local r = s.stack[i]
      if r.kind ~= "if" then
        failf(what, "accumulate was set to false (line %s) outside the loop at line %s that this gemm is in: the " ..
          "traced loop body runs with it false on every iteration; set a traced predicate instead, e.g. " ..
          "tiled_mma:set(\"accumulate\", k_tile > 0)", tostring(a.line or "?"), tostring(r.line))
      end
    end
  end
  return a.value
end

----------------------------------------------------------------------------
-- shared-memory descriptors of a partitioned tensor
----------------------------------------------------------------------------
-- the canonical form of the MN x KE tile whose element (mn, k) is at element
-- offset off_of(mn + MN k): layout type, LBO and SBO in bytes (CuTe's
-- make_gmma_desc, checked on every element rather than on strides)
function M.canonical(off_of, MN, KE, eb, sw, major, what, describe)
  local Tq = 16 / eb
  local B = 0
  if sw and sw[1] > 0 then
    if sw[3] ~= 3 or 2 ^ sw[2] ~= Tq then
      failf(what, "%s: its swizzle Sw<%d,%d,%d> is not a wgmma swizzle (Sw<B,%d,3> for %d-byte elements: 16-byte " ..
        "chunks, 8 rows); build the layout from cute.make_smem_layout_atom", describe(), sw[1], sw[2], sw[3],
        math.floor(math.log(Tq) / math.log(2) + 0.5), eb)
    end
    B = sw[1]
  end
  local RW = 16 * 2 ^ B
  local lt = wg.LAYOUT_OF_BITS[B]
  local function e(mn, k) return off_of(mn + MN * k) * eb end
  local lbo, sbo, want
  if major == "K" then
    sbo = MN > 8 and e(8, 0) or 0
    lbo = B == 0 and e(0, Tq) or 16
    want = function(mn, k)
      local kb = k * eb
      return (mn % 8) * RW + math.floor(mn / 8) * sbo + kb % 16 + math.floor(kb / 16) * lbo
    end
  else
    if B == 0 then
      sbo = MN * eb > 16 and e(Tq, 0) or 0
      lbo = e(0, 8)
      want = function(mn, k)
        local b = mn * eb
        return b % 16 + math.floor(b / 16) * sbo + (k % 8) * 16 + math.floor(k / 8) * lbo
      end
    else
      lbo = MN * eb > RW and e(RW / eb, 0) or 0
      sbo = e(0, 8)
      want = function(mn, k)
        local b = mn * eb
        return b % RW + math.floor(b / RW) * lbo + (k % 8) * RW + math.floor(k / 8) * sbo
      end
    end
  end
  for k = 0, KE - 1 do
    for mn = 0, MN - 1 do
      local got, w = e(mn, k), want(mn, k)
      if got ~= w then
        failf(what, "%s is not a canonical wgmma %s-major layout: element (%d,%d) is at byte %d where the %s form " ..
          "(%s) puts it at byte %d; build the shared-memory layout with cute.sm90_utils.make_smem_layout_a/b or " ..
          "cute.tile_to_shape(cute.make_smem_layout_atom(%s_%s, dtype), ...)", describe(), major, mn, k, got, lt,
          major == "K" and ("8 rows of %d bytes, K in 16-byte chunks"):format(RW)
            or ("%d-byte rows along MN, 8 rows along K"):format(B == 0 and 16 or RW),
          w, major, B == 0 and "INTER" or ("SW" .. RW))
      end
    end
  end
  for nm, v in pairs({ LBO = lbo, SBO = sbo }) do
    if v < 0 or v % 16 ~= 0 or v >= 2 ^ 18 then
      failf(what, "%s: its %s of %d bytes is not a multiple of 16 below 256 KiB", describe(), nm, v)
    end
  end
  return lt, lbo, sbo, RW
end

-- descriptor tensors: a base descriptor (u64 Value) and a static layout in
-- 16-byte units; indexing with integers (Lua or traced) gives a descriptor,
-- with cute._ (or nil holes) a view
local Desc = {}
local desc_mt = {}
local function is_desc(x) return getmetatable(x) == desc_mt end
M.is_desc_tensor = is_desc

local function desc_make(base, off, shape, stride, info)
  return setmetatable({ _base = base, _off = off, _shape = shape, _stride = stride, _info = info }, desc_mt)
end

local function coord_list(c)
  local n = table.maxn(c)
  local out = {}
  for i = 1, n do
    local v = c[i]
    if v == nil then v = _ end
    out[i] = v
  end
  return out, n
end

local function has_hole(c, n)
  for i = 1, n do if rawequal(c[i], _) then return true end end
  return false
end

local function desc_index(d, c)
  local what = "descriptor tensor"
  if type(c) == "number" or tr.is_value(c) or tr.is_var(c) then c = { c } end
  if type(c) ~= "table" then failf(what, "index %s: expected a coordinate table", show(c)) end
  local cl, n = coord_list(c)
  local s, st = d._shape, d._stride
  if n ~= #s then
    failf(what, "coordinate of rank %d for the shape %s (rank %d)", n, ten.describe(s), #s)
  end
  local off = d._off
  local shape, stride = {}, {}
  for i = 1, n do
    if rawequal(cl[i], _) then
      shape[#shape + 1], stride[#stride + 1] = s[i], st[i]
    else
      local ci = cl[i]
      if tr.is_var(ci) then ci = ci.value end
      off = ten.off_add(off, ten.crd2idx(ci, s[i], st[i]))
    end
  end
  if #shape > 0 then return desc_make(d._base, off, shape, stride, d._info) end
  return nil, off
end

-- the u64 descriptor at offset off (16-byte units) from d's base
local function desc_at(d, off)
  if type(off) == "number" then
    if off == 0 then return d._base end
    local s = tr.state()
    tr.setloc()
    local c = tr.mk(C.cute_ir_const_int(s.ir, T.U64, off), T.U64)
    return tr.binop(OP.ADD, d._base, c)
  end
  return tr.binop(OP.ADD, d._base, tr.cvt(off, T.U64))
end

desc_mt.__index = function(d, k)
  if type(k) == "string" then
    if Desc[k] then return Desc[k] end
    if k == "shape" then return rawget(d, "_shape") end
    if k == "layout" then return L(rawget(d, "_shape"), rawget(d, "_stride")) end
    if k == "descriptor" then return rawget(d, "_info") end
    return nil
  end
  local v, off = desc_index(d, k)
  if v then return v end
  return desc_at(d, off)
end
desc_mt.__newindex = function() fail("descriptor tensor: read-only (descriptors come from the shared-memory layout)") end
desc_mt.__tostring = function(d)
  return ("descriptor tensor<%s %s, LBO %d, SBO %d, %s>"):format(d._info.layout_type, d._info.major, d._info.lbo,
    d._info.sbo, ten.describe(d._shape))
end
function Desc.size(d) return ten.tsize(d._shape) end

-- make_fragment_A/B of a wgmma tiled MMA on a partitioned shared-memory
-- tensor (MMA, MMA_M|N, MMA_K, ...): the descriptor tensor (1, MMA_M|N, MMA_K, ...)
function M.make_desc_fragment(t, which, x)
  local what = "TiledMMA:make_fragment_" .. which
  local op = t.atom.op
  if not ten.is_tensor(x) or x.space ~= "shared" then
    failf(what, "%s: with the operand in shared memory (a wgmma %s descriptor) give the partitioned shared-memory " ..
      "tensor (thr:partition_%s(sX))", tostring(x), which, which)
  end
  local s, d = x.layout.shape, x.layout.stride
  if type(s) ~= "table" or #s < 3 then
    failf(what, "the tensor %s must have rank 3 or more (MMA, MMA_%s, MMA_K[, stages])", ten.describe(s),
      which == "A" and "M" or "N")
  end
  if not (ten.is_static(s) and ten.is_static(d)) then
    failf(what, "the partitioned tensor %s:%s must have a static layout", ten.describe(s), ten.describe(d))
  end
  local mn = which == "A" and 64 or op.shape_mnk[2]
  local ke = op.shape_mnk[3]
  if ten.tsize(s[1]) ~= mn * ke then
    failf(what, "mode 0 of %s holds %d elements, not the atom's %d x %d tile (partition with this tiled MMA)",
      ten.describe(s), ten.tsize(s[1]), mn, ke)
  end
  local eb = ten.elem_bytes(x.elem)
  local want_bits = dt.by_dtype[op[which == "A" and "a_dtype" or "b_dtype"]].bits
  if eb * 8 ~= want_bits then
    failf(what, "the tensor holds %d-bit elements; the atom's %s is %d-bit", eb * 8, which, want_bits)
  end
  local sw = ten.ptr_swizzle(x)
  local major = op[which == "A" and "a_major" or "b_major"]
  local function describe()
    local sws = sw and sw[1] > 0 and ("Sw<%d,%d,%d> o "):format(sw[1], sw[2], sw[3]) or ""
    return ("%s's shared-memory layout %s%s:%s (its %dx%d MMA tile %s:%s)"):format(which, sws, ten.describe(s),
      ten.describe(d), mn, ke, ten.describe(s[1]), ten.describe(d[1]))
  end
  local lt, lbo, sbo, RW = M.canonical(function(i) return ten.crd2idx(i, s[1], d[1]) end, mn, ke, eb, sw, major,
    what, describe)
  -- the tile's origin must start a swizzle pattern (8 rows), the base offset field being 0
  if lt ~= "INTERLEAVE" and type(x.off) == "number" and (x.off * eb) % (8 * RW) ~= 0 then
    failf(what, "%s starts at byte %d of its buffer, not at a %d-byte boundary of the %s pattern", describe(),
      x.off * eb, 8 * RW, lt)
  end
  local shape, stride = { 1 }, { 0 }
  for i = 2, #s do
    local function units(st)
      if type(st) == "table" then
        local r = {}
        for j = 1, #st do r[j] = units(st[j]) end
        return r
      end
      if (st * eb) % 16 ~= 0 then
        failf(what, "%s: mode %d steps %d bytes, not a multiple of 16 (a descriptor's start address is in 16-byte " ..
          "units)", describe(), i - 1, st * eb)
      end
      return st * eb / 16
    end
    shape[i], stride[i] = s[i], units(d[i])
  end
  local p = wg.smem_addr(x, what)
  local base = wg.desc_value(p, wg.pack_desc(wg.LAYOUT_TYPE[lt], lbo / 16, sbo / 16, 0, 0))
  return desc_make(base, 0, shape, stride, { layout_type = lt, lbo = lbo, sbo = sbo, major = major })
end

----------------------------------------------------------------------------
-- cute.gemm(tiled_mma, D, A, B, C) for a wgmma tiled MMA
----------------------------------------------------------------------------
function M.gemm(t, D, A, B, Cc)
  local what = "cute.gemm"
  local part = require("cute.mma_partition")
  local atom = t.atom
  local sp = atom.op.wgmma
  wg.need_sm90a(what .. " (" .. atom.instruction .. ")")
  local function rank3(x, name, kopt)
    local s = x._shape
    if type(s) ~= "table" then return nil end
    if #s == 2 and kopt then return { ten.tsize(s[1]), ten.tsize(s[2]), 1 } end
    if #s ~= 3 then
      failf(what, "%s has shape %s, expected (MMA, MMA_%s, MMA_%s)%s", name, ten.describe(s),
        name == "B" and "N" or "M", name == "A" and "K" or name == "B" and "K" or "N",
        (name == "A" or name == "B") and " (slice the stage mode: X[{_, _, _, stage}])" or "")
    end
    return { ten.tsize(s[1]), ten.tsize(s[2]), ten.tsize(s[3]) }
  end
  local nv = sp.n / 2
  for nm, x in pairs({ D = D, C = Cc }) do
    if not part.is_reg_tensor(x) then
      failf(what, "%s = %s is not a register tensor (tiled_mma:make_fragment_C)", nm, tostring(x))
    end
    if x._dtype ~= atom.acc_dtype then
      failf(what, "%s is a fragment of %s; the atom %s accumulates in %s", nm, x._dtype, atom.instruction, atom.acc_dtype)
    end
  end
  local sd, sc = rank3(D, "D"), rank3(Cc, "C")
  if not sd or sd[1] ~= nv then
    failf(what, "D has shape %s: its MMA mode must hold the atom's %d accumulators per thread", ten.describe(D._shape), nv)
  end
  if not sc or sc[1] ~= nv or sc[2] ~= sd[2] or sc[3] ~= sd[3] then
    failf(what, "C %s and D %s differ in shape", ten.describe(Cc._shape), ten.describe(D._shape))
  end
  local sa
  if sp.rs then
    if not part.is_reg_tensor(A) then
      failf(what, "A = %s: this atom takes A from registers (a_src = \"rmem\"): a register tensor " ..
        "(tiled_mma:make_fragment_A)", tostring(A))
    end
    if A._dtype ~= atom.a_dtype then failf(what, "A is a fragment of %s; the atom takes %s", A._dtype, atom.a_dtype) end
    sa = rank3(A, "A", true)
    local want = 64 * sp.k / 128
    if sa[1] ~= want then failf(what, "A has shape %s: its MMA mode must hold %d values", ten.describe(A._shape), want) end
  else
    if not is_desc(A) then
      failf(what, "A = %s: this atom reads A from shared memory: a descriptor tensor (tiled_mma:make_fragment_A of " ..
        "thr:partition_A(sA))", tostring(A))
    end
    sa = rank3(A, "A", true)
  end
  if not is_desc(B) then
    failf(what, "B = %s: a descriptor tensor (tiled_mma:make_fragment_B of thr:partition_B(sB))", tostring(B))
  end
  local sb = rank3(B, "B", true)
  local Mm, Nn, Kk = sd[2], sd[3], sa[3]
  if sa[2] ~= Mm then failf(what, "A %s and D %s differ in MMA_M", ten.describe(A._shape), ten.describe(D._shape)) end
  if sb[2] ~= Nn then failf(what, "B %s and D %s differ in MMA_N", ten.describe(B._shape), ten.describe(D._shape)) end
  if sb[3] ~= Kk then failf(what, "A %s and B %s differ in MMA_K", ten.describe(A._shape), ten.describe(B._shape)) end

  local function sidx(r, crd)
    local c = crd
    if #r._shape == 2 then c = { crd[1], crd[2] } end
    return (rawget(r, "_off") or 0) + ten.crd2idx(c, r._shape, r._stride)
  end
  local function dcrd(x, j, l)
    if #x._shape == 2 then return { 0, j } end
    return { 0, j, l }
  end
  local st_e = require("cute.mma_gemm").storage(atom.acc_dtype)
  local acc_t = C.cute_ir_t_array(tr.state().ir, st_e, nv)
  local a_e = sp.rs and require("cute.mma_gemm").storage(atom.a_dtype)
  local a_t = sp.rs and C.cute_ir_t_array(tr.state().ir, a_e, sp.k / 2)
  local text, cons = wg.wgmma_text(sp)
  local cf_, df = rawget(Cc, "_frag"), rawget(D, "_frag")
  local acc = {}
  local scale0 = accumulate_flag(t, what)
  local function vec(tp, vals)
    local refs = ffi.new("int32_t[?]", #vals)
    for i, v in ipairs(vals) do refs[i - 1] = v.ref end
    tr.setloc()
    return tr.mk(C.cute_ir_op(tr.state().ir, OP.VEC, tp, #vals, refs, 0, 0), tp)
  end
  for k = 0, Kk - 1 do
    for m = 0, Mm - 1 do
      for nn = 0, Nn - 1 do
        local n = (m % 2 == 1) and (Nn - 1 - nn) or nn
        local key = m + Mm * n
        local cv = acc[key]
        if not cv then
          local vals = {}
          for i = 0, nv - 1 do vals[i + 1] = cf_[sidx(Cc, { i, m, n })] end
          cv = vec(acc_t, vals)
        end
        local av
        if sp.rs then
          local vals, fa = {}, rawget(A, "_frag")
          for i = 0, sp.k / 2 - 1 do vals[i + 1] = fa[sidx(A, { i, m, k })] end
          av = vec(a_t, vals)
        else
          av = A[dcrd(A, m, k)]
        end
        local bv = B[dcrd(B, n, k)]
        local scale = true
        if k == 0 then scale = scale0 end -- (not `k == 0 and scale0 or true`: scale0 may be false)
        acc[key] = wg.issue(sp, text, cons, cv, av, bv, scale, what)
      end
    end
  end
  -- D written once
  local vals = {}
  for n = 0, Nn - 1 do
    for m = 0, Mm - 1 do
      local v = acc[m + Mm * n]
      for i = 0, nv - 1 do
        tr.setloc()
        vals[sidx(D, { i, m, n })] = tr.mk(C.cute_ir_op(tr.state().ir, OP.EXTRACT, st_e, 1,
          ffi.new("int32_t[1]", v.ref), i, 0), st_e)
      end
    end
  end
  if df.set_elements then df:set_elements(vals) else for i, v in pairs(vals) do df[i] = v end end
end

----------------------------------------------------------------------------
-- cute.sm90_utils
----------------------------------------------------------------------------
local sm90 = {}
M.sm90_utils = sm90

local function bits_of(fname, dtype)
  local n
  if type(dtype) == "table" and dtype.name then n = dtype.name
  elseif type(dtype) == "string" then n = dt.dtypes[dtype] and dtype or (dt.by_cute[dtype] and dt.by_cute[dtype].dtype) end
  if not n or not dt.by_dtype[n] then failf(fname, "%s is not a dtype", show(dtype)) end
  return dt.by_dtype[n].bits, n
end

-- the widest swizzle atom whose row (128/64/32/16 bytes) divides the
-- contiguous extent; tiled to (MN, K, stages), MN first for K-major
local function smem_layout(fname, which, major, tile, dtype, stages)
  if major ~= "K" and major ~= "MN" then failf(fname, "major = %s: expected \"K\" or \"MN\"", show(major)) end
  if type(tile) ~= "table" or #tile ~= 3 then failf(fname, "tile_mnk = %s: expected {M, N, K}", show(tile)) end
  stages = stages or 1
  if type(stages) ~= "number" or stages < 1 or stages % 1 ~= 0 then
    failf(fname, "stages = %s: expected a positive integer", show(stages))
  end
  local bits = bits_of(fname, dtype)
  local mn, k = which == "A" and tile[1] or tile[2], tile[3]
  local contig = (major == "K" and k or mn) * bits / 8
  local kind
  for _, c in ipairs({ { 128, "SW128" }, { 64, "SW64" }, { 32, "SW32" }, { 16, "INTER" } }) do
    if contig % c[1] == 0 then kind = c[2]; break end
  end
  if not kind then
    failf(fname, "the %s extent %d of %s is %d bytes, not a multiple of 16", major == "K" and "K" or "MN",
      major == "K" and k or mn, ten.describe(tile), contig)
  end
  local atom = require("cute.smem_atom").make_smem_layout_atom(major .. "_" .. kind, dtype)
  return layout.tile_to_shape(atom, { mn, k, stages }, major == "K" and { 1, 2, 3 } or { 2, 1, 3 })
end
function sm90.make_smem_layout_a(major, tile, dtype, stages)
  return smem_layout("cute.sm90_utils.make_smem_layout_a", "A", major, tile, dtype, stages)
end
function sm90.make_smem_layout_b(major, tile, dtype, stages)
  return smem_layout("cute.sm90_utils.make_smem_layout_b", "B", major, tile, dtype, stages)
end

-- make_trivial_tiled_mma(a_dtype, b_dtype, a_major, b_major, acc_dtype, atom_layout_mnk, tiler_mn [, a_src])
function sm90.make_trivial_tiled_mma(a_dtype, b_dtype, a_major, b_major, acc_dtype, atom_layout_mnk, tiler_mn, a_src)
  local fname = "cute.sm90_utils.make_trivial_tiled_mma"
  local _, an = bits_of(fname, a_dtype)
  local _, bn = bits_of(fname, b_dtype)
  if type(tiler_mn) ~= "table" or #tiler_mn ~= 2 then failf(fname, "tiler_mn = %s: expected {64, N}", show(tiler_mn)) end
  if tiler_mn[1] ~= 64 then failf(fname, "tiler_mn = %s: the M of one warpgroup MMA is 64", show(tiler_mn)) end
  local opts = { a_major = a_major, b_major = b_major, a_src = a_src }
  local op
  if an == "float16" or an == "bfloat16" then
    if bn ~= an then failf(fname, "a_dtype %s and b_dtype %s differ", an, bn) end
    op = warpgroup.MmaF16BF16Op(an, acc_dtype, { 64, tiler_mn[2], 16 }, opts)
  elseif an == "tfloat32" or an == "float32" then
    op = warpgroup.MmaTF32Op({ 64, tiler_mn[2], 8 }, opts)
  elseif an == "float8_e4m3fn" or an == "float8_e5m2" then
    op = warpgroup.MmaF8Op(an, bn, acc_dtype, { 64, tiler_mn[2], 32 }, opts)
  elseif an == "int8" or an == "uint8" then
    op = warpgroup.MmaI8Op(an, bn, acc_dtype, { 64, tiler_mn[2], 32 }, opts)
  else
    failf(fname, "a_dtype %s has no warpgroup MMA (float16, bfloat16, tfloat32, float8_e4m3fn, float8_e5m2, int8, uint8)", an)
  end
  return mma().make_tiled_mma(op, atom_layout_mnk)
end

return M
