-- Whole-fragment values (CuTe DSL's TensorSSA; docs/TENSORCORE.md,
-- "Whole-fragment values"): t:load() of a register tensor or a static tensor,
-- elementwise arithmetic, comparisons, cute.where, conversions, cute.math,
-- reductions and t:store(v); a softmax-style epilogue assembles for sm_80 and
-- sm_90a with no local memory; bad input is an error at the user's line.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local gpu_it = util.gpu_it
local f32, bf16 = cute.float32, cute.bfloat16
local ts = cute.tensor_spec

local THIS = "spec/tensor_ssa_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil
local LOG2E = 1.4426950408889634

local function tiled_mma()
  local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = bf16, acc_dtype = f32, shape_mnk = { 16, 8, 16 } }
  return cute.make_tiled_mma(op, { 1, 1, 1 })
end

-- X (4,16) f32 -> registers -> a softmax of each row (max-reduce the row,
-- subtract, exp2, sum, divide) -> bf16 Y (4,16); R (4): the row sums of
-- max(X, 0); S[0]: the maximum of all of X (a full reduction)
local function epilogue()
  local tm = tiled_mma()
  return cute.kernel(function(X, Y, R, S)
    local acc = tm:make_fragment_C({ 4, 16 })
    acc:store(X:load())
    local v = acc:load()
    local m = v:reduce(cute.ReductionOp.MAX, -math.huge, { cute._, 1 }) -- (4)
    local e = cute.math.exp2((v - m:broadcast_to(v.shape)) * LOG2E)
    local s = e:reduce(cute.ReductionOp.ADD, 0.0, { cute._, 1 })
    local out = tm:make_fragment_A({ 4, 16 })
    out:store((e / s:broadcast_to({ 4, 16 })):to(cute.bfloat16))
    cute.copy(out, Y)
    R:store(cute.where(v:gt(0), v, 0):reduce(cute.ReductionOp.ADD, 0.0, { cute._, 1 }))
    S[0] = v:reduce(cute.ReductionOp.MAX, -math.huge, 0)
  end)
end

local function compile(k, ...)
  local out = {}
  for _, arch in ipairs({ "sm_80", "sm_90a" }) do
    out[arch] = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(...)
  end
  return out
end

local function err_of(k, ...)
  local ok, e = pcall(function(...) return k:with({ arch = "sm_80" }):compile(...) end, ...)
  assert.is_false(ok)
  return tostring(e)
end

