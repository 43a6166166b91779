-- cute.copy_partition: a TiledCopy inside a traced kernel (CuTe's ThrCopy,
-- cute/atom/copy_atom.hpp, and copy / copy_if of cute/algorithm/copy.hpp).
--
--   local thr = tiled_copy:get_slice(thread_idx)     -- CuTe's ThrCopy
--   thr:partition_S(gA)  tile-shaped tensor -> (CPY, CPY_M, CPY_N): this
--        thread's elements as the atoms' sources see them (CuTe's tidfrg_S)
--   thr:partition_D(sA)  the same for the destinations (tidfrg_D)
--   cute.copy(tiled_copy or atom, src, dst [, {pred = p}]): one atom call per
--        group of num_bits_per_copy bits (colexicographic order of src / dst);
--        p[g] (g = 0, 1, ...: the group's index) a Lua boolean or traced
--        condition: a false one skips a universal copy, and makes a cp.async
--        copy zero-fill its destination (src-size 0); ldmatrix / stmatrix
--        atoms (no pred) go to cute.copy_matrix
--   thr:retile(frag) / retile_S / retile_D: cute.copy_matrix
--
-- CPY = (atom values, values of the atom repeated in a thread); a predicate
-- per group is one per element of (CPY's second mode, CPY_M, CPY_N) when
-- the atom's values are the whole first mode (the usual case).
local cf = require("cute.ffi")
local layout = require("cute.layout")
local ten = require("cute.tensor")
local tr = require("cute.trace")
local ca = require("cute.copy_atom")
local dp = require("cute.dynamic_partition")

local M = {}
local _ = layout._
local failf = cf.failf
local is_static = ten.is_static

local ThrCopy = {}
ThrCopy.__index = ThrCopy
M.ThrCopy = ThrCopy

-- tiled_copy:get_slice(thread_idx): a Lua integer (0 <= t < size) or a traced integer
function M.get_slice(t, idx)
  local F = "TiledCopy:get_slice"
  if tr.is_var(idx) then idx = idx.value end
  if type(idx) == "number" then
    if idx % 1 ~= 0 or idx < 0 or idx >= t.size then
      failf(F, "thread index %s is out of range 0..%d", tostring(idx), t.size - 1)
    end
  else
    local info = tr.is_value(idx) and tr.tinfo[idx.t]
    if not (info and info.int and not info.bool) then
      failf(F, "thread index %s is not an integer", tostring(idx))
    end
    if idx.t ~= tr.T.I32 then idx = tr.cvt(idx, tr.T.I32) end
  end
  return setmetatable({ tiled_copy = t, thr_idx = idx }, ThrCopy)
end

-- tidfrg_S / tidfrg_D: zipped_divide by the tiler, the tile mode composed
-- with the (thread, value) layout of the sources / destinations, then
-- sliced at this thread: (values, rest modes...)
local function partition(thr, which, T)
  local what = "ThrCopy:partition_" .. which
  if not ten.is_tensor(T) then
    failf(what, "%s is not a kernel-side tensor (global, shared or identity)", tostring(T))
  end
  local t = thr.tiled_copy
  local s, d = T.layout.shape, T.layout.stride
  if not is_static(s) then
    failf(what, "the tensor's shape in %s must be static (take a tile of it with cute.local_tile)",
      ten.layout_str(T.layout))
  end
  local tiler = t.tiler_mn
  local ls = type(s) == "table" and s or { s }
  if #ls ~= #tiler then
    failf(what, "the tensor %s has rank %d, the TiledCopy's tile (%s) rank %d", ten.describe(s), #ls,
      table.concat(tiler, ","), #tiler)
  end
  for i = 1, #tiler do
    local n = ten.tsize(ls[i])
    if n % tiler[i] ~= 0 then
      failf(what, "the tensor's shape %s: mode %d = %d is not a multiple of the TiledCopy's tile %d",
        ten.describe(s), i - 1, n, tiler[i])
    end
  end
  local tv = which == "S" and t:get_layoutS_TV() or t:get_layoutD_TV()
  -- run-time strides (a tile of a cute.dynamic tensor): the algebra on the
  -- tile's static proxy, each result stride mapped to the real strides
  local dynamic = not is_static(d)
  local Z = layout.zipped_divide(dynamic and dp.proxy(s) or layout.make_layout(s, d), tiler)
  local R = layout.composition(Z, { tv, _ })
  local rs, rd = R:shape(), R:stride()
  if dynamic then
    local tree = dp.realise(what, R, T.layout)
    rs, rd = tree.shape, tree.stride
  end
  -- ((thr, val), rest) -> (thr, val, rest modes...), sliced at the thread
  local sh, st = { rs[1][1], rs[1][2] }, { rd[1][1], rd[1][2] }
  local rest_s, rest_d = rs[2], rd[2]
  if #tiler == 1 then rest_s, rest_d = { rest_s }, { rest_d } end
  local c = { thr.thr_idx, _ }
  for i = 1, #rest_s do
    sh[#sh + 1], st[#st + 1] = rest_s[i], rest_d[i]
    c[#c + 1] = _
  end
  local sub = ten.make(T.ptr, T.off, { shape = sh, stride = st }, T.elem, T.space, T.align, T.idx)
  return sub:slice(c)
end
function ThrCopy.partition_S(thr, T) return partition(thr, "S", T) end
function ThrCopy.partition_D(thr, T) return partition(thr, "D", T) end
-- thr:retile(frag) (CuTe's retile_S / retile_D, the same map): cute.copy_matrix
function ThrCopy.retile(thr, T) return require("cute.copy_matrix").retile(thr.tiled_copy, T, "ThrCopy:retile") end
function ThrCopy.retile_S(thr, T) return require("cute.copy_matrix").retile(thr.tiled_copy, T, "ThrCopy:retile_S") end
function ThrCopy.retile_D(thr, T) return require("cute.copy_matrix").retile(thr.tiled_copy, T, "ThrCopy:retile_D") end

----------------------------------------------------------------------------
-- cute.copy(atom or tiled copy, src, dst, {pred = p})
----------------------------------------------------------------------------
local function show(x) return ten.is_tensor(x) and tostring(x) or type(x) .. " " .. tostring(x) end

-- the element offsets of group g (v values) of a static tensor: checked contiguous and aligned
local function group_offset(F, name, T, Lx, g, v, bits)
  local o = Lx(g * v)
  for j = 1, v - 1 do
    if Lx(g * v + j) ~= o + j then
      failf(F, "%s values %d..%d are not contiguous (layout %s): a %d-bit copy needs %d adjacent elements",
        name, g * v, g * v + v - 1, tostring(Lx), bits, v)
    end
  end
  local al = ten.offset_align(T, o)
  if al < bits / 8 then
    failf(F, "%s values %d..%d are only known to be %d-byte aligned: a %d-bit copy needs %d bytes",
      name, g * v, g * v + v - 1, al, bits, bits / 8)
  end
  return o
end

function M.copy(atom, src, dst, opts)
  local F = "cute.copy"
  tr.need_trace(F)
  if ca.is_tiled_copy(atom) then atom = atom.atom end
  if opts ~= nil and type(opts) ~= "table" then
    failf(F, "options must be a table {pred = ...}, got %s", show(opts))
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "pred" then failf(F, "unknown option %s (pred)", tostring(k)) end
  end
  local pred = opts.pred
  local kind = atom.op.kind
  local function dyn(T) return ten.is_tensor(T) and not is_static(T.layout.stride) end
  if pred == nil and kind == "universal" and not (dyn(src) or dyn(dst)) then return ca.copy(atom, src, dst) end
  if kind == "ldmatrix" or kind == "stmatrix" then
    if pred ~= nil then
      failf(F, "pred: %s is a warp-wide instruction and cannot be predicated per copy", atom.instruction)
    end
    return require("cute.copy_matrix").copy(atom, src, dst, F)
  end
  if kind ~= "universal" and kind ~= "cp.async" then
    failf(F, "%s atoms are not lowered by cute.copy yet", atom.op.op_name)
  end
  for _, x in ipairs({ { "src", src }, { "dst", dst } }) do
    local T = x[2]
    if not ten.is_tensor(T) or T.space == "identity" then
      failf(F, "%s = %s is not a kernel-side memory tensor", x[1], show(T))
    end
    if T.elem ~= tr.dtype_ir[atom.value_type] then
      failf(F, "%s holds %s, the atom copies %s", x[1],
        tostring(tr.tinfo[T.elem] and tr.tinfo[T.elem].dtype or T.elem), atom.value_type)
    end
    if not is_static(T.layout.shape) then
      failf(F, "%s has a shape known only at run time (%s): the atom's groups must be known when tracing",
        x[1], ten.layout_str(T.layout))
    end
  end
  if kind == "cp.async" then
    if src.space ~= "global" and src.space ~= "generic" then
      failf(F, "a cp.async atom copies global memory to shared memory: src is in %s memory", src.space)
    end
    if dst.space ~= "shared" and dst.space ~= "dynshared" then
      failf(F, "a cp.async atom copies global memory to shared memory: dst is in %s memory", dst.space)
    end
  end
  -- static layouts as cute layouts; run-time strides through cute.dynamic_partition
  local function lay(T)
    if is_static(T.layout.stride) then return layout.make_layout(T.layout.shape, T.layout.stride) end
    return false
  end
  local ls, ld = lay(src), lay(dst)
  local n, m = ten.tsize(src.layout.shape), ten.tsize(dst.layout.shape)
  if n ~= m then failf(F, "src has %d values, dst %d", n, m) end
  local bits = atom.num_bits_per_copy
  local v = n > 0 and math.floor(bits / (tr.tinfo[src.elem].bits)) or 1
  if n % v ~= 0 then
    failf(F, "%d values are not a whole number of the atom's %d-value (%d-bit) copies", n, v, bits)
  end
  local ng = n / v
  if pred ~= nil then
    local ok, np
    if type(pred) == "table" and getmetatable(pred) == nil then -- a Lua table p[0..]
      np = 0
      for k in pairs(pred) do
        if type(k) ~= "number" or k % 1 ~= 0 or k < 0 then
          failf(F, "pred: key %s: a Lua table of predicates is indexed 0, 1, ... (one per copy group)", tostring(k))
        end
        np = math.max(np, k + 1)
      end
    else
      ok, np = pcall(function()
        if type(pred) == "table" and type(pred.size) == "function" then return pred:size() end -- (tensors)
        return #pred
      end)
      if not ok or type(np) ~= "number" then
        failf(F, "pred = %s must be a tensor or table indexed by the copy group (0..%d)", show(pred), ng - 1)
      end
    end
    if np ~= ng then
      failf(F, "pred has %d elements, the copy has %d groups of %d values (%d-bit copies)", np, ng, v, bits)
    end
  end
  local arch = require("cute.nvgpu_arch")
  for g = 0, ng - 1 do
    local os = ls and group_offset(F, "src", src, ls, g, v, bits) or dp.group_offset(F, "src", src, g, v, bits)
    local od = ld and group_offset(F, "dst", dst, ld, g, v, bits) or dp.group_offset(F, "dst", dst, g, v, bits)
    local p = true
    if pred ~= nil then
      p = pred[g]
      if tr.is_var(p) then p = p.value end
      if not (type(p) == "boolean" or tr.is_value(p)) then
        failf(F, "pred[%d] = %s is not a boolean or a traced condition", g, show(p))
      end
    end
    local ss = ten.make(src.ptr, ten.off_add(src.off, os), { shape = v, stride = 1 }, src.elem, src.space, src.align, src.idx)
    local sd = ten.make(dst.ptr, ten.off_add(dst.off, od), { shape = v, stride = 1 }, dst.elem, dst.space, dst.align, dst.idx)
    if kind == "universal" then
      if p == true then ca.copy(atom, ss, sd) else tr.if_then(p, function() ca.copy(atom, ss, sd) end) end
    else
      local bytes = bits / 8
      local size = bytes
      if p == false then size = 0
      elseif p ~= true then size = tr.select(p, tr.const(tr.T.U32, bytes), tr.const(tr.T.U32, 0)) end
      arch.cp_async(sd, ss, bytes, { cache = atom.op.cache_mode == "GLOBAL" and "cg" or "ca", src_size = size })
    end
  end
end

return M
