-- Specialisation keys and the launch path without a GPU (docs/DSL.md
-- "Specialisation keys"): what makes a kernel binary (tensor signatures, the
-- overlap pattern of the tensor arguments, compile-time values by value), the
-- argument-count and kind checks of every entry point, and the host buffers of
-- the runtime.  Launches go through the real cache and generated launchers;
-- only the module build (trace + compile + load) and the driver's launch call
-- are replaced by fakes that record what would have run.
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")
local C = require("cute.ffi").C
local f32 = cute.float32
local THIS = "spec/specialise_spec.lua"

-- line number of the first line of this file containing `marker`
local function line_of(marker) return dofile("spec/support/util.lua").line_of(THIS, marker) end

local function has(s, sub) return s ~= nil and s:find(sub, 1, true) ~= nil end
local count = dofile("spec/support/util.lua").count_plain

-- the fake driver: records each launch (the entry's fake fn holds its IR)
local launches = {}
local fake_driver = {
  cute_cuda_launch = function(fn, gx, gy, gz, bx, by, bz, smem, stream, params, err)
    launches[#launches + 1] = { fn = fn, grid = { gx, gy, gz }, block = { bx, by, bz }, smem = smem }
    return 0
  end,
  cute_cuda_launch_cluster = function(fn, gx, gy, gz, bx, by, bz, cx, cy, cz, smem, stream, params, err)
    launches[#launches + 1] = { fn = fn, grid = { gx, gy, gz }, block = { bx, by, bz }, smem = smem }
    return 0
  end,
  cute_cuda_func_set_max_dynamic_smem = function() return 0 end,
}

-- a kernel whose build traces for real but loads nothing: builds[i] is the IR
-- text of the i-th binary
local function fake(fn)
  local k = cute.kernel(fn)
  k.builds = {}
  k._build = function(self, args, nargs)
    local ir = self:trace(unpack(args, 1, nargs))
    local text = ffi.string(C.cute_ir_print(ir))
    self.builds[#self.builds + 1] = text
    return { fn = { ir = text }, fill = function() end, ptrs = {}, max_dyn_smem = 48 * 1024, dyn_smem = 0 }
  end
  return k
end

-- device-tensor descriptors at made-up addresses (what the cache reads of a tensor)
local function dev(ptr, n, dt) return { ptr = ptr, shape = { n }, strides = { 1 }, dtype = dt or f32 } end
local cfg = { grid = 1, block = 32 }
local function last_ir() return launches[#launches].fn.ir end

local inplace = function(X, Y)
  local i = cute.arch.thread_idx()
  Y[i] = X[i] + 1
  Y[i] = Y[i] + X[i]
end

setup(function() K._use_driver(fake_driver) end)
teardown(function() K._use_driver(nil) end)
before_each(function() launches = {} end)

describe("aliasing is part of the specialisation", function()
  it("k(A, B) then k(A, A): a second binary without noalias; each call runs its own", function()
    local k = fake(inplace)
    local A, B = dev(4096, 256), dev(8192, 256)
    k(cfg, A, B)
    k(cfg, A, B)
    assert.equal(1, #k.builds)
    assert.equal(2, count(last_ir(), "noalias"))
    k(cfg, A, A)
    assert.equal(2, #k.builds)
    assert.equal(0, count(last_ir(), "noalias"))
    k(cfg, A, A)                       -- the cached aliased binary
    assert.equal(2, #k.builds)
    assert.equal(0, count(last_ir(), "noalias"))
    k(cfg, A, B)                       -- and back to the first
    assert.equal(2, #k.builds)
    assert.equal(2, count(last_ir(), "noalias"))
    assert.equal(5, #launches)
  end)

  it("overlapping views of one allocation alias; disjoint ones do not", function()
    local k = fake(inplace)
    local A = dev(4096, 64)                       -- [4096, 4352)
    local A_tail = dev(4096 + 64 * 4, 64)         -- [4352, 4608): adjacent, disjoint
    local A_mid = dev(4096 + 32 * 4, 64)          -- [4224, 4480): overlaps both
    k(cfg, A, A_tail)
    assert.equal(2, count(last_ir(), "noalias"))
    k(cfg, A, A_mid)
    assert.equal(0, count(last_ir(), "noalias"))
    k(cfg, A_mid, A_tail)
    assert.equal(0, count(last_ir(), "noalias"))
    assert.equal(2, #k.builds)
    -- strided views: the extent covers every element reached
    local S = { ptr = 4096, shape = { 4 }, strides = { 64 }, dtype = f32 }  -- [4096, 4096 + 193*4)
    local T = dev(4096 + 100 * 4, 4)                                         -- inside that range
    local k2 = fake(inplace)
    k2(cfg, S, T)
    assert.equal(0, count(last_ir(), "noalias"))
  end)

  it("dynamic tensors: the overlap test reads their runtime shapes and strides", function()
    local k = fake(inplace)
    local A, B = dev(4096, 64), dev(4096 + 64 * 4, 64)         -- adjacent: [4096, 4352), [4352, 4608)
    k(cfg, cute.dynamic(A), cute.dynamic(B))
    assert.equal(2, count(last_ir(), "noalias"))
    k(cfg, cute.dynamic(A), cute.dynamic(A))
    assert.equal(0, count(last_ir(), "noalias"))
    -- the same signature (rank 1, unit stride), but A grown into B's range: overlap
    local A2 = dev(4096, 65)
    k(cfg, cute.dynamic(A2), cute.dynamic(B))
    assert.equal(0, count(last_ir(), "noalias"))
    -- a strided rank-2 view reaching past its first row
    local R = { ptr = 8192, shape = { 2, 4 }, strides = { 100, 1 }, dtype = f32 }   -- [8192, 8192 + 104*4)
    local k2 = fake(inplace)
    k2(cfg, cute.dynamic(R), cute.dynamic(dev(8192 + 100 * 4, 64, f32)))
    assert.equal(0, count(last_ir(), "noalias"))
    k2(cfg, cute.dynamic(R), cute.dynamic(dev(8192 + 104 * 4, 64, f32)))
    assert.equal(2, count(last_ir(), "noalias"))
    assert.equal(2, #k2.builds)
  end)

  it("only the tensors that overlap lose noalias", function()
    local k = fake(function(X, Y, Z)
      local i = cute.arch.thread_idx()
      Z[i] = X[i] + Y[i]
    end)
    local A, B = dev(4096, 64), dev(65536, 64)
    k(cfg, A, B, A)
    local ir = last_ir()
    assert.is_truthy(ir:find('"Y"', 1, true))
    assert.equal(1, count(ir, "noalias"))
    assert.is_truthy(ir:find('noalias align=16 "Y"', 1, true))
  end)

  it("k:ir / k:compile / k:ptx show the binary that runs for that pattern", function()
    local k = cute.kernel(inplace)
    local S1, S2 = cute.tensor_spec({ 256 }, f32), cute.tensor_spec({ 256 }, f32)
    assert.equal(2, count(k:ir(S1, S2), "noalias"))      -- distinct specs: no aliasing
    assert.equal(0, count(k:ir(S1, S1), "noalias"))      -- the same spec twice: aliasing
    assert.equal(0, count(k:ir(S1, cute.dynamic(S1)), "noalias"))
    local ptx_distinct, ptx_same = k:ptx(S1, S2), k:ptx(S1, S1)
    assert.is_true(count(ptx_distinct, "ld.global.nc") >= 1)
    assert.equal(0, count(ptx_same, "ld.global.nc"))
    assert.equal(0, count(k:compile(S1, S1).ptx, "ld.global.nc"))
    -- the in-place kernel reads X again after the store to Y when Y may be X
    assert.equal(2, count(ptx_same, "ld.global.f32"))
    assert.equal(0, count(ptx_distinct, "ld.global.f32"))
  end)

  it("tensor specs carry an address or an alias group", function()
    local k = cute.kernel(inplace)
    local P1 = cute.tensor_spec({ 64 }, f32, nil, { ptr = 4096 })
    local P2 = cute.tensor_spec({ 64 }, f32, nil, { ptr = 4096 + 128 })   -- overlaps P1
    local P3 = cute.tensor_spec({ 64 }, f32, nil, { ptr = 8192 })
    assert.equal(0, count(k:ir(P1, P2), "noalias"))
    assert.equal(2, count(k:ir(P1, P3), "noalias"))
    local G1 = cute.tensor_spec({ 64 }, f32, nil, { alias = "buf" })
    local G2 = cute.tensor_spec({ 64 }, f32, nil, { alias = "buf" })
    local G3 = cute.tensor_spec({ 64 }, f32, nil, { alias = "other" })
    assert.equal(0, count(k:ir(G1, G2), "noalias"))
    assert.equal(2, count(k:ir(G1, G3), "noalias"))
  end)

  it("a tensor_spec after a device tensor of the same signature: refused, not launched", function()
    local k = fake(inplace)
    local A, B = dev(4096, 256), dev(8192, 256)
    local S = cute.tensor_spec({ 256 }, f32)
    k(cfg, A, B); k(cfg, A, B)                      -- the fast path knows this signature
    assert.equal(K.tensor_sig(A), K.tensor_sig(S))
    local ok, e = pcall(function() k(cfg, S, B) end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "device address"), e)
    local freed = dev(0, 256)                       -- a freed runtime tensor has ptr 0
    ok, e = pcall(function() k(cfg, A, freed) end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "argument 2 (Y)"), e)
    assert.equal(2, #launches)
  end)

  it("a tensor without a device address cannot be launched", function()
    local k = fake(inplace)
    local S = cute.tensor_spec({ 256 }, f32)
    local ok, e = pcall(function()
      k(cfg, S, dev(4096, 256)) -- MARK-spec-launch
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-spec-launch")), e)
    assert.is_truthy(has(e, "argument 1 (X)"), e)
    assert.is_truthy(has(e, "device address"), e)
  end)
end)

describe("compile-time values are keyed by value", function()
  local scaled = function(X, conf)
    local i = cute.arch.thread_idx()
    X[i] = conf.scale * 2 + #conf.list
  end

  it("a config table mutated between launches runs the new value", function()
    local k = fake(scaled)
    local A = dev(4096, 64)
    local conf = { scale = 3, list = { 1 } }
    k(cfg, A, conf)
    assert.is_truthy(has(last_ir(), "7.0:f32"), last_ir())
    conf.scale = 5
    k(cfg, A, conf)
    assert.is_truthy(has(last_ir(), "11.0:f32"), last_ir())
    conf.list[2] = 0                     -- nested tables too
    k(cfg, A, conf)
    assert.is_truthy(has(last_ir(), "12.0:f32"), last_ir())
    assert.equal(3, k.traces)
  end)

  it("equal tables built at the call site trace once", function()
    local k = fake(scaled)
    local A = dev(4096, 64)
    for _ = 1, 5 do k(cfg, A, { scale = 3, list = { 1, 2 }, name = "x", flag = true }) end
    assert.equal(1, k.traces)
    k(cfg, A, { list = { 1, 2 }, flag = true, name = "x", scale = 3 })   -- same value, other order
    assert.equal(1, k.traces)
    k(cfg, A, { scale = 3, list = { 1, 2 }, name = "y", flag = true })
    assert.equal(2, k.traces)
    assert.equal(7, #launches)
  end)

  it("equal layouts built at the call site trace once; other layouts retrace", function()
    local k = fake(function(X, L)
      X[cute.arch.thread_idx()] = cute.size(L) + cute.cosize(L)
    end)
    local A = dev(4096, 64)
    for _ = 1, 4 do k(cfg, A, cute.make_layout({ 4, 8 })) end
    assert.equal(1, k.traces)
    k(cfg, A, cute.make_layout({ 4, 8 }, { 8, 1 }))
    assert.equal(2, k.traces)
    local sw = function(b)
      return cute.make_composed_layout(cute.make_swizzle(b, 4, 3), 0, cute.make_layout({ 8, 64 }, { 64, 1 }))
    end
    local ks = fake(function(X, L) X[cute.arch.thread_idx()] = L({ 1, 0 }) end)
    ks(cfg, A, sw(3)); ks(cfg, A, sw(3))
    assert.equal(1, ks.traces)
    ks(cfg, A, sw(2))
    assert.equal(2, ks.traces)
  end)

  it("dtypes and functions are constants: dtypes by name, functions by identity", function()
    local k = fake(function(X, dt, f) X[cute.arch.thread_idx()] = f(cute.Float32(1)):to(dt) end)
    local A = dev(4096, 64)
    local f, g = function(v) return v + 1 end, function(v) return v * 3 end
    k(cfg, A, f32, f); k(cfg, A, cute.float32, f)
    assert.equal(1, k.traces)
    k(cfg, A, f32, g)
    assert.equal(2, k.traces)
    k(cfg, A, cute.float16, g)
    assert.equal(3, k.traces)
  end)

  it("tables with dtype and shape fields that are not tensors are values", function()
    local k = fake(function(X, conf) X[cute.arch.thread_idx()] = #conf.shape + (conf.dtype == "half" and 1 or 0) end)
    local A = dev(4096, 64)
    k(cfg, A, { dtype = "half", shape = "row" })
    k(cfg, A, { dtype = "half", shape = "row" })
    assert.equal(1, k.traces)
    assert.is_truthy(has(last_ir(), "4.0:f32"), last_ir())
    k(cfg, A, { dtype = "full", shape = "col" })
    assert.equal(2, k.traces)
    assert.is_truthy(has(last_ir(), "3.0:f32"), last_ir())
  end)

  it("a table that contains itself is an error at the user's line", function()
    local k = fake(scaled)
    local conf = { scale = 1, list = {} }
    conf.list.back = conf
    local ok, e = pcall(function()
      k(cfg, dev(4096, 64), conf) -- MARK-cycle
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-cycle")), e)
    assert.is_truthy(has(e, "argument 2 (conf)"), e)
    assert.is_truthy(has(e, "contains itself"), e)
  end)

  it("keys of different kinds never meet", function()
    local k = fake(function(X, s) X[0] = s end)
    local A = dev(4096, 64)
    -- a number equal to a typed scalar's type code, and that typed scalar
    k(cfg, A, require("cute.trace").T.I32)
    k(cfg, A, cute.Int32(7))
    assert.equal(2, #k.builds)
    assert.is_truthy(has(last_ir(), '"s"'), last_ir())
    -- a string equal to a tensor's signature and that tensor
    local ks = fake(function(X, Y) X[0] = type(Y) == "string" and #Y or Y[0] end)
    local B = dev(8192, 64)
    ks(cfg, A, K.tensor_sig(B))
    ks(cfg, A, B)
    assert.equal(2, #ks.builds)
    assert.is_truthy(has(last_ir(), '"Y"'), last_ir())
    -- NaN is a key, and -0 is not 0
    k(cfg, A, 0 / 0); k(cfg, A, 0 / 0)
    assert.equal(3, #k.builds)
    k(cfg, A, 0); k(cfg, A, -0.0)
    assert.equal(5, #k.builds)
  end)
end)

describe("every part of the key retraces; an identical call does not", function()
  local copy = function(X, Y)
    local i = cute.arch.thread_idx()
    Y[i] = X[i]
  end
  -- k.traces after calling k with each argument list in turn
  local function traces_after(calls)
    local k = fake(copy)
    local out = {}
    for i, args in ipairs(calls) do
      k(cfg, unpack(args))
      out[i] = k.traces
    end
    return table.concat(out, " ")
  end
  local A, B = dev(4096, 64), dev(65536, 64)

  it("an identical call, with new tables describing the same tensors, does not retrace", function()
    assert.equal("1 1 1", traces_after({ { A, B }, { A, B }, { dev(4096, 64), dev(65536, 64) } }))
  end)

  it("argument dtypes", function()
    local Ah = dev(4096, 64, cute.float16)
    assert.equal("1 2 2 1", traces_after({ { A, B }, { Ah, B }, { Ah, B } }) .. " " .. traces_after({ { A, B } }))
    local k = fake(function(X, s) X[0] = cute.Float32(s) end)
    k(cfg, A, cute.Int32(1)); k(cfg, A, cute.Int32(2)); k(cfg, A, cute.Float16(1))
    k(cfg, A, cute.BFloat16(1)); k(cfg, A, cute.Float16(3))
    assert.equal(3, k.traces)
  end)

  it("static shapes and strides", function()
    local A2 = dev(4096, 32)
    local As = { ptr = 4096, shape = { 32 }, strides = { 2 }, dtype = f32 }
    local R = { ptr = 4096, shape = { 4, 8 }, strides = { 8, 1 }, dtype = f32 }
    local Rt = { ptr = 4096, shape = { 4, 8 }, strides = { 1, 4 }, dtype = f32 }
    assert.equal("1 2 3 3 4 5", traces_after({ { A, B }, { A2, B }, { As, B }, { As, B }, { R, B }, { Rt, B } }))
  end)

  it("the pointer's alignment class (16 bytes or not), not the pointer", function()
    local A4 = dev(4096 + 4, 64)
    assert.equal("1 1 2 2", traces_after({ { A, B }, { dev(4096 + 1024, 64), B }, { A4, B }, { dev(8192 + 4, 64), B } }))
    local k = fake(copy)
    k(cfg, A4, B)
    assert.equal(1, count(last_ir():match("^[^\n]*"), "align=16"), last_ir())   -- (the parameter list)
    k(cfg, A, B)
    assert.equal(2, count(last_ir():match("^[^\n]*"), "align=16"), last_ir())
  end)

  it("the aliasing pattern", function()
    assert.equal("1 2 2 1", traces_after({ { A, B }, { A, A }, { B, B } }) .. " " .. traces_after({ { B, A } }))
  end)

  it("which strides of a dynamic tensor are 1, and its index width", function()
    local R = { ptr = 4096, shape = { 4, 8 }, strides = { 8, 1 }, dtype = f32 }
    local R2 = { ptr = 4096, shape = { 6, 3 }, strides = { 3, 1 }, dtype = f32 }
    local Rt = { ptr = 4096, shape = { 8, 4 }, strides = { 1, 8 }, dtype = f32 }
    local Ro = { ptr = 4096, shape = { 8, 1 }, strides = { 1, 1 }, dtype = f32 }
    local D = cute.dynamic
    assert.equal("1 1 2 3 4", traces_after({ { D(R), B }, { D(R2), B }, { D(Rt), B }, { D(Ro), B },
      { D(R, { index_bits = 32 }), B } }))
  end)

  it("compile-time tables by value", function()
    local k = fake(function(X, conf) X[0] = conf.a end)
    local conf = { a = 1 }
    k(cfg, A, conf); k(cfg, A, { a = 1 })
    assert.equal(1, k.traces)
    conf.a = 2
    k(cfg, A, conf)
    assert.equal(2, k.traces)
  end)
end)

describe("argument counts and kinds", function()
  local k3 = function(X, Y, Z)
    local i = cute.arch.thread_idx()
    Z[i] = X[i] + Y[i]
  end

  it("too few and too many arguments: an error at the user's line naming the parameters", function()
    local k = fake(k3)
    local A, B, Cc, D = dev(4096, 64), dev(8192, 64), dev(16384, 64), dev(32768, 64)
    local ok, e = pcall(function()
      k(cfg, A, B) -- MARK-few
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-few") .. ":"), e)
    assert.is_truthy(has(e, "expected 3 arguments (X, Y, Z), got 2"), e)
    ok, e = pcall(function()
      k:launch(cfg)(A, B, Cc, D) -- MARK-many
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-many") .. ":"), e)
    assert.is_truthy(has(e, "expected 3 arguments (X, Y, Z), got 4"), e)
    assert.equal(0, #k.builds)
    k(cfg, A, B, Cc)
    assert.equal(1, #k.builds)
  end)

  it("every entry point checks the count", function()
    local k = fake(k3)
    local S = cute.tensor_spec({ 64 }, f32)
    for _, m in ipairs({ "ir", "compile", "ptx", "entry" }) do
      local ok, e = pcall(function()
        local r = k[m](k, S, S) -- MARK-entry
        return r
      end)
      assert.is_false(ok, m)
      assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-entry") .. ":"), m .. ": " .. tostring(e))
      assert.is_truthy(has(e, "expected 3 arguments (X, Y, Z), got 2"), m .. ": " .. tostring(e))
    end
  end)

  it("nil is a compile-time constant before the last argument, in either call order", function()
    local kopt = function(X, opt, Y)
      local i = cute.arch.thread_idx()
      Y[i] = X[i] * (opt or 1)
    end
    local A, B = dev(4096, 64), dev(8192, 64)
    for _, order in ipairs({ "nil first", "short first" }) do
      local k = fake(kopt)
      if order == "nil first" then k(cfg, A, nil, B) end
      local ok, e = pcall(function() k(cfg, A) end)
      launches = {}
      assert.is_false(ok)
      assert.is_truthy(has(e, "expected 3 arguments (X, opt, Y), got 1"), e)
      assert.is_falsy(has(e, "compare"), e)
      k(cfg, A, nil, B)
      k(cfg, A, nil, B, nil)       -- a trailing nil is no argument: the same call
      k(cfg, A, 2, B)
      assert.equal(2, #k.builds)
      assert.is_truthy(has(last_ir(), "2.0:f32"), last_ir())
      assert.equal(3, #launches)
      launches = {}
    end
  end)

  it("vararg kernels take at least their named parameters", function()
    local k = fake(function(X, ...)
      local n = select("#", ...)
      X[0] = n
    end)
    local ok, e = pcall(function() k(cfg) end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "expected at least 1 argument (X, ...), got 0"), e)
    k(cfg, dev(4096, 64), 1, 2)
    assert.is_truthy(has(last_ir(), "store"), last_ir())
  end)

  it("the kinds of the arguments and of the launch configuration", function()
    local k = fake(k3)
    local A, B, Cc = dev(4096, 64), dev(8192, 64), dev(16384, 64)
    local ok, e = pcall(function()
      k(cfg, A, coroutine.create(print), Cc) -- MARK-kind
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-kind") .. ":"), e)
    assert.is_truthy(has(e, "argument 2 (Y)"), e)
    assert.is_truthy(has(e, "thread"), e)
    ok, e = pcall(function() return k:ir(A, ffi.new("int[2]"), Cc) end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "argument 2 (Y)"), e)
    -- the configuration forgotten: the first tensor taken for it
    ok, e = pcall(function()
      k(A, B, Cc) -- MARK-cfg
    end)
    assert.is_false(ok)
    assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-cfg") .. ":"), e)
    assert.is_truthy(has(e, "launch configuration"), e)
    ok, e = pcall(function() k(32, A, B, Cc) end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "launch configuration"), e)
    -- a stream that is not one, on the miss path and on the fast path
    for _ = 1, 2 do
      ok, e = pcall(function()
        k({ grid = 1, block = 32, stream = 5 }, A, B, Cc) -- MARK-stream
      end)
      assert.is_false(ok)
      assert.is_truthy(has(e, THIS .. ":" .. line_of("MARK-stream") .. ":"), e)
      assert.is_truthy(has(e, "stream must be a cute.stream()"), e)
      k(cfg, A, B, Cc)
    end
    -- methods called with '.'
    ok, e = pcall(function() return k.ptx(cute.tensor_spec({ 64 }, f32)) end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "with ':'"), e)
    ok, e = pcall(function() cute.kernel(function() end, "name") end)
    assert.is_false(ok)
    assert.is_truthy(has(e, "opts must be a table"), e)
    assert.equal(1, #k.builds)
  end)
end)

describe("host buffers of any size", function()
  it("host_buffer allocates beyond ffi.new's 2 GiB limit", function()
    local rt = require("cute.runtime")
    local n = 2 ^ 29 + 16                              -- 2 GiB + 64 bytes of float32
    assert.is_false((pcall(ffi.new, "float[?]", n)))   -- what to_host used
    local buf = rt.host_buffer(n, f32)
    buf[0], buf[n - 1] = 1.5, -2.5
    assert.equal(1.5, buf[0]); assert.equal(-2.5, buf[n - 1])
    local small = rt.host_buffer(10, cute.int16)       -- small ones stay ffi arrays
    assert.equal(20, ffi.sizeof(small))
  end)
end)
