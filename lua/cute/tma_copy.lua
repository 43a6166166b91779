-- cute.tma_copy: TMA inside kernels (docs/HOPPER.md, "TMA").
--
--   local tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(atom, cta_coord, cta_layout, sA, gA)
--   cute.copy(atom, tAgA[{_, k}], tAsA[{_, stage}], {tma_bar_ptr = mbar, mcast_mask = m})  -- G2S
--   cute.copy(atom, tCsC, tCgC)                                          -- S2G (and reductions)
--   cute.nvgpu.cpasync.prefetch_descriptor(atom)        prefetch.tensormap
--   cute.nvgpu.cpasync.tma_store_fence()                fence.proxy.async.shared::cta
--   cute.nvgpu.cpasync.tma_store_arrive()               cp.async.bulk.commit_group
--   cute.nvgpu.cpasync.tma_store_wait(n)                cp.async.bulk.wait_group.read n
--
-- The atom argument of a kernel is a `bytes<128,64>` grid-constant parameter
-- (the CUtensorMap); instructions take its generic address (`param.addr`).
-- A copy issues one cp.async.bulk.tensor per box of the tile (lua/cute/tma.lua
-- derives the box); its coordinates are the first element's of each box in
-- the coordinate tensor (the tma_tensor), in tensor-map dimension order.
-- An im2col atom's box origin is (m, k) of the im2col matrix, turned into the
-- instruction's coordinates and 16-bit filter-tap offsets by
-- lua/cute/tma_im2col.lua (`...global.im2col.mbarrier::complete_tx::bytes`).
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")
local lay = require("cute.layout")
local tma = require("cute.tma")
local im2col = require("cute.tma_im2col")

local T, OP = tr.T, tr.OP
local fail, setloc, mk = tr.fail, tr.setloc, tr.mk

local M = {}

---------------------------------------------------------------------------
-- kernel arguments: the atom's parameter and the coordinate tensor
---------------------------------------------------------------------------
local KAtom = {}
KAtom.__index = function(a, k)
  local v = KAtom[k]
  if v ~= nil then return v end
  if k == "tx_bytes" or k == "num_multicast" or k == "op" or k == "args" then return rawget(a, "host")[k] end
  return nil
end
KAtom.__tostring = function(a) return "kernel " .. tostring(rawget(a, "host")) end
local function is_katom(x) return getmetatable(x) == KAtom end
M.is_atom = function(x) return is_katom(x) end

