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
  assert(C.cute_cpu_prog_new(m.h, "k", out, err) == 0, ffi.string(err[0].msg))
  local prog = ffi.gc(out[0], C.cute_cpu_prog_free)
  local cells, pp = {}, ffi.new("void *[?]", #params)
  for i, p in ipairs(params) do
    cells[i] = ffi.new("uint64_t[1]", ffi.cast("uintptr_t", p))
    pp[i - 1] = cells[i]
  end
  local rc = C.cute_cpu_launch(prog, 1, 1, 1, nthreads or 32, 1, 1, smem or 0, nil, pp, err)
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
  local was_active
  setup(function()
    was_active = cpu.active
    cpu.install(nil)
  end)
  teardown(function()
    if not was_active then cpu.uninstall() end
  end)

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
end)
