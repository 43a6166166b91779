-- ldmatrix of 8- and 32-bit K-major elements through cute.copy (lua/cute/copy_atom.lua,
-- copy_matrix.lua): an 8 x 8 b16 matrix is 8 rows of 16 int8 or of 4 f32 / tf32, so
-- the b16 layouts recast to those widths give exactly the m16n8k32 int8 and m16n8k8
-- tf32 fragments (CuTe's SM75_U32x4_LDSM_N on such data).  No GPU: the atoms' layouts
-- against CuTe's recast written by hand; a model of the instruction (lane l gives row
-- l % 8 of matrix l / 8; register j of lane l holds bytes 4 (l % 4) .. 4 (l % 4) + 3 of
-- row l / 4 of matrix j) run on every thread's partition_S addresses, which must put
-- each shared element in the fragment register where the TiledMMA's partition_A / B
-- has it; the PTX of small GEMMs (instruction counts, ptxas, no spills); the errors;
-- #gpu: those GEMMs on random data against a CPU reference.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local layout = require("cute.layout")
local has = util.has
local THIS = "spec/ldmatrix_wide_spec.lua"
local _ = cute._
local f32, i8, u8, i32 = cute.float32, cute.int8, cute.uint8, cute.int32
local PTXAS = C.cute_ptxas_path() ~= nil
local LdM = cute.nvgpu.warp.LdMatrix8x8x16bOp

local function expect_at(marker, f, ...)
  local e = util.err_of(f)
  assert.truthy(e:find(THIS .. ":" .. util.line_of(THIS, "-- <" .. marker .. ">") .. ": ", 1, true),
    "not at the user's line: " .. e)
  for _, w in ipairs({ ... }) do assert.truthy(e:find(w, 1, true), ("%q not in: %s"):format(w, e)) end
end

local function tf32_mma(perm_n)
  return cute.make_tiled_mma(cute.nvgpu.warp.MmaTF32Op({ 16, 8, 8 }), { 2, 2, 1 }, perm_n and { _, perm_n, _ } or nil)
end
local function i8_mma(perm_n, b)
  local op = cute.nvgpu.warp.MmaI8Op{ a_dtype = i8, b_dtype = b or i8, acc_dtype = i32, shape_mnk = { 16, 8, 32 } }
  return cute.make_tiled_mma(op, { 2, 2, 1 }, perm_n and { _, perm_n, _ } or nil)
end

local function traced(f)
  local k = cute.kernel(function(X) f(X) end, { name = "ldsm_wide_model" })
  k:ir(cute.tensor_spec({ 64, 64 }, f32))
end

local function offsets(T)
  local L = layout.make_layout(T.layout.shape, T.layout.stride)
  local o = {}
  for i = 0, layout.size(L) - 1 do o[i] = T.off + L(i) end
  return o
end

