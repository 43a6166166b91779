-- FlashAttention-2 forward (examples/flash_attention_fwd.lua; docs/TENSORCORE.md,
-- "Walk-through: FlashAttention-2 forward"): the fragment maps the kernel relies
-- on, checked against partition_C / partition_A of identity tensors for every
-- thread; the PTX of D = 64 and 128, causal and not (m16n8k16 bf16 mma count,
-- ex2.approx.ftz, butterfly shuffles, cp.async), assembled by ptxas for sm_80
-- and sm_90a with no spills and no stack; #gpu: the kernel on random data
-- against a CPU reference.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local tssa, tr = require("cute.tensor_ssa"), require("cute.trace")

local PTXAS = C.cute_ptxas_path() ~= nil
local function load_example()
  local f = assert(loadfile("examples/flash_attention_fwd.lua"))
  local env = getfenv(f) -- the example's globals: it returns its module when CUTE_EXAMPLE_LIB is set
  local saved = env.arg
  env.arg, env.CUTE_EXAMPLE_LIB = { [0] = "examples/flash_attention_fwd.lua" }, true
  local M = f()
  env.arg, env.CUTE_EXAMPLE_LIB = saved, nil
  return M
end
local FA = load_example()
local _ = cute._

local function count(s, pat)
  local _, n = s:gsub(pat, "")
  return n
end

