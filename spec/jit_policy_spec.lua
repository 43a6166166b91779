-- cute.jit_policy (lua/cute/jit_policy.lua, docs/CACHE.md "Where a cold hit's
-- time goes"): LuaJIT's trace compiler is off for the modules that run while a
-- kernel is traced, on for the launch path and the user's code, and
-- CUTE_JIT_TRACING=1 leaves it on everywhere.  Checked by watching which
-- functions LuaJIT starts traces in (jit.attach), in child processes.
local U = dofile("spec/support/util.lua")
local self_exe = U.self_exe

local sh = U.sh

-- a child: hot loops through smem layout atoms (cute.smem_atom, off) and the
-- layout algebra (cute.layout, on); prints the modules traces started in
-- (written when a test runs, not when busted loads the spec files: a file made at load
-- time lived through every other spec's run, and once held another program: CI 2026-11-28)
local child
local function write_child()
  child = os.tmpname() .. "_jit_child.lua"
  local f = assert(io.open(child, "wb"))
  f:write([[
    -- no trace for this chunk's own loop: LuaJIT would otherwise record through
    -- the calls below and inline them, so whether a trace *starts* inside a cute
    -- module would depend on the recorder's heuristics; interpreted here, every
    -- call counts towards its function's hotness and a module with the JIT on
    -- always starts traces of its own
    jit.off(true)
    local cute = require("cute")
    local started = {}
    jit.attach(function(what, tr, func)
      if what == "start" then
        local src = debug.getinfo(func, "S").source
        local m = src:match("cute[/%.]([%w_]+)%.lua$")
        if m then started[m] = true end
      end
    end, "trace")
    local n = 0
    for i = 1, 3000 do
      local l = cute.make_layout({ 4, 8, 2 }, { 16, 1, 64 })
      n = n + cute.size(cute.composition(l, cute.make_layout({ 8, 8 }))) + cute.cosize(l)
      n = n + cute.size(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, cute.bfloat16))
    end
    local spec = require("cute.specialise")
    local off = require("cute.jit_policy").off
    local names = {}
    for m in pairs(started) do names[#names + 1] = m end
    table.sort(names)
    print("started " .. table.concat(names, ","))
    print("off_smem_atom " .. tostring(off["cute.smem_atom"] == true) .. " off_layout " .. tostring(off["cute.layout"] == true))
  ]])
  f:close()
  return child
end

describe("cute.jit_policy", function()
  it("the tracing modules get no traces; the launch path's and the layout algebra's are not turned off", function()
    local out = sh(self_exe() .. " " .. write_child())
    local started = out:match("started (%S*)")
    assert.truthy(started, out)
    assert.falsy(("," .. started .. ","):find(",smem_atom,", 1, true), out)
    assert.truthy(("," .. started .. ","):find(",layout,", 1, true), out)
    assert.truthy(out:find("off_smem_atom true off_layout false", 1, true), out)
    local off = require("cute.jit_policy").off
    for _, m in ipairs({ "cute.trace", "cute.tensor", "cute.smem_atom", "cute.arch" }) do
      assert.is_true(off[m] == true, m)
    end
    for _, m in ipairs({ "cute.kernel", "cute.launch", "cute.specialise", "cute.runtime", "cute.memory", "cute.layout" }) do
      assert.is_nil(off[m], m)
    end
  end)

  it("CUTE_JIT_TRACING=1: the same loops start traces inside cute.smem_atom", function()
    local out = sh("CUTE_JIT_TRACING=1 " .. self_exe() .. " " .. write_child())
    local started = out:match("started (%S*)")
    assert.truthy(started, out)
    assert.truthy(("," .. started .. ","):find(",smem_atom,", 1, true), out)
    assert.truthy(out:find("off_smem_atom false", 1, true), out)
  end)
end)
