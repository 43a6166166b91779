-- Every vector of the CuTe C++ oracle (spec/data/layout_public.jsonl)
-- through the Lua API: parse the arguments, call cute.<op>, print the result in
-- canonical notation and compare.  One test per vector, named by op and args.
local cute = require("cute")
local json = dofile("spec/support/minijson.lua")

local path = os.getenv("CUTE_ORACLE") or "spec/data/layout_public.jsonl"

local function arg_value(a)
  if type(a) == "number" then return a end
  return cute.parse(a)
end

local function result_text(v)
  if type(v) == "number" then return ("%d"):format(v) end
  return cute.tostring(v)
end

describe("layout oracle (CuTe C++)", function()
  local f = io.open(path, "r")
  it("has the vector file " .. path, function()
    assert.is_truthy(f, "cannot open " .. path .. " (set CUTE_ORACLE)")
  end)
  if not f then return end
  local n = 0
  for line in f:lines() do
    if line:match("%S") then
      n = n + 1
      local vec = json.decode(line)
      local label = ("#%d %s(%s)"):format(n, vec.op, table.concat((function()
        local t = {}
        for i, a in ipairs(vec.args) do t[i] = type(a) == "number" and tostring(a) or a end
        return t
      end)(), ", "))
      it(label, function()
        local fn = cute[vec.op]
        assert.is_function(fn, "no cute." .. vec.op)
        local args = {}
        for i, a in ipairs(vec.args) do args[i] = arg_value(a) end
        if vec.op == "slice_and_offset" then
          local L, off = fn(unpack(args))
          assert.are.equal(vec.result[1], result_text(L))
          assert.are.equal(vec.result[2], off)
        else
          local r = fn(unpack(args, 1, #vec.args))
          local want = vec.result
          if type(want) == "number" then
            assert.are.equal(want, r)
          else
            assert.are.equal(want, result_text(r))
          end
        end
      end)
    end
  end
  f:close()
  it("read all vectors", function() assert.is_true(n > 3000, "only " .. n .. " vectors") end)
end)
