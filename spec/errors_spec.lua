-- One error path: a representative error of each module names the operation
-- and the offending value, and is located at the user's line (this file),
-- whatever the call depth: directly, through cute's wrappers (init.lua's
-- dispatch, merged names), through the C status check, and through a pcall
-- that re-raises.  No GPU needed.
local cute = require("cute")
local ffi = require("ffi")
local IR = require("cute.ir")
local util = dofile("spec/support/util.lua")
local THIS = "spec/errors_spec.lua"
local f32 = cute.float32
local _ = cute._

-- the error of f(), which must fail
local function err_of(f)
  local ok, e = pcall(f)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

-- e starts at this file's line of marker and contains every string in `has`
local function located(e, marker, has)
  local where = THIS .. ":" .. util.line_of(THIS, marker) .. ": "
  assert.is_truthy(e:find(where, 1, true) == 1 or e:find("/" .. where, 1, true), e)
  assert.equal(1, select(2, e:gsub("errors_spec%.lua:%d+:", "")), "located once: " .. e)
  for _, s in ipairs(has) do assert.is_truthy(util.has(e, s), ("%q not in %s"):format(s, e)) end
end

describe("errors at the user's line, naming the operation and the value", function()
  it("runtime: an argument error (before any driver call)", function()
    local e = err_of(function()
      local d = cute.device(-1) -- MARK-runtime
      return d
    end)
    located(e, "MARK-runtime", { "cute.device", "-1" })
  end)

  it("memory: a bad shape and a bad element", function()
    local e = err_of(function()
      local t = cute.empty({ 4, 0 }, f32) -- MARK-memory-shape
      return t
    end)
    located(e, "MARK-memory-shape", { "cute.empty", "{4,0}", "dimension 2" })
    e = err_of(function()
      local t = cute.from_host({ 1, "x" }, f32) -- MARK-memory-elem
      return t
    end)
    located(e, "MARK-memory-elem", { "cute.from_host", "element 2", "string" })
  end)

  it("dtype: an unknown dtype name", function()
    local e = err_of(function()
      local t = cute.zeros({ 4 }, "float7") -- MARK-dtype
      return t
    end)
    located(e, "MARK-dtype", { "cute.zeros", "float7", "not a dtype" })
  end)

  it("layout: a Lua-side check and a C status (cute_parse) through cf.check", function()
    local e = err_of(function()
      local L = cute.make_layout({ 4, 2 }, { 1 }) -- MARK-layout-lua
      return L
    end)
    located(e, "MARK-layout-lua", { "cute.make_layout", "(4,2)", "(1)" })
    e = err_of(function()
      local v = cute.parse("(4,") -- MARK-layout-c
      return v
    end)
    located(e, "MARK-layout-c", { "(4," })
    e = err_of(function()
      local v = cute.composition(cute.make_layout({ 4, 2 }), { 3, 5, 7 }) -- MARK-layout-op
      return v
    end)
    located(e, "MARK-layout-op", { "composition" })
  end)

  it("layout: through a pcall that re-raises (make_layout without strides, print_layout)", function()
    local e = err_of(function()
      local L = cute.make_layout({ 4, -2 }) -- MARK-layout-pcall
      return L
    end)
    located(e, "MARK-layout-pcall", { "make_layout", "-2" })
    e = err_of(function()
      cute.print_layout(cute.make_layout({ 2, 2, 2 })) -- MARK-print
    end)
    located(e, "MARK-print", { "cute.print_layout", "rank 3" })
  end)

  it("trace: a kernel-only operation outside a kernel, through init.lua's merged name", function()
    local e = err_of(function()
      local t = cute.arch.thread_idx() -- MARK-trace
      return t
    end)
    located(e, "MARK-trace", { "inside a kernel" })
  end)

  it("tensor and init.lua's dispatch: a coordinate of the wrong rank, a tiler that does not fit", function()
    local k = cute.kernel(function(A)
      A[{ 1, 2, 3 }] = 1.0 -- MARK-tensor
    end)
    local e = err_of(function() return k:ir(cute.tensor_spec({ 4, 4 }, f32)) end)
    located(e, "MARK-tensor", { "(1,2,3)", "rank 3", "(4,4)" })
    local k2 = cute.kernel(function(A)
      local t = cute.local_tile(A, { 3, 5, 7 }, { 0, 0 }) -- MARK-dispatch
      t[0] = 1.0
    end)
    e = err_of(function() return k2:ir(cute.tensor_spec({ 4, 4 }, f32)) end)
    located(e, "MARK-dispatch", { "(3,5,7)" })
  end)

  it("arch: a bad scope names the value", function()
    local k = cute.kernel(function(A)
      cute.arch.fence("planet") -- MARK-arch
      A[0] = 1.0
    end)
    local e = err_of(function() return k:ir(cute.tensor_spec({ 4 }, f32)) end)
    located(e, "MARK-arch", { "planet", "scope" })
  end)

  it("arith: a fold of Lua numbers through cute.* (a pcall-free path since the one error path)", function()
    local e = err_of(function()
      local x = cute.band(1.5, 3) -- MARK-arith
      return x
    end)
    located(e, "MARK-arith", { "cute.band", "1.5", "not an integer" })
  end)

  it("ir builder: the sticky IR error after a builder call, and an unknown name", function()
    local m = IR.new()
    m:func("k", "kernel")
    local a = m:param("f32", "a")
    local e = err_of(function()
      local r = m:add(a, 12345) -- MARK-ir-sticky
      return r
    end)
    located(e, "MARK-ir-sticky", { "12345" })
    local m2 = IR.new()
    e = err_of(function()
      local t = m2:type("f33") -- MARK-ir-type
      return t
    end)
    located(e, "MARK-ir-type", { "f33" })
    e = err_of(function()
      local r = m2:emit("frobnicate") -- MARK-ir-op
      return r
    end)
    located(e, "MARK-ir-op", { "cute.ir", "frobnicate" })
    e = err_of(function()
      local p = IR.parse("kernel @k( {") -- MARK-ir-parse
      return p
    end)
    located(e, "MARK-ir-parse", {})
  end)

  it("a kernel's error re-raised through the front end's retry loop keeps the kernel's line", function()
    local k = cute.kernel(function(A, n)
      local s = 0
      for i in cute.range(n) do s = s + A[i] end
      A[0] = s + cute.band(2.5, 1) -- MARK-retry
    end)
    local e = err_of(function() return k:ir(cute.tensor_spec({ 4 }, f32), cute.Int32(4)) end)
    located(e, "MARK-retry", { "cute.band", "2.5" })
  end)
end)

describe("the library raises with no numeric error level", function()
  it("no error(msg, <level>) in lua/cute/ outside cute.ffi's helpers and the user's own error()", function()
    local p = io.popen("ls lua/cute/*.lua")
    for file in p:lines() do
      local i = 0
      for line in io.lines(file) do
        i = i + 1
        local code = line:gsub("%-%-.*$", "")
        if code:find("[^%w_.:]error%(") or code:find("^error%(") then
          local ok = file:find("/ffi%.lua$") or file:find("/lua_parse%.lua$")
            or (file:find("/control%.lua$") and code:find("error%(msg, l")) -- RT:error: the user's level
          assert.is_truthy(ok, ("%s:%d raises with error(): %s"):format(file, i, line))
        end
      end
    end
    p:close()
  end)
end)
