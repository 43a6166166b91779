-- The tracing DSL without a GPU: kernels traced to IR text, compiled to PTX
-- (assembled by ptxas for sm_80 and sm_90a when it is present), and the errors
-- users see, located at their own Lua lines.
local cute = require("cute")
local ffi = require("ffi")
local C = require("cute.ffi").C
local _ = cute._
local f32 = cute.float32

local examples = dofile("examples/common.lua")
local has_ptxas = C.cute_ptxas_path() ~= nil
local THIS = "spec/dsl_spec.lua"

local function spec1(n, dt) return cute.tensor_spec({ n }, dt or f32) end

-- line number of the first line of this file containing `marker`
local function line_of(marker) return dofile("spec/support/util.lua").line_of(THIS, marker) end

local function trace_error(k, ...)
  local ok, e = pcall(k.ir, k, ...)
  assert.is_false(ok, "expected a trace error")
  return tostring(e)
end

describe("tracing to IR", function()
  it("vector add traces to the expected IR text", function()
    local k = cute.kernel(function(A, B, Cc)
      local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
      cute.if_then(i < cute.size(A), function() Cc[i] = A[i] + B[i] end)
    end, { name = "vadd" })
    local ir = k:ir(spec1(1024), spec1(1024), spec1(1024))
    -- stable parts of the text (golden): the signature, the ops, the structure
    assert.is_truthy(ir:find('kernel @vadd(%1: ptr.global.f32 noalias align=16 "A", ' ..
      '%2: ptr.global.f32 noalias align=16 "B", %3: ptr.global.f32 noalias align=16 "Cc")', 1, true), ir)
    -- the Lua parameter names reach the PTX
    local ptx = k:ptx(spec1(1024), spec1(1024), spec1(1024))
    assert.is_truthy(ptx:find(".param .u64 vadd_param_Cc", 1, true), ptx)
    assert.is_truthy(ir:find("sreg u32 ctaid.x", 1, true) or ir:find("ctaid.x", 1, true), ir)
    assert.is_truthy(ir:find("lt i1 %%%d+, 1024:i32"), ir)
    assert.is_truthy(ir:find("if %%%d+ {"), ir)
    assert.is_truthy(ir:find("add f32", 1, true), ir)
    assert.is_truthy(ir:find("loc \"" .. THIS .. "\" " .. line_of("Cc[i] = A[i] + B[i] end)"), 1, true), ir)
  end)

  it("compile-time constants specialise; runtime scalars become parameters", function()
    local k = cute.kernel(function(A, s, scale)
      local i = cute.arch.thread_idx()
      A[i] = A[i] * s + scale
    end)
    local ir1 = k:ir(spec1(64), 3, cute.Float32(2))
    assert.is_truthy(ir1:find(': f32 "scale"', 1, true), ir1)   -- runtime parameter
    assert.is_falsy(ir1:find('"s"', 1, true))                 -- 3 is folded in
    assert.is_truthy(ir1:find("3:i32", 1, true) or ir1:find("3.0:f32", 1, true), ir1)
  end)

  it("cute.range emits one loop; range_constexpr unrolls at trace time", function()
    local k = cute.kernel(function(A)
      local acc = cute.var(0.0, f32)
      for j in cute.range(0, 64, 4) do acc.value = acc.value + A[j] end
      for j in cute.range_constexpr(3) do acc.value = acc.value + j end
      A[0] = acc.value
    end)
    local ir = k:ir(spec1(64))
    local nfor = select(2, ir:gsub("= for i32", ""))
    assert.are.equal(1, nfor, ir)
    assert.is_truthy(ir:find("var f32", 1, true), ir)
    assert.are.equal(4, select(2, ir:gsub("vset", "")), ir) -- one in the loop, three unrolled
  end)

  it("dynamic tensors take their shape at launch", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      cute.if_then(i < cute.size(A, 0), function() A[{ i, 1 }] = 0.0 end)
    end)
    local ir = k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32)))
    assert.is_truthy(ir:find('"A_shape1"', 1, true), ir)
    assert.is_truthy(ir:find('"A_stride1"', 1, true), ir)
    assert.is_falsy(ir:find('"A_stride2"', 1, true)) -- unit stride stays static
  end)

  it("local_tile and local_partition index tiles with traced coordinates", function()
    local k = cute.kernel(function(A)
      local bx = cute.arch.block_idx()
      local t = cute.arch.thread_idx()
      local tile = cute.local_tile(A, { 32, 8 }, { bx, 0 })
      local mine = cute.local_partition(tile, cute.make_layout({ 8, 8 }, { 8, 1 }), t)
      for i in cute.range_constexpr(cute.size(mine)) do mine[i] = 1.0 end
    end)
    local ir = k:ir(cute.tensor_spec({ 128, 8 }, f32))
    assert.are.equal(4, select(2, ir:gsub("store ", "")), ir) -- (32*8)/64 elements per thread
  end)

  it("cute.dice on a kernel tensor keeps the modes paired with an integer (same data, no offset)", function()
    local seen
    local k = cute.kernel(function(A)
      local D = cute.dice(A, { 0, _ }) -- (8,16):(16,1) -> (8):(16)
      seen = tostring(D)
      D[3] = 1.0
    end)
    local ir = k:ir(cute.tensor_spec({ 8, 16 }, f32))
    assert.are.equal("tensor<f32, global, (8):(16)>", seen)
    assert.is_truthy(ir:find("gep ptr.global.f32 %%1, 48:i%d+"), ir)
  end)
