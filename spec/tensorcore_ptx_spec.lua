-- Low-level tensor-core operations without a GPU (docs/TENSORCORE.md): kernels
-- using cute.arch.mma_sync, ldmatrix, stmatrix and cp.async compile, their PTX
-- holds the exact instructions, ptxas assembles them for sm_80 and sm_90a with
-- no spills, and bad operands are errors at the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has = util.has
local f32, f16, bf16, u32 = cute.float32, cute.float16, cute.bfloat16, cute.uint32

local THIS = "spec/tensorcore_ptx_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil
local function line_of(marker) return util.line_of(THIS, marker) end
local function spec1(n, dt) return cute.tensor_spec({ n }, dt) end
-- PTX with registers named by kind: %rd7 -> RD, %r3 -> R, %f2 -> F
local function regs(ptx) return (ptx:gsub("%%rd%d+", "RD"):gsub("%%r%d+", "R"):gsub("%%f%d+", "F")) end

-- compile for arch (assembled when ptxas is there); checks the PTX holds want
local function build(k, arch, want, ...)
  local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(...)
  for _, w in ipairs(want) do assert(has(r.ptx, w), ("%s: PTX lacks %q:\n%s"):format(arch, w, r.ptx)) end
  assert.falsy(has(r.ptx, ".local"), arch .. ": a fragment went to local memory")
  if PTXAS then
    assert.truthy(r.cubin, arch .. ": no cubin")
    assert.are.equal(0, r.info.spill_stores, arch .. ": " .. r.ptxas_log)
    assert.are.equal(0, r.info.spill_loads, arch)
  end
  return r
end
local function both(k, want, ...)
  for _, arch in ipairs({ "sm_80", "sm_90a" }) do build(k, arch, want, ...) end
  if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
end

local trace_error = util.trace_error
local function at_line(e, marker) util.at_line(THIS, e, marker) end

-- one warp: A (8 per lane), B (4 per lane) -> D (4 per lane), the fragment layout as given
local function mma_kernel(ab, shape, acc)
  local na, nb = shape == "m16n8k16" and 8 or 4, shape == "m16n8k16" and 4 or 2
  return cute.kernel(function(A, B, D)
    local lane = cute.arch.lane_idx()
    local a = cute.arch.make_fragment_regs(ab, na)
    local b = cute.arch.make_fragment_regs(ab, nb)
    local c = cute.arch.make_fragment_regs(acc, 4)
    for i = 0, na - 1 do a[i] = A[lane * na + i] end
    for i = 0, nb - 1 do b[i] = B[lane * nb + i] end
    for i = 0, 3 do c[i] = D[lane * 4 + i] end
    local mma = cute.arch.mma_sync{ shape = shape, a_type = ab, b_type = ab, c_type = acc, d_type = acc }
    mma(c, a, b, c)
    for i = 0, 3 do D[lane * 4 + i] = c[i] end
  end, { name = "mma_" .. shape })
end

