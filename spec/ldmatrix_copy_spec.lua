-- ldmatrix / stmatrix through cute.copy and TiledCopy retile (lua/cute/copy_matrix.lua),
-- no GPU: retile layouts against hand-worked CuTe values; a model of the
-- instructions (the PTX ISA's: lane l of a warp gives the address of row l % 8
-- of matrix l / 8; register j of lane l holds row l / 4, columns 2 (l % 4)
-- and 2 (l % 4) + 1 of matrix j, or of its transpose) run on every thread's
-- partition_S / partition_D addresses, which must put each shared-memory
-- element in the fragment register where the TiledMMA's partition_A / B / C
-- has it; the PTX of a GEMM through ldmatrix (and stmatrix) with the expected
-- instruction forms and counts, assembled by ptxas for sm_80 and sm_90a with no
-- local memory and no spills; the errors, at the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local lg = dofile("spec/support/ldmatrix_gemm.lua")
local layout = require("cute.layout")
local has = util.has
local THIS = "spec/ldmatrix_copy_spec.lua"
-- f raises an error at the spec line marked -- <marker> (the kernel's failing
-- call), containing every string given
local function expect_at(marker, f, ...)
  local e = util.err_of(f)
  assert.truthy(e:find(THIS .. ":" .. util.line_of(THIS, "-- <" .. marker .. ">") .. ": ", 1, true), "not at the user's line: " .. e)
  for _, w in ipairs({ ... }) do assert.truthy(e:find(w, 1, true), ("%q not in: %s"):format(w, e)) end
end
local bf16, f16, f32 = cute.bfloat16, cute.float16, cute.float32
local _ = cute._
local PTXAS = C.cute_ptxas_path() ~= nil
local LdM, StM = cute.nvgpu.warp.LdMatrix8x8x16bOp, cute.nvgpu.warp.StMatrix8x8x16bOp

local function tiled_mma(perm_n)
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } }
  return cute.make_tiled_mma(op, { 2, 2, 1 }, perm_n and { _, perm_n, _ } or nil)
end
local function atom(op, tr, nm, dt) return cute.make_copy_atom(op{ transpose = tr, num_matrices = nm }, dt or bf16) end

-- run f inside a trace (shared tensors need one)
local function traced(f)
  local k = cute.kernel(function(X) f(X) end, { name = "ldsm_model" })
  k:ir(cute.tensor_spec({ 64, 64 }, bf16))
end

-- the element offsets of a tensor with a static layout and offset
local function offsets(T)
  local L = layout.make_layout(T.layout.shape, T.layout.stride)
  local o = {}
  for i = 0, layout.size(L) - 1 do o[i] = T.off + L(i) end
  return o
end

