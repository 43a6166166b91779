-- FlashAttention-2 forward (examples/flash_attention_fwd.lua; docs/TENSORCORE.md,
-- "Walk-through: FlashAttention-2 forward"): the fragment maps the kernel relies
-- on, checked against partition_C / partition_A of identity tensors for every
-- thread; a model of ldmatrix (the PTX ISA's lane -> row address, register ->
-- row and column) run on the kernel's own TiledCopies, swizzled shared-memory
-- layouts and slices, which must put every Q, K and V element in the register
-- where the TiledMMA wants it; the cp.async TiledCopy covering each tile once;
-- the PTX of D = 64 and 128, causal and not (m16n8k16 bf16 mma count, ldmatrix
-- .x4 and .x4.trans counts, no other shared-memory loads, ex2.approx.ftz,
-- butterfly shuffles, cp.async), assembled by ptxas for sm_80 and sm_90a with
-- no spills and no stack; #gpu: the kernel on random data against a CPU
-- reference.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local tssa, tr = require("cute.tensor_ssa"), require("cute.trace")
local layout = require("cute.layout")

local PTXAS = C.cute_ptxas_path() ~= nil
local FA = dofile("examples/common.lua").load("flash_attention_fwd")
local _ = cute._

local count = util.count

describe("FlashAttention-2 forward", function()
  -- (warps, block_m) configurations: the default (8, 128), and 4 warps with one
  -- or two 16-row blocks each
  local CONFIGS = { { 8, 128 }, { 4, 64 }, { 4, 128 } }

  it("thread t's S fragment element (v0 + 2 v1 + 4 mi + 4 MI ni) is at row 16 (t/32) + 16 W mi + (t%32)/4 + 8 v1, column 8 ni + 2 (t%4) + v0", function()
    local bad, checked = {}, 0
    local k = cute.kernel(function(X)
      for _i, c in ipairs(CONFIGS) do
        local W, BM = c[1], c[2]
        local tm, MI = FA.tiled_mma(W), BM / (16 * W)
        for t = 0, 32 * W - 1 do
          local cc = tm:get_slice(t):partition_C(cute.make_identity_tensor({ BM, FA.BN }))
          local lane, w = t % 32, math.floor(t / 32)
          for ni = 0, FA.BN / 8 - 1 do
            for mi = 0, MI - 1 do
              for v1 = 0, 1 do
                for v0 = 0, 1 do
                  local rc = cc[v0 + 2 * v1 + 4 * mi + 4 * MI * ni]
                  local r = 16 * w + 16 * W * mi + math.floor(lane / 4) + 8 * v1
                  local col = 8 * ni + 2 * (lane % 4) + v0
                  checked = checked + 1
                  if (rc[1] ~= r or rc[2] ~= col) and #bad < 5 then
                    bad[#bad + 1] = ("W %d BM %d thread %d (%d,%d,%d,%d): (%s,%s), want (%d,%d)"):format(W, BM, t, v0,
                      v1, mi, ni, tostring(rc[1]), tostring(rc[2]), r, col)
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
    assert.are.equal(128 * 64 + 64 * 64 + 128 * 64, checked)
    assert.are.same({}, bad)
  end)

  it("the FA2 trick: P's C fragment through PK, a key-block slice and AFR is the A fragment of the same rows and keys", function()
    local bad, checked = {}, 0
    local k = cute.kernel(function(X)
      for _i, c in ipairs(CONFIGS) do
        local W, BM = c[1], c[2]
        local tm, MI = FA.tiled_mma(W), BM / (16 * W)
        local L = FA.layouts(MI)
        for t = 0, 32 * W - 1 do
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
                bad[#bad + 1] = ("W %d BM %d thread %d kb %d value %d: %d, want (%d,%d)"):format(W, BM, t, kb, j,
                  a[j].cv, want[1], want[2])
              end
            end
          end
        end
      end
      X[0] = 0
    end, { name = "fa_trick" })
    k:ir(cute.tensor_spec({ 1 }, cute.float32))
    assert.are.equal((256 * 1 + 128 * 1 + 128 * 2) * 4 * 8, checked)
    assert.are.same({}, bad)
  end)

  it("the row statistics' view: ((1,2), MI, n) -> row (v1, mi) of the (2, MI) statistic, broadcast along v0 by its size 1", function()
    local L = FA.layouts(2)
    local v = L.row_view(8)
    assert.are.equal("((1,2),2,8)", require("cute.tensor").describe(cute.shape(v)))
    for n = 0, 7 do
      for mi = 0, 1 do
        for v1 = 0, 1 do assert.are.equal(v1 + 2 * mi, v(v1 + 2 * mi + 4 * n)) end
      end
    end
  end)

  -- the (pre-swizzle) element offsets of a tensor with a static layout and
  -- offset; the swizzle maps aligned 8-element rows to aligned 8-element rows
  -- and is the same on both sides of each comparison below
  local function offsets(T)
    local L = layout.make_layout(T.layout.shape, T.layout.stride)
    local o = {}
    for i = 0, layout.size(L) - 1 do o[i] = T.off + L(i) end
    return o
  end

  -- The kernel's ldmatrix copies, in a model of the instruction: thread t's
  -- source src(t) (partition_S, sliced as the kernel does) gives one 16-byte
  -- row address per 8 values; instruction g of lane l, value v = 2 j + h
  -- (register j, half h) reads
  --   plain:  row(lane 8 j + l / 4, g) + 2 (l % 4) + h
  --   .trans: row(lane 8 j + 2 (l % 4) + h, g) + l / 4
  -- into element g * 2 nm + v of dst(t) (the retiled register view), which
  -- must be the register where want(t) (the TiledMMA's partition_A / B of the
  -- same shared tile, in fragment order) has that element.
  local function check_ldmatrix(tc, nthreads, src, dst, want)
    local op = tc.atom.op
    local nm, trans = op.num_matrices, op.transpose
    local vr = 2 * nm
    local rows, wants = {}, {}
    for t = 0, nthreads - 1 do
      local o = offsets(src(t))
      rows[t] = {}
      for g = 0, #o / 8 do
        if o[8 * g] then
          assert.are.equal(0, o[8 * g] % 8, "a 16-byte aligned row")
          for c = 1, 7 do assert.are.equal(o[8 * g] + c, o[8 * g + c], "a row of 8 adjacent elements") end
          rows[t][g] = o[8 * g]
        end
      end
      wants[t] = offsets(want(t))
    end
    local seen = 0
    for t = 0, nthreads - 1 do
      local V = dst(t)
      local VL = V.layout -- (a register view: a layout over the fragment's registers)
      local ng = layout.size(VL) / vr
      assert.are.equal(ng, #rows[t] + 1)
      local w, l = math.floor(t / 32), t % 32
      for g = 0, ng - 1 do
        for v = 0, vr - 1 do
          local j, h = math.floor(v / 2), v % 2
          local e
          if trans then e = rows[32 * w + 8 * j + 2 * (l % 4) + h][g] + math.floor(l / 4)
          else e = rows[32 * w + 8 * j + math.floor(l / 4)][g] + 2 * (l % 4) + h end
          local reg = (type(V.off) == "number" and V.off or 0) + VL(g * vr + v)
          assert.are.equal(wants[t][reg], e, ("%s: thread %d, instruction %d, value %d (register %d)"):format(
            tc.atom.instruction, t, g, v, reg))
          seen = seen + 1
        end
      end
    end
    return seen
  end

  for _i, c in ipairs({ { 64, 4, 128 }, { 64, 8, 128 }, { 128, 8, 128 }, { 128, 4, 64 } }) do
    local d, W, BM = c[1], c[2], c[3]
    it(("ldmatrix puts every Q, K and V element where the TiledMMA wants it (model; D = %d, %d warps, BM = %d, swizzled, both buffers)")
      :format(d, W, BM), function()
      local cfg = FA.config({ d = d, warps = W, block_m = BM })
      local P = FA.parts(cfg)
      local tm, NT = P.tiled_mma, 32 * W
      local NI, KD, KN = FA.BN / 8, d / 16, FA.BN / 16
      local seen = 0
      local k = cute.kernel(function(X)
        local sQ = cute.make_dynamic_shared_tensor(P.sQ_layout, cute.bfloat16, 1024)
        local sK = cute.make_dynamic_shared_tensor(P.sKV_layout, cute.bfloat16, 1024)
        local sV = cute.make_dynamic_shared_tensor(P.sKV_layout, cute.bfloat16, 1024)
        local sVt = cute.make_tensor(sV, P.sVt_inner)
        assert.truthy(tostring(sK):find("Sw<3,3,3>", 1, true), tostring(sK))
        assert.truthy(tostring(sVt):find("Sw<3,3,3>", 1, true), tostring(sVt))
        -- Q: the whole tile at once, into the whole A fragment (q_regs) ...
        seen = seen + check_ldmatrix(P.s2r_Q, NT,
          function(t) return P.s2r_Q:get_slice(t):partition_S(sQ) end,
          function(t) return P.s2r_Q:get_slice(t):retile(tm:get_slice(t):partition_fragment_A(sQ)) end,
          function(t) return tm:get_slice(t):partition_A(sQ) end)
        -- ... or k-block kk into a one-k-block A fragment ((2,2,2), MI, 1) (q_regs = false)
        for kk = 0, KD - 1 do
          seen = seen + check_ldmatrix(P.s2r_Q, NT,
            function(t) return P.s2r_Q:get_slice(t):partition_S(sQ)[{ _, _, kk }] end,
            function(t)
              return P.s2r_Q:get_slice(t):retile(tm:get_slice(t):make_fragment_A({ { 2, 2, 2 }, BM / (16 * W), 1 }))[
                { _, _, 0 }]
            end,
            function(t) return tm:get_slice(t):partition_A(sQ)[{ _, _, kk }] end)
        end
        for st = 0, 1 do
          -- K: k-block kk of buffer st into a one-k-block B fragment ((2,2), NI, 1)
          for kk = 0, KD - 1 do
            seen = seen + check_ldmatrix(P.s2r_K, NT,
              function(t) return P.s2r_K:get_slice(t):partition_S(sK[{ _, _, st }])[{ _, _, kk }] end,
              function(t)
                return P.s2r_K:get_slice(t):retile(tm:get_slice(t):make_fragment_B({ { 2, 2 }, NI, 1 }))[{ _, _, 0 }]
              end,
              function(t) return tm:get_slice(t):partition_B(sK[{ _, _, st }])[{ _, _, kk }] end)
          end
          -- V^T: key block kb of buffer st into ((2,2), D/8, 1), .trans
          for kb = 0, KN - 1 do
            seen = seen + check_ldmatrix(P.s2r_V, NT,
              function(t) return P.s2r_V:get_slice(t):partition_S(sVt[{ _, _, st }])[{ _, _, kb }] end,
              function(t)
                return P.s2r_V:get_slice(t):retile(tm:get_slice(t):make_fragment_B({ { 2, 2 }, d / 8, 1 }))[{ _, _, 0 }]
              end,
              function(t) return tm:get_slice(t):partition_B(sVt[{ _, _, st }])[{ _, _, kb }] end)
          end
        end
        X[0] = 0
      end, { name = "fa_ldmatrix_model" })
      k:ir(cute.tensor_spec({ 1 }, cute.float32))
      -- every value of Q (BM x D) once (twice: both ways), and of K and V^T (BN x D, both
      -- buffers) once per warp (each holds all of B)
      assert.are.equal(2 * BM * d + 2 * 2 * W * FA.BN * d, seen)
    end)
  end

  it("V^T is V transposed: sVt(d, key, st) is the element of sV(key, d, st), swizzle and all", function()
    local k = cute.kernel(function(X)
      for _i, d in ipairs({ 64, 128 }) do
        local P = FA.parts(FA.config({ d = d }))
        local sV = cute.make_dynamic_shared_tensor(P.sKV_layout, cute.bfloat16, 1024)
        local sVt = cute.make_tensor(sV, P.sVt_inner)
        assert.are.same(tostring(require("cute.tensor").ptr_swizzle(sV)), tostring(require("cute.tensor").ptr_swizzle(sVt)))
        local Lv = layout.make_layout(sV.layout.shape, sV.layout.stride)
        local Lt = layout.make_layout(sVt.layout.shape, sVt.layout.stride)
        for m, n in ipairs({ d, FA.BN, 2 }) do assert.are.equal(n, layout.size(layout.get(Lt, m - 1))) end
        for st = 0, 1 do
          for key = 0, FA.BN - 1 do
            for x = 0, d - 1 do
              assert.are.equal(sV.off + Lv({ key, x, st }), sVt.off + Lt({ x, key, st }))
            end
          end
        end
      end
      X[0] = 0
    end, { name = "fa_vt" })
    k:ir(cute.tensor_spec({ 1 }, cute.float32))
  end)

  it("the cp.async TiledCopy writes each element of the Q, K and V tiles exactly once, 16 bytes at a time", function()
    local k = cute.kernel(function(X)
      for _i, c in ipairs({ { 64, 4, 128 }, { 64, 8, 128 }, { 128, 8, 128 }, { 128, 4, 64 } }) do
        local P = FA.parts(FA.config({ d = c[1], warps = c[2], block_m = c[3] }))
        local sQ = cute.make_dynamic_shared_tensor(P.sQ_layout, cute.bfloat16, 1024)
        local sK = cute.make_dynamic_shared_tensor(P.sKV_layout, cute.bfloat16, 1024)
        for _j, T in ipairs({ sQ, sK[{ _, _, 0 }], sK[{ _, _, 1 }] }) do
          local hit, n = {}, 0
          for t = 0, 32 * c[2] - 1 do
            local o = offsets(P.g2s:get_slice(t):partition_D(T))
            for g = 0, #o / 8 do
              assert.are.equal(0, o[8 * g] % 8)
              for e = 0, 7 do
                local x = o[8 * g + e]
                assert.are.equal(o[8 * g] + e, x)
                assert.is_nil(hit[x], "element written twice")
                hit[x], n = true, n + 1
              end
            end
          end
          assert.are.equal(cute.size(T), n)
        end
      end
      X[0] = 0
    end, { name = "fa_g2s" })
    k:ir(cute.tensor_spec({ 1 }, cute.float32))
  end)

  for _, c in ipairs({ { 64, false }, { 64, true }, { 128, false }, { 128, true }, { 128, false, 4, 64 },
    { 128, true, 8, 128, false } }) do
    local d, causal, W, BM, q_regs = c[1], c[2], c[3], c[4], c[5]
    local MI = FA.config({ d = d, warps = W, block_m = BM }).mi
    -- per loop body: S = Q K^T D/16 x MI x 8 mma, O += P V 4 x MI x D/8; two
    -- bodies (unmasked and masked key blocks); ldmatrix.x4 for Q once (D/16 x
    -- MI) and for K (D/16 x 4 per body), ldmatrix.x4.trans for V (4 x D/16 per body)
    local n_mma = 2 * (d / 16 * MI * 8 + 4 * MI * d / 8)
    -- (q_regs = false: Q's D/16 x MI per body)
    local n_plain, n_trans = (q_regs == false and 2 or 1) * d / 16 * MI + 2 * d / 16 * 4, 2 * 4 * d / 16
    it(("PTX for D = %d%s%s: %d mma, %d ldmatrix.x4 + %d .x4.trans and no other shared loads, ex2.approx.ftz, shfl.sync.bfly, cp.async; ptxas sm_80 / sm_90a, no spills"):format(
      d, causal and ", causal" or "", (W and (", %d warps, BM = %d"):format(W, BM) or ", default tiles") ..
      (q_regs == false and ", Q from shared memory" or ""), n_mma, n_plain, n_trans), function()
      local k = FA.make_kernel({ d = d, causal = causal, warps = W, block_m = BM, q_regs = q_regs })
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(FA.specs(2, 200, d))
        local ptx = r.ptx
        assert.are.equal(n_mma, count(ptx, "mma%.sync%.aligned%.m16n8k16%.row%.col%.f32%.bf16%.bf16%.f32"), arch)
        assert.are.equal(n_plain, count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16"), arch)
        assert.are.equal(n_trans, count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.trans%.shared%.b16"), arch)
        assert.are.equal(n_plain + n_trans, count(ptx, "ldmatrix"), arch)
        assert.are.equal(0, count(ptx, "ld%.shared"), arch .. ": shared-memory loads besides ldmatrix")
        assert.truthy(util.has(ptx, "ex2.approx.ftz.f32"), arch .. ": no ex2.approx.ftz.f32")
        assert.truthy(count(ptx, "shfl%.sync%.bfly%.b32") >= 8, arch .. ": no butterfly shuffles")
        assert.truthy(util.has(ptx, "cp.async.cg.shared.global"), arch .. ": no cp.async")
        -- the prologue waits for Q and K_0 (V_0 in flight), each block for K_j and V_j, with one barrier
        assert.are.equal(1, count(ptx, "cp%.async%.wait_group 1;"), arch .. ": the prologue's wait")
        assert.are.equal(2, count(ptx, "cp%.async%.wait_group 0;"), arch .. ": one wait per loop body")
        assert.are.equal(3, count(ptx, "bar%.sync"), arch .. ": barriers: prologue + one per loop body")
        assert.falsy(util.has(ptx, ".local"), arch .. ": local memory")
        if PTXAS then
          assert.truthy(r.cubin, arch .. ": no cubin")
          assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
          assert.are.equal(0, r.info.stack, arch .. ": " .. tostring(r.ptxas_log))
          assert.truthy(r.info.regs <= 255, arch)
        end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  it("a sequence length that is a multiple of the blocks needs no masked loop (128 mma for D = 64, 4 warps x 32 rows)", function()
    local r = FA.make_kernel({ d = 64 }):with({ arch = "sm_80", opt_level = 3 }):compile(FA.specs(2, 256, 64))
    assert.are.equal(128, count(r.ptx, "mma%.sync%.aligned%.m16n8k16"))
  end)

  it("bad configurations are errors at the caller's line", function()
    util.expect_error(function() FA.make_kernel({ d = 96 }) end, "head dimension d = 96 (64 or 128)")
    util.expect_error(function() FA.make_kernel({ d = 64, block_m = 32 }) end, "block_m = 32 (64 or 128)")
    util.expect_error(function() FA.make_kernel({ d = 64, warps = 6 }) end, "warps = 6 (4 or 8")
    util.expect_error(function() FA.make_kernel({ d = 64, block_m = 64, warps = 8 }) end,
      "warps = 8 (4 or 8, and block_m = 64 a multiple of 16 x warps)")
    util.expect_error(function() FA.make_kernel({ d = 64, min_blocks = 0 }) end,
      "min_blocks = 0 (CTAs per SM at least: an integer 1..32)")
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
