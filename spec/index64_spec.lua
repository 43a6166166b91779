-- 64-bit offsets (issue 8, item 5), the signature of cute.dynamic tensors
-- (item 2) and tensor errors and copies (item 11), checked on the IR and PTX
-- text of kernels compiled for cute.tensor_spec arguments (no GPU needed).
local cute = require("cute")
local kernel = require("cute.kernel")
local f16, bf16, f32, u8 = cute.float16, cute.bfloat16, cute.float32, cute.uint8

local function has(s, pat) return s:find(pat, 1, true) ~= nil end
local function count(s, pat) return select(2, s:gsub(pat:gsub("%p", "%%%0"), "")) end
-- the IR instructions on the kernel source line `line`
local function at_line(ir, line)
  local out, on = {}, false
  for l in ir:gmatch("[^\n]+") do
    local ln = l:match('^%s*loc ".-" (%d+)$')
    if ln then on = tonumber(ln) == line
    elseif on then out[#out + 1] = l end
  end
  return table.concat(out, "\n")
end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end
local this_file = debug.getinfo(1, "S").short_src

describe("64-bit offsets", function()
  it("a 65536 x 65536 f16 tensor indexed by traced coordinates uses i64 offset math", function()
    local line
    local k = cute.kernel(function(A)
      local b, t = cute.arch.block_idx(), cute.arch.thread_idx()
      line = debug.getinfo(1, "l").currentline + 1
      A[{ b, t }] = 1.0
    end)
    local ir = at_line(k:ir(cute.tensor_spec({ 65536, 65536 }, f16)), line)
    assert.is_true(has(ir, "mul i64"), ir)
    assert.is_true(has(ir, "65536:i64"), ir)
    assert.is_false(has(ir, "mul i32"), ir)
    assert.is_true(ir:find("gep ptr.global.f16 %%1, %%%d+") ~= nil, ir)
    -- the row index is widened before the multiply (row 32768 * 65536 = 2^31 must not wrap)
    local ptx = k:ptx(cute.tensor_spec({ 65536, 65536 }, f16))
    assert.is_true(ptx:find("mul%.wide%.[su]32") ~= nil or ptx:find("shl%.b64") ~= nil
      or ptx:find("mul%.lo%.s64") ~= nil, ptx)
  end)

  it("the last element of a 4096 x 1048576 bf16 tensor is at element 2^32 - 1, not -1", function()
    local line
    local k = cute.kernel(function(A)
      line = debug.getinfo(1, "l").currentline + 1
      A[{ 4095, 1048575 }] = 1.0
    end)
    local ir = at_line(k:ir(cute.tensor_spec({ 4096, 1048576 }, bf16)), line)
    assert.is_true(has(ir, "4294967295:i64"), ir)
    assert.is_false(has(ir, "-1:i32"), ir)
    -- and with traced coordinates: both widened
    local k2 = cute.kernel(function(A, r, c)
      line = debug.getinfo(1, "l").currentline + 1
      A[{ r, c }] = 1.0
    end)
    ir = at_line(k2:ir(cute.tensor_spec({ 4096, 1048576 }, bf16), cute.Int32(0), cute.Int32(0)), line)
    assert.are.equal(2, count(ir, "cvt i64"), ir)
    assert.is_true(has(ir, "1048576:i64"), ir)
  end)

  it("the PTX of a small static kernel stays 32-bit (mul.wide.s32, no 64-bit multiply)", function()
    local k = cute.kernel(function(A, B)
      local i = cute.arch.block_idx() * 256 + cute.arch.thread_idx()
      cute.if_then(i < cute.size(A), function() B[i] = A[i] * 2.0 end)
    end)
    local ir = k:ir(cute.tensor_spec({ 64, 1024 }, f32), cute.tensor_spec({ 64, 1024 }, f32))
    assert.is_false(has(ir, "i64"), ir)
    local ptx = k:ptx(cute.tensor_spec({ 64, 1024 }, f32), cute.tensor_spec({ 64, 1024 }, f32))
    assert.is_true(has(ptx, "mul.wide.s32"), ptx)
    assert.is_false(has(ptx, "mul.lo.s64"), ptx)
    assert.is_false(has(ptx, "cvt.s64.s32"), ptx)
  end)

  it("a static layout just below 2^31 keeps i32; its base offset pushes a view over", function()
    local line
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      line = debug.getinfo(1, "l").currentline + 1
      A[{ t, t }] = 1.0
    end)
    -- max offset (32767 * 65536) + 65535 = 2^31 - 1: i32 is exact
    local ir = at_line(k:ir(cute.tensor_spec({ 32768, 65536 }, f16)), line)
    assert.is_false(has(ir, "i64"), ir)
    -- one more row: offsets reach 2^31
    ir = at_line(k:ir(cute.tensor_spec({ 32769, 65536 }, f16)), line)
    assert.is_true(has(ir, "mul i64"), ir)
    -- a row of the big tensor: a small layout at a large base offset
    local k2 = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local row = A[{ 40000, cute._ }]
      line = debug.getinfo(1, "l").currentline + 1
      row[t] = 1.0
    end)
    ir = at_line(k2:ir(cute.tensor_spec({ 65536, 65536 }, f16)), line)
    assert.is_true(has(ir, "2621440000:i64"), ir) -- 40000 * 65536, not wrapped
    assert.is_true(has(ir, "cvt i64"), ir)
  end)

  it("an extent or stride beyond i32 is i64 math even where it adds no offset", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      A[{ t, t }] = 1.0
    end)
    local ir = k:ir(cute.tensor_spec({ 4, 1 }, f32, { 1, 2 ^ 40 }))
    assert.is_true(has(ir, "1099511627776:i64"), ir)
    ir = k:ir(cute.tensor_spec({ 4, 2 ^ 32 }, f32, { 1, 0 }))
    assert.is_true(has(ir, "cvt i64"), ir)
  end)

  it("cute.size of a 2^31-element tensor is an i64 value equal to 2^31", function()
    local got = {}
    local k = cute.kernel(function(A)
      local n = cute.size(A)
      got.is_value = cute.is_value ~= nil and cute.is_value(n) or type(n) == "cdata"
      got.t = type(n) == "cdata" and n:type_name() or type(n)
      got.v = type(n) == "cdata" and n.cv or n
      local m0 = cute.size(A, 0)
      got.m0 = m0
      A[0] = n
    end)
    k:ir(cute.tensor_spec({ 65536, 32768 }, u8))
    assert.is_true(got.is_value)
    assert.are.equal("i64", got.t)
    assert.are.equal(2 ^ 31, got.v)
    assert.are.equal(65536, got.m0) -- a mode that fits stays a Lua number
    -- a small tensor: a Lua number (usable by range_constexpr and Lua loops)
    k = cute.kernel(function(A) got.small = cute.size(A) end)
    k:ir(cute.tensor_spec({ 4, 8 }, f32))
    assert.are.equal(32, got.small)
  end)

  it("cute.size of a dynamic tensor is i64 (i32 with index_bits = 32); a bad mode is an error", function()
    local got = {}
    local k = cute.kernel(function(A)
      got.n = cute.size(A):type_name()
      got.m = cute.size(A, 1):type_name()
    end)
    k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32)))
    assert.are.same({ n = "i64", m = "i64" }, got)
    k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32), { index_bits = 32 }))
    assert.are.same({ n = "i32", m = "i32" }, got)
    local k2 = cute.kernel(function(A) local _ = cute.size(A, 2) end)
    local e = err_of(k2.ir, k2, cute.tensor_spec({ 8, 16 }, f32))
    assert.is_true(has(e, this_file), e)
    assert.is_true(has(e, "mode 2"), e)
  end)

  it("an explicit Int64 coordinate keeps its 64 bits", function()
    local line
    local k = cute.kernel(function(A, x)
      line = debug.getinfo(1, "l").currentline + 1
      A[x] = 1.0
    end)
    local ir = at_line(k:ir(cute.tensor_spec({ 1024 }, f32), cute.Int64(0)), line)
    assert.is_false(has(ir, "cvt i32"), ir)
    assert.is_true(ir:find("gep ptr.global.f32 %%1, %%2") ~= nil, ir)
    -- on a 2-D tensor too (the whole offset is i64); also u32 coordinates widen
    ir = at_line(k:ir(cute.tensor_spec({ 32, 32 }, f32), cute.Int64(0)), line)
    assert.is_false(has(ir, "cvt i32"), ir)
    assert.is_true(has(ir, "i64"), ir)
    ir = at_line(k:ir(cute.tensor_spec({ 32, 32 }, f32), cute.Uint32(0)), line)
    assert.is_true(has(ir, "cvt i64 %2"), ir)
    assert.is_false(has(ir, "cvt i32"), ir)
  end)

  it("dynamic extents are i64 parameters by default, i32 with index_bits = 32", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      A[{ t, t }] = 0.0
    end)
    local ir = k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32)))
    assert.is_true(has(ir, 'i64 "A_shape1"'), ir)
    assert.is_true(has(ir, 'i64 "A_stride1"'), ir)
    assert.is_true(has(ir, "mul i64"), ir)
    ir = k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32), { index_bits = 32 }))
    assert.is_true(has(ir, 'i32 "A_shape1"'), ir)
    assert.is_false(has(ir, "i64"), ir)
    -- 32-bit on a tensor that reaches past 2^31 - 1 is refused at the caller's line
    local e = err_of(cute.dynamic, cute.tensor_spec({ 65536, 65536 }, f16), { index_bits = 32 })
    assert.is_true(has(e, this_file), e)
    assert.is_true(has(e, "index_bits = 32"), e)
    e = err_of(cute.dynamic, cute.tensor_spec({ 8 }, f16), { index_bits = 16 })
    assert.is_true(has(e, "index_bits must be 32 or 64"), e)
  end)
