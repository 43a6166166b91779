-- MMA atoms (lua/cute/mma.lua): the ops of cute.nvgpu.warp and cute.nvgpu,
-- cute.make_mma_atom, the atoms' thread-value layouts against CuTe's
-- (cute/atom/mma_traits_sm80.hpp, mma_traits_sm89.hpp, mma_traits.hpp) and
-- against the PTX ISA's fragment layouts, the instruction each atom issues
-- (assembled by ptxas when present), and the errors for bad ops.
local cute = require("cute")
local PTXAS = require("cute.ir").ptxas_path()

local warp = cute.nvgpu.warp

local function err_of(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end

-- CuTe's layouts, as the C++ traits spell them (static integers dropped).
local SM80_8x4 = "((4,8),1):((8,1),0)"
local SM80_8x8_Row = "((4,8),2):((16,1),8)"
local SM80_8x16_Row = "((4,8),4):((32,1),8)"
local SM80_16x8_Row = "((4,8),(2,2)):((32,1),(16,8))"
local cute_layouts = {
  { "f16 m16n8k8 f16 acc", function() return warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float16, shape_mnk = { 16, 8, 8 } } end,
    SM80_16x8_Row, SM80_8x8_Row, SM80_16x8_Row },
  { "bf16 m16n8k8", function() return warp.MmaF16BF16Op { ab_dtype = cute.bfloat16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 8 } } end,
    SM80_16x8_Row, SM80_8x8_Row, SM80_16x8_Row },
  { "f16 m16n8k16", function() return warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } } end,
    "((4,8),(2,2,2)):((32,1),(16,8,128))", "((4,8),(2,2)):((16,1),(8,64))", SM80_16x8_Row },
  { "bf16 m16n8k16", function() return warp.MmaF16BF16Op { ab_dtype = cute.bfloat16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } } end,
    "((4,8),(2,2,2)):((32,1),(16,8,128))", "((4,8),(2,2)):((16,1),(8,64))", SM80_16x8_Row },
  { "tf32 m16n8k4", function() return warp.MmaTF32Op { shape_mnk = { 16, 8, 4 } } end,
    "((4,8),2):((16,1),8)", SM80_8x4, SM80_16x8_Row },
  { "tf32 m16n8k8", function() return warp.MmaTF32Op { shape_mnk = { 16, 8, 8 } } end,
    "((4,8),(2,2)):((16,1),(8,64))", "((4,8),2):((8,1),32)", SM80_16x8_Row },
  { "s8 m16n8k16", function() return warp.MmaI8Op { a_dtype = cute.int8, b_dtype = cute.int8, acc_dtype = cute.int32, shape_mnk = { 16, 8, 16 } } end,
    "((4,8),(4,2)):((64,1),(16,8))", SM80_8x16_Row, SM80_16x8_Row },
  { "u8 x s8 m16n8k32", function() return warp.MmaI8Op { a_dtype = cute.uint8, b_dtype = cute.int8, acc_dtype = cute.int32, shape_mnk = { 16, 8, 32 } } end,
    "((4,8),(4,2,2)):((64,1),(16,8,256))", "((4,8),(4,2)):((32,1),(8,128))", SM80_16x8_Row },
  { "e4m3 m16n8k32", function() return warp.MmaFP8Op { ab_dtype = "float8_e4m3fn", acc_dtype = cute.float32, shape_mnk = { 16, 8, 32 } } end,
    "((4,8),(4,2,2)):((64,1),(16,8,256))", "((4,8),(4,2)):((32,1),(8,128))", SM80_16x8_Row },
  { "f64 m8n8k4", function() return warp.MmaF64Op { shape_mnk = { 8, 8, 4 } } end,
    SM80_8x4, SM80_8x4, SM80_8x8_Row },
  { "universal fma f32", function() return cute.nvgpu.MmaUniversalOp(cute.float32) end,
    "(1,1):(0,0)", "(1,1):(0,0)", "(1,1):(0,0)" },
}

