-- The Hopper GEMMs (docs/HOPPER.md, "Hopper GEMM walk-through"): examples/gemm_sm90.lua
-- (bf16) and examples/gemm_fp8_sm90.lua (e4m3).  Without a GPU: each configuration
-- compiles for sm_90a with run-time M, N, K; its PTX holds the Hopper machinery (wgmma,
-- TMA loads with multicast, mbarrier waits, setmaxnreg, elect.sync, cluster barriers),
-- ptxas assembles it with 0 spill bytes and no stack; the cold compile time is printed.
-- On an sm_90 GPU (#gpu): odd sizes against a CPU reference on every element, and
-- 4096^3 against CPU dot products on sampled elements.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has = util.has
local bf16, e4m3 = cute.bfloat16, cute.float8_e4m3fn
local PTXAS = C.cute_ptxas_path() ~= nil
local ex = dofile("examples/common.lua")
local example = ex.load

local count = util.count

-- compile the kernel gemm.args picks for tensor specs (no GPU: 66 clusters, an H100's)
local function compile(g, ab, c_dtype, beta, n)
  n = n or 1032
  local A, B = cute.tensor_spec({ 1000, 512 }, ab), cute.tensor_spec({ n, 512 }, ab)
  local k, _, ta, mA, tb, mB, c, al, be = g.args(A, B, cute.tensor_spec({ 1000, n }, c_dtype), 1, beta or 0, 66)
  k = k:with{ arch = "sm_90a", use_ptxas = PTXAS, cache = false }
  local t0 = cute.now_us()
  local r = k:compile(ta, mA, tb, mB, c, al, be)
  return r, (cute.now_us() - t0) / 1e3
end

local function check_ptx(r, g, instr)
  local ptx = r.ptx
  local c = g.cfg
  -- one wgmma per k-block of a k-tile and m64 atom of a warpgroup's tile, once: k-tile 0
  -- is not peeled off the loop (a second copy of the wgmmas cost ptxas ~18 % more work,
  -- docs/HOPPER.md "Compile time"); its first wgmma takes scale-d from the traced kt > 0
  -- (the #gpu specs check the sums). cfg.peel: k-tile 0 as a copy before the loop
  local n_wgmma = count(ptx, "wgmma%.mma_async%.sync%.aligned%." .. instr)
  assert.are.equal((c.peel and 2 or 1) * c.wgmma_per_ktile, n_wgmma)
  assert.is_true(has(ptx, "wgmma.fence.sync.aligned"))
  assert.is_true(has(ptx, "wgmma.commit_group.sync.aligned"))
  assert.is_true(has(ptx, "wgmma.wait_group.sync.aligned 1"))
  assert.is_true(has(ptx, "wgmma.wait_group.sync.aligned 0"))
  -- TMA: A plain, B multicast over the 2 x 1 cluster
  assert.is_true(has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global"))
  if c.cluster_m > 1 then
    assert.is_true(has(ptx, "multicast::cluster"))
    assert.is_true(has(ptx, "barrier.cluster.wait"))
  end
  assert.is_true(has(ptx, "mbarrier.try_wait.parity"))
  assert.is_true(has(ptx, "mbarrier.arrive.expect_tx") or has(ptx, "mbarrier.expect_tx"))
  assert.is_true(has(ptx, "prefetch.tensormap"))
  assert.is_true(has(ptx, "setmaxnreg.dec.sync.aligned.u32 40"))
  assert.is_true(has(ptx, "setmaxnreg.inc.sync.aligned.u32 232"))
  assert.is_true(has(ptx, "elect.sync"))
  assert.is_false(has(ptx, ".local"))
  if PTXAS then
    -- setmaxnreg needs the launch bounds (384 threads, 1 CTA per SM), else ptxas drops it
    assert.is_false(has(r.ptxas_log, "setmaxnreg' ignored"), r.ptxas_log)
    -- ptxas keeps the wgmma pipelined (no "wgmma.mma_async instructions are serialized")
    assert.is_false(has(r.ptxas_log, "serialized"), r.ptxas_log)
    assert.are.equal(0, r.info.spill_stores or 0)
    assert.are.equal(0, r.info.spill_loads or 0)
    assert.are.equal(0, r.info.stack or 0)
  end
end

-- the epilogue's staging tile: the threads of one tile's epilogue (all 256 consumer
-- threads, or one ping-pong warpgroup's 128) place each chunk's accumulators at their
-- coordinates, each staging element once per chunk
local function check_staging(g)
  local c = g.cfg
  local EPI_N, EP, BM, BN = c.epi_n, c.epi_row, c.bm, c.bn
  local seen, checked = {}, 0
  local k = cute.kernel(function(X)
    local buf = cute.make_shared_tensor(cute.make_layout(BM * EP), g.c_dtype)
    local sC = cute.make_tensor(buf, c.staging_layout)
    local crd0 = g.tiled_mma:get_slice(0):partition_C(cute.make_identity_tensor({ BM, BN }))
    for t = 0, c.epilogue_threads - 1 do
      local thr = g.tiled_mma:get_slice(t)
      local crd, st = thr:partition_C(cute.make_identity_tensor({ BM, BN })), thr:partition_C(sC)
      local L = cute.make_layout(st.layout.shape, st.layout.stride)
      for e = 0, cute.size(crd) - 1 do
        local r, col = crd[e][1], crd[e][2]
        local ch = math.floor(col / EPI_N)
        -- the example's chunk of e, from thread 0's column
        assert.are.equal(ch, math.floor(crd0[e][2] / EPI_N))
        local off = st.off + L(e)
        assert.are.equal(r * EP + col % EPI_N, off)
        local key = ch * 1e6 + off
        assert.is_nil(seen[key], "two accumulators on one staging element")
        seen[key] = true
        checked = checked + 1
      end
    end
  end, { arch = "sm_90a" })
  k:ir(cute.tensor_spec({ 4 }, cute.float32))
  assert.are.equal(BM * BN, checked)
end

describe("examples/gemm_sm90.lua (no GPU)", function()
  local m = example("gemm_sm90")
  for _, cfg in ipairs({ { bn = 256 }, { bn = 128 }, { bn = 256, cluster_m = 1 }, { bn = 256, peel = true } }) do
    it(("128x%d tile, cluster %d%s: wgmma / TMA / mbarrier / setmaxnreg in the PTX, ptxas sm_90a, 0 spills"):format(
      cfg.bn, cfg.cluster_m or 2, cfg.peel and ", k-tile 0 peeled" or ""), function()
      local g = m.make_gemm(cfg)
      assert.is_true(g.cfg.stages >= 4)
      local r, ms = compile(g, bf16, bf16)
      check_ptx(r, g, ("m64n%dk16%%.f32%%.bf16%%.bf16"):format(cfg.bn))
      print(("\n  gemm_sm90 128x%d s%d cluster %d: cold compile %.0f ms (%s), %s registers"):format(cfg.bn,
        g.cfg.stages, g.cfg.cluster_m, ms, PTXAS and "to the cubin" or "to PTX, no ptxas", tostring(r.info.regs)))
    end)
  end

  for _, cfg in ipairs({ { bn = 256 }, { bn = 128, c_dtype = cute.float32 } }) do
    it(("the epilogue's staging tile (BN %d, %s out): each chunk's accumulators fill it once, at their coordinates")
      :format(cfg.bn, (cfg.c_dtype or bf16).name), function()
      check_staging(m.make_gemm(cfg))
    end)
  end

  it("the kernels for beta ~= 0 and for C rows that are not 16-byte aligned assemble", function()
    local g = m.make_gemm{ bn = 256 }
    for _, v in ipairs({ { 0.5, 1032, "_beta" }, { 0, 1030, "_narrow" }, { 0.5, 1030, "_narrow_beta" } }) do
      local r = compile(g, bf16, bf16, v[1], v[2])
      assert.is_true(has(r.ptx, ".entry gemm_sm90_bfloat16_n256" .. v[3]))
      assert.are.equal(4, count(r.ptx, "wgmma%.mma_async%.sync"))
      -- the beta kernels read C; only the narrow one writes element by element
      assert.are.equal(v[1] ~= 0, has(r.ptx, "ld.global"))
      assert.are.equal(v[2] % 8 == 0, has(r.ptx, "st.global.v4"))
      if PTXAS and v[3] ~= "_narrow_beta" then assert.are.equal(0, r.info.spill_stores or 0) end
    end
  end)

  it("f16 in, f16 out", function()
    local g = m.make_gemm{ ab_dtype = cute.float16, c_dtype = cute.float16, bn = 128 }
    local r = compile(g, cute.float16, cute.float16)
    check_ptx(r, g, "m64n128k16%.f32%.f16%.f16")
  end)

  it("bad operands: errors at the caller's line naming the operand and the value", function()
    local g = m.make_gemm{ bn = 128 }
    local S = function(r, c, d, st) return cute.tensor_spec({ r, c }, d or bf16, st) end
    util.expect_error(function() g.args(S(64, 36), S(64, 36), S(64, 64), 1, 0, 66) end,
      "gemm_sm90", "K = 36", "multiple of 8")
    util.expect_error(function() g.launch(S(64, 64), S(64, 72), S(64, 64), 1, 0) end,
      "gemm_sm90", "A is 64 x 64 and B 64 x 72: their K differ")
    util.expect_error(function() g.args(S(64, 64), S(32, 64), S(64, 64), 1, 0, 66) end,
      "gemm_sm90", "C is 64 x 64; A B^T is 64 x 32")
    util.expect_error(function() g.args(S(64, 64, cute.float16), S(32, 64), S(64, 32), 1, 0, 66) end,
      "gemm_sm90", "A holds float16; this GEMM takes bfloat16")
    util.expect_error(function() g.args(S(64, 64, bf16, { 1, 64 }), S(32, 64), S(64, 32), 1, 0, 66) end,
      "gemm_sm90", "A (64 x 64, strides 1, 64) must be row-major")
    util.expect_error(function() m.make_gemm{ bn = 192 } end, "gemm_sm90: bn = 192: must be 128 or 256")
    util.expect_error(function() m.make_gemm{ bn = 256, stages = 5 } end, "gemm_sm90: stages = 5")
  end)
end)

-- the named barriers of a kernel: {"sync 1 256", ...} -> number of sites (the block
-- barrier "bar.sync 0" apart)
local function named_barriers(ptx)
  local seen = {}
  for kind, id, n in ptx:gmatch("bar%.(%a+)%s+(%d+),%s*(%d+);") do
    local key = kind .. " " .. id .. " " .. n
    seen[key] = (seen[key] or 0) + 1
  end
  return seen
end

local function keys(t)
  local k = {}
  for x in pairs(t) do k[#k + 1] = x end
  table.sort(k)
  return k
end

describe("examples/gemm_sm90.lua, schedule = \"pingpong\" (no GPU)", function()
  local m = example("gemm_sm90")
  local PP = {
    { bm = 64, bn = 256 }, { bm = 128, bn = 128 }, { bm = 64, bn = 256, cluster_m = 1 }, { bm = 64, bn = 128 } }
  for _, cfg in ipairs(PP) do
    it(("%dx%d tiles per warpgroup, cluster %d: wgmma / TMA / mbarrier / setmaxnreg, the turn barriers, ptxas sm_90a, "
      .. "0 spills"):format(cfg.bm, cfg.bn, cfg.cluster_m or 2), function()
      local c = { schedule = "pingpong" }
      for k, v in pairs(cfg) do c[k] = v end
      local g = m.make_gemm(c)
      assert.are.equal("pingpong", g.cfg.schedule)
      assert.is_true(g.cfg.stages >= 4)
      -- stages of (BM + BN) x 64 bf16 and a BM-row staging tile in 227 KiB
      assert.are.equal(math.min(8, math.floor((227 * 1024 - cfg.bm * 72 * 2 - 1152) / ((cfg.bm + cfg.bn) * 128))),
        g.cfg.stages)
      local r, ms = compile(g, bf16, bf16)
      assert.is_true(has(r.ptx, (".entry gemm_sm90_bfloat16_n%d_pingpong_m%d("):format(cfg.bn, cfg.bm)))
      check_ptx(r, g, ("m64n%dk16%%.f32%%.bf16%%.bf16"):format(cfg.bn))
      -- m64 atoms stacked: a 128-row tile issues two wgmma per k-block
      assert.are.equal(cfg.bm / 64 * 4, g.cfg.wgmma_per_ktile)
      -- the ordered turns: consumer warpgroup c waits (bar.sync, its 128 threads) on
      -- 1 + c for its mainloop and 3 + c for its epilogue, and passes them with bar.arrive
      -- on the other's (the other 128 of the 256); its epilogue's own barrier is 5 + c
      -- over 128 threads. Nothing else: no barrier over both warpgroups' epilogue
      local nb = named_barriers(r.ptx)
      assert.are.same({ "arrive 1 256", "arrive 2 256", "arrive 3 256", "arrive 4 256", "sync 1 256", "sync 2 256",
        "sync 3 256", "sync 4 256", "sync 5 128", "sync 6 128" }, keys(nb))
      -- warpgroup 1 opens both chains for warpgroup 0 before its loop: two more arrive
      -- sites on 1 and 3
      assert.is_true(nb["arrive 1 256"] >= 2 and nb["arrive 3 256"] >= 2)
      -- two 128-thread barriers per chunk of the epilogue (write, then read the staging tile)
      assert.are.equal(2 * g.cfg.bn / g.cfg.epi_n, nb["sync 5 128"])
      -- each stage is released by the 4 warps of one warpgroup per CTA of the cluster
      assert.are.equal(4, g.cfg.stage_warps)
      assert.are.equal(128, g.cfg.epilogue_threads)
      print(("\n  gemm_sm90 pingpong %dx%d s%d cluster %d: cold compile %.0f ms (%s), %s registers"):format(cfg.bm,
        cfg.bn, g.cfg.stages, g.cfg.cluster_m, ms, PTXAS and "to the cubin" or "to PTX, no ptxas",
        tostring(r.info.regs)))
    end)
  end

  it("the cooperative kernel keeps its one 256-thread epilogue barrier", function()
    local g = m.make_gemm{ bn = 128 }
    assert.are.equal("cooperative", g.cfg.schedule)
    assert.are.same({ "sync 1 256" }, keys(named_barriers(compile(g, bf16, bf16).ptx)))
  end)

  for _, cfg in ipairs({ { bm = 64, bn = 256 }, { bm = 128, bn = 128 }, { bm = 64, bn = 128, c_dtype = cute.float32 } }) do
    it(("the epilogue's staging tile (%dx%d per warpgroup, %s out): one warpgroup's chunks fill it once, at their " ..
      "coordinates"):format(cfg.bm, cfg.bn, (cfg.c_dtype or bf16).name), function()
      local c = { schedule = "pingpong" }
      for k, v in pairs(cfg) do c[k] = v end
      check_staging(m.make_gemm(c))
    end)
  end

  it("the kernels for beta ~= 0 and for C rows that are not 16-byte aligned assemble", function()
    local g = m.make_gemm{ schedule = "pingpong" }
    for _, v in ipairs({ { 0.5, 1032, "_beta" }, { 0, 1030, "_narrow" }, { 0.5, 1030, "_narrow_beta" } }) do
      local r = compile(g, bf16, bf16, v[1], v[2])
      assert.is_true(has(r.ptx, ".entry gemm_sm90_bfloat16_n256_pingpong_m64" .. v[3]))
      assert.are.equal(4, count(r.ptx, "wgmma%.mma_async%.sync"))
      assert.are.equal(v[1] ~= 0, has(r.ptx, "ld.global"))
      assert.are.equal(v[2] % 8 == 0, has(r.ptx, "st.global.v4"))
      -- (the narrow beta kernel spills, as the cooperative one does: docs/HOPPER.md)
      if PTXAS and v[3] ~= "_narrow_beta" then assert.are.equal(0, r.info.spill_stores or 0, v[3]) end
    end
  end)

  it("f16 in and out; fp8 e4m3 (gemm_fp8_sm90.lua) with bf16 and f32 out", function()
    local g = m.make_gemm{ schedule = "pingpong", bm = 128, bn = 128, ab_dtype = cute.float16, c_dtype = cute.float16 }
    check_ptx(compile(g, cute.float16, cute.float16), g, "m64n128k16%.f32%.f16%.f16")
    local fp8 = example("gemm_fp8_sm90")
    for _, out in ipairs({ bf16, cute.float32 }) do
      for _, t in ipairs({ { 64, 256 }, { 128, 128 } }) do
        local gf = fp8.make_gemm{ schedule = "pingpong", bm = t[1], bn = t[2], c_dtype = out }
        local r = compile(gf, e4m3, out)
        assert.is_true(has(r.ptx, ".entry gemm_fp8_sm90_" .. out.name .. "_pingpong_m" .. t[1]))
        check_ptx(r, gf, ("m64n%dk32%%.f32%%.e4m3%%.e4m3"):format(t[2]))
      end
    end
  end)

  it("bad configurations: errors at the caller's line naming the option and the value", function()
    util.expect_error(function() m.make_gemm{ schedule = "pingpong", bm = 128, bn = 256 } end,
      "gemm_sm90: bm = 128, bn = 256", "256 f32 registers per thread")
    util.expect_error(function() m.make_gemm{ schedule = "pingpong", bm = 96 } end,
      "gemm_sm90: bm = 96: a ping-pong tile is 64 or 128 rows")
    util.expect_error(function() m.make_gemm{ bm = 64 } end,
      "gemm_sm90: bm = 64: the cooperative schedule's tile is 128 rows")
    util.expect_error(function() m.make_gemm{ schedule = "ping-pong" } end,
      "gemm_sm90: schedule = ping-pong: must be \"cooperative\" or \"pingpong\"")
    util.expect_error(function() m.make_gemm{ schedule = "pingpong", stages = 6 } end, "gemm_sm90: stages = 6")
  end)
end)

describe("examples/gemm_fp8_sm90.lua (no GPU)", function()
  local m = example("gemm_fp8_sm90")
  for _, out in ipairs({ bf16, cute.float32 }) do
    it(("e4m3 in, %s out: wgmma m64n256k32 e4m3, ptxas sm_90a, 0 spills"):format(out.name), function()
      local g = m.make_gemm{ c_dtype = out }
      assert.are.equal(128, g.cfg.bk)
      local r, ms = compile(g, e4m3, out)
      check_ptx(r, g, "m64n256k32%.f32%.e4m3%.e4m3")
      print(("\n  gemm_fp8_sm90 (%s out): cold compile %.0f ms"):format(out.name, ms))
    end)
  end
end)

-- on the GPU ----------------------------------------------------------------------

-- gemm(A, B, C, alpha, beta) on random data, every element against the CPU reference;
-- clusters: launch that many persistent clusters (default: as many as the SMs hold)
local function check_all(g, ab, c_dtype, M, N, K, alpha, beta, tol, clusters)
  local A = cute.from_host(util.rand_floats(M * K), ab, { M, K })
  local B = cute.from_host(util.rand_floats(N * K), ab, { N, K })
  local Cm = cute.from_host(util.rand_floats(M * N), c_dtype, { M, N })
  local a, b, c0 = ex.host_values(A), ex.host_values(B), ex.host_values(Cm)
  if clusters then
    local k, cfg, ta, mA, tb, mB, c, al, be = g.args(A, B, Cm, alpha, beta, clusters)
    k:launch(cfg)(ta, mA, tb, mB, c, al, be)
  else
    g.launch(A, B, Cm, alpha, beta)
  end
  local bad = 0
  local err = ex.gemm_tn_compare(a, b, c0, ex.host_values(Cm), M, N, K, alpha, beta, 1, function(i, j, c, ref)
    if not (math.abs(c - ref) <= tol * (math.abs(ref) + 1)) then
      bad = bad + 1
      if bad <= 3 then print(("  C[%d][%d] = %g, expected %g"):format(i, j, c, ref)) end
    end
  end)
  A:free(); B:free(); Cm:free()
  assert.are.equal(0, bad, ("%s %dx%dx%d%s: %d elements off (rel. error %.3g)"):format(g.cfg.schedule, M, N, K,
    clusters and (", " .. clusters .. " clusters") or "", bad, err))
end

-- gemm(A, B, C, 1, 0) at n^3 on random data: 2,000 sampled elements against CPU dot products
local function check_sampled(g, n)
  local A = cute.from_host(util.rand_floats(n * n), bf16, { n, n })
  local B = cute.from_host(util.rand_floats(n * n), bf16, { n, n })
  local Cm = cute.zeros({ n, n }, bf16)
  g.launch(A, B, Cm, 1, 0)
  -- raw bf16 bits on the host; only the sampled rows are converted
  local a, b, c = A:to_host(), B:to_host(), Cm:to_host()
  local num = bf16.to_number
  local seed = 7
  for _ = 1, 2000 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    local i, j = seed % n, math.floor(seed / n) % n
    local s = 0
    for kk = 0, n - 1 do s = s + num(a[i * n + kk]) * num(b[j * n + kk]) end
    local got = num(c[i * n + j])
    assert(math.abs(got - s) <= 0.01 * math.abs(s) + 0.05,
      ("%s %dx%d: C[%d][%d] = %g, expected %g"):format(g.cfg.schedule, g.cfg.bm, g.cfg.bn, i, j, got, s))
  end
  A:free(); B:free(); Cm:free()
end

-- the fp8 GEMM (e4m3 in, out in C's dtype, scales 0.5 and 0.25) on odd sizes, every
-- element against a CPU reference
local function check_fp8(g, out)
  -- (the CPU target interprets every thread: CI's sizes there are smaller, still ragged)
  for _, s in ipairs(util.ci_size({ { 1000, 1030, 528 }, { 256, 128, 1024 } }, { { 200, 136, 192 } })) do
    local M, N, K = s[1], s[2], s[3]
    local A = cute.from_host(util.rand_floats(M * K, -4, 4), e4m3, { M, K })
    local B = cute.from_host(util.rand_floats(N * K, -4, 4), e4m3, { N, K })
    local Cm = cute.zeros({ M, N }, out)
    g.launch(A, B, Cm, 0.5, 0.25)
    local zero = setmetatable({}, { __index = function() return 0 end })
    local a, b = ex.host_values(A), ex.host_values(B)
    local bad, worst = 0, ""
    -- Hopper's fp8 wgmma accumulates with fewer fraction bits than f32 (the
    -- hardware's "fast accumulation"; measured on an H100: errors up to about
    -- 2^-13 of alpha * sum |a b|).  Tolerance: 2^-11 of that, plus the output
    -- dtype's rounding (bf16: 2^-8 relative; f32: 2^-20).
    ex.gemm_tn_compare(a, b, zero, ex.host_values(Cm), M, N, K, 0.125, 0, 1,
      function(i, j, c, ref)
        local sabs = 0
        for kk = 0, K - 1 do sabs = sabs + math.abs(a[i * K + kk] * b[j * K + kk]) end
        local tol = 0.125 * sabs * 2 ^ -11 + (out == bf16 and 2 ^ -8 or 2 ^ -20) * math.abs(ref)
        if not (math.abs(c - ref) <= tol) then
          bad = bad + 1
          worst = ("C[%d][%d] = %.6g, expected %.6g (tolerance %.3g)"):format(i, j, c, ref, tol)
        end
      end)
    A:free(); B:free(); Cm:free()
    assert.are.equal(0, bad, ("fp8 %s %dx%dx%d (%s out): %d elements off, e.g. %s"):format(g.cfg.schedule, M, N, K,
      out.name, bad, worst))
  end
end

-- every element of the bf16 gemm g at odd sizes, with alpha and beta and with beta = 0
local function check_odd_sizes(g)
  for _, s in ipairs(util.ci_size({ { 1000, 1030, 520 }, { 129, 257, 64 }, { 1, 1, 8 }, { 384, 512, 1024 } },
    { { 129, 257, 64 }, { 1, 1, 8 } })) do
    check_all(g, bf16, bf16, s[1], s[2], s[3], 0.75, -1.25, 0.02)
    check_all(g, bf16, bf16, s[1], s[2], s[3], 1.5, 0, 0.02)
  end
end

describe("examples/gemm_sm90.lua on an sm_90 GPU", function()
  local m = example("gemm_sm90")
  util.hopper_it("odd sizes, alpha and beta, every element against a CPU reference", function()
    for _, cfg in ipairs({ { bn = 256 }, { bn = 128 }, { bn = 256, cluster_m = 1 }, { bn = 256, peel = true } }) do
      check_odd_sizes(m.make_gemm(cfg))
    end
  end)

  local big = util.ci_size(4096, 256) -- (CI's size on the CPU target)
  util.hopper_it(big .. "^3: sampled elements against CPU dot products", function()
    check_sampled(m.make_gemm{ bn = 256 }, big)
  end)
end)

describe("examples/gemm_sm90.lua, schedule = \"pingpong\", on an sm_90 GPU", function()
  local m = example("gemm_sm90")
  local PP = { { bm = 64, bn = 256 }, { bm = 128, bn = 128 }, { bm = 64, bn = 256, cluster_m = 1 } }
  local function gemm(cfg)
    local c = { schedule = "pingpong" }
    for k, v in pairs(cfg) do c[k] = v end
    return m.make_gemm(c)
  end
  util.hopper_it("odd sizes, alpha and beta, every element against a CPU reference", function()
    for _, cfg in ipairs(PP) do check_odd_sizes(gemm(cfg)) end
  end)

  -- few persistent clusters: each CTA runs many tiles, both warpgroups take turns over
  -- odd and even numbers of them, and the ring's phases wrap many times with k-tile
  -- counts below, at and above the stage count (K = 64, 200, 520: 1, 4, 9 k-tiles of 64)
  util.hopper_it("odd sizes on 1, 3 and 7 clusters: many tiles per CTA, every element against a CPU reference", function()
    for _, cfg in ipairs(PP) do
      local g = gemm(cfg)
      local M, N = util.ci_size(1000, 300), util.ci_size(1030, 520) -- (several tiles a CTA either way)
      for _, clusters in ipairs({ 1, 3, 7 }) do
        check_all(g, bf16, bf16, M, N, util.ci_size(520, 200), 0.75, -1.25, 0.02, clusters)
        check_all(g, bf16, bf16, M, N, 64, 1.5, 0, 0.02, clusters)
        if not util.on_cpu_target() then check_all(g, bf16, bf16, M, N, 200, 1.5, 0.5, 0.02, clusters) end
        check_all(g, bf16, bf16, 129, 257, 64, 1.5, 0, 0.02, clusters)
      end
    end
  end)

  local big = util.ci_size(4096, 256) -- (CI's size on the CPU target)
  util.hopper_it(big .. "^3: sampled elements against CPU dot products", function()
    check_sampled(gemm{ bm = 64, bn = 256 }, big)
    check_sampled(gemm{ bm = 128, bn = 128 }, big)
  end)

  util.hopper_it("fp8 e4m3 (gemm_fp8_sm90.lua), bf16 and f32 out, every element against a CPU reference", function()
    local fp8 = example("gemm_fp8_sm90")
    for _, out in ipairs({ bf16, cute.float32 }) do
      for _, t in ipairs({ { 64, 256 }, { 128, 128 } }) do
        check_fp8(fp8.make_gemm{ schedule = "pingpong", bm = t[1], bn = t[2], c_dtype = out }, out)
      end
    end
  end)
end)

describe("examples/gemm_fp8_sm90.lua on an sm_90 GPU", function()
  local m = example("gemm_fp8_sm90")
  util.hopper_it("odd sizes, e4m3 in, bf16 and f32 out, scales, every element against a CPU reference", function()
    for _, out in ipairs({ bf16, cute.float32 }) do check_fp8(m.make_gemm{ c_dtype = out, bn = 128 }, out) end
  end)
end)
