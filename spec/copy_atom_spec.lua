-- Copy atoms and TiledCopy (lua/cute/copy_atom.lua): the ops of cute.nvgpu,
-- cute.nvgpu.cpasync and cute.nvgpu.warp, cute.make_copy_atom with CuTe's
-- bit layouts (cute/atom/copy_traits.hpp, copy_traits_sm75.hpp,
-- copy_traits_sm80.hpp, copy_traits_sm90.hpp) and their recast to the element
-- type, every (thread, value) of ldmatrix / stmatrix against the PTX ISA,
-- cute.make_tiled_copy_tv placed by hand and make_tiled_copy_A/B/C against
-- the TiledMMA's layouts; the errors for bad ops and atoms.
local cute = require("cute")

local warp, cpasync = cute.nvgpu.warp, cute.nvgpu.cpasync
local function idiv(a, b) return math.floor(a / b) end

local err_of = dofile("spec/support/util.lua").err_of

-- f raises an error at the caller's line containing every string given
local expect = dofile("spec/support/util.lua").expect_error

describe("copy ops", function()
  it("take keyword tables or CuTe DSL's positional order and print their arguments", function()
    local op = warp.LdMatrix8x8x16bOp { transpose = true, num_matrices = 4 }
    assert.are.equal(true, op.transpose)
    assert.are.equal(4, op.num_matrices)
    local op2 = warp.LdMatrix8x8x16bOp(false, 2)
    assert.are.equal(false, op2.transpose)
    assert.are.equal(2, op2.num_matrices)
    local d = warp.StMatrix8x8x16bOp()
    assert.are.equal(false, d.transpose)
    assert.are.equal(1, d.num_matrices)
    assert.is_truthy(tostring(op):find("LdMatrix8x8x16bOp", 1, true))
    assert.is_truthy(tostring(op):find("num_matrices = 4", 1, true))
    assert.are.equal("ALWAYS", cpasync.CopyG2SOp().cache_mode)
    assert.are.equal("GLOBAL", cpasync.CopyG2SOp { cache_mode = cpasync.LoadCacheMode.GLOBAL }.cache_mode)
    assert.are.equal("GLOBAL", cpasync.CopyG2SOp(cpasync.LoadCacheMode.GLOBAL).cache_mode)
    assert.is_truthy(tostring(cute.nvgpu.CopyUniversalOp()):find("CopyUniversalOp", 1, true))
    -- the MMA ops are still there beside the copy ops
    assert.is_function(warp.MmaF16BF16Op)
    assert.is_function(cute.nvgpu.MmaUniversalOp)
  end)

  it("bad arguments are errors at the user's line naming the op and the value", function()
    expect(function() warp.LdMatrix8x8x16bOp { num_matrices = 3 } end,
      "cute.nvgpu.warp.LdMatrix8x8x16bOp", "num_matrices = 3", "1, 2 or 4")
    expect(function() warp.StMatrix8x8x16bOp { transpose = 1 } end,
      "cute.nvgpu.warp.StMatrix8x8x16bOp", "transpose = 1", "boolean")
    expect(function() warp.LdMatrix8x8x16bOp { trans = true } end, "LdMatrix8x8x16bOp", "unknown argument trans")
    expect(function() cpasync.CopyG2SOp { cache_mode = cpasync.LoadCacheMode.STREAMING } end,
      "cute.nvgpu.cpasync.CopyG2SOp", "cache_mode = STREAMING", "ALWAYS", "GLOBAL")
    expect(function() cpasync.CopyG2SOp { cache_mode = "cg" } end, "CopyG2SOp", "cache_mode = \"cg\"")
    local op = warp.LdMatrix8x8x16bOp()
    expect(function() op.transpose = true end, "read-only")
  end)
end)

