-- cute.mma_gemm: cute.gemm(tiled_mma, D, A, B, C) for every MMA atom (CuTe's
-- cute::gemm over the atom's mma_unpack), and how register tensors hold the
-- storage-only formats (docs/TENSORCORE.md, "cute.gemm for every atom").
--
--   M.storage(dtype)            the IR type a register fragment keeps for
--                               dtype: tf32 as u32 bits, fp8 as u8 bits
--   M.to_storage(x, dtype)      x (a Lua number or traced value) converted to
--                               dtype (f32 -> tf32: cvt.rna.tf32.f32), as bits
--   M.from_storage(v, dtype)    the bits read back as a dtype value
--   M.gemm(t, D, A, B, C)       one atom instruction per (m, n, k)
--
-- The warp-level atoms issue atom.instruction through inline PTX: each
-- thread's values of A, B and C in the order of the atom's value mode (the
-- PTX ISA's a0, a1, ...) packed low first into .b32 registers (two 16-bit or
-- four 8-bit values each; tf32, f32 and s32 one each) or given as .f64
-- registers; D comes back the same way.  The universal atom is one
-- multiply-add per value (fma for floats).
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")
local dt = require("cute.dtype")

local T, OP = tr.T, tr.OP
local failf = cf.failf

local M = {}

local function info_of(dtype) return dt.by_dtype[dtype] end

local function op(opc, t, args, imm)
  local s = tr.state()
  tr.setloc()
  local a = require("ffi").new("int32_t[?]", math.max(#args, 1))
  for i, v in ipairs(args) do a[i - 1] = v.ref end
  return tr.mk(C.cute_ir_op(s.ir, opc, t, #args, a, imm or 0, 0), t)
end

----------------------------------------------------------------------------
-- storage of register tensors
----------------------------------------------------------------------------
-- tf32 and fp8 cannot be fragment elements: their bits are (u32, u8)
function M.storage(dtype)
  local info = info_of(dtype)
  if info.xfloat then return info.bits == 32 and T.U32 or T.U8 end
  return info.code
end

function M.to_storage(x, dtype)
  local info = info_of(dtype)
  local e = info.code
  local v = tr.lift(x, e)
  if v.t ~= e then v = tr.cvt(v, e) end -- f32 -> tf32 is cvt.rna.tf32.f32; f32/f16 -> fp8 cvt.rn.satfinite
  if info.xfloat then v = op(OP.BITCAST, M.storage(dtype), { v }) end
  return v
end

function M.from_storage(v, dtype)
  local info = info_of(dtype)
  if info.xfloat then return op(OP.BITCAST, info.code, { v }) end
  return v
end

----------------------------------------------------------------------------
-- the warp-level instruction
----------------------------------------------------------------------------
-- the values of one operand (Lua list of Values of the storage type) packed
-- into the atom's registers: the list of register values and their constraint letter ("r", "f", "d")
local function pack(vals, dtype, nregs, is_acc)
  local info = info_of(dtype)
  local bits = info.bits
  if bits == 64 then return vals, "d" end
  if bits == 32 then
    if is_acc then return vals, info.float and "f" or "r" end
    local out = {}
    for i, v in ipairs(vals) do out[i] = v.t == T.U32 and v or op(OP.BITCAST, T.U32, { v }) end
    return out, "r"
  end
  -- 16- or 8-bit: per register, per = 32 / bits values, the first in the low bits
  local per = 32 / bits
  local st = vals[1].t
  local vt = C.cute_ir_t_vec(tr.state().ir, st, per)
  local out = {}
  for r = 0, nregs - 1 do
    local parts = {}
    for j = 1, per do parts[j] = vals[r * per + j] end
    out[r + 1] = op(OP.BITCAST, T.U32, { op(OP.VEC, vt, parts) })
  end
  return out, "r"
end

-- the D registers (a Value of the asm's array type) back to a list of values
-- of the accumulator's storage type
local function unpack_d(out, dtype, nregs, atype)
  local info = info_of(dtype)
  local res = {}
  if info.bits >= 32 then
    for i = 0, nregs - 1 do res[i + 1] = op(OP.EXTRACT, atype, { out }, i) end
    return res
  end
  local vt = C.cute_ir_t_vec(tr.state().ir, info.code, 2)
  for i = 0, nregs - 1 do
    local h = op(OP.BITCAST, vt, { op(OP.EXTRACT, T.U32, { out }, i) })
    res[#res + 1] = op(OP.EXTRACT, info.code, { h }, 0)
    res[#res + 1] = op(OP.EXTRACT, info.code, { h }, 1)
  end
  return res
end

local function list(n, s)
  local t = {}
  for i = 1, n do t[i] = s end
  return t
end

-- M.instruction(atom) -> fn(avals, bvals, cvals) -> dvals: one atom
-- instruction on Lua lists (from 1) of each operand's storage values in the
-- order of the atom's value mode (a field of M, so a spec can put a model of
-- the hardware in its place)
function M.instruction(atom)
  if atom.op.kind == "universal" then
    local float = info_of(atom.acc_dtype).float
    return function(a, b, c)
      if float then return { require("cute.arch").math.fma(a[1], b[1], c[1]) } end
      return { a[1] * b[1] + c[1] }
    end
  end
  return M.warp_instruction(atom)
end

function M.warp_instruction(atom)
  local n = atom.num_registers
  local acc = info_of(atom.acc_dtype)
  local atype = acc.bits == 64 and T.F64 or acc.bits == 16 and T.U32 or acc.code
  local dl = acc.bits == 64 and "d" or (acc.float and acc.bits == 32) and "f" or "r"
  local dr, ar, br, cr = require("cute.nvgpu_arch").asm_groups(n.D, n.A, n.B, n.C)
  local text = ("%s %s, %s, %s, %s;"):format(atom.instruction, dr, ar, br, cr)
  return function(av, bv, cv)
    local a, la = pack(av, atom.a_dtype, n.A, false)
    local b, lb = pack(bv, atom.b_dtype, n.B, false)
    local c, lc = pack(cv, atom.acc_dtype, n.C, true)
    local cons = {}
    for _, x in ipairs(list(n.D, "=" .. dl)) do cons[#cons + 1] = x end
    for _, p in ipairs({ { n.A, la }, { n.B, lb }, { n.C, lc } }) do
      for _, x in ipairs(list(p[1], p[2])) do cons[#cons + 1] = x end
    end
    local args = {}
    for _, l in ipairs({ a, b, c }) do for _, v in ipairs(l) do args[#args + 1] = v end end
    local s = tr.state()
    tr.setloc()
    local rt = C.cute_ir_t_array(s.ir, atype, n.D)
    local refs = require("ffi").new("int32_t[?]", #args)
    for i, v in ipairs(args) do refs[i - 1] = v.ref end
    local out = tr.mk(C.cute_ir_asm(s.ir, rt, text, table.concat(cons, ","), #args, refs), rt)
    return unpack_d(out, atom.acc_dtype, n.D, atype)
  end
end

----------------------------------------------------------------------------
-- cute.gemm(tiled_mma, D, A, B, C)
----------------------------------------------------------------------------
-- (MMA, M, K) sizes; a rank-2 A or B (one k-block, e.g. tCrA[{_, _, k}]) has K = 1, as in CuTe
local function sizes3(r, k_optional)
  local s = r._shape
  if type(s) ~= "table" then return nil end
  if #s == 2 and k_optional then return { ten.tsize(s[1]), ten.tsize(s[2]), 1 }, true end
  if #s ~= 3 then return nil end
  return { ten.tsize(s[1]), ten.tsize(s[2]), ten.tsize(s[3]) }
end

-- the target's arch (when the kernel is compiled for a known one)
local function check_target(atom, what)
  if atom.op.kind == "fp8" and tonumber(atom.min_ptx) > 8.5 then
    -- LLVM 19's NVPTX back end writes PTX 8.5 at most; ptxas refuses this form below 8.7
    failf(what, "cute.nvgpu.%s with acc_dtype = %s (%s) needs PTX ISA %s; the code generator emits PTX 8.5 " ..
      "at most (use acc_dtype = float32)", atom.op.op_name, atom.acc_dtype, atom.instruction, atom.min_ptx)
  end
  local arch = tr.state().arch
  if arch and not atom:supports_arch(arch) then
    failf(what, "cute.nvgpu.%s (%s) needs %s or newer; the kernel is compiled for %s", atom.op.op_name,
      atom.instruction, atom.min_arch, arch)
  end
end

function M.gemm(t, D, A, B, Cc)
  local what = "cute.gemm"
  tr.need_trace(what)
  local part = require("cute.mma_partition")
  if not require("cute.mma").is_tiled_mma(t) then
    failf(what, "the first argument %s is not a tiled MMA (cute.make_tiled_mma)", tostring(t))
  end
  local atom = t.atom
  if atom.op.kind == "wgmma" then return require("cute.wgmma").gemm(t, D, A, B, Cc) end
  check_target(atom, what)
  local nthr = require("cute.layout").size(atom.thr_id)
  local am, an, ak = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
  local want = {
    D = { D, atom.acc_dtype, am * an / nthr, "(MMA, MMA_M, MMA_N)", "C" },
    A = { A, atom.a_dtype, am * ak / nthr, "(MMA, MMA_M, MMA_K)", "A" },
    B = { B, atom.b_dtype, an * ak / nthr, "(MMA, MMA_N, MMA_K)", "B" },
    C = { Cc, atom.acc_dtype, am * an / nthr, "(MMA, MMA_M, MMA_N)", "C" },
  }
  local sz = {}
  for _, k in ipairs({ "D", "A", "B", "C" }) do
    local x, dtype, nv, shp, fr = unpack(want[k])
    if not part.is_reg_tensor(x) then
      failf(what, "%s = %s is not a register tensor (tiled_mma:make_fragment_%s)", k, tostring(x), fr)
    end
    if x._dtype ~= dtype then
      failf(what, "%s is a fragment of %s; the atom %s takes %s for %s (make it with tiled_mma:make_fragment_%s)",
        k, x._dtype, atom.instruction, dtype, k, fr)
    end
    local s, r2 = sizes3(x, k == "A" or k == "B")
    want[k].rank2 = r2
    if not s then failf(what, "%s has shape %s, expected rank 3 %s", k, ten.describe(x._shape), shp) end
    if s[1] ~= nv then
      failf(what, "%s has shape %s: its MMA mode holds %d values, the atom's %s holds %d per thread", k,
        ten.describe(x._shape), s[1], k == "D" and "C" or k, nv)
    end
    local owner = rawget(x, "_mma")
    if owner and owner ~= t and not part.same_tiled_mma(owner, t) then
      failf(what, "%s is a fragment of another tiled MMA (%s, threads %s); this gemm's is %s, threads %s", k,
        owner.atom.instruction, tostring(owner.thr_layout_vmnk), atom.instruction, tostring(t.thr_layout_vmnk))
    end
    sz[k] = s
  end
  local Mm, Nn, Kk = sz.C[2], sz.C[3], sz.A[3]
  local function mismatch(a, b, mode)
    failf(what, "%s %s and %s %s differ in %s", a, ten.describe(want[a][1]._shape), b,
      ten.describe(want[b][1]._shape), mode)
  end
  if sz.D[2] ~= Mm or sz.D[3] ~= Nn then mismatch("D", "C", "shape") end
  if sz.A[2] ~= Mm then mismatch("A", "C", "MMA_M") end
  if sz.B[2] ~= Nn then mismatch("B", "C", "MMA_N") end
  if sz.B[3] ~= Kk then mismatch("A", "B", "MMA_K") end

  local va, vb, vc = want.A[3], want.B[3], want.C[3]
  -- every operand value is read from its fragment once and every D value
  -- written once (the accumulators live in a Lua table in between): far fewer
  -- whole-fragment updates for LLVM to take apart
  local function reader(r)
    local f, cache = rawget(r, "_frag"), {}
    return function(i)
      local v = cache[i]
      if v == nil then v = f[i]; cache[i] = v end
      return v
    end
  end
  local rA, rB, rC = reader(A), reader(B), reader(Cc)
  local acc = {} -- by (value, m, n): i + vc (m + Mm n)
  -- the storage index of r's coordinate (a view's offset included)
  local function sidx(r, crd, rank2)
    return (rawget(r, "_off") or 0) + ten.crd2idx(rank2 and { crd[1], crd[2] } or crd, r._shape, r._stride)
  end
  local function gather(get, r, nv, j, l, rank2)
    local out = {}
    for i = 0, nv - 1 do out[i + 1] = get(sidx(r, { i, j, l }, rank2)) end
    return out
  end
  local function gather_c(m, n, first)
    local out = {}
    for i = 0, vc - 1 do
      local v = not first and acc[i + vc * (m + Mm * n)]
      out[i + 1] = v or rC(sidx(Cc, { i, m, n }))
    end
    return out
  end
  local issue = M.instruction(atom)
  -- k outermost, then M, then N (serpentine over N as CuTe's gemm)
  for k = 0, Kk - 1 do
    for m = 0, Mm - 1 do
      for nn = 0, Nn - 1 do
        local n = (m % 2 == 1) and (Nn - 1 - nn) or nn
        local d = issue(gather(rA, A, va, m, k, want.A.rank2), gather(rB, B, vb, n, k, want.B.rank2),
          gather_c(m, n, k == 0))
        for i = 0, vc - 1 do acc[i + vc * (m + Mm * n)] = d[i + 1] end
      end
    end
  end
  -- D written once: by whole fragments where the storage allows it
  local f, vals = rawget(D, "_frag"), {}
  for n = 0, Nn - 1 do
    for m = 0, Mm - 1 do
      for i = 0, vc - 1 do vals[sidx(D, { i, m, n })] = acc[i + vc * (m + Mm * n)] end
    end
  end
  if f.set_elements then
    f:set_elements(vals)
  else
    for i, v in pairs(vals) do f[i] = v end
  end
end

return M
