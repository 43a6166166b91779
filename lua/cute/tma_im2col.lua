-- cute.tma_im2col: TMA im2col loads for convolutions (docs/HOPPER.md, "TMA",
-- "im2col"): CuTe C++'s SM90_TMA_LOAD_IM2COL.
--
--   local atom, mA = cute.nvgpu.cpasync.make_im2col_tma_atom(
--       cute.nvgpu.cpasync.CopyBulkTensorIm2ColG2SOp(), x_nhwc, sA_layout,
--       {filter = {R, S}, stride = s, padding = p, dilation = d [, upper_padding =, num_multicast =]})
--   cute.nvgpu.cpasync.im2col_tma_args(op, {shape =, strides =, dtype =}, sA_layout, conv)  -- pure
--
-- The activation is an NWC, NHWC or NDHWC tensor (channels contiguous).  The
-- conv fprop's A operand is the im2col matrix (M, K): M = N * (output
-- pixels), linear with the output W fastest; K = C * (filter taps), the
-- channel fastest, then the filter's W tap (S), H tap (R), D tap (T).  The
-- atom loads a (BM, BK) tile of it (the smem layout's two modes) with
-- `cp.async.bulk.tensor.Nd...im2col`: one instruction per box of
-- (channels_per_pixel, pixels_per_column); TMA walks the pixels of the
-- bounding box (W, then H, D, N, stepping by the conv stride) and adds the
-- filter tap (the im2col offsets) to each; what falls outside the tensor
-- (the padding) arrives as zeros.  The second result is the coordinate
-- tensor over (M, K) that kernels tile and partition as for tiled TMA;
-- cute.copy turns a box origin (m, k) into the instruction's coordinates.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local lay = require("cute.layout")
local tma = require("cute.tma")

local M = {}
local show = tma.show
local SPATIAL = { [3] = { "W" }, [4] = { "H", "W" }, [5] = { "D", "H", "W" } }
local LAYOUT_NAME = { [3] = "NWC", [4] = "NHWC", [5] = "NDHWC" }
-- PTX ISA: bounding-box corners are 16-bit signed values in [-lim, lim) and the
-- im2col offsets unsigned in [0, off_max], per tensor rank
local CORNER_LIM = { [3] = 32768, [4] = 128, [5] = 16 }
local OFFSET_MAX = { [3] = 65535, [4] = 255, [5] = 31 }
local CONV_KEYS = { filter = true, stride = true, padding = true, upper_padding = true, dilation = true,
  num_multicast = true }

-- a per-spatial-dimension parameter: a number for all, or a table of ns
-- numbers in the tensor's mode order (D, H, W)
local function per_dim(F, name, v, ns, rank, default, min)
  if v == nil then v = default end
  local t = {}
  if type(v) == "number" then
    for i = 1, ns do t[i] = v end
  elseif type(v) == "table" and #v == ns then
    for i = 1, ns do t[i] = v[i] end
  else
    cf.fail(("%s: %s = %s: expected a number or a table of %d (%s of the %s tensor)"):format(F, name, show(v), ns,
      table.concat(SPATIAL[rank], ", "), LAYOUT_NAME[rank]))
  end
  for i = 1, ns do
    if type(t[i]) ~= "number" or t[i] % 1 ~= 0 or t[i] < min then
      cf.fail(("%s: %s = %s: %s must be an integer >= %d"):format(F, name, show(v), SPATIAL[rank][i], min))
    end
  end
  return t
end

-- im2col_tma_args(op, gmem, smem_layout, conv) -> table
--   gmem: { shape = {N, [D,] [H,] W, C}, strides = {...} (elements; default packed), dtype = }
--   conv: { filter = {[T,] [R,] S}, stride, padding, upper_padding, dilation (numbers or
--          per spatial dimension, D H W order), num_multicast }
-- The arguments of cuTensorMapEncodeIm2col in tensor-map order (dimension 0 =
-- C, then W, H, D, N): global_dim, global_strides (bytes), lower_corner,
-- upper_corner (W, H, D), channels_per_pixel, pixels_per_column,
-- element_strides (the traversal strides: 1, conv strides, 1), swizzle; the
-- GEMM view: out_shape ({N, [Z,] [P,] Q}), gemm_m, gemm_k; the tile side as
-- for tiled TMA: tile {BM, BK}, box {channels, pixels}, boxes, tx_bytes,
-- smem_align, num_multicast, split_mode.
function M.im2col_tma_args(op_, g, smem_layout, conv)
  local F = "cute.nvgpu.cpasync.make_im2col_tma_atom"
  if not (tma.is_tma_op(op_) and op_.im2col) then
    cf.fail(("%s: %s is not an im2col TMA op (cute.nvgpu.cpasync.CopyBulkTensorIm2ColG2SOp() or " ..
      "CopyBulkTensorIm2ColG2SMulticastOp())"):format(F, show(op_)))
  end
  if type(conv) ~= "table" then
    cf.fail(("%s: expected the convolution {filter = ..., stride =, padding =, dilation =}, got %s"):format(F, show(conv)))
  end
  for k in pairs(conv) do
    if not CONV_KEYS[k] then
      cf.fail(("%s: unknown option %s (filter, stride, padding, upper_padding, dilation, num_multicast)"):format(F,
        tostring(k)))
    end
  end
  local n_mc = conv.num_multicast or 1
  if type(n_mc) ~= "number" or n_mc % 1 ~= 0 or n_mc < 1 or n_mc > 16 then
    cf.fail(("%s: num_multicast = %s: must be an integer from 1 to 16"):format(F, show(n_mc)))
  end
  if n_mc > 1 and not op_.multicast then
    cf.fail(("%s: num_multicast = %d needs cute.nvgpu.cpasync.CopyBulkTensorIm2ColG2SMulticastOp(), got %s")
      :format(F, n_mc, tostring(op_)))
  end
  local shape = g.shape
  local r = type(shape) == "table" and #shape or 0
  if r < 3 or r > 5 then
    cf.fail(("%s: the activation has shape %s; im2col needs an NWC, NHWC or NDHWC tensor (rank 3 to 5)"):format(F,
      show(shape)))
  end
  local strides = g.strides or require("cute.memory").row_major(shape) -- packed NHWC by default
  for m = 1, r do
    if type(shape[m]) ~= "number" or type(strides[m]) ~= "number" then
      cf.fail(("%s: mode %d of the activation: shape and stride must be numbers on the host, got %s, %s"):format(F, m,
        show(shape[m]), show(strides[m])))
    end
  end
  local dname = tma.dtype_name(g.dtype)
  local mdt = tma.map_dtype(dname)
  if not mdt then
    cf.fail(("%s: the activation's dtype %s has no TMA data type (8/16/32/64-bit integers and floats)"):format(F,
      show(dname or g.dtype)))
  end
  local eb = C.cute_tensor_map_elem_bytes(mdt)
  local ns = r - 2
  local Cin, N = shape[r], shape[1]
  if strides[r] ~= 1 then
    cf.fail(("%s: the activation (shape %s, strides %s) is not %s with contiguous channels: its last mode (C) " ..
      "must have stride 1"):format(F, show(shape), show(strides), LAYOUT_NAME[r]))
  end
  -- tensor-map dimensions: C, then the spatial modes innermost first, then N
  local map_modes, global_dim, global_strides = {}, {}, {}
  for j = 1, r do map_modes[j] = r + 1 - j end
  for j, m in ipairs(map_modes) do
    global_dim[j] = shape[m]
    if j > 1 then
      local b = strides[m] * eb
      if shape[m] == 1 and (b % 16 ~= 0 or b <= 0) then b = 16 * math.max(1, math.ceil(math.abs(b) / 16)) end
      if b % 16 ~= 0 or b <= 0 then
        cf.fail(("%s: mode %d of the activation (shape %s, strides %s) has a stride of %d elements = %d bytes: " ..
          "TMA needs positive strides that are multiples of 16 bytes (for a packed %s tensor: C a multiple of %d)")
          :format(F, m, show(shape), show(strides), strides[m], b, LAYOUT_NAME[r], math.max(1, 16 / eb)))
      end
      global_strides[j - 1] = b
    end
  end
  -- the convolution (user order D, H, W)
  if conv.filter == nil then cf.fail(F .. ": the convolution needs filter = {" ..
    table.concat(SPATIAL[r], ", "):gsub("D", "T"):gsub("H", "R"):gsub("W", "S") .. "} (taps per spatial dimension)") end
  local fil = per_dim(F, "filter", conv.filter, ns, r, nil, 1)
  local cst = per_dim(F, "stride", conv.stride, ns, r, 1, 1)
  local pad = per_dim(F, "padding", conv.padding, ns, r, 0, 0)
  local padu = per_dim(F, "upper_padding", conv.upper_padding, ns, r, conv.padding or 0, 0)
  local dil = per_dim(F, "dilation", conv.dilation, ns, r, 1, 1)
  local lim, omax = CORNER_LIM[r], OFFSET_MAX[r]
  local out, lower, upper, estr = {}, {}, {}, { 1 }
  for i = 1, ns do
    local X, nm = shape[1 + i], SPATIAL[r][i]
    local span = dil[i] * (fil[i] - 1)
    local o = math.floor((X + pad[i] + padu[i] - span - 1) / cst[i]) + 1
    if X + pad[i] + padu[i] - span - 1 < 0 then
      cf.fail(("%s: %s: the filter spans %d pixels (filter %d, dilation %d) but the padded input has %d: no output " ..
        "pixel"):format(F, nm, span + 1, fil[i], dil[i], X + pad[i] + padu[i]))
    end
    out[i] = o
    if cst[i] > 8 then
      cf.fail(("%s: %s: stride = %d: TMA's traversal stride is 1 to 8"):format(F, nm, cst[i]))
    end
    if span > omax then
      cf.fail(("%s: %s: the last filter tap is at offset %d (filter %d, dilation %d); a %d-D im2col tensor map " ..
        "takes offsets 0 to %d"):format(F, nm, span, fil[i], dil[i], r, omax))
    end
    local lo, hi = -pad[i], padu[i] - span
    for _, c in ipairs({ { "lower", lo, "padding " .. pad[i] }, { "upper", hi, ("upper padding %d - %d (filter span)")
      :format(padu[i], span) } }) do
      if c[2] < -lim or c[2] >= lim then
        cf.fail(("%s: %s: the bounding box's %s corner %d (%s) is outside [%d, %d] for a %d-D (%s) tensor map"):format(F,
          nm, c[1], c[2], c[3], -lim, lim - 1, r, LAYOUT_NAME[r]))
      end
    end
    lower[ns + 1 - i], upper[ns + 1 - i] = lo, hi -- tensor-map order: W first
    estr[ns + 2 - i] = cst[i]
  end
  estr[r] = 1
  local gemm_m, gemm_k = N, Cin
  for i = 1, ns do gemm_m, gemm_k = gemm_m * out[i], gemm_k * fil[i] end
  -- the shared tile (BM pixels, BK channels), K contiguous: tiled TMA's box
  -- derivation on the (M, K) matrix view (dimension 0 = K, dimension 1 = M)
  local sl = lay.is_composed(smem_layout) and lay.inner_layout(smem_layout) or smem_layout
  if not lay.is_layout(sl) then
    cf.fail(("%s: smem_layout %s: expected a layout or a swizzled (composed) layout"):format(F, show(smem_layout)))
  end
  local ssh = sl:shape()
  if type(ssh) ~= "table" or #ssh ~= 2 then
    cf.fail(("%s: the smem layout %s must have two modes (BM output pixels, BK = channels x taps of the GEMM K)")
      :format(F, tostring(smem_layout)))
  end
  local tile = { lay.size(lay.make_layout(ssh[1])), lay.size(lay.make_layout(ssh[2])) }
  local surrogate = n_mc > 1 and tma.ops.CopyBulkTensorTileG2SMulticastOp() or tma.ops.CopyBulkTensorTileG2SOp()
  local t = tma.tma_args(surrogate, { shape = { gemm_m, gemm_k }, strides = { 16, 1 }, dtype = dname }, smem_layout,
    tile, { num_multicast = n_mc }, F)
  if t.dim_modes[1] ~= 2 then
    cf.fail(("%s: the smem layout %s must keep the K mode (mode 2: channels) contiguous"):format(F, tostring(smem_layout)))
  end
  local cpp, ppc = t.box[1], t.box[2]
  if Cin % cpp ~= 0 then
    cf.fail(("%s: the box holds %d channels (the smem layout's contiguous run%s) but C = %d is not a multiple: a box " ..
      "must not straddle two filter taps (use a narrower swizzle atom, e.g. K_SW64 / K_SW32)"):format(F, cpp,
      t.swizzle > 0 and (", capped at the " .. t.swizzle_name .. " swizzle span") or "", Cin))
  end
  return { im2col = true, rank = r, dtype = dname, map_dtype = mdt, elem_bytes = eb, map_modes = map_modes,
    global_dim = global_dim, global_strides = global_strides, lower_corner = lower, upper_corner = upper,
    channels_per_pixel = cpp, pixels_per_column = ppc, element_strides = estr, swizzle = t.swizzle,
    swizzle_name = t.swizzle_name, interleave = 0, l2_promotion = 2, oob_fill = 0,
    -- the GEMM view and the geometry cute.copy decomposes (m, k) with
    filter = fil, conv_stride = cst, padding = pad, upper_padding = padu, dilation = dil, out_spatial = out,
    out_shape = (function() local o = { N }; for i = 1, ns do o[i + 1] = out[i] end; return o end)(),
    in_channels = Cin, gemm_m = gemm_m, gemm_k = gemm_k,
    -- the tile (as tiled TMA's: tma_partition and the box walk read these)
    tile = t.tile, tiler_rank = 2, dim_modes = t.dim_modes, box = t.box, boxes = t.boxes, tx_bytes = t.tx_bytes,
    num_multicast = n_mc, split_mode = t.split_mode, smem_align = t.smem_align, box_bytes = t.box_bytes }
end

-- the C record and its check: tiled TMA's, with the box's two leading
-- dimensions (pixels, channels) and 1 for the rest (the im2col encoder ignores
-- the box, but the shared check validates it against the swizzle)
function M.c_args(a, global_address) return tma.c_args(a, global_address, 2) end
function M.check(a, global_address) return tma.check(a, global_address, 2) end

local map_ct = ffi.typeof("uint8_t[?]")

-- make_im2col_tma_atom(op, activation, smem_layout, conv) -> atom, tma_tensor (coordinates over (M, K))
function M.make_im2col_tma_atom(op_, t, smem_layout, conv)
  local F = "cute.nvgpu.cpasync.make_im2col_tma_atom"
  if require("cute.trace").active() then
    cf.fail(F .. ": call it on the host (outside the kernel) and pass the atom and the tma tensor as kernel arguments")
  end
  if type(t) ~= "table" or type(t.shape) ~= "table" or type(t.dtype) ~= "table" then
    cf.fail(("%s: expected a device tensor (cute.empty / cute.from_host / cute.tensor_spec), got %s"):format(F, show(t)))
  end
  local strides = t.strides or require("cute.memory").row_major(t.shape)
  local a = M.im2col_tma_args(op_, { shape = t.shape, strides = strides, dtype = t.dtype },
    smem_layout, conv)
  local addr = t.ptr and (tonumber(ffi.cast("uint64_t", t.ptr)) or 0) or 0
  if type(t.ptr) == "number" then addr = t.ptr end
  local ok, why = M.check(a, addr)
  if not ok then cf.fail(F .. ": " .. why) end
  for i, x in ipairs({ a.gemm_m, a.gemm_k }) do
    if x >= 2 ^ 25 then
      cf.fail(("%s: the im2col matrix's %s = %d; its coordinate tensor holds extents below 2^25"):format(F,
        i == 1 and "M (N x output pixels)" or "K (C x filter taps)", x))
    end
  end
  local buf = map_ct(128 + 64)
  local p = ffi.cast("uint8_t*", buf)
  local base = tonumber(ffi.cast("uintptr_t", p))
  local map = p + ((64 - base % 64) % 64)
  local encoded = false
  if addr ~= 0 then
    local ns = a.rank - 2
    local lo, hi = ffi.new("int[3]"), ffi.new("int[3]")
    for i = 1, ns do lo[i - 1], hi[i - 1] = a.lower_corner[i], a.upper_corner[i] end
    cf.check(require("cute.tma").encoder("cute_tensor_map_encode_im2col")(map, M.c_args(a, addr), lo, hi, a.channels_per_pixel,
      a.pixels_per_column, cf.err))
    encoded = true
  end
  -- the key: what the kernel's code depends on (not the address, nor N for a
  -- runtime (cute.dynamic) tensor, whose M then reaches the kernel at run time)
  local dyn = t.dynamic and true or false
  local key = ("TMA-I2C|%s|%s|%s|%s|mc%d|C%d|out%s|f%s|s%s|p%s|d%s%s"):format(op_.name, a.dtype,
    tostring(smem_layout), show(a.tile), a.num_multicast, a.in_channels, show(a.out_spatial), show(a.filter),
    show(a.conv_stride), show(a.padding), show(a.dilation), dyn and "" or ("|N" .. a.out_shape[1]))
  local atom = setmetatable({ op = op_, args = a, tx_bytes = a.tx_bytes, num_multicast = a.num_multicast,
    smem_layout = smem_layout, _buf = buf, desc = map, encoded = encoded, _key = key }, tma.Atom)
  local shape = { a.gemm_m, a.gemm_k }
  local ct = setmetatable({ shape = shape, dynamic = dyn, rank = 2,
    _key = dyn and "TMAC|dyn2" or ("TMAC|" .. show(shape)) }, tma.CoordTensor)
  return atom, ct
end

---------------------------------------------------------------------------
-- in kernels: the instruction's coordinates of a box at (m, k)
---------------------------------------------------------------------------
-- m, k: Lua integers or traced i32.  Returns the tensor coordinates (C, W,
-- [H,] [D,] N order) and the im2col offsets (W, [H,] [D] order, 16-bit).
-- m = ((n * Z + z) * P + p) * Q + q: the pixel's base is q * stride - padding
-- (the bounding box's lower corner plus q strides); k = tap * C + c with tap
-- = (t * R + r) * S + s: offset s * dilation.  A k past the last tap keeps
-- the last tap and puts c past C, so TMA fills the K residue with zeros.
function M.box_coords(a, m, k)
  local ten = require("cute.tensor")
  local tr = require("cute.trace")
  local idiv, imod, imul, iadd = ten.idiv, ten.imod, ten.imul, ten.iadd
  local ns, Cin = a.rank - 2, a.in_channels
  local coords, offs = {}, {}
  local taps = 1
  for i = 1, ns do taps = taps * a.filter[i] end
  local tap = idiv(k, Cin)
  if type(tap) == "number" then tap = math.min(tap, taps - 1)
  else tap = tr.binop(tr.OP.MIN, tap, tr.lift(taps - 1, tap.t)) end
  coords[1] = iadd(k, imul(tap, -Cin))
  local mr, tr_ = m, tap
  for j = 1, ns do -- W, H, D: user index ns + 1 - j
    local i = ns + 1 - j
    local q = imod(mr, a.out_spatial[i])
    mr = idiv(mr, a.out_spatial[i])
    coords[j + 1] = iadd(imul(q, a.conv_stride[i]), -a.padding[i])
    local s = j < ns and imod(tr_, a.filter[i]) or tr_
    tr_ = idiv(tr_, a.filter[i])
    offs[j] = imul(s, a.dilation[i])
  end
  coords[ns + 2] = mr
  return coords, offs
end

function M.install(cpasync)
  cpasync.make_im2col_tma_atom = M.make_im2col_tma_atom
  cpasync.make_tma_atom_im2col = M.make_im2col_tma_atom -- CuTe C++'s spelling
  cpasync.im2col_tma_args = M.im2col_tma_args
end

return M
