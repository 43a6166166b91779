-- Bad input never crashes and errors point at the user's line (issue 8, item 11):
--  * chunks a C host names "=name" are user code, not cute's own modules;
--  * a malformed cute_value built through the FFI gives a Lua error naming the
--    operation, never a read or write past its buffer.
local cute = require("cute")
local ffi = require("ffi")

-- the error of f(...), which must fail
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

describe("error locations", function()
  local KERNEL_ERR = [[
local cute = require("cute")
local k = cute.kernel(function(X, Y)
  local i = cute.arch.thread_idx()
  Y[i] = X[i] + nil
end)
local s = cute.tensor_spec({ 256 }, cute.float32)
return k:ir(s, s)
]]

  it("a kernel error in a chunk named '=myhost' points at myhost's line", function()
    local f = assert(load(KERNEL_ERR, "=myhost"))
    local e = err_of(f)
    assert.matches("^myhost:4: ", e)
    assert.matches("nil", e)
  end)

  it("a layout error in a '=name' chunk points at that chunk's line", function()
    local f = assert(load("local cute = require('cute')\n\nlocal n = cute.size({4, 0.5})\nreturn n", "=host.cfg"))
    local e = err_of(f)
    assert.matches("^host.cfg:3: ", e)
    assert.matches("cute.size", e, 1, true)
  end)

  it("files and unnamed chunks keep their own names", function()
    local path = os.tmpname() .. "_kernel.lua"
    local f = assert(io.open(path, "w"))
    f:write(KERNEL_ERR)
    f:close()
    local e = err_of(assert(loadfile(path)))
    os.remove(path)
    assert.are.equal(path .. ":4: ", e:sub(1, #path + 4))
    e = err_of(assert(load(KERNEL_ERR)))
    assert.matches('^%[string "local cute = require%("cute"%)..."%]:4: ', e)
  end)

  it("cute's own frames are never taken for the user's", function()
    -- the error is raised deep inside cute.layout, called from this file
    local e = err_of(function() return (cute.size({ 4, 0.5 })) end)
    assert.matches("robustness_spec.lua:%d+: cute.size", e)
  end)
end)

describe("malformed cute_value", function()
  local function good() return cute.make_layout({ 4, { 2, 3 } }, { 1, { 4, 8 } }) end

  -- a layout whose header or nodes were overwritten through the FFI
  local function broken(how)
    local L = good()
    how(L)
    return L
  end
  -- (entries are written `return (f(x))`, not tail calls, so that the
  -- calling line stays on the stack as it does in a user's script)
  local cases = {
    { "node count 10^9", function(L) L.n = 1000000000 end },
    { "node count 2^31-1", function(L) L.n = 2147483647 end },
    { "negative node count", function(L) L.n = -7 end },
    { "node count 129", function(L) L.n = 129 end },
    { "a span past the end", function(L) L.node[0].span = 100 end },
    { "a child count of 2^62", function(L) L.node[0].a = 2 ^ 62 end },
    { "a negative child count", function(L) L.node[2].a = -1 end },
    { "an unknown node kind", function(L) L.node[3].kind = 77 end },
    { "an unknown value type", function(L) L.type = 99 end },
  }

  for _, c in ipairs(cases) do
    local name, how = c[1], c[2]
    it(name .. ": cute.size fails with a Lua error", function()
      local e = err_of(function() return (cute.size(broken(how))) end)
      assert.matches("cute.size", e, 1, true)
      assert.matches("malformed", e, 1, true)
      assert.matches("robustness_spec.lua:%d+:", e)
    end)

    it(name .. ": every other entry point fails or answers, never crashes", function()
      local L = broken(how)
      local sw = cute.make_swizzle(1, 2, 3)
      local entry = {
        function() return (cute.cosize(L)) end,
        function() return (cute.shape(L)) end,
        function() return (cute.coalesce(L)) end,
        function() return (cute.composition(good(), L)) end,
        function() return (cute.logical_divide(good(), { L, cute._ })) end,
        function() return (L(3)) end,
        function() return (L(1, 2)) end,
        function() return (L({ 1, { 0, 1 } })) end,
        function() return (L == good()) end,
        function() return (good() == L) end,
        function() return (cute.make_composed_layout(sw, 0, L)) end,
        function() return (cute.print_layout(L)) end,
        function() return (L:rank()) end,
      }
      for k, f in ipairs(entry) do
        local ok, e = pcall(f)
        if not ok then
          assert.is_string(e, "entry " .. k)
          assert.matches("robustness_spec.lua:%d+:", e)
        end
      end
      assert.is_string(tostring(L))
    end)
  end

  it("a good layout still works after all that", function()
    local L = good()
    assert.are.equal(24, cute.size(L))
    assert.are.equal(L, good())
    assert.are.equal(1 + 4 * 1, L({ 1, { 1, 0 } }))
  end)

  it("a raw cute_value array passed to the C core directly is checked too", function()
    local C = require("cute.ffi").C
    local v = ffi.new("cute_value[1]")
    local out = ffi.new("cute_value")
    local err = ffi.new("cute_err[1]")
    v[0].type = C.CUTE_V_LAYOUT
    v[0].n = 1000000000
    assert.are_not.equal(0, C.cute_op(C.cute_op_lookup("size"), v, 1, out, nil, err))
    assert.matches("malformed", ffi.string(err[0].msg), 1, true)
    local crd, r = ffi.new("int64_t[1]"), ffi.new("int64_t[1]")
    assert.are_not.equal(0, C.cute_layout_crd2idx(v, crd, 1, r, err))
    assert.are.equal(-1, C.cute_layout_leaves(v, nil, nil, 4))
    local buf = ffi.new("char[64]")
    C.cute_format(v, buf, 64)
    assert.are.equal("<invalid>", ffi.string(buf))
  end)
end)
