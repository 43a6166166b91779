-- tools/cpu_examples.lua, the CI run of every example on the CPU target
-- (docs/CPU_TARGET.md, "CI"): its verdicts on stand-in examples that pass,
-- compute a wrong result, stop without their check, hit an op the engine does
-- not run, or have no entry; and one real example.  No GPU needed.
local util = dofile("spec/support/util.lua")
local exe = util.self_exe()

local dir = os.tmpname()
os.remove(dir)

local function write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local HEAD = 'local ex = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")\n'

describe("tools/cpu_examples.lua", function()
  setup(function()
    assert(os.execute("mkdir -p " .. dir .. " && cp examples/common.lua " .. dir .. "/") == 0)
    -- a wrong result: ex.check prints FAILED and exits 1
    write(dir .. "/vector_add.lua", HEAD .. 'ex.check("vector_add", 0.25, 1e-6)\n')
    -- the engine's refusal
    write(dir .. "/saxpy.lua", HEAD .. 'error("cute (cpu target): kernel k: op asm at x.lua:3 is not supported on the CPU target yet")\n')
    -- exit 0 without a check
    write(dir .. "/reduce_sum.lua", HEAD .. 'print("no GPU here: compiling only")\n')
    -- a right result
    write(dir .. "/transpose.lua", HEAD .. 'ex.check("transpose", 0, 0)\n')
    -- an example the tool has no entry for
    write(dir .. "/brand_new.lua", HEAD .. 'ex.check("brand_new", 0, 0)\n')
  end)
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("passes a checked result, fails a wrong one, one without its check and one it does not know, skips the engine's refusal",
    function()
      local out, rc = util.sh(("%s tools/cpu_examples.lua --dir %s vector_add saxpy reduce_sum transpose brand_new")
        :format(exe, dir))
      assert.equals(1, rc, out)
      assert.is_truthy(out:find("\n1 passed, 3 failed, 1 skipped\n?$"), out)
      assert.is_truthy(out:find("FAIL vector_add[^\n]*vector_add: rel%. error 2%.500e%-01 %(tolerance 1e%-06%) FAILED"), out)
      assert.is_truthy(out:find("SKIP saxpy[^\n]*op asm at x%.lua:3 is not supported on the CPU target yet"), out)
      assert.is_truthy(out:find("FAIL reduce_sum[^\n]*exit 0 without its check's OK line"), out)
      assert.is_truthy(out:find("PASS transpose[^\n]*transpose: rel%. error 0%.000e%+00 %(tolerance 0e%+00%) OK"), out)
      assert.is_truthy(out:find("FAIL brand_new[^\n]*no entry in tools/cpu_examples%.lua"), out)
    end)

  it("runs a real example on the CPU target against its host reference, keeping its output and verdict", function()
    local out, rc = util.sh(("%s tools/cpu_examples.lua --out %s vector_add"):format(exe, dir))
    assert.equals(0, rc, out)
    assert.is_truthy(out:find("PASS vector_add[^\n]*rel%. error 0%.000e%+00 %(tolerance 1e%-06%) OK"), out)
    assert.is_truthy(out:find("\n1 passed, 0 failed, 0 skipped\n?$"), out)
    assert.is_truthy(util.has(util.read_file(dir .. "/vector_add.verdict"), "PASS vector_add: rel. error"))
    assert.is_truthy(util.has(util.read_file(dir .. "/vector_add.out"), "vector_add: rel. error"))
  end)
end)