describe("cute.arch.mma_sync", function()
  it("m16n8k16 bf16 and f16 with f32 accumulators: the exact instruction, 4 + 2 b32 and 4 f32 registers", function()
    for _, ab in ipairs({ bf16, f16 }) do
      local n = ab == bf16 and "bf16" or "f16"
      local k = mma_kernel(ab, "m16n8k16", f32)
      local r = build(k, "sm_80", { "mma.sync.aligned.m16n8k16.row.col.f32." .. n .. "." .. n .. ".f32" },
        spec1(256, ab), spec1(128, ab), spec1(128, f32))
      -- D 4 f32, A 4 b32, B 2 b32, C 4 f32
      assert.is_truthy(r.ptx:find("mma%.sync[^\n]-{%%f%d+,%%f%d+,%%f%d+,%%f%d+}, {%%r%d+,%%r%d+,%%r%d+,%%r%d+}, " ..
        "{%%r%d+,%%r%d+}, {%%f%d+,%%f%d+,%%f%d+,%%f%d+};"), r.ptx)
      both(k, {}, spec1(256, ab), spec1(128, ab), spec1(128, f32))
    end
  end)

  it("m16n8k8 f16, with f32 and with f16 accumulators; bf16 with f32", function()
    local k = mma_kernel(f16, "m16n8k8", f32)
    local r = build(k, "sm_80", { "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32" },
      spec1(128, f16), spec1(64, f16), spec1(128, f32))
    assert.is_truthy(r.ptx:find("mma%.sync[^\n]-{%%f%d+,%%f%d+,%%f%d+,%%f%d+}, {%%r%d+,%%r%d+}, {%%r%d+}, " ..
      "{%%f%d+,%%f%d+,%%f%d+,%%f%d+};"), r.ptx)
    build(mma_kernel(bf16, "m16n8k8", f32), "sm_80", { "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32" },
      spec1(128, bf16), spec1(64, bf16), spec1(128, f32))
    local kh = mma_kernel(f16, "m16n8k8", f16)
    local rh = build(kh, "sm_80", { "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16" },
      spec1(128, f16), spec1(64, f16), spec1(128, f16))
    assert.is_truthy(rh.ptx:find("mma%.sync[^\n]-{%%r%d+,%%r%d+}, {%%r%d+,%%r%d+}, {%%r%d+}, {%%r%d+,%%r%d+};"), rh.ptx)
    both(k, {}, spec1(128, f16), spec1(64, f16), spec1(128, f32))
    both(kh, {}, spec1(128, f16), spec1(64, f16), spec1(128, f16))
  end)

  it("accumulates in registers through a cute.range loop (no local memory, no spills)", function()
    local k = cute.kernel(function(A, B, D, n)
      local lane = cute.arch.lane_idx()
      local acc = cute.arch.make_fragment_regs(f32, 4)
      local mma = cute.arch.mma_sync{ shape = "m16n8k16", a_type = bf16, b_type = bf16, c_type = f32, d_type = f32 }
      for kk in cute.range(n) do
        local a = cute.arch.make_fragment_regs(bf16, 8)
        local b = cute.arch.make_fragment_regs(u32, 2)
        for i = 0, 7 do a[i] = A[(kk * 32 + lane) * 8 + i] end
        for i = 0, 1 do b[i] = B[(kk * 32 + lane) * 2 + i] end
        mma(acc, a, b) -- c omitted: d accumulates
      end
      for i = 0, 3 do D[lane * 4 + i] = acc[i] end
    end, { name = "mma_loop" })
    both(k, { "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" },
      spec1(4096, bf16), spec1(1024, u32), spec1(128, f32), cute.Int32(4))
  end)

  it("mismatched operands are errors at the user's line", function()
    local mma = cute.arch.mma_sync{ shape = "m16n8k16", a_type = "bf16", b_type = "bf16", c_type = "f32", d_type = "f32" }
    assert.are.equal("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", mma.ptx)
    -- the same instruction from CuTe DSL's numeric types and from dtype names
    assert.are.equal(mma.ptx, cute.arch.mma_sync{ shape = "m16n8k16", a_type = cute.BFloat16, b_type = cute.BFloat16,
      c_type = cute.Float32, d_type = cute.Float32 }.ptx)
    assert.are.equal("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f32", cute.arch.mma_sync{ shape = "m16n8k8",
      a_type = "float16", c_type = "Float32", d_type = cute.float16 }.ptx)
    local ok0, m0 = pcall(function() cute.arch.mma_sync{ shape = "m16n8k16", a_type = "int8" } end)
    assert.is_false(ok0)
    assert.is_truthy(has(tostring(m0), "a_type i8: expected f16 or bf16"), tostring(m0))
    local function k_with(na, ae, nd, de)
      return cute.kernel(function(Dt)
        local a = cute.arch.make_fragment_regs(ae, na)
        local b = cute.arch.make_fragment_regs(bf16, 4)
        local d = cute.arch.make_fragment_regs(de, nd)
        mma(d, a, b, d) -- MARK-mma
        Dt[0] = d[0]
      end)
    end
    local e = trace_error(k_with(6, bf16, 4, f32), spec1(4, f32))
    at_line(e, "MARK-mma")
    assert.is_truthy(has(e, "a must be a fragment of 8 bf16 or 4 b32 registers, got bf16[6]"), e)
    e = trace_error(k_with(8, f16, 4, f32), spec1(4, f32))
    at_line(e, "MARK-mma")
    assert.is_truthy(has(e, "got f16[8]"), e)
    e = trace_error(k_with(8, bf16, 2, f32), spec1(4, f32))
    at_line(e, "MARK-mma")
    assert.is_truthy(has(e, "d must be a fragment of 4 f32, got f32[2]"), e)
    -- a spec the PTX ISA has no instruction for
    local ok, msg = pcall(function()
      cute.arch.mma_sync{ shape = "m16n8k16", a_type = "bf16", c_type = "f16" } -- MARK-spec
    end)
    assert.is_false(ok)
    at_line(tostring(msg), "MARK-spec")
    assert.is_truthy(has(tostring(msg), "c_type f16: expected f32 (bf16 accumulates in f32)"), tostring(msg))
    ok, msg = pcall(function() cute.arch.mma_sync{ shape = "m16n8k4", a_type = "f16" } end)
    assert.is_truthy(has(tostring(msg), "shape m16n8k4"), tostring(msg))
  end)
end)