-- The instruction model: for each thread t of the TiledCopy tc (ldmatrix or
-- stmatrix), its shared partition sp(t) (partition_S or partition_D of sX)
-- gives one row address per 8 values; instruction g of lane l, value
-- v = 2 j + h (register j, half h) touches the element
--   plain:  row(lane 8 j + l / 4, g) + 2 (l % 4) + h
--   .trans: row(lane 8 j + 2 (l % 4) + h, g) + l / 4
-- which must be where the TiledMMA puts fragment register view(g * 2 nm + v)
-- of thread t (partition_X(sX) of thr_mma t, its element at that register).
local function check_model(tc, tm, which, sX)
  local op = tc.atom.op
  local nm, trans = op.num_matrices, op.transpose
  local part = op.kind == "ldmatrix" and "partition_S" or "partition_D"
  local rows, want = {}, {}
  for t = 0, tm.size - 1 do
    local o = offsets(tc:get_slice(t)[part](tc:get_slice(t), sX))
    rows[t] = {}
    for g = 0, #o / 8 do
      if o[8 * g] then
        for c = 1, 7 do assert.are.equal(o[8 * g] + c, o[8 * g + c], "a row of 8 adjacent elements") end
        rows[t][g] = o[8 * g]
      end
    end
    want[t] = offsets(tm:get_slice(t)["partition_" .. which](tm:get_slice(t), sX))
  end
  local frag = tm:get_slice(0)["partition_fragment_" .. which](tm:get_slice(0), sX)
  local view = tc:retile(frag)
  local V = view.layout
  local vr = 2 * nm
  local ng = layout.size(V) / vr
  assert.are.equal(ng, #rows[0] + 1)
  local seen = 0
  for t = 0, tm.size - 1 do
    local w, l = math.floor(t / 32), t % 32
    for g = 0, ng - 1 do
      for v = 0, vr - 1 do
        local j, h = math.floor(v / 2), v % 2
        local e
        if trans then e = rows[32 * w + 8 * j + 2 * (l % 4) + h][g] + math.floor(l / 4)
        else e = rows[32 * w + 8 * j + math.floor(l / 4)][g] + 2 * (l % 4) + h end
        local reg = V(g * vr + v)
        assert.are.equal(want[t][reg], e, ("%s %s: thread %d, instruction %d, value %d (register %d)"):format(
          tc.atom.instruction, which, t, g, v, reg))
        seen = seen + 1
      end
    end
  end
  assert.are.equal(tm.size * layout.size(V), seen)
end

describe("retile", function()
  -- V = size of mode 0 of the fragment; when V is all of a thread's values in
  -- the copy's tile, retile only regroups mode 0 as (atom values, rest) = (8, 1)
  -- (CuTe: frg_layout_mn is trivial, the tile is (V, 1, 1)).  With N
  -- permuted to 32 a thread has 8 B values per tile, the fragment's mode 0
  -- only 4: the copy's values are (4 values of n-atom 2i, 4 of n-atom 2i + 1),
  -- so MMA_N is halved and its stride doubled.
  it("of m16n8k16 fragments, 2 x 2 warps, against hand-worked CuTe layouts", function()
    traced(function()
      local tm, tmp = tiled_mma(), tiled_mma(32)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), bf16)
      local sB = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), bf16)
      local sC = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), bf16)
      local fA = tm:get_slice(5):partition_fragment_A(sA)            -- ((2,2,2),2,2)
      local fB = tm:get_slice(5):partition_fragment_B(sB)            -- ((2,2),4,2)
      local fBp = tmp:get_slice(5):partition_fragment_B(sB)          -- ((2,2),4,2)
      local fC = cute.make_fragment_like(tmp:get_slice(5):partition_fragment_C(sC), bf16)  -- ((2,2),2,4)
      local function r(tc, x) return tostring(tc:get_slice(5):retile(x).layout) end
      assert.are.equal("((8,1),2,2):((1,0),8,16)", r(cute.make_tiled_copy_A(atom(LdM, false, 4), tm), fA))
      assert.are.equal("((4,1),4,2):((1,0),4,16)", r(cute.make_tiled_copy_B(atom(LdM, false, 2), tm), fB))
      assert.are.equal("((8,1),2,2):((1,0),8,16)", r(cute.make_tiled_copy_B(atom(LdM, false, 4), tmp), fBp))
      assert.are.equal("((4,2),2,2):((1,4),8,16)", r(cute.make_tiled_copy_B(atom(LdM, true, 2), tmp), fBp))
      -- C ((2,2),MMA_M 2,MMA_N 4): an n-atom's 4 values, then those of the next
      -- n-atom (MMA_N + 1: stride 8); MMA_M (4) and MMA_N / 2 (16) remain
      assert.are.equal("(((4,2),1),2,2):(((1,8),0),4,16)",
        r(cute.make_tiled_copy_C(atom(StM, false, 4), tmp), fC))
      -- the TiledCopy's retile and the three ThrCopy spellings agree; slicing a view
      local tc = cute.make_tiled_copy_A(atom(LdM, false, 4), tm)
      for _, f in ipairs({ "retile", "retile_S", "retile_D" }) do
        assert.are.equal("((8,1),2,2):((1,0),8,16)", tostring(tc:get_slice(0)[f](tc:get_slice(0), fA).layout))
      end
      local v = tc:retile(fA)[{ _, _, 1 }]
      assert.are.equal("((8,1),2):((1,0),8)", tostring(v.layout))
      assert.are.equal(16, v:size())
      -- a local-memory fragment (cute.make_fragment) retiles to a tensor of the same memory
      local lf = cute.make_fragment(cute.make_layout({ 4, 4, 2 }), bf16)
      local lv = cute.make_tiled_copy_B(atom(LdM, false, 4), tmp):retile(lf)
      assert.are.equal("tensor<bf16, local, ((8,1),2,2):((1,0),8,16)>", tostring(lv))
    end)
  end)

  it("places every element where the TiledMMA does, in a model of ldmatrix / stmatrix", function()
    traced(function()
      local tm, tmp = tiled_mma(), tiled_mma(32)
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), bf16)
      local sAm = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 1, 64 }), bf16)   -- M-major A
      local sBk = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), bf16)   -- K-major B
      local sBn = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 1, 64 }), bf16)   -- N-major B
      local sC = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), bf16)
      local sCt = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 1, 64 }), bf16)
      check_model(cute.make_tiled_copy_A(atom(LdM, false, 4), tm), tm, "A", sA)
      check_model(cute.make_tiled_copy_A(atom(LdM, false, 4), tmp), tmp, "A", sA)
      check_model(cute.make_tiled_copy_A(atom(LdM, true, 4), tm), tm, "A", sAm)
      check_model(cute.make_tiled_copy_B(atom(LdM, false, 1), tm), tm, "B", sBk)
      check_model(cute.make_tiled_copy_B(atom(LdM, true, 1), tm), tm, "B", sBn)
      check_model(cute.make_tiled_copy_A(atom(LdM, false, 2), tm), tm, "A", sA)
      check_model(cute.make_tiled_copy_B(atom(LdM, false, 2), tm), tm, "B", sBk)
      check_model(cute.make_tiled_copy_B(atom(LdM, false, 4), tmp), tmp, "B", sBk)
      check_model(cute.make_tiled_copy_B(atom(LdM, true, 2), tm), tm, "B", sBn)
      check_model(cute.make_tiled_copy_B(atom(LdM, true, 4), tmp), tmp, "B", sBn)
      check_model(cute.make_tiled_copy_C(atom(StM, false, 4), tmp), tmp, "C", sC)
      check_model(cute.make_tiled_copy_C(atom(StM, false, 2), tm), tm, "C", sC)
      check_model(cute.make_tiled_copy_C(atom(StM, true, 4), tmp), tmp, "C", sCt)
    end)
  end)