-- Kernel:trace's hook (__cute_param): the parameter and the kernel-side value
tma.Atom.__cute_param = function(a, p)
  local bt = C.cute_ir_t_bytes(p.ir, 128, 64)
  local ref = C.cute_ir_param(p.ir, bt, p.name, C.CUTE_P_GRID_CONSTANT, 0)
  if ref == 0 then tr.ir_fail() end
  p.plan[#p.plan + 1] = { kind = "bytes", arg = p.arg, name = p.name }
  return setmetatable({ host = a, param = tr.mk(ref, bt) }, KAtom)
end
tma.Atom.__cute_key = true
tma.CoordTensor.__cute_param = function(t, p)
  local shape = {}
  for m = 1, t.rank do
    if t.dynamic then
      local ref = C.cute_ir_param(p.ir, T.I32, ("%s_shape%d"):format(p.name, m), 0, 0)
      if ref == 0 then tr.ir_fail() end
      p.plan[#p.plan + 1] = { kind = "dim", arg = p.arg, field = "shape", d = m, bits = 32 }
      shape[m] = tr.mk(ref, T.I32)
    else
      shape[m] = t.shape[m]
    end
  end
  return ten.make_identity_tensor(t.rank == 1 and shape[1] or shape)
end
tma.CoordTensor.__cute_key = true

---------------------------------------------------------------------------
-- helpers
---------------------------------------------------------------------------
local function need_sm90(what)
  tr.need_trace(what)
  local s = tr.state()
  local a = s.arch
  local n = a and tonumber(a:match("^sm_(%d+)"))
  if n and n < 90 then
    fail(("%s needs sm_90 or newer; the kernel is compiled for %s (give {arch = \"sm_90a\"})"):format(what, a))
  end
  return s
end

local function want_atom(a, what)
  if not is_katom(a) then
    if tma.is_atom(a) then fail(what .. ": the TMA atom must be a kernel argument (pass it to the kernel)") end
    fail(("%s: expected a TMA atom (cute.nvgpu.cpasync.make_tiled_tma_atom, passed as a kernel argument), got %s")
      :format(what, tostring(a)))
  end
  return rawget(a, "host")
end

local function asm(ptx, cons, args)
  local s = tr.state()
  local refs = ffi.new("int32_t[?]", math.max(#args, 1))
  for i, v in ipairs(args) do refs[i - 1] = v.ref end
  setloc()
  cf.ir_check(s.ir, C.cute_ir_asm(s.ir, C.CUTE_T_VOID, ptx, cons, #args, refs))
end

-- the descriptor's generic address (u64)
local function desc_addr(a)
  local s = tr.state()
  local pt = C.cute_ir_t_ptr(s.ir, T.U8, C.CUTE_AS_GENERIC)
  local refs = ffi.new("int32_t[1]", rawget(a, "param").ref)
  setloc()
  local p = mk(C.cute_ir_op(s.ir, C.CUTE_IR_PARAMADDR, pt, 1, refs, 0, 0), pt)
  return mk(C.cute_ir_op(s.ir, OP.BITCAST, T.U64, 1, ffi.new("int32_t[1]", p.ref), 0, 0), T.U64)
end

local function smem_u32(p)
  local s = tr.state()
  local u = mk(C.cute_ir_op(s.ir, OP.BITCAST, T.U64, 1, ffi.new("int32_t[1]", p.ref), 0, 0), T.U64)
  return tr.cvt(u, T.U32)
end

-- a shared-memory address (u32) from a shared tensor or a shared pointer
local function shared_addr(x, what, which)
  if ten.is_tensor(x) then
    if x.space ~= "shared" then fail(("%s: %s must be in shared memory, got a %s tensor"):format(what, which, x.space)) end
    return smem_u32(x:ptr_at(0))
  end
  if tr.is_value(x) and C.cute_ir_type_kind(tr.state().ir, x.t) == C.CUTE_T_PTR then
    local sp = ffi.new("int[1]")
    C.cute_ir_type_elem(tr.state().ir, x.t, sp)
    if sp[0] ~= C.CUTE_AS_SHARED then
      fail(("%s: %s must be a shared-memory pointer, got a pointer in %s memory"):format(what, which,
        require("cute.dtype").space_names[sp[0]] or "generic"))
    end
    return smem_u32(x)
  end
  fail(("%s: %s must be a shared-memory tensor or pointer, got %s"):format(what, which,
    tr.is_value(x) and "a traced scalar" or tostring(x)))
end

local function static_layout(s, d) return lay.make_layout(s, d) end

-- the tile modes of a tensor as a list (shape[m], stride[m]) plus the rest;
-- grouped: mode 1 holds the R tile modes; flat: the first R modes are them
local function tile_modes(Tn, R, tile, what, which)
  local sh, st = Tn.layout.shape, Tn.layout.stride
  if type(sh) ~= "table" then sh, st = { sh }, { st } end
  local function sz(x) return ten.tsize(x) end
  local function matches(list_s, n)
    if #list_s < n then return false end
    for m = 1, n do
      if not (ten.is_static(list_s[m]) and sz(list_s[m]) == tile[m]) then return false end
    end
    return true
  end
  if R > 1 and type(sh[1]) == "table" and #sh[1] == R and matches(sh[1], R) then
    local rs, rd = {}, {}
    for i = 2, #sh do rs[#rs + 1] = sh[i]; rd[#rd + 1] = st[i] end
    return sh[1], st[1], rs, rd
  end
  if matches(sh, R) then
    local ts, td, rs, rd = {}, {}, {}, {}
    for m = 1, R do ts[m], td[m] = sh[m], st[m] end
    for i = R + 1, #sh do rs[#rs + 1] = sh[i]; rd[#rd + 1] = st[i] end
    return ts, td, rs, rd
  end
  local t = {}
  for m = 1, R do t[m] = tile[m] end
  fail(("%s: %s has layout %s; expected the tile %s first (grouped as its first mode or as its first %d modes)")
    :format(what, which, ten.layout_str(Tn.layout), tma.show(t), R))
end

-- cute.group_modes(t, b, e) for kernel tensors: modes b..e-1 (0-based) as one
function M.group_modes(Tn, b, e)
  local sh, st = Tn.layout.shape, Tn.layout.stride
  if type(sh) ~= "table" then sh, st = { sh }, { st } end
  e = e or #sh
  if type(b) ~= "number" or type(e) ~= "number" or b < 0 or e > #sh or b >= e then
    fail(("cute.group_modes: modes [%s, %s) of a rank-%d tensor"):format(tostring(b), tostring(e), #sh))
  end
  local ns, nd, gs, gd = {}, {}, {}, {}
  for i = 1, #sh do
    if i - 1 >= b and i - 1 < e then
      gs[#gs + 1], gd[#gd + 1] = sh[i], st[i]
      if i - 1 == e - 1 then ns[#ns + 1], nd[#nd + 1] = gs, gd end
    else
      ns[#ns + 1], nd[#nd + 1] = sh[i], st[i]
    end
  end
  return ten.make(Tn.ptr, Tn.off, { shape = ns, stride = nd }, Tn.elem, Tn.space, Tn.align, Tn.idx)
end

---------------------------------------------------------------------------
-- tma_partition
---------------------------------------------------------------------------
-- the piece r of n of mode (s, d): its layout and the offset of its start
local function piece(s, d, n, r, what)
  local L = static_layout(s, d)
  local E = lay.size(L)
  local q = E / n
  local P = lay.composition(L, lay.make_layout(q))
  local step = L(q)
  for j = 0, n - 1 do
    if L(j * q) ~= j * step then
      fail(("%s: the tile mode %s cannot be cut into %d equal pieces at a constant stride"):format(what, tostring(L), n))
    end
  end
  local off = type(r) == "number" and r * step or ten.imul(r, step)
  return P:shape(), P:stride(), off
end

-- tma_partition(atom, cta_coord, cta_layout, sX, gX) -> tXsX, tXgX: the tile
-- modes grouped first (this CTA's share of the tile when multicast)
function M.tma_partition(a, cta_coord, cta_layout, sX, gX)
  local F = "cute.nvgpu.cpasync.tma_partition"
  local h = want_atom(a, F)
  local args = h.args
  if not ten.is_tensor(sX) or sX.space ~= "shared" then fail(F .. ": sX must be a shared-memory tensor") end
  if not ten.is_tensor(gX) or gX.space ~= "identity" then
    fail(F .. ": gX must be (a tile of) the coordinate tensor that make_tiled_tma_atom returned")
  end
  local R, n = args.tiler_rank, args.num_multicast
  local ncta, r = 1, 0
  if cta_layout ~= nil then
    local L = type(cta_layout) == "number" and lay.make_layout(cta_layout) or cta_layout
    if not lay.is_layout(L) then fail(("%s: cta_layout %s: expected a layout"):format(F, tostring(cta_layout))) end
    ncta = lay.size(L)
    if ncta ~= n then
      fail(("%s: cta_layout %s has %d CTAs but the atom multicasts to %d (num_multicast)"):format(F, tostring(L), ncta, n))
    end
    if n > 1 then
      if tr.is_var(cta_coord) then cta_coord = cta_coord.value end
      r = ten.crd2idx(cta_coord, L:shape(), L:stride(), T.I32)
    end
  elseif n > 1 then
    fail(("%s: the atom multicasts to %d CTAs: give cta_coord and cta_layout"):format(F, n))
  end
  local out = {}
  for i, X in ipairs({ sX, gX }) do
    local ts, td, rs, rd = tile_modes(X, R, args.tile, F, i == 1 and "sX" or "gX")
    local off = X.off
    local ns, nd = {}, {}
    for m = 1, R do ns[m], nd[m] = ts[m], td[m] end
    if n > 1 then
      local m = args.split_mode
      local s2, d2, o = piece(ts[m], td[m], n, r, F)
      ns[m], nd[m] = s2, d2
      off = ten.off_add(off, o)
    end
    local shape, stride = { R == 1 and ns[1] or ns }, { R == 1 and nd[1] or nd }
    for k = 1, #rs do shape[#shape + 1], stride[#stride + 1] = rs[k], rd[k] end
    out[i] = ten.make(X.ptr, off, { shape = shape, stride = stride }, X.elem, X.space, X.align, X.idx)
  end
  return out[1], out[2]
end

---------------------------------------------------------------------------
-- copies
---------------------------------------------------------------------------
local function coord_list(c, r)
  if type(c) ~= "table" or tr.is_value(c) then c = { c } end
  local out = {}
  for i = 1, r do
    local x = c[i]
    if tr.is_var(x) then x = x.value end
    x = tr.lift(x, T.I32)
    if x.t ~= T.I32 then x = tr.cvt(x, T.I32) end
    out[i] = x
  end
  return out
end

-- the boxes of a tile: per box the tile coordinate of its origin
local function box_origins(args, ext)
  local R = args.tiler_rank
  local step = {}
  for j, m in ipairs(args.dim_modes) do if m <= R then step[m] = args.box[j] end end
  local list = { {} }
  for m = 1, R do
    local nx = {}
    for _, o in ipairs(list) do
      for c = 0, ext[m] - 1, step[m] do
        local t = { unpack(o) }
        t[m] = c
        nx[#nx + 1] = t
      end
    end
    list = nx
  end
  return list
end

local REDUCE_PTX = { add = "add", min = "min", max = "max", inc = "inc", dec = "dec", ["and"] = "and", ["or"] = "or",
  xor = "xor" }

-- cute.copy(atom, src, dst [, {tma_bar_ptr = mbar, mcast_mask = m}])
function M.copy(a, src, dst, opts)
  local h = want_atom(a, "cute.copy")
  local args, op = h.args, h.op
  local what = ("cute.copy (TMA %s)"):format(op.name)
  need_sm90(what)
  opts = opts or {}
  if type(opts) ~= "table" then fail(what .. ": options must be a table {tma_bar_ptr = ..., mcast_mask = ...}") end
  for k in pairs(opts) do
    if k ~= "tma_bar_ptr" and k ~= "mcast_mask" then
      fail(("%s: unknown option %s (tma_bar_ptr, mcast_mask)"):format(what, tostring(k)))
    end
  end
  local g2s = op.dir == "g2s"
  local smem, coords = dst, src
  if not g2s then smem, coords = src, dst end
  if not ten.is_tensor(coords) or coords.space ~= "identity" then
    fail(("%s: the %s must be (a partition of) the tma tensor (coordinates), got %s"):format(what,
      g2s and "source" or "destination", tostring(coords)))
  end
  if not ten.is_tensor(smem) or smem.space ~= "shared" then
    fail(("%s: the %s must be a shared-memory tensor, got %s"):format(what, g2s and "destination" or "source",
      tostring(smem)))
  end
  if smem.elem ~= tr.dtype_ir[args.dtype] and tr.tinfo[smem.elem].name ~= args.dtype then
    fail(("%s: the shared tensor holds %s but the atom moves %s"):format(what, tr.tinfo[smem.elem].name, args.dtype))
  end
  local R, n = args.tiler_rank, args.num_multicast
  local ext = {}
  for m = 1, R do ext[m] = args.tile[m] end
  if n > 1 then ext[args.split_mode] = ext[args.split_mode] / n end
  local ss, sd, srs = tile_modes(smem, R, ext, what, "the shared tensor")
  local cs, cd, crs = tile_modes(coords, R, ext, what, "the coordinate tensor")
  if #srs > 0 or #crs > 0 then
    fail(("%s: slice the tensors to one tile first (e.g. tAgA[{_, k}], tAsA[{_, stage}]); got %s and %s"):format(what,
      ten.layout_str(smem.layout), ten.layout_str(coords.layout)))
  end
  -- the shared tile's start: aligned for TMA (and the swizzle pattern)
  if smem.align < args.smem_align then
    fail(("%s: the shared tensor is %d-byte aligned; TMA with a %s swizzle needs %d bytes (give the alignment to " ..
      "cute.make_shared_tensor(layout, dtype, %d))"):format(what, smem.align, args.swizzle_name, args.smem_align,
      args.smem_align))
  end
  if type(smem.off) == "number" and (smem.off * args.elem_bytes) % args.smem_align ~= 0 then
    fail(("%s: the shared tile starts at byte offset %d, not a multiple of %d"):format(what,
      smem.off * args.elem_bytes, args.smem_align))
  end
  local mbar, mask
  if g2s then
    if opts.tma_bar_ptr == nil then fail(what .. ": a load needs {tma_bar_ptr = mbarrier} (its transaction count)") end
    mbar = shared_addr(opts.tma_bar_ptr, what, "tma_bar_ptr")
    if op.multicast then
      if opts.mcast_mask == nil then fail(what .. ": a multicast load needs {mcast_mask = m} (a bit per CTA of the cluster)") end
      local m = opts.mcast_mask
      if tr.is_var(m) then m = m.value end
      if type(m) == "number" and (m % 1 ~= 0 or m < 0 or m > 65535) then
        fail(("%s: mcast_mask = %s: must be a 16-bit CTA mask"):format(what, tostring(m)))
      end
      mask = tr.lift(m, T.U16)
      if mask.t ~= T.U16 then mask = tr.cvt(mask, T.U16) end
    elseif opts.mcast_mask ~= nil then
      fail(what .. ": mcast_mask needs cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp()")
    end
  elseif opts.tma_bar_ptr ~= nil or opts.mcast_mask ~= nil then
    fail(what .. ": a store takes no tma_bar_ptr or mcast_mask (it completes through the bulk group: tma_store_arrive / tma_store_wait)")
  end
  local d = args.rank
  local desc = desc_addr(a)
  local ct = ten.make(coords.ptr, coords.off, { shape = cs, stride = cd }, coords.elem, coords.space, coords.align,
    coords.idx)
  for _, o in ipairs(box_origins(args, ext)) do
    local off = ten.crd2idx(R == 1 and o[1] or o, R == 1 and ss[1] or ss, R == 1 and sd[1] or sd, T.I32)
    local sp = smem_u32(ten.element_ptr(smem, off))
    local cc, offs = {}, nil
    if op.im2col then -- (m, k) of the im2col matrix -> the instruction's coordinates and offsets
      local c = coord_list(ct[o], 2)
      cc, offs = im2col.box_coords(args, c[1], c[2])
      for j = 1, d do cc[j] = coord_list(cc[j], 1)[1] end
      for j = 1, #offs do
        local v = coord_list(offs[j], 1)[1]
        offs[j] = tr.cvt(v, T.U16)
      end
    else
      local c = coord_list(ct[R == 1 and o[1] or o], d)
      for j, m in ipairs(args.dim_modes) do cc[j] = c[m] end
    end
    local slots = {}
    if offs then
      local argv = { sp, desc }
      for j = 1, d do slots[j] = "$" .. (j + 1); argv[#argv + 1] = cc[j] end
      argv[#argv + 1] = mbar
      local oslots = {}
      for j = 1, #offs do oslots[j] = "$" .. (#argv + j - 1) end
      for j = 1, #offs do argv[#argv + 1] = offs[j] end
      local cons = "r,l" .. string.rep(",r", d) .. ",r" .. string.rep(",h", #offs)
      local ptx = ("cp.async.bulk.tensor.%dd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes%s [$0], " ..
        "[$1, {%s}], [$%d], {%s}"):format(d, op.multicast and ".multicast::cluster" or "", table.concat(slots, ", "),
        d + 2, table.concat(oslots, ", "))
      if op.multicast then
        argv[#argv + 1] = mask
        ptx = ptx .. (", $%d"):format(#argv - 1)
        cons = cons .. ",h"
      end
      asm(ptx .. ";", cons .. ",~{memory}", argv)
    elseif g2s then
      local argv = { sp, desc }
      for j = 1, d do slots[j] = "$" .. (j + 1); argv[#argv + 1] = cc[j] end
      argv[#argv + 1] = mbar
      local cons = "r,l" .. string.rep(",r", d) .. ",r"
      local ptx = ("cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes%s [$0], [$1, {%s}], [$%d]")
        :format(d, op.multicast and ".multicast::cluster" or "", table.concat(slots, ", "), d + 2)
      if op.multicast then
        argv[#argv + 1] = mask
        ptx = ptx .. (", $%d"):format(d + 3)
        cons = cons .. ",h"
      end
      asm(ptx .. ";", cons .. ",~{memory}", argv)
    else
      local argv = { desc, sp }
      for j = 1, d do slots[j] = "$" .. (j + 1); argv[#argv + 1] = cc[j] end
      local ptx
      if op.reduce then
        ptx = ("cp.reduce.async.bulk.tensor.%dd.global.shared::cta.%s.tile.bulk_group [$0, {%s}], [$1];"):format(d,
          REDUCE_PTX[op.reduce], table.concat(slots, ", "))
      else
        ptx = ("cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [$0, {%s}], [$1];"):format(d,
          table.concat(slots, ", "))
      end
      asm(ptx, "l,r" .. string.rep(",r", d) .. ",~{memory}", argv)
    end
  end
end

-- cute.nvgpu.cpasync.prefetch_descriptor(atom): prefetch.tensormap
function M.prefetch_descriptor(a)
  local what = "cute.nvgpu.cpasync.prefetch_descriptor"
  want_atom(a, what)
  need_sm90(what)
  asm("prefetch.tensormap [$0];", "l,~{memory}", { desc_addr(a) })
end

function M.tma_store_fence()
  need_sm90("cute.nvgpu.cpasync.tma_store_fence")
  asm("fence.proxy.async.shared::cta;", "~{memory}", {})
end
function M.tma_store_arrive()
  need_sm90("cute.nvgpu.cpasync.tma_store_arrive")
  asm("cp.async.bulk.commit_group;", "~{memory}", {})
end
function M.tma_store_wait(n)
  local what = "cute.nvgpu.cpasync.tma_store_wait"
  need_sm90(what)
  n = n or 0
  if type(n) ~= "number" or n % 1 ~= 0 or n < 0 or n > 63 then
    fail(("%s(n): n = %s: must be a Lua integer from 0 to 63 (an immediate)"):format(what, tostring(n)))
  end
  asm(("cp.async.bulk.wait_group.read %d;"):format(n), "~{memory}", {})
end

-- cute.nvgpu.cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode):
-- the 16-bit mask of the CTAs whose coordinate equals cta_coord_vmnk except
-- in mode mcast_mode (0-based: 2 = N for A's tiles, 1 = M for B's), bit =
-- their rank in cta_layout_vmnk; a Lua number when the coordinate is known
function M.create_tma_multicast_mask(L, coord, mode)
  local F = "cute.nvgpu.cpasync.create_tma_multicast_mask"
  if not lay.is_layout(L) then fail(("%s: cta_layout %s: expected a layout"):format(F, tostring(L))) end
  local sh, st = L:shape(), L:stride()
  if type(sh) ~= "table" then sh, st = { sh }, { st } end
  if lay.size(L) > 16 then fail(("%s: cta_layout %s has %d CTAs; a cluster multicasts to at most 16"):format(F, tostring(L), lay.size(L))) end
  if type(coord) ~= "table" or tr.is_value(coord) or #coord ~= #sh then
    fail(("%s: cta_coord must be a table of %d coordinates (one per mode of %s)"):format(F, #sh, tostring(L)))
  end
  if type(mode) ~= "number" or mode % 1 ~= 0 or mode < 0 or mode >= #sh then
    fail(("%s: mcast_mode = %s: must be a mode index from 0 to %d"):format(F, tostring(mode), #sh - 1))
  end
  for i = 1, #sh do
    if type(sh[i]) ~= "number" then fail(("%s: mode %d of %s is not flat"):format(F, i - 1, tostring(L))) end
  end
  local mask = 0
  for i = 0, sh[mode + 1] - 1 do
    local c = {}
    for m = 1, #sh do
      local x = m == mode + 1 and i or coord[m]
      if tr.is_var(x) then x = x.value end
      c[m] = x
    end
    local r = ten.crd2idx(c, sh, st, T.I32)
    if type(r) == "number" and type(mask) == "number" then
      mask = mask + (math.floor(mask / 2 ^ r) % 2 == 0 and 2 ^ r or 0)
    else
      local b = type(r) == "number" and 2 ^ r or tr.binop(OP.SHL, tr.const(T.I32, 1), r)
      mask = tr.binop(OP.OR, tr.lift(mask, T.I32), tr.lift(b, T.I32))
    end
  end
  return mask
end

-- into cute.nvgpu.cpasync
function M.install(cpasync)
  for k, v in pairs(tma.ops) do cpasync[k] = v end
  cpasync.make_tiled_tma_atom = tma.make_tiled_tma_atom
  cpasync.tma_args = tma.tma_args
  cpasync.tma_partition = M.tma_partition
  cpasync.prefetch_descriptor = M.prefetch_descriptor
  cpasync.tma_store_fence = M.tma_store_fence
  cpasync.tma_store_arrive = M.tma_store_arrive
  cpasync.tma_store_wait = M.tma_store_wait
  cpasync.create_tma_multicast_mask = M.create_tma_multicast_mask
  im2col.install(cpasync)
end

return M