describe("register fragments", function()
  it("index by a Lua integer from 0; a traced or out-of-range index is an error at the user's line", function()
    local k = cute.kernel(function(A)
      local f = cute.arch.make_fragment_regs(f32, 4, 1.5)
      assert.are.equal(4, f:size())
      f[3] = A[0] * 2
      A[1] = f[3] + f[0]
    end)
    local ir = k:ir(spec1(4, f32))
    assert.is_truthy(has(ir, "vec f32[4] 1.5:f32"), ir)
    assert.is_truthy(ir:find("insert f32%[4%] %%%d+, %%%d+ lane=3"), ir)
    assert.is_truthy(ir:find("extract f32 %%%d+ lane=3"), ir)
    local bad = cute.kernel(function(A)
      local f = cute.arch.make_fragment_regs(f32, 4)
      A[0] = f[4] -- MARK-idx
    end)
    local e = trace_error(bad, spec1(4, f32))
    at_line(e, "MARK-idx")
    assert.is_truthy(has(e, "index 4: must be a Lua integer from 0 to 3"), e)
    local dyn = cute.kernel(function(A)
      local f = cute.arch.make_fragment_regs(f32, 4)
      f[cute.arch.lane_idx()] = 1.0 -- MARK-dyn
      A[0] = f[0]
    end)
    e = trace_error(dyn, spec1(4, f32))
    at_line(e, "MARK-dyn")
    assert.is_truthy(has(e, "(a traced value)"), e)
    -- made inside a loop, used after it
    local late = cute.kernel(function(A, n)
      local f
      for _ in cute.range(n) do f = cute.arch.make_fragment_regs(f32, 2) end
      A[0] = f[0] -- MARK-late
    end, { frontend = false }) -- (the front end refuses the Lua variable itself)
    e = trace_error(late, spec1(4, f32), cute.Int32(2))
    at_line(e, "MARK-late")
    assert.is_truthy(has(e, "inside a loop or branch that has ended"), e)
  end)
end)

