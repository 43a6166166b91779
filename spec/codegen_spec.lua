-- Code generation: IR -> LLVM -> PTX -> cubin (ptxas).  Every kernel here is
-- assembled by ptxas for sm_80 and sm_90a when ptxas is installed; without it
-- those specs are pending (never silently passed).  PTX shape checks need no
-- ptxas.
if not pcall(require, "cute.ffi") then
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
end
local IR = require("cute.ir")

local PTXAS = IR.ptxas_path()  -- CUTE_PTXAS=/nonexistent simulates a machine without it
local ARCHS = { os.getenv("CUTE_ARCH1") or "sm_80", os.getenv("CUTE_ARCH2") or "sm_90a" }

local util = dofile("spec/support/util.lua")
local function read(path) return assert(util.read_file(path), "cannot read " .. path) end
local has = util.has

local function golden(name) return IR.parse(read("spec/golden/" .. name .. ".ir")) end

-- compile for both archs (ptxas when present); returns the sm_90a result
local function build(m, want)
  local last
  for _, arch in ipairs(ARCHS) do
    local r, e = m:compile { arch = arch, opt_level = 3 }
    assert(r, arch .. ": " .. tostring(e))
    for _, pat in ipairs(want or {}) do
      assert(has(r.ptx, pat), ("%s: PTX lacks %q\n%s"):format(arch, pat, r.ptx))
    end
    if PTXAS then
      assert.truthy(r.cubin, arch .. ": no cubin")
      assert.truthy(#r.cubin > 0)
    end
    last = r
  end
  -- never pass silently without the assembler: the PTX was checked, not assembled
  if not PTXAS then pending("ptxas not found (CUTE_PTXAS, CUDA_HOME, PATH, /usr/local/cuda/bin): PTX not assembled") end
  return last
end

local function gpu_it(name, f)
  if PTXAS then it(name, f) else pending(name .. " (needs ptxas: /usr/local/cuda/bin/ptxas not found)") end
end

describe("codegen: golden kernels", function()
  it("vadd: ld.global.nc.v4.f32, launch bounds, noalias/aligned params", function()
    local r = build(golden("vadd"), { "ld.global.nc.v4.f32", "st.global.v4.f32", ".maxntid 256, 1, 1", ".minnctapersm 2", ".entry vadd" })
    assert.truthy(has(r.llvm, "noalias"))
    assert.truthy(has(r.llvm, "align 16"))
    assert.truthy(has(r.llvm, "ptx_kernel"))
  end)
  it("reduce: shfl.sync.bfly.b32, bar.sync 1, 128, shared and system-scope atomics", function()
    build(golden("reduce"), { "shfl.sync.bfly.b32", "bar.sync 1, 128", "atom.shared.add.f32", "atom.sys.global.add.f32", ".shared .align 16" })
  end)
  it("loops: unroll metadata (full and disable), break, device function call", function()
    local r = build(golden("loops"), { '.pragma "nounroll"' })
    local m = golden("loops")
    local r0 = assert(m:compile { arch = "sm_90a", opt_level = 0, use_ptxas = false })
    assert.truthy(has(r0.llvm, "llvm.loop.unroll.full"))
    assert.truthy(has(r0.llvm, "llvm.loop.unroll.disable"))
    assert.truthy(has(r0.llvm, "alloca"))      -- vars are allocas before mem2reg
    assert.falsy(has(r.llvm, "alloca"))        -- and registers after O3
  end)
  it("ifelse: cvt.rn.bf16.f32, cvt.rz.bf16.f32, sqrt.rn, ex2.approx", function()
    build(golden("ifelse"), { "cvt.rn.bf16.f32", "cvt.rz.bf16.f32", "sqrt.rn.f32", "ex2.approx" })
  end)
  gpu_it("reports ptxas registers, spills and stack", function()
    local r = build(golden("reduce"))
    assert.is_true(r.info.regs > 0)
    assert.are.equal(0, r.info.spill_stores)
    assert.are.equal(0, r.info.stack)
    assert.are.equal(16, r.info.smem_static)
    assert.is_true(r.times.assemble > 0)
  end)
  it("loop-carried values (for_carry) become phis, not local memory", function()
    local m = IR.new()
    m:func("carry", "kernel")
    local p = m:param("ptr.global.f32", "p")
    local n = m:param("i32", "n")
    local s, c = m:for_carry(m:k("i32", 0), n, m:k("i32", 1), { m:k("f32", 0), m:k("i32", 0) }, function(i, s, c)
      return m:add(s, m:load(m:gep(p, i))), m:add(c, m:k("i32", 1))
    end)
    m:store(p, m:add(s, m:cvt("f32", c)))
    m:ret()
    local r = build(m)
    assert.truthy(has(r.llvm, "phi float"))
    assert.falsy(has(r.ptx, ".local"))
  end)
  it("line info: .file/.loc from the IR's source locations (ptxas -lineinfo)", function()
    for opt = 0, 3 do
      local r = assert(golden("reduce"):compile { arch = "sm_90a", opt_level = opt, lineinfo = true, use_ptxas = PTXAS ~= nil })
      -- (a relative name is made absolute: the working directory joined, docs/LINEINFO.md)
      assert.truthy(r.ptx:find('%.file\t1 "/[^"]*/reduce%.lua"'), r.ptx:sub(-400))
      assert.truthy(has(r.ptx, ".loc\t1 3 "))   -- the grid-stride loop's line
      if PTXAS then assert.truthy(r.cubin) end
    end
    local plain = assert(golden("reduce"):compile { arch = "sm_90a", use_ptxas = false })
    assert.falsy(has(plain.ptx, ".loc"))
  end)
  it("compiles at every optimisation level, for a chosen PTX version", function()
    for opt = 0, 3 do
      local r = assert(golden("loops"):compile { arch = "sm_90a", opt_level = opt, use_ptxas = false })
      assert.truthy(has(r.ptx, ".target sm_90a"))
    end
    local r = assert(golden("vadd"):compile { arch = "sm_80", ptx_version = 78, use_ptxas = false })
    assert.truthy(has(r.ptx, ".version 7.8"))
  end)
end)

-- ---- op coverage: every op family, assembled by ptxas ---------------------------
local function kernel(name)
  local m = IR.new()
  m:func(name, "kernel")
  m:loc(name .. ".lua", 1)
  return m
end

-- a function storing each value it is given to its own 8-byte slot of out
-- (keeps every result alive through the optimiser)
local function byte_sink(m, out)
  local k = 0
  return function(v)
    local t = m:type_of(v)
    m:store(m:ptrcast(m:ptr(t, "global"), m:gep(out, m:k("i32", k * 8))), v)
    k = k + 1
  end
end

describe("codegen: op coverage", function()
  it("integer and float arithmetic on every scalar type", function()
    local m = kernel("arith")
    local out = m:param("ptr.global.u8", "out")
    local sink = byte_sink(m, out)
    -- a loaded value: nothing is known about its range
    local tid = m:load(m:ptrcast(m:ptr("u32", "global"), out))
    for _, t in ipairs({ "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64" }) do
      local a = m:cvt(t, tid)
      local b = m:add(a, m:k(t, 3))
      for _, op in ipairs({ "add", "sub", "mul", "div", "rem", "min", "max", "and_", "or_", "xor", "shl", "shr" }) do
        sink(m[op](m, a, b))
      end
      sink(m:not_(a))
      sink(m:neg(a))
      if t:sub(1, 1) == "i" then sink(m:abs(a)) end
      if t ~= "i8" and t ~= "u8" then sink(m:mulhi(a, b)) end
      sink(m:select(m:lt(a, b), a, b))
      for _, c in ipairs({ "eq", "ne", "lt", "le", "gt", "ge" }) do sink(m:cvt("u32", m[c](m, a, b))) end
    end
    for _, t in ipairs({ "f16", "bf16", "f32", "f64" }) do
      local a = m:cvt(t, tid)
      local b = m:add(a, m:k(t, 1.5))
      for _, op in ipairs({ "add", "sub", "mul", "div", "min", "max" }) do sink(m[op](m, a, b)) end
      if t == "f32" or t == "f64" then sink(m:rem(a, b)) end
      sink(m:neg(a))
      sink(m:abs(a))
      sink(m:fma(a, b, a))
      for _, c in ipairs({ "eq", "ne", "lt", "le", "gt", "ge" }) do sink(m:cvt("u32", m[c](m, a, b))) end
      sink(m:cvt("u32", m:isnan(a)))
    end
    local hv = m:emit("vec", "f16x2", { m:cvt("f16", tid), m:k("f16", 2) })
    sink(m:add(hv, hv))
    sink(m:mul(hv, hv))
    sink(m:fma(hv, hv, hv))
    local bv = m:emit("vec", "bf16x2", { m:cvt("bf16", tid) })
    sink(m:fma(bv, bv, bv))
    sink(m:extract(hv, { lane = 1 }))
    sink(m:insert(hv, m:k("f16", 1), { lane = 0 }))
    m:ret()
    build(m, { "mul.hi.s32", "fma.rn.f16x2", "div.s32", "div.rn.f64", "max.s16" })
  end)

  it("conversions between all scalar types, rounding modes and bitcasts", function()
    local m = kernel("conv")
    local out = m:param("ptr.global.u8", "out")
    local sink = byte_sink(m, out)
    local tid = m:load(m:ptrcast(m:ptr("u32", "global"), out))
    local T = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64" }
    local src = {}
    for _, t in ipairs(T) do src[t] = m:cvt(t, tid) end
    for _, from in ipairs(T) do
      for _, to in ipairs(T) do sink(m:cvt(to, src[from])) end
      sink(m:cvt("u32", m:cvt("i1", src[from])))
    end
    for _, r in ipairs({ "rn", "rz", "rm", "rp" }) do
      sink(m:cvt("i32", src.f32, r))
      sink(m:cvt("u64", src.f64, r))
      sink(m:cvt("f32", src.i32, r))
      sink(m:cvt("f32", src.u64, r))
      sink(m:cvt("f32", src.f64, r))
      sink(m:cvt("f32", src.f32, r))  -- round to integral
      sink(m:cvt("i16", src.f16, r))
      sink(m:cvt("f16", src.i32, r))
    end
    for _, r in ipairs({ "rn", "rz" }) do
      sink(m:cvt("f16", src.f32, r))
      sink(m:cvt("bf16", src.f32, r))
      sink(m:cvt("f16", src.f64, r))
    end
    sink(m:bitcast("u32", src.f32))
    sink(m:bitcast("f64", src.i64))
    sink(m:bitcast("u16", src.bf16))
    local p = m:ptrcast(m:ptr("u8", "generic"), out)
    sink(m:bitcast("u64", p))
    sink(m:load(m:ptrcast(m:ptr("u8", "global"), m:bitcast(m:ptr("u8", "generic"), m:bitcast("u64", p)))))
    m:ret()
    build(m, { "cvt.rzi.s32.f32", "cvt.rmi.u64.f64", "cvt.rp.f32.s32", "cvt.rz.f16.f32", "cvt.rn.bf16.f32", "cvt.rpi.f32.f32" })
  end)

  it("math: fast and accurate forms on f32, f64, f16", function()
    local m = kernel("mathk")
    local out = m:param("ptr.global.f64", "out")
    local tid = m:sreg("tid.x")
    local k = 0
    for _, t in ipairs({ "f32", "f64", "f16", "bf16" }) do
      local x = m:cvt(t, tid)
      for _, f in ipairs({ "sqrt", "rsqrt", "rcp", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "erf" }) do
        for _, mode in ipairs({ "fast", "accurate" }) do
          m:store(m:gep(out, m:k("i32", k)), m:cvt("f64", m[f](m, x, { math = mode })))
          k = k + 1
        end
      end
      for _, mode in ipairs({ "fast", "accurate" }) do
        m:store(m:gep(out, m:k("i32", k)), m:cvt("f64", m:pow(x, x, { math = mode })))
        k = k + 1
      end
      for _, f in ipairs({ "floor", "ceil", "trunc", "round" }) do
        m:store(m:gep(out, m:k("i32", k)), m:cvt("f64", m[f](m, x)))
        k = k + 1
      end
    end
    m:ret()
    build(m, { "ex2.approx", "lg2.approx", "sin.approx", "tanh.approx.f32", "rsqrt.approx", "sqrt.rn.f64", "cvt.rmi.f32.f32" })
  end)

  it("bits, vectors, special registers, barriers, fences, votes", function()
    local m = kernel("misc")
    local out = m:param("ptr.global.u32", "out")
    local o64 = m:param("ptr.global.u64", "o64")
    local k = 0
    local function sink(v)
      local t = m:type_of(v)
      if m:type_name(t) == "u64" then m:store(m:gep(o64, m:k("i32", k)), v)
      else m:store(m:gep(out, m:k("i32", k)), m:type_name(t) == "u32" and v or m:bitcast("u32", v)) end
      k = k + 1
    end
    for _, r in ipairs({ "tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z", "ctaid.x", "ctaid.y", "ctaid.z",
                         "nctaid.x", "nctaid.y", "nctaid.z", "laneid", "warpid", "nwarpid", "smid", "nsmid", "clock",
                         "clock64", "globaltimer", "lanemask_lt", "lanemask_le", "lanemask_eq", "lanemask_ge", "lanemask_gt" }) do
      sink(m:sreg(r))
    end
    local x = m:sreg("tid.x")
    local x64 = m:load(o64)
    sink(m:popc(x)); sink(m:clz(x)); sink(m:brev(x)); sink(m:popc(x64)); sink(m:clz(x64)); sink(m:brev(x64))
    sink(m:prmt(x, m:k("u32", 0x12345678), m:k("u32", 0x3210)))
    local v = m:emit("vec", "u32x4", { x, x, x, x })
    sink(m:extract(m:insert(v, m:k("u32", 7), { lane = 2 }), { lane = 2 }))
    sink(m:extract(m:add(v, m:emit("vec", "u32x4", { x })), { lane = 3 }))
    m:bar()
    m:bar(2)
    m:bar(3, 64)
    for _, s in ipairs({ "cta", "gpu", "sys" }) do m:fence({ scope = s }) end
    local full = m:k("u32", -1)
    local p = m:lt(x, m:k("u32", 7))
    for _, mode in ipairs({ "all", "any", "uni" }) do sink(m:cvt("u32", m:vote(full, p, { mode = mode }))) end
    sink(m:vote(full, p, { mode = "ballot" }))
    m:ret()
    build(m, { "popc.b32", "clz.b64", "brev.b32", "prmt.b32", "%globaltimer", "bar.sync", "bar.sync 2;", "bar.sync 3, 64",
               "membar.cta", "membar.gl", "membar.sys", "vote.sync.ballot.b32", "vote.sync.uni.pred" })
  end)

  it("shuffles: every mode, widths, 32- and 64-bit values", function()
    local m = kernel("shfl")
    local out = m:param("ptr.global.u64", "out")
    local x = m:sreg("laneid")
    local full = m:k("u32", -1)
    local k = 0
    for _, mode in ipairs({ "idx", "up", "down", "bfly" }) do
      for _, t in ipairs({ "u32", "i32", "f32", "u64", "f64", "i64", "f16x2", "bf16x2" }) do
        local v
        if t == "f16x2" or t == "bf16x2" then v = m:emit("vec", t, { m:cvt(t:sub(1, -3), x) })
        else v = m:cvt(t, x) end
        for _, w in ipairs({ 32, 8 }) do
          local r = m:shfl(v, m:k("u32", 1), full, { mode = mode, width = w })
          local bits = m:type_name(m:type_of(r)):find("64") and r or m:cvt("u64", m:bitcast("u32", r))
          if m:type_name(m:type_of(r)) == "f64" or m:type_name(m:type_of(r)) == "i64" then bits = m:bitcast("u64", r) end
          m:store(m:gep(out, m:k("i32", k)), bits)
          k = k + 1
        end
      end
    end
    m:ret()
    build(m, { "shfl.sync.idx.b32", "shfl.sync.up.b32", "shfl.sync.down.b32", "shfl.sync.bfly.b32" })
  end)

  it("loads and stores: cache hints, volatile, 8/16-byte vectors, shared, local, dynamic shared", function()
    local m = kernel("mem")
    m:dyn_smem(64 * 1024)
    local g = m:param("ptr.global.f32", "g", { noalias = true, align = 16 })
    local tid = m:sreg("tid.x")
    local v4 = m:ptrcast(m:ptr("f32x4", "global"), m:gep(g, m:mul(tid, m:k("u32", 4))))
    local v2 = m:ptrcast(m:ptr("f32x2", "global"), v4)
    local h8 = m:ptrcast(m:ptr("f16x8", "global"), v4)
    local b8 = m:ptrcast(m:ptr("u8x8", "global"), v4)
    local s1 = m:ptrcast(m:ptr("u8", "global"), v4)
    local s2 = m:ptrcast(m:ptr("bf16", "global"), v4)
    local d1 = m:ptrcast(m:ptr("f64", "global"), v4)
    -- distinct addresses so that no access is merged with another
    local off = 0
    local function at(p) off = off + 1; return m:gep(p, m:k("i32", off * 64)) end
    for _, h in ipairs({ "nc", "cs", "cg", "ca", "lu", "cv", "volatile" }) do
      for _, p in ipairs({ v4, v2, h8, b8, s1, s2, d1, g }) do
        local x = m:load(at(p), { hint = h })
        m:store(at(p), x, { hint = (h == "cs" or h == "cg" or h == "volatile") and h or nil })
      end
    end
    for _, h in ipairs({ "wb", "wt" }) do m:store(v4, m:load(v4), { hint = h }) end
    local gen = m:ptrcast(m:ptr("f32", "generic"), g)
    m:store(gen, m:load(gen, { hint = "cg" }), { hint = "cs" })
    local sm = m:shared("f32x4", 64, 16)
    local dyn = m:dynshared("f32", 128)
    local lo = m:localarr("f32", 8)
    m:store(m:gep(sm, tid), m:load(v4))
    m:bar()
    m:store(m:gep(dyn, tid), m:extract(m:load(m:gep(sm, m:xor(tid, m:k("u32", 1)))), { lane = 0 }))
    m:store(m:gep(lo, m:and_(tid, m:k("u32", 7))), m:load(m:gep(dyn, tid), { hint = "volatile" }))
    m:store(g, m:load(m:gep(lo, m:k("i32", 3))))
    m:ret()
    local r = build(m, { "ld.global.nc", "ld.global.cs.v4.b32", "st.global.cs.v2.b32", "ld.global.lu", "ld.volatile.global",
                         "st.global.wt.v4.b32", "st.shared.v4.f32", "cute_dyn_smem", ".local", "ld.cg.b32" })
    assert.are.equal(65536, r.info.smem_dynamic)
    assert.is_true(r.info.smem_optin)
  end)

  it("atomics: every op, global/shared/generic, scopes, f64 and f16x2/bf16x2 add, cas", function()
    local m = kernel("atoms")
    local gi = m:param("ptr.global.i32", "gi")
    local gu = m:param("ptr.global.u64", "gu")
    local gf = m:param("ptr.global.f32", "gf")
    local gd = m:param("ptr.global.f64", "gd")
    local gh = m:param("ptr.global.f16x2", "gh")
    local gb = m:param("ptr.global.bf16x2", "gb")
    local si = m:shared("i32", 32)
    local sf = m:shared("f32", 32)
    local x = m:cvt("i32", m:sreg("tid.x"))
    local acc = m:var("i32", m:k("i32", 0))
    local function keep(v) m:vset(acc, m:xor(m:vget(acc), m:cvt("i32", v))) end
    for _, scope in ipairs({ "gpu", "cta", "sys" }) do
      for _, p in ipairs({ gi, si, m:ptrcast(m:ptr("i32", "generic"), gi) }) do
        for _, op in ipairs({ "add", "min", "max", "and", "or", "xor", "exch" }) do
          keep(m:atom(p, x, { op = op, scope = scope }))
        end
        keep(m:cas(p, x, m:add(x, m:k("i32", 1)), { scope = scope }))
      end
      for _, op in ipairs({ "add", "min", "max", "and", "or", "xor", "exch" }) do
        keep(m:atom(gu, m:cvt("u64", x), { op = op, scope = scope }))
      end
      keep(m:cas(gu, m:cvt("u64", x), m:k("u64", 5), { scope = scope }))
      keep(m:atom(m:ptrcast(m:ptr("u32", "global"), gi), m:cvt("u32", x), { op = "inc", scope = scope }))
      keep(m:atom(m:ptrcast(m:ptr("u32", "global"), gi), m:cvt("u32", x), { op = "dec", scope = scope }))
      for _, p in ipairs({ gf, sf }) do
        keep(m:atom(p, m:cvt("f32", x), { op = "add", scope = scope }))
        keep(m:atom(p, m:cvt("f32", x), { op = "exch", scope = scope }))
      end
      keep(m:atom(gd, m:cvt("f64", x), { op = "add", scope = scope }))
      keep(m:bitcast("i32", m:atom(gh, m:emit("vec", "f16x2", { m:cvt("f16", x) }), { op = "add", scope = scope })))
    end
    m:store(gi, m:vget(acc))
    m:ret()
    build(m, { "atom.global.add.u32", "atom.shared.min.s32", "atom.cta.global.add.f32", "atom.sys.shared.exch.b32",
               "atom.global.add.f64", "atom.gpu.global.add.noftz.f16x2",
               "atom.global.cas.b32", "atom.sys.global.cas.b64", "atom.gpu.global.inc.u32" })
  end)

  it("bf16x2 atomic add: sm_90 only, with a clear error before", function()
    local m = kernel("atomb")
    local gb = m:param("ptr.global.bf16x2", "gb")
    local v = m:emit("vec", "bf16x2", { m:k("bf16", 1) })
    m:atom(gb, v, { op = "add", scope = "cta" })
    m:ret()
    local r = assert(m:compile { arch = "sm_90a" })
    assert.truthy(has(r.ptx, "atom.cta.global.add.noftz.bf16x2"))
    local r2, e = m:compile { arch = "sm_80" }
    assert.is_nil(r2)
    assert.truthy(has(e, "needs sm_90") and has(e, "atomb.lua:1"))
  end)

  it("printf, assert, trap, inline PTX with scalar and vector results, early return", function()
    local m = kernel("dbg")
    local p = m:param("ptr.global.f32", "p")
    local tid = m:sreg("tid.x")
    m:if_(m:gt(tid, m:k("u32", 64)))
    m:ret()
    m:end_()
    m:printf("tid %u x %f h %f c %d b %d p %p\n", tid, m:load(p), m:cvt("f16", tid), m:cvt("i8", tid), m:k("i1", 1), p)
    m:printf("no args\n")
    m:assert(m:lt(m:load(p), m:k("f32", 1000)), "value in range")
    local lane = m:asm("u32", "mov.u32 $0, %laneid;", "=r")
    local four = m:asm("u32x4", "mov.b32 $0, 1;\n\tmov.b32 $1, 2;\n\tmov.b32 $2, $4;\n\tmov.b32 $3, 4;", "=r,=r,=r,=r,r", lane)
    m:asm(nil, "// hello $0", "r", m:extract(four, { lane = 2 }))
    m:if_(m:eq(lane, m:k("u32", 99)))
    m:trap()
    m:end_()
    m:ret()
    local r = build(m, { "vprintf", "trap;", "%laneid", "// hello" })
    -- strings are byte arrays in PTX: check the LLVM IR
    assert.truthy(has(r.llvm, "dbg.lua:1: assertion failed: value in range"))
  end)
end)

describe("codegen: fragments and by-value parameters", function()
  -- every arch: assembled (ptxas when present) with no local memory and no spills
  local function no_local(m, want)
    for _, arch in ipairs(ARCHS) do
      local r, e = m:compile { arch = arch, opt_level = 3 }
      assert(r, arch .. ": " .. tostring(e))
      for _, pat in ipairs(want or {}) do assert(has(r.ptx, pat), ("%s: PTX lacks %q"):format(arch, pat)) end
      assert.falsy(has(r.ptx, ".local"), arch .. ": the fragment went to local memory")
      assert.falsy(has(r.ptx, "__local_depot"), arch .. ": local depot")
      assert.falsy(has(r.llvm, "alloca"), arch .. ": an alloca survived")
      if PTXAS then
        assert.truthy(r.cubin, arch .. ": no cubin")
        assert.are.equal(0, r.info.spill_stores, arch .. ": " .. r.ptxas_log)
        assert.are.equal(0, r.info.spill_loads, arch)
        assert.are.equal(0, r.info.stack, arch)
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end
  it("f32[128] loop-carried, sliced, through one asm with 258 operands; bytes<128,64> grid_constant", function()
    no_local(golden("fragment"), { ".param .align 64 .b8 frag_param_desc[128]", "cvta.param.u64",
      ".param .u64 frag_param_out", ".param .u32 frag_param_n", ".param .f32 frag_param_s" })
  end)
  it("wgmma.mma_async m64n256k16 with a 128 x f32 accumulator (sm_90a)", function()
    local m = kernel("wg")
    local out = m:param("ptr.global.f32", "out")
    local da = m:param("u64", "da")
    local db = m:param("u64", "db")
    local F = m:array("f32", 128)
    local acc = m:var(F, m:emit("vec", F, { m:k("f32", 0) }))
    m:for_(m:k("i32", 0), m:k("i32", 4), m:k("i32", 1))
    local d, cons = {}, {}
    for j = 0, 127 do d[#d + 1] = "$" .. j; cons[#cons + 1] = "=f" end
    for j = 0, 127 do cons[#cons + 1] = tostring(j) end
    cons[#cons + 1] = "l"; cons[#cons + 1] = "l"; cons[#cons + 1] = "n"
    local ptx = "{\n.reg .pred p;\nsetp.ne.b32 p, $258, 0;\nwgmma.fence.sync.aligned;\n" ..
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" .. table.concat(d, ", ") ..
      "}, $256, $257, p, 1, 1, 0, 0;\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}"
    m:vset(acc, m:asm(F, ptx, table.concat(cons, ","), m:vget(acc), da, db, m:k("i32", 1)))
    m:end_()
    local fin = m:vget(acc)
    local base = m:gep(out, m:mul(m:sreg("tid.x"), m:k("u32", 128)))
    for j = 0, 127 do m:store(m:gep(base, m:k("i32", j)), m:extract(fin, { lane = j })) end
    m:ret()
    assert.is_true(m:verify())
    local txt = m:text()
    assert.are.equal(txt, IR.parse(txt):text())
    local r = assert(m:compile { arch = "sm_90a" })
    assert.truthy(has(r.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"))
    assert.falsy(has(r.ptx, ".local"))
    if not PTXAS then pending("ptxas not found: wgmma PTX not assembled") end
    assert.truthy(r.cubin)
    assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
    assert.are.equal(0, r.info.stack)
  end)
  it("fragments of one element, of u64 and of f16x2 through asm; a fragment if-result", function()
    for _, c in ipairs { { "u32", "r", 1 }, { "f32", "f", 1 }, { "u64", "l", 3 }, { "f64", "d", 2 }, { "f16x2", "r", 4 } } do
      local el, letter, n = c[1], c[2], c[3]
      local m = kernel("f1")
      local out = m:param("ptr.global." .. el, "out")
      local F = m:array(el, n)
      local fr = m:emit("vec", F, { m:load(out) })
      local cons = {}
      for k = 1, n do cons[k] = "=" .. letter end
      for k = 0, n - 1 do cons[n + k + 1] = tostring(k) end
      fr = m:asm(F, "// frag $0", table.concat(cons, ","), fr)
      local sel = m:if_(m:eq(m:sreg("tid.x"), m:k("u32", 0)), F)
      m:yield(fr)
      m:else_()
      m:yield(m:insert(fr, m:load(out), { lane = n - 1 }))
      m:end_()
      m:store(out, m:extract(sel, { lane = n - 1 }))
      m:ret()
      no_local(m)
    end
  end)
  it("PTX parameter names come from the IR names (identifiers, unique), else the index", function()
    local m = kernel("names")
    local a = m:param("ptr.global.f32", "A")
    m:param("i32", "n")
    m:param("i32", "n")          -- duplicate: both keep their index
    m:param("i32", "not valid")  -- not an identifier
    m:param("i32")               -- no name
    m:store(a, m:k("f32", 1))
    m:ret()
    local r = assert(m:compile { arch = "sm_80", use_ptxas = PTXAS ~= nil })
    assert.truthy(has(r.ptx, ".param .u64 names_param_A"))
    assert.truthy(has(r.ptx, "[names_param_A]"))
    for i = 1, 4 do assert.truthy(has(r.ptx, "names_param_" .. i), i) end
    assert.falsy(has(r.ptx, "names_param_0"))
  end)
  it("grid_constant needs sm_70 and PTX 7.7 (raised on sm_80, an error when pinned lower)", function()
    local m = golden("fragment")
    local r, e = m:compile { arch = "sm_80", ptx_version = 70, use_ptxas = false }
    assert.is_nil(r)
    assert.truthy(has(e, "grid_constant") and has(e, "PTX 7.7"), e)
    r, e = m:compile { arch = "sm_61", use_ptxas = false }
    assert.is_nil(r)
    assert.truthy(has(e, "sm_70"), e)
    r = assert(m:compile { arch = "sm_80", use_ptxas = false })
    assert.truthy(has(r.ptx, ".version 7.7"))
  end)
  it("a fragment at O0 still compiles (vars live in memory before SROA)", function()
    local r = assert(golden("fragment"):compile { arch = "sm_90a", opt_level = 0, use_ptxas = false })
    assert.truthy(has(r.ptx, ".entry frag"))
  end)
end)

describe("codegen: errors come back as messages", function()
  it("ptxas errors (bad inline PTX) are returned, not printed", function()
    local m = kernel("bad")
    m:asm(nil, "frobnicate.b32 $0;", "r", m:sreg("tid.x"))
    m:ret()
    local r, e, code, partial = m:compile { arch = "sm_90a" }
    if not PTXAS then
      assert.truthy(r)
      pending("ptxas not found: its error path is not exercised")
    end
    assert.is_nil(r)
    assert.are.equal(10, code) -- CUTE_E_PTXAS
    assert.truthy(has(e, "ptxas"))
    assert.truthy(has(partial.ptx, "frobnicate"))
  end)
  it("without ptxas the PTX is left for the driver JIT", function()
    local r = assert(golden("vadd"):compile { arch = "sm_90a", use_ptxas = false })
    assert.is_nil(r.cubin)
    assert.truthy(has(r.ptx, ".entry vadd"))
  end)
  it("accurate math without libdevice says it needs libdevice", function()
    local m = kernel("needs")
    local p = m:param("ptr.global.f32", "p")
    m:store(p, m:exp(m:load(p), { math = "accurate" }))
    m:ret()
    local r, e = m:compile { arch = "sm_90a", use_ptxas = false, libdevice = "/nonexistent/libdevice.10.bc" }
    assert.is_nil(r)
    assert.truthy(has(e, "libdevice"))
  end)
  it("verifier errors stop compilation with file:line", function()
    local m = IR.parse('kernel @k(%1: i32) {\n  loc "x.lua" 3\n  %2 = add i32 %1, %1\n}\n')
    local r, e, code = m:compile { arch = "sm_90a" }
    assert.is_nil(r)
    assert.are.equal(13, code)
    assert.truthy(has(e, "missing terminator"))
  end)
  it("bad arch strings are rejected (an error at the caller's line naming the option and the value)", function()
    local ok, e = pcall(function() return golden("vadd"):compile { arch = "gfx90a" } end)
    assert.is_false(ok)
    assert.truthy(has(e, "compile option 'arch'") and has(e, "gfx90a") and has(e, "codegen_spec.lua:"), e)
  end)
end)

describe("codegen: op x type sweep (LLVM and PTX emission, no ptxas) #slow", function()
  local T = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64",
    "f16x2", "bf16x2", "f16x8", "bf16x8", "f32x2", "f32x4", "f64x2", "u8x4", "u8x8", "i16x4", "i16x8", "u32x2", "i32x4", "i64x2" }
  local OPS = { add = 2, sub = 2, mul = 2, div = 2, rem = 2, min = 2, max = 2, mulhi = 2, ["and"] = 2, ["or"] = 2, xor = 2,
    shl = 2, shr = 2, neg = 1, abs = 1, ["not"] = 1, fma = 3, sqrt = 1, exp2 = 1, floor = 1, round = 1, popc = 1, clz = 1,
    brev = 1, isnan = 1, eq = 2, lt = 2, ge = 2 }
  for _, arch in ipairs(ARCHS) do
    it("every arithmetic op the builder accepts on every type compiles for " .. arch, function()
      local n, bad = 0, {}
      for _, t in ipairs(T) do
        for op, nargs in pairs(OPS) do
          local m = IR.new()
          m:func("k", "kernel")
          local p = m:param("ptr.global." .. t, "p")
          local ok = pcall(function()
            local a, b = m:load(p), m:load(m:gep(p, m:k("i32", 1)))
            local args = nargs == 1 and { a } or nargs == 2 and { a, b } or { a, b, a }
            local r = m:emit(op, nil, args, (op == "sqrt" or op == "exp2") and { math = "fast" } or nil)
            local rt = m:type_name(m:type_of(r))
            if rt == "i1" then r = m:cvt(t:find("x") and "u32" or t, r) end
            m:store(m:ptrcast(m:ptr(m:type_of(r), "global"), m:gep(p, m:k("i32", 2))), r)
            m:ret()
          end)
          if ok then
            n = n + 1
            local r, e = m:compile { arch = arch, use_ptxas = false }
            if not r then bad[#bad + 1] = t .. " " .. op .. ": " .. e end
          end
        end
      end
      assert.are.same({}, bad)
      assert.is_true(n > 300)
    end)
    it("every vector conversion and bitcast compiles for " .. arch, function()
      local V = { "f16x2", "bf16x2", "f32x2", "f64x2", "i16x2", "u32x2", "u8x4", "f16x4", "f32x4", "i32x4", "u8x8", "i16x8", "f16x8", "bf16x8" }
      local n, bad = 0, {}
      for _, a in ipairs(V) do
        for _, b in ipairs(V) do
          for _, op in ipairs({ "cvt", "bitcast" }) do
            local m = IR.new()
            m:func("k", "kernel")
            local p, q = m:param("ptr.global." .. a, "p"), m:param("ptr.global." .. b, "q")
            if pcall(function() m:store(q, m:emit(op, b, { m:load(p) })); m:ret() end) then
              n = n + 1
              local r, e = m:compile { arch = arch, use_ptxas = false }
              if not r then bad[#bad + 1] = a .. "->" .. b .. " " .. op .. ": " .. e end
            end
          end
        end
      end
      assert.are.same({}, bad)
      assert.is_true(n > 100)
    end)
  end
end)
