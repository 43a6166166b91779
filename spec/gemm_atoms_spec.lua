-- cute.gemm for every MMA atom without a GPU (docs/TENSORCORE.md, "cute.gemm
-- for every atom"): a 2 x 2-warp tiled MMA over a 64 x 64 tile issues exactly
-- the atom's instruction once per (m, n, k) step, the kernels assemble for the
-- atom's arch and sm_90a with no spills and no local memory, 8-bit values are
-- packed four to a register in the ISA's order, f32 filling a tf32 fragment
-- rounds with cvt.rna, and bad input is an error at the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local ag = dofile("spec/support/atom_gemm.lua")
local ts = cute.tensor_spec
local warp = cute.nvgpu.warp
local f32, bf16, i8, u8, i32 = cute.float32, cute.bfloat16, cute.int8, cute.uint8, cute.int32

local THIS = "spec/gemm_atoms_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil

local count = util.count_plain

local function ptx_version(a) return math.floor(tonumber(a.min_ptx) * 10 + 0.5) end

describe("cute.gemm for every atom: PTX and ptxas", function()
  for _, c in ipairs(ag.cases) do
    it(c.name .. ": 2 x 2-warp-sized tiled MMA, 64 x 64 tile, for the atom's arch and sm_90a, no spills", function()
      local tm = ag.tiled_mma(c)
      local atom = tm.atom
      local Kk = c.k or 64
      local ts_ = tm.tile_size_mnk
      local steps = (64 / ts_[1]) * (64 / ts_[2]) * (Kk / ts_[3])
      local k = ag.kernel(tm)
      for _, arch in ipairs({ atom.min_arch == "sm_60" and "sm_80" or atom.min_arch, "sm_90a" }) do
        local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 })
          :compile(ts({ 64, Kk }, c.a), ts({ 64, Kk }, c.b), ts({ 64, 64 }, c.c))
        local n_instr = count(r.ptx, atom.instruction .. " ")
        -- integer a * b + c with c the constant 0 of fill(0) (the first k step) folds to a multiply
        if atom.instruction == "mad.lo.s32" then n_instr = n_instr + count(r.ptx, "mul.lo.s32 ") end
        assert.are.equal(steps, n_instr, arch .. ": " .. atom.instruction)
        if atom.op.kind ~= "universal" then assert.are.equal(steps, count(r.ptx, "mma.sync"), arch) end
        assert.falsy(util.has(r.ptx, ".local"), arch .. ": local memory")
        if atom.op.kind == "fp8" then
          assert.truthy(r.ptx:find("%.version 8%.[4-9]"), "fp8 mma needs PTX 8.4: " .. r.ptx:sub(1, 400))
        end
        if PTXAS then
          assert.truthy(r.cubin, arch)
          assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
          assert.are.equal(0, r.info.spill_loads, arch)
        end
      end
      -- the run-time-size kernel with its loop over K tiles compiles too
      local dk = ag.tiled_kernel(tm, 64, 64, Kk)
      local dyn = function(s) return cute.dynamic(s) end
      local r = dk:with({ arch = "sm_90a", use_ptxas = PTXAS, opt_level = 3 })
        :compile(dyn(ts({ 128, 128 }, c.a)), dyn(ts({ 128, 128 }, c.b)), dyn(ts({ 128, 128 }, c.c)), cute.Int32(2))
      assert.are.equal(steps, count(r.ptx, atom.instruction .. " "), "the K loop's body")
      if PTXAS then assert.are.equal(0, r.info.spill_stores, tostring(r.ptxas_log)) end
    end)
  end
  if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end

  it("tf32: f32 values filling a tfloat32 fragment are rounded with cvt.rna.tf32.f32 (one per value)", function()
    local tm = cute.make_tiled_mma(warp.MmaTF32Op({ 16, 8, 8 }), { 1, 1, 1 })
    local r = ag.kernel(tm):with({ arch = "sm_80", opt_level = 3 })
      :compile(ts({ 16, 8 }, f32), ts({ 8, 8 }, f32), ts({ 16, 8 }, f32))
    -- 4 A values and 2 B values per thread
    assert.are.equal(6, count(r.ptx, "cvt.rna.tf32.f32"), r.ptx)
    assert.are.equal(1, count(r.ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"))
  end)

  -- register -> immediate from the PTX's mov.b32 lines; the registers of the
  -- operand groups of the mma.sync line
  local function mma_operands(ptx)
    local imm = {}
    for reg, v in ptx:gmatch("mov%.b32%s+(%%r%d+),%s*(%-?%d+);") do imm[reg] = tonumber(v) end
    local line = ptx:match("mma%.sync[^\n]*")
    local groups = {}
    for g in line:gmatch("{([^}]*)}") do
      local vals = {}
      for reg in g:gmatch("%%r%d+") do vals[#vals + 1] = imm[reg] end
      groups[#groups + 1] = vals
    end
    return groups
  end
  local function word(bytes, i) -- bytes[i..i+3] (0-based), the first in the low bits, as a signed i32
    local w = 0
    for j = 3, 0, -1 do w = w * 256 + bytes[i + j] % 256 end
    return w >= 2 ^ 31 and w - 2 ^ 32 or w
  end

  for _, shp in ipairs({ 32, 16 }) do
    it(("int8 m16n8k%d: value i of the fragment is byte i %% 4 of register i / 4 (the ISA's a0..a3 low first)")
      :format(shp), function()
      local tm = cute.make_tiled_mma(warp.MmaI8Op(i8, u8, i32, { 16, 8, shp }), { 1, 1, 1 })
      local na, nb = 16 * shp / 32, 8 * shp / 32
      local k = cute.kernel(function(Cm)
        local thr = tm:get_slice(cute.arch.thread_idx())
        local tCgC = thr:partition_C(Cm)
        local rA, rB = thr:make_fragment_A({ na, 1, 1 }), thr:make_fragment_B({ nb, 1, 1 })
        local rC = thr:make_fragment_C(tCgC)
        for i = 0, na - 1 do rA[i] = 3 * i - 20 end
        for i = 0, nb - 1 do rB[i] = 200 + 7 * i end
        rC:fill(0)
        cute.gemm(tm, rC, rA, rB, rC)
        cute.copy(rC, tCgC)
      end, { name = "pack8" })
      local r = k:with({ arch = "sm_80", opt_level = 3 }):compile(ts({ 16, 8 }, i32))
      local g = mma_operands(r.ptx)
      local A, B = {}, {}
      for i = 0, na - 1 do A[i] = 3 * i - 20 end
      for i = 0, nb - 1 do B[i] = 200 + 7 * i end
      local wantA, wantB = {}, {}
      for i = 0, na / 4 - 1 do wantA[i + 1] = word(A, 4 * i) end
      for i = 0, nb / 4 - 1 do wantB[i + 1] = word(B, 4 * i) end
      assert.are.same(wantA, g[2])
      assert.are.same(wantB, g[3])
    end)
  end
end)

describe("the tiled-MMA GEMM examples compile", function()
  local ex = dofile("examples/common.lua")
  local dyn = function(x) return cute.dynamic(x) end
  for _, e in ipairs({ { "gemm_tf32", f32, f32, f32, "sm_80", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 32 },
                       { "gemm_int8", i8, u8, i32, "sm_80", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32", 8 },
                       { "gemm_fp8", cute.float8_e4m3fn, cute.float8_e4m3fn, f32, "sm_89",
                         "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 8 } }) do
    it(("examples/%s.lua: %d x %s per K tile, assembled for %s and sm_90a"):format(e[1], e[7], e[6], e[5]), function()
      local k = ex.load_kernel(e[1], { 100, 70, 90 })
      for _, arch in ipairs({ e[5], "sm_90a" }) do
        local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(dyn(ts({ 100, 90 }, e[2])),
          dyn(ts({ 70, 90 }, e[3])), dyn(ts({ 100, 70 }, e[4])), cute.Int32(100), cute.Int32(70), cute.Int32(90),
          cute.Int32(2))
        assert.are.equal(e[7], count(r.ptx, e[6] .. " "), arch)
        assert.falsy(util.has(r.ptx, ".local"), arch)
        -- tf32 stages its f32 tiles with 4-byte cp.async (src-size 0 past the matrix)
        assert.are.equal(e[1] == "gemm_tf32", util.has(r.ptx, "cp.async.ca.shared.global"), arch)
        if PTXAS then assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log)) end
      end
    end)
  end
end)

local trace_error = util.trace_error
local function at_line(e, marker) util.at_line(THIS, e, marker) end
local function has(e, s) assert.truthy(util.has(e, s), e) end

describe("cute.gemm for every atom: errors at the user's line", function()
  it("fp8 for a target below sm_89 names the op and the arch", function()
    local tm = cute.make_tiled_mma(warp.MmaFP8Op("float8_e4m3fn", f32, { 16, 8, 32 }), { 1, 1, 1 })
    local k = cute.kernel(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local a, b, c = thr:partition_fragment_A(A), thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm, c, a, b, c) -- MARK_FP8ARCH
    end, { name = "fp8_80" })
    local ok, e = pcall(function()
      k:with({ arch = "sm_80" }):compile(ts({ 16, 32 }, cute.float8_e4m3fn), ts({ 8, 32 }, cute.float8_e4m3fn),
        ts({ 16, 8 }, f32))
    end)
    assert.is_false(ok)
    e = tostring(e)
    at_line(e, "MARK_FP8ARCH")
    has(e, "cute.gemm: cute.nvgpu.warp.MmaFP8Op (mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32) needs " ..
      "sm_89 or newer; the kernel is compiled for sm_80")
  end)

  it("fp8 with f16 accumulators needs PTX 8.7, past the code generator", function()
    local tm = cute.make_tiled_mma(warp.MmaFP8Op("float8_e5m2", cute.float16, { 16, 8, 32 }), { 1, 1, 1 })
    local e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local a, b, c = thr:partition_fragment_A(A), thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm, c, a, b, c) -- MARK_FP8H
    end, { name = "fp8h" }), ts({ 16, 32 }, cute.float8_e5m2), ts({ 8, 32 }, cute.float8_e5m2), ts({ 16, 8 }, cute.float16))
    at_line(e, "MARK_FP8H")
    has(e, "cute.gemm: cute.nvgpu.warp.MmaFP8Op with acc_dtype = float16")
    has(e, "needs PTX ISA 8.7; the code generator emits PTX 8.5 at most (use acc_dtype = float32)")
  end)

  local tm8 = cute.make_tiled_mma(warp.MmaI8Op(i8, i8, i32, { 16, 8, 32 }), { 2, 2, 1 })
  local S = { ts({ 32, 64 }, i8), ts({ 16, 64 }, i8), ts({ 32, 16 }, i32) }

  it("a fragment of the wrong dtype names the argument and what the atom takes", function()
    local e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tm8:get_slice(cute.arch.thread_idx())
      local a, b, c = thr:partition_fragment_A(A), thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm8, c, a, a, c) -- MARK_BDT
    end, { name = "bad" }), ts({ 32, 64 }, i8), ts({ 16, 64 }, i8), ts({ 32, 16 }, i32))
    at_line(e, "MARK_BDT")
    -- A as B: int8 is right, the MMA mode is not ((4,2,2) values, B holds (4,2))
    has(e, "cute.gemm: B has shape ((4,2,2),1,2): its MMA mode holds 16 values, the atom's B holds 8 per thread")
    e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tm8:get_slice(cute.arch.thread_idx())
      local a, b, c = thr:partition_fragment_A(A), thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm8, b, a, b, c) -- MARK_DDT
    end, { name = "bad" }), table.unpack(S))
    at_line(e, "MARK_DDT")
    has(e, "cute.gemm: D is a fragment of int8; the atom mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 " ..
      "takes int32 for D (make it with tiled_mma:make_fragment_C)")
    local tmu = cute.make_tiled_mma(warp.MmaI8Op(u8, i8, i32, { 16, 8, 32 }), { 2, 2, 1 })
    e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tm8:get_slice(cute.arch.thread_idx())
      local a = tmu:get_slice(cute.arch.thread_idx()):partition_fragment_A(A)
      local b, c = thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm8, c, a, b, c) -- MARK_ADT
    end, { name = "bad" }), table.unpack(S))
    at_line(e, "MARK_ADT")
    has(e, "cute.gemm: A is a fragment of uint8; the atom mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 " ..
      "takes int8 for A")
  end)

  it("fragments of another tiled MMA (same atom, other warp layout)", function()
    local other = cute.make_tiled_mma(warp.MmaI8Op(i8, i8, i32, { 16, 8, 32 }), { 1, 1, 1 })
    local e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tm8:get_slice(cute.arch.thread_idx())
      local o = other:get_slice(cute.arch.thread_idx() % 32)
      local a = o:make_fragment_A(thr:partition_A(A))
      local b, c = thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm8, c, a, b, c) -- MARK_MIX
    end, { name = "bad" }), table.unpack(S))
    at_line(e, "MARK_MIX")
    has(e, "cute.gemm: A is a fragment of another tiled MMA (mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32, " ..
      "threads (32,1,1,1):(1,0,0,0)); this gemm's is mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32, threads")
    -- the same tiled MMA built twice is the same tiled MMA
    local twin = cute.make_tiled_mma(warp.MmaI8Op(i8, i8, i32, { 16, 8, 32 }), { 2, 2, 1 })
    local k = cute.kernel(function(A, B, Cm)
      local thr = tm8:get_slice(cute.arch.thread_idx())
      local a = twin:get_slice(cute.arch.thread_idx()):partition_fragment_A(A)
      local b, c = thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      c:fill(0)
      cute.gemm(tm8, c, a, b, c)
    end, { name = "twin" })
    assert.truthy(k:ir(table.unpack(S)))
  end)

  it("f64 and universal fragments take their own dtype", function()
    local tmd = cute.make_tiled_mma(warp.MmaF64Op({ 8, 8, 4 }), { 1, 1, 1 })
    local e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tmd:get_slice(cute.arch.thread_idx())
      local a, b = thr:partition_fragment_A(A), thr:partition_fragment_B(B)
      local c = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(f32), { 8, 8, 1 })
        :get_slice(cute.arch.thread_idx()):make_fragment_C({ 2, 1, 1 })
      cute.gemm(tmd, c, a, b, c) -- MARK_F64
    end, { name = "bad" }), ts({ 8, 4 }, cute.float64), ts({ 8, 4 }, cute.float64), ts({ 8, 8 }, cute.float64))
    at_line(e, "MARK_F64")
    has(e, "cute.gemm: D is a fragment of float32; the atom mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 takes float64")
    local tmu = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(bf16), { 8, 4, 1 })
    e = trace_error(cute.kernel(function(A, B, Cm)
      local thr = tmu:get_slice(cute.arch.thread_idx())
      local a, b = thr:partition_fragment_A(A), thr:partition_fragment_B(B)
      local c = thr:partition_fragment_C(Cm)
      cute.gemm(tmu, c, a, b, thr:partition_C(Cm)) -- MARK_UNIV
    end, { name = "bad" }), ts({ 8, 4 }, bf16), ts({ 4, 4 }, bf16), ts({ 8, 4 }, bf16))
    at_line(e, "MARK_UNIV")
    has(e, "cute.gemm: C = tensor<bf16")
    has(e, "is not a register tensor (tiled_mma:make_fragment_C)")
  end)
end)