end)

describe("cute.dynamic signatures", function()
  local sig = kernel.tensor_sig
  it("record which strides are 1 (row- vs column-major, rows of length 1 vs 7)", function()
    local rm = cute.dynamic(cute.tensor_spec({ 8, 16 }, f32))
    local cm = cute.dynamic(cute.tensor_spec({ 8, 16 }, f32, { 1, 8 }))
    assert.are_not.equal(sig(rm), sig(cm))
    local r1 = cute.dynamic(cute.tensor_spec({ 5, 1 }, f32))
    local r7 = cute.dynamic(cute.tensor_spec({ 5, 7 }, f32))
    assert.are_not.equal(sig(r1), sig(r7))
    -- same unit strides, other sizes: one signature (one compile serves both)
    assert.are.equal(sig(r7), sig(cute.dynamic(cute.tensor_spec({ 9, 3 }, f32))))
    -- the index width is part of it
    assert.are_not.equal(sig(r7), sig(cute.dynamic(cute.tensor_spec({ 5, 7 }, f32), { index_bits = 32 })))
  end)

  it("the two parameter plans differ: the IR of row- and column-major views", function()
    local k = cute.kernel(function(A, Out)
      local j = cute.arch.thread_idx()
      local s = cute.var(0.0)
      for i in cute.range(cute.size(A, 0)) do s.value = s.value + A[{ i, j }] end
      Out[j] = s.value
    end)
    local out = cute.tensor_spec({ 16 }, f32)
    local a = k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32)), out)
    local b = k:ir(cute.dynamic(cute.tensor_spec({ 8, 16 }, f32, { 1, 8 })), out)
    assert.are_not.equal(a, b)
    assert.is_true(has(a, '"A_stride1"') and not has(a, '"A_stride2"'), a)
    assert.is_true(has(b, '"A_stride2"') and not has(b, '"A_stride1"'), b)
  end)

  it("a cached signature follows the table: new strides, shape, dtype or pointer, or a copied table", function()
    local t = cute.tensor_spec({ 8, 16 }, f32)
    local s1 = sig(t)
    t.strides = { 1, 8 }
    local s2 = sig(t)
    assert.are_not.equal(s1, s2)
    t.shape = { 16, 8 }
    assert.are_not.equal(s2, sig(t))
    local s3 = sig(t)
    t.shape[2] = 9 -- edited in place
    assert.are_not.equal(s3, sig(t))
    t.strides[1] = 9
    assert.is_true(has(sig(t), "|16,9|9,8|"), sig(t))
    t.ptr = 2 -- no longer 16-byte aligned
    assert.is_true(has(sig(t), "|a1"), sig(t))
    local d = cute.dynamic(cute.tensor_spec({ 5, 7 }, f32))
    local sd = sig(d)
    local copy = {}
    for key, v in pairs(d) do copy[key] = v end -- carries _cute_sig along
    copy.strides = { 1, 5 }
    assert.are_not.equal(sd, sig(copy))
  end)