describe("cute.make_mma_atom: CuTe's thread-value layouts", function()
  for _, c in ipairs(cute_layouts) do
    it(c[1] .. " has CuTe's ALayout, BLayout, CLayout", function()
      local atom = cute.make_mma_atom(c[2]())
      assert.are.equal(c[3], tostring(atom.layout_A_tv))
      assert.are.equal(c[4], tostring(atom.layout_B_tv))
      assert.are.equal(c[5], tostring(atom.layout_C_tv))
      -- CuTe DSL's property names are the same layouts
      assert.are.equal(atom.layout_A_tv, atom.tv_layout_A)
      assert.are.equal(atom.layout_C_tv, atom.tv_layout_C)
      -- (thread, value) covers the tile: size = threads * values = M*K, N*K, M*N
      local m, n, k = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
      local nthr = cute.size(atom.thr_id)
      assert.are.equal(m * k, cute.size(atom.layout_A_tv))
      assert.are.equal(n * k, cute.size(atom.layout_B_tv))
      assert.are.equal(m * n, cute.size(atom.layout_C_tv))
      assert.are.equal(nthr, cute.size(cute.get(atom.layout_A_tv, 0)))
    end)
  end
end)

-- The PTX ISA's fragment layouts (spec/support/mma_isa.lua)
local isa = dofile("spec/support/mma_isa.lua")

-- every (thread, value) of L against the ISA's (row, col) -> column-major
-- index into the tile, and every tile element reached exactly once
local function check_against_isa(L, rows, values, f, transpose)
  local seen = {}
  for lane = 0, 31 do
    for v = 0, values - 1 do
      local r, c = f(lane, v)
      if transpose then r, c = c, r end -- B: (k, n) -> index n + N*k
      local want = r + rows * c
      local got = L(lane, v)
      if got ~= want then
        error(("%s at (t=%d, v=%d): layout gives %d, the ISA gives (%d,%d) = %d")
          :format(tostring(L), lane, v, got, r, c, want))
      end
      assert.is_nil(seen[got], "element reached twice")
      seen[got] = true
    end
  end
  local n = 0
  for _ in pairs(seen) do n = n + 1 end
  assert.are.equal(32 * values, n)
end

describe("MMA atom layouts mean the PTX ISA's fragments", function()
  local function check(op, shape, A, B, C)
    local atom = cute.make_mma_atom(op)
    local m, n, k = shape[1], shape[2], shape[3]
    check_against_isa(atom.layout_A_tv, m, m * k / 32, A)
    check_against_isa(atom.layout_B_tv, n, n * k / 32, B, true)
    check_against_isa(atom.layout_C_tv, m, m * n / 32, C)
  end
  it("bf16 and f16 m16n8k16", function()
    for _, ab in ipairs({ cute.bfloat16, cute.float16 }) do
      check(warp.MmaF16BF16Op(ab, cute.float32, { 16, 8, 16 }), { 16, 8, 16 }, isa.m16n8k16.A, isa.m16n8k16.B, isa.C16x8)
    end
    check(warp.MmaF16BF16Op(cute.float16, cute.float16, { 16, 8, 16 }), { 16, 8, 16 }, isa.m16n8k16.A, isa.m16n8k16.B, isa.C16x8)
  end)
  it("f16 m16n8k8", function()
    check(warp.MmaF16BF16Op(cute.float16, cute.float32, { 16, 8, 8 }), { 16, 8, 8 }, isa.m16n8k8.A, isa.m16n8k8.B, isa.C16x8)
  end)
  it("tf32 m16n8k8", function()
    check(warp.MmaTF32Op({ 16, 8, 8 }), { 16, 8, 8 }, isa.m16n8k8_tf32.A, isa.m16n8k8_tf32.B, isa.C16x8)
  end)
  it("int8 and fp8 m16n8k32", function()
    check(warp.MmaI8Op(cute.int8, cute.int8, cute.int32, { 16, 8, 32 }), { 16, 8, 32 },
      isa.m16n8k32_8bit.A, isa.m16n8k32_8bit.B, isa.C16x8)
    check(warp.MmaFP8Op("float8_e5m2", cute.float32, { 16, 8, 32 }), { 16, 8, 32 },
      isa.m16n8k32_8bit.A, isa.m16n8k32_8bit.B, isa.C16x8)
  end)
  it("f64 m8n8k4", function()
    check(warp.MmaF64Op({ 8, 8, 4 }), { 8, 8, 4 }, isa.m8n8k4_f64.A, isa.m8n8k4_f64.B, isa.m8n8k4_f64.C)
  end)
  it("a wrong layout is caught (the check is not vacuous)", function()
    local wrong = cute.parse("((4,8),(2,2,2)):((32,1),(8,16,128))") -- value strides swapped
    assert.has_error(function() check_against_isa(wrong, 16, 8, isa.m16n8k16.A) end)
  end)
end)