describe("TensorSSA", function()
  it("a softmax epilogue on a register tensor assembles for sm_80 and sm_90a with no local memory", function()
    local rs = compile(epilogue(), ts({ 4, 16 }, f32), ts({ 4, 16 }, bf16), ts({ 4 }, f32), ts({ 1 }, f32))
    for arch, r in pairs(rs) do
      assert.falsy(util.has(r.ptx, ".local"), arch .. ": local memory")
      assert.truthy(util.has(r.ptx, "ex2.approx"), arch .. ": no ex2")
      assert.truthy(util.has(r.ptx, "max.f32"), arch .. ": no max.f32")
      if PTXAS then
        assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
        assert.are.equal(0, r.info.stack, arch .. ": " .. tostring(r.ptxas_log))
      end
    end
    if not PTXAS then pending("ptxas not found: PTX checked, not assembled") end
  end)

  it("a 64-element f32 round trip through registers: one load and one store per element, no local memory", function()
    local tm = tiled_mma()
    local k = cute.kernel(function(X, Y)
      local r = tm:make_fragment_C({ 8, 8 })
      r:store(X:load())
      local r2 = tm:make_fragment_C({ 8, 8 })
      r2:store(-(r:load() * 2.0 + 1.0))
      Y:store(r2:load())
    end)
    for arch, r in pairs(compile(k, ts({ 8, 8 }, f32), ts({ 8, 8 }, f32))) do
      assert.falsy(util.has(r.ptx, ".local"), arch .. ": local memory")
      local function count(kind) -- elements moved by ld/st.global[.vN].f32
        local c = 0
        for w in r.ptx:gmatch(kind .. "%.global[%.%w]-%.f32") do c = c + (tonumber(w:match("%.v(%d)")) or 1) end
        return c
      end
      local nld, nst = count("ld"), count("st")
      assert.are.equal(64, nld, arch)
      assert.are.equal(64, nst, arch)
      if PTXAS then
        assert.are.equal(0, r.info.spill_stores, arch .. ": " .. tostring(r.ptxas_log))
        assert.are.equal(0, r.info.stack, arch .. ": " .. tostring(r.ptxas_log))
      end
    end
  end)

  it("shape, dtype, element access and elementwise ops on traced values", function()
    local seen = {}
    local k = cute.kernel(function(X)
      local v = X:load()
      seen.str = tostring(v)
      seen.n = v:size()
      seen.dtype = v.dtype.name
      seen.elem = tostring(v[5])
      local b = v:lt(1.0)
      seen.bdtype = b.dtype.name
      seen.cvt = (v + v):to(cute.float16).dtype.name
      seen.red = require("cute.tensor").describe(v:reduce(cute.ReductionOp.MIN, 0.0, { 1, cute._ }).shape)
      seen.full = cute.reduce(v, cute.ReductionOp.MUL, 1.0, 0) ~= nil
      seen.max2 = cute.math.max(v, 0.5).dtype.name
      seen.cute_lt = cute.lt(v, 0.0).dtype.name .. "," .. cute.ge(0.0, v).dtype.name
      seen.where = tostring(cute.where(v:ne(0.0), 1.0, v))
      local cols = v:reduce(cute.ReductionOp.ADD, 0.0, { 1, cute._ }) -- (3): column sums
      local rows = v:reduce(cute.ReductionOp.ADD, 0.0, { cute._, 1 }) -- (2): row sums
      seen.bc = tostring(rows:broadcast_to({ 2, 3 })) .. " " .. tostring(cols)
      -- element i of a (2,3) value is (i % 2, i // 2): broadcasting rows repeats element i % 2
      local b = rows:broadcast_to({ 2, 3 })
      seen.bc_ok = true
      for i = 0, 5 do seen.bc_ok = seen.bc_ok and rawequal(b[i], rows[i % 2]) end
      seen.bc_err = select(2, pcall(function() return cols:broadcast_to({ 2, 3 }) end))
    end)
    k:with({ arch = "sm_80" }):compile(ts({ 2, 3 }, f32))
    assert.are.equal("TensorSSA<float32, (2,3)>", seen.str)
    assert.are.equal(6, seen.n)
    assert.are.equal("float32", seen.dtype)
    assert.truthy(seen.elem:find("traced f32", 1, true), seen.elem)
    assert.are.equal("bool", seen.bdtype)
    assert.are.equal("float16", seen.cvt)
    assert.are.equal("(3)", seen.red)
    assert.is_true(seen.full)
    assert.are.equal("float32", seen.max2)
    assert.are.equal("bool,bool", seen.cute_lt)
    assert.are.equal("TensorSSA<float32, (2,3)>", seen.where)
    assert.are.equal("TensorSSA<float32, (2,3)> TensorSSA<float32, (3)>", seen.bc)
    assert.is_true(seen.bc_ok)
    assert.truthy(util.has(tostring(seen.bc_err), "TensorSSA:broadcast_to: mode 1 of (3) is 3: it must be 1 or 2"),
      tostring(seen.bc_err))
  end)

  it("reductions, broadcasts and elementwise ops on constants fold to the column-major values (i32)", function()
    local tr, tssa = require("cute.trace"), require("cute.tensor_ssa")
    local got = {}
    local k = cute.kernel(function(X)
      local vals = {}
      for i = 0, 5 do vals[i] = tr.const(tr.T.I32, 10 * i + 1) end -- element (r, c) = 10 (r + 2 c) + 1
      local v = tssa.make(vals, { 2, 3 }, 6)
      local function cvs(w) local o = {} for i = 0, w:size() - 1 do o[#o + 1] = w[i].cv end return table.concat(o, ",") end
      got.rows = cvs(v:reduce(cute.ReductionOp.ADD, 0, { cute._, 1 }))         -- 1+21+41, 11+31+51
      got.cols = cvs(v:reduce(cute.ReductionOp.MAX, -1, { 1, cute._ }))        -- 11, 31, 51
      got.all = v:reduce(cute.ReductionOp.MIN, 100, 0).cv
      got.bc = cvs(v:reduce(cute.ReductionOp.MUL, 1, { cute._, 1 }):broadcast_to({ 2, 3 }))
      got.ew = cvs(-(v - 1) * 2 + 3)
      X[0] = 0
    end)
    k:with({ arch = "sm_80" }):compile(ts({ 1 }, f32))
    assert.are.equal("63,93", got.rows)
    assert.are.equal("11,31,51", got.cols)
    assert.are.equal(1, got.all)
    assert.are.equal("861,17391,861,17391,861,17391", got.bc)
    assert.are.equal("3,-17,-37,-57,-77,-97", got.ew)
  end)

  it("errors at the user's line: shape and dtype mismatches, non-static shapes, bad profiles", function()
    local tm = tiled_mma()
    local e = err_of(cute.kernel(function(X)
      local r = tm:make_fragment_C({ 4, 4 })
      r:store(X:load()) -- MARK_SHAPE
    end), ts({ 4, 8 }, f32))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_SHAPE")), e)
    assert.truthy(util.has(e, "register tensor:store: the tensor's shape (4,4) and the value's shape (4,8) differ"), e)

    e = err_of(cute.kernel(function(X)
      local r = tm:make_fragment_A({ 4, 8 })
      r:store(X:load()) -- MARK_DTYPE
    end), ts({ 4, 8 }, f32))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_DTYPE")), e)
    assert.truthy(util.has(e, "the tensor holds bfloat16 and the value is of float32 (convert with v:to(cute.bfloat16))"), e)

    e = err_of(cute.kernel(function(X)
      local v = X:load() -- MARK_DYN
    end), cute.dynamic(ts({ 4, 8 }, f32)))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_DYN")), e)
    assert.truthy(util.has(e, "Tensor:load: the tensor's shape"), e)
    assert.truthy(util.has(e, "must be static"), e)

    e = err_of(cute.kernel(function(X, Y)
      local s = X:load() + Y:load() -- MARK_ADD
    end), ts({ 4, 8 }, f32), ts({ 8, 4 }, f32))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_ADD")), e)
    assert.truthy(util.has(e, "TensorSSA +: shapes (4,8) and (8,4) differ"), e)

    e = err_of(cute.kernel(function(X)
      local s = X:load():reduce(cute.ReductionOp.ADD, 0.0, { 1 }) -- MARK_PROF
    end), ts({ 4, 8 }, f32))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_PROF")), e)
    assert.truthy(util.has(e, "reduction_profile {1}") or util.has(e, "reduction_profile (1)"), e)

    e = err_of(cute.kernel(function(X)
      local s = X:load():reduce("sum", 0.0, 0) -- MARK_OP
    end), ts({ 4, 8 }, f32))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_OP")), e)
    assert.truthy(util.has(e, "op sum is not a cute.ReductionOp"), e)

    e = err_of(cute.kernel(function(X)
      local s = X:load():to("float99") -- MARK_TO
    end), ts({ 4, 8 }, f32))
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_TO")), e)
    assert.truthy(util.has(e, "float99 is not a dtype"), e)
  end)

  gpu_it("the softmax epilogue on random data against a CPU reference", function()
    local n = 64
    local x = util.rand_floats(n, -4, 4)
    local host = {}
    for i = 0, n - 1 do host[i + 1] = x[i] end
    local dX = cute.from_host(host, f32, { 4, 16 })
    local dY = cute.zeros({ 4, 16 }, bf16)
    local dR = cute.zeros({ 4 }, f32)
    local dS = cute.zeros({ 1 }, f32)
    epilogue():launch{ grid = 1, block = 1 }(dX, dY, dR, dS)
    local y, r, smax = dY:to_host(), dR:to_host(), dS:to_host()
    local m, s, all = {}, {}, -math.huge -- per row (row-major host layout: X[row][c] = x[row * 16 + c])
    for row = 0, 3 do
      m[row], s[row] = -math.huge, 0
      for c = 0, 15 do m[row] = math.max(m[row], x[row * 16 + c]) end
      for c = 0, 15 do s[row] = s[row] + 2 ^ ((x[row * 16 + c] - m[row]) * LOG2E) end
      all = math.max(all, m[row])
    end
    assert.are.equal(all, smax[0])
    for i = 0, n - 1 do
      local row = math.floor(i / 16)
      local want = 2 ^ ((x[i] - m[row]) * LOG2E) / s[row]
      local got = bf16.to_number(y[i]) -- to_host gives bfloat16 bit patterns
      assert.is_true(math.abs(got - want) <= 1e-2 * want + 1e-6,
        ("Y[%d]: got %s, want %s"):format(i, tostring(got), tostring(want)))
    end
    for row = 0, 3 do
      local want = 0
      for c = 0, 15 do want = want + math.max(x[row * 16 + c], 0) end -- row-major host layout
      assert.is_true(math.abs(r[row] - want) <= 1e-4 * (1 + math.abs(want)),
        ("R[%d]: got %s, want %s"):format(row, tostring(r[row]), tostring(want)))
    end
    for _, t in ipairs({ dX, dY, dR, dS }) do t:free() end
  end)
end)

describe("TensorSSA: broadcasting, slicing, nested reductions, compose, cross-lane reductions", function()
  local tr, tssa = require("cute.trace"), require("cute.tensor_ssa")
  local describe_shape = require("cute.tensor").describe
  local _ = cute._
  local function cvs(w)
    local o = {}
    for i = 0, w:size() - 1 do o[#o + 1] = w[i].cv end
    return describe_shape(w.shape) .. ":" .. table.concat(o, ",")
  end
  local function labels(shape, n, f)
    local vals = {}
    for i = 0, n - 1 do vals[i] = tr.const(tr.T.I32, f(i)) end
    return tssa.make(vals, shape, n)
  end
  local function on_constants(body)
    local got = {}
    local k = cute.kernel(function(X)
      body(got)
      X[0] = 0
    end, { name = "tssa_fold" })
    k:with({ arch = "sm_80" }):compile(ts({ 1 }, f32))
    return got
  end

  it("implicit broadcasting: modes aligned from the left, size-1 modes (nested too) repeat, scalars everywhere", function()
    local got = on_constants(function(got)
      local v = labels({ 2, 3 }, 6, function(i) return 10 * i + 1 end) -- (r, c) = 10 (r + 2 c) + 1
      got.rows = cvs(v + v:reduce(cute.ReductionOp.ADD, 0, { _, 1 }))        -- (2) against (2,3)
      got.cols = cvs(tssa.make(v:reduce(cute.ReductionOp.ADD, 0, { 1, _ })._vals, { 1, 3 }, 3) + v) -- (1,3) on the left
      got.one = cvs(v * labels(1, 1, function() return 2 end))              -- a 1-element value
      local w = labels({ { 2, 2 }, 2 }, 8, function(i) return i end)
      got.nested = cvs(w - labels({ { 1, 2 }, 1 }, 2, function(i) return 100 * (i + 1) end)) -- ((1,2),1) against ((2,2),2)
      got.rank1 = cvs(labels({ { 2, 2 } }, 4, function(i) return i end) + labels({ { 2, 2 }, 2 }, 8, function(i) return 10 * i end))
      got.scalar = cvs(3 - v)
      got.err = select(2, pcall(function() return v + w end))
    end)
    assert.are.equal("(2,3):64,104,84,124,104,144", got.rows)
    assert.are.equal("(2,3):13,23,73,83,133,143", got.cols)
    assert.are.equal("(2,3):2,22,42,62,82,102", got.one)
    assert.are.equal("((2,2),2):-100,-99,-198,-197,-96,-95,-194,-193", got.nested)
    assert.are.equal("((2,2),2):0,11,22,33,40,51,62,73", got.rank1)
    assert.are.equal("(2,3):2,-8,-18,-28,-38,-48", got.scalar)
    assert.truthy(util.has(tostring(got.err), "TensorSSA +: shapes (2,3) and ((2,2),2) differ and do not broadcast (modes 2 and (2,2)"),
      tostring(got.err))
  end)

  it("slicing v[{...}] with cute._ keeps modes (nested coordinates too); no cute._ gives the element", function()
    local got = on_constants(function(got)
      local v = labels({ 2, 3 }, 6, function(i) return 10 * i + 1 end)
      got.col = cvs(v[{ _, 1 }])
      got.row = cvs(v[{ 1, _ }])
      got.elem = v[{ 1, 2 }].cv
      local w = labels({ { 2, 2 }, 2, 2 }, 16, function(i) return i end)
      got.nested = cvs(w[{ { _, 1 }, 0, _ }])
      got.mode = cvs(w[{ 3, _, 1 }])       -- an integer into a nested mode: its column-major index
      got.whole = cvs(w[{ _, 1, _ }])
    end)
    assert.are.equal("2:21,31", got.col)
    assert.are.equal("3:11,31,51", got.row)
    assert.are.equal(51, got.elem)
    assert.are.equal("(2,2):2,3,10,11", got.nested)
    assert.are.equal("2:11,15", got.mode)
    assert.are.equal("((2,2),2):4,5,6,7,12,13,14,15", got.whole)
  end)

  it("nested reduction profiles keep the nested modes marked cute._; v:compose(layout) views a value through a layout", function()
    local got = on_constants(function(got)
      local w = labels({ { 2, 2 }, 2, 2 }, 16, function(i) return i end)
      got.rows = cvs(w:reduce(cute.ReductionOp.ADD, 0, { { 1, _ }, _, 1 }))
      got.inner = cvs(w:reduce(cute.ReductionOp.MAX, -1, { { _, 1 }, 1, _ }))
      local mn = w:compose(cute.make_layout({ { 2, 2 }, { 2, 2 } }, { { 2, 4 }, { 1, 8 } })) -- rows (v1, m), cols (v0, n)
      got.mn = cvs(mn)
      local r = mn:reduce(cute.ReductionOp.MAX, -1, { _, 1 })
      got.mnr = cvs(r) .. " " .. cvs(mn - r)
      got.full = cvs(cute.full({ 2, 2 }, 7, cute.int32)) .. " " .. tostring(cute.zeros_like(mn, cute.float32))
    end)
    assert.are.equal("(2,2):18,26,34,42", got.rows)
    assert.are.equal("(2,2):6,7,14,15", got.inner)
    assert.are.equal("((2,2),(2,2)):0,2,4,6,1,3,5,7,8,10,12,14,9,11,13,15", got.mn)
    assert.are.equal("((2,2)):9,11,13,15 ((2,2),(2,2)):-9,-9,-9,-9,-8,-8,-8,-8,-1,-1,-1,-1,0,0,0,0", got.mnr)
    assert.are.equal("(2,2):7,7,7,7 TensorSSA<float32, ((2,2),(2,2))>", got.full)
  end)

  it("register tensors read and written whole: copy in, copy across, load, compose, store, element write, copy out (optimised LLVM IR)", function()
    local tm = tiled_mma()
    local k = cute.kernel(function(X, Y)
      local r = tm:make_fragment_C({ 4 })
      cute.copy(X, r)
      local r2 = tm:make_fragment_C({ 4 })
      cute.copy(r, r2)
      local w = tm:make_fragment_C({ 2, 2 })
      w:store(r2:load():compose(cute.make_layout({ 2, 2 }, { 2, 1 })) + 0.5) -- the transpose of a 2 x 2: 0, 2, 1, 3
      w[1] = w[1] * 3.0
      cute.copy(w, Y)
    end, { name = "tssa_whole" })
    local r = k:with({ arch = "sm_80", opt_level = 3 }):compile(ts({ 4 }, f32), ts({ 4 }, f32))
    -- evaluate the kernel's straight-line IR symbolically
    local val, ptr, out = {}, { ["%X"] = { "X", 0 }, ["%Y"] = { "Y", 0 } }, {}
    for line in r.llvm:match("define.-\n}"):gmatch("[^\n]+") do
      local d, base, off = line:match("(%%%w+) = getelementptr inbounds i8, ptr addrspace%(1%) (%%%w+), i64 (%d+)")
      if d then ptr[d] = { ptr[base][1], tonumber(off) / 4 } end
      local l, p = line:match("(%%%w+) = load float, ptr addrspace%(1%) (%%%w+)")
      if l then val[l] = ptr[p][1] .. ptr[p][2] end
      local a, op, x, c = line:match("(%%%w+) = (f%a+) float (%%%w+), ([%d%.e%+%-]+)")
      if a then val[a] = ("(%s %s %g)"):format(val[x], op == "fadd" and "+" or "*", tonumber(c)) end
      local sv, sp = line:match("store float (%%%w+), ptr addrspace%(1%) (%%%w+)")
      if sv then out[ptr[sp][2]] = val[sv] end
    end
    assert.are.same({ [0] = "(X0 + 0.5)", "((X2 + 0.5) * 3)", "(X1 + 0.5)", "(X3 + 0.5)" }, out, r.llvm)
  end)

  it("cute.threadquad_reduce: two butterfly shuffles (lane xor 2, xor 1) per element, max.f32 / add.f32", function()
    local k = cute.kernel(function(X, Y, Z)
      local v = X:load()                                                  -- (2,4)
      Y:store(cute.threadquad_reduce_max(v:reduce(cute.ReductionOp.MAX, -math.huge, { _, 1 }))) -- (2)
      Z[0] = cute.threadquad_reduce(v:reduce(cute.ReductionOp.ADD, 0.0, 0), cute.ReductionOp.ADD)
    end, { name = "tssa_quad" })
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local r = k:with({ arch = arch, use_ptxas = PTXAS, opt_level = 3 }):compile(ts({ 2, 4 }, f32), ts({ 2 }, f32), ts({ 1 }, f32))
      local _, x2 = r.ptx:gsub("shfl%.sync%.bfly%.b32%s+%%[rf]%d+, %%[rf]%d+, 2, 31, %-1;", "")
      local _, x1 = r.ptx:gsub("shfl%.sync%.bfly%.b32%s+%%[rf]%d+, %%[rf]%d+, 1, 31, %-1;", "")
      assert.are.same({ 3, 3 }, { x2, x1 }, r.ptx)
      if PTXAS then assert.are.equal(0, r.info.spill_stores, arch) end
    end
  end)

  it("errors at the user's line: slices, compose, lane reductions, nested profiles", function()
    local function trace(body)
      return err_of(cute.kernel(body, { name = "tssa_bad" }), ts({ 2, 3 }, f32))
    end
    local e = trace(function(X) local s = X:load()[{ 2, _ }] end) -- MARK_SL1
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_SL1")), e)
    assert.truthy(util.has(e, "TensorSSA slice: coordinate (2,_) of (2,3): 2 is not an integer in 0..1 (or cute._)"), e)
    e = trace(function(X) local s = X:load()[{ _ }] end) -- MARK_SL2
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_SL2")), e)
    assert.truthy(util.has(e, "has 1 entries where the shape (2,3) has 2 modes"), e)
    e = trace(function(X) local s = X:load():compose(cute.make_layout(4, 2)) end) -- MARK_CMP
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_CMP")), e)
    assert.truthy(util.has(e, "TensorSSA:compose: the layout 4:2 maps 3 to 6, outside the value's 0..5"), e)
    e = trace(function(X) local s = cute.butterfly_reduce(X:load(), cute.ReductionOp.ADD, { 3 }) end) -- MARK_BF
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_BF")), e)
    assert.truthy(util.has(e, "cute.butterfly_reduce: lane offset 3 is not a power of two in 1..16"), e)
    e = trace(function(X) local s = X:load():reduce(cute.ReductionOp.ADD, 0.0, { { 1, _ }, 1 }) end) -- MARK_NP
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_NP")), e)
    assert.truthy(util.has(e, "TensorSSA:reduce: reduction_profile ((1,_),1): the entry (1,_) at mode 0 has 2 entries " ..
      "where that mode of the shape (2,3), 2, has 1"), e)
    e = trace(function(X) local s = cute.full({ 2, 2 }, "x", cute.float32) end) -- MARK_FULL
    assert.truthy(util.has(e, THIS .. ":" .. util.line_of(THIS, "MARK_FULL")), e)
    assert.truthy(util.has(e, "cute.full: value x is not a number or a traced scalar"), e)
  end)

  gpu_it("quad reductions on random data: each lane's row max and row sum over its quad of lanes", function()
    local k = cute.kernel(function(X, Y, Z)
      local lane = cute.arch.thread_idx()
      local v = X[{ lane, _ }]:load() * 1.0                      -- (4): this lane's four values
      Y[{ lane, _ }]:store(cute.threadquad_reduce_max(v))
      Z[{ lane, _ }]:store(cute.threadquad_reduce_sum(v))
    end, { name = "tssa_quad_gpu" })
    local x = util.rand_floats(128, -4, 4)
    local host = {}
    for i = 0, 127 do host[i + 1] = x[i] end
    local dX, dY, dZ = cute.from_host(host, f32, { 32, 4 }), cute.zeros({ 32, 4 }, f32), cute.zeros({ 32, 4 }, f32)
    k:launch{ grid = 1, block = 32 }(dX, dY, dZ)
    local y, z = dY:to_host(), dZ:to_host()
    for l = 0, 31 do
      for j = 0, 3 do
        local g = l - l % 4
        local mx, sm = -math.huge, 0
        for q = g, g + 3 do mx = math.max(mx, x[q * 4 + j]); sm = sm + x[q * 4 + j] end
        assert.are.equal(mx, y[l * 4 + j], ("max lane %d value %d"):format(l, j))
        assert.is_true(math.abs(z[l * 4 + j] - sm) <= 1e-5 * (1 + math.abs(sm)), ("sum lane %d value %d"):format(l, j))
      end
    end
    for _, t in ipairs({ dX, dY, dZ }) do t:free() end
  end)
end)