describe("cute.make_copy_atom", function()
  it("the universal copy: one thread, num_bits_per_copy bits, values of the dtype", function()
    local a = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.float32, { num_bits_per_copy = 128 })
    assert.are.equal("1:0", tostring(a.thr_id))
    assert.are.equal(128, a.num_bits_per_copy)
    assert.are.equal("float32", a.value_type)
    assert.are.equal("(1,128):(0,1)", tostring(a.layout_src_tv_bits))
    assert.are.equal("(1,128):(0,1)", tostring(a.layout_dst_tv_bits))
    assert.are.equal("(1,4):(0,1)", tostring(a.layout_src_tv))
    assert.are.equal("(1,4):(0,1)", tostring(a.layout_dst_tv))
    assert.are.equal("(1,4):(0,1)", tostring(a.layout_ref_tv))
    assert.are.equal("sm_50", a.min_arch)
    -- default: one element
    local b = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.bfloat16)
    assert.are.equal(16, b.num_bits_per_copy)
    assert.are.equal("(1,1):(0,1)", tostring(b.layout_src_tv))
    local h = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), "Float16", { num_bits_per_copy = 64 })
    assert.are.equal("(1,4):(0,1)", tostring(h.layout_dst_tv))
    local c = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Int8, { num_bits_per_copy = 8 })
    assert.are.equal("(1,1):(0,1)", tostring(c.layout_src_tv))
  end)

  it("cp.async: 4, 8 or 16 bytes with .ca, 16 bytes with .cg, sm_80", function()
    for _, bits in ipairs({ 32, 64, 128 }) do
      local a = cute.make_copy_atom(cpasync.CopyG2SOp(), cute.float16, { num_bits_per_copy = bits })
      assert.are.equal("cp.async.ca.shared.global", a.instruction)
      assert.are.equal(bits, a.num_bits_per_copy)
      assert.are.equal(("(1,%d):(0,1)"):format(bits), tostring(a.layout_src_tv_bits))
      assert.are.equal(("(1,%d):(0,1)"):format(idiv(bits, 16)), tostring(a.layout_src_tv))
      assert.are.equal("1:0", tostring(a.thr_id))
      assert.are.equal("sm_80", a.min_arch)
    end
    local g = cute.make_copy_atom(cpasync.CopyG2SOp { cache_mode = cpasync.LoadCacheMode.GLOBAL }, cute.float32,
      { num_bits_per_copy = 128 })
    assert.are.equal("cp.async.cg.shared.global", g.instruction)
    assert.are.equal("(1,4):(0,1)", tostring(g.layout_dst_tv))
    assert.is_true(g:supports_arch("sm_80"))
    assert.is_false(g:supports_arch("sm_75"))
    expect(function() g:check_arch("sm_75") end, "cp.async.cg.shared.global", "sm_80", "sm_75")
  end)

  it("bad sizes and dtypes are errors at the user's line", function()
    local U = cute.nvgpu.CopyUniversalOp()
    expect(function() cute.make_copy_atom(U, cute.float32, { num_bits_per_copy = 48 }) end,
      "cute.make_copy_atom", "num_bits_per_copy = 48", "8, 16, 32, 64 or 128")
    expect(function() cute.make_copy_atom(U, cute.float32, { num_bits_per_copy = 16 }) end,
      "num_bits_per_copy = 16", "float32", "32 bits")
    expect(function() cute.make_copy_atom(U, cute.float64, { num_bits_per_copy = 256 }) end, "num_bits_per_copy = 256")
    expect(function() cute.make_copy_atom(U, "float33") end, "cute.make_copy_atom", "\"float33\"", "dtype")
    expect(function() cute.make_copy_atom(U, cute.float32, { num_bit_per_copy = 32 }) end, "unknown argument num_bit_per_copy")
    expect(function() cute.make_copy_atom(cpasync.CopyG2SOp(), cute.float32, { num_bits_per_copy = 256 }) end,
      "CopyG2SOp", "num_bits_per_copy = 256", "32, 64 or 128")
    expect(function() cute.make_copy_atom(cpasync.CopyG2SOp(), cute.int8, { num_bits_per_copy = 16 }) end,
      "num_bits_per_copy = 16", "32, 64 or 128")
    expect(function() cute.make_copy_atom(cpasync.CopyG2SOp { cache_mode = "GLOBAL" }, cute.float32, { num_bits_per_copy = 64 }) end,
      "num_bits_per_copy = 64", "GLOBAL", "cp.async.cg", "128")
    expect(function() cute.make_copy_atom(cpasync.CopyG2SOp(), cute.float64, { num_bits_per_copy = 32 }) end,
      "num_bits_per_copy = 32", "float64", "64 bits")
    expect(function() cute.make_copy_atom(cpasync.CopyG2SOp(), cute.float32) end, "num_bits_per_copy is missing")
    expect(function() cute.make_copy_atom(warp.LdMatrix8x8x16bOp(), cute.float64) end,
      "LdMatrix8x8x16bOp", "float64", "64 bits", "8-, 16- or 32-bit")
    expect(function() cute.make_copy_atom(warp.LdMatrix8x8x16bOp{ transpose = true }, cute.float32) end,
      "LdMatrix8x8x16bOp", "float32", "ldmatrix with transpose moves 16-bit elements")
    expect(function() cute.make_copy_atom(warp.StMatrix8x8x16bOp(), cute.int8) end, "StMatrix8x8x16bOp", "int8", "16-bit")
    expect(function() cute.make_copy_atom(warp.LdMatrix8x8x16bOp(), cute.float16, { num_bits_per_copy = 128 }) end,
      "num_bits_per_copy", "LdMatrix8x8x16bOp")
    expect(function() cute.make_copy_atom("ldmatrix", cute.float16) end, "cute.make_copy_atom", "\"ldmatrix\"", "not a copy op")
  end)

  -- CuTe's Copy_Traits<SM75_U32x{1,2,4}_LDSM_N> and <SM75_U16x{2,4,8}_LDSM_T> (bits)
  local ldsm = {
    [false] = {
      [1] = { "((8,4),128):((128,0),1)", "(32,32):(32,1)" },
      [2] = { "((16,2),128):((128,0),1)", "(32,(32,2)):(32,(1,1024))" },
      [4] = { "(32,128):(128,1)", "(32,(32,4)):(32,(1,1024))" },
    },
    [true] = {
      [1] = { "((8,4),128):((128,0),1)", "((4,8),(16,2)):((256,16),(1,128))" },
      [2] = { "((16,2),128):((128,0),1)", "((4,8),(16,2,2)):((256,16),(1,128,1024))" },
      [4] = { "(32,128):(128,1)", "((4,8),(16,2,4)):((256,16),(1,128,1024))" },
    },
  }
  -- the same recast to 16-bit elements (CuTe's upcast<16>)
  local ldsm16 = {
    [false] = {
      [1] = { "((8,4),8):((8,0),1)", "(32,2):(2,1)" },
      [2] = { "((16,2),8):((8,0),1)", "(32,(2,2)):(2,(1,64))" },
      [4] = { "(32,8):(8,1)", "(32,(2,4)):(2,(1,64))" },
    },
    [true] = {
      [1] = { "((8,4),8):((8,0),1)", "((4,8),(1,2)):((16,1),(1,8))" },
      [2] = { "((16,2),8):((8,0),1)", "((4,8),(1,2,2)):((16,1),(1,8,64))" },
      [4] = { "(32,8):(8,1)", "((4,8),(1,2,4)):((16,1),(1,8,64))" },
    },
  }

  for _, tr in ipairs({ false, true }) do
    for _, nm in ipairs({ 1, 2, 4 }) do
      local name = ("ldmatrix x%d%s"):format(nm, tr and ".trans" or "")
      it(name .. ": CuTe's bit layouts, recast to 16 bits, instruction and arch", function()
        local a = cute.make_copy_atom(warp.LdMatrix8x8x16bOp { transpose = tr, num_matrices = nm }, cute.float16)
        assert.are.equal("32:1", tostring(a.thr_id))
        assert.are.equal(ldsm[tr][nm][1], tostring(a.layout_src_tv_bits))
        assert.are.equal(ldsm[tr][nm][2], tostring(a.layout_dst_tv_bits))
        assert.are.equal(ldsm[tr][nm][2], tostring(a.layout_ref_tv_bits))
        assert.are.equal(ldsm16[tr][nm][1], tostring(a.layout_src_tv))
        assert.are.equal(ldsm16[tr][nm][2], tostring(a.layout_dst_tv))
        assert.are.equal(ldsm16[tr][nm][2], tostring(a.layout_ref_tv))
        assert.are.equal(nm * 32, a.num_bits_per_copy)
        assert.are.equal(("ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16"):format(nm, tr and ".trans" or ""), a.instruction)
        assert.are.equal("sm_75", a.min_arch)
        -- stmatrix: the same layouts, source and destination swapped (copy_traits_sm90.hpp)
        local s = cute.make_copy_atom(warp.StMatrix8x8x16bOp(tr, nm), cute.bfloat16)
        assert.are.equal(ldsm[tr][nm][2], tostring(s.layout_src_tv_bits))
        assert.are.equal(ldsm[tr][nm][1], tostring(s.layout_dst_tv_bits))
        assert.are.equal(ldsm[tr][nm][2], tostring(s.layout_ref_tv_bits))
        assert.are.equal(ldsm16[tr][nm][2], tostring(s.layout_src_tv))
        assert.are.equal(ldsm16[tr][nm][1], tostring(s.layout_dst_tv))
        assert.are.equal(("stmatrix.sync.aligned.m8n8.x%d%s.shared.b16"):format(nm, tr and ".trans" or ""), s.instruction)
        assert.are.equal("sm_90", s.min_arch)
        assert.is_false(s:supports_arch("sm_89"))
        assert.is_true(s:supports_arch("sm_90a"))
      end)

      it(name .. ": every (thread, value) where the PTX ISA puts it", function()
        local a = cute.make_copy_atom(warp.LdMatrix8x8x16bOp { transpose = tr, num_matrices = nm }, cute.bfloat16)
        local S, D = a.layout_src_tv, a.layout_dst_tv
        -- index space: matrix j, row r, column c of the matrix as stored in
        -- shared memory (rows of 16 bytes) -> 64 j + 8 r + c
        local seen = {}
        for t = 0, 31 do
          -- source: lane t (mod 8 x num_matrices) gives the address of row t % 8 of matrix t / 8
          local lt = t % (8 * nm)
          for k = 0, 7 do
            assert.are.equal(64 * (idiv(lt, 8)) + 8 * (lt % 8) + k, S(t, k))
          end
          -- destination: register j of lane t holds row t / 4, columns 2 (t % 4) and
          -- 2 (t % 4) + 1 of matrix j (with .trans: of its transpose)
          for v = 0, 2 * nm - 1 do
            local j, half = idiv(v, 2), v % 2
            local e = D(t, v)
            local mj, r, c = idiv(e, 64), idiv(e % 64, 8), e % 8
            assert.are.equal(j, mj)
            if tr then
              assert.are.same({ idiv(t, 4), 2 * (t % 4) + half }, { c, r }, ("t=%d v=%d"):format(t, v))
            else
              assert.are.same({ idiv(t, 4), 2 * (t % 4) + half }, { r, c }, ("t=%d v=%d"):format(t, v))
            end
            assert.is_nil(seen[e])
            seen[e] = true
          end
        end
        local n = 0
        for _ in pairs(seen) do n = n + 1 end
        assert.are.equal(64 * nm, n)
      end)
    end
  end

  it("atoms are read-only and print their layouts", function()
    local a = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(false, 4), cute.float16)
    expect(function() a.num_bits_per_copy = 64 end, "read-only")
    local s = tostring(a)
    assert.is_truthy(s:find("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1, true), s)
    assert.is_truthy(s:find("(32,(2,4)):(2,(1,64))", 1, true), s)
  end)
end)

describe("cute.make_tiled_copy_tv", function()
  it("128 threads (32,4):(4,1) x (1,8) f16 values: a 32 x 32 tile, each thread 8 along N", function()
    local atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.float16, { num_bits_per_copy = 128 })
    local tc = cute.make_tiled_copy_tv(atom, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }))
    assert.are.equal(128, tc.size)
    assert.are.same({ 32, 32 }, tc.tiler_mn)
    local tv = tc.layout_tv_tiled
    assert.are.equal(128, cute.size(cute.get(tv, 0)))
    assert.are.equal(8, cute.size(cute.get(tv, 1)))
    -- thread tid is at (tid / 4, tid % 4) of the thread layout; its value v at
    -- row tid / 4, column 8 (tid % 4) + v of the 32 x 32 tile (column-major index)
    for tid = 0, 127 do
      for v = 0, 7 do
        local m, n = idiv(tid, 4), 8 * (tid % 4) + v
        assert.are.equal(m + 32 * n, tv(tid, v), ("tid=%d v=%d"):format(tid, v))
      end
    end
    assert.are.equal(atom, tc.atom)
  end)

  it("column-major threads (16,8) x (4,1) f32 values: a 64 x 8 tile", function()
    local atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cute.float32, { num_bits_per_copy = 128 })
    local tc = cute.make_tiled_copy_tv(atom, cute.make_layout({ 16, 8 }), cute.make_layout({ 4, 1 }))
    assert.are.equal(128, tc.size)
    assert.are.same({ 64, 8 }, tc.tiler_mn)
    for tid = 0, 127 do
      for v = 0, 3 do
        local m, n = 4 * (tid % 16) + v, idiv(tid, 16)
        assert.are.equal(m + 64 * n, tc.layout_tv_tiled(tid, v))
      end
    end
  end)

  it("values that are not whole copies, or threads not whole atoms, are errors", function()
    local atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.float16, { num_bits_per_copy = 128 })
    expect(function() cute.make_tiled_copy_tv(atom, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 4 })) end,
      "cute.make_tiled_copy_tv", "4 values", "8")
    local ld = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(false, 4), cute.float16)
    expect(function() cute.make_tiled_copy_tv(ld, cute.make_layout({ 16 }), cute.make_layout({ 1, 8 })) end,
      "cute.make_tiled_copy_tv", "16 threads", "32")
    expect(function() cute.make_tiled_copy_tv(cute.nvgpu.CopyUniversalOp(), cute.make_layout(4), cute.make_layout(1)) end,
      "cute.make_tiled_copy_tv", "not a copy atom")
    expect(function() cute.make_tiled_copy_tv(atom, { 32, 4 }, cute.make_layout({ 1, 8 })) end, "thr_layout", "not a layout")
  end)