end)

describe("tensor errors and byte copies", function()
  it("a coordinate with extra entries prints the coordinate, at the user's line", function()
    local line
    local k = cute.kernel(function(A)
      local i = cute.arch.thread_idx()
      line = debug.getinfo(1, "l").currentline + 1
      A[{ { i, 1 }, 2 }] = 1.0
    end)
    local e = err_of(k.ir, k, cute.tensor_spec({ 4, 8 }, f32))
    assert.is_false(has(e, "table: 0x"), e)
    assert.is_true(has(e, "(i32,1)"), e)
    assert.is_true(has(e, this_file .. ":" .. line), e)
    local k2 = cute.kernel(function(A)
      line = debug.getinfo(1, "l").currentline + 1
      A[{ 1, 2, 3 }] = 1.0
    end)
    e = err_of(k2.ir, k2, cute.tensor_spec({ 4, 8 }, f32))
    assert.is_true(has(e, this_file .. ":" .. line), e)
    assert.is_true(has(e, "(1,2,3)"), e)
  end)

  it("cute.copy of 16 aligned u8 is one 16-byte access (8 bytes: one 8-byte access)", function()
    local k = cute.kernel(function(A, B)
      local s = cute.make_shared_tensor(cute.make_layout(16), u8)
      cute.copy(cute.local_tile(A, { 16 }, { 1 }), s)
      cute.arch.sync_threads()
      cute.copy(cute.local_tile(s, { 8 }, { 1 }), cute.local_tile(B, { 8 }, { 0 }))
    end)
    local ptx = k:ptx(cute.tensor_spec({ 64 }, u8), cute.tensor_spec({ 64 }, u8))
    assert.is_true(ptx:find("ld%.global%.nc%.v4%.[ub]32") ~= nil, ptx)
    assert.is_true(ptx:find("st%.shared%.v4%.[ub]32") ~= nil, ptx)
    assert.is_true(ptx:find("ld%.shared%.v2%.[ub]32") ~= nil, ptx)
    assert.is_true(ptx:find("st%.global%.v2%.[ub]32") ~= nil, ptx)
    assert.is_false(has(ptx, "ld.global.nc.u8"), ptx)
    -- other dtypes keep their lanes
    local k2 = cute.kernel(function(A, B) cute.copy(A, B) end)
    ptx = k2:ptx(cute.tensor_spec({ 8 }, f16), cute.tensor_spec({ 8 }, f16))
    assert.is_true(ptx:find("ld%.global%.nc%.v4%.[ub]32") ~= nil or has(ptx, "v8.") or has(ptx, "v4.b32"), ptx)
  end)
end)