describe("cute.arch.ldmatrix and stmatrix", function()
  local function ld_kernel(n, trans)
    return cute.kernel(function(O)
      local s = cute.make_shared_tensor(cute.make_layout({ 32, 8 }, { 8, 1 }), bf16)
      local lane = cute.arch.lane_idx()
      for j = 0, 7 do s[{ lane, j }] = lane + j end
      cute.arch.sync_threads()
      local f = cute.arch.ldmatrix(s[{ lane, cute._ }], { num_matrices = n, transpose = trans })
      for i = 0, n - 1 do O[lane * n + i] = f[i] end
    end, { name = "ld" .. n .. tostring(trans) })
  end

  it("x1, x2, x4, with and without .trans: one ldmatrix of the right register count", function()
    for _, n in ipairs({ 1, 2, 4 }) do
      for _, trans in ipairs({ false, true }) do
        local ins = ("ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16"):format(n, trans and ".trans" or "")
        local r = build(ld_kernel(n, trans), "sm_80", { ins }, spec1(32 * n, u32))
        local regs = {}
        for i = 1, n do regs[i] = "%%r%d+" end
        assert.is_truthy(r.ptx:find(ins:gsub("%.", "%%.") .. "%s+{" .. table.concat(regs, ", ?") .. "}, %[%%r%d+%];"),
          r.ptx)
        if n == 4 then both(ld_kernel(n, trans), { ins }, spec1(32 * n, u32)) end
      end
    end
  end)

  it("stmatrix on sm_90a; sm_80 has none", function()
    local k = cute.kernel(function(O)
      local s = cute.make_shared_tensor(cute.make_layout({ 32, 8 }, { 8, 1 }), f16)
      local lane = cute.arch.lane_idx()
      local f = cute.arch.make_fragment_regs(u32, 4)
      for i = 0, 3 do f[i] = lane * 4 + i end
      cute.arch.stmatrix(s[{ lane, cute._ }], f, { num_matrices = 4, transpose = true }) -- MARK-st
      cute.arch.sync_threads()
      O[lane] = s[{ lane, 0 }]
    end)
    build(k, "sm_90a", { "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16" }, spec1(32, f16))
    local e = trace_error(k:with({ arch = "sm_80" }), spec1(32, f16))
    at_line(e, "MARK-st")
    assert.is_truthy(has(e, "cute.arch.stmatrix needs sm_90 or newer; the kernel is compiled for sm_80"), e)
  end)

  it("errors: global memory, 32-bit elements, a misaligned row, a bad count", function()
    local function k_of(f) return cute.kernel(f) end
    local e = trace_error(k_of(function(A)
      local f = cute.arch.ldmatrix(A, { num_matrices = 4 }) -- MARK-glob
      A[0] = f[0]
    end), spec1(64, bf16))
    at_line(e, "MARK-glob")
    assert.is_truthy(has(e, "the address must be in shared memory, got global memory"), e)
    e = trace_error(k_of(function(A)
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      local f = cute.arch.ldmatrix(s) -- MARK-f32
      A[0] = f[0]
    end), spec1(64, bf16))
    at_line(e, "MARK-f32")
    assert.is_truthy(has(e, "16-bit elements, got 4-byte elements"), e)
    e = trace_error(k_of(function(A)
      local s = cute.make_shared_tensor(cute.make_layout({ 8, 8 }, { 8, 1 }), bf16)
      local f = cute.arch.ldmatrix(s[{ cute._, 3 }]) -- MARK-mis
      A[0] = f[0]
    end), spec1(64, bf16))
    at_line(e, "MARK-mis")
    assert.is_truthy(has(e, "the row address is 2-byte aligned; rows must be 16-byte aligned"), e)
    e = trace_error(k_of(function(A)
      local s = cute.make_shared_tensor(cute.make_layout(64), bf16)
      local f = cute.arch.ldmatrix(s, { num_matrices = 3 }) -- MARK-n3
      A[0] = f[0]
    end), spec1(64, bf16))
    at_line(e, "MARK-n3")
    assert.is_truthy(has(e, "num_matrices = 3: must be 1, 2 or 4"), e)
  end)
end)

