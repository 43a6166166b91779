-- TiledMMA inside a kernel without a GPU (docs/TENSORCORE.md, "Partitioning
-- and cute.gemm"): get_slice / partition_A/B/C place every element where the
-- PTX ISA's fragment formulas put it, the fragments are register tensors,
-- cute.gemm issues one mma.sync per (m, n, k) and the kernels assemble for
-- sm_80 and sm_90a with no spills and no local memory; bad input is an error
-- at the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local ten = require("cute.tensor")
local util = dofile("spec/support/util.lua")
local tg = dofile("spec/support/tiled_gemm.lua")
local bf16, f16, f32 = cute.bfloat16, cute.float16, cute.float32
local ts = cute.tensor_spec

local THIS = "spec/gemm_tiled_mma_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil

-- the (row, column) of value i of lane l (g = l / 4, q = l % 4) in the atom's
-- tile, from the PTX ISA ("Matrix Fragments for mma.m16n8k16 / m16n8k8"):
-- A 16 x K (row m, column k), B as N x K (row n, column k), C 16 x 8
local function bit(i, b) return math.floor(i / 2 ^ b) % 2 end
local isa = {
  A = function(K, g, q, i) return g + 8 * bit(i, 1), 2 * q + bit(i, 0) + (K == 16 and 8 * bit(i, 2) or 0) end,
  B = function(K, g, q, i) return g, 2 * q + bit(i, 0) + (K == 16 and 8 * bit(i, 1) or 0) end,
  C = function(_, g, q, i) return g + 8 * bit(i, 1), 2 * q + bit(i, 0) end,
}

-- every thread's partition of an (rows x cols) row-major tensor, traced with a
-- Lua thread index: the static offset of each (value, r0, r1) against the ISA
local function check_partition(tm, which, rows, cols, want_shape, wm, wn)
  local K = tm.atom.shape_mnk[3]
  local atom_r = which == "B" and 8 or 16 -- the atom's rows: M (A, C) or N (B)
  local atom_c = which == "A" and K or which == "B" and K or 8
  local ab = tm.atom.a_dtype == "bfloat16" and bf16 or f16
  local nthr = tm.size
  local bad, first, shape = 0, nil, nil
  local k = cute.kernel(function(T)
    for t = 0, nthr - 1 do
      local thr = tm:get_slice(t)
      local p = thr["partition_" .. which](thr, T)
      shape = ten.describe(p.layout.shape)
      local w, l = math.floor(t / 32), t % 32
      local g, q = math.floor(l / 4), l % 4
      -- warp position: (w % wm) along the first mode, w / wm along the second
      local pm, pn = w % wm, math.floor(w / wm) % wn
      local p0, p1 = pm, 0 -- A: (M, K)
      if which == "B" then p0 = pn end -- (N, K)
      if which == "C" then p1 = pn end -- (M, N)
      local s = p.layout.shape
      local nv, n0, n1 = ten.tsize(s[1]), s[2], s[3]
      local step0 = atom_r * (which == "B" and wn or wm)
      local step1 = which == "C" and 8 * wn or K
      for r1 = 0, n1 - 1 do
        for r0 = 0, n0 - 1 do
          for i = 0, nv - 1 do
            local ar, ac = isa[which](K, g, q, i)
            local row = p0 * atom_r + r0 * step0 + ar
            local col = p1 * atom_c + r1 * step1 + ac
            local got = p.off + ten.crd2idx({ i, r0, r1 }, p.layout.shape, p.layout.stride)
            if got ~= row * cols + col then
              bad = bad + 1
              first = first or ("thread %d value %d (%d,%d): offset %d, want row %d col %d"):format(t, i, r0, r1,
                got, row, col)
            end
          end
        end
      end
    end
  end, { name = "partition_" .. which })
  k:ir(ts({ rows, cols }, ab))
  assert.are.equal(want_shape, shape)
  assert.are.equal(0, bad, tostring(first))
end

describe("TiledMMA:get_slice and partition_A/B/C", function()
  it("one warp, m16n8k16 bf16, 32 x 32 x 32: shapes and every element against the ISA's fragments", function()
    local tm = tg.tiled_mma(bf16, 16, { 1, 1, 1 })
    -- A: 8 values per thread, 32/16 atoms along M, 32/16 along K
    check_partition(tm, "A", 32, 32, "((2,2,2),2,2)", 1, 1)
    -- B (N x K): 4 values, 32/8 along N, 32/16 along K
    check_partition(tm, "B", 32, 32, "((2,2),4,2)", 1, 1)
    -- C: 4 values, 32/16 along M, 32/8 along N
    check_partition(tm, "C", 32, 32, "((2,2),2,4)", 1, 1)
  end)

  it("four warps (2,2,1), m16n8k16 f16, 64 x 32 x 32", function()
    local tm = tg.tiled_mma(f16, 16, { 2, 2, 1 }) -- tile 32 x 16 x 16
    check_partition(tm, "A", 64, 32, "((2,2,2),2,2)", 2, 2)
    check_partition(tm, "B", 32, 32, "((2,2),2,2)", 2, 2)
    check_partition(tm, "C", 64, 32, "((2,2),2,2)", 2, 2)
  end)

  it("two warps (2,1,1), m16n8k8 f16, 32 x 16 x 16", function()
    local tm = tg.tiled_mma(f16, 8, { 2, 1, 1 })
    check_partition(tm, "A", 32, 16, "((2,2),1,2)", 2, 1)
    check_partition(tm, "B", 16, 16, "(2,2,2)", 2, 1)
    check_partition(tm, "C", 32, 16, "((2,2),1,2)", 2, 1)
  end)

  it("a traced thread index gives the same shapes; fragments have the atom's dtypes", function()
    local tm = tg.tiled_mma(bf16, 16, { 2, 2, 1 })
    local got = {}
    local k = cute.kernel(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local pa, pb, pc = thr:partition_A(A), thr:partition_B(B), thr:partition_C(Cm)
      got.a, got.b, got.c = ten.describe(pa.layout.shape), ten.describe(pb.layout.shape), ten.describe(pc.layout.shape)
      got.fa, got.fc = tostring(tm:make_fragment_A(pa)), tostring(thr:make_fragment_C(pc))
      got.fb = tostring(thr:partition_fragment_B(B))
    end, { name = "traced_slice" })
    k:ir(ts({ 32, 32 }, bf16), ts({ 32, 32 }, bf16), ts({ 32, 32 }, f32))
    assert.are.same({ a = "((2,2,2),1,2)", b = "((2,2),2,2)", c = "((2,2),1,2)",
      fa = "register tensor<bfloat16, ((2,2,2),1,2)>", fb = "register tensor<bfloat16, ((2,2),2,2)>",
      fc = "register tensor<float32, ((2,2),1,2)>" }, got)
  end)
end)

local count = util.count_plain

describe("cute.gemm on fragments", function()
  local cases = {
    { bf16, 16, { 1, 1, 1 }, 32, 32, 32, 16 }, -- 2 x 4 x 2 atoms per thread
    { bf16, 16, { 2, 2, 1 }, 32, 32, 32, 4 }, -- 1 x 2 x 2
    { f16, 16, { 2, 2, 1 }, 64, 32, 32, 8 }, -- 2 x 2 x 2
    { f16, 8, { 1, 1, 1 }, 32, 16, 32, 16 }, -- 2 x 2 x 4
    { bf16, 8, { 1, 1, 1 }, 32, 16, 32, 16 },
  }
  for _, c in ipairs(cases) do
    local ab, K, al, Mm, Nn, Kk, n_mma = c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    local n = ab == bf16 and "bf16" or "f16"
    local instr = ("mma.sync.aligned.m16n8k%d.row.col.f32.%s.%s.f32"):format(K, n, n)
    it(("%s m16n8k%d, atoms (%d,%d,%d), %d x %d x %d: %d x %s, sm_80 and sm_90a, no spills, no local memory")
      :format(n, K, al[1], al[2], al[3], Mm, Nn, Kk, n_mma, instr), function()
      local tm = tg.tiled_mma(ab, K, al)
      for _, add_c in ipairs({ false, true }) do
        local k = tg.kernel(tm, add_c)
        for _, arch in ipairs({ "sm_80", "sm_90a" }) do
          local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 })
            :compile(ts({ Mm, Kk }, ab), ts({ Nn, Kk }, ab), ts({ Mm, Nn }, f32))
          assert.are.equal(n_mma, count(r.ptx, instr), r.ptx)
          assert.are.equal(n_mma, count(r.ptx, "mma.sync"))
          assert.falsy(util.has(r.ptx, ".local"), arch .. ": local memory")
          if PTXAS then
            assert.truthy(r.cubin, arch .. ": no cubin")
            assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
            assert.are.equal(0, r.info.spill_loads, arch)
            assert.are.equal(0, r.info.stack, arch .. ": stack frame")
          end
        end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end
end)

