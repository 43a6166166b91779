-- Fragments and by-value parameters on the GPU (docs/IR.md, "Fragments and
-- wide values"): spec/golden/fragment.ir run with random data against a CPU
-- reference.  The kernel carries a 128 x f32 fragment through a for loop
-- (element 7 = element 5 + 2, then one asm adds 1 to all 128 elements), reads
-- word 5 of a 128-byte grid_constant parameter through param.addr and passes
-- an f16x2[4] fragment through an asm with four 'r' operands.
if not pcall(require, "cute.ffi") then
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
end
local ffi = require("ffi")
local IR = require("cute.ir")
local rt = require("cute.runtime")
local util = dofile("spec/support/util.lua")

local function f32(x) return tonumber(ffi.new("float", x)) end

describe("fragments on the GPU", function()
  util.device_it("f32[128] loop-carried through a 258-operand asm, bytes<128,64> grid_constant parameter",
    "loads the PTX into the driver (rt.load_module)", function()
    local d = rt.device()
    local known = { sm_80 = true, sm_86 = true, sm_89 = true, sm_90 = true }
    local arch = known[d.arch] and d.arch or (d.cc.major >= 9 and "sm_90" or "sm_80")
    local m = IR.parse(assert(util.read_file("spec/golden/fragment.ir")))
    local r = assert(m:compile { arch = arch, use_ptxas = false }) -- the driver JITs the PTX
    local mod = rt.load_module(r.ptx, true)
    local fn = mod:get_function("frag")
    math.randomseed(os.time())
    for trial = 1, 3 do
      local threads = 32 * math.random(1, 4)
      local n = trial == 1 and 0 or math.random(1, 40)
      local s = math.random(-4000, 4000) / 8
      local blob = ffi.new("uint32_t[32]")
      for i = 0, 31 do blob[i] = math.random(0, 2 ^ 20) end
      local out = rt.from_host((function()
        local t = {}
        for i = 1, threads * 129 do t[i] = -1 end
        return t
      end)(), rt.float32)
      local pn, ps = ffi.new("int32_t[1]", n), ffi.new("float[1]", s)
      local params = ffi.new("void *[4]", out.ptr_cell, blob, pn, ps)
      rt.launch(fn, 1, threads, 0, nil, params)
      rt.synchronize()
      local got = out:to_table()
      local bad = 0
      for t = 0, threads - 1 do
        for j = 0, 127 do
          local want = f32(s + n)
          if j == 7 and n >= 1 then want = f32(s + n + 2) end
          if got[t * 129 + j + 1] ~= want then
            bad = bad + 1
            if bad < 5 then print(("thread %d element %d: got %s want %s (n=%d s=%s)"):format(t, j, got[t * 129 + j + 1], want, n, s)) end
          end
        end
        local want = f32(blob[5] + 3.0)
        if got[t * 129 + 129] ~= want then
          bad = bad + 1
          if bad < 5 then print(("thread %d blob word: got %s want %s"):format(t, got[t * 129 + 129], want)) end
        end
      end
      assert.are.equal(0, bad)
    end
    mod:unload()
  end)
end)
