-- Warpgroup MMA without a GPU (docs/HOPPER.md, "Warpgroup MMA"): the
-- shared-memory descriptor encoding against values computed by hand from the
-- PTX ISA's "Matrix Descriptor Format", the LBO/SBO derived from canonical
-- K- and MN-major layouts, the atoms' layouts against the ISA's register
-- fragments, the PTX of every kind of wgmma, ptxas for sm_90a with 0 spill
-- bytes (a 64 x 256 f32 accumulator through a K loop included) and the errors.
local cute = require("cute")
local C = require("cute.ffi").C
local ffi = require("ffi")
local util = dofile("spec/support/util.lua")
local wgg = dofile("spec/support/wgmma_gemm.lua")
local has = util.has
local bf16, f16, f32 = cute.bfloat16, cute.float16, cute.float32
local wg = cute.nvgpu.warpgroup
local _ = cute._

local THIS = "spec/wgmma_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil
local count = util.count
local function u64(hex) return ffi.new("uint64_t", 0ULL + tonumber(hex:sub(1, 8), 16) * 2 ^ 32) + tonumber(hex:sub(9), 16) end

-- compile for sm_90a; ptxas (when there) with no spills and no local memory
local function build(k, ...)
  local r = k:with({ arch = "sm_90a", use_ptxas = PTXAS, opt_level = 3 }):compile(...)
  assert.falsy(has(r.ptx, ".local"), "a fragment went to local memory")
  if PTXAS then
    assert.truthy(r.cubin, "no cubin: " .. tostring(r.ptxas_log))
    assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
    assert.are.equal(0, r.info.spill_loads, r.ptxas_log)
  end
  return r
end

describe("wgmma shared-memory descriptors", function()
  it("encode_desc: the fields at the PTX ISA's bit positions, by hand", function()
    -- start 0x400 (>> 4 = 0x40, bits 0-13), LBO 16 (1, bits 16-29), SBO 1024 (64, bits 32-45), 128B swizzle (1, 62-63)
    assert.are.equal(u64("4000004000010040"),
      wg.encode_desc{ start_address = 0x400, lbo = 16, sbo = 1024, layout_type = "SW128" })
    -- 64B (2 << 62), SBO 512 (32 << 32), LBO 0
    assert.are.equal(u64("8000002000000000"), wg.encode_desc{ layout_type = "SW64", sbo = 512 })
    -- 32B (3 << 62), start 0x3fff0 (0x3fff: every start bit), SBO 256 (16 << 32), LBO 16
    assert.are.equal(u64("C000001000013FFF"),
      wg.encode_desc{ start_address = 0x3fff0, lbo = 16, sbo = 256, layout_type = "SW32" })
    -- interleave (0), LBO 1024 (64 << 16), SBO 128 (8 << 32), base offset 5 (bits 49-51)
    assert.are.equal(u64("000A000800400000"),
      wg.encode_desc{ layout_type = "INTERLEAVE", lbo = 1024, sbo = 128, base_offset = 5 })
    -- the largest LBO and SBO (14 bits of 16-byte units each)
    assert.are.equal(u64("00003FFF3FFF0000"), wg.encode_desc{ lbo = 0x3fff0, sbo = 0x3fff0 })
  end)

  it("encode_desc: bad fields are errors naming the field and the value", function()
    util.expect_error(function() wg.encode_desc{ lbo = 24 } end, "encode_desc", "lbo = 24", "multiple of 16")
    util.expect_error(function() wg.encode_desc{ sbo = 2 ^ 18 } end, "sbo = 262144")
    util.expect_error(function() wg.encode_desc{ layout_type = "SW16" } end, "layout_type = \"SW16\"")
    util.expect_error(function() wg.encode_desc{ base_offset = 8 } end, "base_offset = 8")
    util.expect_error(function() wg.encode_desc{ swizzle = 1 } end, "unknown field swizzle")
  end)

  it("cute.arch.make_wgmma_desc: the shared address >> 4 ORed into the constant fields", function()
    local k = cute.kernel(function(D)
      local s = cute.make_shared_tensor(cute.make_layout(512), bf16, 1024)
      local d = cute.arch.make_wgmma_desc(s, { layout_type = "SW128", lbo = 16, sbo = 1024 })
      D[0] = d
    end, { name = "desc" })
    local r = build(k, cute.tensor_spec({ 1 }, cute.uint64))
    -- the constant part (start address 0) as LLVM prints it (a signed 64-bit decimal)
    local c = wg.encode_desc{ lbo = 16, sbo = 1024, layout_type = "SW128" }
    assert.truthy(has(r.ptx, tostring(ffi.cast("int64_t", c)):gsub("LL$", "")), r.ptx)
    assert.truthy(r.ptx:find("shr%.u32[^\n]*4;"), r.ptx)
    assert.truthy(r.ptx:find("and%.b32"), r.ptx) -- (& 0x3fff, or less where the alignment shows the low bits)
    local e = util.trace_error(cute.kernel(function(D)
      local d = cute.arch.make_wgmma_desc(D, { layout_type = "SW128" }) -- make_wgmma_desc global
    end, { name = "desc_global" }), cute.tensor_spec({ 8 }, f32))
    util.at_line(THIS, e, "make_wgmma_desc global")
    assert.truthy(has(e, "not shared memory"), e)
  end)
end)