describe("cute.gemm from shared memory and with f16 accumulators", function()
  local function build(k, want, n, ...)
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(...)
      assert.are.equal(n, count(r.ptx, want), r.ptx)
      assert.falsy(util.has(r.ptx, ".local"), arch .. ": local memory")
      if PTXAS then
        assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
        assert.are.equal(0, r.info.stack, arch)
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end

  it("partition_A/B of shared tensors, four warps (2,2,1), bf16, 32 x 32 x 32: 4 mma per thread", function()
    local tm = tg.tiled_mma(bf16, 16, { 2, 2, 1 })
    local k = tg.smem_kernel(tm, 32, 32, 32, bf16)
    local got
    local probe = cute.kernel(function(A)
      local sA = cute.make_shared_tensor(cute.make_layout({ 32, 32 }, { 32, 1 }), bf16)
      local p = tm:get_slice(37):partition_A(sA)
      got = tostring(p) .. " + " .. tostring(p.off)
    end, { name = "probe" })
    probe:ir(ts({ 32, 32 }, bf16))
    -- thread 37: warp 1 (M 16..31), lane 5 (g 1, q 1): row 17, column 2
    assert.are.equal("tensor<bf16, shared, ((2,2,2),1,2):((1,256,8),0,16)> + " .. (17 * 32 + 2), got)
    build(k, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 4,
      ts({ 32, 32 }, bf16), ts({ 32, 32 }, bf16), ts({ 32, 32 }, f32))
  end)

  it("tiles of cute.dynamic tensors (run-time strides) over a traced k loop, four warps: 8 mma in the loop", function()
    local tm = tg.tiled_mma(bf16, 16, { 2, 2, 1 })
    local dyn = cute.dynamic
    -- block tile 64 x 32 x 32: per step MMA_M 2, MMA_N 2, MMA_K 2
    build(tg.tiled_kernel(tm, 64, 32, 32), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 8,
      dyn(ts({ 128, 64 }, bf16)), dyn(ts({ 64, 64 }, bf16)), dyn(ts({ 128, 64 }, f32)), cute.Int32(2))
    local got = {}
    local probe = cute.kernel(function(A)
      local p = tm:get_slice(0):partition_A(cute.local_tile(A, { 64, 32 }, { 0, 0 }))
      got.shape = ten.describe(p.layout.shape)
      got.stride = ten.describe(p.layout.stride)
    end, { name = "probe" })
    probe:ir(dyn(ts({ 128, 64 }, bf16)))
    -- K steps are static (stride 1 along K), M steps scale the run-time row stride
    assert.are.same({ shape = "((2,2,2),2,2)", stride = "((1,i64,8),i64,16)" }, got)
  end)

  it("f16 with f16 accumulators: fragments of float16, mma...f16.f16.f16.f16", function()
    local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = f16, acc_dtype = f16, shape_mnk = { 16, 8, 16 } }
    local tm = cute.make_tiled_mma(op, { 1, 1, 1 })
    build(tg.kernel(tm, true), "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16,
      ts({ 32, 32 }, f16), ts({ 32, 32 }, f16), ts({ 32, 32 }, f16))
  end)
