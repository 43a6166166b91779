-- tools/size_budget.sh: no source file over 1,000 lines (issue 9).
local function run(root)
  local p = io.popen("sh tools/size_budget.sh '" .. root .. "' 2>&1; echo \"rc=$?\"")
  local out = p:read("*a")
  p:close()
  return out
end

local function write(path, lines)
  local f = assert(io.open(path, "w"))
  for k = 1, lines do f:write("x", k, "\n") end
  f:close()
end

local function ready()
  local f = io.open("tools/size_budget.sh")
  if f then f:close() return true end
  pending("tools/size_budget.sh not found (run from the repository root; the bundle has no sources)")
  return false
end

describe("tools/size_budget.sh", function()
  it("passes on this tree: no file over the budget", function()
    if not ready() then return end
    local out = run(".")
    assert.is_truthy(out:find(" 0 failed", 1, true), out)
    assert.is_truthy(out:find("rc=0", 1, true), out)
  end)

  it("names a file over 1,000 lines and fails; 1,000 lines is within", function()
    if not ready() then return end
    local dir = os.tmpname()
    os.remove(dir)
    os.execute(("mkdir -p '%s/src' '%s/include' '%s/lua/cute'"):format(dir, dir, dir))
    write(dir .. "/src/big.c", 1001)
    write(dir .. "/src/ok.h", 1000)
    write(dir .. "/include/small.h", 3)
    write(dir .. "/lua/cute/huge.lua", 5000)
    write(dir .. "/lua/cute/cdef.lua", 5000) -- generated: not counted
    local out = run(dir)
    os.execute("rm -rf '" .. dir .. "'")
    assert.is_truthy(out:find("src/big.c has 1001 lines", 1, true), out)
    assert.is_truthy(out:find("lua/cute/huge.lua has 5000 lines", 1, true), out)
    assert.is_falsy(out:find("ok.h", 1, true), out)
    assert.is_falsy(out:find("cdef.lua", 1, true), out)
    assert.is_truthy(out:find("2 passed, 2 failed", 1, true), out)
    assert.is_truthy(out:find("rc=1", 1, true), out)
  end)
end)
