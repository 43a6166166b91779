-- Conditions and loops on the GPU: the kernel fuzzer's random programs
-- (tools/fuzz_kernels.lua) compiled and run, compared with the same Lua run on
-- the CPU; the operator-level tracer's conditions (frontend = false) and
-- cute.range's loop semantics on random data.  Every test is tagged #gpu;
-- without a GPU each one is pending.
local cute = require("cute")
local ffi = require("ffi")
local i32 = cute.int32

local gpu_it = dofile("spec/support/util.lua").gpu_it

local seed = 777
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end

local function ints(n, lo, hi)
  local a = ffi.new("int32_t[?]", n)
  for i = 0, n - 1 do a[i] = lo + rnd(hi - lo + 1) end
  return a
end

describe("conditions and loops on the GPU", function()
  gpu_it("random kernels (if/elseif, and/or/not, for/range/while/repeat, break, return) store what Lua stores", function()
    rawset(_G, "FUZZ_KERNELS_LIB", true)
    local FZ = dofile("tools/fuzz_kernels.lua")
    rawset(_G, "FUZZ_KERNELS_LIB", nil)
    FZ.seed(20261123)
    local SENT = -777
    local ran, bad = 0, {}
    for prog = 1, 40 do
      local src = FZ.gen_program()
      local chunk = assert(load(src))
      setfenv(chunk, setmetatable({ cute = cute }, { __index = _G }))
      local k = cute.kernel(chunk())
      local ref_chunk = assert(load(src))
      setfenv(ref_chunk, setmetatable({ cute = { range = FZ.lua_range, range_constexpr = FZ.lua_range } }, { __index = _G }))
      local ref = ref_chunk()
      local spec = cute.tensor_spec({ FZ.NOUT }, i32)
      if pcall(k.ir, k, spec, cute.Int32(0), cute.Int32(0), cute.Int32(0)) then
        for _ = 1, 3 do
          local p1, p2, p3 = rnd(17) - 6, rnd(17) - 6, rnd(17) - 6
          local init = {}
          for i = 1, FZ.NOUT do init[i] = SENT end
          local O = cute.from_host(init, i32, { FZ.NOUT })
          k:launch{ grid = 1, block = 1 }(O, cute.Int32(p1), cute.Int32(p2), cute.Int32(p3))
          local got = O:to_host()
          local want = {}
          ref(want, p1, p2, p3)
          for i = 0, FZ.NOUT - 1 do
            local w = want[i] == nil and SENT or want[i]
            if got[i] ~= w then
              bad[#bad + 1] = ("program %d (%d, %d, %d): Out[%d] = %s, Lua %s\n%s"):format(prog, p1, p2, p3, i,
                tostring(got[i]), tostring(w), src)
              break
            end
          end
          ran = ran + 1
        end
      end
    end
    assert.is_true(ran >= 60, "too few programs ran: " .. ran)
    assert.equals(0, #bad, table.concat(bad, "\n\n", 1, math.min(#bad, 3)))
  end)

  gpu_it("operator-level conditions (frontend = false): logical_and with ~=, where of numbers, v ~= 0", function()
    local n = 1000
    local k = cute.kernel(function(A, B, C, n, m)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(i < n, function()
        local a = A[i]
        local v = cute.var(0)
        v.value = a % 3
        local r = cute.var(cute.where(a < m, 1, 2))
        cute.if_then(cute.logical_and(a ~= m, a > -3), function() r.value = r.value + 10 end)
        cute.if_then(v ~= 0, function() B[i] = r.value + 100 end, function() B[i] = r.value end)
        C[i] = cute.where(v == 0, 5, 6)
      end)
    end, { frontend = false })
    local ha = ints(n, -6, 6)
    local A = cute.from_host(ha, i32, { n })
    local B, C = cute.empty({ n }, i32), cute.empty({ n }, i32)
    local m = 2
    k:launch{ grid = 4, block = 256 }(A, B, C, cute.Int32(n), cute.Int32(m))
    local hb, hc = B:to_host(), C:to_host()
    for i = 0, n - 1 do
      local a = ha[i]
      local r = a < m and 1 or 2
      if a ~= m and a > -3 then r = r + 10 end
      local v = a % 3
      local wb = v ~= 0 and r + 100 or r
      local wc = v == 0 and 5 or 6
      assert.equals(wb, hb[i], "B[" .. i .. "] for a = " .. a)
      assert.equals(wc, hc[i], "C[" .. i .. "] for a = " .. a)
    end
  end)

  gpu_it("cute.range (frontend = false): traced negative and positive steps, Python's half-open range", function()
    local k = cute.kernel(function(O, a, b, s)
      local t = cute.arch.thread_idx()
      for i in cute.range(a, b, s) do
        cute.arch.atomic_add(O, 0, 1)
        cute.arch.atomic_add(O, 1, i)
      end
    end, { frontend = false })
    for _, c in ipairs({ { 63, -1, -1 }, { 10, 0, -3 }, { 0, 10, 3 }, { -5, 5, 2 }, { 5, 5, 1 }, { 5, 9, -1 } }) do
      local O = cute.from_host({ 0, 0 }, i32, { 2 })
      k:launch{ grid = 1, block = 1 }(O, cute.Int32(c[1]), cute.Int32(c[2]), cute.Int32(c[3]))
      local cnt, sum = 0, 0
      local i = c[1]
      while (c[3] > 0 and i < c[2]) or (c[3] < 0 and i > c[2]) do cnt, sum = cnt + 1, sum + i; i = i + c[3] end
      local h = O:to_host()
      assert.equals(cnt, h[0], "count for range(" .. table.concat(c, ", ") .. ")")
      assert.equals(sum, h[1], "sum for range(" .. table.concat(c, ", ") .. ")")
    end
  end)

  gpu_it("a grid-stride cute.range near 2^31 - 1 stops instead of wrapping (frontend = false)", function()
    local k = cute.kernel(function(O, start, n, s)
      local t = cute.arch.thread_idx()
      for i in cute.range(start + t, n, s) do
        cute.arch.atomic_add(O, 0, 1)
        cute.if_then(i < 0, function() cute.arch.atomic_add(O, 1, 1) end)
      end
    end, { frontend = false })
    local n = 2 ^ 31 - 1
    for _, c in ipairs({ { n - 200, 64 }, { n - 100, 2 ^ 30 }, { n - 64, 7 } }) do
      local O = cute.from_host({ 0, 0 }, i32, { 2 })
      k:launch{ grid = 1, block = 64 }(O, cute.Int32(c[1]), cute.Int32(n), cute.Int32(c[2]))
      local want = 0
      for t = 0, 63 do
        local i = c[1] + t
        while i < n do want = want + 1; i = i + c[2] end
      end
      local h = O:to_host()
      assert.equals(want, h[0], "iterations for start " .. c[1] .. ", step " .. c[2])
      assert.equals(0, h[1], "negative (wrapped) indices visited")
    end
  end)
end)