-- The model: w = 128 / bits values per row, per = 32 / bits per register.
-- Instruction g of lane l, value v = per j + h (register j, part h) reads
--   row(lane 8 j + l / 4, g) + per (l % 4) + h
-- which must be the element the TiledMMA puts at fragment register view(g vr + v).
local function check_model(tc, tm, which, sX, bits)
  local nm = tc.atom.op.num_matrices
  local w, per = 128 / bits, 32 / bits
  local vr = per * nm
  local rows, want = {}, {}
  for t = 0, tm.size - 1 do
    local o = offsets(tc:get_slice(t):partition_S(sX))
    rows[t] = {}
    for g = 0, #o / w do
      if o[w * g] then
        for c = 1, w - 1 do assert.are.equal(o[w * g] + c, o[w * g + c], "a row of adjacent elements") end
        rows[t][g] = o[w * g]
      end
    end
    want[t] = offsets(tm:get_slice(t)["partition_" .. which](tm:get_slice(t), sX))
  end
  local frag = tm:get_slice(0)["partition_fragment_" .. which](tm:get_slice(0), sX)
  local V = tc:retile(frag).layout
  local ng = layout.size(V) / vr
  assert.are.equal(ng, #rows[0] + 1)
  local seen, hit = 0, {}
  for t = 0, tm.size - 1 do
    local wp, l = math.floor(t / 32), t % 32
    hit[t] = {}
    for g = 0, ng - 1 do
      for v = 0, vr - 1 do
        local j, h = math.floor(v / per), v % per
        local e = rows[32 * wp + 8 * j + math.floor(l / 4)][g] + per * (l % 4) + h
        local reg = V(g * vr + v)
        assert.are.equal(want[t][reg], e, ("%s %s %d-bit: thread %d, instruction %d, value %d (register %d)"):format(
          tc.atom.instruction, which, bits, t, g, v, reg))
        assert.is_nil(hit[t][reg], "a register filled twice")
        hit[t][reg] = true
        seen = seen + 1
      end
    end
  end
  assert.are.equal(tm.size * layout.size(V), seen)
end

describe("ldmatrix atoms of 8- and 32-bit elements", function()
  it("recast CuTe's b16 layouts (upcast by the element's bits)", function()
    local want = {
      [f32] = { [1] = { "((8,4),4):((4,0),1)", "(32,1):(1,1)" }, [2] = { "((16,2),4):((4,0),1)", "(32,(1,2)):(1,(1,32))" },
                [4] = { "(32,4):(4,1)", "(32,(1,4)):(1,(1,32))" } },
      [i8] = { [1] = { "((8,4),16):((16,0),1)", "(32,4):(4,1)" }, [2] = { "((16,2),16):((16,0),1)", "(32,(4,2)):(4,(1,128))" },
               [4] = { "(32,16):(16,1)", "(32,(4,4)):(4,(1,128))" } },
    }
    for dt, byn in pairs(want) do
      for nm, w in pairs(byn) do
        local a = cute.make_copy_atom(LdM{ num_matrices = nm }, dt)
        assert.are.equal(w[1], tostring(a.layout_src_tv), dt.name .. " x" .. nm)
        assert.are.equal(w[2], tostring(a.layout_dst_tv), dt.name .. " x" .. nm)
        assert.are.equal(32 * nm, a.num_bits_per_copy)
        assert.are.equal(("ldmatrix.sync.aligned.m8n8.x%d.shared.b16"):format(nm), a.instruction)
        -- every (thread, value) of the destination: thread t's value v = (part h, matrix j) is
        -- element 32 bits j + row t / 4, column per (t % 4) + h, in elements of the dtype
        local per = 32 / (dt == f32 and 32 or 8)
        for t = 0, 31 do
          for j = 0, nm - 1 do
            for h = 0, per - 1 do
              local e = (dt == f32 and 32 or 128) * j + (128 / (dt == f32 and 32 or 8)) * math.floor(t / 4) + per * (t % 4) + h
              assert.are.equal(e, a.layout_dst_tv(t + 32 * (h + per * j)), ("%s x%d t %d j %d h %d"):format(dt.name, nm, t, j, h))
            end
          end
        end
      end
    end
  end)

  it("put every element where the TiledMMA does (tf32 m16n8k8, int8 m16n8k32), in a model of ldmatrix", function()
    traced(function()
      local sF = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), f32)
      local sI = cute.make_shared_tensor(cute.make_layout({ 64, 128 }, { 128, 1 }), i8)
      local sU = cute.make_shared_tensor(cute.make_layout({ 64, 128 }, { 128, 1 }), u8)
      -- swizzled K_SW128 tiles (what the multistage GEMMs use)
      local swF = cute.make_shared_tensor(cute.tile_to_shape(
        cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, f32), { 64, 32 }, { 1, 2 }), f32)
      local swI = cute.make_shared_tensor(cute.tile_to_shape(
        cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, i8), { 64, 128 }, { 1, 2 }), i8)
      local a = function(dt, nm) return cute.make_copy_atom(LdM{ num_matrices = nm }, dt) end
      for _, tm in ipairs({ tf32_mma(), tf32_mma(32) }) do
        check_model(cute.make_tiled_copy_A(a(f32, 4), tm), tm, "A", sF, 32)
        check_model(cute.make_tiled_copy_A(a(f32, 2), tm), tm, "A", sF, 32)
        check_model(cute.make_tiled_copy_B(a(f32, 2), tm), tm, "B", sF, 32)
        check_model(cute.make_tiled_copy_B(a(f32, 1), tm), tm, "B", sF, 32)
      end
      local tmp = tf32_mma(32)
      check_model(cute.make_tiled_copy_B(a(f32, 4), tmp), tmp, "B", sF, 32)
      check_model(cute.make_tiled_copy_A(a(f32, 4), tmp), tmp, "A", swF, 32)
      check_model(cute.make_tiled_copy_B(a(f32, 4), tmp), tmp, "B", swF, 32)
      for _, tm in ipairs({ i8_mma(), i8_mma(32) }) do
        check_model(cute.make_tiled_copy_A(a(i8, 4), tm), tm, "A", sI, 8)
        check_model(cute.make_tiled_copy_B(a(i8, 2), tm), tm, "B", sI, 8)
      end
      local im = i8_mma(32, u8)
      check_model(cute.make_tiled_copy_B(a(u8, 4), im), im, "B", sU, 8)
      check_model(cute.make_tiled_copy_A(a(i8, 4), im), im, "A", swI, 8)
    end)
  end)
