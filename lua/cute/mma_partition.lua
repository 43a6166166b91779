-- cute.mma_partition: a TiledMMA inside a traced kernel (CuTe's ThrMMA and
-- cute::gemm, cute/atom/mma_atom.hpp and cute/algorithm/gemm.hpp).
--
--   local thr = tiled_mma:get_slice(thread_idx)      -- CuTe's ThrMMA
--   thr:partition_A(gA)  (M,K) tensor -> (MMA, MMA_M, MMA_K): this thread's elements
--   thr:partition_B(gB)  (N,K) tensor -> (MMA, MMA_N, MMA_K)
--   thr:partition_C(gC)  (M,N) tensor -> (MMA, MMA_M, MMA_N)
--   tiled_mma:make_fragment_A(tAgA) (also thr:make_fragment_A, and _B, _C):
--        a register tensor of the same shape and the atom's dtype
--   cute.gemm(tiled_mma, D, A, B, C): D = A B + C on register tensors, one
--        atom instruction per (m, n, k)
--   cute.copy(src, dst) between a partitioned tensor and a register tensor
--        (element by element)
--
-- A register tensor is a register fragment (cute.arch.make_fragment_regs:
-- an IR value E[n], kept in registers) seen through a compact column-major
-- layout of the partition's shape; it is indexed by Lua integers only.
local cf = require("cute.ffi")
local layout = require("cute.layout")
local ten = require("cute.tensor")
local dt = require("cute.dtype")
local tr = require("cute.trace")

local M = {}
local _ = layout._
local fail, failf = cf.fail, cf.failf
local iadd, imul, idiv, imod = ten.iadd, ten.imul, ten.idiv, ten.imod

local function nvgpu_arch() return require("cute.nvgpu_arch") end
local function mg() return require("cute.mma_gemm") end

local is_static = ten.is_static

local leaves = require("cute.dynamic_partition").leaves -- (shape, stride) leaves, colexicographic

----------------------------------------------------------------------------
-- register tensors
----------------------------------------------------------------------------
local RegTensor = {}
local reg_mt = {}
M.RegTensor = RegTensor
local function is_reg(x) return getmetatable(x) == reg_mt end
M.is_reg_tensor = is_reg

-- A register tensor's storage: one register variable per value (fragments
-- of CHUNK values), indexed as one (st[i], st[i] = v, i from 0), with
-- whole-storage elements / set_elements / fill.  LLVM's promotion of
-- variables to registers (SROA / mem2reg) costs time superlinear in the size
-- of each fragment variable and in the number of accesses per block: for the
-- FlashAttention-2 kernel (D = 128) its optimise stage took 164 s with
-- fragments of 32 values, 23 s with 16, 3.2 s with 8, 1.0 s with 4 and 0.13 s
-- with 1, the same registers and PTX instruction counts each time.
local CHUNK = 1
local Chunked = {}
-- every value, each fragment read once: t[0 .. n-1]
function Chunked.elements(st)
  local t, c = {}, rawget(st, "_c")
  for k = 0, #c do
    local f = c[k]
    local e = f.elements and f:elements()
    for i = 0, rawget(f, "_n") - 1 do t[k * CHUNK + i] = e and e[i] or f[i] end
  end
  return t
end
-- vals[i] (nil: unchanged) written with one write per fragment touched
function Chunked.set_elements(st, vals)
  local c = rawget(st, "_c")
  for k = 0, #c do
    local part, any = {}, false
    local f = c[k]
    for i = 0, rawget(f, "_n") - 1 do
      part[i] = vals[k * CHUNK + i]
      any = any or part[i] ~= nil
    end
    if any and f.set_elements then f:set_elements(part)
    elseif any then for i = 0, rawget(f, "_n") - 1 do if part[i] ~= nil then f[i] = part[i] end end end
  end
end
function Chunked.fill(st, v)
  local c = rawget(st, "_c")
  for k = 0, #c do
    local f = c[k]
    if f.fill then f:fill(v) else for i = 0, rawget(f, "_n") - 1 do f[i] = v end end
  end
