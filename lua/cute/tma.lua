-- cute.tma: TMA (the Tensor Memory Accelerator of sm_90) on the host: copy
-- ops, the derivation of a tensor map from a tensor and a shared-memory
-- layout, and TMA atoms (docs/HOPPER.md, "TMA").
--
--   cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()            global -> shared
--   cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp()   global -> shared of several CTAs of a cluster
--   cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp()            shared -> global
--   cute.nvgpu.cpasync.CopyReduceBulkTensorTileS2GOp(op)    shared -(add|min|max|inc|dec|and|or|xor)-> global
--   local atom, tma_tensor = cute.nvgpu.cpasync.make_tiled_tma_atom(op, gmem_tensor, smem_layout,
--                                                                   cta_tiler [, {num_multicast = n}])
--   cute.nvgpu.cpasync.tma_args(op, gmem, smem_layout, cta_tiler [, opts])  the derivation alone (pure)
--   cute.nvgpu.cpasync.CopyBulkTensorIm2ColG2S[Multicast]Op() + make_im2col_tma_atom: lua/cute/tma_im2col.lua
--
-- The atom and the tma_tensor are kernel arguments: the atom becomes a
-- 128-byte, 64-aligned grid-constant parameter holding the CUtensorMap (its
-- address is not in the specialisation key; its op, dtype, smem layout, box
-- and tensor-map dimension order are), the tma_tensor a coordinate tensor
-- over the tensor's shape (cute.make_identity_tensor inside the kernel;
-- runtime extents when the tensor is cute.dynamic).  The in-kernel side
-- (tma_partition, cute.copy on the atom, prefetch): lua/cute/tma_copy.lua.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local lay = require("cute.layout")

local M = {}

local function show(x)
  if type(x) == "table" then
    local p = {}
    for i = 1, #x do p[i] = show(x[i]) end
    return "(" .. table.concat(p, ",") .. ")"
  end
  return tostring(x)
end
M.show = show

---------------------------------------------------------------------------
-- ops
---------------------------------------------------------------------------
local Op = {}
Op.__index = Op
Op.__tostring = function(o) return "cute.nvgpu.cpasync." .. o.name .. (o.reduce and ("(" .. o.reduce .. ")") or "") end
Op.__newindex = function(o, k) cf.fail(("%s: ops are immutable (field %s)"):format(tostring(o), tostring(k))) end
local function is_op(x) return getmetatable(x) == Op end
M.is_tma_op = is_op

local function op(name, fields)
  fields.name = name
  return setmetatable(fields, Op)
end

local REDUCE = { add = true, min = true, max = true, inc = true, dec = true, ["and"] = true, ["or"] = true,
  xor = true }

M.ops = {}
function M.ops.CopyBulkTensorTileG2SOp() return op("CopyBulkTensorTileG2SOp", { dir = "g2s", multicast = false }) end
function M.ops.CopyBulkTensorTileG2SMulticastOp()
  return op("CopyBulkTensorTileG2SMulticastOp", { dir = "g2s", multicast = true })
