-- Warpgroup MMA on the GPU (docs/HOPPER.md, "Warpgroup MMA"): one CTA of one
-- or two warpgroups copies k-tiles of A (M x K) and B (N x K) into swizzled
-- shared memory (K- or MN-major, cute.sm90_utils.make_smem_layout_a/b), runs a
-- K loop of cute.gemm on wgmma descriptor fragments (or A in registers) and
-- stores C; compared exactly with a CPU reference on random data whose
-- products and sums are exact in every format (multiples of 1/4 in [-2, 2];
-- integers for f16 accumulators and int8).  The kernels are those of
-- spec/support/wgmma_gemm.lua, which spec/wgmma_spec.lua compiles without a
-- GPU.  Needs an sm_90a device (H100); pending elsewhere.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local wgg = dofile("spec/support/wgmma_gemm.lua")

local gpu_it = util.hopper_it -- (pending without an sm_90a GPU)

-- n random values: multiples of 1/4 in [-2, 2] (integers in [-2, 2] when ints)
local function rand_vals(n, ints)
  local r = util.rand_floats(n, -2, 2.25)
  local t = {}
  for i = 0, n - 1 do
    local v = ints and math.floor(r[i] + 0.5) or math.floor(r[i] * 4) / 4
    if v > 2 then v = 2 end
    t[i] = v
  end
  return t
end

local function run(cfg)
  local kd = wgg.KINDS[cfg.kind]
  local Mm, Nn, Kk = 64 * (cfg.wg_m or 1), cfg.n, cfg.k
  local ints = cfg.kind == "f16acc" or cfg.kind == "int8" or cfg.kind == "uint8"
  local A, B = rand_vals(Mm * Kk, ints), rand_vals(Nn * Kk, ints)
  if cfg.kind == "uint8" then
    for i = 0, Mm * Kk - 1 do A[i] = A[i] + 2 end
    for i = 0, Nn * Kk - 1 do B[i] = B[i] + 2 end
  end
  local dA = cute.from_host(util.one_based(A, Mm * Kk), kd.ab, { Mm, Kk })
  local dB = cute.from_host(util.one_based(B, Nn * Kk), kd.ab, { Nn, Kk })
  local dC = cute.zeros({ Mm, Nn }, kd.acc)
  local k, tm = wgg.kernel(cfg)
  k:with({ arch = "sm_90a" }):launch{ grid = 1, block = tm.size }(dA, dB, dC)
  local got = dC:to_table()
  local want = wgg.reference(A, B, Mm, Nn, Kk)
  local bad, first = util.mismatches(got, want, Mm, Nn, true)
  assert.are.equal(0, bad, ("%s %dx%dx%d, A %s-major from %s, B %s-major: %d wrong, first %s"):format(cfg.kind, Mm,
    Nn, Kk, cfg.a_major or "K", cfg.a_src or "smem", cfg.b_major or "K", bad, tostring(first)))
  for _, t in ipairs({ dA, dB, dC }) do t:free() end
end

describe("warpgroup MMA on the GPU", function()
  gpu_it("bf16, f32 accumulators: N = 8, 64, 128, 256, K- and MN-major B", function()
    for _, n in ipairs({ 8, 64, 128, 256 }) do
      run({ kind = "bf16", n = n, k = 128, bk = 64 })
      run({ kind = "bf16", n = n, k = 128, bk = 64, b_major = "MN" })
      run({ kind = "bf16", n = n, k = 192, bk = 64, stages = 2 }) -- stage kt % 2: traced descriptor offsets
    end
  end)

  gpu_it("bf16, the first k-tile peeled with accumulate = false over a C of 3s", function()
    run({ kind = "bf16", n = 128, k = 192, bk = 64, peel = true })
    run({ kind = "int8", n = 64, k = 256, bk = 128, peel = true })
  end)

  gpu_it("bf16, two warpgroups along M; A MN-major too", function()
    run({ kind = "bf16", n = 128, k = 128, bk = 64, wg_m = 2 })
    run({ kind = "bf16", n = 64, k = 64, bk = 64, wg_m = 2, a_major = "MN", b_major = "MN" })
  end)

  gpu_it("f16 with f16 accumulators, and with f32", function()
    run({ kind = "f16acc", n = 64, k = 128, bk = 64 })
    run({ kind = "f16acc", n = 256, k = 64, bk = 64, b_major = "MN" })
    run({ kind = "f16", n = 128, k = 128, bk = 64 })
  end)

  gpu_it("tf32 (k8), N = 8 and 128", function()
    run({ kind = "tf32", n = 8, k = 64, bk = 32 })
    run({ kind = "tf32", n = 128, k = 64, bk = 32 })
  end)

  gpu_it("fp8 e4m3 and e5m2 (k32)", function()
    run({ kind = "e4m3", n = 64, k = 256, bk = 128 })
    run({ kind = "e4m3", n = 256, k = 128, bk = 128 })
    run({ kind = "e5m2", n = 8, k = 128, bk = 64 })
  end)

  gpu_it("int8 and uint8 (k32), exact s32 sums", function()
    run({ kind = "int8", n = 64, k = 256, bk = 128 })
    run({ kind = "int8", n = 256, k = 128, bk = 64 })
    run({ kind = "uint8", n = 32, k = 128, bk = 128 })
  end)

  gpu_it("A from registers: bf16, f16, tf32, int8", function()
    run({ kind = "bf16", n = 64, k = 128, bk = 64, a_src = "rmem", stages = 2 })
    run({ kind = "bf16", n = 256, k = 64, bk = 64, a_src = "rmem", wg_m = 2, b_major = "MN" })
    run({ kind = "f16", n = 128, k = 64, bk = 64, a_src = "rmem" })
    run({ kind = "tf32", n = 8, k = 64, bk = 32, a_src = "rmem" })
    run({ kind = "int8", n = 32, k = 128, bk = 64, a_src = "rmem" })
  end)
end)
