-- Property tests over many random layouts, in the spirit of CuTe's unit tests:
-- the algebra is checked by meaning (function values), not by printed form.
local cute = require("cute")

local SEED = tonumber(os.getenv("CUTE_SEED") or "") or 20261122
local N = tonumber(os.getenv("CUTE_PROPERTY_CASES") or "") or 300

local rng_state = SEED
local function rand(lo, hi) -- deterministic LCG, independent of math.random
  rng_state = (rng_state * 1103515245 + 12345) % 2147483648
  return lo + rng_state % (hi - lo + 1)
end

local function shuffle(t)
  for i = #t, 2, -1 do local j = rand(1, i); t[i], t[j] = t[j], t[i] end
  return t
end

-- random shape tree with rank 1..3, depth <= 2, total size <= maxsize
local function rand_shape(depth, budget)
  local r = rand(1, 3)
  local t = {}
  for i = 1, r do
    if depth > 0 and rand(0, 3) == 0 then
      t[i], budget = rand_shape(depth - 1, budget)
    else
      local s = rand(1, math.max(1, math.min(6, budget)))
      budget = math.max(1, math.floor(budget / s))
      t[i] = s
    end
  end
  return t, budget
end

local function leaves(t, acc)
  acc = acc or {}
  if type(t) == "table" then for _, c in ipairs(t) do leaves(c, acc) end else acc[#acc + 1] = t end
  return acc
end

local function rebuild(t, vals, pos)
  pos = pos or { 0 }
  if type(t) == "table" then
    local r = {}
    for i, c in ipairs(t) do r[i] = rebuild(c, vals, pos) end
    return r
  end
  pos[1] = pos[1] + 1
  return vals[pos[1]]
end

-- kinds: compact (col-major), permuted compact (injective), gapped (injective),
-- arbitrary (may be non-injective, with zeros)
local function rand_layout(kind)
  local shape = rand_shape(1, 128)
  local ls = leaves(shape)
  local strides = {}
  if kind == "arbitrary" then
    for i = 1, #ls do strides[i] = rand(0, 3) == 0 and 0 or rand(1, 12) end
  else
    local order = {}
    for i = 1, #ls do order[i] = i end
    if kind ~= "compact" then shuffle(order) end
    local acc = 1
    for _, i in ipairs(order) do
      strides[i] = acc
      acc = acc * ls[i] * ((kind == "gapped" and rand(0, 2) == 0) and 2 or 1)
    end
  end
  return cute.make_layout(shape, rebuild(shape, strides))
end

local function values(L)
  local t = {}
  for i = 0, cute.size(L) - 1 do t[i] = L(i) end
  return t
end

local function injective(L)
  local seen = {}
  for i = 0, cute.size(L) - 1 do
    local v = L(i)
    if seen[v] then return false end
    seen[v] = true
  end
  return true
end

local kinds = { "compact", "permuted", "gapped", "arbitrary" }

describe("layout properties (seed " .. SEED .. ", " .. N .. " cases each)", function()
  it("coalesce preserves the function and never grows the rank", function()
    for c = 1, N do
      local L = rand_layout(kinds[c % 4 + 1])
      local R = cute.coalesce(L)
      assert.are.equal(cute.size(L), cute.size(R))
      for i = 0, cute.size(L) - 1 do
        if L(i) ~= R(i) then error(("coalesce(%s) = %s differs at %d"):format(tostring(L), tostring(R), i)) end
      end
      assert.is_true(cute.rank(R) <= #leaves(cute.shape(L)))
    end
  end)

  it("filter keeps the image of the layout and drops stride-0 modes", function()
    for c = 1, N do
      local L = rand_layout(kinds[c % 4 + 1])
      local R = cute.filter(L)
      local a, b = {}, {}
      for i = 0, cute.size(L) - 1 do a[L(i)] = true end
      for i = 0, cute.size(R) - 1 do b[R(i)] = true end
      for k in pairs(a) do assert.is_true(b[k], ("filter(%s) = %s lost %d"):format(tostring(L), tostring(R), k)) end
      for k in pairs(b) do assert.is_true(a[k], ("filter(%s) = %s added %d"):format(tostring(L), tostring(R), k)) end
      for _, d in ipairs(leaves(cute.stride(R))) do
        if cute.size(R) > 1 then assert.are_not.equal(0, d) end
      end
    end
  end)

  it("composition satisfies R(i) == A(B(i)) when admissible", function()
    local tested = 0
    for c = 1, N * 4 do
      local A = rand_layout(kinds[c % 4 + 1])
      -- B: a compact or strided layout into A's domain
      local sa = cute.size(A)
      local divs = {}
      for d = 1, sa do if sa % d == 0 then divs[#divs + 1] = d end end
      local s = divs[rand(1, #divs)]
      local d = divs[rand(1, #divs)]
      local B = cute.make_layout(s, (s * d <= sa) and d or 1)
      if rand(0, 1) == 0 then B = cute.make_layout({ s }, { (s * d <= sa) and d or 1 }) end
      local ok, R = pcall(cute.composition, A, B)
      if ok then
        tested = tested + 1
        assert.are.equal(cute.size(B), cute.size(R))
        for i = 0, cute.size(B) - 1 do
          if R(i) ~= A(B(i)) then
            error(("composition(%s, %s) = %s: R(%d)=%d but A(B(i))=%d"):format(
              tostring(A), tostring(B), tostring(R), i, R(i), A(B(i))))
          end
        end
      else
        assert.is_truthy(tostring(R):match("composition"), R)
      end
    end
    assert.is_true(tested >= N, "too few admissible compositions: " .. tested)
  end)

  it("complement is disjoint from its input, ordered, and fills the cotarget", function()
    local tested = 0
    for c = 1, N do
      local L = rand_layout(kinds[c % 3 + 1]) -- injective kinds
      local cot = cute.cosize(L) * rand(1, 3)
      local ok, Cm = pcall(cute.complement, L, cot)
      assert.is_true(ok, tostring(Cm))
      tested = tested + 1
      local img = {}
      for i = 1, cute.size(L) - 1 do img[L(i)] = true end
      local prev = -1
      for j = 0, cute.size(Cm) - 1 do
        local v = Cm(j)
        if j > 0 then assert.is_nil(img[v], ("complement(%s,%d)=%s overlaps at %d"):format(tostring(L), cot, tostring(Cm), v)) end
        assert.is_true(v > prev, ("complement(%s,%d)=%s not ordered"):format(tostring(L), cot, tostring(Cm)))
        prev = v
      end
      assert.is_true(cute.size(L) * cute.size(Cm) >= cot,
        ("complement(%s,%d)=%s too small"):format(tostring(L), cot, tostring(Cm)))
    end
    assert.is_true(tested > 0)
  end)

  it("right_inverse: L(R(i)) == i", function()
    for c = 1, N do
      local L = rand_layout(kinds[c % 4 + 1])
      local R = cute.right_inverse(L)
      for i = 0, cute.size(R) - 1 do
        assert.are.equal(i, L(R(i)), ("right_inverse(%s) = %s at %d"):format(tostring(L), tostring(R), i))
      end
    end
  end)

  it("left_inverse: left_inverse(L)(L(i)) == i for injective L", function()
    for c = 1, N do
      local L = rand_layout(kinds[c % 3 + 1])
      if injective(L) then
        local R = cute.left_inverse(L)
        for i = 0, cute.size(L) - 1 do
          assert.are.equal(i, R(L(i)), ("left_inverse(%s) = %s at %d"):format(tostring(L), tostring(R), i))
        end
      end
    end
  end)

  -- divides by an arbitrary tile are only meaningful when the composition is
  -- admissible; on compact layouts (which coalesce to n:1) it always is.
  it("divides have the documented sizes and compose back", function()
    local tested = 0
    for c = 1, N do
      local A = rand_layout("compact")
      local sa = cute.size(A)
      local divs = {}
      for d = 1, sa do if sa % d == 0 then divs[#divs + 1] = d end end
      local t = divs[rand(1, #divs)]
      local B = cute.make_layout(t)
      local okd, LD = pcall(cute.logical_divide, A, B)
      if not okd then
        assert.is_truthy(tostring(LD):find("inadmissible", 1, true), LD)
        goto continue
      end
      tested = tested + 1
      assert.are.equal(sa, cute.size(LD), ("logical_divide(%s, %s) = %s"):format(tostring(A), tostring(B), tostring(LD)))
      local ZD = cute.zipped_divide(A, B)
      assert.are.equal(2, cute.rank(ZD))
      assert.are.equal(t, cute.size(cute.get(ZD, 0)))
      assert.are.equal(sa / t, cute.size(cute.get(ZD, 1)))
      -- the tile mode is A o B, and the whole divide is a permutation of A's values
      local AB = cute.composition(A, B)
      local T0 = cute.get(LD, 0)
      for i = 0, t - 1 do assert.are.equal(AB(i), T0(i)) end
      local va, vl = {}, {}
      for i = 0, sa - 1 do va[A(i)] = (va[A(i)] or 0) + 1; vl[LD(i)] = (vl[LD(i)] or 0) + 1 end
      for k, v in pairs(va) do assert.are.equal(v, vl[k]) end
      -- zipped and logical divides agree element-wise on (tile, rest) coordinates
      local nt = cute.size(cute.get(ZD, 1))
      for r = 0, nt - 1 do for i = 0, t - 1 do
        assert.are.equal(LD({ i, r }), ZD({ i, r }))
      end end
      ::continue::
    end
    assert.is_true(tested >= N / 4, "too few admissible divides: " .. tested)
  end)

  it("products have the documented sizes and keep A as the first mode", function()
    for c = 1, N do
      local A = rand_layout(kinds[c % 3 + 1])
      local B = cute.make_layout(rand(1, 4))
      local P = cute.logical_product(A, B)
      assert.are.equal(cute.size(A) * cute.size(B), cute.size(P))
      local P0 = cute.get(P, 0)
      for i = 0, cute.size(A) - 1 do assert.are.equal(A(i), P0(i)) end
      -- each copy of A is shifted by an offset not hit by A itself
      for _, op in ipairs({ "zipped_product", "tiled_product", "blocked_product", "raked_product" }) do
        local Q = cute[op](A, B)
        assert.are.equal(cute.size(A) * cute.size(B), cute.size(Q), op)
      end
    end
  end)
end)