describe("FlashAttention-2 forward", function()
  it("thread t's S fragment element (v0 + 2 v1 + 4 mi + 4 MI ni) is at row 16 (t/32) + 64 mi + (t%32)/4 + 8 v1, column 8 ni + 2 (t%4) + v0", function()
    local tm = FA.tiled_mma()
    local bad, checked = {}, 0
    local k = cute.kernel(function(X)
      for _i, BM in ipairs({ 64, 128 }) do
        local MI = BM / 64
        for t = 0, 127 do
          local c = tm:get_slice(t):partition_C(cute.make_identity_tensor({ BM, FA.BN }))
          local lane, w = t % 32, math.floor(t / 32)
          for ni = 0, FA.BN / 8 - 1 do
            for mi = 0, MI - 1 do
              for v1 = 0, 1 do
                for v0 = 0, 1 do
                  local rc = c[v0 + 2 * v1 + 4 * mi + 4 * MI * ni]
                  local r = 16 * w + 64 * mi + math.floor(lane / 4) + 8 * v1
                  local cc = 8 * ni + 2 * (lane % 4) + v0
                  checked = checked + 1
                  if (rc[1] ~= r or rc[2] ~= cc) and #bad < 5 then
                    bad[#bad + 1] = ("BM %d thread %d (%d,%d,%d,%d): (%s,%s), want (%d,%d)"):format(BM, t, v0, v1, mi,
                      ni, tostring(rc[1]), tostring(rc[2]), r, cc)
                  end
                end
              end
            end
          end
        end
      end
      X[0] = 0
    end, { name = "fa_rows" })
    k:ir(cute.tensor_spec({ 1 }, cute.float32))
    assert.are.equal(128 * 32 + 128 * 64, checked)
    assert.are.same({}, bad)
  end)

  it("the FA2 trick: P's C fragment through PK, a key-block slice and AFR is the A fragment of the same rows and keys", function()
    local tm = FA.tiled_mma()
    local bad, checked = {}, 0
    local k = cute.kernel(function(X)
      for _i, BM in ipairs({ 64, 128 }) do
        local MI, L = BM / 64, FA.layouts(BM)
        for t = 0, 127 do
          local thr = tm:get_slice(t)
          local cC = thr:partition_C(cute.make_identity_tensor({ BM, FA.BN })) -- S / P tile: rows x keys
          local cA = thr:partition_A(cute.make_identity_tensor({ BM, FA.BN })) -- P as the A operand: M x K = rows x keys
          -- label every element of the C fragment by its (row, key): 1000 row + key
          local n = 4 * MI * FA.BN / 8
          local vals = {}
          for i = 0, n - 1 do vals[i] = tr.const(tr.T.I32, 1000 * cC[i][1] + cC[i][2]) end
          local pk = tssa.make(vals, { { 2, 2 }, MI, FA.BN / 8 }, n):compose(L.PK)
          for kb = 0, FA.BN / 16 - 1 do
            local a = pk[{ _, _, { _, kb } }]:compose(L.AFR)
            assert.are.equal(8 * MI, a:size())
            for j = 0, 8 * MI - 1 do
              local want = cA[j + 8 * MI * kb]
              checked = checked + 1
              if a[j].cv ~= 1000 * want[1] + want[2] and #bad < 5 then
                bad[#bad + 1] = ("BM %d thread %d kb %d value %d: %d, want (%d,%d)"):format(BM, t, kb, j, a[j].cv,
                  want[1], want[2])
              end
            end
          end
        end
      end
      X[0] = 0
    end, { name = "fa_trick" })
    k:ir(cute.tensor_spec({ 1 }, cute.float32))
    assert.are.equal(128 * 4 * (8 + 16), checked)
    assert.are.same({}, bad)
  end)

  it("the row statistics' view: ((1,2), MI, n) -> row (v1, mi) of the (2, MI) statistic, broadcast along v0 by its size 1", function()
    local L = FA.layouts(128)
    local v = L.row_view(8)
    assert.are.equal("((1,2),2,8)", require("cute.tensor").describe(cute.shape(v)))
    for n = 0, 7 do
      for mi = 0, 1 do
        for v1 = 0, 1 do assert.are.equal(v1 + 2 * mi, v(v1 + 2 * mi + 4 * n)) end
      end
    end
  end)

  for _, c in ipairs({ { 64, false }, { 64, true }, { 128, false }, { 128, true } }) do
    local d, causal = c[1], c[2]
    it(("PTX for D = %d%s: 256 bf16 m16n8k16 mma, ex2.approx.ftz, shfl.sync.bfly, cp.async.cg; ptxas sm_80 / sm_90a, no spills"):format(
      d, causal and ", causal" or ""), function()
      local k = FA.make_kernel({ d = d, causal = causal })
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(FA.specs(2, 200, d))
        local ptx = r.ptx
        -- two traced loop bodies (unmasked and masked key blocks), each
        -- D/16 x MI x 8 mma for S and 4 x MI x D/8 for O: 128
        assert.are.equal(256, count(ptx, "mma%.sync%.aligned%.m16n8k16%.row%.col%.f32%.bf16%.bf16%.f32"), arch)
        assert.truthy(util.has(ptx, "ex2.approx.ftz.f32"), arch .. ": no ex2.approx.ftz.f32")
        assert.truthy(count(ptx, "shfl%.sync%.bfly%.b32") >= 8, arch .. ": no butterfly shuffles")
        assert.truthy(util.has(ptx, "cp.async.cg.shared.global"), arch .. ": no cp.async")
        assert.truthy(util.has(ptx, "cp.async.wait_group 1"), arch .. ": K and V are not two groups")
        assert.falsy(util.has(ptx, ".local"), arch .. ": local memory")
        if PTXAS then
          assert.truthy(r.cubin, arch .. ": no cubin")
          assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
          assert.are.equal(0, r.info.stack, arch .. ": " .. tostring(r.ptxas_log))
        end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  it("a sequence length that is a multiple of the blocks needs no masked loop (128 mma)", function()
    local r = FA.make_kernel({ d = 64 }):with({ arch = "sm_80", opt_level = 3 }):compile(FA.specs(2, 256, 64))
    assert.are.equal(128, count(r.ptx, "mma%.sync%.aligned%.m16n8k16"))
  end)

  it("bad configurations are errors at the caller's line", function()
    util.expect_error(function() FA.make_kernel({ d = 96 }) end, "head dimension d = 96 (64 or 128)")
    util.expect_error(function() FA.make_kernel({ d = 64, block_m = 32 }) end, "block_m = 32 (64 or 128)")
  end)

  it("the CPU reference: equal keys give the mean of V; causal row 0 is V's row 0", function()
    local s, d = 3, 2
    local q, k, v = {}, {}, {}
    for i = 0, s * d - 1 do q[i], k[i], v[i] = 0.5, 0.25, i end
    local o = FA.reference_row(q, k, v, 0, 1, s, d, false, 1)
    assert.are.same({ [0] = 2, 3 }, o) -- rows 0,2,4 and 1,3,5 averaged
    o = FA.reference_row(q, k, v, 0, 0, s, d, true, 1)
    assert.are.same({ [0] = 0, 1 }, o)
  end)

  for _, c in ipairs({ { 64, false }, { 64, true }, { 128, false }, { 128, true } }) do
    util.gpu_it(("B=1 H=2 S=200 D=%d%s against the CPU reference"):format(c[1], c[2] and " causal" or ""), function()
      local maxerr, rel = FA.check({ d = c[1], causal = c[2] }, 1, 2, 200)
      assert.is_true(rel < 1e-2, ("relative error %g"):format(rel))
      assert.is_true(maxerr < 3e-2, ("max abs error %g"):format(maxerr))
    end)
  end
  util.gpu_it("B=2 H=1 S=256 D=64 causal (no tail) against the CPU reference", function()
    local maxerr, rel = FA.check({ d = 64, causal = true }, 2, 1, 256)
    assert.is_true(rel < 1e-2 and maxerr < 3e-2, ("relative error %g, max abs error %g"):format(rel, maxerr))
  end)
end)
