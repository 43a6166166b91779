-- MMA atoms against the hardware: one warp runs each atom's instruction
-- (atom.instruction, through inline PTX with atom.num_registers operands) on
-- registers the host filled by the atom's layout_A_tv / layout_B_tv /
-- layout_C_tv, and the host reads D back through layout_C_tv.  Wrong layouts,
-- register packing or instruction strings give a D that differs from the CPU
-- product C + A B.  The values are small multiples of 1/4 (integers for int8),
-- so every format holds them exactly and the sums are exact: D must be equal.
-- The kernels are compiled and assembled here (CPU); the runs are #gpu.
local ffi = require("ffi")
local cute = require("cute")
local IR = require("cute.ir")
local rt = require("cute.runtime")
local dt = require("cute.dtype")
local util = dofile("spec/support/util.lua")
local PTXAS = IR.ptxas_path()
local warp = cute.nvgpu.warp

local cases = {
  { "bf16 m16n8k16 f32", function() return warp.MmaF16BF16Op(cute.bfloat16, cute.float32, { 16, 8, 16 }) end },
  { "f16 m16n8k16 f16", function() return warp.MmaF16BF16Op(cute.float16, cute.float16, { 16, 8, 16 }) end },
  { "f16 m16n8k8 f32", function() return warp.MmaF16BF16Op(cute.float16, cute.float32, { 16, 8, 8 }) end },
  { "tf32 m16n8k8", function() return warp.MmaTF32Op({ 16, 8, 8 }) end },
  { "tf32 m16n8k4", function() return warp.MmaTF32Op({ 16, 8, 4 }) end },
  { "s8 x u8 m16n8k32", function() return warp.MmaI8Op(cute.int8, cute.uint8, cute.int32, { 16, 8, 32 }) end },
  { "u8 x s8 m16n8k16 wrapped", function()
    return warp.MmaI8Op(cute.uint8, cute.int8, cute.int32, { 16, 8, 16 }, warp.MmaIntOverflow.WRAP)
  end },
  { "e4m3 m16n8k32 f32", function() return warp.MmaFP8Op("float8_e4m3fn", cute.float32, { 16, 8, 32 }) end },
  { "e5m2 m16n8k32 f32", function() return warp.MmaFP8Op("float8_e5m2", cute.float32, { 16, 8, 32 }) end },
  { "f64 m8n8k4", function() return warp.MmaF64Op({ 8, 8, 4 }) end },
}

-- bits of one element of each input format (x a small multiple of 1/4 or an integer)
local f32u = ffi.new("union { float f; uint32_t u; }")
local function fp8_bits(x, ebits, mbits)
  if x == 0 then return 0 end
  local s = x < 0 and 1 or 0
  local a = math.abs(x)
  local e = math.floor(math.log(a) / math.log(2) + 1e-9)
  local mant = (a / 2 ^ e - 1) * 2 ^ mbits
  assert(mant == math.floor(mant), "not exact in fp8")
  local bias = 2 ^ (ebits - 1) - 1
  return s * 2 ^ (ebits + mbits) + (e + bias) * 2 ^ mbits + mant
end
local encode = {
  bfloat16 = dt.float_to_bf16,
  float16 = dt.float_to_half,
  tfloat32 = function(x) f32u.f = x; return tonumber(f32u.u) end,
  int8 = function(x) return x % 256 end,
  uint8 = function(x) return x end,
  float8_e4m3fn = function(x) return fp8_bits(x, 4, 3) end,
  float8_e5m2 = function(x) return fp8_bits(x, 5, 2) end,
}
local width = { bfloat16 = 16, float16 = 16, tfloat32 = 32, int8 = 8, uint8 = 8, float8_e4m3fn = 8, float8_e5m2 = 8 }

local function quarter() return math.random(-8, 8) / 4 end
local function value_of(dtype)
  if dtype == "int8" then return math.random(-128, 127) end
  if dtype == "uint8" then return math.random(0, 255) end
  return quarter()
end