end
function M.ops.CopyBulkTensorTileS2GOp() return op("CopyBulkTensorTileS2GOp", { dir = "s2g", multicast = false }) end
-- im2col loads for convolutions (CuTe C++'s SM90_TMA_LOAD_IM2COL[_MULTICAST]): lua/cute/tma_im2col.lua
function M.ops.CopyBulkTensorIm2ColG2SOp()
  return op("CopyBulkTensorIm2ColG2SOp", { dir = "g2s", multicast = false, im2col = true })
end
function M.ops.CopyBulkTensorIm2ColG2SMulticastOp()
  return op("CopyBulkTensorIm2ColG2SMulticastOp", { dir = "g2s", multicast = true, im2col = true })
end
-- op: "add" ... or cute.ReductionOp.ADD / MIN / MAX (CuTe DSL's reduction kinds)
function M.ops.CopyReduceBulkTensorTileS2GOp(kind)
  local F = "cute.nvgpu.cpasync.CopyReduceBulkTensorTileS2GOp"
  local k = type(kind) == "string" and kind:lower() or (kind == nil and "add") or tostring(kind):lower()
  k = k:match("([%a]+)$") or k
  if not REDUCE[k] then
    cf.fail(("%s: reduction %s: expected add, min, max, inc, dec, and, or or xor (or cute.ReductionOp.ADD / MIN / MAX)")
      :format(F, show(kind)))
  end
  return op("CopyReduceBulkTensorTileS2GOp", { dir = "s2g", multicast = false, reduce = k })
end

---------------------------------------------------------------------------
-- dtypes: CU_TENSOR_MAP_DATA_TYPE_* by IR name
---------------------------------------------------------------------------
-- from dtype.lua's one table of scalar types (kind, bits): TMA moves bytes, so
-- 8- and 16-bit integers and fp8 travel as UINT8 / UINT16; halves, bfloat16,
-- tf32 and floats keep their own codes (cuda.h's CUtensorMapDataType)
local FLOAT_CODE = { half = 6, bf16 = 9, tf32 = 11 }
local WIDTH_CODE = { [8] = 0, [16] = 1 }
local function map_dtype(ir)
  local info = ir and require("cute.dtype").by_ir[ir]
  if not info then return nil end
  local k, b = info.kind, info.bits
  if FLOAT_CODE[k] then return FLOAT_CODE[k] end
  if k == "float" then return b == 32 and 7 or b == 64 and 8 or nil end
  if k == "bool" then return nil end
  if WIDTH_CODE[b] then return WIDTH_CODE[b] end
  if b == 32 then return k == "int" and 3 or 2 end
  if b == 64 then return k == "int" and 5 or 4 end
end
M.map_dtype = map_dtype
local SWIZZLE_NAME = { [0] = "none", "32B", "64B", "128B" }
M.SWIZZLE_NAME = SWIZZLE_NAME

local function dtype_name(d)
  if type(d) == "string" then return d end
  if type(d) == "table" and d.name then
    local ir = require("cute.trace").dtype_ir[d.name]
    local info = ir and require("cute.trace").tinfo[ir]
    return info and info.name or d.name
  end
  return nil
end
M.dtype_name = dtype_name

---------------------------------------------------------------------------
-- the derivation (pure: no driver, no GPU)
---------------------------------------------------------------------------
-- leaves of a mode (shape, stride trees) in colexicographic order, extent-1
-- leaves dropped, neighbours merged where the stride continues
local function leaves(s, d, out)
  if type(s) == "table" then
    for i = 1, #s do leaves(s[i], d[i], out) end
  elseif s ~= 1 then
    local last = out[#out]
    if last and d == last[1] * last[2] then last[1] = last[1] * s
    else out[#out + 1] = { s, d } end
  end
  return out
end

local function size_of(s)
  if type(s) == "table" then
    local p = 1
    for i = 1, #s do p = p * size_of(s[i]) end
    return p
  end
  return s
end

local function log2i(x)
  local n = 0
  while x > 1 do x = x / 2; n = n + 1 end
  return n
end

-- tma_args(op, gmem, smem_layout, cta_tiler [, {num_multicast = n}]) -> table
--   gmem: { shape = {...}, strides = {...} (elements), dtype = dtype or IR name }
-- Returns { rank, dtype (IR name), map_dtype, elem_bytes, dim_modes (gmem
-- mode of each tensor-map dimension, innermost first), global_dim,
-- global_strides (bytes, dims 1..rank-1), box, element_strides, swizzle
-- (0..3), swizzle_name, interleave, l2_promotion, oob_fill, tile (extent per
-- gmem mode), boxes (boxes per tile, one CTA's share when multicast),
-- tx_bytes, num_multicast, split_mode, smem_align (bytes the smem tile needs) }
-- (what: the operation errors name; make_im2col_tma_atom derives its box here too)
function M.tma_args(op_, g, smem_layout, cta_tiler, opts, what)
  local F = what or "cute.nvgpu.cpasync.make_tiled_tma_atom"
  if not is_op(op_) then
    cf.fail(("%s: %s is not a TMA op (cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp() ...)"):format(F, show(op_)))
  end
  if op_.im2col and not what then
    cf.fail(("%s: %s loads im2col tiles: make its atom with cute.nvgpu.cpasync.make_im2col_tma_atom(op, " ..
      "activation, smem_layout, {filter = ..., stride =, padding =, dilation =})"):format(F, tostring(op_)))
  end
  opts = opts or {}
  if type(opts) ~= "table" then cf.fail(("%s: options must be a table {num_multicast = n}, got %s"):format(F, type(opts))) end
  for k in pairs(opts) do
    if k ~= "num_multicast" then cf.fail(("%s: unknown option %s (num_multicast)"):format(F, tostring(k))) end
  end
  local n_mc = opts.num_multicast or 1
  if type(n_mc) ~= "number" or n_mc % 1 ~= 0 or n_mc < 1 or n_mc > 16 then
    cf.fail(("%s: num_multicast = %s: must be an integer from 1 to 16"):format(F, show(n_mc)))
  end
  if n_mc > 1 and not op_.multicast then
    cf.fail(("%s: num_multicast = %d needs cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp(), got %s")
      :format(F, n_mc, tostring(op_)))
  end
  local dname = dtype_name(g.dtype)
  local mdt = map_dtype(dname)
  if not mdt then
    cf.fail(("%s: the tensor's dtype %s has no TMA data type (8/16/32/64-bit integers and floats)"):format(F,
      show(dname or g.dtype)))
  end
  local eb = C.cute_tensor_map_elem_bytes(mdt)
  local shape, strides = g.shape, g.strides
  local r = #shape
  if r < 1 or r > 4 then
    cf.fail(("%s: the tensor has rank %d; TMA tensors here have rank 1 to 4 (the tensor map allows 5, the " ..
      "coordinate tensor 4)"):format(F, r))
  end
  for m = 1, r do
    if type(shape[m]) ~= "number" or type(strides[m]) ~= "number" then
      cf.fail(("%s: mode %d of the tensor: shape and stride must be numbers on the host, got %s, %s"):format(F, m,
        show(shape[m]), show(strides[m])))
    end
  end
  -- the tile and the smem layout
  local tiler = type(cta_tiler) == "number" and { cta_tiler } or cta_tiler
  if lay.is_layout(tiler) or (type(tiler) == "cdata") then tiler = lay.is_layout(tiler) and tiler:shape() or tiler end
  if type(tiler) ~= "table" or #tiler < 1 or #tiler > r then
    cf.fail(("%s: cta_tiler %s: expected a table of 1 to %d tile extents, one per mode of the tensor"):format(F,
      show(cta_tiler), r))
  end
  local tile = {}
  for m = 1, r do
    local t = tiler[m] or 1
    if type(t) ~= "number" or t % 1 ~= 0 or t < 1 then
      cf.fail(("%s: cta_tiler %s: mode %d: the tile extent must be a positive integer"):format(F, show(tiler), m))
    end
    tile[m] = t
  end
  local sw, inner = { 0, 0, 0 }, smem_layout
  if lay.is_composed(smem_layout) then
    local off = lay.composed_offset(smem_layout)
    if off ~= 0 then
      cf.fail(("%s: the smem layout %s has the composed offset %d; TMA needs 0"):format(F, tostring(smem_layout), off))
    end
    sw = { smem_layout.sw_b, smem_layout.sw_m, smem_layout.sw_s }
    inner = lay.inner_layout(smem_layout)
  elseif not lay.is_layout(smem_layout) then
    cf.fail(("%s: smem_layout %s: expected a layout or a swizzled (composed) layout"):format(F, show(smem_layout)))
  end
  local sshape, sstride = inner:shape(), inner:stride()
  if type(sshape) ~= "table" then sshape, sstride = { sshape }, { sstride } end
  if #sshape ~= #tiler then
    cf.fail(("%s: the smem layout %s has %d modes but cta_tiler %s has %d: pass the layout of one stage " ..
      "(one mode per tile mode)"):format(F, tostring(smem_layout), #sshape, show(tiler), #tiler))
  end
  for m = 1, #tiler do
    if size_of(sshape[m]) ~= tile[m] then
      cf.fail(("%s: mode %d of the smem layout %s has %d elements but the tile has %d (cta_tiler %s)"):format(F, m,
        tostring(smem_layout), size_of(sshape[m]), tile[m], show(tiler)))
    end
  end
  -- the swizzle, in bytes: Sw<B, M, S> on elements of eb bytes is Sw<B, M + log2(eb), S> on bytes
  local swz = 0
  if sw[1] ~= 0 and sw[3] ~= 0 then
    local mb = sw[2] + log2i(eb)
    if mb == 4 and sw[3] == 3 and sw[1] >= 1 and sw[1] <= 3 then swz = sw[1]
    else
      cf.fail(("%s: the smem layout's swizzle Sw<%d,%d,%d> on %d-byte elements is Sw<%d,%d,%d> on bytes; TMA " ..
        "swizzles Sw<1,4,3> (32B), Sw<2,4,3> (64B) or Sw<3,4,3> (128B) on bytes (build the layout from " ..
        "cute.make_smem_layout_atom)"):format(F, sw[1], sw[2], sw[3], eb, sw[1], mb, sw[3]))
    end
  end
  local span = swz > 0 and 2 ^ (swz + 4) or nil
  -- tensor-map dimensions: the contiguous mode first, then the others in order
  local m0
  for m = 1, r do
    if strides[m] == 1 and (shape[m] > 1 or m0 == nil) then
      if m0 == nil or shape[m0] == 1 then m0 = m end
    end
  end
  if not m0 then
    cf.fail(("%s: no mode of the tensor (shape %s, strides %s) has stride 1: TMA needs a contiguous innermost " ..
      "dimension"):format(F, show(shape), show(strides)))
  end
  local dim_modes = { m0 }
  for m = 1, r do if m ~= m0 then dim_modes[#dim_modes + 1] = m end end
  local global_dim, global_strides = {}, {}
  for j, m in ipairs(dim_modes) do
    global_dim[j] = shape[m]
    if j > 1 then
      local b = strides[m] * eb
      -- a mode of extent 1 is never stepped along: any valid stride will do
      if shape[m] == 1 and (b % 16 ~= 0 or b <= 0) then b = 16 * math.max(1, math.ceil(math.abs(b) / 16)) end
      if b % 16 ~= 0 or b <= 0 then
        cf.fail(("%s: mode %d of the tensor (shape %s, strides %s) has a stride of %d elements = %d bytes: TMA " ..
          "needs positive strides that are multiples of 16 bytes"):format(F, m, show(shape), show(strides),
          strides[m], b))
      end
      global_strides[j - 1] = b
    end
  end
  -- the box: per tensor-map dimension the leading leaf of its smem mode,
  -- dense in dimension order (stride = product of the earlier boxes); the
  -- rest of the tile are more boxes of the same shape
  local mode_leaves, box = {}, {}
  for m = 1, r do
    mode_leaves[m] = m <= #sshape and leaves(sshape[m], sstride[m], {}) or {}
  end
  local split_mode
  if n_mc > 1 then
    for j = #dim_modes, 1, -1 do
      if tile[dim_modes[j]] > 1 then split_mode = dim_modes[j]; break end
    end
    if not split_mode or tile[split_mode] % n_mc ~= 0 then
      cf.fail(("%s: num_multicast = %d: the tile %s has no mode divisible by %d to split among the CTAs"):format(F,
        n_mc, show(tile), n_mc))
    end
  end
  local want = 1
  for j, m in ipairs(dim_modes) do
    local lv = mode_leaves[m]
    local cap = 256
    if j == 1 and span then cap = span / eb end
    if m == split_mode then cap = math.min(cap, tile[m] / n_mc) end
    local b = 1
    if #lv > 0 then
      local e, s = lv[1][1], lv[1][2]
      if s ~= want then
        cf.fail(("%s: the smem layout %s does not store the box densely: mode %d (tensor-map dimension %d) " ..
          "starts with stride %d where TMA writes stride %d%s"):format(F, tostring(smem_layout), m, j - 1, s, want,
          j == 1 and " (the tensor's contiguous mode must be contiguous in shared memory too)" or ""))
      end
      b = e
      if b > cap then
        if b % cap ~= 0 then
          cf.fail(("%s: mode %d of the smem layout %s: a run of %d elements cannot be split into boxes of %d"):format(F,
            m, tostring(smem_layout), b, cap))
        end
        b = cap
      elseif m == split_mode and cap % b ~= 0 then
        cf.fail(("%s: num_multicast = %d: mode %d's share of %d elements is not a whole number of boxes of %d"):format(F,
          n_mc, m, cap, b))
      end
    end
    box[j] = b
    want = want * b
  end
  -- the first box dimension: whole 16-byte units, within the swizzle span
  local inner_bytes = box[1] * eb
  if inner_bytes % 16 ~= 0 then
    cf.fail(("%s: the box's contiguous extent is %d elements = %d bytes; TMA moves whole 16-byte units (tile " ..
      "the contiguous mode by a multiple of %d elements)"):format(F, box[1], inner_bytes, 16 / math.min(eb, 16)))
  end
  -- every box starts on a boundary of the swizzle pattern (and 128 bytes)
  local unit = swz > 0 and 2 ^ (swz + 7) or 128
  local function check_origin(off)
    if (off * eb) % unit ~= 0 then
      cf.fail(("%s: the smem layout %s puts a box at byte offset %d, not a multiple of %d (the %s swizzle " ..
        "pattern / TMA's 128-byte alignment)"):format(F, tostring(smem_layout), off * eb, unit, SWIZZLE_NAME[swz]))
    end
  end
  -- box origins: the smem offsets of all combinations of the non-box parts
  local nboxes, origins = 1, { 0 }
  for j, m in ipairs(dim_modes) do
    local lv = mode_leaves[m]
    if #lv > 0 then
      local e, s = lv[1][1], lv[1][2]
      local parts = {}
      if e > box[j] then parts[1] = { e / box[j], s * box[j] } end
      for i = 2, #lv do parts[#parts + 1] = lv[i] end
      for _, p in ipairs(parts) do
        local nx = {}
        for k = 0, p[1] - 1 do
          for _, o in ipairs(origins) do nx[#nx + 1] = o + k * p[2] end
        end
        origins = nx
        nboxes = nboxes * p[1]
      end
    end
  end
  for _, o in ipairs(origins) do check_origin(o) end
  local tile_elems = 1
  for m = 1, r do tile_elems = tile_elems * tile[m] end
  local es = {}
  for j = 1, r do es[j] = 1 end
  return { rank = r, dtype = dname, map_dtype = mdt, elem_bytes = eb, dim_modes = dim_modes, global_dim = global_dim,
    global_strides = global_strides, box = box, element_strides = es, swizzle = swz, swizzle_name = SWIZZLE_NAME[swz],
    interleave = 0, l2_promotion = 2, oob_fill = 0, tile = tile, tiler_rank = #tiler, boxes = nboxes / n_mc,
    tx_bytes = tile_elems * eb, num_multicast = n_mc, split_mode = split_mode, smem_align = unit,
    box_bytes = want * eb }
end

-- the C record of a derivation (global_address: a number or cdata address;
-- box_rank: how many leading box dimensions are the derivation's, the rest 1 --
-- im2col's two (pixels, channels) of a rank-3..5 tensor)
function M.c_args(a, global_address, box_rank)
  local c = ffi.new("cute_tensor_map_args")
  c.dtype, c.rank = a.map_dtype, a.rank
  c.global_address = global_address or 0
  for j = 1, a.rank do
    c.global_dim[j - 1] = a.global_dim[j]
    c.box_dim[j - 1] = j <= (box_rank or a.rank) and a.box[j] or 1
    c.element_strides[j - 1] = a.element_strides[j]
    if j < a.rank then c.global_strides[j - 1] = a.global_strides[j] end
  end
  c.interleave, c.swizzle, c.l2_promotion, c.oob_fill = a.interleave, a.swizzle, a.l2_promotion, a.oob_fill
  return c
end

-- cute_tensor_map_check on a derivation: true, or false and the message
function M.check(a, global_address, box_rank)
  local st = C.cute_tensor_map_check(M.c_args(a, global_address, box_rank), cf.err)
  if st ~= 0 then return false, ffi.string(cf.err.msg) end
  return true
end

---------------------------------------------------------------------------
-- atoms and coordinate tensors (kernel arguments)
---------------------------------------------------------------------------
local Atom = {}
Atom.__index = Atom
M.Atom = Atom
Atom.__tostring = function(a)
  return ("tma_atom<%s, %s, box %s, swizzle %s%s>"):format(a.op.name, a.args.dtype, show(a.args.box),
    a.args.swizzle_name, a.args.num_multicast > 1 and (", multicast " .. a.args.num_multicast) or "")
end
function M.is_atom(x) return getmetatable(x) == Atom end

local CoordTensor = {}
CoordTensor.__index = CoordTensor
M.CoordTensor = CoordTensor
CoordTensor.__tostring = function(t)
  return ("tma_tensor<%s%s>"):format(show(t.shape), t.dynamic and ", dynamic" or "")
end
function M.is_coord_tensor(x) return getmetatable(x) == CoordTensor end

local map_ct = ffi.typeof("uint8_t[?]")

-- the tensor-map encoder of the driver in use (the CPU target has its own: target_cpu.lua)
function M.encoder(name)
  local tc = package.loaded["cute.target_cpu"]
  return tc and tc.active and tc.driver[name] or C[name]
end

-- make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler [, {num_multicast = n}]) -> atom, tma_tensor
function M.make_tiled_tma_atom(op_, t, smem_layout, cta_tiler, opts)
  local F = "cute.nvgpu.cpasync.make_tiled_tma_atom"
  if require("cute.trace").active() then
    cf.fail(F .. ": call it on the host (outside the kernel) and pass the atom and the tma tensor as kernel arguments")
  end
  if type(t) ~= "table" or type(t.shape) ~= "table" or type(t.dtype) ~= "table" then
    cf.fail(("%s: expected a device tensor (cute.empty / cute.from_host / cute.tensor_spec), got %s"):format(F, show(t)))
  end
  local strides = t.strides or require("cute.memory").row_major(t.shape)
  local a = M.tma_args(op_, { shape = t.shape, strides = strides, dtype = t.dtype }, smem_layout, cta_tiler, opts)
  local addr = t.ptr and (tonumber(ffi.cast("uint64_t", t.ptr)) or 0) or 0
  if type(t.ptr) == "number" then addr = t.ptr end
  local ok, why = M.check(a, addr)
  if not ok then cf.fail(F .. ": " .. why) end
  -- extents of a runtime (cute.dynamic) tensor reach the kernel as i32
  local bits = a.rank == 1 and 31 or math.floor(52 / a.rank)
  for m = 1, a.rank do
    if t.shape[m] >= 2 ^ (bits - 1) then
      cf.fail(("%s: mode %d has extent %d; a rank-%d coordinate tensor holds extents below %d"):format(F, m,
        t.shape[m], a.rank, 2 ^ (bits - 1)))
    end
  end
  local buf = map_ct(128 + 64)
  local p = ffi.cast("uint8_t*", buf)
  local base = tonumber(ffi.cast("uintptr_t", p))
  local map = p + ((64 - base % 64) % 64)
  local encoded = false
  if addr ~= 0 then
    cf.check(M.encoder("cute_tensor_map_encode_tiled")(map, M.c_args(a, addr), cf.err))
    encoded = true
  end
  local key = ("TMA|%s|%s|%s|%s|%s|%s|mc%d"):format(op_.name, op_.reduce or "", a.dtype, tostring(smem_layout),
    show(a.tile), show(a.dim_modes), a.num_multicast)
  local atom = setmetatable({ op = op_, args = a, tx_bytes = a.tx_bytes, num_multicast = a.num_multicast,
    smem_layout = smem_layout, _buf = buf, desc = map, encoded = encoded, _key = key }, Atom)
  local dyn = t.dynamic and true or false
  local shape = {}
  for m = 1, a.rank do shape[m] = t.shape[m] end
  local ct = setmetatable({ shape = shape, dynamic = dyn, rank = a.rank,
    _key = dyn and ("TMAC|dyn" .. a.rank) or ("TMAC|" .. show(shape)) }, CoordTensor)
  return atom, ct
end

-- the launch refuses an atom made from a tensor without a device address
function M.unencoded(i, name)
  cf.fail(("cute.launch: argument %d (%s): the TMA atom was made from a tensor without a device address " ..
    "(a cute.tensor_spec): make it from a device tensor to launch"):format(i, name or "?"))
end

return M
