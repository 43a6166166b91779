-- cute.tile_scheduler: the static persistent tile scheduler of CuTe DSL
-- (cute.utils.StaticPersistentTileScheduler; docs/HOPPER.md, "Warp
-- specialisation and scheduling"):
--   local params = cute.utils.PersistentTileSchedulerParams({m_tiles, n_tiles, l}, {cm, cn, 1}
--                                                           [, {raster = "M"|"N", group = g}])
--   local grid = cute.utils.get_grid_shape(params, max_active_clusters)   -- host: {cm, cn, clusters}
--   -- in the kernel (launched with grid, cluster = {cm, cn, 1}):
--   local sched = cute.utils.StaticPersistentTileScheduler.create(params, {cute.arch.block_idx()},
--                                                                 {cute.arch.grid_dim()})
--   local work = sched:initial_work_tile_info()
--   while work.is_valid_tile do
--     local m, n, l = unpack(work.tile_idx)
--     ...
--     sched:advance_to_next_work()
--     work = sched:get_current_work()
--   end
--
-- Clusters of cm x cn CTAs walk the (M tiles / cm, N tiles / cn, L) grid of
-- cluster tiles; cluster c of P persistent ones takes linear work c, c + P,
-- c + 2P, ...  The linear order (`M.cluster_coord`, one function for the host
-- and the kernel: Lua numbers fold, traced values emit the arithmetic):
--   raster "M", group 1: m fastest, then n, then l (column-major);
--   raster "M", group g: the N extent is cut into swaths of g cluster columns
--     (the last one narrower when g does not divide it); a swath is walked
--     row by row (its g columns fastest, then m), swath after swath;
--   raster "N": the same with M and N exchanged (group g: swaths of g rows).
-- Every cluster tile is visited exactly once, with no padding tiles.
local tr = require("cute.trace")
local A = require("cute.arch")


local fail = tr.fail
local OP, T = tr.OP, tr.T

local M = {}

local function show(x)
  if tr.is_value(x) then return "a traced value" end
  return type(x) .. " " .. tostring(x)
end

-- integer helpers over Lua numbers and traced values
local function num(x) return type(x) == "number" end
local function idiv(a, b) if num(a) and num(b) then return math.floor(a / b) end return A.div(a, b) end
local function irem(a, b) if num(a) and num(b) then return a % b end return A.rem(a, b) end
local function imax(a, b) if num(a) and num(b) then return math.max(a, b) end return A.max(a, b) end
local function lt(a, b)
  if num(a) and num(b) then return a < b end
  return tr.cmp_value(OP.LT, a, b)
end
local function sel(c, a, b)
  if type(c) == "boolean" then if c then return a end return b end
  if num(a) and num(b) and a == b then return a end
  return tr.select(c, a, b)
end
local function ceil_div(a, b) return idiv(a + (b - 1), b) end

---------------------------------------------------------------------------
-- parameters
---------------------------------------------------------------------------
local Params = {}
Params.__index = Params
Params.__tostring = function(p)
  local function s(x) return num(x) and tostring(x) or "?" end
  local sh = p.problem_shape_ntile_mnl
  return ("PersistentTileSchedulerParams(tiles (%s, %s, %s), cluster (%d, %d), raster %s, group %d)"):format(
    s(sh[1]), s(sh[2]), s(sh[3]), p.cluster_shape_mn[1], p.cluster_shape_mn[2], p.raster, p.group)
end

local function extent(x, what, which)
  if num(x) then
    if x % 1 ~= 0 or x < 0 or x >= 2 ^ 31 then
      fail(("%s: %s = %s: must be a non-negative integer below 2^31"):format(what, which, tostring(x)))
    end
    return x
  end
  if tr.is_var(x) then x = x.value end
  if tr.is_value(x) and tr.tinfo[x.t] and tr.tinfo[x.t].int then
    if x.t ~= T.I32 then x = tr.cvt(x, T.I32) end
    return x
  end
  fail(("%s: %s must be an integer (a Lua number or a traced integer), got %s"):format(what, which, show(x)))
end

-- PersistentTileSchedulerParams(problem_shape_ntile_mnl, cluster_shape_mnk [, {raster =, group =}])
function M.PersistentTileSchedulerParams(shape, cluster, opts)
  local what = "cute.utils.PersistentTileSchedulerParams"
  if type(shape) ~= "table" or #shape ~= 3 then
    fail(("%s(problem_shape_ntile_mnl, ...): expected {m_tiles, n_tiles, l}, got %s"):format(what, show(shape)))
  end
  if type(cluster) ~= "table" or (#cluster ~= 3 and #cluster ~= 2) then
    fail(("%s: cluster_shape_mnk must be {cm, cn, 1}, got %s"):format(what, show(cluster)))
  end
  for i = 1, #cluster do
    local c = cluster[i]
    if not num(c) or c % 1 ~= 0 or c < 1 or c > 16 then
      fail(("%s: cluster_shape_mnk[%d] = %s: must be a Lua integer from 1 to 16"):format(what, i, show(c)))
    end
  end
  if cluster[3] and cluster[3] ~= 1 then
    fail(("%s: cluster_shape_mnk[3] = %s: the K extent of a cluster must be 1"):format(what, tostring(cluster[3])))
  end
  if cluster[1] * cluster[2] > 16 then
    fail(("%s: a cluster of %d x %d CTAs: at most 16"):format(what, cluster[1], cluster[2]))
  end
  opts = opts or {}
  if type(opts) ~= "table" then fail(("%s: options must be a table {raster = \"M\"|\"N\", group = g}"):format(what)) end
  for k in pairs(opts) do
    if k ~= "raster" and k ~= "group" then fail(("%s: unknown option %s (raster, group)"):format(what, tostring(k))) end
  end
  local raster, group = opts.raster or "M", opts.group or 1
  if raster ~= "M" and raster ~= "N" then
    fail(("%s: raster = %s: expected \"M\" or \"N\""):format(what, show(raster)))
  end
  if not num(group) or group % 1 ~= 0 or group < 1 or group > 2 ^ 16 then
    fail(("%s: group = %s: must be a Lua integer >= 1 (clusters per swath)"):format(what, show(group)))
  end
  local sh = { extent(shape[1], what, "m_tiles"), extent(shape[2], what, "n_tiles"), extent(shape[3], what, "l") }
  local cm, cn = cluster[1], cluster[2]
  return setmetatable({
    problem_shape_ntile_mnl = sh, cluster_shape_mn = { cm, cn }, raster = raster, group = group,
    -- cluster tiles along M, N and the batch
    ncluster_mnl = { ceil_div(sh[1], cm), ceil_div(sh[2], cn), sh[3] },
  }, Params)
end
M.Params = Params

local function is_params(p) return getmetatable(p) == Params end

-- the (m, n, l) cluster coordinate of linear work w, and whether w is a tile
-- of the problem (host and kernel: numbers fold, traced values emit)
function M.cluster_coord(p, w)
  if not is_params(p) then
    fail(("cute.utils.cluster_coord(params, w): expected PersistentTileSchedulerParams, got %s"):format(show(p)))
  end
  local cm, cn, L = p.ncluster_mnl[1], p.ncluster_mnl[2], p.ncluster_mnl[3]
  local per_l = cm * cn
  local valid = lt(w, per_l * L)
  local l = idiv(w, imax(per_l, 1))
  local r = irem(w, imax(per_l, 1))
  local major, minor = cm, cn -- raster "M": m fastest (the major extent), swaths cut the N extent
  if p.raster == "N" then major, minor = cn, cm end
  local g = p.group
  local maj, mi
  if g == 1 then
    maj, mi = irem(r, imax(major, 1)), idiv(r, imax(major, 1))
  else
    local span = g * major                 -- works in one full swath
    local full = idiv(minor, g)            -- full swaths
    local in_full = lt(r, full * span)
    local q = irem(r, imax(span, 1))
    local maj1, mi1 = idiv(q, g), idiv(r, imax(span, 1)) * g + irem(q, g)
    local width = imax(minor - full * g, 1) -- the last, narrower swath
    local q2 = r - full * span
    local maj2, mi2 = idiv(q2, width), full * g + irem(q2, width)
    maj, mi = sel(in_full, maj1, maj2), sel(in_full, mi1, mi2)
  end
  if p.raster == "N" then return mi, maj, l, valid end
  return maj, mi, l, valid
end

-- the (m, n, l) tile of CTA (cta_m, cta_n) of its cluster for linear work w
function M.tile_coord(p, w, cta_m, cta_n)
  local m, n, l, valid = M.cluster_coord(p, w)
  return m * p.cluster_shape_mn[1] + (cta_m or 0), n * p.cluster_shape_mn[2] + (cta_n or 0), l, valid
end

-- host: the grid {cm, cn, persistent clusters} for at most max_active_clusters
-- clusters at a time (e.g. the SM count for 1 x 1 clusters)
function M.get_grid_shape(p, max_active_clusters)
  local what = "cute.utils.get_grid_shape"
  if not is_params(p) then fail(("%s(params, max_active_clusters): expected PersistentTileSchedulerParams, got %s")
    :format(what, show(p))) end
  if not num(max_active_clusters) or max_active_clusters % 1 ~= 0 or max_active_clusters < 1 then
    fail(("%s: max_active_clusters = %s: must be a positive Lua integer"):format(what, show(max_active_clusters)))
  end
  local n = p.ncluster_mnl
  for i = 1, 3 do
    if not num(n[i]) then
      fail(("%s: the problem shape is traced; on the host it must be Lua numbers"):format(what))
    end
  end
  local clusters = n[1] * n[2] * n[3]
  return { p.cluster_shape_mn[1], p.cluster_shape_mn[2], math.max(1, math.min(clusters, max_active_clusters)) }
end

---------------------------------------------------------------------------
-- the scheduler (in the kernel)
---------------------------------------------------------------------------
-- A work tile: tile_idx = {m, n, l} and is_valid_tile read the scheduler's
-- variables when used, so one object serves a whole persistent loop.
local Work = {}
Work.__index = function(w, k)
  if k == "tile_idx" then return { rawget(w, "_m").value, rawget(w, "_n").value, rawget(w, "_l").value } end
  if k == "is_valid_tile" then return rawget(w, "_valid").value end
  fail(("WorkTileInfo: no field %q (tile_idx, is_valid_tile)"):format(tostring(k)))
end
Work.__newindex = function(_, k) fail(("WorkTileInfo: field %q is read-only"):format(tostring(k))) end
Work.__tostring = function() return "WorkTileInfo" end

local Sched = {}
Sched.__index = function(s, k)
  if k == "num_tiles_executed" then return rawget(s, "_executed").value end
  local m = Sched[k]
  if m then return m end
  fail(("StaticPersistentTileScheduler: no field or method %q"):format(tostring(k)))
end
M.StaticPersistentTileScheduler = Sched

local function xyz(t, what, which)
  if type(t) ~= "table" or #t < 1 then
    fail(("%s: %s must be a table {x, y, z} (e.g. {cute.arch.block_idx()}), got %s"):format(what, which, show(t)))
  end
  return extent(t[1], what, which .. "[1]"), extent(t[2] or 0, what, which .. "[2]"),
    extent(t[3] or (which == "grid_dim" and 1 or 0), what, which .. "[3]")
end

-- StaticPersistentTileScheduler.create(params, block_idx, grid_dim): the grid
-- is {cm, cn, P} (get_grid_shape): cluster z of P starts at work z
function Sched.create(p, block_idx, grid_dim)
  local what = "cute.utils.StaticPersistentTileScheduler.create"
  tr.need_trace(what)
  if not is_params(p) then fail(("%s(params, block_idx, grid_dim): expected PersistentTileSchedulerParams, got %s")
    :format(what, show(p))) end
  local bx, by, bz = xyz(block_idx, what, "block_idx")
  local gx, gy, gz = xyz(grid_dim, what, "grid_dim")
  local cm, cn = p.cluster_shape_mn[1], p.cluster_shape_mn[2]
  local s = setmetatable({ params = p, cta_m = irem(bx, cm), cta_n = irem(by, cn),
    num_persistent_clusters = idiv(gx * gy * gz, cm * cn) }, Sched)
  s._linear = tr.var(bz, T.I32)
  s._executed = tr.var(0, T.I32)
  local m, n, l, valid = M.tile_coord(p, s._linear.value, s.cta_m, s.cta_n)
  s._work = setmetatable({ _m = tr.var(m, T.I32), _n = tr.var(n, T.I32), _l = tr.var(l, T.I32),
    _valid = tr.var(valid, T.I1) }, Work)
  return s
end

local function need(s, what)
  if getmetatable(s) ~= Sched then fail(("%s: call it with ':' on a scheduler (sched:%s())"):format(what, what)) end
end

-- the work tile of the current linear index (the same object each time, updated)
function Sched.get_current_work(s)
  need(s, "get_current_work")
  local m, n, l, valid = M.tile_coord(s.params, s._linear.value, s.cta_m, s.cta_n)
  local w = s._work
  rawget(w, "_m").value, rawget(w, "_n").value, rawget(w, "_l").value = m, n, l
  rawget(w, "_valid").value = valid
  return w
end
function Sched.initial_work_tile_info(s)
  need(s, "initial_work_tile_info")
  return s:get_current_work()
end
-- the next work of this cluster: P linear indices on (advance_count times)
function Sched.advance_to_next_work(s, advance_count)
  need(s, "advance_to_next_work")
  advance_count = advance_count or 1
  if not num(advance_count) or advance_count % 1 ~= 0 or advance_count < 1 then
    fail(("sched:advance_to_next_work(advance_count): advance_count = %s: must be a positive Lua integer")
      :format(show(advance_count)))
  end
  s._linear.value = s._linear.value + s.num_persistent_clusters * advance_count
  s._executed.value = s._executed.value + 1
end

M.exports = {
  PersistentTileSchedulerParams = M.PersistentTileSchedulerParams,
  StaticPersistentTileScheduler = Sched,
  get_grid_shape = M.get_grid_shape,
  tile_coord = M.tile_coord,
  cluster_coord = M.cluster_coord,
}
Sched.get_grid_shape = M.get_grid_shape

return M
