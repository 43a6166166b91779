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

local function example(name)
  -- (the example's chunk runs in the global environment, not the spec's)
  local saved = _G.arg
  _G.arg = { [0] = "examples/" .. name .. ".lua" }
  _G.CUTE_EXAMPLE_LIB = true
  local ok, m = pcall(dofile, _G.arg[0])
  _G.CUTE_EXAMPLE_LIB = nil
  _G.arg = saved
  assert(ok, m)
  return m
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

local function dyn(t) return cute.dynamic(t, { index_bits = 32 }) end
local function spec2(r, c) return dyn(cute.tensor_spec({ r, c }, bf16)) end

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
    local bits = ffi.new("union { uint32_t u; float f; }")
    local function to_f32(h, n)
      local o = ffi.new("float[?]", n)
      for i = 0, n - 1 do bits.u = bit.lshift(h[i], 16); o[i] = bits.f end
      return o
    end
    for _, sz in ipairs({ { 1, 1, 8 }, { 130, 70, 72 }, { 257, 263, 200 } }) do
      local M, N, K = sz[1], sz[2], sz[3]
      for _, cfg in ipairs({ { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 },
                             { bm = 128, bn = 256, warps_m = 2, warps_n = 4, stages = 4 } }) do
        local g = m.make_gemm(cfg)
        local A = cute.from_host(util.rand_floats(M * K), bf16, { M, K })
        local B = cute.from_host(util.rand_floats(N * K), bf16, { N, K })
        local Cm = cute.from_host(util.rand_floats(M * N), bf16, { M, N })
        local a, b, c0 = to_f32(A:to_host(), M * K), to_f32(B:to_host(), N * K), to_f32(Cm:to_host(), M * N)
        g.launch(A, B, Cm, 0.75, -1.25)
        local c = to_f32(Cm:to_host(), M * N)
        for i = 0, M - 1 do
          for j = 0, N - 1 do
            local s = 0
            for k = 0, K - 1 do s = s + a[i * K + k] * b[j * K + k] end
            local ref = 0.75 * s + -1.25 * c0[i * N + j]
            local tol = 0.02 * (math.abs(ref) + 1)
            if math.abs(c[i * N + j] - ref) > tol then
              error(("%dx%dx%d %dx%d: C[%d][%d] = %g, expected %g"):format(M, N, K, cfg.bm, cfg.bn, i, j,
                c[i * N + j], ref))
            end
          end
        end
        A:free(); B:free(); Cm:free()
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
    local bits = ffi.new("union { uint32_t u; float f; }")
    local function to_f32(h, n)
      local o = ffi.new("float[?]", n)
      for i = 0, n - 1 do bits.u = bit.lshift(h[i], 16); o[i] = bits.f end
      return o
    end
    local cfg = { bm = 128, bn = 128, warps_m = 2, warps_n = 2, stages = 3 }
    local g = m.make_gemm(cfg)
    for _, sz in ipairs({ { 1, 1, 8 }, { 130, 70, 72 }, { 257, 263, 200 }, { 136, 72, 64 }, { 300, 264, 328 } }) do
      local M, N, K = sz[1], sz[2], sz[3]
      local A = cute.from_host(util.rand_floats(M * K), bf16, { M, K })
      local B = cute.from_host(util.rand_floats(N * K), bf16, { N, K })
      local Cm = cute.from_host(util.rand_floats(M * N), bf16, { M, N })
      local a, b, c0 = to_f32(A:to_host(), M * K), to_f32(B:to_host(), N * K), to_f32(Cm:to_host(), M * N)
      g.launch(A, B, Cm, 0.75, -1.25)
      local c = to_f32(Cm:to_host(), M * N)
      for i = 0, M - 1 do
        for j = 0, N - 1 do
          local s = 0
          for k = 0, K - 1 do s = s + a[i * K + k] * b[j * K + k] end
          local ref = 0.75 * s + -1.25 * c0[i * N + j]
          if math.abs(c[i * N + j] - ref) > 0.02 * (math.abs(ref) + 1) then
            error(("%dx%dx%d: C[%d][%d] = %g, expected %g"):format(M, N, K, i, j, c[i * N + j], ref))
          end
        end
      end
      A:free(); B:free(); Cm:free()
    end
    -- K not a multiple of 8: an error at the launch, never a launch
    local A, B, Cm = cute.zeros({ 16, 12 }, bf16), cute.zeros({ 16, 12 }, bf16), cute.zeros({ 16, 16 }, bf16)
    local ok, e = pcall(g.launch, A, B, Cm, 1, 0)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("is 12, not a multiple of 8", 1, true), tostring(e))
    A:free(); B:free(); Cm:free()
  end)
end)
