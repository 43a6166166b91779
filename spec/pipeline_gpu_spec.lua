-- cute.pipeline and the persistent tile scheduler on a Hopper GPU (sm_90a),
-- against CPU references on random data: a PipelineAsync ring between a
-- producer warp and three consumer warps, PipelineTmaAsync fed by bulk copies
-- (one CTA, and 2-CTA clusters with multicast and remote releases), and the
-- tiles each persistent block visits.  Without a GPU every test is pending;
-- on a GPU other than sm_90a too.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local K = dofile("spec/support/sm90_kernels.lua")
local ts = require("cute.tile_scheduler")
local f32, i32 = cute.float32, cute.int32

local hopper_it = util.hopper_it

local function rand_table(n)
  local r = util.rand_floats(n)
  local t = {}
  for i = 1, n do t[i] = math.floor(r[i - 1] * 1024) / 64 end -- exact in f32 through * 3 + c
  return t
end

local function check(got, want, what)
  local bad, first = 0, nil
  for i = 1, #want do
    if got[i - 1] ~= want[i] then
      bad = bad + 1
      first = first or ("element %d: got %s, want %s"):format(i - 1, tostring(got[i - 1]), tostring(want[i]))
    end
  end
  assert.are.equal(0, bad, ("%s: %d wrong, first %s"):format(what, bad, tostring(first)))
end

describe("cute.pipeline on the GPU", function()
  hopper_it("PipelineAsync: warp 0 produces, warps 1..3 consume, 4 and 2 stages, many phases", function()
    for _, S in ipairs({ 4, 2 }) do
      local blocks, nchunks = 8, 37
      local n = blocks * nchunks * 32
      local a = rand_table(n)
      local A, B = cute.from_host(a, f32, { n }), cute.zeros({ 3, n }, f32)
      K.pipeline_async(S):launch{ grid = blocks, block = 128 }(A, B, cute.Int32(nchunks))
      cute.synchronize()
      local want = {}
      for w = 1, 3 do
        for j = 0, n - 1 do
          local c = math.floor(j / 32) % nchunks
          want[(w - 1) * n + j + 1] = a[j + 1] * w + c
        end
      end
      check(B:to_host(), want, "stages " .. S)
    end
  end)

  local function bulk(cluster_n)
    local S, nchunks, clusters = 4, 21, 6
    local CH = K.CH
    local blocks = clusters * cluster_n
    local na, nb = clusters * nchunks * CH, blocks * nchunks * CH
    local a = rand_table(na)
    local A, B = cute.from_host(a, f32, { na }), cute.zeros({ 3, nb }, f32)
    local cfg = { grid = blocks, block = 128 }
    if cluster_n > 1 then cfg.cluster = { cluster_n, 1, 1 } end
    K.bulk_pipeline(S, cluster_n):launch(cfg)(A, B, cute.Int32(nchunks))
    cute.synchronize()
    local want = {}
    for w = 1, 3 do
      for b = 0, blocks - 1 do
        local cl = math.floor(b / cluster_n)
        for e = 0, nchunks * CH - 1 do
          want[(w - 1) * nb + b * nchunks * CH + e + 1] = a[cl * nchunks * CH + e + 1] * w
        end
      end
    end
    check(B:to_host(), want, ("cluster %d"):format(cluster_n))
  end
  hopper_it("PipelineTmaAsync fed by cp.async.bulk + complete_tx: one CTA", function() bulk(1) end)
  hopper_it("PipelineTmaAsync in 2-CTA clusters: halves multicast into both CTAs, releases arrive remotely", function()
    bulk(2)
  end)
end)

describe("the persistent tile scheduler on the GPU", function()
  -- run the scheduler kernel and compare every block's tile sequence with the host's
  local function run(cm, cn, opts, shape, max_clusters, dyn)
    local p = cute.utils.PersistentTileSchedulerParams(shape, { cm, cn, 1 }, opts)
    local grid = cute.utils.get_grid_shape(p, max_clusters)
    local nblocks = grid[1] * grid[2] * grid[3]
    local maxw = 64
    local Out = cute.from_host((function()
      local t = {}
      for i = 1, nblocks * maxw * 4 do t[i] = -1 end
      return t
    end)(), i32, { nblocks, maxw, 4 })
    K.scheduler(cm, cn, opts, dyn, shape):launch{ grid = grid, block = 32, cluster = { cm, cn, 1 } }(Out,
      cute.Int32(shape[1]), cute.Int32(shape[2]), cute.Int32(shape[3]))
    cute.synchronize()
    local h = Out:to_host()
    local total = 0
    for z = 0, grid[3] - 1 do
      for y = 0, grid[2] - 1 do
        for x = 0, grid[1] - 1 do
          local bl = x + grid[1] * (y + grid[2] * z)
          local w, i = z, 0
          while true do
            local m, n, l, valid = ts.tile_coord(p, w, x % cm, y % cn)
            local o = (bl * maxw + i) * 4
            if not valid then
              assert.are.equal(-1, h[o + 3], ("block %d made more than %d tiles"):format(bl, i))
              break
            end
            assert.are.same({ m, n, l, 1 }, { h[o], h[o + 1], h[o + 2], h[o + 3] },
              ("block %d tile %d (cluster %dx%d, %s)"):format(bl, i, cm, cn, tostring(p)))
            total = total + 1
            i, w = i + 1, w + grid[3]
          end
        end
      end
    end
    local nc = p.ncluster_mnl
    assert.are.equal(nc[1] * nc[2] * nc[3] * cm * cn, total)
  end
  hopper_it("runtime and static shapes, rasters M and N, groups 1..3, 1x1 and 2x1 / 1x2 clusters", function()
    run(1, 1, { raster = "M", group = 1 }, { 9, 7, 2 }, 10, true)
    run(1, 1, { raster = "N", group = 3 }, { 9, 7, 2 }, 10, true)
    run(2, 1, { raster = "M", group = 2 }, { 7, 5, 1 }, 6, true)
    run(1, 2, { raster = "N", group = 2 }, { 6, 9, 3 }, 4, false)
    run(2, 1, { raster = "N", group = 3 }, { 8, 8, 1 }, 132, false)
  end)
end)