end)

describe("cute.make_tiled_copy_A / B / C", function()
  local op = warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } }
  it("take the TiledMMA's thread-value layouts and tile", function()
    local tm = cute.make_tiled_mma(op, { 2, 2, 1 })
    local ld4 = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(false, 4), cute.float16)
    local ca = cute.make_tiled_copy_A(ld4, tm)
    assert.are.equal(tostring(tm:get_layoutA_TV()), tostring(ca.layout_tv_tiled))
    assert.are.same({ 32, 16 }, ca.tiler_mn)
    assert.are.equal(128, ca.size)
    local ld2t = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(true, 2), cute.float16)
    local cb = cute.make_tiled_copy_B(ld2t, tm)
    assert.are.equal(tostring(tm:get_layoutB_TV()), tostring(cb.layout_tv_tiled))
    assert.are.same({ 16, 16 }, cb.tiler_mn)
    local u = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.float32, { num_bits_per_copy = 64 })
    local cc = cute.make_tiled_copy_C(u, tm)
    assert.are.equal(tostring(tm:get_layoutC_TV()), tostring(cc.layout_tv_tiled))
    assert.are.same({ 32, 16 }, cc.tiler_mn)
  end)
  it("an atom that copies more values than a thread holds is an error", function()
    local tm = cute.make_tiled_mma(op, { 2, 2, 1 })
    local ld4 = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(false, 4), cute.float16)
    expect(function() cute.make_tiled_copy_B(ld4, tm) end, "cute.make_tiled_copy_B", "4 values", "8")
    expect(function() cute.make_tiled_copy_C(ld4, "mma") end, "cute.make_tiled_copy_C", "not a TiledMMA")
  end)