end
local chunked_mt = {
  __index = function(st, i)
    if type(i) == "string" then return Chunked[i] end
    return rawget(st, "_c")[math.floor(i / CHUNK)][i % CHUNK]
  end,
  __newindex = function(st, i, v) rawget(st, "_c")[math.floor(i / CHUNK)][i % CHUNK] = v end,
}
local function chunked_regs(dtype, n)
  local c, arch = {}, nvgpu_arch()
  for k = 0, math.ceil(n / CHUNK) - 1 do c[k] = arch.make_fragment_regs(dtype, math.min(CHUNK, n - k * CHUNK)) end
  return setmetatable({ _c = c }, chunked_mt)
end

-- a register tensor of shape (a static shape tree) and dtype name; tf32 and
-- fp8 values are kept as their bits (u32, u8: cute.mma_gemm.storage); tm:
-- the tiled MMA that made it (nil for others)
local function make_reg(shape, dtype, what, tm)
  if not is_static(shape) then
    failf(what, "the shape %s must be static", ten.describe(shape))
  end
  local L = layout.make_layout(shape)
  local n = layout.size(L)
  if n > cf.C.CUTE_ARR_MAX then
    failf(what, "a fragment of shape %s holds %d values; a register fragment holds at most %d (partition a " ..
      "smaller tile)", ten.describe(shape), n, cf.C.CUTE_ARR_MAX)
  end
  local frag = chunked_regs(dt.scalars[mg().storage(dtype)].ir, n)
  return setmetatable({ _frag = frag, _shape = shape, _stride = L:stride(), _off = 0, _n = n, _dtype = dtype,
    _compact = true, _mma = tm, _xfloat = dt.by_dtype[dtype].xfloat }, reg_mt)
end
M.make_reg = make_reg

