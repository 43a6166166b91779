-- Kernels written with plain Lua conditions and loops (the source front end),
-- run on the GPU and compared with the same Lua evaluated on the CPU.  Every
-- test is tagged #gpu; without a GPU each one is pending.
local cute = require("cute")
local ffi = require("ffi")
local f32, i32 = cute.float32, cute.int32

local gpu_it = dofile("spec/support/util.lua").gpu_it

local seed = 4242
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
end
local function rand_floats(n)
  local a = ffi.new("float[?]", n)
  for i = 0, n - 1 do a[i] = math.floor(rnd() * 16 - 8) end -- small integers: exact sums
  return a
end

describe("front end on the GPU", function()
  gpu_it("if / elseif / else with and, or, not on random data; `i < n and A[i] > 0` guards the load", function()
    local n, m = 1000, 1024
    local k = cute.kernel(function(A, B, n)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      local v = 0
      if i < n and A[i] > 0 then
        v = 1
      elseif not (i < n) or A[i] == 0 then
        v = 2
      elseif A[i] < -4 and i % 2 == 0 then
        v = 3
      else
        v = 4
      end
      if i < n then B[i] = v end
    end)
    local ha = rand_floats(m)
    local A, B = cute.from_host(ha, f32, { m }), cute.empty({ m }, i32)
    k:launch{ grid = 8, block = 128 }(A, B, cute.Int32(n))
    local hb = B:to_host()
    for i = 0, n - 1 do
      local a, want = ha[i], nil
      if a > 0 then want = 1 elseif a == 0 then want = 2 elseif a < -4 and i % 2 == 0 then want = 3 else want = 4 end
      assert.equal(want, hb[i], "element " .. i)
    end
  end)

  gpu_it("a sum over a traced bound with a plain Lua local; a search loop with break", function()
    local rows, cols = 64, 100
    local k = cute.kernel(function(A, S, F, cols)
      local r = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      local s = 0
      for j = 0, cols - 1 do s = s + A[r * cols + j] end
      S[r] = s
      local found = -1
      local j = 0
      while j < cols do
        if A[r * cols + j] > 6 then
          found = j
          break
        end
        j = j + 1
      end
      F[r] = found
    end)
    local ha = rand_floats(rows * cols)
    local A = cute.from_host(ha, f32, { rows * cols })
    local S, F = cute.empty({ rows }, f32), cute.empty({ rows }, i32)
    k:launch{ grid = 2, block = 32 }(A, S, F, cute.Int32(cols))
    local hs, hf = S:to_host(), F:to_host()
    for r = 0, rows - 1 do
      local s, found = 0, -1
      for j = 0, cols - 1 do s = s + ha[r * cols + j] end
      for j = 0, cols - 1 do if ha[r * cols + j] > 6 then found = j; break end end
      assert.equal(s, hs[r], "row " .. r)
      assert.equal(found, hf[r], "row " .. r)
    end
  end)

  gpu_it("break and goto continue under GPU conditions in cute.range, numeric for and while loops", function()
    local rows, cols = 64, 100
    local k = cute.kernel(function(A, S, P, W, cols)
      local r = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      -- sum of the non-negative entries of the row up to the first entry > 6
      local s = 0
      for j in cute.range(cols) do
        local a = A[r * cols + j]
        if a > 6 then break end
        if a < 0 then goto continue end
        s = s + a
        ::continue::
      end
      S[r] = s
      -- product of (entries != 0), the odd columns skipped, over a numeric for
      local p = 1
      for j = 0, cols - 1 do
        if j % 2 == 1 then goto continue end
        if A[r * cols + j] == 0 then goto continue end
        p = p * (A[r * cols + j] > 0 and 2 or 1)
        if p > 1000000 then break end
        ::continue::
      end
      P[r] = p
      -- count of entries > 2 in a while loop that skips with continue
      local c, j = 0, 0
      while j < cols do
        j = j + 1
        if A[r * cols + j - 1] <= 2 then goto continue end
        c = c + 1
        ::continue::
      end
      W[r] = c
    end)
    local ha = rand_floats(rows * cols)
    local A = cute.from_host(ha, f32, { rows * cols })
    local S, P, W = cute.empty({ rows }, f32), cute.empty({ rows }, i32), cute.empty({ rows }, i32)
    k:launch{ grid = 2, block = 32 }(A, S, P, W, cute.Int32(cols))
    local hs, hp, hw = S:to_host(), P:to_host(), W:to_host()
    for r = 0, rows - 1 do
      local s, p, c = 0, 1, 0
      for j = 0, cols - 1 do
        local a = ha[r * cols + j]
        if a > 6 then break end
        if a >= 0 then s = s + a end
      end
      for j = 0, cols - 1, 2 do
        local a = ha[r * cols + j]
        if a ~= 0 then
          p = p * (a > 0 and 2 or 1)
          if p > 1000000 then break end
        end
      end
      for j = 0, cols - 1 do if ha[r * cols + j] > 2 then c = c + 1 end end
      assert.equal(s, hs[r], "sum, row " .. r)
      assert.equal(p, hp[r], "product, row " .. r)
      assert.equal(c, hw[r], "count, row " .. r)
    end
  end)

  gpu_it("numeric for and cute.range with traced negative steps count down", function()
    local k = cute.kernel(function(O, hi, lo, st)
      local t = cute.arch.thread_idx()
      local c1, c2, last = 0, 0, 0
      for j = hi, lo, st do c1 = c1 + 1; last = j end   -- Lua's for: inclusive
      for j in cute.range(hi, lo, st) do c2 = c2 + 1 end -- Python's range: half-open
      O[t * 3] = c1
      O[t * 3 + 1] = c2
      O[t * 3 + 2] = last
    end)
    local O = cute.empty({ 96 }, i32)
    for _, case in ipairs({ { 63, 0, -1 }, { 10, -7, -3 }, { 5, 9, -1 }, { 0, 20, 7 } }) do
      local hi, lo, st = case[1], case[2], case[3]
      k:launch{ grid = 1, block = 32 }(O, cute.Int32(hi), cute.Int32(lo), cute.Int32(st))
      local ho = O:to_host()
      local c1, c2, last = 0, 0, 0
      for j = hi, lo, st do c1 = c1 + 1; last = j end
      local j = hi
      while (st > 0 and j < lo) or (st < 0 and j > lo) do c2 = c2 + 1; j = j + st end
      for t = 0, 31 do
        assert.equal(c1, ho[t * 3], "for count " .. table.concat(case, ","))
        assert.equal(c2, ho[t * 3 + 1], "range count " .. table.concat(case, ","))
        assert.equal(last, ho[t * 3 + 2], "last " .. table.concat(case, ","))
      end
    end
  end)

  gpu_it("loops that end near 2^31 - 1 stop instead of wrapping", function()
    local k = cute.kernel(function(O, s, n, st)
      local t = cute.arch.thread_idx()
      local c1, c2 = 0, 0
      for j in cute.range(s + t, n, st) do c2 = c2 + 1 end
      for j = s + t, n, st do c1 = c1 + 1 end
      O[t * 2] = c1
      O[t * 2 + 1] = c2
    end)
    local O = cute.empty({ 64 }, i32)
    local n, st = 2 ^ 31 - 1, 1000
    local s = n - 40 -- s + t stays within i32; s + t + st does not
    k:launch{ grid = 1, block = 32 }(O, cute.Int32(s), cute.Int32(n), cute.Int32(st))
    local ho = O:to_host()
    for t = 0, 31 do
      local start = s + t
      local want_for = start <= n and (math.floor((n - start) / st) + 1) or 0
      local want_range = start < n and math.ceil((n - start) / st) or 0
      assert.equal(want_for, ho[t * 2], "for, thread " .. t)
      assert.equal(want_range, ho[t * 2 + 1], "range, thread " .. t)
    end
  end)

  gpu_it("repeat ... until and the ternary idiom on the GPU", function()
    local n = 256
    local k = cute.kernel(function(A, B, n)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      if i >= n then return end
      local x = A[i]
      local steps = 0
      repeat
        x = x * 0.5
        steps = steps + 1
      until x < 1 and x > -1
      B[i] = (A[i] > 0 and steps or -steps) + x
    end)
    local ha = rand_floats(n)
    for i = 0, n - 1 do ha[i] = ha[i] * 37 end
    local A, B = cute.from_host(ha, f32, { n }), cute.empty({ n }, f32)
    k:launch{ grid = 2, block = 128 }(A, B, cute.Int32(n))
    local hb = B:to_host()
    for i = 0, n - 1 do
      local x, steps = ha[i], 0
      repeat x = x * 0.5; steps = steps + 1 until x < 1 and x > -1
      local want = (ha[i] > 0 and steps or -steps) + x
      assert.is_true(math.abs(hb[i] - want) < 1e-6, ("element %d: %s vs %s"):format(i, hb[i], want))
    end
  end)
end)