end)

describe("copy atoms' instructions", function()
  local PTXAS = require("cute.ir").ptxas_path()
  -- the atom's instruction with its operands, in a PTX kernel ptxas must accept
  local function ptx_of(atom, arch, version)
    local op = atom.op
    local body
    if op.kind == "cp.async" then
      body = { ("  %s [s], [g], %d;"):format(atom.instruction, atom.num_bits_per_copy / 8),
        "  cp.async.commit_group;", "  cp.async.wait_group 0;" }
    else
      local regs = {}
      for i = 0, op.num_matrices - 1 do regs[#regs + 1] = "r" .. i end
      local list = "{" .. table.concat(regs, ", ") .. "}"
      if op.kind == "ldmatrix" then
        body = { ("  %s %s, [s];"):format(atom.instruction, list), "  st.global.b32 [g], r0;" }
      else
        body = {}
        for i = 0, op.num_matrices - 1 do body[#body + 1] = ("  mov.b32 r%d, %d;"):format(i, i + 1) end
        body[#body + 1] = ("  %s [s], %s;"):format(atom.instruction, list)
      end
    end
    return table.concat({ ".version " .. version, ".target " .. arch, ".address_size 64",
      ".visible .entry k(.param .u64 p) {", "  .shared .align 16 .b8 smem[512];", "  .reg .b32 r<4>;",
      "  .reg .u32 s;", "  .reg .u64 g;", "  mov.u32 s, smem;", "  ld.param.u64 g, [p];",
      "  cvta.to.global.u64 g, g;", table.concat(body, "\n"), "  ret;", "}", "" }, "\n")
  end
  local function ptxas(src, arch)
    local path = os.tmpname()
    local f = assert(io.open(path .. ".ptx", "w"))
    f:write(src)
    f:close()
    local p = io.popen(("%q -arch=%s %q -o %q 2>&1; echo \"ptxas-rc=$?\""):format(PTXAS, arch, path .. ".ptx", path .. ".cubin"))
    local out = p:read("*a")
    p:close()
    os.remove(path .. ".ptx"); os.remove(path .. ".cubin"); os.remove(path)
    return out:match("ptxas%-rc=(%d+)%s*$") == "0", out
  end
  local atoms = {}
  for _, tr in ipairs({ false, true }) do
    for _, nm in ipairs({ 1, 2, 4 }) do
      atoms[#atoms + 1] = function() return cute.make_copy_atom(warp.LdMatrix8x8x16bOp(tr, nm), cute.float16) end
      atoms[#atoms + 1] = function() return cute.make_copy_atom(warp.StMatrix8x8x16bOp(tr, nm), cute.bfloat16) end
    end
  end
  for _, b in ipairs({ 32, 64, 128 }) do
    atoms[#atoms + 1] = function() return cute.make_copy_atom(cpasync.CopyG2SOp(), cute.float32, { num_bits_per_copy = b }) end
  end
  atoms[#atoms + 1] = function()
    return cute.make_copy_atom(cpasync.CopyG2SOp(cpasync.LoadCacheMode.GLOBAL), cute.float16, { num_bits_per_copy = 128 })
  end
  local arch_ptx = { sm_75 = 6.3, sm_80 = 7.0, sm_90 = 7.8, sm_90a = 8.0 }
  for i, mk in ipairs(atoms) do
    local name = ("ptxas assembles copy atom %d's instruction for its min_arch and sm_90a"):format(i)
    if not PTXAS then
      pending(name .. " (needs ptxas)")
    else
      it(name, function()
        local atom = mk()
        for _, arch in ipairs({ atom.min_arch, "sm_90a" }) do
          local src = ptx_of(atom, arch, ("%.1f"):format(math.max(tonumber(atom.min_ptx), arch_ptx[arch])))
          local ok, out = ptxas(src, arch)
          assert(ok, ("ptxas (%s) refused %s:\n%s\n%s"):format(arch, atom.instruction, out, src))
        end
        -- and refuses it one arch older than min_arch (ldmatrix: sm_72; stmatrix: sm_89; cp.async: sm_75)
        local older = ({ sm_75 = "sm_72", sm_80 = "sm_75", sm_90 = "sm_89" })[atom.min_arch]
        local ok = ptxas(ptx_of(atom, older, ("%.1f"):format(math.max(tonumber(atom.min_ptx), 7.8))), older)
        assert.is_false(ok, atom.instruction .. " assembled for " .. older)
      end)
    end
  end
end)

describe("cute.copy with a universal-copy atom", function()
  local util = dofile("spec/support/util.lua")
  local ffi = require("ffi")
  local f32, f16 = cute.float32, cute.float16
  local function atom_of(dt, bits) return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dt, { num_bits_per_copy = bits }) end
  -- each of 256 threads copies its n values of A to registers (one atom at a
  -- time), then to the n values of B of the next thread
  local function kernel(dt, bits, n)
    local atom = atom_of(dt, bits)
    return cute.kernel(function(A, B)
      local t = cute.arch.thread_idx()
      local r = cute.make_fragment(cute.make_layout(n), dt)
      cute.copy(atom, cute.local_tile(A, { n }, { t }), r)
      cute.copy(atom, r, cute.local_tile(B, { n }, { cute.rem(t + 1, 256) }))
    end, { name = ("copy_atom_%s_%d"):format(dt.name, bits) })
  end
  local function ptx_of(k, dt, n)
    return k:with({ arch = "sm_80", opt_level = 3 }):compile(cute.tensor_spec({ 256 * n }, dt), cute.tensor_spec({ 256 * n }, dt)).ptx
  end

  it("each num_bits_per_copy group is one vector load and one vector store", function()
    local ptx = ptx_of(kernel(f16, 128, 16), f16, 16)
    local _, loads = ptx:gsub("ld%.global[%.%w]*%.v4%.[ub]32", "")
    local _, stores = ptx:gsub("st%.global%.v4%.[ub]32", "")
    assert.are.equal(2, loads, ptx)
    assert.are.equal(2, stores, ptx)
    local p64 = ptx_of(kernel(f32, 64, 2), f32, 2)
    local _, l64 = p64:gsub("ld%.global[%.%w]*%.v2%.[fub]32", "")
    local _, s64 = p64:gsub("st%.global%.v2%.[fub]32", "")
    assert.are.equal(1, l64, p64)
    assert.are.equal(1, s64, p64)
    assert.falsy(p64:find("v4", 1, true), p64)
    -- the GPU spec's kernels
    for _, c in ipairs({ { f32, 4 }, { cute.uint16, 8 } }) do
      local p = ptx_of(kernel(c[1], 128, c[2]), c[1], c[2])
      local _, l = p:gsub("ld%.global[%.%w]*%.v4%.[fub]32", "")
      local _, st = p:gsub("st%.global%.v4%.[fub]32", "")
      assert.are.same({ 1, 1 }, { l, st }, p)
    end
  end)

  it("bad tensors are errors at the user's line", function()
    local a16 = atom_of(f16, 128)
    local function trace(body)
      local k = cute.kernel(body, { name = "copy_atom_bad" })
      return err_of(function() k:ir(cute.tensor_spec({ 1024 }, f16)) end)
    end
    local function at(e, ...)
      for _, s in ipairs({ ... }) do assert.is_truthy(e:find(s, 1, true), ("%q not in: %s"):format(s, e)) end
      assert.is_truthy(e:find("copy_atom_spec.lua:%d+: cute.copy"), e)
    end
    at(trace(function(A)
      cute.copy(atom_of(f32, 128), cute.local_tile(A, { 8 }, { 0 }), cute.make_fragment(cute.make_layout(8), f16))
    end), "src holds float16", "the atom copies float32")
    at(trace(function(A)
      cute.copy(a16, cute.local_tile(A, { 4 }, { 0 }), cute.make_fragment(cute.make_layout(4), f16))
    end), "4 values are not a whole number of the atom's 8-value (128-bit) copies")
    at(trace(function(A)
      cute.copy(a16, cute.local_tile(A, { 8 }, { 0 }), cute.make_fragment(cute.make_layout(8, 2), f16))
    end), "dst values 0..7 are not contiguous")
    at(trace(function(A)
      cute.copy(a16, cute.make_tensor(A:ptr_at({ 4 }), cute.make_layout(8)), cute.make_fragment(cute.make_layout(8), f16))
    end), "src values 0..7 are only known to be 2-byte aligned", "128-bit copy needs 16 bytes")
    at(trace(function(A)
      cute.copy(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(false, 1), f16), cute.local_tile(A, { 8 }, { 0 }),
        cute.make_fragment(cute.make_layout(8), f16))
    end), "src is in global memory; ldmatrix.sync.aligned.m8n8.x1.shared.b16 reads shared memory only")
  end)

  util.gpu_it("256 threads copy 4 f32 (128 bits) and 8 uint16 (128 bits) per thread through registers", function()
    local n = 4
    local ha = util.rand_floats(256 * n)
    local A, B = cute.from_host(ha, f32, { 256 * n }), cute.zeros({ 256 * n }, f32)
    local k = kernel(f32, 128, n)
    k:launch { grid = 1, block = 256 }(A, B)
    local hb = B:to_host()
    for t = 0, 255 do
      local u = (t + 1) % 256
      for i = 0, n - 1 do assert.are.equal(ha[t * n + i], hb[u * n + i]) end
    end
    -- 16-bit words from the same random values
    local hh = ffi.new("uint16_t[?]", 256 * 8)
    for i = 0, 256 * 8 - 1 do hh[i] = math.floor(ha[i % (256 * n)] * 1000) % 65536 end
    local A16, B16 = cute.from_host(hh, cute.uint16, { 256 * 8 }), cute.zeros({ 256 * 8 }, cute.uint16)
    local k16 = kernel(cute.uint16, 128, 8)
    k16:launch { grid = 1, block = 256 }(A16, B16)
    local hb16 = B16:to_host()
    for t = 0, 255 do
      local u = (t + 1) % 256
      for i = 0, 7 do assert.are.equal(hh[t * 8 + i], hb16[u * 8 + i]) end
    end
  end)
end)

describe("ldmatrix atoms' layouts on the hardware", function()
  local util = dofile("spec/support/util.lua")
  local ffi = require("ffi")
  local bit = require("bit")
  local u16, u32 = cute.uint16, cute.uint32
  -- one warp: 256 random 16-bit words to shared memory (matrix j, row r at
  -- element 64 j + 8 r); lane t passes the row address layout_src_tv(t, 0);
  -- the nm registers it receives go to Out[nm t + j]
  local function ldsm_kernel(atom)
    local nm, tr = atom.op.num_matrices, atom.op.transpose
    return cute.kernel(function(A, Out)
      local lane = cute.arch.lane_idx()
      local s = cute.make_shared_tensor(cute.make_layout(256), u16, 16)
      for j = 0, 7 do s[lane * 8 + j] = A[lane * 8 + j] end
      cute.arch.sync_threads()
      local rows = cute.make_tensor(s, atom.layout_src_tv)
      local f = cute.arch.ldmatrix(rows:ptr_at({ lane, 0 }), { num_matrices = nm, transpose = tr })
      for j = 0, nm - 1 do Out[lane * nm + j] = f[j] end
    end, { name = ("ldsm_atom_x%d%s"):format(nm, tr and "_t" or "") })
  end
  local cases = {}
  for _, tr in ipairs({ false, true }) do
    for _, nm in ipairs({ 1, 2, 4 }) do cases[#cases + 1] = { tr, nm } end
  end
  it("the kernels compile for sm_80 and issue the atom's instruction", function()
    for _, c in ipairs(cases) do
      local atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(c[1], c[2]), u16)
      local r = ldsm_kernel(atom):with({ arch = "sm_80", opt_level = 3 })
        :compile(cute.tensor_spec({ 256 }, u16), cute.tensor_spec({ 32 * c[2] }, u32))
      assert.is_truthy(r.ptx:find(atom.instruction, 1, true), r.ptx)
    end
  end)
  util.gpu_it("every (thread, value) of layout_dst_tv holds the element ldmatrix loads there", function()
    local r = util.rand_floats(256)
    local ha = ffi.new("uint16_t[?]", 256)
    for i = 0, 255 do ha[i] = math.floor((r[i] + 1) * 32768) % 65536 end
    local A = cute.from_host(ha, u16, { 256 })
    for _, c in ipairs(cases) do
      local atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(c[1], c[2]), u16)
      local nm = c[2]
      local Out = cute.zeros({ 32 * nm }, u32)
      ldsm_kernel(atom):launch { grid = 1, block = 32 }(A, Out)
      local ho = Out:to_host()
      local D = atom.layout_dst_tv
      for t = 0, 31 do
        for v = 0, 2 * nm - 1 do
          local reg = ho[t * nm + idiv(v, 2)]
          local got = bit.band(bit.rshift(tonumber(reg), 16 * (v % 2)), 0xffff)
          assert.are.equal(ha[D(t, v)], got, ("%s: lane %d value %d"):format(atom.instruction, t, v))
        end
      end
    end
  end)
end)

describe("TiledCopy source and destination layouts", function()
  local op = warp.MmaF16BF16Op { ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } }
  local function same_map(a, b, nthr, nval, what)
    for t = 0, nthr - 1 do
      for v = 0, nval - 1 do assert.are.equal(a(t, v), b(t, v), ("%s t=%d v=%d"):format(what, t, v)) end
    end
  end
  it("ldmatrix.x4 for A: lane l of warp w points at row 16 (w % 2) + l % 8 + 8 ((l / 8) % 2), column 8 (l / 16)", function()
    local tm = cute.make_tiled_mma(op, { 2, 2, 1 })
    local ca = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(false, 4), cute.float16), tm)
    local S = ca:get_layoutS_TV()
    assert.are.equal(tostring(S), tostring(ca.layout_src_tv_tiled))
    for t = 0, 127 do
      local l, w = t % 32, idiv(t, 32)
      for k = 0, 7 do
        local e = S(t, k) -- column-major in the 32 x 16 (M, K) tile
        assert.are.same({ 16 * (w % 2) + l % 8 + 8 * (idiv(l, 8) % 2), 8 * idiv(l, 16) + k }, { e % 32, idiv(e, 32) },
          ("t=%d k=%d"):format(t, k))
      end
    end
    -- the destination is the atom's reference: the MMA's own A layout
    same_map(ca:get_layoutD_TV(), tm:get_layoutA_TV(), 128, 8, "A dst")
  end)
  it("ldmatrix.x2.trans for B (K x N row-major in memory): lane l points at K row l % 16", function()
    local tm = cute.make_tiled_mma(op)
    local cb = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(true, 2), cute.float16), tm)
    local S = cb.layout_src_tv_tiled
    for l = 0, 31 do
      for n = 0, 7 do
        local e = S(l, n) -- column-major in the 8 x 16 (N, K) tile
        assert.are.same({ n, l % 16 }, { e % 8, idiv(e, 8) }, ("l=%d n=%d"):format(l, n))
      end
    end
    same_map(cb.layout_dst_tv_tiled, tm:get_layoutB_TV(), 32, 4, "B dst")
  end)
  it("a universal copy's source and destination are the tiled layout itself", function()
    local atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.float16, { num_bits_per_copy = 128 })
    local tc = cute.make_tiled_copy_tv(atom, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }))
    assert.are.equal("((4,32),(8,1)):((256,1),(32,0))", tostring(tc.layout_src_tv_tiled))
    same_map(tc.layout_src_tv_tiled, tc.layout_tv_tiled, 128, 8, "src")
    same_map(tc.layout_dst_tv_tiled, tc.layout_tv_tiled, 128, 8, "dst")
  end)
end)
