-- The tensor-core GEMM examples (docs/TENSORCORE.md, "Walk-through: a multistage
-- bf16 GEMM"): without a GPU, each compiles for sm_80 and sm_90a, its PTX holds the
-- expected instructions in the expected numbers, ptxas assembles it with no local
-- memory and no spills; on the GPU (#gpu), odd sizes against a CPU reference.
local cute = require("cute")
local ffi = require("ffi")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has = util.has
local bf16 = cute.bfloat16
local PTXAS = C.cute_ptxas_path() ~= nil
local ex = dofile("examples/common.lua")
local example = ex.load

local count = util.count

local function dyn(t) return cute.dynamic(t, { index_bits = 32 }) end
local function spec2(r, c) return dyn(cute.tensor_spec({ r, c }, bf16)) end

-- gemm(A, B, C, 0.75, -1.25) on random bf16 data of one size, every element
-- against the reference on the rounded inputs (within 2% of |ref| + 1)
local function check_tn(gemm, M, N, K, what)
  local A = cute.from_host(util.rand_floats(M * K), bf16, { M, K })
  local B = cute.from_host(util.rand_floats(N * K), bf16, { N, K })
  local Cm = cute.from_host(util.rand_floats(M * N), bf16, { M, N })
  local a, b, c0 = ex.host_values(A), ex.host_values(B), ex.host_values(Cm)
  gemm(A, B, Cm, 0.75, -1.25)
  ex.gemm_tn_compare(a, b, c0, ex.host_values(Cm), M, N, K, 0.75, -1.25, 1, function(i, j, c, ref)
    if not (math.abs(c - ref) <= 0.02 * (math.abs(ref) + 1)) then
      error(("%s %dx%dx%d: C[%d][%d] = %g, expected %g"):format(what, M, N, K, i, j, c, ref))
    end
  end)
  A:free(); B:free(); Cm:free()
end

describe("examples/common.lua: the GEMM reference", function()
  it("gemm_tn_compare: 0 for the exact product, the relative error otherwise, NaN fails", function()
    -- A 2 x 3, B 2 x 3 (K-major), C0 2 x 2
    local a, b, c0 = { [0] = 1, 2, 3, 4, 5, 6 }, { [0] = 1, 0, -1, 2, 1, 0 }, { [0] = 1, 1, 1, 1 }
    -- A B^T = {{-2, 4}, {-2, 13}}; 2 (A B^T) - C0 = {{-5, 7}, {-5, 25}}
    local out = { [0] = -5, 7, -5, 25 }
    local seen = 0
    assert.are.equal(0, ex.gemm_tn_compare(a, b, c0, out, 2, 2, 3, 2, -1, 1, function() seen = seen + 1 end))
    assert.are.equal(4, seen)
    out[3] = 26
    local e = ex.gemm_tn_compare(a, b, c0, out, 2, 2, 3, 2, -1)
    assert.is_true(math.abs(e - 1 / math.sqrt(25 + 49 + 25 + 625)) < 1e-12)
    assert.are.equal(0, ex.gemm_tn_compare(a, b, c0, out, 2, 2, 3, 2, -1, 2)) -- every 2nd row: row 0 only
    out[0] = 0 / 0
    assert.are.equal(math.huge, ex.gemm_tn_compare(a, b, c0, out, 2, 2, 3, 2, -1))
  end)
end)


describe("examples/common.lua: an example as a module", function()
  it("load returns the module, passes the arguments and restores arg and CUTE_EXAMPLE_LIB", function()
    local saved = _G.arg
    local m = ex.load("gemm_bf16_arch.lua")
    assert.are.equal("function", type(m.make_gemm))
    assert.are.equal(saved, _G.arg)
    assert.is_nil(_G.CUTE_EXAMPLE_LIB)
    assert.are.equal("table", type(ex.load_kernel("transpose", { 64, 32 })))
  end)

  it("an example that fails or returns no module: its error, arg and CUTE_EXAMPLE_LIB restored", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir) == 0)
    local function write(name, text)
      local f = assert(io.open(dir .. "/" .. name .. ".lua", "w"))
      f:write(text)
      f:close()
    end
    write("bad", "assert(CUTE_EXAMPLE_LIB and arg[1] == '7' and arg[0]:match('bad%.lua$')); error('bad example', 0)")
    write("runs", "if CUTE_EXAMPLE_LIB then return 42 end")
    local ex2 = dofile("examples/common.lua")
    ex2.dir = dir .. "/"
    local saved = _G.arg
    _G.CUTE_EXAMPLE_LIB = "outer" -- (a nested load keeps the outer value)
    local ok, err = pcall(ex2.load, "bad", { 7 })
    local lib_after = _G.CUTE_EXAMPLE_LIB
    local ok2, err2 = pcall(ex2.load, "runs")
    _G.CUTE_EXAMPLE_LIB = nil
    os.execute("rm -rf " .. dir)
    assert.is_false(ok)
    assert.are.equal("bad example", err)
    assert.are.equal("outer", lib_after)
    assert.are.equal(saved, _G.arg)
    assert.is_false(ok2)
    assert.truthy(err2:find("runs.lua returned number, not its module", 1, true))
  end)

  util.gpu_it("square_operands: random n x n A and B in [-1, 1), a zero C of the other dtype", function()
    local A, B, Cm = ex.square_operands(48, bf16, cute.float32)
    for _, t in ipairs({ A, B, Cm }) do assert.are.same({ 48, 48 }, { t.shape[1], t.shape[2] }) end
    assert.are.equal(bf16.name, A.dtype.name)
    assert.are.equal(cute.float32.name, Cm.dtype.name)
    local a, b, c, distinct = A:to_table(), B:to_table(), Cm:to_table(), 0
    for i = 1, 48 * 48 do
      assert.is_true(a[i] >= -1 and a[i] <= 1 and b[i] >= -1 and b[i] <= 1, tostring(a[i]) .. " " .. tostring(b[i]))
      assert.are.equal(0, c[i])
      if a[i] ~= b[i] then distinct = distinct + 1 end
    end
    assert.is_true(distinct > 48 * 48 / 2, "A and B hold different values")
    for _, t in ipairs({ A, B, Cm }) do t:free() end
  end)
end)
describe("examples/gemm_bf16_arch.lua", function()
  local m = example("gemm_bf16_arch")
  for _, cfg in ipairs({ { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 },
                         { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 } }) do
    it(("%dx%d tile, %d stages: mma.sync / ldmatrix.x4 / cp.async.cg, assembled, no spills"):format(cfg.bm, cfg.bn,
      cfg.stages), function()
      local g = m.make_gemm(cfg)
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = g.kernel:with{ arch = arch, use_ptxas = PTXAS }:compile(spec2(1000, 264), spec2(777, 264),
          spec2(1000, 777), cute.Float32(1), cute.Float32(0))
        local ptx = r.ptx
        -- per k-tile and warp: (64/16) x (64/8) MMAs for each of the 4 k-blocks, 8 ldmatrix.x4
        -- per k-block; the k-loop body appears once (not unrolled by a dynamic trip count)
        assert.are.equal(128, count(ptx, "mma%.sync%.aligned%.m16n8k16%.row%.col%.f32%.bf16%.bf16%.f32"))
        assert.are.equal(32 + 8, count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16"))
        local per_tile = (cfg.bm + cfg.bn) * 64 / 8 / (cfg.warps_m * cfg.warps_n * 32)
        assert.are.equal(per_tile * cfg.stages, count(ptx, "cp%.async%.cg%.shared%.global"))
        assert.truthy(has(ptx, "cp.async.wait_group " .. (cfg.stages - 2)))
        assert.falsy(has(ptx, ".local"), arch .. ": local memory")
        if PTXAS then
          assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
          assert.are.equal(0, r.info.spill_loads, arch)
          assert.are.equal(0, r.info.stack or 0, arch)
        end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  util.gpu_it("odd sizes and alpha/beta against a CPU reference", function()
    -- (the CPU target interprets every thread: the largest size is left to the GPU)
    for _, sz in ipairs(util.ci_size({ { 1, 1, 8 }, { 130, 70, 72 }, { 257, 263, 200 } }, { { 1, 1, 8 }, { 130, 70, 72 } })) do
      for _, cfg in ipairs({ { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 },
                             { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 } }) do
        check_tn(m.make_gemm(cfg).launch, sz[1], sz[2], sz[3], ("%dx%d"):format(cfg.bm, cfg.bn))
      end
    end
  end)
end)

describe("examples/gemm_bf16.lua (CuTe vocabulary, run-time M, N, K)", function()
  local m = example("gemm_bf16")
  local function spec_d(r, c, div)
    return cute.dynamic(cute.tensor_spec({ r, c }, bf16), { divisibility = div, index_bits = 32 })
  end
  for _, cfg in ipairs({ { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 },
                         { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 } }) do
    it(("%dx%d tile, %d stages: one compile for all sizes; mma.sync / ldmatrix.x4 / cp.async.cg / 16-byte stores, " ..
      "assembled"):format(cfg.bm, cfg.bn, cfg.stages), function()
      local g = m.make_gemm(cfg)
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        for _, wide in ipairs({ true, false }) do
          local k = wide and g.kernel or g.kernel_narrow
          local r = k:with{ arch = arch, use_ptxas = PTXAS }:compile(spec_d(1000, 264, 8), spec_d(776, 264, 8),
            spec_d(1000, 776, wide and 8 or nil), cute.Float32(1), cute.Float32(0))
          local ptx = r.ptx
          assert.truthy(has(ptx, "A_stride1") and has(ptx, "B_stride1") and has(ptx, "Cm_stride1"), "run-time strides")
          assert.are.equal(128, count(ptx, "mma%.sync%.aligned%.m16n8k16%.row%.col%.f32%.bf16%.bf16%.f32"))
          assert.are.equal(32 + 8, count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16"))
          local per_tile = (cfg.bm + cfg.bn) * 64 / 8 / (cfg.warps_m * cfg.warps_n * 32)
          assert.are.equal(per_tile * (cfg.stages - 1) + per_tile, count(ptx, "cp%.async%.cg%.shared%.global[^\n]*16,"))
          local chunks = cfg.bm * cfg.bn / 8 / (cfg.warps_m * cfg.warps_n * 32)
          assert.are.equal(wide and chunks or 0, count(ptx, "st%.global%.v4"))
          assert.are.equal(wide and 0 or 8 * chunks, count(ptx, "st%.global%.b16"))
          assert.falsy(has(ptx, ".local"), arch .. ": local memory")
          if PTXAS then
            assert.truthy(r.cubin, arch .. ": " .. tostring(r.ptxas_log))
            assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
            assert.are.equal(0, r.info.stack or 0, arch)
          end
        end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  util.gpu_it("odd sizes (one compile each for wide and narrow C) and alpha/beta against a CPU reference", function()
    local g = m.make_gemm{ bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 }
    for _, sz in ipairs(util.ci_size({ { 1, 1, 8 }, { 130, 70, 72 }, { 257, 263, 200 }, { 136, 72, 64 }, { 300, 264, 328 } },
      { { 1, 1, 8 }, { 130, 70, 72 }, { 136, 72, 64 } })) do
      check_tn(g.launch, sz[1], sz[2], sz[3], "gemm_bf16")
    end
    -- K not a multiple of 8: an error at the launch, never a launch
    local A, B, Cm = cute.zeros({ 16, 12 }, bf16), cute.zeros({ 16, 12 }, bf16), cute.zeros({ 16, 16 }, bf16)
    local ok, e = pcall(g.launch, A, B, Cm, 1, 0)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("is 12, not a multiple of 8", 1, true), tostring(e))
    A:free(); B:free(); Cm:free()
  end)
end)

-- The multistage tf32 and int8 GEMMs (examples/gemm_multistage.lua, used by
-- examples/gemm_tf32_multistage.lua and gemm_int8_multistage.lua)
local MS = dofile("examples/gemm_multistage.lua")
local CFGS = { { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 },
               { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 } }
local function with(cfg, extra)
  local c = {}
  for k, v in pairs(cfg) do c[k] = v end
  for k, v in pairs(extra) do c[k] = v end
  return c
end

local function check_build(r, arch)
  assert.falsy(has(r.ptx, ".local"), arch .. ": local memory")
  if PTXAS then
    assert.truthy(r.cubin, arch .. ": no cubin")
    assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
    assert.are.equal(0, r.info.spill_loads, arch)
    assert.are.equal(0, r.info.stack or 0, arch)
  end
end

describe("examples/gemm_multistage.lua: tf32", function()
  local MMA = "mma%.sync%.aligned%.m16n8k8%.row%.col%.f32%.tf32%.tf32%.f32"
  for _, cfg in ipairs(CFGS) do
    it(("%dx%d tile, %d stages: mma.sync tf32 / ldmatrix.x4 / cp.async.cg, no cvt, assembled, no spills"):format(cfg.bm,
      cfg.bn, cfg.stages), function()
      local g = MS.make_gemm(with(cfg, { kind = "tf32" }))
      assert.are.equal(32, g.cfg.bk)
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = g.kernel:with{ arch = arch, use_ptxas = PTXAS }:compile(g.specs(1000, 776, 264))
        local ptx = r.ptx
        -- per warp and k-tile: (64/16) x (64/8) MMAs for each of the 4 k-blocks of 8; per k-block
        -- 4 ldmatrix.x4 for A (16 x 8 tf32 each) and 4 for B (16 n x 8 k); no read across k-tiles
        assert.are.equal(128, count(ptx, MMA))
        assert.are.equal(32, count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16"))
        local per_tile = (cfg.bm + cfg.bn) * 8 / (cfg.warps_m * cfg.warps_n * 32)
        assert.are.equal(per_tile * cfg.stages, count(ptx, "cp%.async%.cg%.shared%.global %[%%r%d+%], %[%%rd%d+%], 16"))
        assert.truthy(has(ptx, "cp.async.wait_group " .. (cfg.stages - 2)))
        -- the f32 bits reach the MMA untouched (truncation by the tensor core)
        assert.are.equal(0, count(ptx, "cvt%.rna%.tf32%.f32"))
        -- the epilogue: 16-byte stores of 4 f32 (N = 776: rows are 16-byte aligned)
        assert.truthy(ptx:find("st%.global%.v4%.[bfu]32") ~= nil, arch)
        check_build(r, arch)
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  it("prefetch_across: the next k-tile's first k-block read ahead (128x256, 4 stages), no spills", function()
    local g = MS.make_gemm{ kind = "tf32", prefetch_across = true }
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = g.kernel:with{ arch = arch, use_ptxas = PTXAS }:compile(g.specs(1000, 776, 264))
      assert.are.equal(128, count(r.ptx, MMA))
      assert.are.equal(32 + 8, count(r.ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16"))
      check_build(r, arch)
    end
  end)

  it("tf32_round = \"rna\": one cvt.rna.tf32.f32 per fragment value read", function()
    local g = MS.make_gemm{ kind = "tf32", tf32_round = "rna" }
    local r = g.kernel:with{ arch = "sm_80", use_ptxas = PTXAS }:compile(g.specs(1000, 776, 264))
    -- per k-block a thread holds 16 A values (4 MMA_M x 4) and 16 B values (8 MMA_N x 2); 4 k-blocks
    assert.are.equal(4 * 32, count(r.ptx, "cvt%.rna%.tf32%.f32"))
    check_build(r, "sm_80")
  end)

  it("bad configurations are errors naming them, at the caller's line", function()
    util.expect_error(function() MS.make_gemm{ kind = "fp16" } end, "gemm_multistage: kind = fp16")
    util.expect_error(function() MS.make_gemm{ kind = "int8", tf32_round = "rna" } end, "tf32_round = rna", "is int8")
    util.expect_error(function() MS.make_gemm{ kind = "int8", b_dtype = cute.int16 } end, "b_dtype = int16")
    util.expect_error(function() MS.make_gemm{ kind = "tf32", bm = 72 } end, "bm = 72", "16 x warps_m = 32")
  end)

  util.gpu_it("odd sizes and alpha/beta against a CPU reference (truncated inputs; rna; prefetch_across)", function()
    local bits = ffi.new("union { uint32_t u; float f; }")
    local dt = require("cute.dtype")
    local function trunc(x) bits.f = x; bits.u = bit.band(bits.u, 0xffffe000) % 2 ^ 32; return bits.f end
    local function rna(x) return dt.tf32_to_float(dt.float_to_tf32(x)) end
    for _, sz in ipairs(util.ci_size({ { 1, 1, 4 }, { 130, 70, 72 }, { 257, 263, 204 } }, { { 1, 1, 4 }, { 130, 70, 72 } })) do
      local M, N, K = sz[1], sz[2], sz[3]
      for ci, cfg in ipairs(CFGS) do
        for _, v in ipairs({ { "truncate" }, { "rna" }, { "truncate", true } }) do
          local mode = v[1]
          local round = mode == "rna" and rna or trunc
          local g = MS.make_gemm(with(cfg, { kind = "tf32", tf32_round = mode, prefetch_across = v[2] }))
          local ha, hb, hc = util.rand_floats(M * K), util.rand_floats(N * K), util.rand_floats(M * N)
          local A, B = cute.from_host(ha, cute.float32, { M, K }), cute.from_host(hb, cute.float32, { N, K })
          local Cm = cute.from_host(hc, cute.float32, { M, N })
          g.launch(A, B, Cm, 0.75, -1.25)
          local c = Cm:to_host()
          for i = 0, M - 1 do
            for j = 0, N - 1 do
              local s, mag = 0, 0
              for k = 0, K - 1 do
                local p = round(ha[i * K + k]) * round(hb[j * K + k])
                s, mag = s + p, mag + math.abs(p)
              end
              local ref = 0.75 * s - 1.25 * hc[i * N + j]
              local tol = 2 ^ -16 * (0.75 * mag + 1.25 * math.abs(hc[i * N + j])) + 1e-30
              if not (math.abs(c[i * N + j] - ref) <= tol) then
                error(("tf32 %s %dx%dx%d cfg %d: C[%d][%d] = %.9g, expected %.9g (tolerance %.3g)"):format(mode, M, N, K,
                  ci, i, j, c[i * N + j], ref, tol))
              end
            end
          end
          A:free(); B:free(); Cm:free()
        end
      end
    end
  end)
end)

describe("examples/gemm_multistage.lua: int8", function()
  for _, cfg in ipairs(CFGS) do
    for _, b in ipairs({ cute.int8, cute.uint8 }) do
      it(("%dx%d tile, %d stages, int8 x %s: mma.sync m16n8k32 / ldmatrix.x4 / cp.async.cg, assembled, no spills"):format(
        cfg.bm, cfg.bn, cfg.stages, b.name), function()
        local g = MS.make_gemm(with(cfg, { kind = "int8", b_dtype = b }))
        assert.are.equal(128, g.cfg.bk)
        local MMA = "mma%.sync%.aligned%.m16n8k32%.row%.col%.satfinite%.s32%.s8%." .. (b == cute.int8 and "s8" or "u8") .. "%.s32"
        for _, arch in ipairs({ "sm_80", "sm_90a" }) do
          local r = g.kernel:with{ arch = arch, use_ptxas = PTXAS }:compile(g.specs(1000, 776, 1040))
          local ptx = r.ptx
          -- per warp and k-tile: (64/16) x (64/8) MMAs for each of the 4 k-blocks of 32; per k-block
          -- 4 ldmatrix.x4 for A (16 x 32 int8) and 4 for B (16 n x 32 k); no read across k-tiles
          assert.are.equal(128, count(ptx, MMA))
          assert.are.equal(32, count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16"))
          local per_tile = (cfg.bm + cfg.bn) * 8 / (cfg.warps_m * cfg.warps_n * 32)
          assert.are.equal(per_tile * cfg.stages, count(ptx, "cp%.async%.cg%.shared%.global %[%%r%d+%], %[%%rd%d+%], 16"))
          assert.truthy(has(ptx, "cp.async.wait_group " .. (cfg.stages - 2)))
          assert.truthy(ptx:find("st%.global%.v4%.[bsu]32") ~= nil, arch)
          check_build(r, arch)
        end
        if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
      end)
    end
  end

  util.gpu_it("odd sizes and alpha/beta against a CPU reference, exactly (int8 x int8, int8 x uint8)", function()
    for _, sz in ipairs(util.ci_size({ { 1, 1, 16 }, { 130, 70, 80 }, { 257, 263, 208 } }, { { 1, 1, 16 }, { 130, 70, 80 } })) do
      local M, N, K = sz[1], sz[2], sz[3]
      for ci, cfg in ipairs(CFGS) do
        for _, bdt in ipairs({ cute.int8, cute.uint8 }) do
          local g = MS.make_gemm(with(cfg, { kind = "int8", b_dtype = bdt }))
          local ha, hb, hc, ta, tb, tc = {}, {}, {}, {}, {}, {}
          for i = 0, M * K - 1 do ha[i] = math.random(-128, 127); ta[i + 1] = ha[i] end
          for i = 0, N * K - 1 do
            hb[i] = bdt == cute.uint8 and math.random(0, 255) or math.random(-128, 127); tb[i + 1] = hb[i]
          end
          for i = 0, M * N - 1 do hc[i] = math.random(-100000, 100000); tc[i + 1] = hc[i] end
          local A, B = cute.from_host(ta, cute.int8, { M, K }), cute.from_host(tb, bdt, { N, K })
          local Cm = cute.from_host(tc, cute.int32, { M, N })
          g.launch(A, B, Cm, 3, -2)
          local c = Cm:to_host()
          for i = 0, M - 1 do
            for j = 0, N - 1 do
              local s = 0
              for k = 0, K - 1 do s = s + ha[i * K + k] * hb[j * K + k] end
              local ref = 3 * s - 2 * hc[i * N + j]
              if c[i * N + j] ~= ref then
                error(("int8 x %s %dx%dx%d cfg %d: C[%d][%d] = %d, expected %d"):format(bdt.name, M, N, K, ci, i, j,
                  c[i * N + j], ref))
              end
            end
          end
          A:free(); B:free(); Cm:free()
        end
      end
    end
  end)
end)