describe("cute.arch.cp_async", function()
  -- each of 32 threads copies bytes from its row of G to its row of shared memory
  local function cp_kernel(bytes, cache, src_size)
    return cute.kernel(function(G, O, n)
      local s = cute.make_shared_tensor(cute.make_layout({ 32, 16 }, { 16, 1 }), cute.uint8)
      local t = cute.arch.thread_idx()
      local ss = src_size
      if ss == "traced" then ss = n end
      cute.arch.cp_async(s[{ t, cute._ }], G[{ t, cute._ }], bytes, { cache = cache, src_size = ss })
      cute.arch.cp_async_commit_group()
      cute.arch.cp_async_wait_group(0)
      cute.arch.sync_threads()
      O[{ t, 0 }] = s[{ t, 0 }]
    end, { name = "cp" .. bytes .. cache })
  end
  local G, O = cute.tensor_spec({ 32, 16 }, cute.uint8), cute.tensor_spec({ 32, 16 }, cute.uint8)

  it("ca 4/8/16 bytes and cg 16, with and without a zero-filled tail; commit and wait", function()
    for _, c in ipairs({ { 4, "ca" }, { 8, "ca" }, { 16, "ca" }, { 16, "cg" } }) do
      local ins = ("cp.async.%s.shared.global [R], [RD], %d"):format(c[2], c[1])
      local r = build(cp_kernel(c[1], c[2], nil), "sm_80", { "cp.async.commit_group;", "cp.async.wait_group 0;" },
        G, O, cute.Int32(3))
      assert.is_truthy(has(regs(r.ptx), ins .. ";"), ins .. "\n" .. r.ptx)
      -- src_size below bytes: the zero-filling form, a constant and a traced size
      r = build(cp_kernel(c[1], c[2], 3), "sm_80", {}, G, O, cute.Int32(3))
      assert.is_truthy(has(regs(r.ptx), ins .. ", R;") or has(regs(r.ptx), ins .. ", 3;"), r.ptx)
      r = build(cp_kernel(c[1], c[2], "traced"), "sm_80", {}, G, O, cute.Int32(3))
      assert.is_truthy(has(regs(r.ptx), ins .. ", R;"), r.ptx)
      -- src_size equal to bytes is the plain form
      r = build(cp_kernel(c[1], c[2], c[1]), "sm_80", {}, G, O, cute.Int32(3))
      assert.is_truthy(has(regs(r.ptx), ins .. ";"), r.ptx)
      both(cp_kernel(c[1], c[2], "traced"), { ("cp.async.%s.shared.global"):format(c[2]) }, G, O, cute.Int32(3))
    end
  end)

  it("errors at the user's line: sizes, cg with 8 bytes, misalignment, spaces, src_size, an old target", function()
    local function err(bytes, opts)
      return trace_error(cute.kernel(function(Gt)
        local s = cute.make_shared_tensor(cute.make_layout(64), cute.uint8)
        cute.arch.cp_async(s, Gt, bytes, opts) -- MARK-cp
      end), spec1(64, cute.uint8))
    end
    local e = err(12, nil)
    at_line(e, "MARK-cp")
    assert.is_truthy(has(e, "bytes = 12: must be 4, 8 or 16"), e)
    e = err(8, { cache = "cg" })
    at_line(e, "MARK-cp")
    assert.is_truthy(has(e, 'cache = "cg" copies 16 bytes only, got bytes = 8'), e)
    e = err(16, { src_size = 17 })
    assert.is_truthy(has(e, "src_size = 17: must be an integer from 0 to 16"), e)
    e = err(16, { cache = "cs" })
    assert.is_truthy(has(e, "cache = cs"), e)
    e = err(16, { pred = true })
    assert.is_truthy(has(e, "unknown option pred"), e)
    -- a destination at a static 4-byte offset for a 16-byte copy; a source 8-byte aligned
    e = trace_error(cute.kernel(function(Gt)
      local s = cute.make_shared_tensor(cute.make_layout({ 8, 8 }, { 8, 1 }), cute.uint8)
      cute.arch.cp_async(s[{ cute._, 4 }], Gt, 16) -- MARK-cpmis
    end), spec1(64, cute.uint8))
    at_line(e, "MARK-cpmis")
    assert.is_truthy(has(e, "the destination is 4-byte aligned; a 16-byte copy needs 16-byte alignment"), e)
    e = trace_error(cute.kernel(function(Gt)
      local s = cute.make_shared_tensor(cute.make_layout(64), cute.uint8)
      cute.arch.cp_async(s, Gt[{ cute._, 8 }], 16) -- MARK-src
    end), cute.tensor_spec({ 4, 16 }, cute.uint8))
    at_line(e, "MARK-src")
    assert.is_truthy(has(e, "the source is 8-byte aligned; a 16-byte copy needs 16-byte alignment"), e)
    -- the source in shared memory, the destination in global memory
    e = trace_error(cute.kernel(function(Gt)
      local s = cute.make_shared_tensor(cute.make_layout(64), cute.uint8)
      cute.arch.cp_async(Gt, s, 16) -- MARK-space
    end), spec1(64, cute.uint8))
    at_line(e, "MARK-space")
    assert.is_truthy(has(e, "the destination must be in shared memory, got global memory"), e)
    -- sm_75 has no cp.async
    local k = cute.kernel(function(Gt)
      local s = cute.make_shared_tensor(cute.make_layout(64), cute.uint8)
      cute.arch.cp_async(s, Gt, 16) -- MARK-75
    end)
    e = trace_error(k:with({ arch = "sm_75" }), spec1(64, cute.uint8))
    at_line(e, "MARK-75")
    assert.is_truthy(has(e, "cute.arch.cp_async needs sm_80 or newer; the kernel is compiled for sm_75"), e)
    e = trace_error(cute.kernel(function(Gt)
      cute.arch.cp_async_wait_group(cute.arch.lane_idx()) -- MARK-wait
    end), spec1(64, cute.uint8))
    at_line(e, "MARK-wait")
    assert.is_truthy(has(e, "n = (a traced value): must be a Lua integer"), e)
  end)
end)
