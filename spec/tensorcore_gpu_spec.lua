-- Low-level tensor-core operations on the GPU (docs/TENSORCORE.md): one warp
-- computes D = A * B + C with cute.arch.mma_sync from A, B loaded into the
-- PTX ISA's fragment layouts ("Matrix Fragments for mma.m16n8k16 / m16n8k8"),
-- then through shared memory with ldmatrix.x4 (A) and ldmatrix.x2.trans (B);
-- and cp.async copies of a 16-byte-aligned tile with a zero-filled tail.
-- Random data, CPU references.  Without a GPU every GPU test is pending; the
-- kernels themselves are compiled for sm_80 here (assembled when ptxas is there).
local cute = require("cute")
local ffi = require("ffi")
local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it
local f32, f16, bf16, u8 = cute.float32, cute.float16, cute.bfloat16, cute.uint8

-- n random multiples of 1/8 in [-2, 2): exact in f16 and bf16, and their
-- products and sums of 16 of them exact in f32, so the reference is exact
local function rand_eighths(n)
  local r = util.rand_floats(n)
  local t = {}
  for i = 1, n do t[i] = math.floor(r[i - 1] * 16) / 8 end
  return t
end

-- D[m][n] = sum_k A[m][k] B[k][n] + C[m][n]  (row-major Lua tables, 1-based)
local function ref_mma(A, B, Cm, M, N, K)
  local D = {}
  for m = 0, M - 1 do
    for n = 0, N - 1 do
      local s = Cm[m * N + n + 1]
      for k = 0, K - 1 do s = s + A[m * K + k + 1] * B[k * N + n + 1] end
      D[m * N + n + 1] = s
    end
  end
  return D
end

local function check(got, want, n, what)
  local bad, first = 0, nil
  for i = 0, n - 1 do
    if math.abs(got[i] - want[i + 1]) > 1e-5 then
      bad = bad + 1
      first = first or ("element %d: got %s, want %s"):format(i, tostring(got[i]), tostring(want[i + 1]))
    end
  end
  assert.are.equal(0, bad, what .. ": " .. tostring(bad) .. " wrong, first " .. tostring(first))
end

-- Lane l holds (g = l / 4, t = l % 4):
--   A (16 x K, row-major) a[i]: row g + 8 * ((i >> 1) & 1), column 2t + (i & 1) + 8 * (i >> 2)
--   B (K x 8)            b[i]: row (k) 2t + (i & 1) + 8 * (i >> 1), column (n) g
--   C, D (16 x 8)        c[i]: row g + 8 * (i >> 1), column 2t + (i & 1)
local function a_rc(i) return 8 * (math.floor(i / 2) % 2), (i % 2) + 8 * math.floor(i / 4) end
local function b_kn(i) return (i % 2) + 8 * math.floor(i / 2) end
local function c_rc(i) return 8 * math.floor(i / 2), i % 2 end

local function mma_regs_kernel(ab, K, acc)
  acc = acc or f32
  local shape = K == 16 and "m16n8k16" or "m16n8k8"
  local na, nb = K / 2, K / 4
  return cute.kernel(function(A, B, Cm, D)
    local lane = cute.arch.lane_idx()
    local g, t = cute.div(lane, 4), cute.rem(lane, 4)
    local a = cute.arch.make_fragment_regs(ab, na)
    local b = cute.arch.make_fragment_regs(ab, nb)
    local c = cute.arch.make_fragment_regs(acc, 4)
    for i = 0, na - 1 do
      local dr, dc = a_rc(i)
      a[i] = A[{ g + dr, 2 * t + dc }]
    end
    for i = 0, nb - 1 do b[i] = B[{ 2 * t + b_kn(i), g }] end
    for i = 0, 3 do
      local dr, dc = c_rc(i)
      c[i] = Cm[{ g + dr, 2 * t + dc }]
    end
    local mma = cute.arch.mma_sync{ shape = shape, a_type = ab, b_type = ab, c_type = acc, d_type = acc }
    local d = cute.arch.make_fragment_regs(acc, 4)
    mma(d, a, b, c)
    for i = 0, 3 do
      local dr, dc = c_rc(i)
      D[{ g + dr, 2 * t + dc }] = d[i]
    end
  end, { name = "mma_regs_" .. shape .. "_" .. acc.name })
end