-- how the registers of each operand travel: data dtype, IR element, constraint letter
local function reg_kind(atom, which)
  local dtype = which == "A" and atom.a_dtype or which == "B" and atom.b_dtype or atom.acc_dtype
  if dtype == "float64" then return cute.float64, "f64", "d" end
  if which == "C" or which == "D" then
    if dtype == "float32" then return cute.float32, "f32", "f" end
    if dtype == "int32" then return cute.int32, "i32", "r" end
  end
  return cute.uint32, "u32", "r" -- packed 8/16-bit elements, tf32 bits, f16x2 accumulators
end

local function build_kernel(atom)
  local m = IR.new()
  m:func("mma_atom", "kernel")
  m:loc("mma_atom_gpu.lua", 1)
  local n = atom.num_registers
  local ps = {}
  for _, w in ipairs({ "A", "B", "C", "D" }) do
    local _, el = reg_kind(atom, w)
    ps[w] = m:param("ptr.global." .. el, w:lower())
  end
  local lane = m:sreg("tid.x")
  local args, cons, ops, k = {}, {}, {}, 0
  local _, del, dletter = reg_kind(atom, "D")
  local dnames = {}
  for j = 0, n.D - 1 do dnames[#dnames + 1] = "$" .. k; cons[#cons + 1] = "=" .. dletter; k = k + 1 end
  ops[1] = "{" .. table.concat(dnames, ", ") .. "}"
  for _, w in ipairs({ "A", "B", "C" }) do
    local _, _, letter = reg_kind(atom, w)
    local names = {}
    for i = 0, n[w] - 1 do
      local at = m:add(m:mul(lane, m:k("u32", n[w])), m:k("u32", i))
      args[#args + 1] = m:load(m:gep(ps[w], at))
      names[#names + 1] = "$" .. k; cons[#cons + 1] = letter; k = k + 1
    end
    ops[#ops + 1] = "{" .. table.concat(names, ", ") .. "}"
  end
  local F = m:array(del, n.D)
  local d = m:asm(F, atom.instruction .. " " .. table.concat(ops, ", ") .. ";", table.concat(cons, ","), unpack(args))
  for j = 0, n.D - 1 do
    local at = m:add(m:mul(lane, m:k("u32", n.D)), m:k("u32", j))
    m:store(m:gep(ps.D, at), m:extract(d, { lane = j }))
  end
  m:ret()
  return m
end

local function compile_for(atom, arch)
  local want = math.floor(tonumber(atom.min_ptx) * 10 + 0.5)
  local r, e = build_kernel(atom):compile { arch = arch, opt_level = 3, ptx_version = want > 80 and want or 0 }
  assert(r, arch .. ": " .. tostring(e))
  assert(util.has(r.ptx, atom.instruction), r.ptx)
  return r
end

describe("MMA atoms: the kernels that run them", function()
  for _, c in ipairs(cases) do
    local name = c[1] .. ": compiles and assembles for its arch and sm_90a"
    if not PTXAS then
      pending(name .. " (needs ptxas)")
    else
      it(name, function()
        local atom = cute.make_mma_atom(c[2]())
        for _, arch in ipairs({ atom.min_arch, "sm_90a" }) do
          local r = compile_for(atom, arch)
          assert.truthy(r.cubin, arch)
          assert.are.equal(0, r.info.spill_stores, r.ptxas_log)
        end
      end)
    end
  end
end)

-- Fill the registers by the atom's layouts, run exec(ra, rb, rc) -> the D
-- registers (flat tables, thread t's register r at t * n + r + 1), read D
-- back by layout_C_tv and compare with C + A B.  Returns the mismatches.
local function run_case(name, atom, exec)
  local M, N, K = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
  local A, B, C = {}, {}, {}
  for i = 0, M * K - 1 do A[i] = value_of(atom.a_dtype) end -- column-major M x K
  for i = 0, N * K - 1 do B[i] = value_of(atom.b_dtype) end -- column-major N x K
  for i = 0, M * N - 1 do C[i] = atom.acc_dtype == "int32" and math.random(-1000, 1000) or quarter() end
  -- registers: thread t's values v in order, packed low bits first
  local function regs_of(L, src, dtype, nregs, acc)
    local out = {}
    for i = 1, 32 * nregs do out[i] = 0 end
    local nv = cute.size(L) / 32
    local b = acc and (dtype == "float16" and 16 or 32) or width[dtype]
    for t = 0, 31 do
      for v = 0, nv - 1 do
        local x = src[L(t, v)]
        if dtype == "float64" or (acc and b == 32) then
          out[t * nregs + v + 1] = x
        else
          local bitsv = acc and dt.float_to_half(x) or encode[dtype](x)
          local r, shift = math.floor(v * b / 32), (v * b) % 32
          out[t * nregs + r + 1] = out[t * nregs + r + 1] + bitsv * 2 ^ shift
        end
      end
    end
    return out
  end
  local n = atom.num_registers
  local got = exec(regs_of(atom.layout_A_tv, A, atom.a_dtype, n.A), regs_of(atom.layout_B_tv, B, atom.b_dtype, n.B),
    regs_of(atom.layout_C_tv, C, atom.acc_dtype, n.C, true))
  local bad = 0
  for t = 0, 31 do
    for v = 0, M * N / 32 - 1 do
      local x
      if atom.acc_dtype == "float16" then
        local w = got[t * n.D + math.floor(v / 2) + 1]
        x = dt.half_to_float(math.floor(w / 2 ^ (16 * (v % 2))) % 65536)
      else
        x = got[t * n.D + v + 1]
      end
      local idx = atom.layout_C_tv(t, v)
      local mm, nn = idx % M, math.floor(idx / M)
      local want = C[idx]
      for kk = 0, K - 1 do want = want + A[mm + M * kk] * B[nn + N * kk] end
      if x ~= want then
        bad = bad + 1
        if bad <= 5 then print(("%s: D(%d,%d) from (t=%d, v=%d) = %s, want %s"):format(name, mm, nn, t, v, x, want)) end
      end
    end
  end
  return bad
end

-- The hardware as the PTX ISA describes it (spec/support/mma_isa.lua): each
-- lane's registers unpacked into its fragment elements a_i, b_i, c_i placed by
-- the ISA's formulas, D = C + A B, packed back by the ISA's formulas.  Checks
-- the register packing and the read-back above without a GPU.
local isa = dofile("spec/support/mma_isa.lua")
local function fp8_value(bits, ebits, mbits)
  local s = bits >= 128 and -1 or 1
  bits = bits % 128
  local e, mant = math.floor(bits / 2 ^ mbits), bits % 2 ^ mbits
  local bias = 2 ^ (ebits - 1) - 1
  if e == 0 then return s * mant / 2 ^ mbits * 2 ^ (1 - bias) end
  return s * (1 + mant / 2 ^ mbits) * 2 ^ (e - bias)
end
local decode = {
  bfloat16 = dt.bf16_to_float, float16 = dt.half_to_float,
  tfloat32 = function(b) f32u.u = b; return tonumber(f32u.f) end,
  int8 = function(b) return b >= 128 and b - 256 or b end, uint8 = function(b) return b end,
  float8_e4m3fn = function(b) return fp8_value(b, 4, 3) end, float8_e5m2 = function(b) return fp8_value(b, 5, 2) end,
}
local function isa_of(atom)
  local k = atom.shape_mnk[3]
  local kind = atom.op.kind
  if kind == "f16bf16" then return k == 16 and isa.m16n8k16 or isa.m16n8k8, isa.C16x8 end
  if kind == "tf32" and k == 8 then return isa.m16n8k8_tf32, isa.C16x8 end
  if (kind == "i8" or kind == "fp8") and k == 32 then return isa.m16n8k32_8bit, isa.C16x8 end
  if kind == "f64" then return isa.m8n8k4_f64, isa.m8n8k4_f64.C end
end
local function isa_exec(atom)
  local f, fc = isa_of(atom)
  local M, N, K = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
  local n = atom.num_registers
  local function elem(regs, nregs, t, i, dtype, acc)
    if dtype == "float64" or (acc and dtype ~= "float16") then return regs[t * nregs + i + 1] end
    local b = acc and 16 or width[dtype]
    local w = regs[t * nregs + math.floor(i * b / 32) + 1]
    local bits = math.floor(w / 2 ^ ((i * b) % 32)) % 2 ^ b
    return acc and dt.half_to_float(bits) or decode[dtype](bits)
  end
  return function(ra, rb, rc)
    local A, B, C = {}, {}, {}
    for t = 0, 31 do
      for i = 0, M * K / 32 - 1 do local r, c = f.A(t, i); A[r + M * c] = elem(ra, n.A, t, i, atom.a_dtype) end
      for i = 0, N * K / 32 - 1 do local r, c = f.B(t, i); B[r + K * c] = elem(rb, n.B, t, i, atom.b_dtype) end
      for i = 0, M * N / 32 - 1 do local r, c = fc(t, i); C[r + M * c] = elem(rc, n.C, t, i, atom.acc_dtype, true) end
    end
    local out = {}
    for i = 1, 32 * n.D do out[i] = 0 end
    for t = 0, 31 do
      for i = 0, M * N / 32 - 1 do
        local r, c = fc(t, i)
        local x = C[r + M * c]
        for kk = 0, K - 1 do x = x + A[r + M * kk] * B[kk + K * c] end
        if atom.acc_dtype == "float16" then
          local at = t * n.D + math.floor(i / 2) + 1
          out[at] = out[at] + dt.float_to_half(x) * 2 ^ (16 * (i % 2))
        else
          out[t * n.D + i + 1] = x
        end
      end
    end
    return out
  end
end

describe("MMA atoms: the register packing against the PTX ISA's model", function()
  for _, c in ipairs(cases) do
    local atom = cute.make_mma_atom(c[2]())
    if isa_of(atom) then
      it(c[1], function()
        math.randomseed(12345)
        assert.are.equal(0, run_case(c[1], atom, isa_exec(atom)))
      end)
    end
  end
  it("a packing error is caught (the model is not vacuous)", function()
    local atom = cute.make_mma_atom(cases[1][2]())
    local exec = isa_exec(atom)
    local swapped = function(ra, rb, rc)
      for t = 0, 31 do ra[t * 4 + 2], ra[t * 4 + 3] = ra[t * 4 + 3], ra[t * 4 + 2] end -- a2a3 <-> a4a5
      return exec(ra, rb, rc)
    end
    assert.is_true(run_case("swapped", atom, swapped) > 0)
  end)
end)

describe("MMA atoms on the GPU", function()
  for _, c in ipairs(cases) do
    util.device_it(c[1] .. ": D = C + A B through the atom's layouts", "loads the atom's PTX into the driver (rt.load_module)",
      function()
      local atom = cute.make_mma_atom(c[2]())
      local d = rt.device()
      local known = { sm_80 = true, sm_86 = true, sm_89 = true, sm_90a = true }
      local arch = known[d.arch] and d.arch or (d.cc.major >= 9 and "sm_90" or "sm_80")
      if not atom:supports_arch(arch) then
        pending(("%s needs %s; the device is %s"):format(atom.instruction, atom.min_arch, arch))
        return
      end
      math.randomseed(os.time())
      local r = compile_for(atom, arch)
      local mod = rt.load_module(r.ptx, true)
      local fn = mod:get_function("mma_atom")
      local n = atom.num_registers
      local bad = run_case(c[1], atom, function(ra, rb, rc)
        local ta = cute.from_host(ra, (reg_kind(atom, "A")))
        local tb = cute.from_host(rb, (reg_kind(atom, "B")))
        local tc = cute.from_host(rc, (reg_kind(atom, "C")))
        local zeros = {}
        for i = 1, 32 * n.D do zeros[i] = 0 end
        local td = cute.from_host(zeros, (reg_kind(atom, "D")))
        local params = ffi.new("void *[4]", ta.ptr_cell, tb.ptr_cell, tc.ptr_cell, td.ptr_cell)
        rt.launch(fn, 1, 32, 0, nil, params)
        rt.synchronize()
        return td:to_table()
      end)
      mod:unload()
      assert.are.equal(0, bad)
    end)
  end
end)