describe("MMA atom instructions, registers and architectures", function()
  local cases = {
    { warp.MmaF16BF16Op { ab_dtype = cute.bfloat16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } },
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", { 4, 2, 4, 4 }, "sm_80" },
    { warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float16, shape_mnk = { 16, 8, 16 } },
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", { 4, 2, 2, 2 }, "sm_80" },
    { warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 8 } },
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", { 2, 1, 4, 4 }, "sm_80" },
    { warp.MmaTF32Op { shape_mnk = { 16, 8, 8 } },
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", { 4, 2, 4, 4 }, "sm_80" },
    { warp.MmaTF32Op { shape_mnk = { 16, 8, 4 } },
      "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", { 2, 1, 4, 4 }, "sm_80" },
    { warp.MmaI8Op { a_dtype = cute.int8, b_dtype = cute.uint8, acc_dtype = cute.int32, shape_mnk = { 16, 8, 32 } },
      "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32", { 4, 2, 4, 4 }, "sm_80" },
    { warp.MmaI8Op { a_dtype = cute.int8, b_dtype = cute.int8, acc_dtype = cute.int32, shape_mnk = { 16, 8, 16 },
        overflow = warp.MmaIntOverflow.WRAP },
      "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32", { 2, 1, 4, 4 }, "sm_80" },
    { warp.MmaFP8Op { ab_dtype = "Float8E4M3FN", acc_dtype = cute.float32, shape_mnk = { 16, 8, 32 } },
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", { 4, 2, 4, 4 }, "sm_89" },
    { warp.MmaFP8Op { ab_dtype = "Float8E5M2", acc_dtype = cute.float16, shape_mnk = { 16, 8, 32 } },
      "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", { 4, 2, 2, 2 }, "sm_89" },
    { warp.MmaF64Op { shape_mnk = { 8, 8, 4 } },
      "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", { 1, 1, 2, 2 }, "sm_80" },
  }
  for _, c in ipairs(cases) do
    local op, instr, regs, arch = c[1], c[2], c[3], c[4]
    it(instr, function()
      local atom = cute.make_mma_atom(op)
      assert.are.equal(instr, atom.instruction)
      assert.are.same({ A = regs[1], B = regs[2], C = regs[3], D = regs[4] }, atom.num_registers)
      assert.are.equal(arch, atom.min_arch)
      assert.are.equal("32:1", tostring(atom.thr_id))
      assert.is_true(atom:supports_arch("sm_90a"))
      assert.are.equal(arch == "sm_80", atom:supports_arch("sm_80"))
      assert.is_false(atom:supports_arch("sm_75"))
      assert.is_truthy(tostring(atom):find(instr, 1, true))
      local sh = atom.shape_mnk
      assert.is_truthy(tostring(op):find(("shape_mnk=(%d,%d,%d)"):format(sh[1], sh[2], sh[3]), 1, true))
      assert.is_truthy(tostring(op):find("^cute%.nvgpu%.warp%.Mma"))
    end)
  end

  -- The instruction with its registers, as a PTX kernel that ptxas accepts
  -- for the atom's minimum arch and for sm_90a (what cute.gemm will emit).
  local imm = { f32 = "0f3F800000", f64 = "0d3FF0000000000000" }
  local function ptx_of(atom, arch, version)
    local lines = { (".version %s"):format(version or atom.min_ptx), ".target " .. arch, ".address_size 64",
      ".visible .entry k(.param .u64 out) {" }
    local ops = {}
    for _, f in ipairs({ "D", "A", "B", "C" }) do
      local n, ty = atom.num_registers[f], atom.register_type[f]
      lines[#lines + 1] = ("  .reg .%s %s<%d>;"):format(ty, f:lower(), n)
      local names = {}
      for i = 0, n - 1 do
        names[#names + 1] = f:lower() .. i
        if f ~= "D" then lines[#lines + 1] = ("  mov.%s %s%d, %s;"):format(ty, f:lower(), i, imm[ty] or "1") end
      end
      ops[#ops + 1] = "{" .. table.concat(names, ", ") .. "}"
    end
    lines[#lines + 1] = "  " .. atom.instruction .. " " .. table.concat(ops, ", ") .. ";"
    lines[#lines + 1] = "  .reg .u64 p;"
    lines[#lines + 1] = "  ld.param.u64 p, [out];"
    local dty = atom.register_type.D
    lines[#lines + 1] = ("  st.global.%s [p], d0;"):format(dty)
    lines[#lines + 1] = "  ret;"
    lines[#lines + 1] = "}"
    return table.concat(lines, "\n") .. "\n"
  end
  for _, c in ipairs(cases) do
    local op, instr = c[1], c[2]
    local name = "ptxas assembles " .. instr .. " with the atom's registers"
    if not PTXAS then
      pending(name .. " (needs ptxas)")
    else
      it(name, function()
        local atom = cute.make_mma_atom(op)
        local function ptxas(arch, version)
          local src = ptx_of(atom, arch, version)
          local path = os.tmpname()
          local f = assert(io.open(path .. ".ptx", "w"))
          f:write(src)
          f:close()
          local p = io.popen(("%q -arch=%s %q -o %q 2>&1; echo \"ptxas-rc=$?\""):format(PTXAS, arch, path .. ".ptx", path .. ".cubin"))
          local out = p:read("*a")
          p:close()
          local ok = out:match("ptxas%-rc=(%d+)%s*$") == "0"
          os.remove(path .. ".ptx"); os.remove(path .. ".cubin"); os.remove(path)
          return ok, out, src
        end
        -- the PTX ISA version each target needs (sm_89: 7.8, sm_90a: 8.0)
        local arch_ptx = { sm_80 = 7.0, sm_89 = 7.8, sm_90a = 8.0 }
        for _, arch in ipairs({ atom.min_arch, "sm_90a" }) do
          local ok, out, src = ptxas(arch, ("%.1f"):format(math.max(tonumber(atom.min_ptx), arch_ptx[arch])))
          assert(ok, ("ptxas (%s) refused:\n%s\n%s"):format(arch, out, src))
        end
        -- min_ptx is the minimum: one PTX ISA version older is refused for the instruction
        local major, minor = atom.min_ptx:match("^(%d+)%.(%d+)$")
        if tonumber(minor) > 0 and tonumber(major) >= 8 then
          local ok, out = ptxas(atom.min_arch, ("%s.%d"):format(major, tonumber(minor) - 1))
          assert.is_false(ok)
          assert.is_truthy(out:find("requires PTX ISA", 1, true), out)
        end
      end)
    end
  end

  it("an op the target arch lacks is an error naming the op and the arch", function()
    local atom = cute.make_mma_atom(warp.MmaFP8Op { ab_dtype = "float8_e4m3fn", acc_dtype = cute.float32, shape_mnk = { 16, 8, 32 } })
    local e = err_of(function() atom:check_arch("sm_80") end)
    assert.is_truthy(e:find("mma_atom_spec.lua:%d+: "))
    assert.is_truthy(e:find("MmaFP8Op", 1, true))
    assert.is_truthy(e:find("sm_80", 1, true))
    assert.is_truthy(e:find("sm_89", 1, true))
    atom:check_arch("sm_89")
    atom:check_arch("sm_90a")
  end)
end)

describe("MMA ops: constructors and errors", function()
  it("keyword tables and positional arguments give the same op", function()
    local a = warp.MmaF16BF16Op { ab_dtype = cute.bfloat16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } }
    local b = warp.MmaF16BF16Op(cute.bfloat16, cute.float32, { 16, 8, 16 })
    local c = warp.MmaF16BF16Op("BFloat16", "Float32", { 16, 8, 16 })
    local d = warp.MmaF16BF16Op(cute.BFloat16, cute.Float32, { 16, 8, 16 })
    for _, o in ipairs({ b, c, d }) do
      assert.are.equal(cute.make_mma_atom(a).instruction, cute.make_mma_atom(o).instruction)
      assert.are.equal("bfloat16", o.ab_dtype)
      assert.are.equal("float32", o.acc_dtype)
      assert.are.same({ 16, 8, 16 }, o.shape_mnk)
    end
  end)
  it("the universal FMA op", function()
    local atom = cute.make_mma_atom(cute.nvgpu.MmaUniversalOp(cute.float32))
    assert.are.same({ 1, 1, 1 }, atom.shape_mnk)
    assert.are.equal("1:0", tostring(atom.thr_id))
    assert.are.equal("fma.rn.f32", atom.instruction)
    assert.are.same({ A = 1, B = 1, C = 1, D = 1 }, atom.num_registers)
    assert.are.equal("mad.lo.s32", cute.make_mma_atom(cute.nvgpu.MmaUniversalOp { abacc_dtype = cute.int32 }).instruction)
    assert.are.equal("fma.rn.f64", cute.make_mma_atom(cute.nvgpu.MmaUniversalOp("Float64")).instruction)
  end)

  local expect = dofile("spec/support/util.lua").expect_error
  it("bad combinations are errors at the user's line naming the op and the value", function()
    expect(function() warp.MmaF16BF16Op { ab_dtype = cute.bfloat16, acc_dtype = cute.float16, shape_mnk = { 16, 8, 16 } } end,
      "MmaF16BF16Op", "acc_dtype", "float16", "bfloat16")
    expect(function() warp.MmaF16BF16Op { ab_dtype = cute.float32, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } } end,
      "MmaF16BF16Op", "ab_dtype", "float32")
    expect(function() warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 32 } } end,
      "MmaF16BF16Op", "shape_mnk", "(16,8,32)")
    expect(function() warp.MmaTF32Op { shape_mnk = { 16, 8, 16 } } end, "MmaTF32Op", "shape_mnk", "(16,8,16)")
    expect(function() warp.MmaI8Op { a_dtype = cute.int8, b_dtype = cute.int16, acc_dtype = cute.int32, shape_mnk = { 16, 8, 32 } } end,
      "MmaI8Op", "b_dtype", "int16")
    expect(function() warp.MmaI8Op { a_dtype = cute.int8, b_dtype = cute.int8, acc_dtype = cute.float32, shape_mnk = { 16, 8, 32 } } end,
      "MmaI8Op", "acc_dtype", "float32")
    expect(function() warp.MmaI8Op { a_dtype = cute.int8, b_dtype = cute.int8, acc_dtype = cute.int32, shape_mnk = { 16, 8, 32 }, overflow = "clamp" } end,
      "MmaI8Op", "overflow", "clamp")
    expect(function() warp.MmaFP8Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 32 } } end,
      "MmaFP8Op", "ab_dtype", "float16")
    expect(function() warp.MmaFP8Op { ab_dtype = "float8_e4m3fn", acc_dtype = cute.float32, shape_mnk = { 16, 8, 8 } } end,
      "MmaFP8Op", "shape_mnk", "(16,8,8)")
    expect(function() warp.MmaF64Op { shape_mnk = { 16, 8, 4 } } end, "MmaF64Op", "shape_mnk", "(16,8,4)")
    expect(function() warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 }, shape = 1 } end,
      "MmaF16BF16Op", "shape", "unknown")
    expect(function() warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32 } end,
      "MmaF16BF16Op", "shape_mnk", "missing")
    expect(function() warp.MmaF16BF16Op { ab_dtype = "float17", acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } } end,
      "MmaF16BF16Op", "float17")
    expect(function() cute.nvgpu.MmaUniversalOp(cute.int8) end, "MmaUniversalOp", "abacc_dtype", "int8")
    expect(function() cute.make_mma_atom({}) end, "make_mma_atom", "not an MMA op")
    expect(function() local a = cute.make_mma_atom(cute.make_mma_atom(warp.MmaTF32Op { shape_mnk = { 16, 8, 8 } })); return a end,
      "make_mma_atom")
  end)
  it("ops and atoms are read-only", function()
    local op = warp.MmaTF32Op { shape_mnk = { 16, 8, 8 } }
    expect(function() op.shape_mnk = { 16, 8, 4 } end, "MmaTF32Op", "read-only")
    local atom = cute.make_mma_atom(op)
    expect(function() atom.instruction = "x" end, "read-only")
  end)
end)

-- TiledMMA: every (thread, value) of the tiled layouts against the atom's
-- own (thread, value) map placed by hand: thread t is lane t % 32 of warp
-- t // 32; warps are numbered colexicographically over atom_layout_mnk
-- (AM, AN, 1); a thread's values are the atom's values, then the atom
-- repeats colexicographically over (Rest0, Rest1) = tile / (atom * warps).
-- opts.warp_pos(w) -> wm, wn overrides the warp numbering; opts.perm[i](p)
-- maps the logical position p along M, N or K to the element it permutes to.
describe("cute.make_tiled_mma", function()
  local function check_tiled(tm, AM, AN, opts)
    opts = opts or {}
    local id = function(p) return p end
    local perm = opts.perm or {}
    local pm, pn, pk = perm[1] or id, perm[2] or id, perm[3] or id
    local atom = tm.atom
    local am, an, ak = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
    local TM, TN, TK = tm.tile_size_mnk[1], tm.tile_size_mnk[2], tm.tile_size_mnk[3]
    local nthr = cute.size(atom.thr_id)
    assert.are.equal(nthr * AM * AN, tm.size)
    local specs = {
      A = { atom.layout_A_tv, am, ak, AM, 1, TM, TK, function(wm, _) return wm end, function() return 0 end, pm, pk },
      B = { atom.layout_B_tv, an, ak, AN, 1, TN, TK, function(_, wn) return wn end, function() return 0 end, pn, pk },
      C = { atom.layout_C_tv, am, an, AM, AN, TM, TN, function(wm, _) return wm end, function(_, wn) return wn end, pm, pn },
    }
    for which, sp in pairs(specs) do
      local atv, s0, s1, W0, W1, T0, T1, w0_of, w1_of = sp[1], sp[2], sp[3], sp[4], sp[5], sp[6], sp[7], sp[8], sp[9]
      local p0, p1 = sp[10], sp[11]
      local L = tm["get_layout" .. which .. "_TV"](tm)
      assert.are.equal(L, tm["tv_layout_" .. which .. "_tiled"])
      local nv = cute.size(atv) / nthr
      local R0, R1 = T0 / (s0 * W0), T1 / (s1 * W1)
      assert.are.equal(tm.size * nv * R0 * R1, cute.size(L))
      local seen, count = {}, 0
      for t = 0, tm.size - 1 do
        local lane, w = t % nthr, math.floor(t / nthr)
        local wm, wn = w % AM, math.floor(w / AM) % AN
        if opts.warp_pos then wm, wn = opts.warp_pos(w) end
        for v = 0, nv * R0 * R1 - 1 do
          local fv, r = v % nv, math.floor(v / nv)
          local r0, r1 = r % R0, math.floor(r / R0)
          local idx = atv(lane, fv)
          local c0, c1 = idx % s0, math.floor(idx / s0)
          local g0 = p0(c0 + s0 * (w0_of(wm, wn) + W0 * r0))
          local g1 = p1(c1 + s1 * (w1_of(wm, wn) + W1 * r1))
          local want = g0 + T0 * g1
          local got = L(t, v)
          if got ~= want then
            error(("%s %s at (t=%d, v=%d): %d, expected (%d,%d) = %d"):format(which, tostring(L), t, v, got, g0, g1, want))
          end
          if not seen[got] then seen[got] = true; count = count + 1 end
        end
      end
      assert.are.equal(T0 * T1, count) -- the whole tile is covered
    end
  end
  local f16 = warp.MmaF16BF16Op(cute.float16, cute.float32, { 16, 8, 16 })
  it("2 x 2 warps of m16n8k16: 128 threads, a 32 x 16 x 16 tile", function()
    local tm = cute.make_tiled_mma(f16, { 2, 2, 1 })
    assert.are.equal(128, tm.size)
    assert.are.same({ 32, 16, 16 }, tm.tile_size_mnk)
    assert.are.equal("(32,2,2,1):(1,32,64,0)", tostring(tm.thr_layout_vmnk))
    -- C by hand: lane (4,8) -> n = 2*t0 (stride 2*32), m = t1; warp m +16, warp n +8 (8*32)
    assert.are.equal("((4,8,2,2),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))", tostring(tm:get_layoutC_TV()))
    check_tiled(tm, 2, 2)
  end)
  it("a permutation that repeats the atoms along N and K", function()
    local tm = cute.make_tiled_mma(cute.make_mma_atom(f16), { 2, 2, 1 }, { 32, 32, 32 })
    assert.are.same({ 32, 32, 32 }, tm.tile_size_mnk)
    check_tiled(tm, 2, 2)
    check_tiled(cute.make_tiled_mma(f16, cute.make_layout({ 1, 4, 1 }), { cute._, 64, nil }), 1, 4)
  end)
  -- CuTe C++'s own printout of TiledMMA<MMA_Atom<SM80_16x8x8_F32TF32TF32F32_TN>,
  -- AtomLayout>::get_layoutA/B/C_TV() (the third case printed by the older
  -- API with ValLayoutMNK (2,1,1), the same tiling as permutation M = 64)
  it("tf32 m16n8k8 tilings print as CuTe C++ prints them", function()
    local tf32 = warp.MmaTF32Op({ 16, 8, 8 })
    local cases = {
      { { 1, 1, 1 }, nil, "((4,8),((2,2),(1,1))):((16,1),((8,64),(0,0)))", "((4,8),(2,(1,1))):((8,1),(32,(0,0)))",
        "((4,8),((2,2),(1,1))):((32,1),((16,8),(0,0)))" },
      { { 2, 1, 1 }, nil, "((4,8,2),((2,2),(1,1))):((32,1,16),((8,128),(0,0)))", "((4,8,2),(2,(1,1))):((8,1,0),(32,(0,0)))",
        "((4,8,2),((2,2),(1,1))):((64,1,16),((32,8),(0,0)))" },
      { { 2, 1, 1 }, { 64 }, "((4,8,2),((2,2),(2,1))):((64,1,16),((8,256),(32,0)))", "((4,8,2),(2,(1,1))):((8,1,0),(32,(0,0)))",
        "((4,8,2),((2,2),(2,1))):((128,1,16),((64,8),(32,0)))" },
      { { 2, 2, 1 }, nil, "((4,8,2,2),((2,2),(1,1))):((32,1,16,0),((8,128),(0,0)))", "((4,8,2,2),(2,(1,1))):((16,1,0,8),(64,(0,0)))",
        "((4,8,2,2),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))" },
    }
    for _, c in ipairs(cases) do
      local tm = cute.make_tiled_mma(tf32, c[1], c[2])
      assert.are.equal(c[3], tostring(tm:get_layoutA_TV()))
      assert.are.equal(c[4], tostring(tm:get_layoutB_TV()))
      assert.are.equal(c[5], tostring(tm:get_layoutC_TV()))
    end
  end)
  it("warps numbered row-major, and a permutation layout along M", function()
    -- atom_layout_mnk (2,2,1):(2,1,0): warp w is at M w / 2, N w % 2
    check_tiled(cute.make_tiled_mma(f16, cute.make_layout({ 2, 2, 1 }, { 2, 1, 0 })), 2, 2,
      { warp_pos = function(w) return math.floor(w / 2), w % 2 end })
    -- permutation M = (8,2,2):(1,16,8): logical row p = p0 + 8 p1 + 16 p2 is row p0 + 16 p1 + 8 p2
    local P = cute.make_layout({ 8, 2, 2 }, { 1, 16, 8 })
    local tm = cute.make_tiled_mma(f16, { 2, 1, 1 }, { P, nil, nil })
    assert.are.same({ 32, 8, 16 }, tm.tile_size_mnk)
    check_tiled(tm, 2, 1, { perm = { function(p) return P(p) end } })
  end)
  it("tf32 and int8 atoms, one warp with repeats along M", function()
    check_tiled(cute.make_tiled_mma(warp.MmaTF32Op({ 16, 8, 8 }), { 2, 1 }, { 64, 8, 16 }), 2, 1)
    check_tiled(cute.make_tiled_mma(warp.MmaI8Op(cute.int8, cute.int8, cute.int32, { 16, 8, 32 }), { 4, 2, 1 }), 4, 2)
  end)
  it("the universal FMA atom: 16 x 16 threads, each one element", function()
    local tm = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cute.float32), { 16, 16, 1 })
    assert.are.equal(256, tm.size)
    assert.are.same({ 16, 16, 1 }, tm.tile_size_mnk)
    for t = 0, 255 do
      assert.are.equal(t, tm:get_layoutC_TV()(t, 0))
      assert.are.equal(t % 16, tm:get_layoutA_TV()(t, 0))
      assert.are.equal(math.floor(t / 16), tm:get_layoutB_TV()(t, 0))
    end
    check_tiled(cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cute.float32), { 8, 4, 1 }, { 16, 16, 4 }), 8, 4)
  end)
  it("bad arguments are errors at the user's line", function()
    local function expect(f, ...)
      local line = debug.getinfo(2, "l").currentline
      local e = err_of(f)
      assert.is_truthy(e:find("mma_atom_spec.lua:" .. line .. ": cute.make_tiled_mma", 1, true), e)
      for _, s in ipairs({ ... }) do assert.is_truthy(e:find(s, 1, true), ("%q not in: %s"):format(s, e)) end
    end
    expect(function() cute.make_tiled_mma(42) end, "42", "not an MMA op or atom")
    expect(function() cute.make_tiled_mma(f16, { 2, 2, 1, 2 }) end, "atom_layout_mnk", "rank 4")
    expect(function() cute.make_tiled_mma(f16, "2x2") end, "atom_layout_mnk", "2x2")
    expect(function() cute.make_tiled_mma(f16, { 2, 2, 1 }, { 24 }) end, "permutation_mnk[1]", "24", "32")
    expect(function() cute.make_tiled_mma(f16, { 2, 2, 1 }, { "x" }) end, "permutation_mnk[1]", "\"x\"")
    expect(function() cute.make_tiled_mma(f16, { 2, 2, 1 }, 32) end, "permutation_mnk", "32")
  end)
end)