-- A 16x16 and B 16x8 (row-major) staged in shared memory, then ldmatrix.x4
-- (A: lane l points at row l % 8 + 8 * ((l / 8) % 2), column 8 * (l / 16): the
-- four 8x8 matrices in the order of a0a1, a2a3, a4a5, a6a7) and
-- ldmatrix.x2.trans (B: lane l points at row k = l % 16; the transposed 8x8
-- matrices give each thread B[2t][g], B[2t + 1][g] and the same at k + 8)
local function mma_ldmatrix_kernel(ab)
  return cute.kernel(function(A, B, D)
    local lane = cute.arch.lane_idx()
    local sA = cute.make_shared_tensor(cute.make_layout({ 16, 16 }, { 16, 1 }), ab)
    local sB = cute.make_shared_tensor(cute.make_layout({ 16, 8 }, { 8, 1 }), ab)
    for j = 0, 7 do
      local e = lane * 8 + j
      sA[{ cute.div(e, 16), cute.rem(e, 16) }] = A[{ cute.div(e, 16), cute.rem(e, 16) }]
    end
    for j = 0, 3 do
      local e = lane * 4 + j
      sB[{ cute.div(e, 8), cute.rem(e, 8) }] = B[{ cute.div(e, 8), cute.rem(e, 8) }]
    end
    cute.arch.sync_threads()
    local r8, m = cute.rem(lane, 8), cute.div(lane, 8)
    local a = cute.arch.ldmatrix(sA:ptr_at({ r8 + 8 * cute.rem(m, 2), 8 * cute.div(m, 2) }), { num_matrices = 4 })
    local b = cute.arch.ldmatrix(sB:ptr_at({ cute.rem(lane, 16), 0 }), { num_matrices = 2, transpose = true })
    local d = cute.arch.make_fragment_regs(f32, 4)
    local mma = cute.arch.mma_sync{ shape = "m16n8k16", a_type = ab, b_type = ab, c_type = f32, d_type = f32 }
    mma(d, a, b, d)
    local g, t = cute.div(lane, 4), cute.rem(lane, 4)
    for i = 0, 3 do
      local dr, dc = c_rc(i)
      D[{ g + dr, 2 * t + dc }] = d[i]
    end
  end, { name = "mma_ldmatrix" })
end

-- 32 threads, thread t copies row t (16 bytes) of G into shared memory in
-- chunks of `bytes`; only the first n bytes of G are valid: src_size is
-- clamp(n - offset, 0, bytes), the rest of each chunk is zero-filled.  Shared
-- memory is filled with 0xAB first so that a missing zero-fill shows.
local function cp_async_kernel(bytes, cache)
  return cute.kernel(function(G, O, n)
    local t = cute.arch.thread_idx()
    local s = cute.make_shared_tensor(cute.make_layout({ 32, 16 }, { 16, 1 }), u8)
    for j = 0, 15 do s[{ t, j }] = 0xAB end
    cute.arch.sync_threads()
    for j = 0, 16 / bytes - 1 do
      local off = t * 16 + j * bytes
      local valid = cute.min(cute.max(n - off, 0), bytes)
      cute.arch.cp_async(s:ptr_at({ t, j * bytes }), G:ptr_at({ t, j * bytes }), bytes,
        { cache = cache, src_size = valid })
    end
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()
    for j = 0, 15 do O[{ t, j }] = s[{ t, j }] end
  end, { name = "cp_async_" .. bytes .. cache })
end

local CP = { { 4, "ca" }, { 8, "ca" }, { 16, "ca" }, { 16, "cg" } }

-- a 16 x 8 x K product in K / 16 steps of a traced loop: the accumulator
-- fragment is carried through cute.range, A and B fragments made per step
local function mma_kloop_kernel(ab)
  return cute.kernel(function(A, B, D, ksteps)
    local lane = cute.arch.lane_idx()
    local g, t = cute.div(lane, 4), cute.rem(lane, 4)
    local acc = cute.arch.make_fragment_regs(f32, 4)
    local mma = cute.arch.mma_sync{ shape = "m16n8k16", a_type = ab, b_type = ab, c_type = f32, d_type = f32 }
    for kk in cute.range(ksteps) do
      local a = cute.arch.make_fragment_regs(ab, 8)
      local b = cute.arch.make_fragment_regs(ab, 4)
      for i = 0, 7 do
        local dr, dc = a_rc(i)
        a[i] = A[{ g + dr, kk * 16 + 2 * t + dc }]
      end
      for i = 0, 3 do b[i] = B[{ kk * 16 + 2 * t + b_kn(i), g }] end
      mma(acc, a, b)
    end
    for i = 0, 3 do
      local dr, dc = c_rc(i)
      D[{ g + dr, 2 * t + dc }] = acc[i]
    end
  end, { name = "mma_kloop" })
end