end)

local trace_error = util.trace_error
local function at_line(e, marker) util.at_line(THIS, e, marker) end
local function errs(body, ...)
  return trace_error(cute.kernel(body, { name = "bad" }), ...)
end

describe("TiledMMA in a kernel: errors at the user's line", function()
  local tm = tg.tiled_mma(bf16, 16, { 2, 2, 1 })
  local S = { ts({ 32, 32 }, bf16), ts({ 32, 32 }, bf16), ts({ 32, 32 }, f32) }

  it("fragments whose MMA_K differ, or whose D and C differ", function()
    local e = errs(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local a = tm:make_fragment_A(thr:partition_A(A))
      local b = tm:make_fragment_B(thr:partition_B(cute.local_tile(B, { 32, 16 }, { 0, 0 })))
      local c = tm:make_fragment_C(thr:partition_C(Cm))
      cute.gemm(tm, c, a, b, c) -- MARK_K
    end, table.unpack(S))
    at_line(e, "MARK_K")
    assert.truthy(util.has(e, "cute.gemm: A ((2,2,2),1,2) and B ((2,2),2,1) differ in MMA_K"), e)
    e = errs(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local a, b = thr:partition_fragment_A(A), thr:partition_fragment_B(B)
      local c = thr:partition_fragment_C(Cm)
      local d = tm:make_fragment_C({ { 2, 2 }, 2, 2 })
      cute.gemm(tm, d, a, b, c) -- MARK_D
    end, table.unpack(S))
    at_line(e, "MARK_D")
    assert.truthy(util.has(e, "cute.gemm: D ((2,2),2,2) and C ((2,2),1,2) differ in shape"), e)
    e = errs(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local a, c = thr:partition_fragment_A(A), thr:partition_fragment_C(Cm)
      cute.gemm(tm, c, a, c, c) -- MARK_V
    end, table.unpack(S))
    at_line(e, "MARK_V")
    assert.truthy(util.has(e, "cute.gemm: B is a fragment of float32; the atom " ..
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 takes bfloat16"), e)
  end)

  it("a fragment of the wrong dtype, a tensor where a fragment is due", function()
    local tm16 = tg.tiled_mma(f16, 16, { 2, 2, 1 })
    local e = errs(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local a = tm16:get_slice(cute.arch.thread_idx()):partition_fragment_A(A)
      local b, c = thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm, c, a, b, c) -- MARK_DT
    end, table.unpack(S))
    at_line(e, "MARK_DT")
    assert.truthy(util.has(e, "cute.gemm: A is a fragment of float16; the atom " ..
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 takes bfloat16"), e)
    e = errs(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      local b, c = thr:partition_fragment_B(B), thr:partition_fragment_C(Cm)
      cute.gemm(tm, c, thr:partition_A(A), b, c) -- MARK_T
    end, table.unpack(S))
    at_line(e, "MARK_T")
    assert.truthy(util.has(e, "cute.gemm: A = tensor<bf16, global, ((2,2,2),1,2)"), e)
    assert.truthy(util.has(e, "is not a register tensor (tiled_mma:make_fragment_A)"), e)
  end)

  it("a tensor that is not a multiple of the tile, a thread out of range, copies of different sizes", function()
    local e = errs(function(A)
      tm:get_slice(3):partition_A(A) -- MARK_MUL
    end, ts({ 24, 32 }, bf16))
    at_line(e, "MARK_MUL")
    assert.truthy(util.has(e, "ThrMMA:partition_A: the tensor's shape (24,32): M = 24 is not a multiple of " ..
      "the tiled MMA's tile M = 32"), e)
    e = errs(function(A)
      tm:get_slice(0):partition_A(A) -- MARK_DYN
    end, ts({ 32, 32 }, bf16, nil, { dynamic = true }))
    at_line(e, "MARK_DYN")
    assert.truthy(util.has(e, "ThrMMA:partition_A: the tensor's shape (i64,i64) must be static (take a tile of it with cute.local_tile)"), e)
    e = errs(function(A, B, Cm)
      tg.tiled_mma(bf16, 16, { 1, 1, 1 }):get_slice(0):partition_fragment_C(Cm) -- MARK_BIG
    end, ts({ 32, 32 }, bf16), ts({ 32, 32 }, bf16), ts({ 128, 128 }, f32))
    at_line(e, "MARK_BIG")
    assert.truthy(util.has(e, "TiledMMA:make_fragment_C: a fragment of shape ((2,2),8,16) holds 512 values; " ..
      "a register fragment holds at most 256 (partition a smaller tile)"), e)
    e = errs(function()
      tm:get_slice(128) -- MARK_THR
    end)
    at_line(e, "MARK_THR")
    assert.truthy(util.has(e, "TiledMMA:get_slice: thread index 128 is out of range 0..127"), e)
    e = errs(function(A, B, Cm)
      local thr = tm:get_slice(cute.arch.thread_idx())
      cute.copy(thr:partition_B(B), thr:partition_fragment_C(Cm)) -- MARK_CP
    end, table.unpack(S))
    at_line(e, "MARK_CP")
    assert.truthy(util.has(e, "cute.copy: src ((2,2),2,2) and dst ((2,2),1,2) differ in size (16 vs 8)"), e)
  end)
end)

-- cute.gemm's pairing of operands, checked without a GPU: inside a trace, the
-- register fragments and the mma instruction are replaced by Lua models.
-- Each fragment element holds a label (the row and column it came from,
-- through partition_A/B/C with a Lua thread index); the model mma checks,
-- for the lane of that thread, that a, b and c are one atom's A, B and C
-- fragments (the ISA's formulas, shifted by a whole atom tile) with A's and
-- C's rows, B's and C's columns and A's and B's k the same, and returns an
-- accumulator label; afterwards every (m, n) holds the chain of all k steps.
describe("cute.gemm pairs the fragments as the ISA's atoms", function()
  local arch = require("cute.nvgpu_arch")
  local mg = require("cute.mma_gemm")
  local function run(ab, K, al, Mm, Nn, Kk, separate_d)
    local tm = tg.tiled_mma(ab, K, al)
    local real_frag, real_mma = arch.make_fragment_regs, mg.instruction
    local problems, calls, done = {}, 0, {}
    local function problem(s) if #problems < 5 then problems[#problems + 1] = s end end
    local lane
    local k = cute.kernel(function(A, B, Cm)
      arch.make_fragment_regs = function(_, n)
        local f = { _n = n }
        return setmetatable(f, { __len = function() return n end })
      end
      mg.instruction = function(atom)
        assert.are.equal(K, atom.shape_mnk[3])
        return function(av, bv, cv)
          -- the operands as lists from 1; the model reads them from 0
          local a, b, c, d = {}, {}, {}, {}
          for i = 1, #av do a[i - 1] = av[i] end
          for i = 1, #bv do b[i - 1] = bv[i] end
          for i = 1, #cv do c[i - 1] = cv[i] end
          calls = calls + 1
          local g, q = math.floor(lane / 4), lane % 4
          -- the atom-tile origin every value agrees on, or nil
          local function origin(f, nv, which)
            local r0, c0
            for i = 0, nv - 1 do
              local r, cc = isa[which](K, g, q, i)
              local lab = f[i]
              local dr, dc = lab.row - r, lab.col - cc
              if r0 == nil then r0, c0 = dr, dc end
              if dr ~= r0 or dc ~= c0 then problem(which .. " values from different atom tiles") end
            end
            return r0, c0
          end
          local am, ak = origin(a, K / 2, "A")
          local bn, bk = origin(b, K / 4, "B")
          local cm, cn = origin(c, 4, "C")
          if am ~= cm or bn ~= cn or ak ~= bk then
            problem(("A at (%s,%s), B at (%s,%s), C at (%s,%s)"):format(am, ak, bn, bk, cm, cn))
          end
          if am % 16 ~= 0 or ak % K ~= 0 or bn % 8 ~= 0 then problem("an origin off the atom grid") end
          -- c is C0 (k = 0) or the accumulator of the k steps before this one
          local key = am .. "," .. bn
          local steps = c[0].steps or 0
          if steps ~= ak / K or (steps > 0 and c[0].key ~= key) then
            problem(("(%s): k step %d accumulates onto %s"):format(key, ak / K, tostring(c[0].key)))
          end
          for i = 0, 3 do
            local r, cc = isa.C(K, g, q, i)
            d[i + 1] = { row = am + r, col = bn + cc, key = key, steps = steps + 1 }
          end
          return d
        end
      end
      local ok, err = pcall(function()
        for t = 0, tm.size - 1 do
          lane = t % 32
          local thr = tm:get_slice(t)
          local frags = {}
          for _, w in ipairs({ { "A", A, Kk }, { "B", B, Kk }, { "C", Cm, Nn } }) do
            local p = thr["partition_" .. w[1]](thr, w[2])
            local r = tm["make_fragment_" .. w[1]](tm, p)
            for i = 0, r:size() - 1 do
              local off = p.off + ten.crd2idx(i, p.layout.shape, p.layout.stride)
              r[i] = { row = math.floor(off / w[3]), col = off % w[3] }
            end
            frags[w[1]] = r
          end
          local D = frags.C
          if separate_d then D = thr:make_fragment_C(frags.C) end
          cute.gemm(tm, D, frags.A, frags.B, frags.C)
          for i = 0, D:size() - 1 do
            local lab = D[i]
            if lab.steps ~= Kk / K then problem(("C value %d of thread %d: %s k steps"):format(i, t, tostring(lab.steps))) end
            done[lab.row * Nn + lab.col] = (done[lab.row * Nn + lab.col] or 0) + 1
          end
        end
      end)
      arch.make_fragment_regs, mg.instruction = real_frag, real_mma
      if not ok then error(err, 0) end
    end, { name = "model" })
    k:ir(ts({ Mm, Kk }, ab), ts({ Nn, Kk }, ab), ts({ Mm, Nn }, f32))
    assert.are.same({}, problems)
    -- one mma per thread per (m, n, k) atom; every element of C written once
    assert.are.equal(tm.size * (Mm / 16) * (Nn / 8) * (Kk / K) / (tm.size / 32), calls)
    for i = 0, Mm * Nn - 1 do assert.are.equal(1, done[i], "C element " .. i) end
  end

  it("one warp and four warps, m16n8k16 and m16n8k8", function()
    run(bf16, 16, { 1, 1, 1 }, 32, 32, 32)
    run(f16, 16, { 2, 2, 1 }, 64, 32, 48)
    run(f16, 8, { 1, 1, 1 }, 32, 16, 32)
    run(bf16, 16, { 1, 2, 1 }, 16, 32, 16)
  end)

  it("D apart from C: the first k step reads C, the others D", function()
    run(bf16, 16, { 1, 1, 1 }, 32, 32, 32, true)
    run(f16, 16, { 2, 2, 1 }, 32, 16, 32, true)
  end)
end)