end)

-- the number of lines of the PTX holding each instruction form
local function count(ptx, what)
  local n = 0
  for l in ptx:gmatch("[^\n]+") do
    if l:find(what .. " ", 1, true) or l:find(what .. "\t", 1, true) then n = n + 1 end
  end
  return n
end

local function build(k, arch, cfg)
  local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(lg.specs(cfg))
  assert.falsy(has(r.ptx, ".local"), arch .. ": a fragment went to local memory")
  if PTXAS then
    assert.truthy(r.cubin, arch .. ": no cubin")
    assert.are.equal(0, r.info.spill_stores, arch .. ": " .. r.ptxas_log)
    assert.are.equal(0, r.info.spill_loads, arch)
  end
  return r
end

describe("cute.copy with ldmatrix / stmatrix TiledCopies", function()
  local L = "ldmatrix.sync.aligned.m8n8."
  local cases = {
    -- A 64 x 32: MMA_M 2 x MMA_K 2 x4 loads; B 64 x 32: x4 over n-atom pairs (2 x 2), x2 per n-atom (4 x 2)
    { cfg = { ab = bf16, m = 64, n = 64, k = 32 }, want = { [L .. "x4.shared.b16"] = 8 } },
    { cfg = { ab = f16, m = 64, n = 64, k = 32, b_mn_major = true },
      want = { [L .. "x4.shared.b16"] = 4, [L .. "x4.trans.shared.b16"] = 4 } },
    { cfg = { ab = bf16, m = 64, n = 64, k = 32, nb = 2 }, want = { [L .. "x4.shared.b16"] = 4, [L .. "x2.shared.b16"] = 8 } },
    { cfg = { ab = f16, m = 64, n = 32, k = 32, b_mn_major = true, nb = 2 },
      want = { [L .. "x4.shared.b16"] = 4, [L .. "x2.trans.shared.b16"] = 4 } },
  }
  for _, c in ipairs(cases) do
    local cfg = c.cfg
    it(("emit %s (%s, B %s-major, %dx%dx%d) for sm_80 and sm_90a"):format(cfg.b_mn_major and "ldmatrix(.trans)" or
      "ldmatrix", cfg.ab.name, cfg.b_mn_major and "N" or "K", cfg.m, cfg.n, cfg.k), function()
      local k = lg.kernel(cfg)
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = build(k, arch, cfg)
        for form, n in pairs(c.want) do assert.are.equal(n, count(r.ptx, form), arch .. " " .. form) end
        -- per warp: a quarter of the block's (M / 16) (N / 8) (K / 16) atoms
        assert.are.equal(cfg.m * cfg.n * cfg.k / (16 * 8 * 16 * 4), count(r.ptx, "mma.sync.aligned.m16n8k16.row.col.f32."
          .. (cfg.ab == bf16 and "bf16.bf16" or "f16.f16") .. ".f32"))
        -- every ldmatrix's row address is a shared-memory register
        for l in r.ptx:gmatch("ldmatrix[^\n]+") do assert.truthy(l:find("%[%%r%d+%]") or l:find("%[%%r%d+%+%d+%]"), l) end
      end
      if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
    end)
  end

  it("emit stmatrix.x4 for the epilogue through make_tiled_copy_C (sm_90a)", function()
    local cfg = { ab = bf16, m = 64, n = 64, k = 32, stmatrix = true }
    local r = build(lg.kernel(cfg), "sm_90a", cfg)
    assert.are.equal(4, count(r.ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16"))
    assert.are.equal(8, count(r.ptx, L .. "x4.shared.b16"))
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)
end)

describe("ldmatrix / stmatrix copy errors", function()
  local tm = tiled_mma()
  local tmp = tiled_mma(32)
  local tcA = cute.make_tiled_copy_A(atom(LdM, false, 4), tm)
  local function run(f, arch)
    local k = cute.kernel(function(X, Y) f(X, Y) end, { name = "ldsm_err" })
    k:with({ arch = arch or "sm_80" }):ir(cute.tensor_spec({ 64, 32 }, bf16), cute.tensor_spec({ 64, 32 }, f32))
  end
  local function smem(dt) return cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 32, 1 }), dt or bf16) end

  it("a source in global memory", function()
    expect_at("E1", function() run(function(X)
      local thr = tcA:get_slice(cute.arch.thread_idx())
      cute.copy(tcA, thr:partition_S(X), thr:retile(tm:get_slice(0):partition_fragment_A(X))) -- <E1>
    end) end, "cute.copy: src is in global memory; ldmatrix.sync.aligned.m8n8.x4.shared.b16 reads shared memory only")
  end)

  it("a fragment of another type, of the wrong size, or not registers", function()
    expect_at("E2", function() run(function()
      local sA = smem()
      local thr = tcA:get_slice(cute.arch.thread_idx())
      cute.copy(tcA, thr:partition_S(sA), cute.make_fragment_like(tm:get_slice(0):partition_fragment_A(sA), f32)) -- <E2>
    end) end, "cute.copy: dst is a fragment of float32; the atom (ldmatrix.sync.aligned.m8n8.x4.shared.b16) moves bfloat16")
    expect_at("E3", function() run(function()
      local sA = smem()
      local thr = tcA:get_slice(cute.arch.thread_idx())
      local v = thr:retile(tm:get_slice(0):partition_fragment_A(sA))
      cute.copy(tcA, thr:partition_S(sA)[{ _, _, 0 }], v) -- <E3>
    end) end, "cute.copy: src has 16 values per thread and dst 32", "must be 8 k and 8 k")
    expect_at("E4", function() run(function()
      local sA = smem()
      local thr = tcA:get_slice(cute.arch.thread_idx())
      cute.copy(tcA, thr:partition_S(sA), thr:partition_S(sA)) -- <E4>
    end) end, "cute.copy: dst = tensor<bf16, shared", "must be a register tensor")
    expect_at("E5", function() run(function()
      local sA = smem()
      local thr = tcA:get_slice(cute.arch.thread_idx())
      local v = thr:retile(tm:get_slice(0):partition_fragment_A(sA))
      cute.copy(tcA, thr:partition_S(sA), v, { pred = { [0] = true } }) -- <E5>
    end) end, "cute.copy: pred: ldmatrix.sync.aligned.m8n8.x4.shared.b16 is a warp-wide instruction")
  end)

  it("a source of another type", function()
    expect_at("E6", function() run(function()
      local sA, sH = smem(), smem(f16)
      local thr = tcA:get_slice(cute.arch.thread_idx())
      cute.copy(tcA, thr:partition_S(sH), thr:retile(tm:get_slice(0):partition_fragment_A(sA))) -- <E6>
    end) end, "cute.copy: src holds float16; the atom (ldmatrix.sync.aligned.m8n8.x4.shared.b16) moves bfloat16")
  end)

  it("stmatrix for a target older than sm_90", function()
    local tcC = cute.make_tiled_copy_C(atom(StM, false, 4), tmp)
    expect_at("E7", function() run(function()
      local sC = cute.make_shared_tensor(cute.make_layout({ 64, 64 }, { 64, 1 }), bf16)
      local thr = tcC:get_slice(cute.arch.thread_idx())
      local f = cute.make_fragment_like(tmp:get_slice(0):partition_fragment_C(sC), bf16)
      cute.copy(tcC, thr:retile(f), thr:partition_D(sC)) -- <E7>
    end, "sm_80") end, "cute.copy: stmatrix.sync.aligned.m8n8.x4.shared.b16 needs sm_90 or newer; the kernel is compiled for sm_80")
  end)

  it("rows that are not 16-byte rows of adjacent elements", function()
    expect_at("E8", function() run(function()
      -- an M-major A read with the plain (non-.trans) atom: a thread's 8 values are a column
      local sA = cute.make_shared_tensor(cute.make_layout({ 64, 32 }, { 1, 64 }), bf16)
      local thr = tcA:get_slice(cute.arch.thread_idx())
      cute.copy(tcA, thr:partition_S(sA), thr:retile(tm:get_slice(0):partition_fragment_A(sA))) -- <E8>
    end) end, "cute.copy: src values 0..7 are not one 16-byte row")
  end)

  it("retile of a fragment that does not fit the TiledCopy", function()
    expect_at("E9", function() run(function()
      local sB = smem()
      local tcB = cute.make_tiled_copy_B(atom(LdM, false, 4), tmp)
      local f = tm:get_slice(0):partition_fragment_B(sB)[{ _, 0, _ }]   -- ((2,2),2): one n-atom
      tcB:get_slice(0):retile(f) -- <E9>
    end) end, "ThrCopy:retile: the tensor register tensor<bfloat16, ((2,2),2)>", "has rank 2: retile needs a tensor (values, M, N, ...) of rank 3")
    expect_at("E11", function() run(function()
      local sA = smem()
      local thr = tcA:get_slice(cute.arch.thread_idx())
      local v = thr:retile(tm:get_slice(0):partition_fragment_A(sA))
      for k in cute.range(2) do
        local _ = v[{ _, _, k }] -- <E11>
      end
    end) end, "register tensor: slice (_,_,i32): registers are indexed by Lua integers only")
    expect_at("E10", function() run(function()
      tcA:get_slice(0):retile(42) -- <E10>
    end) end, "ThrCopy:retile: number 42 is not a register tensor")
  end)
end)
