-- cute.gemm for every atom on the GPU (docs/TENSORCORE.md, "cute.gemm for
-- every atom"): whole GEMMs of run-time size (cute.dynamic tensors; 64 x 64
-- block tiles, a traced loop over K tiles, several warps) through
-- make_tiled_mma, partition_A/B/C, cute.copy global -> registers and
-- cute.gemm, on random data against a CPU reference whose inputs are rounded
-- as the kernel rounds them (tf32: cvt.rna in the kernel, float_to_tf32 here;
-- fp8: the host conversion of cute.from_host on both sides).  int8 is exact;
-- the float types within their accumulation's rounding, relative to
-- sum |a b|.  Without a GPU the tests are pending; spec/gemm_atoms_spec.lua
-- compiles the same kernels.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local ag = dofile("spec/support/atom_gemm.lua")
local gpu_it = util.gpu_it

local function rand(c, which, n)
  local t = {}
  for i = 0, n - 1 do t[i] = c.value(which) end
  return t
end
local one_based = util.one_based

local function device_sm()
  if util.on_cpu_target() then return 90 end -- (the engine says which ops it does not run yet)
  local a = require("cute.compile").device_arch()
  return a and tonumber(a:match("^sm_(%d+)")) or 0
end

local function run(c, sizes)
  local tm = ag.tiled_mma(c)
  local bk = c.k or 64
  local k = ag.tiled_kernel(tm, 64, 64, bk, "atom_gemm_" .. c.name:gsub("%W", "_"))
  for _, sz in ipairs(sizes) do
    local Mm, Nn, Kk = sz[1], sz[2], sz[3]
    local A, B = rand(c, "A", Mm * Kk), rand(c, "B", Nn * Kk)
    -- fp8 / integer inputs are what the device holds: convert once on the host
    local dA = cute.from_host(one_based(A, Mm * Kk), c.a, { Mm, Kk })
    local dB = cute.from_host(one_based(B, Nn * Kk), c.b, { Nn, Kk })
    local dC = cute.zeros({ Mm, Nn }, c.c)
    k:launch{ grid = { Mm / 64, Nn / 64 }, block = tm.size }(cute.dynamic(dA), cute.dynamic(dB), cute.dynamic(dC),
      Kk / bk)
    local got = dC:to_host()
    local want, mag = ag.reference(c, A, B, Mm, Nn, Kk)
    local bad, first = 0, nil
    for i = 0, Mm * Nn - 1 do
      local err = math.abs(got[i] - want[i])
      if err > c.tol * mag[i] then
        bad = bad + 1
        first = first or ("C[%d][%d] = %s, want %s (tolerance %g)"):format(math.floor(i / Nn), i % Nn,
          tostring(got[i]), tostring(want[i]), c.tol * mag[i])
      end
    end
    assert.are.equal(0, bad, ("%s %dx%dx%d: %d wrong, first %s"):format(c.name, Mm, Nn, Kk, bad, tostring(first)))
    for _, t in ipairs({ dA, dB, dC }) do t:free() end
  end
end

describe("cute.gemm for every atom on the GPU", function()
  for _, c in ipairs(ag.cases) do
    gpu_it(c.name .. ": run-time M, N, K (up to 128 x 128, three K tiles) on a grid of 64 x 64 tiles", function()
      if c.fp8 and device_sm() < 89 then
        pending("fp8 mma needs sm_89 or newer; this GPU is sm_" .. device_sm())
        return
      end
      local bk = c.k or 64
      run(c, { { 64, 64, bk }, { 128, 128, 2 * bk }, { 128, 64, 3 * bk } })
    end)
  end
end)