-- stmatrix.x4 (sm_90): lane l's register j holds the 16-bit values
-- 2 (4 l + j) (low half) and 2 (4 l + j) + 1; lane l gives the address of row
-- l of a 32 x 8 u16 tile (matrix j = rows 8j..8j+7).  Row 8j + l / 4, columns
-- 2 (l % 4) and 2 (l % 4) + 1 of the tile receive lane l's register j.
local function stmatrix_kernel()
  return cute.kernel(function(O)
    local lane = cute.arch.lane_idx()
    local s = cute.make_shared_tensor(cute.make_layout({ 32, 8 }, { 8, 1 }), cute.uint16)
    local f = cute.arch.make_fragment_regs(cute.uint32, 4)
    for j = 0, 3 do
      local lo = (lane * 4 + j) * 2
      f[j] = lo + (lo + 1) * 65536
    end
    cute.arch.stmatrix(s:ptr_at({ lane, 0 }), f, { num_matrices = 4 })
    cute.arch.sync_threads()
    for c = 0, 7 do O[{ lane, c }] = s[{ lane, c }] end
  end, { name = "stmatrix_x4" })
end

describe("tensor-core operations compile (no GPU needed)", function()
  it("the GPU spec's kernels assemble for sm_80", function()
    local has_ptxas = require("cute.ffi").C.cute_ptxas_path() ~= nil
    local function ok(k, want, ...)
      local r = k:with({ arch = "sm_80", use_ptxas = has_ptxas }):compile(...)
      assert.is_truthy(util.has(r.ptx, want), want .. "\n" .. r.ptx)
      if has_ptxas then assert.are.equal(0, r.info.spill_stores, r.ptxas_log) end
    end
    local ts = cute.tensor_spec
    for _, ab in ipairs({ bf16, f16 }) do
      local n = ab == bf16 and "bf16" or "f16"
      ok(mma_regs_kernel(ab, 16), "mma.sync.aligned.m16n8k16.row.col.f32." .. n .. "." .. n .. ".f32",
        ts({ 16, 16 }, ab), ts({ 16, 8 }, ab), ts({ 16, 8 }, f32), ts({ 16, 8 }, f32))
      ok(mma_ldmatrix_kernel(ab), "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        ts({ 16, 16 }, ab), ts({ 16, 8 }, ab), ts({ 16, 8 }, f32))
    end
    ok(mma_regs_kernel(f16, 8), "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
      ts({ 16, 8 }, f16), ts({ 8, 8 }, f16), ts({ 16, 8 }, f32), ts({ 16, 8 }, f32))
    ok(mma_regs_kernel(f16, 16, f16), "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
      ts({ 16, 16 }, f16), ts({ 16, 8 }, f16), ts({ 16, 8 }, f16), ts({ 16, 8 }, f16))
    ok(mma_kloop_kernel(bf16), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      ts({ 16, 64 }, bf16), ts({ 64, 8 }, bf16), ts({ 16, 8 }, f32), cute.Int32(4))
    local r = stmatrix_kernel():with({ arch = "sm_90a", use_ptxas = has_ptxas }):compile(ts({ 32, 8 }, cute.uint16))
    assert.is_truthy(util.has(r.ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16"), r.ptx)
    for _, c in ipairs(CP) do
      ok(cp_async_kernel(c[1], c[2]), ("cp.async.%s.shared.global"):format(c[2]),
        ts({ 32, 16 }, u8), ts({ 32, 16 }, u8), cute.Int32(500))
    end
    if not has_ptxas then pending("ptxas not found: PTX checked, not assembled") end
  end)
end)

describe("tensor-core operations on the GPU", function()
  local function run_mma(ab, K, via_smem)
    local A, B, Cm = rand_eighths(16 * K), rand_eighths(K * 8), rand_eighths(16 * 8)
    if via_smem then for i = 1, #Cm do Cm[i] = 0 end end
    local dA, dB = cute.from_host(A, ab, { 16, K }), cute.from_host(B, ab, { K, 8 })
    local dC, dD = cute.from_host(Cm, f32, { 16, 8 }), cute.zeros({ 16, 8 }, f32)
    if via_smem then
      mma_ldmatrix_kernel(ab):launch{ grid = 1, block = 32 }(dA, dB, dD)
    else
      mma_regs_kernel(ab, K):launch{ grid = 1, block = 32 }(dA, dB, dC, dD)
    end
    local got = dD:to_host()
    check(got, ref_mma(A, B, Cm, 16, 8, K), 16 * 8,
      ("%s m16n8k%d%s"):format(ab.name, K, via_smem and " via ldmatrix" or ""))
    for _, t in ipairs({ dA, dB, dC, dD }) do t:free() end
  end

  gpu_it("mma_sync m16n8k16 bf16 and f16 (f32 accumulators) from fragments loaded from global memory", function()
    for _ = 1, 3 do
      run_mma(bf16, 16, false)
      run_mma(f16, 16, false)
    end
  end)

  gpu_it("mma_sync m16n8k8 f16", function()
    for _ = 1, 3 do run_mma(f16, 8, false) end
  end)

  gpu_it("ldmatrix.x4 (A) and ldmatrix.x2.trans (B) through shared memory, then mma_sync m16n8k16", function()
    for _ = 1, 3 do
      run_mma(bf16, 16, true)
      run_mma(f16, 16, true)
    end
  end)

  gpu_it("cp.async ca 4/8/16 and cg 16 of a 16-byte-aligned tile, the tail past n zero-filled", function()
    local r = util.rand_floats(512, 0, 255)
    local G = {}
    for i = 1, 512 do G[i] = math.floor(r[i - 1]) end
    local dG = cute.from_host(G, u8, { 32, 16 })
    for _, c in ipairs(CP) do
      local k = cp_async_kernel(c[1], c[2])
      for _, n in ipairs({ 512, 500, 243, 16, 0 }) do
        local dO = cute.zeros({ 32, 16 }, u8)
        k:launch{ grid = 1, block = 32 }(dG, dO, n)
        local got = dO:to_host()
        local want = {}
        for i = 1, 512 do want[i] = i <= n and G[i] or 0 end
        check(got, want, 512, ("cp.async.%s %d bytes, n = %d"):format(c[2], c[1], n))
        dO:free()
      end
    end
    dG:free()
  end)

  gpu_it("mma_sync m16n8k16 f16 with f16 accumulators (C and D as f16[4])", function()
    local half_to_float = require("cute.dtype").half_to_float
    for _ = 1, 3 do
      -- multiples of 1/4 in [-1, 1): every partial sum is exact in f16
      local function quarters(n)
        local t = rand_eighths(n)
        for i = 1, n do t[i] = math.floor(t[i] * 2) / 4 end
        return t
      end
      local A, B, Cm = quarters(256), quarters(128), quarters(128)
      local dA, dB = cute.from_host(A, f16, { 16, 16 }), cute.from_host(B, f16, { 16, 8 })
      local dC, dD = cute.from_host(Cm, f16, { 16, 8 }), cute.zeros({ 16, 8 }, f16)
      mma_regs_kernel(f16, 16, f16):launch{ grid = 1, block = 32 }(dA, dB, dC, dD)
      local bits = dD:to_host()
      local got = {}
      for i = 0, 127 do got[i] = half_to_float(bits[i]) end
      check(got, ref_mma(A, B, Cm, 16, 8, 16), 128, "f16 m16n8k16, f16 accumulators")
      for _, t in ipairs({ dA, dB, dC, dD }) do t:free() end
    end
  end)

  gpu_it("mma_sync accumulating through a traced k loop (16 x 8 x 64, bf16)", function()
    local K = 64
    local A, B = rand_eighths(16 * K), rand_eighths(K * 8)
    local zero = {}
    for i = 1, 128 do zero[i] = 0 end
    local dA, dB, dD = cute.from_host(A, bf16, { 16, K }), cute.from_host(B, bf16, { K, 8 }), cute.zeros({ 16, 8 }, f32)
    mma_kloop_kernel(bf16):launch{ grid = 1, block = 32 }(dA, dB, dD, K / 16)
    check(dD:to_host(), ref_mma(A, B, zero, 16, 8, K), 128, "k loop")
    for _, t in ipairs({ dA, dB, dD }) do t:free() end
  end)

  gpu_it("stmatrix.x4 on sm_90: each lane's registers land at the documented rows and columns", function()
    local arch = require("cute.compile").device_arch()
    if not (arch and tonumber(arch:match("^sm_(%d+)")) >= 90) then
      pending("stmatrix needs sm_90; the device is " .. tostring(arch))
      return
    end
    local dO = cute.zeros({ 32, 8 }, cute.uint16)
    stmatrix_kernel():launch{ grid = 1, block = 32 }(dO)
    local want = {}
    for l = 0, 31 do
      for j = 0, 3 do
        for h = 0, 1 do
          want[(8 * j + math.floor(l / 4)) * 8 + 2 * (l % 4) + h + 1] = (l * 4 + j) * 2 + h
        end
      end
    end
    check(dO:to_host(), want, 256, "stmatrix.x4")
    dO:free()
  end)
end)