end)

describe("code generation", function()
  local function compile(k, ...)
    local r = k:compile(...)
    assert.is_truthy(r.ptx:find(".entry", 1, true))
    return r
  end

  it("16-byte copies become v4 loads (read-only: .nc) and stores", function()
    local k = cute.kernel(function(A, B)
      local v = cute.arch.thread_idx()
      local r = cute.make_fragment(4, f32)
      cute.copy(cute.zipped_divide(A, { 4 })[{ _, v }], r)
      cute.copy(r, cute.zipped_divide(B, { 4 })[{ _, v }])
    end)
    local r = compile(k, spec1(1024), spec1(1024))
    assert.is_truthy(r.ptx:find("ld.global.nc.v4.f32", 1, true), r.ptx)
    assert.is_truthy(r.ptx:find("st.global.v4.f32", 1, true), r.ptx)
  end)

  it("shuffles, barriers and shared atomics reach the PTX", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(32, f32)
      local v = cute.arch.shuffle_sync_bfly(A[t], 16)
      cute.arch.atomic_add(s, t % 32, v, "cta")
      cute.arch.barrier(1, 128)
      A[t] = s[t % 32]
    end)
    local r = compile(k, spec1(128))
    assert.is_truthy(r.ptx:find("shfl.sync.bfly.b32", 1, true), r.ptx)
    assert.is_truthy(r.ptx:find("bar.sync 	1, 128", 1, true) or r.ptx:find("bar.sync%s+1,%s*128"), r.ptx)
    assert.is_truthy(r.ptx:find("atom[%w.]*%.shared%.add%.f32") or r.ptx:find("red[%w.]*%.shared%.add%.f32"), r.ptx)
  end)

  it("every example kernel compiles, and assembles with ptxas for sm_80 and sm_90a", function()
    for _, name in ipairs({ "vector_add", "saxpy", "reduce_sum", "transpose", "softmax", "sgemm_naive", "sgemm_tiled" }) do
      local k = examples.load_kernel(name)
      local args
      if name == "saxpy" then args = { cute.Float32(2), spec1(4096), spec1(4096) }
      elseif name == "reduce_sum" then args = { spec1(2 ^ 24), spec1(1) }
      elseif name == "transpose" then args = { cute.tensor_spec({ 4096, 4096 }, f32), cute.tensor_spec({ 4096, 4096 }, f32) }
      elseif name == "softmax" then args = { cute.tensor_spec({ 8192, 4096 }, f32), cute.tensor_spec({ 8192, 4096 }, f32) }
      elseif name:find("sgemm") then
        local S = name == "sgemm_naive" and 1024 or 4096
        args = { cute.tensor_spec({ S, S }, f32), cute.tensor_spec({ S, S }, f32), cute.tensor_spec({ S, S }, f32) }
      else args = { spec1(2 ^ 24), spec1(2 ^ 24), spec1(2 ^ 24) } end
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local r = k:with({ arch = arch, use_ptxas = has_ptxas }):compile(unpack(args))
        assert.is_truthy(r.ptx:find(".target " .. arch, 1, true), name .. " " .. arch)
        if has_ptxas then
          assert.is_truthy(r.cubin, name .. ": ptxas produced no cubin for " .. arch)
          assert.is_true(r.info.regs > 0, name)
          assert.are.equal(0, r.info.spill_stores, name .. " spills on " .. arch)
        end
      end
    end
    if not has_ptxas then pending("ptxas not found: PTX checked, not assembled") end
  end)
