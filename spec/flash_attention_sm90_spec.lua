-- FlashAttention-3-style forward for Hopper (examples/flash_attention_sm90.lua;
-- docs/HOPPER.md, "FlashAttention-3-style forward"):
--  * the fragment maps the kernel relies on, checked for every thread against
--    the warpgroup TiledMMA's partition_C / partition_A (wgmma's accumulator
--    and A-from-registers layouts; the accumulator of S = Q K^T is the A
--    operand of O += P V);
--  * the wgmma descriptors: every element each instruction reads of Q, K and V
--    (the PTX ISA's canonical 128-byte-swizzle layouts) is the one the smem
--    layouts hold;
--  * configuration and argument errors at the caller's line;
--  * the PTX for D = 64 and 128, causal and not (wgmma m64n128k16 / m64nDk16
--    with A from registers, TMA loads and store, mbarrier try_wait.parity,
--    setmaxnreg, elect.sync, quad shuffles, ex2.approx), assembled by ptxas for
--    sm_90a with 0 spill bytes, the cold compile time printed; the variants the
--    GPU spec runs compile too;
--  * one compile for every S: two launches through a stub driver;
--  * traced for sm_80 / sm_90: an error naming the Hopper op and the arch.
-- #gpu: the kernel on random data against the CPU reference of the FA2
-- example (double precision) for S = 200, 333, 1024, D = 64 / 128, causal and
-- not, and the schedule / epilogue variants.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")

local PTXAS = C.cute_ptxas_path() ~= nil
local FA3 = dofile("examples/common.lua").load("flash_attention_sm90")

local count = util.count

describe("FlashAttention-3-style forward (sm_90a)", function()
  it("the A fragment of k-block kb (P in registers) is accumulator elements 8 kb .. 8 kb + 7, same rows and keys", function()
    local bad = {}
    for t = 0, 127 do
      for kb = 0, FA3.BN / 16 - 1 do
        for e = 0, 7 do
          local ar, ac = FA3.a_coord(t, kb, e)
          local cr, cc = FA3.acc_coord(t, 8 * kb + e)
          if (ar ~= cr or ac ~= cc) and #bad < 5 then
            bad[#bad + 1] = ("thread %d kb %d e %d: A (%d,%d), accumulator (%d,%d)"):format(t, kb, e, ar, ac, cr, cc)
          end
        end
      end
    end
    assert.are.same({}, bad)
  end)

  -- the kernel's maps against the TiledMMA of cute.nvgpu.warpgroup (CuTe's
  -- wgmma traits: partition_C / partition_A of identity tensors), every thread
  local function against_tiled_mma(a_src, fn)
    local bad, n = {}, 0
    local k = cute.kernel(function(X)
      local op = cute.nvgpu.warpgroup.MmaF16BF16Op(cute.bfloat16, cute.float32, { 64, FA3.BN, 16 }, { a_src = a_src })
      local tm = cute.make_tiled_mma(op, { 1, 1, 1 })
      for t = 0, 127 do
        n = n + fn(tm:get_slice(t), t, bad)
      end
      X[0] = 0
    end, { name = "fa3_maps", arch = "sm_90a" })
    k:ir(cute.tensor_spec({ 1 }, cute.float32))
    return n, bad
  end

  it("thread t's accumulator element i is at row 16 (t/32) + (t%32)/4 + 8 ((i/2)%2), column 8 (i/4) + 2 (t%4) + i%2 (partition_C)", function()
    local n, bad = against_tiled_mma("smem", function(thr, t, bad)
      local cc = thr:partition_C(cute.make_identity_tensor({ 64, FA3.BN }))
      for i = 0, FA3.BN / 2 - 1 do
        local rc = cc[i]
        local r, c = FA3.acc_coord(t, i)
        if (rc[1] ~= r or rc[2] ~= c) and #bad < 5 then
          bad[#bad + 1] = ("thread %d element %d: partition_C (%s,%s), acc_coord (%d,%d)"):format(t, i, tostring(rc[1]),
            tostring(rc[2]), r, c)
        end
      end
      return FA3.BN / 2
    end)
    assert.are.equal(128 * FA3.BN / 2, n)
    assert.are.same({}, bad)
  end)

  it("the A operand from registers: element e of k-block kb is at a_coord(t, kb, e) (partition_A with a_src = rmem)", function()
    local n, bad = against_tiled_mma("rmem", function(thr, t, bad)
      local ca = thr:partition_A(cute.make_identity_tensor({ 64, FA3.BN }))
      for kb = 0, FA3.BN / 16 - 1 do
        for e = 0, 7 do
          local rc = ca[{ e, 0, kb }]
          local r, c = FA3.a_coord(t, kb, e)
          if (rc[1] ~= r or rc[2] ~= c) and #bad < 5 then
            bad[#bad + 1] = ("thread %d kb %d e %d: partition_A (%s,%s), a_coord (%d,%d)"):format(t, kb, e,
              tostring(rc[1]), tostring(rc[2]), r, c)
          end
        end
      end
      return FA3.BN / 2
    end)
    assert.are.equal(128 * FA3.BN / 2, n)
    assert.are.same({}, bad)
  end)

  -- the PTX ISA's canonical 128-byte-swizzle layouts (CUTLASS's make_gmma_desc
  -- comments, in bytes, 16-bit elements): K-major row m, column k at
  -- start + (m/8) SBO + (m%8) 128 + 2k; MN-major column n, row k at start + (n/64) LBO +
  -- (k/8) SBO + (k%8) 128 + 2 (n%64); then Swizzle<3,4,3>: bits 4..6 ^= bits 7..9
  local function swz(a) return bit.bxor(a, bit.lshift(bit.band(bit.rshift(a, 7), 7), 4)) end
  for _, d in ipairs({ 64, 128 }) do
    it(("the wgmma operands (descriptor offsets, LBO, SBO) read the elements the smem layouts hold (D = %d)"):format(d), function()
      local cfg = FA3.config({ d = d, stages = 2 })
      local L, O = FA3.smem_layouts(cfg), FA3.operands(cfg)
      local bad, n = {}, 0
      local function check(what, got, want)
        n = n + 1
        if got ~= want and #bad < 5 then bad[#bad + 1] = ("%s: byte %d, layout %d"):format(what, got, want) end
      end
      for kk = 0, d / 16 - 1 do
        for c = 0, 1 do -- Q: A of S = Q K^T, warpgroup c's rows
          local st = O.q.offset(c, kk)
          for m = 0, 63 do
            for k = 0, 15 do
              check(("Q c %d kk %d (%d,%d)"):format(c, kk, m, k),
                swz(st + math.floor(m / 8) * O.q.sbo + (m % 8) * 128 + 2 * k), 2 * L.q({ 64 * c + m, 16 * kk + k }))
            end
          end
        end
        for sg = 0, 1 do -- K: B of S = Q K^T (N = keys, K-major)
          local st = O.k.offset(sg, kk)
          for nn = 0, FA3.BN - 1 do
            for k = 0, 15 do
              check(("K stage %d kk %d (%d,%d)"):format(sg, kk, nn, k),
                swz(st + math.floor(nn / 8) * O.k.sbo + (nn % 8) * 128 + 2 * k), 2 * L.kv({ nn, 16 * kk + k, sg }))
            end
          end
        end
      end
      for kb = 0, FA3.BN / 16 - 1 do
        for sg = 0, 1 do -- V: B of O += P V (N = D, MN-major; K = keys)
          local st = O.v.offset(sg, kb)
          for nn = 0, d - 1 do
            for k = 0, 15 do
              check(("V stage %d kb %d (%d,%d)"):format(sg, kb, nn, k),
                swz(st + math.floor(nn / 64) * O.v.lbo + math.floor(k / 8) * O.v.sbo + (k % 8) * 128 + 2 * (nn % 64)),
                2 * L.kv({ 16 * kb + k, nn, sg }))
            end
          end
        end
      end
      assert.are.same({}, bad)
      assert.are.equal(d / 16 * (2 * 64 * 16 + 2 * FA3.BN * 16) + FA3.BN / 16 * 2 * d * 16, n)
    end)
  end

  it("bad configurations are errors at the caller's line", function()
    util.expect_error(function() FA3.make_kernel({ d = 96 }) end, "head dimension d = 96 (64 or 128)")
    util.expect_error(function() FA3.make_kernel({ d = 64, epilogue = "smem" }) end, "epilogue = smem (\"tma\"")
    util.expect_error(function() FA3.make_kernel({ d = 64, stage = 3 }) end, "unknown option stage (d, causal")
    util.expect_error(function() FA3.make_kernel({ d = 64, scale = -1 }) end, "scale = -1 (a positive finite number)")
    util.expect_error(function() FA3.make_kernel({ d = 128, stages = 4 }) end,
      "stages = 4 (an integer >= 1 whose Q, K and V buffers fit 227 KiB")
    util.expect_error(function() FA3.make_kernel({ d = 64, stages = 0 }) end, "stages = 0")
    util.expect_error(function() FA3.make_kernel({ d = 64, producer_regs = 20 }) end,
      "producer_regs = 20 (a multiple of 8 from 24 to 256)")
    util.expect_error(function() FA3.make_kernel({ d = 64, producer_regs = 56, consumer_regs = 240 }) end,
      "128 x 56 + 256 x 240 registers exceed the 65536 of an SM")
    local k64 = FA3.make_kernel({ d = 64 })
    local q = cute.tensor_spec({ 2, 200, 64 }, cute.bfloat16)
    util.expect_error(function() FA3.launcher(k64, { d = 64 }, q, q, cute.tensor_spec({ 2, 100, 64 }, cute.bfloat16), q) end,
      "tensor 3 (v) must be a bfloat16 (B*H, S, 64) tensor like q (2, 200, 64)")
    util.expect_error(function() FA3.launcher(k64, { d = 64 }, q, q, q, cute.tensor_spec({ 2, 200, 64 }, cute.float16)) end,
      "tensor 4 (o) must be a bfloat16")
  end)

  it("the CPU reference: equal keys give the mean of V; causal row 0 is V's row 0", function()
    local s, d = 3, 2
    local q, k, v = {}, {}, {}
    for i = 0, s * d - 1 do q[i], k[i], v[i] = 0.5, 0.25, i end
    assert.are.same({ [0] = 2, 3 }, FA3.reference_row(q, k, v, 0, 1, s, d, false, 1))
    assert.are.same({ [0] = 0, 1 }, FA3.reference_row(q, k, v, 0, 0, s, d, true, 1))
  end)

  for _, c in ipairs({ { 64, false }, { 64, true }, { 128, false }, { 128, true } }) do
    local d, causal = c[1], c[2]
    it(("PTX for D = %d%s: wgmma m64n128k16 (Q K^T) and m64n%dk16 (P V, A in registers, B transposed), TMA, " ..
      "try_wait.parity, setmaxnreg, elect.sync; ptxas sm_90a, 0 spill bytes"):format(d, causal and " causal" or "", d),
      function()
        local t0 = cute.now_us()
        local r = FA3.compile_spec({ d = d, causal = causal }, 2, 200, { cache = false })
        local ms = (cute.now_us() - t0) / 1e3
        print(("\n    flash_attention_sm90 D=%d%s cold compile %.1f ms (%s), %s registers"):format(d,
          causal and " causal" or "", ms, PTXAS and "trace -> cubin" or "trace -> PTX", tostring(r.info.regs)))
        local ptx = r.ptx
        -- S = Q K^T: D / 16 k-steps per block, issued at three places (first
        -- block, loop, ...): count the instruction kinds, not the unrolled total
        assert.is_true(count(ptx, "wgmma%.mma_async%.sync%.aligned%.m64n128k16%.f32%.bf16%.bf16 ") > 0, "Q K^T wgmma")
        local pv = ("wgmma%%.mma_async%%.sync%%.aligned%%.m64n%dk16%%.f32%%.bf16%%.bf16 [^\n]*{%%%%r"):format(d)
        assert.is_true(count(ptx, pv) > 0, "P V wgmma with A in registers")
        assert.is_true(util.has(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"),
          "TMA loads")
        assert.is_true(util.has(ptx, "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group"), "TMA store of O")
        assert.is_true(util.has(ptx, "mbarrier.try_wait.parity"), "mbarrier waits")
        assert.is_true(util.has(ptx, "setmaxnreg.inc.sync.aligned.u32 240"), "consumer setmaxnreg")
        assert.is_true(util.has(ptx, "setmaxnreg.dec.sync.aligned.u32 24"), "producer setmaxnreg")
        assert.is_true(util.has(ptx, "elect.sync"), "elect.sync")
        assert.is_true(util.has(ptx, "wgmma.wait_group.sync.aligned 1"), "softmax overlapped: wait_group 1")
        assert.is_true(util.has(ptx, "shfl.sync.bfly"), "quad shuffles")
        assert.is_true(util.has(ptx, "ex2.approx.ftz.f32"), "exp2")
        assert.is_false(util.has(ptx, ".local"), "no local memory")
        if PTXAS then
          assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
          assert.are.equal(0, r.info.spill_loads, r.ptxas_log)
        end
      end)
  end

  it("the variants the GPU spec runs (serial, no ping-pong, 3 stages, direct epilogue) compile for sm_90a with 0 spill bytes", function()
    for _, o in ipairs({ { overlap = false }, { pingpong = false }, { overlap = false, pingpong = false }, { stages = 3 },
      { epilogue = "direct" } }) do
      o.d, o.causal = 128, true
      local r = FA3.compile_spec(o, 6, 333)
      local name = ("%s%s s%d %s"):format(o.overlap == false and "serial " or "", o.pingpong == false and "no-pingpong" or "",
        o.stages or 2, o.epilogue or "tma")
      assert.is_true(util.has(r.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"), name)
      assert.are.equal(o.pingpong ~= false, util.has(r.ptx, "bar.arrive"), name .. ": named-barrier turns")
      assert.are.equal(o.overlap ~= false, util.has(r.ptx, "wgmma.wait_group.sync.aligned 1"), name .. ": overlap")
      assert.are.equal(o.epilogue ~= "direct", util.has(r.ptx, "cp.async.bulk.tensor.3d.global.shared::cta"), name)
      if PTXAS then
        assert.are.equal(0, r.info.spill_stores + r.info.spill_loads, name .. ": " .. r.ptxas_log)
      end
    end
  end)

  it("one compile serves every S: launches (a stub driver) pass the atoms, S and the run-time extents, grid and shared memory", function()
    local ffi = require("ffi")
    local K_ = require("cute.kernel")
    local launches = {}
    local driver, stub = util.stub_driver(function(fn, gx, gy, gz, bx, by, bz, smem, stream, params)
      local i32 = function(i) return ffi.cast("int32_t*", params[i])[0] end
      local b = ffi.cast("uint8_t*", params[0])
      launches[#launches + 1] = { grid = { gx, gy, gz }, block = bx * by * bz, smem = smem, q_byte = b[0],
        mQ = { i32(1), i32(2), i32(3) }, S = i32(12), o_byte = ffi.cast("uint8_t*", params[13])[0] }
    end)
    K_._use_driver(driver)
    local ok, err = pcall(function()
      local opts = { d = 128, causal = true }
      local k = FA3.make_kernel(opts):with{ arch = "sm_90a", use_ptxas = false }
      for n, s in ipairs({ 200, 4096 }) do
        local t = cute.tensor_spec({ 6, s, 128 }, cute.bfloat16)
        local args = FA3.kernel_args(FA3.config(opts), t, t, t, t)
        for _, i in ipairs({ 1, 3, 5, 8 }) do -- (specs have no address: stand in for the driver's encoding)
          args[i].encoded = true
          ffi.fill(args[i].desc, 128, 16 * n + i)
        end
        k:launch(FA3.launch_cfg(6, s))(unpack(args))
      end
    end)
    K_._use_driver(nil)
    assert(ok, err)
    assert.are.equal(1, stub.loads)
    assert.are.equal(2, #launches)
    for n, s in ipairs({ 200, 4096 }) do
      local l = launches[n]
      assert.are.same({ math.ceil(s / 128), 6, 1 }, l.grid)
      assert.are.equal(384, l.block)
      assert.are.equal(2 * 128 * (128 + 2 * 128 * 2), l.smem) -- Q + two stages of K and V
      assert.are.same({ s, 128, 6 }, l.mQ)
      assert.are.equal(s, l.S)
      assert.are.equal(16 * n + 1, l.q_byte)
      assert.are.equal(16 * n + 8, l.o_byte)
    end
  end)

  it("traced for sm_80 (or sm_90 without the a) it is an error naming the Hopper op and the arch, at the kernel's line", function()
    local e = util.err_of(function() FA3.compile_spec({ d = 64, arch = "sm_80" }, 1, 128) end)
    assert.is_truthy(e:find("needs sm_90", 1, true), e)
    assert.is_truthy(e:find("compiled for sm_80", 1, true), e)
    assert.is_truthy(e:find("flash_attention_sm90.lua:%d+: cute%."), e)
    e = util.err_of(function() FA3.compile_spec({ d = 64, arch = "sm_90" }, 1, 128) end)
    assert.is_truthy(e:find("sm_90a", 1, true), e)
    assert.is_truthy(e:find("compiled for sm_90", 1, true), e)
    assert.is_truthy(e:find("flash_attention_sm90.lua:%d+: cute%."), e)
  end)

  for _, s in ipairs({ 200, 333, 1024 }) do
    for _, d in ipairs({ 64, 128 }) do
      for _, causal in ipairs({ false, true }) do
        util.hopper_it(("B=1 H=2 S=%d D=%d%s against the CPU reference"):format(s, d, causal and " causal" or ""),
          function()
            local maxerr, rel = FA3.check({ d = d, causal = causal }, 1, 2, s)
            assert.is_true(rel < 1e-2, ("relative error %g"):format(rel))
            assert.is_true(maxerr < 3e-2, ("max abs error %g"):format(maxerr))
          end)
      end
    end
  end
  for _, v in ipairs({ { overlap = false }, { pingpong = false }, { overlap = false, pingpong = false }, { stages = 3 },
    { epilogue = "direct" } }) do
    local name = {}
    for k2, x in pairs(v) do name[#name + 1] = k2 .. " = " .. tostring(x) end
    util.hopper_it(("B=2 H=3 S=333 D=128 causal, %s against the CPU reference"):format(table.concat(name, ", ")), function()
      local opts = { d = 128, causal = true }
      for k2, x in pairs(v) do opts[k2] = x end
      local maxerr, rel = FA3.check(opts, 2, 3, 333)
      assert.is_true(rel < 1e-2 and maxerr < 3e-2, ("relative error %g, max abs error %g"):format(rel, maxerr))
    end)
  end
end)