end)

-- a 64 x 64 x BK GEMM tile through shared memory: ldmatrix of A and B, then cute.gemm
local function gemm_kernel(kind)
  local tm, dA, dB, dC, BK
  if kind == "tf32" then
    tm, dA, dB, dC, BK = tf32_mma(32), f32, f32, f32, 32
  else
    tm, dA, dB, dC, BK = i8_mma(32, u8), i8, u8, i32, 128
  end
  local tA = cute.make_tiled_copy_A(cute.make_copy_atom(LdM{ num_matrices = 4 }, dA), tm)
  local tB = cute.make_tiled_copy_B(cute.make_copy_atom(LdM{ num_matrices = 4 }, dB), tm)
  local k = cute.kernel(function(A, B, Cm)
    local tid = cute.arch.thread_idx()
    local sA = cute.make_shared_tensor(cute.make_layout({ 64, BK }, { BK, 1 }), dA)
    local sB = cute.make_shared_tensor(cute.make_layout({ 64, BK }, { BK, 1 }), dB)
    for i in cute.range_constexpr(64 * BK / 128) do
      local e = tid + 128 * i
      sA[{ cute.div(e, BK), e % BK }] = A[{ cute.div(e, BK), e % BK }]
      sB[{ cute.div(e, BK), e % BK }] = B[{ cute.div(e, BK), e % BK }]
    end
    cute.arch.sync_threads()
    local thr = tm:get_slice(tid)
    local rA, rB = thr:partition_fragment_A(sA), thr:partition_fragment_B(sB)
    local acc = thr:partition_fragment_C(Cm)
    acc:fill(0)
    local ta, tb = tA:get_slice(tid), tB:get_slice(tid)
    cute.copy(tA, ta:partition_S(sA), ta:retile(rA))
    cute.copy(tB, tb:partition_S(sB), tb:retile(rB))
    cute.gemm(tm, acc, rA, rB, acc)
    cute.copy(acc, thr:partition_C(Cm))
  end, { name = "ldsm_wide_" .. kind })
  return k, { cute.tensor_spec({ 64, BK }, dA), cute.tensor_spec({ 64, BK }, dB), cute.tensor_spec({ 64, 64 }, dC) }
end

local function count(ptx, what)
  local n = 0
  for l in ptx:gmatch("[^\n]+") do if l:find(what, 1, true) then n = n + 1 end end
  return n
end