-- the descriptor fragment a tiled MMA makes of smem layout sL (bf16): its
-- layout type, LBO, SBO and the descriptor tensor's layout
local function desc_of(which, major, sL, n)
  local op = wg.MmaF16BF16Op(bf16, f32, { 64, n or 64, 16 }, { a_major = which == "A" and major or "K",
    b_major = which == "B" and major or "K" })
  local tm = cute.make_tiled_mma(op, { 1, 1, 1 })
  local got
  local k = cute.kernel(function(D)
    local s = cute.make_dynamic_shared_tensor(sL, bf16)
    local thr = tm:get_slice(cute.arch.thread_idx())
    local t = which == "A" and thr:partition_A(s) or thr:partition_B(s)
    local d = which == "A" and tm:make_fragment_A(t) or tm:make_fragment_B(t)
    got = { info = d.descriptor, layout = tostring(d.layout) }
    D[0] = d[{ 0, 0, 0, 0 }]
  end, { name = "descfrag" })
  k:with({ arch = "sm_90a" }):ir(cute.tensor_spec({ 1 }, cute.uint64))
  return got
end
local function tile(kind, shape, order) return cute.tile_to_shape(cute.make_smem_layout_atom(kind, bf16), shape, order) end

describe("wgmma descriptor fragments of canonical layouts (bf16)", function()
  it("K-major: 128B, 64B, 32B swizzles and interleave, LBO / SBO as CuTe derives them", function()
    -- 8 rows of 128 / 64 / 32 bytes, swizzled: SBO = the 8-row group (1024 / 512 / 256), LBO 16
    local cases = {
      { "SW128", cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 64 }, bf16, 1), 16, 1024, "(1,1,4,(1,1)):(0,0,2,(0,0))" },
      { "SW64", cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 32 }, bf16, 1), 16, 512, "(1,1,2,(1,1)):(0,0,2,(0,0))" },
      { "SW32", cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 16 }, bf16, 1), 16, 256, "(1,1,1,(1,1)):(0,0,0,(0,0))" },
      -- interleave: 8 x 16-byte core matrices, M groups 128 bytes apart (SBO), the two K chunks 1024 apart (LBO)
      { "INTERLEAVE", tile("K_INTER", { 64, 16, 1 }, { 1, 2, 3 }), 1024, 128, nil },
    }
    for _, c in ipairs(cases) do
      local g = desc_of("A", "K", c[2])
      assert.are.equal(c[1], g.info.layout_type, tostring(c[2]))
      assert.are.equal(c[3], g.info.lbo, c[1] .. " LBO")
      assert.are.equal(c[4], g.info.sbo, c[1] .. " SBO")
      if c[5] then assert.are.equal(c[5], g.layout:gsub(" ", ""), c[1]) end
    end
    -- make_smem_layout_a picks the widest swizzle whose row the K extent fills
    assert.truthy(has(tostring(cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 64 }, bf16, 2)), "Sw<3,3,3>"))
    assert.truthy(has(tostring(cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 32 }, bf16, 2)), "Sw<2,3,3>"))
    assert.truthy(has(tostring(cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 16 }, bf16, 2)), "Sw<1,3,3>"))
    assert.truthy(has(tostring(cute.sm90_utils.make_smem_layout_b("K", { 64, 64, 8 }, bf16, 2)), "Sw<0,3,3>"))
  end)

  it("MN-major B (128 x 64): LBO the step between MN atoms, SBO between 8-row K groups", function()
    -- atoms stacked along K first (8 of them): the next MN block is 8 atoms on
    local cases = {
      { "SW128", tile("MN_SW128", { 128, 64, 1 }, { 2, 1, 3 }), 8192, 1024 }, -- atom 64 x 8, 1024 B
      { "SW64", tile("MN_SW64", { 128, 64, 1 }, { 2, 1, 3 }), 4096, 512 },    -- atom 32 x 8, 512 B
      { "SW32", tile("MN_SW32", { 128, 64, 1 }, { 2, 1, 3 }), 2048, 256 },    -- atom 16 x 8, 256 B
      -- interleave: MN 16-byte columns 1024 apart (SBO), K groups of 8 rows 128 apart (LBO)
      { "INTERLEAVE", tile("MN_INTER", { 128, 64, 1 }, { 2, 1, 3 }), 128, 1024 },
    }
    for _, c in ipairs(cases) do
      local g = desc_of("B", "MN", c[2], 128)
      assert.are.equal(c[1], g.info.layout_type)
      assert.are.equal(c[3], g.info.lbo, c[1] .. " LBO")
      assert.are.equal(c[4], g.info.sbo, c[1] .. " SBO")
    end
    -- the k-block (16 rows of K) steps two atoms: 2048 bytes = 128 descriptor units
    local g = desc_of("B", "MN", cute.sm90_utils.make_smem_layout_b("MN", { 64, 128, 64 }, bf16, 2), 128)
    assert.are.equal("SW128", g.info.layout_type)
    assert.are.equal("(1,1,4,(1,2)):(0,0,128,(0,1024))", g.layout:gsub(" ", ""))
    -- A MN-major with M = 64: one 128-byte row along M, LBO unused (0)
    local a = desc_of("A", "MN", cute.sm90_utils.make_smem_layout_a("MN", { 64, 64, 64 }, bf16, 1))
    assert.are.same({ "SW128", 0, 1024 }, { a.info.layout_type, a.info.lbo, a.info.sbo })
  end)

  it("a layout no canonical atom matches is an error naming it", function()
    local e = util.err_of(function() desc_of("A", "K", cute.make_layout({ 64, 64, 1 }, { 64, 1, 4096 })) end)
    assert.truthy(has(e, "TiledMMA:make_fragment_A"), e)
    assert.truthy(has(e, "not a canonical wgmma K-major layout"), e)
    assert.truthy(has(e, "MMA tile (64,16):(64,1)"), e)
    assert.truthy(has(e, "element (1,0) is at byte 128 where the INTERLEAVE form"), e)
    -- the swizzle of 8-bit elements on bf16
    local sw = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout({ 64, 64, 1 }, { 64, 1, 4096 }))
    e = util.err_of(function() desc_of("A", "K", sw) end)
    assert.truthy(has(e, "Sw<3,4,3> is not a wgmma swizzle"), e)
    -- a K-major layout given to an MN-major operand
    e = util.err_of(function() desc_of("B", "MN", cute.sm90_utils.make_smem_layout_b("K", { 64, 64, 64 }, bf16, 1)) end)
    assert.truthy(has(e, "not a canonical wgmma MN-major layout"), e)
  end)
