-- Tensor-core instructions on the CPU target (docs/CPU_TARGET.md, "Tensor
-- cores"): inline PTX parsed by src/cpu_asm.c and run by src/cpu_tc.c.  No
-- GPU: mma.sync of every shape and type the project emits on random data
-- against a plain Lua product placed by CuTe's layouts (cute.mma's atoms,
-- written independently of the engine's PTX ISA formulas); ldmatrix /
-- stmatrix layouts; cp.async with zero fill and its groups; fp8 conversions
-- against cute.dtype's host conversions; inline PTX the engine does not know,
-- refused at its Lua line.
local ffi = require("ffi")
local cute = require("cute")
local IR = require("cute.ir")
local cpu = require("cute.target_cpu")
local dt = require("cute.dtype")
local cf = require("cute.ffi")
local util = dofile("spec/support/util.lua")
local C = cf.C
local THIS = "spec/cpu_tc_spec.lua"
local warp = cute.nvgpu.warp

-- run kernel "k" of IR module m on the engine: one block of nthreads, params
-- the host arrays (their addresses) or numbers given as uint32
local function run(m, params, nthreads, smem)
  local out = ffi.new("cute_cpu_prog *[1]")
  local err = ffi.new("cute_err[1]")
  local prc = C.cute_cpu_prog_new(m.h, "k", out, err)
  if prc ~= 0 then return prc, ffi.string(err[0].msg) end
  local prog = ffi.gc(out[0], C.cute_cpu_prog_free)
  local cells, pp, regs = {}, ffi.new("void *[?]", #params), {}
  for i, p in ipairs(params) do
    cells[i] = ffi.new("uint64_t[1]", ffi.cast("uintptr_t", p))
    pp[i - 1] = cells[i]
    -- plain FFI arrays: made known to the engine's bounds checks (docs/CPU_TARGET.md)
    if type(p) == "cdata" then regs[i] = cpu.register(p, ffi.sizeof(p), "param " .. i) end
  end
  local rc = C.cute_cpu_launch(prog, 1, 1, 1, nthreads or 32, 1, 1, smem or 0, nil, pp, err)
  for _, r in pairs(regs) do r:release() end
  return rc, ffi.string(err[0].msg)
end

---------------------------------------------------------------------------
-- mma.sync
---------------------------------------------------------------------------
local cases = {
  { "bf16 m16n8k16 f32", function() return warp.MmaF16BF16Op(cute.bfloat16, cute.float32, { 16, 8, 16 }) end },
  { "bf16 m16n8k8 f32", function() return warp.MmaF16BF16Op(cute.bfloat16, cute.float32, { 16, 8, 8 }) end },
  { "f16 m16n8k16 f32", function() return warp.MmaF16BF16Op(cute.float16, cute.float32, { 16, 8, 16 }) end },
  { "f16 m16n8k16 f16", function() return warp.MmaF16BF16Op(cute.float16, cute.float16, { 16, 8, 16 }) end },
  { "f16 m16n8k8 f32", function() return warp.MmaF16BF16Op(cute.float16, cute.float32, { 16, 8, 8 }) end },
  { "f16 m16n8k8 f16", function() return warp.MmaF16BF16Op(cute.float16, cute.float16, { 16, 8, 8 }) end },
  { "tf32 m16n8k8", function() return warp.MmaTF32Op({ 16, 8, 8 }) end },
  { "tf32 m16n8k4", function() return warp.MmaTF32Op({ 16, 8, 4 }) end },
  { "s8 x s8 m16n8k16 satfinite", function() return warp.MmaI8Op(cute.int8, cute.int8, cute.int32, { 16, 8, 16 }) end },
  { "s8 x u8 m16n8k32 satfinite", function() return warp.MmaI8Op(cute.int8, cute.uint8, cute.int32, { 16, 8, 32 }) end },
  { "u8 x s8 m16n8k16 wrapped", function()
    return warp.MmaI8Op(cute.uint8, cute.int8, cute.int32, { 16, 8, 16 }, warp.MmaIntOverflow.WRAP)
  end },
  { "u8 x u8 m16n8k32 wrapped", function()
    return warp.MmaI8Op(cute.uint8, cute.uint8, cute.int32, { 16, 8, 32 }, warp.MmaIntOverflow.WRAP)
  end },
  { "e4m3 m16n8k32 f32", function() return warp.MmaFP8Op("float8_e4m3fn", cute.float32, { 16, 8, 32 }) end },
  { "e5m2 m16n8k32 f32", function() return warp.MmaFP8Op("float8_e5m2", cute.float32, { 16, 8, 32 }) end },
  { "f64 m8n8k4", function() return warp.MmaF64Op({ 8, 8, 4 }) end },
}

local f32u = ffi.new("union { float f; uint32_t u; }")
local width = { bfloat16 = 16, float16 = 16, tfloat32 = 32, int8 = 8, uint8 = 8, float8_e4m3fn = 8, float8_e5m2 = 8 }
-- an element: its bits and the value the tensor core multiplies
local elem = {
  bfloat16 = function(x) local b = dt.float_to_bf16(x); return b, dt.bf16_to_float(b) end,
  float16 = function(x) local b = dt.float_to_half(x); return b, dt.half_to_float(b) end,
  -- tf32: random f32 bits; the tensor core reads the top 19 (the low 13 ignored)
  tfloat32 = function(x)
    f32u.f = x
    local b = tonumber(f32u.u)
    f32u.u = b - b % 8192
    return b, tonumber(f32u.f)
  end,
  int8 = function(x) return x % 256, x end,
  uint8 = function(x) return x, x end,
  float8_e4m3fn = function(x) local b = dt.float_to_f8e4m3(x); return b, dt.f8e4m3_to_float(b) end,
  float8_e5m2 = function(x) local b = dt.float_to_f8e5m2(x); return b, dt.f8e5m2_to_float(b) end,
}
local function random_of(dtype)
  if dtype == "int8" then return math.random(-128, 127) end
  if dtype == "uint8" then return math.random(0, 255) end
  return math.random() * 4 - 2
end

-- the registers' IR element and constraint letter of operand w
local function reg_kind(atom, w)
  local dtype = w == "A" and atom.a_dtype or w == "B" and atom.b_dtype or atom.acc_dtype
  if dtype == "float64" then return "f64", "d", "double" end
  if w == "C" or w == "D" then
    if dtype == "float32" then return "f32", "f", "float" end
    if dtype == "int32" then return "i32", "r", "int32_t" end
  end
  return "u32", "r", "uint32_t"
end

-- one warp: thread t loads its registers of A, B, C (t * n + r), runs the
-- atom's instruction, stores D
local function mma_kernel(atom)
  local m = IR.new()
  m:func("k", "kernel")
  m:loc(THIS, 1)
  local n = atom.num_registers
  local ps = {}
  for _, w in ipairs({ "A", "B", "C", "D" }) do ps[w] = m:param("ptr.global." .. (reg_kind(atom, w)), w:lower()) end
  local lane = m:sreg("tid.x")
  local args, cons, ops, k = {}, {}, {}, 0
  local del, dl = reg_kind(atom, "D")
  local names = {}
  for _ = 1, n.D do names[#names + 1] = "$" .. k; cons[#cons + 1] = "=" .. dl; k = k + 1 end
  ops[1] = "{" .. table.concat(names, ", ") .. "}"
  for _, w in ipairs({ "A", "B", "C" }) do
    local _, letter = reg_kind(atom, w)
    names = {}
    for i = 0, n[w] - 1 do
      args[#args + 1] = m:load(m:gep(ps[w], m:add(m:mul(lane, m:k("u32", n[w])), m:k("u32", i))))
      names[#names + 1] = "$" .. k; cons[#cons + 1] = letter; k = k + 1
    end
    ops[#ops + 1] = "{" .. table.concat(names, ", ") .. "}"
  end
  local d = m:asm(m:array(del, n.D), atom.instruction .. " " .. table.concat(ops, ", ") .. ";", table.concat(cons, ","),
    unpack(args))
  for j = 0, n.D - 1 do
    m:store(m:gep(ps.D, m:add(m:mul(lane, m:k("u32", n.D)), m:k("u32", j))), m:extract(d, { lane = j }))
  end
  m:ret()
  return m
end

-- random A, B, C placed by the atom's layouts; D from the engine; compared
-- with C + A B in Lua: integers exactly, floats within rtol of the sum of |terms|
local function check_mma(atom, opts)
  opts = opts or {}
  local M, N, K = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
  local n = atom.num_registers
  local A, B, Cv = {}, {}, {}
  local function regs(L, nregs, dtype, fill, acc)
    local _, _, ct = reg_kind(atom, acc and "C" or (fill == A and "A" or "B"))
    local arr = ffi.new(ct .. "[?]", 32 * nregs)
    local nv = cute.size(L) / 32
    for t = 0, 31 do
      for v = 0, nv - 1 do
        local idx = L(t, v)
        if acc then
          local x = opts.c and opts.c(idx) or (dtype == "int32" and math.random(-100000, 100000) or math.random() * 4 - 2)
          if dtype == "float16" then
            local b = dt.float_to_half(x)
            fill[idx] = dt.half_to_float(b)
            local r = math.floor(v / 2)
            arr[t * nregs + r] = arr[t * nregs + r] + b * 2 ^ (16 * (v % 2))
          else
            if dtype == "float32" then f32u.f = x; x = tonumber(f32u.f) end
            fill[idx] = x
            arr[t * nregs + v] = x
          end
        elseif dtype == "float64" then
          local x = math.random() * 4 - 2
          fill[idx] = x
          arr[t * nregs + v] = x
        else
          local b, x = elem[dtype](opts.ab and opts.ab(dtype) or random_of(dtype))
          fill[idx] = x
          local bits = width[dtype]
          local r, shift = math.floor(v * bits / 32), (v * bits) % 32
          arr[t * nregs + r] = arr[t * nregs + r] + b * 2 ^ shift
        end
      end
    end
    return arr
  end
  local ra = regs(atom.layout_A_tv, n.A, atom.a_dtype, A)
  local rb = regs(atom.layout_B_tv, n.B, atom.b_dtype, B)
  local rc = regs(atom.layout_C_tv, n.C, atom.acc_dtype, Cv, true)
  local _, _, dct = reg_kind(atom, "D")
  local rd = ffi.new(dct .. "[?]", 32 * n.D)
  local rcode, msg = run(mma_kernel(atom), { ra, rb, rc, rd })
  assert.are.equal(0, rcode, msg)
  local bad, worst = 0, 0
  for t = 0, 31 do
    for v = 0, M * N / 32 - 1 do
      local got
      if atom.acc_dtype == "float16" then
        got = dt.half_to_float(math.floor(tonumber(rd[t * n.D + math.floor(v / 2)]) / 2 ^ (16 * (v % 2))) % 65536)
      else
        got = tonumber(rd[t * n.D + v])
      end
      local idx = atom.layout_C_tv(t, v)
      local mm, nn = idx % M, math.floor(idx / M)
      local want, mag = Cv[idx], math.abs(Cv[idx])
      for kk = 0, K - 1 do
        local p = A[mm + M * kk] * B[nn + N * kk]
        want, mag = want + p, mag + math.abs(p)
      end
      if atom.acc_dtype == "int32" then
        if opts.sat then want = math.max(-2 ^ 31, math.min(2 ^ 31 - 1, want))
        else want = (want + 2 ^ 31) % 2 ^ 32 - 2 ^ 31 end
        if got ~= want then bad = bad + 1 end
      else
        local e = math.abs(got - want) / math.max(mag, 1e-30)
        worst = math.max(worst, e)
        if e > (opts.rtol or 1e-6) then bad = bad + 1 end
      end
    end
  end
  return bad, worst
end

describe("the CPU target's tensor cores", function()
  util.use_cpu_target()

  describe("mma.sync on random data (the atom's instruction, registers placed by CuTe's layouts)", function()
    for _, c in ipairs(cases) do
      it(c[1], function()
        math.randomseed(4242)
        local atom = cute.make_mma_atom(c[2]())
        local f16acc = atom.acc_dtype == "float16"
        local bad, worst = check_mma(atom, { rtol = f16acc and 2 ^ -10 or 1e-6,
          sat = atom.op.kind == "i8" and atom.op.overflow == "satfinite" })
        assert.are.equal(0, bad, ("worst relative error %g"):format(worst))
      end)
    end

    it("s32 accumulators: .satfinite clamps on overflow, the wrapped form wraps (bit-exact)", function()
      math.randomseed(7)
      local big = function() return 2 ^ 31 - 1000 - math.random(0, 100) end
      local sat = cute.make_mma_atom(warp.MmaI8Op(cute.int8, cute.int8, cute.int32, { 16, 8, 32 }))
      local wrap = cute.make_mma_atom(warp.MmaI8Op(cute.int8, cute.int8, cute.int32, { 16, 8, 32 }, warp.MmaIntOverflow.WRAP))
      local pos = function() return 127 end
      assert.are.equal(0, (check_mma(sat, { c = big, ab = pos, sat = true })))
      assert.are.equal(0, (check_mma(wrap, { c = big, ab = pos })))
      -- (the reference is not vacuous: a wrapped reference disagrees with the clamped result)
      assert.is_true(check_mma(sat, { c = big, ab = pos }) > 0)
    end)

    it("tf32 reads the top 19 bits of each register (the low 13 are ignored)", function()
      math.randomseed(99)
      local atom = cute.make_mma_atom(warp.MmaTF32Op({ 16, 8, 8 }))
      local saved = elem.tfloat32
      elem.tfloat32 = function(x) f32u.f = x; return tonumber(f32u.u), tonumber(f32u.f) end -- untruncated model
      local bad = check_mma(atom, { rtol = 1e-7 })
      elem.tfloat32 = saved
      assert.is_true(bad > 0)
      assert.are.equal(0, (check_mma(atom, { rtol = 1e-7 })))
    end)
  end)

  describe("ldmatrix and stmatrix (m8n8 b16 over the warp's row addresses)", function()
    -- 4 matrices of 8 rows of 8 b16 in shared memory, 16 elements a row apart;
    -- lane l gives the address of row perm[l] (matrix l / 8, row l % 8)
    local function perm_rows(n)
      local p = {}
      for l = 0, 31 do p[l] = l < 8 * n and (31 - l) or 100000 + l end -- (unused lanes: far away, ignored)
      return p
    end
    for _, n in ipairs({ 1, 2, 4 }) do
      for _, trans in ipairs({ false, true }) do
        it(("ldmatrix .x%d%s and stmatrix back"):format(n, trans and ".trans" or ""), function()
          local k = cute.kernel(function(S, Perm, Out, Back)
            local t = cute.arch.thread_idx()
            local sm = cute.make_shared_tensor(cute.make_layout(32 * 16), cute.uint16, 16)
            for i = 0, 15 do sm[t * 16 + i] = S[t * 16 + i] end
            cute.arch.sync_threads()
            local f = cute.arch.ldmatrix(sm:ptr_at(Perm[t] * 16), { num_matrices = n, transpose = trans })
            for i = 0, n - 1 do Out[t * 4 + i] = f[i] end
            cute.arch.sync_threads()
            for i = 0, 15 do sm[t * 16 + i] = 0 end
            cute.arch.sync_threads()
            cute.arch.stmatrix(sm:ptr_at(Perm[t] * 16), f, { num_matrices = n, transpose = trans })
            cute.arch.sync_threads()
            for i = 0, 15 do Back[t * 16 + i] = sm[t * 16 + i] end
          end, { name = "cpu_ldmatrix" })
          local hs = {}
          for i = 1, 512 do hs[i] = (i * 7919) % 65536 end
          local perm = perm_rows(n)
          local hp = {}
          for l = 0, 31 do hp[l + 1] = perm[l] < 32 and perm[l] or 0 end
          local S = cute.from_host(hs, cute.uint16, { 512 })
          local P = cute.from_host(hp, cute.int32, { 32 })
          local Out, Back = cute.zeros({ 128 }, cute.uint32), cute.zeros({ 512 }, cute.uint16)
          k:launch { grid = 1, block = 32 }(S, P, Out, Back)
          local o, b = Out:to_table(), Back:to_table()
          local function at(row, col) return hs[perm[row] * 16 + col + 1] end
          for t = 0, 31 do
            for i = 0, n - 1 do
              local r, q = math.floor(t / 4), t % 4
              local lo, hi
              if trans then lo, hi = at(8 * i + 2 * q, r), at(8 * i + 2 * q + 1, r)
              else lo, hi = at(8 * i + r, 2 * q), at(8 * i + r, 2 * q + 1) end
              assert.are.equal(lo + hi * 65536, o[t * 4 + i + 1], ("lane %d register %d"):format(t, i))
            end
          end
          -- stmatrix wrote the same rows back (and nothing else)
          local want = {}
          for i = 1, 512 do want[i] = 0 end
          for l = 0, 8 * n - 1 do
            for c = 0, 7 do want[perm[l] * 16 + c + 1] = hs[perm[l] * 16 + c + 1] end
          end
          assert.are.same(want, b)
        end)
      end
    end
  end)

  it("movmatrix.sync.aligned.m8n8.trans.b16 transposes the fragment of an 8 x 8 b16 matrix", function()
    local m = IR.new()
    m:func("k", "kernel")
    local src, dst = m:param("ptr.global.u32", "src"), m:param("ptr.global.u32", "dst")
    local lane = m:sreg("tid.x")
    local x = m:load(m:gep(src, lane))
    local y = m:asm("u32", "movmatrix.sync.aligned.m8n8.trans.b16 $0, $1;", "=r,r", x)
    m:store(m:gep(dst, lane), y)
    m:ret()
    local s, d = ffi.new("uint32_t[32]"), ffi.new("uint32_t[32]")
    local function el(r, c) return r * 100 + c end -- element (r, c) of the matrix
    for t = 0, 31 do
      local r, q = math.floor(t / 4), t % 4
      s[t] = el(r, 2 * q) + el(r, 2 * q + 1) * 65536
    end
    local rc, msg = run(m, { s, d })
    assert.are.equal(0, rc, msg)
    for t = 0, 31 do
      local r, q = math.floor(t / 4), t % 4
      assert.are.equal(el(2 * q, r) + el(2 * q + 1, r) * 65536, d[t], "lane " .. t)
    end
  end)

  it("the memory-ordering loads, stores and fences of cute.arch (ld.acquire, st.release, .relaxed, .volatile)", function()
    local k = cute.kernel(function(F, G)
      local t = cute.arch.thread_idx()
      cute.arch.st_release(F, t, t * 3 + 1)
      cute.arch.fence_acq_rel("gpu")
      cute.arch.fence_sc("cta")
      local v = cute.arch.ld_acquire(F, 31 - t, "sys") -- (another lane's store: the warp's lanes store in order first)
      cute.arch.st_relaxed(G, t, cute.Int64(v) * 1000000000000, "gpu")
      cute.arch.st_volatile(F, t + 32, cute.arch.ld_relaxed(F, t, "cta") + cute.arch.ld_volatile(F, t))
    end, { name = "cpu_sys" })
    local F, G = cute.zeros({ 64 }, cute.int32), cute.zeros({ 32 }, cute.int64)
    k:launch { grid = 1, block = 32 }(F, G)
    local f, g = F:to_table(), G:to_table()
    for t = 0, 31 do
      assert.are.equal(t * 3 + 1, f[t + 1])
      assert.are.equal(2 * (t * 3 + 1), f[t + 33])
      assert.are.equal(((31 - t) * 3 + 1) * 1000000000000, tonumber(g[t + 1]))
    end
  end)

  it("elect.sync (cute.arch.elect_one) picks the lowest active lane; bar.warp.sync (sync_warp) passes", function()
    local k = cute.kernel(function(X)
      local t = cute.arch.thread_idx()
      cute.arch.sync_warp()
      if cute.arch.elect_one() then X[cute.arch.warp_idx()] = t end
      -- (lanes of the member mask inactive: undefined in PTX; the engine picks the lowest active lane)
      if t % 32 >= 5 then
        if cute.arch.elect_one() then X[2 + cute.arch.warp_idx()] = t end
      end
    end, { name = "cpu_elect" })
    local X = cute.zeros({ 4 }, cute.int32)
    X:fill(-1)
    k:launch { grid = 1, block = 64 }(X)
    assert.are.same({ 0, 32, 5, 37 }, X:to_table())
  end)

  describe("cp.async", function()
    it("copies 4, 8 and 16 bytes with src-size zero fill, at the thread's wait (a missing wait shows the old data)", function()
      local k = cute.kernel(function(G, Early, Mid, Late)
        local t = cute.arch.thread_idx()
        local sm = cute.make_shared_tensor(cute.make_layout(32 * 12), cute.float32, 16)
        for i = 0, 11 do sm[t * 12 + i] = -1.0 end
        cute.arch.sync_threads()
        -- group 0: 16 bytes, src_size 4 * (t % 5) (0 .. 16); group 1: 8 bytes; group 2: 4 bytes, src_size 0 for odd t
        cute.arch.cp_async(sm:ptr_at(t * 12), G:ptr_at(t * 12), 16, { src_size = (t % 5) * 4 })
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async(sm:ptr_at(t * 12 + 4), G:ptr_at(t * 12 + 4), 8, { cache = "ca" })
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async(sm:ptr_at(t * 12 + 8), G:ptr_at(t * 12 + 8), 4, { src_size = (t % 2) * 0 + (1 - t % 2) * 4 })
        cute.arch.cp_async_commit_group()
        for i = 0, 11 do Early[t * 12 + i] = sm[t * 12 + i] end -- no wait: nothing landed yet
        cute.arch.cp_async_wait_group(1)                          -- groups 0 and 1 complete, 2 may be pending
        for i = 0, 11 do Mid[t * 12 + i] = sm[t * 12 + i] end
        cute.arch.cp_async_wait_all()
        for i = 0, 11 do Late[t * 12 + i] = sm[t * 12 + i] end
      end, { name = "cpu_cp_async" })
      local hg = {}
      for i = 1, 32 * 12 do hg[i] = i end
      local G = cute.from_host(hg, cute.float32, { 32 * 12 })
      local E, Mi, L = cute.zeros({ 384 }, cute.float32), cute.zeros({ 384 }, cute.float32), cute.zeros({ 384 }, cute.float32)
      k:launch { grid = 1, block = 32 }(G, E, Mi, L)
      local e, mi, l = E:to_table(), Mi:to_table(), L:to_table()
      for t = 0, 31 do
        local b = t * 12
        for i = 0, 11 do assert.are.equal(-1, e[b + i + 1]) end
        local ss = t % 5 -- floats copied of the first 16 bytes
        for i = 0, 3 do
          local want = i < ss and hg[b + i + 1] or 0
          assert.are.equal(want, mi[b + i + 1], ("thread %d, element %d after wait_group 1"):format(t, i))
          assert.are.equal(want, l[b + i + 1])
        end
        for i = 4, 5 do assert.are.equal(hg[b + i + 1], mi[b + i + 1]); assert.are.equal(hg[b + i + 1], l[b + i + 1]) end
        for i = 6, 7 do assert.are.equal(-1, l[b + i + 1]) end -- (not copied)
        assert.are.equal(-1, mi[b + 8 + 1]) -- group 2 still pending after wait_group 1
        assert.are.equal(t % 2 == 0 and hg[b + 9] or 0, l[b + 9], "thread " .. t .. ": the 4-byte copy, zero-filled for odd t")
      end
    end)
  end)

  describe("the bounds checks (docs/CPU_TARGET.md) see the tensor-core ops' accesses", function()
    it("a cp.async reading past its tensor fails at its Lua line (in bounds it runs)", function()
      local src = io.open(THIS):read("*a")
      local function line_of(tag)
        local n = 0
        for l in (src .. "\n"):gmatch("(.-)\n") do n = n + 1; if l:find(tag, 1, true) and not l:find("line_of", 1, true) then return n end end
      end
      local k = cute.kernel(function(G, off)
        local t = cute.arch.thread_idx()
        local sm = cute.make_shared_tensor(cute.make_layout(32 * 4), cute.float32, 16)
        cute.arch.cp_async(sm:ptr_at(t * 4), G:ptr_at(t * 4 + off), 16) -- CPASYNC OOB
        cute.arch.cp_async_wait_all()
      end, { name = "cpu_cp_async_oob" })
      local G = cute.zeros({ 128 }, cute.float32)
      k:launch { grid = 1, block = 32 }(G, cute.Int32(0)) -- in bounds
      local ok, err = pcall(function() k:launch { grid = 1, block = 32 }(G, cute.Int32(4)) end)
      assert.is_false(ok)
      assert.matches("out%-of%-bounds load of 16 bytes", tostring(err))
      assert.matches("past the end of a 512%-byte global allocation", tostring(err))
      assert.matches("cpu_tc_spec.lua:" .. line_of("-- CPASYNC OOB") .. "%D", tostring(err))
    end)
  end)

  describe("fp8 conversions in kernels", function()
    it("f32 and f16 -> e4m3 / e5m2 (rn, satfinite) and back, as cute.dtype's host conversions", function()
      local k = cute.kernel(function(X, E4, E5, B4, B5, H)
        local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
        local x = X[i]
        E4[i] = cute.Float8E4M3FN(x)
        E5[i] = cute.Float8E5M2(x)
        B4[i] = cute.Float32(E4[i])
        B5[i] = cute.Float32(cute.Float16(E5[i]))
        H[i] = cute.Float8E4M3FN(cute.Float16(x))
      end, { name = "cpu_fp8" })
      local n = 4096
      local hx = ffi.new("float[?]", n)
      local special = { 0, -0.0, math.huge, -math.huge, 448, 449, 464, 57344, 61440, 1e30, -1e30, 2 ^ -10, 2 ^ -17,
        3 * 2 ^ -11, 1 + 2 ^ -11, 2 ^ -9 * 1.5, 0.0009765625, 240, 232, -0.001953125 }
      math.randomseed(3)
      for i = 0, n - 1 do
        hx[i] = special[i + 1] or (math.random() < 0.5 and -1 or 1) * (1 + math.random()) * 2 ^ math.random(-20, 18)
      end
      local X = cute.from_host(hx, cute.float32, { n })
      local E4, E5, H = cute.empty({ n }, cute.float8_e4m3fn), cute.empty({ n }, cute.float8_e5m2), cute.empty({ n }, cute.float8_e4m3fn)
      local B4, B5 = cute.empty({ n }, cute.float32), cute.empty({ n }, cute.float32)
      k:launch { grid = n / 128, block = 128 }(X, E4, E5, B4, B5, H)
      local e4, e5, h, b4, b5 = E4:to_host(), E5:to_host(), H:to_host(), B4:to_host(), B5:to_host()
      for i = 0, n - 1 do
        local x = hx[i]
        assert(e4[i] == dt.float_to_f8e4m3(x), ("e4m3(%.9g): 0x%02x, host 0x%02x"):format(x, e4[i], dt.float_to_f8e4m3(x)))
        assert(e5[i] == dt.float_to_f8e5m2(x), ("e5m2(%.9g): 0x%02x, host 0x%02x"):format(x, e5[i], dt.float_to_f8e5m2(x)))
        local x16 = dt.half_to_float(dt.float_to_half(x))
        assert(h[i] == dt.float_to_f8e4m3(x16), ("e4m3(f16(%.9g))"):format(x))
        assert.are.equal(dt.f8e4m3_to_float(e4[i]), b4[i])
        assert.are.equal(dt.f8e5m2_to_float(e5[i]), b5[i])
      end
      local nan = ffi.new("float[1]", 0 / 0)
      local XN = cute.from_host(nan, cute.float32, { 1 })
      local one = function(d) return cute.empty({ 1 }, d) end
      local N4, N5, NB4, NB5, NH = one(cute.float8_e4m3fn), one(cute.float8_e5m2), one(cute.float32), one(cute.float32),
        one(cute.float8_e4m3fn)
      k:launch { grid = 1, block = 1 }(XN, N4, N5, NB4, NB5, NH)
      assert.are.equal(0x7f, N4:to_host()[0])
      assert.are.equal(0x7f, N5:to_host()[0])
      local b = NB4:to_host()[0]
      assert.is_true(b ~= b)
    end)
  end)

  describe("inline PTX the engine does not know", function()
    it("is refused at the launch, naming the PTX instruction and the Lua line", function()
      local k = cute.kernel(function(X)
        cute.arch.asm(nil, "brkpt;", "") -- brkpt line
        X[0] = 1
      end, { name = "cpu_brkpt" })
      local X = cute.zeros({ 1 }, cute.int32)
      local ok, e = pcall(function() k:launch { grid = 1, block = 32 }(X) end)
      assert.is_false(ok)
      local line = util.line_of(THIS, "-- brkpt line")
      assert.is_truthy(util.has(tostring(e), ("cute (cpu target): kernel cpu_brkpt: op asm at %s:%d is not supported " ..
        "on the CPU target yet (PTX brkpt)"):format(THIS, line)), tostring(e))
    end)
    it("as are known instructions with forms the engine does not run (a wrong mma register count)", function()
      local m = IR.new()
      m:func("k", "kernel")
      m:loc("bad_mma.lua", 7)
      local x = m:k("u32", 0)
      m:asm(m:array("f32", 2), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1}, {$2}, {$3}, {$4};",
        "=f,=f,r,r,r", x, x, x)
      m:ret()
      local rc, msg = run(m, {})
      assert.are_not.equal(0, rc)
      assert.is_truthy(util.has(msg, "op asm at bad_mma.lua:7 is not supported on the CPU target yet " ..
        "(PTX mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32)"), msg)
    end)
  end)

  describe("the IR's fragments, device functions and by-value parameters", function()
    it("a fragment carried through a for loop, sliced, rebuilt in an if; a device function with early return", function()
      local m = IR.new()
      -- func @clampadd(x: f32, y: f32) -> f32: x + y, or 100 when x > 10 (an early return in divergent lanes)
      local fn = m:func("clampadd", "func", "f32")
      local x, y = m:param("f32", "x"), m:param("f32", "y")
      m:if_(m:gt(x, m:k("f32", 10)))
      m:ret(m:k("f32", 100))
      m:end_()
      m:ret(m:add(x, y))
      m:func("k", "kernel")
      m:loc("frag.lua", 3)
      local out = m:param("ptr.global.f32", "out")
      local lane = m:sreg("tid.x")
      local lf = m:cvt("f32", lane)
      local F = m:array("f32", 8)
      local v = m:var(F, m:emit("vec", F, { m:k("f32", 0) }))
      local i = m:for_(m:k("i32", 0), m:k("i32", 4), m:k("i32", 1))
      local cur = m:vget(v)
      for e = 0, 7 do
        local x0 = m:extract(cur, { lane = e })
        cur = m:insert(cur, m:call(fn, x0, m:add(lf, m:cvt("f32", i))), { lane = e })
      end
      m:vset(v, cur)
      m:end_()
      local fin = m:vget(v)
      local r = m:if_(m:lt(lane, m:k("u32", 16)), F)
      m:yield(m:insert(fin, m:k("f32", -1), { lane = 7 }))
      m:else_()
      m:yield(fin)
      m:end_()
      for e = 0, 7 do
        m:store(m:gep(out, m:add(m:mul(lane, m:k("u32", 8)), m:k("u32", e))), m:extract(r, { lane = e }))
      end
      m:ret()
      local o = ffi.new("float[256]")
      local rc, msg = run(m, { o })
      assert.are.equal(0, rc, msg)
      for t = 0, 31 do
        local acc = 0
        for it = 0, 3 do acc = acc > 10 and 100 or acc + t + it end
        for e = 0, 7 do
          local want = (e == 7 and t < 16) and -1 or acc
          assert.are.equal(want, o[t * 8 + e], ("lane %d element %d"):format(t, e))
        end
      end
    end)

    it("a by-value bytes parameter read through param.addr", function()
      local m = IR.new()
      m:func("k", "kernel")
      local blob = m:param(m:bytes(128, 64), "desc", { grid_constant = true })
      local out = m:param("ptr.global.u32", "out")
      local lane = m:sreg("tid.x")
      local base = m:emit("param.addr", nil, { blob })
      local p = m:ptrcast(m:ptr("u32", "generic"), base)
      m:store(m:gep(out, lane), m:load(m:gep(p, lane)))
      m:ret()
      local bytes = ffi.new("uint32_t[32]")
      for i = 0, 31 do bytes[i] = i * 1000 + 7 end
      local o = ffi.new("uint32_t[32]")
      local reg = cpu.register(o, ffi.sizeof(o), "out") -- (a plain FFI array: known to the bounds checks)
      local prog = ffi.new("cute_cpu_prog *[1]")
      local err = ffi.new("cute_err[1]")
      assert.are.equal(0, C.cute_cpu_prog_new(m.h, "k", prog, err), ffi.string(err[0].msg))
      local cell = ffi.new("uint64_t[1]", ffi.cast("uintptr_t", o))
      local pp = ffi.new("void *[2]", bytes, cell)
      assert.are.equal(0, C.cute_cpu_launch(prog[0], 1, 1, 1, 32, 1, 1, 0, nil, pp, err), ffi.string(err[0].msg))
      C.cute_cpu_prog_free(prog[0])
      reg:release()
      for i = 0, 31 do assert.are.equal(i * 1000 + 7, o[i]) end
    end)
  end)
end)