describe("cute.copy with 8- and 32-bit ldmatrix TiledCopies", function()
  for _, c in ipairs({ { "tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 32 },
                       { "int8", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32", 32 } }) do
    it(c[1] .. ": ldmatrix.x4 feeds cute.gemm; sm_80 and sm_90a, no local memory, no spills", function()
      local k, specs = gemm_kernel(c[1])
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = k:with({ arch = arch, use_ptxas = PTXAS }):compile(unpack(specs))
        -- per warp (32 x 32 of C): A 2 x (K/k) tiles of 16 x k, B 2 x (K/k) of 16 x k, one x4 each
        assert.are.equal(16, count(r.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), arch)
        assert.are.equal(c[3], count(r.ptx, c[2]), arch)
        assert.falsy(has(r.ptx, ".local"), arch)
        -- tf32: the f32 bits go to the MMA as loaded (no cvt.rna)
        assert.falsy(has(r.ptx, "cvt.rna.tf32.f32"), arch)
        if PTXAS then
          assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
          assert.are.equal(0, r.info.spill_loads, arch)
        end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end
end)

describe("8- and 32-bit ldmatrix errors", function()
  local function run(f)
    local k = cute.kernel(function(X) f(X) end, { name = "ldsm_wide_err" })
    k:with({ arch = "sm_80" }):ir(cute.tensor_spec({ 64, 32 }, f32))
  end
  it("a 64-bit dtype, a transposed 32-bit atom", function()
    expect_at("W1", function() cute.make_copy_atom(LdM{ num_matrices = 4 }, cute.float64) end) -- <W1>
    local e = util.err_of(function() cute.make_copy_atom(LdM{ num_matrices = 4, transpose = true }, i8) end)
    assert.truthy(has(e, "LdMatrix8x8x16bOp: dtype int8 is 8 bits: ldmatrix with transpose moves 16-bit elements"), e)
  end)
  it("a fragment of another type (only f32 -> tfloat32 is allowed), rows that are not rows", function()
    local tm = tf32_mma()
    local tA = cute.make_tiled_copy_A(cute.make_copy_atom(LdM{ num_matrices = 4 }, f32), tm)
    expect_at("W2", function() run(function()
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), f32)
      local thr = tA:get_slice(cute.arch.thread_idx())
      local f = cute.make_fragment_like(tm:get_slice(0):partition_fragment_A(sA), i32)
      cute.copy(tA, thr:partition_S(sA), thr:retile(f)) -- <W2>
    end) end, "cute.copy: dst is a fragment of int32; the atom (ldmatrix.sync.aligned.m8n8.x4.shared.b16) moves float32 (or fills tfloat32 fragments)")
    expect_at("W3", function() run(function()
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 1, 64 }), f32)   -- M-major
      local thr = tA:get_slice(cute.arch.thread_idx())
      cute.copy(tA, thr:partition_S(sA), thr:retile(tm:get_slice(0):partition_fragment_A(sA))) -- <W3>
    end) end, "cute.copy: src values 0..3 are not one 16-byte row", "rows of 4 adjacent 32-bit elements")
  end)
end)

describe("8- and 32-bit ldmatrix on the hardware", function()
  -- the 64 x 64 x BK tile above: A, B through shared memory, ldmatrix.x4, cute.gemm; against
  -- a CPU reference (tf32: inputs truncated to tf32 as the tensor core reads raw f32 bits;
  -- int8 x uint8: exactly)
  util.gpu_it("tf32 m16n8k8 and int8 x uint8 m16n8k32 fragments loaded by ldmatrix.x4 give A B^T", function()
    local ffi = require("ffi")
    local bits = ffi.new("union { uint32_t u; float f; }")
    local function trunc(x) bits.f = x; bits.u = bit.band(bits.u, 0xffffe000) % 2 ^ 32; return bits.f end
    for _, kind in ipairs({ "tf32", "int8" }) do
      local k = gemm_kernel(kind)
      local BK = kind == "tf32" and 32 or 128
      local A, B, ha, hb
      if kind == "tf32" then
        ha, hb = util.rand_floats(64 * BK), util.rand_floats(64 * BK)
        A, B = cute.from_host(ha, f32, { 64, BK }), cute.from_host(hb, f32, { 64, BK })
      else
        local ta, tb = {}, {}
        ha, hb = {}, {}
        for i = 0, 64 * BK - 1 do
          ha[i], hb[i] = math.random(-128, 127), math.random(0, 255)
          ta[i + 1], tb[i + 1] = ha[i], hb[i]
        end
        A, B = cute.from_host(ta, i8, { 64, BK }), cute.from_host(tb, u8, { 64, BK })
      end
      local Cm = cute.zeros({ 64, 64 }, kind == "tf32" and f32 or i32)
      k:launch{ grid = 1, block = 128 }(A, B, Cm)
      local c = Cm:to_host()
      for i = 0, 63 do
        for j = 0, 63 do
          local s, mag = 0, 0
          for kk = 0, BK - 1 do
            local p
            if kind == "tf32" then p = trunc(ha[i * BK + kk]) * trunc(hb[j * BK + kk])
            else p = ha[i * BK + kk] * hb[j * BK + kk] end
            s, mag = s + p, mag + math.abs(p)
          end
          local ok = kind == "tf32" and math.abs(c[i * 64 + j] - s) <= 2 ^ -16 * mag or c[i * 64 + j] == s
          if not ok then error(("%s: C[%d][%d] = %.9g, expected %.9g"):format(kind, i, j, c[i * 64 + j], s)) end
        end
      end
      A:free(); B:free(); Cm:free()
    end
  end)
end)
