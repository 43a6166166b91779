-- TMA im2col on a Hopper GPU (docs/HOPPER.md, "TMA", "im2col"): tiles of a
-- conv fprop's im2col matrix (A = (N x output pixels, C x filter taps)) of a
-- random bf16 NHWC / NWC / NDHWC activation, loaded by
-- cp.async.bulk.tensor...im2col into swizzled shared memory, copied out
-- through the shared layout and compared element by element with a CPU
-- im2col: the zero padding, strides, dilation, an asymmetric padding, the M
-- residue (pixels past N) and the K residue (channels sent past C) all zero;
-- static and runtime (cute.dynamic) extents; a multicast load over a 2-CTA
-- cluster.  Needs sm_90 (pending without a GPU, skipped below sm_90).
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local TK = dofile("spec/support/tma_im2col_kernels.lua")
local gpu_it = util.gpu_it
local cp = cute.nvgpu.cpasync
local K = cute.SmemLayoutAtomKind

local function hopper()
  local d = cute.device()
  return d.cc.major >= 9
end

local function smem(kind, bm, bk)
  return cute.tile_to_shape(cute.make_smem_layout_atom(K[kind], cute.bfloat16), { bm, bk }, { 1, 2 })
end

local function rand_act(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  local f = util.rand_floats(n)
  local t = {}
  for i = 1, n do t[i] = f[i - 1] end
  local X = cute.from_host(t, cute.bfloat16, shape)
  return X, X:to_table() -- the values as stored (rounded to bf16)
end

local function filled(rows, cols, v)
  local t = {}
  for i = 1, rows * cols do t[i] = v end
  return cute.from_host(t, cute.bfloat16, { rows, cols })
end

-- load every (BM, BK) tile of the im2col matrix of a random activation and
-- compare it with the CPU im2col (copies: 1, or 2 for a 2-CTA multicast)
local function run(name, shape, kind, bm, bk, conv, opts)
  opts = opts or {}
  local X, x = rand_act(shape)
  local sL = smem(kind, bm, bk)
  local mc = opts.mcast
  local c = {}
  for k, v in pairs(conv) do c[k] = v end
  if mc then c.num_multicast = mc end
  local op = mc and cp.CopyBulkTensorIm2ColG2SMulticastOp() or cp.CopyBulkTensorIm2ColG2SOp()
  local atom, mA = cp.make_im2col_tma_atom(op, opts.dynamic and cute.dynamic(X) or X, sL, c)
  local ref, Mtot, Ktot = TK.im2col_ref(x, shape, conv)
  local mt, kt = math.ceil(Mtot / bm), math.ceil(Ktot / bk)
  local rows, cols, copies = mt * bm, kt * bk, mc or 1
  local Out = filled(copies * rows, cols, -3)
  local k = TK.tile_copy(sL, bm, bk, mc)
  if mc then
    k:launch{ grid = { mc * mt, kt, 1 }, block = bm, cluster = { mc, 1, 1 } }(atom, mA, Out, rows)
  else
    k:launch{ grid = { mt, kt, 1 }, block = bm }(atom, mA, Out, rows)
  end
  cute.synchronize()
  local got = Out:to_table()
  local bad, zeros = 0, 0
  for cp_ = 0, copies - 1 do
    for i = 0, rows - 1 do
      for j = 0, cols - 1 do
        local want = ref(i, j)
        local g = got[(cp_ * rows + i) * cols + j + 1]
        if want == 0 then zeros = zeros + 1 end
        if g ~= want then
          bad = bad + 1
          if bad <= 8 then print(("%s copy %d (m %d, k %d): got %s want %s"):format(name, cp_, i, j, g, want)) end
        end
      end
    end
  end
  assert.are.equal(0, bad)
  assert.is_true(zeros > 0, name .. ": the case exercises zero fill")
end

describe("TMA im2col on the GPU", function()
  gpu_it("NHWC bf16 3x3, padding 1: 128x64 tiles (128B swizzle), static and dynamic extents", function()
    if not hopper() then return pending("needs sm_90") end
    for _, dyn in ipairs({ false, true }) do
      run("nhwc 3x3 dynamic=" .. tostring(dyn), { 2, 10, 12, 64 }, "K_SW128", 128, 64, { filter = { 3, 3 }, padding = 1 },
        { dynamic = dyn })
    end
  end)

  gpu_it("NHWC bf16 stride 2, dilation 2, padding 1 / 2 with upper padding 0 / 3 (64B swizzle)", function()
    if not hopper() then return pending("needs sm_90") end
    run("nhwc strided", { 1, 17, 20, 32 }, "K_SW64", 64, 32,
      { filter = { 3, 3 }, stride = 2, padding = { 1, 2 }, upper_padding = { 0, 3 }, dilation = 2 })
  end)

  gpu_it("NHWC bf16 K residue: 128-channel tiles of two boxes, the last tile half past K (zeros)", function()
    if not hopper() then return pending("needs sm_90") end
    run("nhwc k residue", { 1, 7, 9, 64 }, "K_SW128", 64, 128, { filter = { 3, 3 }, padding = 1 })
  end)

  gpu_it("NWC (3-D map) and NDHWC (5-D map)", function()
    if not hopper() then return pending("needs sm_90") end
    run("nwc", { 2, 37, 16 }, "K_SW32", 64, 16, { filter = 5, stride = 2, padding = 2 })
    run("ndhwc", { 2, 4, 6, 8, 32 }, "K_SW64", 64, 32,
      { filter = { 3, 3, 3 }, stride = { 1, 2, 2 }, padding = 1, dilation = { 1, 1, 2 } })
  end)

  gpu_it("a multicast im2col load over a 2-CTA cluster: each CTA loads half the pixels, both receive the tile", function()
    if not hopper() then return pending("needs sm_90") end
    run("nhwc multicast", { 2, 10, 12, 64 }, "K_SW128", 128, 64, { filter = { 3, 3 }, padding = 1 }, { mcast = 2 })
  end)
end)