-- a view of r's registers through another static layout (shape, stride) at
-- register offset off (a slice, or a TiledCopy's retile): element i of the
-- view is register off + (shape:stride)(i) of r's fragment
local function reg_view(r, shape, stride, off)
  local n = ten.tsize(shape)
  return setmetatable({ _frag = r._frag, _shape = shape, _stride = stride, _off = off, _n = n,
    _dtype = r._dtype, _mma = r._mma, _xfloat = r._xfloat }, reg_mt)
end
M.reg_view = reg_view

local function reg_index(r, c)
  if type(c) == "number" then
    if c % 1 ~= 0 or c < 0 or c >= r._n then
      failf("register tensor", "index %s is out of range 0..%d", tostring(c), r._n - 1)
    end
    if r._compact then return c end
    return r._off + ten.crd2idx(c, r._shape, r._stride)
  end
  if type(c) ~= "table" or tr.is_value(c) then
    failf("register tensor", "index %s: registers are indexed by Lua integers (or tables of them) only",
      tr.is_value(c) and "(a traced value)" or tostring(c))
  end
  local i = ten.crd2idx(c, r._shape, r._stride)
  if type(i) ~= "number" then
    failf("register tensor", "coordinate %s: registers are indexed by Lua integers only", ten.describe(c))
  end
  return r._off + i
end

-- r[{_, _, k}]: the view of the modes at '_' (cute.layout's slice_and_offset)
local function traced_in(c)
  if tr.is_value(c) or tr.is_var(c) then return true end
  if type(c) == "table" and not rawequal(c, _) then
    for i = 1, #c do if traced_in(c[i]) then return true end end
  end
  return false
end
local function reg_slice(r, c)
  if traced_in(c) then
    failf("register tensor", "slice %s: registers are indexed by Lua integers only (loop with a Lua for, or " ..
      "cute.range_constexpr)", ten.describe(c))
  end
  local ok, L, off = pcall(layout.slice_and_offset, c, layout.make_layout(r._shape, r._stride))
  if not ok then
    failf("register tensor", "slice %s does not fit the shape %s", ten.describe(c), ten.describe(r._shape))
  end
  return reg_view(r, L:shape(), L:stride(), r._off + off)
end

reg_mt.__index = function(r, k)
  if type(k) == "string" then
    if RegTensor[k] then return RegTensor[k] end
    if k == "shape" then return rawget(r, "_shape") end
    if k == "layout" then return layout.make_layout(rawget(r, "_shape"), rawget(r, "_stride")) end
    if k == "dtype" or k == "element_type" then return dt.dtypes[rawget(r, "_dtype")] end
    if k == "fragment" then return rawget(r, "_frag") end
    return nil
  end
  if type(k) == "table" and ten.has_under(k) then return reg_slice(r, k) end
  local v = rawget(r, "_frag")[reg_index(r, k)]
  if rawget(r, "_xfloat") then return mg().from_storage(v, rawget(r, "_dtype")) end
  return v
end
reg_mt.__newindex = function(r, k, v)
  if type(k) == "string" then failf("register tensor", "cannot set field %s", k) end
  local i = reg_index(r, k)
  -- tf32 / fp8: converted (f32 -> tf32 rounds with cvt.rna.tf32.f32) and kept as bits
  if rawget(r, "_xfloat") then v = mg().to_storage(v, rawget(r, "_dtype")) end
  rawget(r, "_frag")[i] = v
end
reg_mt.__len = function(r) return r._n end
reg_mt.__tostring = function(r)
  return ("register tensor<%s, %s>"):format(r._dtype, ten.describe(r._shape))
end
function RegTensor.size(r) return r._n end
-- r:load() / r:store(v): the whole fragment as a TensorSSA (cute.tensor_ssa)
function RegTensor.load(r) return require("cute.tensor_ssa").load(r, "register tensor:load") end
function RegTensor.store(r, v) return require("cute.tensor_ssa").store(r, v, "register tensor:store") end
function RegTensor.fill(r, v)
  if r._xfloat then v = mg().to_storage(v, r._dtype) end
  if r._compact and r._frag.fill then return r._frag:fill(v) end -- one write per fragment
  for i = 0, r._n - 1 do r._frag[i] = v end
end

-- cute.copy(src, dst) with a register tensor on either side: element i of
-- src (in its layout's order) to element i of dst, converting to dst's type
local function shape_of(x) return is_reg(x) and x._shape or x.layout.shape end
function M.copy(src, dst)
  tr.need_trace("cute.copy")
  for _, p in ipairs({ { src, "src" }, { dst, "dst" } }) do
    if not (is_reg(p[1]) or ten.is_tensor(p[1])) then
      failf("cute.copy", "%s = %s is not a tensor or a register tensor", p[2], tostring(p[1]))
    end
  end
  local n, m = ten.tsize(shape_of(src)), ten.tsize(shape_of(dst))
  if type(n) ~= "number" or type(m) ~= "number" then fail("cute.copy: tensor sizes must be static") end
  if n ~= m then
    failf("cute.copy", "src %s and dst %s differ in size (%d vs %d)", ten.describe(shape_of(src)),
      ten.describe(shape_of(dst)), n, m)
  end
  if is_reg(dst) and nvgpu_arch().is_frag(dst._frag) then -- one write of the fragment
    local vals = is_reg(src) and nvgpu_arch().is_frag(src._frag) and src._frag:elements() or {}
    if not is_reg(src) then for i = 0, n - 1 do vals[i] = src[i] end end
    dst._frag:set_elements(vals)
    return
  end
  if is_reg(src) and nvgpu_arch().is_frag(src._frag) then -- one read of the fragment
    local vals = src._frag:elements()
    for i = 0, n - 1 do dst[i] = vals[i] end
    return
  end
  for i = 0, n - 1 do dst[i] = src[i] end
end
reg_mt.__copy = M.copy
-- cute.make_fragment_like(r [, dtype]): a register tensor of r's shape (compact), r's dtype or dtype
reg_mt.__fragment_like = function(r, dtype)
  local name = r._dtype
  if dtype ~= nil then
    name = type(dtype) == "table" and dtype.name or dtype
    if type(name) ~= "string" or dt.dtypes[name] == nil then
      failf("cute.make_fragment_like", "%s is not a dtype (cute.bfloat16, cute.float32...)", tostring(dtype))
    end
  end
  return make_reg(r._shape, name, "cute.make_fragment_like")
end

----------------------------------------------------------------------------
-- ThrMMA: get_slice, partition_A/B/C, make_fragment_A/B/C
----------------------------------------------------------------------------
local ThrMma = {}
ThrMma.__index = ThrMma
M.ThrMma = ThrMma

-- the flat coordinate of thread idx in each of the 4 modes of thr_layout_vmnk
-- (CuTe's get_flat_coord): per leaf (idx / stride) % shape, combined
-- colexicographically within a mode
local function vmnk_coord(vmnk, idx)
  local s, d = vmnk:shape(), vmnk:stride()
  local crd = {}
  for i = 1, 4 do
    local lv = leaves(s[i], d[i], {})
    local c, mul = 0, 1
    for _, leaf in ipairs(lv) do
      local ls, ld = leaf[1], leaf[2]
      if ls > 1 and ld ~= 0 then c = iadd(c, imul(imod(idiv(idx, ld), ls), mul)) end
      mul = mul * ls
    end
    crd[i] = c
  end
  return crd
end

-- tiled_mma:get_slice(thread_idx): a Lua integer (0 <= t < size) or a traced integer
function M.get_slice(t, idx)
  if type(idx) == "number" then
    if idx % 1 ~= 0 or idx < 0 or idx >= t.size then
      failf("TiledMMA:get_slice", "thread index %s is out of range 0..%d", tostring(idx), t.size - 1)
    end
  elseif tr.is_var(idx) then
    idx = idx.value
  end
  if type(idx) ~= "number" then
    local info = tr.is_value(idx) and tr.tinfo[idx.t]
    if not (info and info.int) then
      failf("TiledMMA:get_slice", "thread index %s is not an integer", tostring(idx))
    end
    -- thread indices are below 2^31: the coordinate math in 32 bits
    if idx.t ~= tr.T.I32 then idx = tr.cvt(idx, tr.T.I32) end
    if t.atom.op.kind == "wgmma" then require("cute.wgmma").check_block(t) end
  end
  return setmetatable({ tiled_mma = t, thr_idx = idx, thr_vmnk = vmnk_coord(t.thr_layout_vmnk, idx) }, ThrMma)
end

local traced_strides
local pname = { A = "partition_A", B = "partition_B", C = "partition_C" }
local modes = { A = { "M", "K", 1, 3 }, B = { "N", "K", 2, 3 }, C = { "M", "N", 1, 2 } }

-- strides known only at run time (a tile of a cute.dynamic tensor): the
-- thrfrg of the tile's static proxy, each leaf's stride mapped
-- to the real strides (cute.dynamic_partition, which checks it is exact)
function traced_strides(t, which, s, d, what)
  local dp = require("cute.dynamic_partition")
  local R = t["thrfrg_" .. which](t, dp.proxy(s))
  return dp.realise(what, R, { shape = s, stride = d })
end

local function partition(thr, which, T)
  local what = "ThrMMA:" .. pname[which]
  if not ten.is_tensor(T) then
    failf(what, "%s is not a tensor of the kernel (a global or shared memory tensor)",
      is_reg(T) and "a register tensor" or tostring(T))
  end
  local t = thr.tiled_mma
  local md = modes[which]
  local s, d = T.layout.shape, T.layout.stride
  if not is_static(s) then
    failf(what, "the tensor's shape %s must be static (take a tile of it with cute.local_tile)",
      ten.describe(s))
  end
  -- modes after the first two (e.g. pipeline stages) are carried through unpartitioned
  local extra_s, extra_d = {}, {}
  if type(s) == "table" and #s > 2 and type(d) == "table" and #d == #s then
    for i = 3, #s do extra_s[#extra_s + 1], extra_d[#extra_d + 1] = s[i], d[i] end
    s, d = { s[1], s[2] }, { d[1], d[2] }
  end
  if type(s) ~= "table" or #s ~= 2 then
    failf(what, "the tensor %s must have rank 2 (%s,%s) or more", ten.describe(s), md[1], md[2])
  end
  local tile = { t.tile_size_mnk[md[3]], t.tile_size_mnk[md[4]] }
  for i = 1, 2 do
    local n = ten.tsize(s[i])
    if n % tile[i] ~= 0 then
      failf(what, "the tensor's shape %s: %s = %d is not a multiple of the tiled MMA's tile %s = %d",
        ten.describe(s), md[i], n, md[i], tile[i])
    end
  end
  local tree
  if is_static(d) then
    local R = t["thrfrg_" .. which](t, layout.make_layout(s, d))
    tree = { shape = R:shape(), stride = R:stride() }
  else
    tree = traced_strides(t, which, s, d, what)
  end
  local v = thr.thr_vmnk
  local c = { { v[1], { v[md[3] + 1], v[md[4] + 1] } }, { _, { _, _ } } }
  if #extra_s > 0 then
    tree = { shape = { tree.shape[1], tree.shape[2], unpack(extra_s) },
      stride = { tree.stride[1], tree.stride[2], unpack(extra_d) } }
    for _i = 1, #extra_s do c[#c + 1] = _ end
  end
  local sub = ten.make(T.ptr, T.off, tree, T.elem, T.space, T.align, T.idx)
  return sub:slice(c) -- (MMA, MMA_M, MMA_K, extra modes...)
end
function ThrMma.partition_A(thr, T) return partition(thr, "A", T) end
function ThrMma.partition_B(thr, T) return partition(thr, "B", T) end
function ThrMma.partition_C(thr, T) return partition(thr, "C", T) end

local frag_dtype = { A = "a_dtype", B = "b_dtype", C = "acc_dtype" }

-- two tiled MMAs that partition and multiply alike (the same atom instruction,
-- thread layout and tile)
function M.same_tiled_mma(a, b)
  return a.atom.instruction == b.atom.instruction and tostring(a.thr_layout_vmnk) == tostring(b.thr_layout_vmnk)
    and table.concat(a.tile_size_mnk, ",") == table.concat(b.tile_size_mnk, ",")
end

-- make_fragment_X(x): x a partitioned tensor, a register tensor or a shape
local function make_fragment(t, which, x)
  local what = "TiledMMA:make_fragment_" .. which
  -- a warpgroup MMA's shared-memory operands: descriptor tensors (cute.wgmma)
  if t.atom.op.kind == "wgmma" and (which == "B" or (which == "A" and t.atom.op.a_src == "smem")) then
    return require("cute.wgmma").make_desc_fragment(t, which, x)
  end
  local shape
  if ten.is_tensor(x) then shape = x.layout.shape
  elseif is_reg(x) then shape = x._shape
  elseif type(x) == "table" and not tr.is_value(x) then shape = x
  else failf(what, "%s is not a partitioned tensor or a shape", tostring(x)) end
  return make_reg(shape, t.atom[frag_dtype[which]], what, t)
end
M.make_fragment = make_fragment
function ThrMma.make_fragment_A(thr, x) return make_fragment(thr.tiled_mma, "A", x) end
function ThrMma.make_fragment_B(thr, x) return make_fragment(thr.tiled_mma, "B", x) end
function ThrMma.make_fragment_C(thr, x) return make_fragment(thr.tiled_mma, "C", x) end
-- CuTe's partition_fragment_X(tensor): the fragment of this thread's partition
function ThrMma.partition_fragment_A(thr, T) return thr:make_fragment_A(thr:partition_A(T)) end
function ThrMma.partition_fragment_B(thr, T) return thr:make_fragment_B(thr:partition_B(T)) end
function ThrMma.partition_fragment_C(thr, T) return thr:make_fragment_C(thr:partition_C(T)) end

-- cute.gemm(tiled_mma, D, A, B, C): lua/cute/mma_gemm.lua
function M.gemm(...) return mg().gemm(...) end

return M