end)

-- the PTX ISA's wgmma register fragments: thread t of the warpgroup (warp w =
-- t / 32, lane l), value i -> (row, col) of the 64 x N tile
describe("warpgroup MMA atoms", function()
  it("C/D layouts of m64nN: row 16 w + l / 4 + 8 ((i / 2) % 2), column 2 (l % 4) + i % 2 + 8 (i / 4)", function()
    for _, n in ipairs({ 8, 16, 64, 128, 256 }) do
      local atom = cute.make_mma_atom(wg.MmaF16BF16Op(bf16, f32, { 64, n, 16 }))
      assert.are.same({ 64, n, 16 }, atom.shape_mnk)
      assert.are.equal(128, cute.size(atom.thr_id))
      local L = atom.layout_C_tv
      assert.are.equal(64 * n, cute.size(L))
      for t = 0, 127 do
        local w, l = math.floor(t / 32), t % 32
        for i = 0, n / 2 - 1 do
          local row = 16 * w + math.floor(l / 4) + 8 * (math.floor(i / 2) % 2)
          local col = 2 * (l % 4) + i % 2 + 8 * math.floor(i / 4)
          assert.are.equal(row + 64 * col, L(t, i), ("n=%d t=%d i=%d"):format(n, t, i))
        end
      end
      assert.are.equal("wgmma.mma_async.sync.aligned.m64n" .. n .. "k16.f32.bf16.bf16", atom.instruction)
      -- A and B from shared memory: every thread sees the whole tile (thread stride 0)
      assert.are.equal("(128,(64,16)):(0,(1,64))", tostring(atom.layout_A_tv):gsub(" ", ""))
      assert.are.equal(("(128,(%d,16)):(0,(1,%d))"):format(n, n), tostring(atom.layout_B_tv):gsub(" ", ""))
    end
  end)

  it("A in registers: 16-bit (k16), tf32 (k8) and 8-bit (k32) fragments", function()
    local function check(op, k, place)
      local L = cute.make_mma_atom(op).layout_A_tv
      for t = 0, 127 do
        local w, l = math.floor(t / 32), t % 32
        for i = 0, 64 * k / 128 - 1 do
          local row, col = place(l, i)
          assert.are.equal(16 * w + row + 64 * col, L(t, i), ("k=%d t=%d i=%d"):format(k, t, i))
        end
      end
    end
    check(wg.MmaF16BF16Op(f16, f32, { 64, 64, 16 }, { a_src = "rmem" }), 16, function(l, i)
      return math.floor(l / 4) + 8 * (math.floor(i / 2) % 2), 2 * (l % 4) + i % 2 + 8 * math.floor(i / 4)
    end)
    check(wg.MmaTF32Op({ 64, 64, 8 }, { a_src = "rmem" }), 8, function(l, i)
      return math.floor(l / 4) + 8 * (i % 2), l % 4 + 4 * math.floor(i / 2)
    end)
    check(wg.MmaI8Op(cute.int8, cute.int8, cute.int32, { 64, 64, 32 }, { a_src = "rmem" }), 32, function(l, i)
      return math.floor(l / 4) + 8 * (math.floor(i / 4) % 2), 4 * (l % 4) + i % 4 + 16 * math.floor(i / 8)
    end)
  end)

  it("16-bit: accumulator values 8 kb .. 8 kb + 7 are the A-in-register values of k-block kb", function()
    local Lc = cute.make_mma_atom(wg.MmaF16BF16Op(bf16, f32, { 64, 64, 16 })).layout_C_tv
    local La = cute.make_mma_atom(wg.MmaF16BF16Op(bf16, f32, { 64, 64, 16 }, { a_src = "rmem" })).layout_A_tv
    for t = 0, 127 do
      for kb = 0, 3 do
        for j = 0, 7 do assert.are.equal(La(t, j) + 64 * 16 * kb, Lc(t, 8 * kb + j)) end
      end
    end
  end)

  it("tiled over warpgroups: 128 threads each, the tile and the C layout of the second warpgroup", function()
    local tm = cute.make_tiled_mma(wg.MmaF16BF16Op(bf16, f32, { 64, 128, 16 }), { 2, 1, 1 })
    assert.are.equal(256, tm.size)
    assert.are.same({ 128, 128, 16 }, tm.tile_size_mnk)
    local Lc = tm:get_layoutC_TV()
    -- thread 128 + t holds row 64 + (row of t)
    for _, t in ipairs({ 0, 5, 37, 127 }) do
      for _, i in ipairs({ 0, 3, 63 }) do
        local a = cute.make_mma_atom(wg.MmaF16BF16Op(bf16, f32, { 64, 128, 16 })).layout_C_tv(t, i)
        local row, col = a % 64, math.floor(a / 64)
        assert.are.equal(64 + row + 128 * col, Lc(128 + t, i))
      end
    end
    local tn = cute.make_tiled_mma(wg.MmaF16BF16Op(bf16, f32, { 64, 64, 16 }), { 1, 2, 1 })
    assert.are.same({ 64, 128, 16 }, tn.tile_size_mnk)
  end)

  it("ops: CuTe DSL's argument orders and keyword tables; bad arguments are errors", function()
    local op = wg.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 64, 32, 16 }, b_major = "MN" }
    assert.are.equal("MN", op.b_major)
    assert.are.equal("smem", op.a_src)
    assert.are.equal("wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e5m2",
      cute.make_mma_atom(wg.MmaF8Op(cute.float8_e4m3fn, cute.float8_e5m2, f32, { 64, 32, 32 })).instruction)
    assert.are.equal("wgmma.mma_async.sync.aligned.m64n48k32.s32.u8.s8",
      cute.make_mma_atom(wg.MmaI8Op(cute.uint8, cute.int8, cute.int32, { 64, 48, 32 })).instruction)
    assert.are.equal("wgmma.mma_async.sync.aligned.m64n48k32.satfinite.s32.s8.s8",
      cute.make_mma_atom(wg.MmaI8Op(cute.int8, cute.int8, cute.int32, { 64, 48, 32 }, { overflow = "satfinite" })).instruction)
    util.expect_error(function() wg.MmaF16BF16Op(bf16, f32, { 64, 12, 16 }) end, "MmaF16BF16Op", "m64n12k16",
      "N in 8 16 24")
    util.expect_error(function() wg.MmaI8Op(cute.int8, cute.int8, cute.int32, { 64, 40, 32 }) end, "m64n40k32",
      "not a wgmma shape for s8")
    util.expect_error(function() wg.MmaF16BF16Op(bf16, f32, { 64, 64, 8 }) end, "m64n64k8")
    util.expect_error(function() wg.MmaTF32Op({ 64, 64, 8 }, { b_major = "MN" }) end, "MmaTF32Op",
      "b_major = \"MN\"", "only 16-bit inputs")
    util.expect_error(function() wg.MmaF16BF16Op(bf16, f16, { 64, 64, 16 }) end, "acc_dtype = float16 with ab_dtype = bfloat16")
    util.expect_error(function() wg.MmaF16BF16Op(bf16, f32, { 64, 64, 16 }, { a_src = "rmem", a_major = "MN" }) end,
      "A in registers is K-major")
    util.expect_error(function() wg.MmaF16BF16Op(cute.int8, f32, { 64, 64, 16 }) end, "ab_dtype = int8 is not supported")
  end)