end)

describe("errors at the user's Lua line", function()
  it("a Lua `if` on a traced comparison", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      if i < 4 then A[i] = 1.0 end -- MARK-if
    end, { frontend = false }) -- the fallback (operator-level checks)
    local e = trace_error(k, spec1(16))
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK-if") .. ":", 1, true), e)
    assert.is_truthy(e:find("cute.if_then", 1, true), e)
  end)

  it("a traced value as a Lua for-loop bound", function()
    local k = cute.kernel(function(A)
      local n = cute.arch.thread_idx()
      for j = 1, n do A[j] = 0.0 end -- MARK-for
    end, { frontend = false }) -- the fallback (operator-level checks)
    local e = trace_error(k, spec1(16))
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK-for") .. ":", 1, true), e)
    assert.is_truthy(e:find("cute.range", 1, true), e)
  end)

  it("a value used after the loop that defined it", function()
    local k = cute.kernel(function(A)
      local last
      for j in cute.range(4) do last = A[j] end
      A[0] = last -- MARK-escape
    end, { frontend = false }) -- the fallback (operator-level checks)
    local e = trace_error(k, spec1(16))
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK-escape") .. ":", 1, true), e)
    assert.is_truthy(e:find("cute.var", 1, true), e)
  end)

  it("'/' on traced integers", function()
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      A[i / 2] = 1.0 -- MARK-div
    end)
    local e = trace_error(k, spec1(16))
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK-div") .. ":", 1, true), e)
    assert.is_truthy(e:find("cute.div", 1, true), e)
  end)

  it("break out of cute.range", function()
    local k = cute.kernel(function(A)
      for j in cute.range(4) do -- MARK-break
        A[j] = 1.0
        break
      end
    end, { frontend = false }) -- the fallback (operator-level checks)
    local e = trace_error(k, spec1(16))
    assert.is_truthy(e:find("break", 1, true), e)
    assert.is_truthy(e:find(tostring(line_of("MARK-break")), 1, true), e)
  end)

  it("tensor coordinate of the wrong rank", function()
    local k = cute.kernel(function(A)
      A[{ 1, 2, 3 }] = 1.0 -- MARK-rank
    end)
    local e = trace_error(k, cute.tensor_spec({ 4, 4 }, f32))
    assert.is_truthy(e:find(THIS .. ":" .. line_of("MARK-rank") .. ":", 1, true), e)
    assert.is_truthy(e:find("rank", 1, true), e)
  end)

  it("kernel-only operations outside a kernel", function()
    local ok, e = pcall(cute.arch.thread_idx)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("inside a kernel", 1, true), tostring(e))
  end)

  it("bad launch configuration", function()
    local k = cute.kernel(function(A) A[0] = 1.0 end)
    local ok, e = pcall(function() k:launch{ grid = 0, block = 32 }(spec1(4)) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("grid", 1, true), tostring(e))
  end)
end)
