-- Hopper synchronisation primitives on a GPU (sm_90a), against CPU
-- references: a bulk copy in with complete_tx and out again, 2-CTA clusters
-- (block ranks, DSMEM writes through mapa into the peer's shared memory, a
-- remote mbarrier arrive), elect_one, setmaxnreg in a warp-specialised
-- kernel, named barriers with thread counts.  Without a GPU (or on one other
-- than sm_90a) every test is pending.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local K = dofile("spec/support/sm90_kernels.lua")
local f32, i32 = cute.float32, cute.int32

local hopper_it = util.hopper_it

describe("cute.arch Hopper primitives on the GPU", function()
  hopper_it("cp.async.bulk global -> shared (mbarrier complete_tx), 2 x + 1, shared -> global", function()
    local blocks = 16
    local n = blocks * 1024
    local r = util.rand_floats(n)
    local a = {}
    for i = 1, n do a[i] = r[i - 1] end
    local A, B = cute.from_host(a, f32, { n }), cute.zeros({ n }, f32)
    K.bulk_roundtrip():launch{ grid = blocks, block = 128 }(A, B)
    cute.synchronize()
    local h = B:to_host()
    local f = require("ffi").new("float[1]")
    local bad, first = 0, nil
    for i = 0, n - 1 do
      f[0] = r[i] * 2 + 1 -- r[i] is an f32; 2 x is exact, + 1 rounds once, as on the GPU
      if h[i] ~= f[0] then
        bad = bad + 1
        first = first or ("element %d: got %s, want %s"):format(i, tostring(h[i]), tostring(f[0]))
      end
    end
    assert.are.equal(0, bad, tostring(first))
  end)

  hopper_it("2-CTA clusters: ranks, DSMEM writes into the peer, a remote mbarrier arrive completes the peer's phase", function()
    local blocks = 8
    local Out = cute.zeros({ blocks, 68 }, f32)
    K.cluster_dsmem():launch{ grid = blocks, block = 64, cluster = { 2, 1, 1 } }(Out)
    cute.synchronize()
    local h = Out:to_host()
    for b = 0, blocks - 1 do
      local rank, peer = b % 2, b % 2 == 0 and b + 1 or b - 1
      local row = b * 68
      assert.are.equal(rank, h[row], "rank of block " .. b)
      assert.are.equal(1, h[row + 1], "block " .. b .. ": the peer's remote arrive completed phase 0")
      assert.are.equal(rank, h[row + 2], "block_in_cluster_idx x of block " .. b)
      assert.are.equal(2, h[row + 3], "cluster_size")
      for t = 0, 63 do
        assert.are.equal(peer * 1000 + t, h[row + 4 + t], ("block %d element %d: written by the peer"):format(b, t))
      end
    end
  end)

  hopper_it("elect_one picks exactly one lane in every warp", function()
    local Count, Lane = cute.zeros({ 64 }, i32), cute.from_host((function()
      local t = {}
      for i = 1, 64 do t[i] = -1 end
      return t
    end)(), i32, { 64 })
    K.elect():launch{ grid = 8, block = 256 }(Count, Lane)
    cute.synchronize()
    local c, l = Count:to_host(), Lane:to_host()
    for w = 0, 63 do
      assert.are.equal(1, c[w], "warp " .. w)
      assert.is_true(l[w] >= 0 and l[w] < 32, "warp " .. w .. " lane " .. tostring(l[w]))
    end
  end)

  hopper_it("setmaxnreg: a producer warpgroup gives registers back, two consumer warpgroups take them", function()
    local Out = cute.zeros({ 384 }, i32)
    K.setmaxnreg():launch{ grid = 4, block = 384 }(Out)
    cute.synchronize()
    local h = Out:to_host()
    for t = 0, 383 do assert.are.equal(t < 128 and 2 * t or 3 * t, h[t], "thread " .. t) end
  end)

  hopper_it("named barriers: bar.arrive / bar.sync with ids and thread counts between warps", function()
    local Out = cute.zeros({ 96 }, i32)
    K.named_barriers():launch{ grid = 2, block = 128 }(Out)
    cute.synchronize()
    local h = Out:to_host()
    for lane = 0, 31 do
      local s = 0
      for r = 0, 63 do s = s + r * 32 + lane end
      assert.are.equal(s, h[lane], "consumer lane " .. lane)
    end
    for me = 0, 63 do assert.are.equal((63 - me) * 7, h[32 + me], "swap " .. me) end
  end)
end)
