-- cute.copy_matrix: ldmatrix / stmatrix through cute.copy, and retile
-- (CuTe's TiledCopy::retile, ThrCopy::retile_S / retile_D of
-- cute/atom/copy_atom.hpp; CuTe DSL's thr_copy.retile(tensor)).
--
--   thr:retile(frag)   (also retile_S / retile_D, and tiled_copy:retile):
--        the register tensor frag (a TiledMMA fragment (MMA, MMA_M, MMA_K),
--        or any tensor whose mode 0 holds the first values of the TiledCopy's
--        (thread, value) layout) seen as ((atom values, rest values), rest...):
--        the order in which the copy's atoms read or write it
--   cute.copy(tiled_copy or atom, src, dst) with an ldmatrix atom: src a
--        shared-memory partition (thr:partition_S), dst registers
--        (thr:retile(frag)); one ldmatrix per 128 / bits source values (one
--        16-byte row per thread), its num_matrices b32 registers split into
--        32 / bits values each: value v of the atom's destination = register
--        v / (32 / bits), part v % (32 / bits) (16-bit: halves; 8-bit atoms:
--        bytes, the first in the low byte; 32-bit atoms: the whole register).
--        A float32 atom may fill a tfloat32 fragment: the f32 bits are kept
--        as they are (the tensor core ignores the 13 low bits: truncation)
--   with a stmatrix atom (sm_90): src registers, dst a shared-memory
--        partition (thr:partition_D); the reverse
--
-- The row address of each instruction is the tensor's own element address
-- (Tensor:ptr_at), so any layout the tensor knows how to address works.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local layout = require("cute.layout")
local ten = require("cute.tensor")
local tr = require("cute.trace")
local ca = require("cute.copy_atom")

local M = {}
local _ = layout._
local failf = cf.failf

local function mp() return require("cute.mma_partition") end

----------------------------------------------------------------------------
-- retile
----------------------------------------------------------------------------
-- CuTe's TiledCopy::retile on a static layout L (V, rest...) with V values
-- in mode 0: the layout ((atom_vals, rest_vals), rest...) and its offset
local function retile_layout(tc, L, what, shown)
  local tv = tc.layout_tv_tiled
  local nthr = layout.size(layout.get(tv, 0))
  local aval = layout.size(layout.get(tc.atom.layout_ref_tv, 1))
  local R = layout.rank(L)
  local V = layout.size(layout.get(L, 0))
  local ok, res, off = pcall(function()
    -- (m, n) of the tile -> the index of the value among the first V of a thread
    local frg_mn = ca.upcast(layout.composition(layout.right_inverse(tv), layout.make_layout(tc.tiler_mn)),
      nthr * V)
    -- (atom values, rest values) -> (v, m, n) of one tile of the tensor
    local frg_v = layout.zipped_divide(layout.logical_product(layout.make_layout(V), layout.right_inverse(frg_mn)),
      layout.make_layout(aval))
    local tile = { V }
    for i = 0, layout.rank(frg_mn) - 1 do tile[#tile + 1] = layout.size(layout.get(frg_mn, i)) end
    if #tile > R then
      return nil, ("has rank %d: retile needs a tensor (values, %s, ...) of rank %d or more (a whole fragment, " ..
        "sliced after retiling)"):format(R, #tile == 3 and "M, N" or "modes", #tile)
    end
    for i = 1, #tile do
      local n = layout.size(layout.get(L, i - 1))
      if n % tile[i] ~= 0 then
        return nil, ("mode %d has %d values, not a multiple of %d (the values of the copy's tile)"):format(i - 1, n, tile[i])
      end
    end
    if V % aval ~= 0 and aval % V ~= 0 then
      return nil, ("has %d values in mode 0, which neither divides nor is a multiple of the atom's %d"):format(V, aval)
    end
    local Z = layout.zipped_divide(L, tile)
    local Vt = layout.composition(Z, { frg_v, _ })
    local rest = { 0 }
    for _i = 2, R do rest[#rest + 1] = _ end
    return layout.slice_and_offset({ _, rest }, Vt)
  end)
  if not ok then
    failf(what, "the tensor %s cannot be retiled for this TiledCopy (%s)", shown, tostring(res):gsub("^.-: ", ""))
  end
  if res == nil then failf(what, "the tensor %s %s", shown, off) end
  if (layout.size(res) ~= layout.size(L)) then
    failf(what, "the tensor %s does not tile by the TiledCopy's values (%d of its %d values covered)", shown,
      layout.size(res), layout.size(L))
  end
  return res, off
end

-- retile(tiled_copy, x): x a register tensor or a kernel tensor with a static layout
function M.retile(tc, x, what)
  what = what or "ThrCopy:retile"
  tr.need_trace(what)
  local R = mp()
  if R.is_reg_tensor(x) then
    local L = x.layout
    local nl, off = retile_layout(tc, L, what, ("%s with layout %s"):format(tostring(x), tostring(L)))
    return R.reg_view(x, nl:shape(), nl:stride(), x._off + off)
  end
  if ten.is_tensor(x) and x.space ~= "identity" then
    if not (ten.is_static(x.layout.shape) and ten.is_static(x.layout.stride)) then
      failf(what, "the tensor's layout %s must be static", ten.layout_str(x.layout))
    end
    local L = layout.make_layout(x.layout.shape, x.layout.stride)
    local nl, off = retile_layout(tc, L, what, tostring(x))
    return ten.make(x.ptr, ten.off_add(x.off, off), { shape = nl:shape(), stride = nl:stride() }, x.elem, x.space,
      x.align, x.idx)
  end
  failf(what, "%s is not a register tensor (tiled_mma:make_fragment_A/B/C) or a kernel tensor",
    type(x) == "table" and tostring(x) or type(x) .. " " .. tostring(x))
end

----------------------------------------------------------------------------
-- cute.copy with ldmatrix / stmatrix atoms
----------------------------------------------------------------------------
local function irop(opc, t, args, imm)
  local S = tr.state()
  local a = ffi.new("int32_t[?]", #args)
  for i, v in ipairs(args) do a[i - 1] = v.ref end
  tr.setloc()
  local r = C.cute_ir_op(S.ir, opc, t, #args, a, imm or 0, 0)
  if r == 0 then tr.ir_fail() end
  return tr.mk(r, t)
end

local function show(x)
  if mp().is_reg_tensor(x) or ten.is_tensor(x) then return tostring(x) end
  return type(x) .. " " .. tostring(x)
end

local function dtype_name(e)
  local info = tr.tinfo[e]
  return info and info.dtype or tostring(e)
end

-- the register side: a register tensor, or a tensor in local memory (cute.make_fragment)
local function check_regs(F, name, x, atom, instr, ld)
  local R = mp()
  local ir
  if R.is_reg_tensor(x) then
    ir = tr.dtype_ir[x._dtype]
  elseif ten.is_tensor(x) and x.space == "local" then
    ir = x.elem
  else
    failf(F, "%s = %s: the registers of %s must be a register tensor (thr:retile(tiled_mma:make_fragment_X(...)))",
      name, show(x), instr)
  end
  -- raw: f32 bits into a tf32 register tensor (kept, not rounded)
  local raw = ld and R.is_reg_tensor(x) and x._dtype == "tfloat32" and atom.value_type == "float32"
  if ir ~= tr.dtype_ir[atom.value_type] and not raw then
    failf(F, "%s is a fragment of %s; the atom (%s) moves %s%s", name, dtype_name(ir), instr, atom.value_type,
      atom.value_type == "float32" and " (or fills tfloat32 fragments)" or "")
  end
  local n = ten.tsize(R.is_reg_tensor(x) and x.shape or x.layout.shape)
  return n, raw
end

local function check_smem(F, name, x, atom, instr)
  if not ten.is_tensor(x) or x.space == "identity" then
    failf(F, "%s = %s: %s %s a shared-memory tensor (thr:partition_%s(sX))", name, show(x), instr,
      name == "src" and "reads" or "writes", name == "src" and "S" or "D")
  end
  if x.space ~= "shared" then
    failf(F, "%s is in %s memory; %s %s shared memory only", name, x.space, instr,
      name == "src" and "reads" or "writes")
  end
  if x.elem ~= tr.dtype_ir[atom.value_type] then
    failf(F, "%s holds %s; the atom (%s) moves %s", name, dtype_name(x.elem), instr, atom.value_type)
  end
  local n = ten.tsize(x.layout.shape)
  if type(n) ~= "number" then
    failf(F, "%s has a shape known only at run time (%s)", name, ten.describe(x.layout.shape))
  end
  return n
end

-- static checks of row g (w values from value w g, w = 128 / bits) of the
-- shared tensor: the row is w adjacent elements, 16-byte aligned (when its
-- layout is static)
local function check_row(F, name, T, Ls, g, w, bits)
  if not Ls then return end
  local o = Ls(w * g)
  for j = 1, w - 1 do
    if Ls(w * g + j) ~= o + j then
      failf(F, "%s values %d..%d are not one 16-byte row (layout %s): ldmatrix / stmatrix move rows of %d adjacent " ..
        "%d-bit elements", name, w * g, w * g + w - 1, tostring(Ls), w, bits)
    end
  end
  local al = ten.offset_align(T, o)
  if al < 16 then
    failf(F, "%s values %d..%d are only known to be %d-byte aligned: ldmatrix / stmatrix rows must be 16-byte aligned",
      name, w * g, w * g + w - 1, al)
  end
end

-- the register index of element i of a register tensor (its view's layout)
local function reg_slot(r, i)
  if rawget(r, "_compact") then return i end
  return rawget(r, "_off") + ten.crd2idx(i, rawget(r, "_shape"), rawget(r, "_stride"))
end

function M.copy(atom, src, dst, F)
  F = F or "cute.copy"
  local op = atom.op
  local ld = op.kind == "ldmatrix"
  local nm = op.num_matrices
  local instr = atom.instruction
  local S = tr.state()
  if S.arch and not atom:supports_arch(S.arch) then
    failf(F, "%s needs %s or newer; the kernel is compiled for %s", instr, atom.min_arch, S.arch)
  end
  local sname, rname = ld and "src" or "dst", ld and "dst" or "src"
  local smem, regs = ld and src or dst, ld and dst or src
  local ns = check_smem(F, sname, smem, atom, instr)
  local nr, raw = check_regs(F, rname, regs, atom, instr, ld)
  local bits = tr.tinfo[tr.dtype_ir[atom.value_type]].bits
  local w = 128 / bits            -- values per 16-byte row (one per thread and instruction)
  local per = 32 / bits           -- values per b32 register
  local vr = per * nm             -- values per thread and instruction
  if ns % w ~= 0 or nr % vr ~= 0 or ns / w ~= nr / vr then
    failf(F, "%s has %d values per thread and %s %d: %s moves %d (one row) and %d (%d registers) per thread, so " ..
      "they must be %d k and %d k for the same k (partition the shared tensor with partition_%s and retile the fragment)",
      sname, ns, rname, nr, instr, w, vr, nm, w, vr, ld and "S" or "D")
  end
  local Ls
  if ten.is_static(smem.layout.shape) and ten.is_static(smem.layout.stride) then
    Ls = layout.make_layout(smem.layout.shape, smem.layout.stride)
  end
  local e = tr.dtype_ir[atom.value_type]
  local vp = per > 1 and C.cute_ir_t_vec(S.ir, e, per) or e
  if vp == 0 then tr.ir_fail() end
  -- the instruction takes b16 rows: an 8- or 32-bit shared pointer is recast
  local p16 = bits ~= 16 and C.cute_ir_t_ptr(S.ir, tr.T.U16, require("cute.dtype").spaces.shared) or nil
  local arch = require("cute.nvgpu_arch")
  local opts = { num_matrices = nm, transpose = op.transpose }
  for g = 0, ns / w - 1 do
    check_row(F, sname, smem, Ls, g, w, bits)
    local p = smem:ptr_at(w * g)
    if p16 then p = irop(tr.OP.PTRCAST, p16, { p }) end
    if ld then
      local f = arch.ldmatrix(p, opts)
      for j = 0, nm - 1 do
        if raw then -- the f32 bits are the tf32 register's storage (u32)
          rawget(regs, "_frag")[reg_slot(regs, g * vr + j)] = f[j]
        elseif per == 1 then
          regs[g * vr + j] = irop(tr.OP.BITCAST, e, { f[j] })
        else
          local x = irop(tr.OP.BITCAST, vp, { f[j] })
          for h = 0, per - 1 do regs[g * vr + per * j + h] = irop(tr.OP.EXTRACT, e, { x }, h) end
        end
      end
    else
      local words = {} -- (stmatrix atoms are 16-bit)
      for j = 0, nm - 1 do
        local lo, hi = tr.lift(regs[g * vr + 2 * j], e), tr.lift(regs[g * vr + 2 * j + 1], e)
        words[j + 1] = irop(tr.OP.BITCAST, tr.T.U32, { irop(tr.OP.VEC, vp, { lo, hi }) })
      end
      arch.stmatrix(p, irop(tr.OP.VEC, C.cute_ir_t_array(S.ir, tr.T.U32, nm), words), opts)
    end
  end
end

return M
