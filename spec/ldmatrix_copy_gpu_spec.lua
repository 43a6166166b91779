-- GEMMs through shared memory, ldmatrix TiledCopies and retile on the GPU
-- (docs/TENSORCORE.md, "ldmatrix, stmatrix and retile"): one block of four
-- warps (2 x 2 m16n8k16 atoms, N permuted to 32) copies A (K-major) and B
-- (K-major, or MN-major read with ldmatrix .trans) into shared memory,
-- loads them with cute.copy(make_tiled_copy_A/B(ldmatrix atom, tiled_mma), ...)
-- into retiled fragments, runs cute.gemm and stores C; the stmatrix case
-- (sm_90) converts C to the input type and stores it through
-- make_tiled_copy_C(stmatrix atom) into shared memory.  Random small
-- integers (exact in bf16, f16 and the f32 sums) against a CPU reference.
-- Without a GPU the tests are pending; spec/ldmatrix_copy_spec.lua compiles
-- the same kernels (spec/support/ldmatrix_gemm.lua).
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local lg = dofile("spec/support/ldmatrix_gemm.lua")
local gpu_it = util.gpu_it
local bf16, f16, f32 = cute.bfloat16, cute.float16, cute.float32

-- n random integers in [lo, hi], 0-based
local function rand_ints(n, lo, hi)
  local r = util.rand_floats(n, lo, hi + 1)
  local t = {}
  for i = 0, n - 1 do t[i] = math.floor(r[i]) end
  return t
end
local one_based = util.one_based

-- run the kernel of cfg on random A, B and compare C with the reference
local function run(cfg)
  local Mm, Nn, Kk = cfg.m, cfg.n, cfg.k
  -- |sum| <= K * 4 = 128 for K = 32: exact in f32 and (stmatrix) in bf16 / f16
  local A, B = rand_ints(Mm * Kk, -2, 2), rand_ints(Nn * Kk, -2, 2)
  local dA = cute.from_host(one_based(A, Mm * Kk), cfg.ab, { Mm, Kk })
  local dB = cute.from_host(one_based(B, Nn * Kk), cfg.ab, cfg.b_mn_major and { Kk, Nn } or { Nn, Kk })
  local dC = cute.zeros({ Mm, Nn }, cfg.stmatrix and cfg.ab or f32)
  local k, tm = lg.kernel(cfg)
  k:launch{ grid = 1, block = tm.size }(dA, dB, dC)
  local got = dC:to_table()
  local want = lg.reference(A, B, Mm, Nn, Kk, cfg.b_mn_major)
  local bad, first = util.mismatches(got, want, Mm, Nn, true)
  assert.are.equal(0, bad, ("%s %dx%dx%d, B %s-major, ldmatrix x%d for B%s: %d wrong, first %s"):format(cfg.ab.name,
    Mm, Nn, Kk, cfg.b_mn_major and "MN" or "K", cfg.nb or 4, cfg.stmatrix and ", C through stmatrix" or "", bad,
    tostring(first)))
  for _, t in ipairs({ dA, dB, dC }) do t:free() end
end

describe("ldmatrix TiledCopies on the GPU", function()
  gpu_it("bf16 and f16 64 x 64 x 32, K-major A and B (ldmatrix.x4, and .x2 for B)", function()
    for _, ab in ipairs({ bf16, f16 }) do
      run({ ab = ab, m = 64, n = 64, k = 32 })
      run({ ab = ab, m = 64, n = 64, k = 32, nb = 2 })
    end
  end)

  gpu_it("bf16 and f16 64 x 64 x 32 with an MN-major B (ldmatrix.x4.trans / .x2.trans)", function()
    for _, ab in ipairs({ bf16, f16 }) do
      run({ ab = ab, m = 64, n = 64, k = 32, b_mn_major = true })
      run({ ab = ab, m = 64, n = 32, k = 32, b_mn_major = true, nb = 2 })
    end
  end)

  gpu_it("stmatrix.x4 epilogue through make_tiled_copy_C (sm_90): C converted to bf16 / f16", function()
    local arch = require("cute.compile").device_arch()
    if not util.on_cpu_target() and not (arch and tonumber(arch:match("^sm_(%d+)")) >= 90) then
      pending("stmatrix needs sm_90; the device is " .. tostring(arch))
      return
    end
    run({ ab = bf16, m = 64, n = 64, k = 32, stmatrix = true })
    run({ ab = f16, m = 64, n = 64, k = 32, b_mn_major = true, stmatrix = true })
  end)
end)