end)

-- raw instruction kernels: one warpgroup, descriptors of two 8 x 16-byte interleaved tiles
local function raw_kernel(spec, nacc, acc_dtype, a_regs)
  return cute.kernel(function(D)
    local tid = cute.arch.thread_idx()
    local s = cute.make_shared_tensor(cute.make_layout(8192), cute.uint8, 1024)
    local acc = cute.arch.make_fragment_regs(acc_dtype, nacc)
    local da = cute.arch.make_wgmma_desc(s, { lbo = 128, sbo = 256 })
    local a = a_regs and cute.arch.make_fragment_regs(a_regs, 4, 1) or da
    local mma = cute.arch.wgmma_mma_async(spec)
    cute.nvgpu.warpgroup.fence()
    mma(acc, a, da, tid > 0)
    cute.nvgpu.warpgroup.commit_group()
    cute.nvgpu.warpgroup.wait_group(0)
    cute.nvgpu.warpgroup.fence_operand(acc)
    for i = 0, nacc - 1 do D[tid * nacc + i] = acc[i] end
  end, { name = "raw_wgmma" })
end

describe("cute.arch.wgmma_mma_async", function()
  it("every input kind: the instruction, its operands, transposes and scale-d as a predicate", function()
    local D, R = "{[^}]*}", "%%rd%d+"
    local cases = {
      { { shape = "m64n8k16", a_type = bf16, b_type = bf16, c_type = f32 }, 4, f32,
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 ", "{%%f%d+,%%f%d+,%%f%d+,%%f%d+}, " .. R .. ", " .. R .. ", p, 1, 1, 0, 0;" },
      { { shape = "m64n256k16", a_type = f16, c_type = f32, a_major = "MN", b_major = "MN" }, 128, f32,
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 ", D .. ", " .. R .. ", " .. R .. ", p, 1, 1, 1, 1;" },
      { { shape = "m64n64k16", a_type = f16, c_type = f16 }, 16, cute.uint32,
        "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16 ", D .. ", " .. R .. ", " .. R .. ", p, 1, 1, 0, 0;" },
      { { shape = "m64n128k8", a_type = "tf32", c_type = f32 }, 64, f32,
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 ", D .. ", " .. R .. ", " .. R .. ", p, 1, 1;" },
      { { shape = "m64n64k32", a_type = "float8_e4m3fn", b_type = "float8_e5m2", c_type = f32 }, 32, f32,
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 ", D .. ", " .. R .. ", " .. R .. ", p, 1, 1;" },
      { { shape = "m64n24k32", a_type = cute.int8, b_type = cute.uint8, c_type = cute.int32, overflow = "satfinite" },
        12, cute.int32, "wgmma.mma_async.sync.aligned.m64n24k32.satfinite.s32.s8.u8 ", D .. ", " .. R .. ", " .. R .. ", p;" },
      { { shape = "m64n32k16", a_type = bf16, c_type = f32, a_src = "rmem", b_major = "MN" }, 16, f32,
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 ",
        D .. ", {%%r%d+,%%r%d+,%%r%d+,%%r%d+}, " .. R .. ", p, 1, 1, 1;", cute.uint32 },
    }
    for _, c in ipairs(cases) do
      local k = raw_kernel(c[1], c[2], c[3], c[6])
      local r = build(k, cute.tensor_spec({ 128 * c[2] }, c[3]))
      local at = r.ptx:find(c[4], 1, true)
      assert.truthy(at, c[4] .. "\n" .. r.ptx)
      assert.truthy(r.ptx:find("^" .. c[5], at + #c[4]), c[5] .. "\n" .. r.ptx:sub(at, at + 300))
      assert.truthy(has(r.ptx, "wgmma.fence.sync.aligned;"))
      assert.truthy(has(r.ptx, "wgmma.commit_group.sync.aligned;"))
      assert.truthy(has(r.ptx, "wgmma.wait_group.sync.aligned 0;"))
      assert.truthy(r.ptx:find("setp%.ne%.b32 p, %%r%d+, 0;"), r.ptx)
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  it("errors at the user's line: sm_80, shapes, operands", function()
    local spec = { shape = "m64n64k16", a_type = bf16, c_type = f32 }
    local e = util.trace_error(raw_kernel(spec, 32, f32):with({ arch = "sm_80" }), cute.tensor_spec({ 4096 }, f32))
    assert.truthy(has(e, "needs sm_90a"), e)
    assert.truthy(has(e, "compiled for sm_80"), e)
    e = util.trace_error(raw_kernel(spec, 32, f32):with({ arch = "sm_90" }), cute.tensor_spec({ 4096 }, f32))
    assert.truthy(has(e, "compiled for sm_90 "), e)
    util.expect_error(function() cute.arch.wgmma_mma_async{ shape = "m64n264k16", a_type = bf16 } end, "m64n264k16")
    util.expect_error(function() cute.arch.wgmma_mma_async{ shape = "m64n64k8", a_type = "e4m3" } end,
      "m64n64k8 is not a wgmma shape for e4m3", "K = 32")
    util.expect_error(function() cute.arch.wgmma_mma_async{ shape = "m64n64k32", a_type = cute.int8, b_major = "MN" } end,
      "only 16-bit inputs")
    util.expect_error(function() cute.arch.wgmma_mma_async{ shape = "m64n64k16", a_type = bf16, b_type = f16 } end,
      "b_type f16 with a_type bf16")
    util.expect_error(function() cute.arch.wgmma_mma_async{ shape = "m64n64k32", a_type = cute.int8, c_type = f32 } end,
      "c_type f32 with s8 inputs")
    -- an accumulator of the wrong size
    e = util.trace_error(raw_kernel(spec, 16, f32):with({ arch = "sm_90a" }), cute.tensor_spec({ 2048 }, f32))
    assert.truthy(has(e, "the accumulator of m64n64 f32 must be f32[32], got f32[16]"), e)
  end)
end)

describe("cute.gemm on warpgroup tiled MMAs", function()
  local cases = {
    { kind = "bf16", n = 256, k = 128, bk = 64 },                     -- 64 x 256 f32: 128 accumulators per thread
    { kind = "bf16", n = 128, k = 128, bk = 64, b_major = "MN", stages = 2 },  -- stage kt % 2: traced offsets
    { kind = "bf16", n = 128, k = 64, bk = 64, wg_m = 2, a_major = "MN", b_major = "MN" },
    { kind = "f16acc", n = 64, k = 64, bk = 64 },
    { kind = "tf32", n = 64, k = 64, bk = 32 },
    { kind = "e4m3", n = 8, k = 128, bk = 128 },
    { kind = "int8", n = 64, k = 128, bk = 128 },
    { kind = "bf16", n = 64, k = 192, bk = 64, peel = true },
    { kind = "bf16", n = 64, k = 128, bk = 64, a_src = "rmem", stages = 3 },
    { kind = "int8", n = 32, k = 64, bk = 64, a_src = "rmem" },
    { kind = "tf32", n = 8, k = 32, bk = 32, a_src = "rmem" },
  }
  for _, c in ipairs(cases) do
    it(("%s N = %d, %d warpgroup(s), A %s-major from %s, B %s-major, %d stage(s): one wgmma per k-block, ptxas " ..
      "sm_90a, 0 spills"):format(c.kind, c.n, c.wg_m or 1, c.a_major or "K", c.a_src or "smem", c.b_major or "K",
      c.stages or 1), function()
      local k = wgg.kernel(c)
      local r = build(k, wgg.specs(c))
      local kb = wgg.KINDS[c.kind].kb
      assert.are.equal(c.bk / kb * (c.peel and 2 or 1), count(r.ptx, "wgmma%.mma_async"), r.ptx)
      assert.truthy(has(r.ptx, wgg.instruction(c)), wgg.instruction(c))
      assert.are.equal(c.peel and 2 or 1, count(r.ptx, "wgmma%.wait_group%.sync%.aligned 0;"))
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  it("accumulate = false (a Lua boolean) is scale-d 0 for the first k-block only; a traced flag is the predicate", function()
    local c = { kind = "bf16", n = 64, k = 192, bk = 64, peel = true }
    local ir = wgg.kernel(c):with({ arch = "sm_90a" }):ir(wgg.specs(c))
    local scales = {}
    for line in ir:gmatch("[^\n]*wgmma%.mma_async[^\n]*") do scales[#scales + 1] = line:match(", ([^,]-) str=") end
    -- the peeled k-tile: 0 then 1, 1, 1; the loop: 1, 1, 1, 1 (set(true) before it)
    assert.are.same({ "0:u32", "1:u32", "1:u32", "1:u32", "1:u32", "1:u32", "1:u32", "1:u32" }, scales)
    local c2 = { kind = "bf16", n = 64, k = 128, bk = 64 }
    ir = wgg.kernel(c2):with({ arch = "sm_90a" }):ir(wgg.specs(c2))
    scales = {}
    for line in ir:gmatch("[^\n]*wgmma%.mma_async[^\n]*") do scales[#scales + 1] = line:match(", ([^,]-) str=") end
    assert.truthy(scales[1]:match("^%%%d+$"), scales[1]) -- kt > 0, converted to u32
    assert.are.same({ "1:u32", "1:u32", "1:u32" }, { scales[2], scales[3], scales[4] })
  end)

  it("the block size: checked at every launch (whole warpgroups, at least the tiled MMA's), no device code", function()
    local K = require("cute.kernel")
    local launches = {}
    K._use_driver((util.stub_driver(function(_, _, _, _, bx, by, bz) launches[#launches + 1] = bx * by * bz end)))
    local ok, err = pcall(function()
      local function dev(ptr, m, n, dt) return { ptr = ptr, shape = { m, n }, strides = { n, 1 }, dtype = dt } end
      for _, c in ipairs({ { kind = "bf16", n = 64, k = 64, bk = 64 }, { kind = "bf16", n = 64, k = 64, bk = 64, wg_m = 2 } }) do
        local k, tm = wgg.kernel(c)
        k = k:with({ arch = "sm_90a", use_ptxas = false })
        local A, B, Cm = dev(4096, 64 * (c.wg_m or 1), 64, bf16), dev(65536, 64, 64, bf16), dev(131072, 64 * (c.wg_m or 1), 64, f32)
        k:launch{ grid = 1, block = tm.size }(A, B, Cm)
        k:launch{ grid = 1, block = tm.size }(A, B, Cm) -- (the fast path)
        k:launch{ grid = 1, block = { 128, 3 } }(A, B, Cm) -- 384: a producer warpgroup besides
        assert.are.same({ tm.size, tm.size, 384 }, { launches[#launches - 2], launches[#launches - 1], launches[#launches] })
        local n = #launches
        for _, blk in ipairs({ 96, 160, c.wg_m == 2 and 128 or 64 }) do
          for _ = 1, 2 do -- the first launch of a configuration and a repeated one
            local e = util.err_of(function() k:launch{ grid = 1, block = blk }(A, B, Cm) end)
            assert.truthy(has(e, ("a block of %d threads"):format(blk)), e)
            assert.truthy(has(e, ("needs a multiple of 128 threads, at least %d"):format(tm.size)), e)
            assert.truthy(has(e, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"), e)
          end
        end
        assert.are.equal(n, #launches)
        -- no device code for it: no vprintf call (it would make ptxas serialize the wgmmas)
        local ptx = k:compile(wgg.specs(c)).ptx
        assert.falsy(has(ptx, "vprintf"), "a call in the kernel")
      end
    end)
    K._use_driver(nil)
    assert(ok, err)
  end)

  it("errors: sm_80, accumulate false outside the loop, wrong fragments", function()
    local c = { kind = "bf16", n = 64, k = 64, bk = 64 }
    local e = util.trace_error(wgg.kernel(c):with({ arch = "sm_80" }), wgg.specs(c))
    assert.truthy(has(e, "needs sm_90a"), e)
    local tm = cute.make_tiled_mma(wg.MmaF16BF16Op(bf16, f32, { 64, 64, 16 }), { 1, 1, 1 })
    local sL = cute.sm90_utils.make_smem_layout_a("K", { 64, 64, 64 }, bf16, 1)
    local function kern(body)
      return cute.kernel(function(Cm, n)
        local s = cute.make_dynamic_shared_tensor(sL, bf16)
        local thr = tm:get_slice(cute.arch.thread_idx())
        local a = tm:make_fragment_A(thr:partition_A(s))
        local b = tm:make_fragment_B(thr:partition_B(s))
        local acc = tm:make_fragment_C(thr:partition_C(Cm))
        body(acc, a, b, n)
        cute.copy(acc, thr:partition_C(Cm))
      end, { name = "gemm_err" }):with({ arch = "sm_90a" })
    end
    local specs = { cute.tensor_spec({ 64, 64 }, f32), cute.Int32(3) }
    e = util.trace_error(kern(function(acc, a, b, n)
      tm:set("accumulate", false)
      for i in cute.range(n) do
        cute.gemm(tm, acc, a[{ _, _, 0, 0 }], b[{ _, _, 0, 0 }], acc) -- gemm in loop
      end
    end), unpack(specs))
    util.at_line(THIS, e, "gemm in loop")
    assert.truthy(has(e, "accumulate was set to false"), e)
    e = util.trace_error(kern(function(acc, a, b)
      cute.gemm(tm, acc, b[{ _, _, 0, 0 }], acc, acc) -- B as A
    end), unpack(specs))
    assert.truthy(has(e, "B = register tensor"), e)
    e = util.trace_error(kern(function(acc, a, b)
      cute.gemm(tm, acc, a[{ _, _, 0, 0 }], b, acc) -- stage left
    end), unpack(specs))
    assert.truthy(has(e, "slice the stage mode"), e)
    util.expect_error(function() tm:set("accumulate", 1) end, "TiledMMA:set", "accumulate = 1")
    util.expect_error(function() tm:set("scale_a", true) end, "unknown field \"scale_a\"")
    local warp = cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(bf16, f32, { 16, 8, 16 }), { 1, 1, 1 })
    util.expect_error(function() warp:set("accumulate", true) end, "fields are for warpgroup MMAs")
  end)
end)

-- A model of how wgmma reads a canonical shared-memory tile (PTX ISA,
-- "Shared Memory Matrix Layout"): from a descriptor's start address, LBO and
-- SBO, element (mn, k) of the instruction's MN x K tile is at a byte address
-- that the hardware then swizzles (Swizzle<B,4,3> on the address: bits 7..
-- xor'ed into bits 4..).  For whole multistage tiles, every k-block's and
-- stage's descriptor (start = the pre-swizzle offset of its first element, as
-- make_fragment_A/B steps it) must reach exactly the byte where the smem
-- layout stores each element.
describe("wgmma descriptors against a model of the hardware's reads", function()
  local lay = require("cute.layout")
  local ten = require("cute.tensor")
  local wgm = require("cute.wgmma")
  local function model(lt, lbo, sbo, start, major, mn, k, eb)
    local B = ({ INTERLEAVE = 0, SW32 = 1, SW64 = 2, SW128 = 3 })[lt]
    local RW = 16 * 2 ^ B
    local a
    if major == "K" then
      local kb = k * eb
      if B == 0 then a = start + (mn % 8) * 16 + math.floor(mn / 8) * sbo + kb % 16 + math.floor(kb / 16) * lbo
      else a = start + (mn % 8) * RW + math.floor(mn / 8) * sbo + kb end
    else
      local b = mn * eb
      if B == 0 then a = start + b % 16 + math.floor(b / 16) * sbo + (k % 8) * 16 + math.floor(k / 8) * lbo
      else a = start + b % RW + math.floor(b / RW) * lbo + (k % 8) * RW + math.floor(k / 8) * sbo end
    end
    return lay.swizzle(B, 4, 3, a)
  end
  -- sL: an (MN, K, stages) smem layout of eb-byte elements; KE: the instruction's K
  local function check(sL, major, MN, K, stages, eb, KE)
    local sw = ten.composed_parts(sL)
    local L = lay.inner_layout(sL)
    local function phys(mn, k, s) return lay.swizzle(sw[1], sw[2], sw[3], L(mn, k, s)) * eb end
    for s = 0, stages - 1 do
      for kb = 0, K / KE - 1 do
        local origin = L(0, kb * KE, s)
        local lt, lbo, sbo = wgm.canonical(function(i) return L(i % MN, kb * KE + math.floor(i / MN), s) - origin end,
          MN, KE, eb, sw, major, "check", function() return tostring(sL) end)
        for k = 0, KE - 1 do
          for mn = 0, MN - 1 do
            local want = phys(mn, kb * KE + k, s)
            local got = model(lt, lbo, sbo, origin * eb, major, mn, k, eb)
            if got ~= want then
              error(("%s (%s-major, %s): stage %d k-block %d element (%d,%d): the descriptor reads byte %d, the " ..
                "layout stores it at %d"):format(tostring(sL), major, lt, s, kb, mn, k, got, want))
            end
          end
        end
      end
    end
  end

  it("bf16 K-major and MN-major, every swizzle, two stages, several k-blocks", function()
    for _, kind in ipairs({ "SW128", "SW64", "SW32", "INTER" }) do
      check(tile("K_" .. kind, { 64, 64, 2 }, { 1, 2, 3 }), "K", 64, 64, 2, 2, 16)
      check(tile("K_" .. kind, { 128, 128, 2 }, { 1, 2, 3 }), "K", 128, 128, 2, 2, 16)
      check(tile("MN_" .. kind, { 128, 64, 2 }, { 2, 1, 3 }), "MN", 128, 64, 2, 2, 16)
      check(tile("MN_" .. kind, { 64, 32, 2 }, { 1, 2, 3 }), "MN", 64, 32, 2, 2, 16)
    end
    check(cute.sm90_utils.make_smem_layout_b("MN", { 64, 256, 64 }, bf16, 3), "MN", 256, 64, 3, 2, 16)
    check(cute.sm90_utils.make_smem_layout_a("K", { 128, 256, 64 }, bf16, 3), "K", 128, 64, 3, 2, 16)
  end)

  it("tf32 (k8) and 8-bit (k32) K-major tiles", function()
    for _, kind in ipairs({ "SW128", "SW64", "SW32" }) do
      check(cute.tile_to_shape(cute.make_smem_layout_atom("K_" .. kind, f32), { 64, 32, 2 }, { 1, 2, 3 }), "K", 64, 32,
        2, 4, 8)
      check(cute.tile_to_shape(cute.make_smem_layout_atom("K_" .. kind, cute.int8), { 64, 128, 2 }, { 1, 2, 3 }), "K",
        64, 128, 2, 1, 32)
    end
  end)
end)
