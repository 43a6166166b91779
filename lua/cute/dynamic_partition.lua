-- cute.dynamic_partition: partitions (TiledCopy's partition_S/D, TiledMMA's
-- partition_A/B/C) of a tile whose shape is static but whose strides are
-- known only at run time (a cute.local_tile of a cute.dynamic tensor).
--
-- The layout algebra runs on a static proxy of the tile: a layout of its
-- shape whose strides leave a gap between modes (mode i's stride is
-- prod_{j<i} 2 s_j), so that, as with strides unknown to the algebra, no
-- two modes of the tile ever coalesce, and a proxy offset reads back as a
-- coordinate (mixed radix 2 s_i).  Each leaf of the result has a proxy
-- stride x: one step of that leaf moves the tile's coordinate by
-- (c_1, ..., c_n).  Its real stride is sum_i c_i * stride_i (traced
-- arithmetic, constant-folded where static).  That is exact when no
-- combination of the result's coordinates leaves a tile mode: for every leaf
-- i but the last, sum over result leaves of (shape - 1) * c_i < s_i (checked;
-- an error naming the operation otherwise).
--
--   local R = layout_fn(proxy(T))           -- a static cute layout
--   local tree = realise(what, R, T.layout) -- { shape =, stride = } with traced strides
--
-- cute.copy's groups on such tensors: group_offset below.
local cf = require("cute.ffi")
local layout = require("cute.layout")
local ten = require("cute.tensor")

local M = {}
local failf = cf.failf
local iadd, imul = ten.iadd, ten.imul

-- the leaves of a (shape, stride) tree, in colexicographic order: { {s, d}, ... }
local function leaves(s, d, out)
  out = out or {}
  if type(s) == "table" then
    for i = 1, #s do leaves(s[i], d[i], out) end
  else
    out[#out + 1] = { s, d }
  end
  return out
end
M.leaves = leaves

-- the static proxy of a tile of static shape s (a shape tree)
local function gapped(s, p)
  if type(s) == "table" then
    local o = {}
    for i = 1, #s do o[i], p = gapped(s[i], p) end
    return o, p
  end
  return p, p * 2 * s
end
function M.proxy(s)
  return layout.make_layout(s, (gapped(s, 1)))
end

-- the proxy stride x as a step in each tile leaf: c[i] (c[n] unbounded)
local function decompose(x, tl)
  local c, n = {}, #tl
  for i = 1, n do
    local r = 2 * tl[i][1]
    if i < n then c[i] = x % r; x = (x - c[i]) / r else c[i] = x end
  end
  return c
end

-- R (a static layout over the proxy of the tile with layout L = {shape,
-- stride}) -> { shape = R's shape, stride = real strides }.  what: the
-- operation, for errors.
function M.realise(what, R, L)
  local tl = leaves(L.shape, L.stride)
  local sums = {}
  for i = 1, #tl do sums[i] = 0 end
  local function conv(sh, x)
    if type(sh) == "table" then
      local o = {}
      for i = 1, #sh do o[i] = conv(sh[i], x[i]) end
      return o
    end
    if x < 0 then
      failf(what, "the partition %s of a tile of shape %s has a negative step: it cannot be mapped to run-time strides",
        tostring(R), ten.describe(L.shape))
    end
    local c = decompose(x, tl)
    local r = 0
    for i = 1, #tl do
      if c[i] ~= 0 then
        sums[i] = sums[i] + (sh - 1) * c[i]
        r = iadd(r, imul(c[i], tl[i][2]))
      end
    end
    return r
  end
  local sh = R:shape()
  local st = conv(sh, R:stride())
  for i = 1, #tl - 1 do
    if sums[i] >= tl[i][1] then
      failf(what, "the partition %s of a tile of shape %s with run-time strides %s does not map to those " ..
        "strides (its steps carry across mode %d of the tile); give the tensor static strides",
        tostring(R), ten.describe(L.shape), ten.describe(L.stride), i - 1)
    end
  end
  return { shape = sh, stride = st }
end

----------------------------------------------------------------------------
-- cute.copy on tensors with run-time strides: the element offset of a group
-- of v values (colexicographic indices g v .. g v + v - 1), checked to be
-- contiguous from the static unit strides (a run-time stride never proves
-- contiguity) and aligned from the offsets' known divisibility
----------------------------------------------------------------------------
-- colexicographic coordinate of index i over the leaves tl
local function coords(i, tl)
  local c = {}
  for k = 1, #tl do
    local s = tl[k][1]
    if k < #tl then c[k] = i % s; i = (i - c[k]) / s else c[k] = i end
  end
  return c
end

function M.group_offset(F, name, T, g, v, bits)
  local tl = leaves(T.layout.shape, T.layout.stride)
  for k = 1, #tl do
    if type(tl[k][1]) ~= "number" then
      failf(F, "%s has a shape known only at run time (%s): the atom's groups must be known when tracing",
        name, ten.layout_str(T.layout))
    end
  end
  local c0 = coords(g * v, tl)
  local o = 0
  for k = 1, #tl do
    if c0[k] ~= 0 then o = iadd(o, imul(c0[k], tl[k][2])) end
  end
  for j = 1, v - 1 do
    local cj = coords(g * v + j, tl)
    local step, known = 0, true
    for k = 1, #tl do
      local dc = cj[k] - c0[k]
      if dc ~= 0 then
        local d = tl[k][2]
        if type(d) ~= "number" then known = false; break end
        step = step + dc * d
      end
    end
    if not known or step ~= j then
      failf(F, "%s values %d..%d are not contiguous (layout %s)%s: a %d-bit copy needs %d adjacent elements",
        name, g * v, g * v + v - 1, ten.layout_str(T.layout),
        known and "" or " (a run-time stride is never known to be 1)", bits, v)
    end
  end
  local al = ten.offset_align(T, o)
  if al < bits / 8 then
    failf(F, "%s values %d..%d are only known to be %d-byte aligned: a %d-bit copy needs %d bytes%s",
      name, g * v, g * v + v - 1, al, bits, bits / 8,
      " (for run-time strides, pass cute.dynamic(t, {divisibility = n}))")
  end
  return o
end

-- whether a tensor's layout has a run-time stride (shape static)
function M.has_dynamic_stride(T)
  return ten.is_static(T.layout.shape) and not ten.is_static(T.layout.stride)
end

return M
