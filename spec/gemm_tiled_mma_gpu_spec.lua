-- TiledMMA GEMMs on the GPU (docs/TENSORCORE.md, "Partitioning and
-- cute.gemm"): one block partitions A (M x K), B (N x K) and C (M x N) with
-- get_slice / partition_A/B/C, copies them into register fragments, runs
-- cute.gemm and copies C back; random small integers (exact in bf16, f16 and
-- f32 sums) against a CPU reference.  Without a GPU the tests are pending;
-- spec/gemm_tiled_mma_spec.lua compiles the same kernels.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local tg = dofile("spec/support/tiled_gemm.lua")
local gpu_it = util.gpu_it
local bf16, f16, f32 = cute.bfloat16, cute.float16, cute.float32

-- n random integers in [-4, 4], 0-based
local function rand_ints(n)
  local r = util.rand_floats(n, -4, 5)
  local t = {}
  for i = 0, n - 1 do t[i] = math.floor(r[i]) end
  return t
end
local one_based = util.one_based

local function run(ab, K, al, Mm, Nn, Kk, add_c)
  local tm = tg.tiled_mma(ab, K, al)
  local A, B, C0 = rand_ints(Mm * Kk), rand_ints(Nn * Kk), rand_ints(Mm * Nn)
  local dA = cute.from_host(one_based(A, Mm * Kk), ab, { Mm, Kk })
  local dB = cute.from_host(one_based(B, Nn * Kk), ab, { Nn, Kk })
  local dC = cute.from_host(one_based(C0, Mm * Nn), f32, { Mm, Nn })
  tg.kernel(tm, add_c):launch{ grid = 1, block = tm.size }(dA, dB, dC)
  local got = dC:to_host()
  local want = tg.reference(A, B, add_c and C0 or nil, Mm, Nn, Kk)
  local bad, first = util.mismatches(got, want, Mm, Nn)
  assert.are.equal(0, bad, ("%s m16n8k%d atoms (%d,%d,%d) %dx%dx%d%s: %d wrong, first %s"):format(ab.name, K,
    al[1], al[2], al[3], Mm, Nn, Kk, add_c and " + C" or "", bad, tostring(first)))
  for _, t in ipairs({ dA, dB, dC }) do t:free() end
end

describe("TiledMMA GEMM on the GPU", function()
  gpu_it("four warps (2,2,1), bf16 m16n8k16, 32 x 32 x 32, A and B through shared memory", function()
    local tm = tg.tiled_mma(bf16, 16, { 2, 2, 1 })
    local A, B = rand_ints(32 * 32), rand_ints(32 * 32)
    local dA, dB = cute.from_host(one_based(A, 1024), bf16, { 32, 32 }), cute.from_host(one_based(B, 1024), bf16, { 32, 32 })
    local dC = cute.zeros({ 32, 32 }, f32)
    tg.smem_kernel(tm, 32, 32, 32, bf16):launch{ grid = 1, block = tm.size }(dA, dB, dC)
    local got, want = dC:to_host(), tg.reference(A, B, nil, 32, 32, 32)
    for i = 0, 1023 do assert.are.equal(want[i], got[i], "C element " .. i) end
    for _, t in ipairs({ dA, dB, dC }) do t:free() end
  end)

  gpu_it("one warp, bf16 m16n8k16, 32 x 32 x 32 (C = A B and C += A B)", function()
    for _ = 1, 2 do
      run(bf16, 16, { 1, 1, 1 }, 32, 32, 32, false)
      run(bf16, 16, { 1, 1, 1 }, 32, 32, 32, true)
    end
  end)

  gpu_it("four warps (2,2,1), bf16 and f16 m16n8k16, 32 x 32 x 32 and 64 x 32 x 32", function()
    for _, ab in ipairs({ bf16, f16 }) do
      run(ab, 16, { 2, 2, 1 }, 32, 32, 32, false)
      run(ab, 16, { 2, 2, 1 }, 64, 32, 32, true)
    end
  end)

  gpu_it("run-time M, N, K (cute.dynamic): a 2 x 2 grid of 64 x 32 tiles, a traced loop over K in steps of 32", function()
    local tm = tg.tiled_mma(bf16, 16, { 2, 2, 1 })
    local k = tg.tiled_kernel(tm, 64, 32, 32)
    for _, sz in ipairs({ { 128, 64, 96 }, { 64, 96, 32 } }) do
      local Mm, Nn, Kk = sz[1], sz[2], sz[3]
      local A, B = rand_ints(Mm * Kk), rand_ints(Nn * Kk)
      local dA = cute.from_host(one_based(A, Mm * Kk), bf16, { Mm, Kk })
      local dB = cute.from_host(one_based(B, Nn * Kk), bf16, { Nn, Kk })
      local dC = cute.zeros({ Mm, Nn }, f32)
      k:launch{ grid = { Mm / 64, Nn / 32 }, block = tm.size }(cute.dynamic(dA), cute.dynamic(dB), cute.dynamic(dC),
        Kk / 32)
      local got, want = dC:to_host(), tg.reference(A, B, nil, Mm, Nn, Kk)
      for i = 0, Mm * Nn - 1 do assert.are.equal(want[i], got[i], ("%dx%dx%d: C element %d"):format(Mm, Nn, Kk, i)) end
      for _, t in ipairs({ dA, dB, dC }) do t:free() end
    end
  end)

  gpu_it("one warp, f16 and bf16 m16n8k8, 32 x 16 x 32", function()
    run(f16, 8, { 1, 1, 1 }, 32, 16, 32, true)
    run(bf16, 8, { 1, 1, 1 }, 32, 16, 32, false)
  end)
end)
