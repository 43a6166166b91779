-- Soak properties (issue 14; docs/SOAK.md): nothing a kernel sweep makes is
-- kept forever.  Dropped kernels are collected with their launch caches, and
-- their modules are unloaded (a stub driver counts loads and unloads) or
-- their CPU-target programs freed; the specialisation memo of strings stays
-- bounded; the CPU target counts its live host "device" bytes; bench/soak.lua
-- runs and its verdict can fail.  No GPU needed.
local cute = require("cute")
local ffi = require("ffi")
local K = require("cute.kernel")
local sp = require("cute.specialise")
local cpu = require("cute.target_cpu")
local util = dofile("spec/support/util.lua")

local function full_gc() for _ = 1, 3 do collectgarbage() end end

local function body(X, c)
  local i = cute.arch.thread_idx()
  X[i] = X[i] + c
end

describe("soak", function()
  it("keeps no memo of string compile-time values forever (a sweep over 60,000 strings)", function()
    full_gc()
    local before = collectgarbage("count")
    for i = 1, 60000 do
      assert.are.equal("s:v" .. i, sp.arg_key("v" .. i))
    end
    full_gc()
    local grown = (collectgarbage("count") - before) * 1024
    assert.is_true(grown < 1024 * 1024, ("the Lua heap grew by %d bytes"):format(grown))
    assert.are.equal(sp.arg_key("same"), sp.arg_key("same"))
  end)

  it("unloads the modules of dropped kernels (GPU launch path over a stub driver)", function()
    local driver, stub = util.stub_driver()
    local unloads = 0
    driver.cute_cuda_module_unload = function() unloads = unloads + 1; return 0 end
    K._use_driver(driver)
    local ok, err = pcall(function()
      local kept = setmetatable({}, { __mode = "k" })
      local X = { ptr = 4096, shape = { 32 }, strides = { 1 }, dtype = cute.int32 }
      for c = 1, 12 do
        local k = cute.kernel(body, { cache = false, arch = "sm_80", use_ptxas = false })
        kept[k] = true
        k:launch{ grid = 1, block = 32 }(X, c)
      end
      full_gc()
      local alive = 0
      for _ in pairs(kept) do alive = alive + 1 end
      assert.are.equal(0, alive)
      assert.are.equal(12, stub.loads)
      assert.are.equal(12, unloads)
      assert.are.equal(12, stub.launches)
    end)
    K._use_driver(nil)
    assert(ok, err)
  end)

  describe("on the CPU target", function()
    util.use_cpu_target()

    it("counts the live host bytes of tensors (cute.target_cpu.live)", function()
      full_gc()
      local b0, n0 = cpu.live()
      local A = cute.zeros({ 1000 }, cute.float32)
      local B = cute.empty({ 10 }, cute.float64)
      local b1, n1 = cpu.live()
      assert.are.equal(b0 + 4000 + 80, b1)
      assert.are.equal(n0 + 2, n1)
      A:free()
      assert.are.same({ b0 + 80, n0 + 1 }, { cpu.live() })
      B = nil -- luacheck: ignore
      full_gc()
      assert.are.same({ b0, n0 }, { cpu.live() })
    end)

    it("frees the programs of dropped kernels and their tensors", function()
      full_gc()
      local b0 = cpu.live()
      local kept = setmetatable({}, { __mode = "k" })
      local progs = setmetatable({}, { __mode = "k" })
      for c = 1, 20 do
        local k = cute.kernel(body)
        kept[k] = true
        local X = cute.zeros({ 32 }, cute.int32)
        k:launch{ grid = 1, block = 32 }(X, c)
        assert.are.equal(c, X:to_host()[31])
        for _, root in pairs(k.caches) do
          -- (the prepared program: a cdata in the launch cache's entry)
          local function walk(t, depth)
            for key, v in pairs(t) do
              if type(v) == "table" and depth < 8 then walk(v, depth + 1) end
              if key == "prog" and type(v) == "cdata" then progs[v] = true end
            end
          end
          walk(root, 0)
        end
      end
      local nprogs = 0
      for _ in pairs(progs) do nprogs = nprogs + 1 end
      assert.are.equal(20, nprogs)
      full_gc()
      local alive, live_progs = 0, 0
      for _ in pairs(kept) do alive = alive + 1 end
      for _ in pairs(progs) do live_progs = live_progs + 1 end
      assert.are.equal(0, alive)
      assert.are.equal(0, live_progs)
      assert.are.equal(b0, (cpu.live()))
    end)
  end)

  describe("bench/soak.lua", function()
    local exe = util.self_exe()
    -- (under ASan its quarantine holds freed memory: the RSS bound is the plain build's to check)
    local rss_bound = exe:find("/asan/", 1, true) and "SOAK_MAX_RSS_MB=100000 " or ""
    it("runs a short soak on the CPU target and passes its verdict", function()
      local out, rc = util.sh("CUTE_TARGET=cpu " .. rss_bound .. exe .. " bench/soak.lua 24 8")
      assert.are.equal(0, rc, out)
      assert.is_truthy(out:find("\n4 passed, 0 failed\n", 1, true), out)
      assert.is_truthy(out:find("kernels collected (0 of 24 still alive", 1, true), out)
      assert.is_truthy(out:find("mode both, CPU target", 1, true), out)
    end)
    it("fails its verdict when a bound is exceeded (SOAK_MAX_DEV_MB=-1)", function()
      local out, rc = util.sh("CUTE_TARGET=cpu SOAK_MAX_DEV_MB=-1 " .. rss_bound .. exe .. " bench/soak.lua 8 4")
      assert.are.equal(1, rc, out)
      assert.is_truthy(out:find("FAIL device memory growth", 1, true), out)
      assert.is_truthy(out:find("\n3 passed, 1 failed\n", 1, true), out)
    end)
    it("soaks the compile path alone (SOAK_MODE=compile: trace + LLVM to PTX)", function()
      local out, rc = util.sh("CUTE_TARGET=gpu SOAK_MODE=compile " .. rss_bound .. exe .. " bench/soak.lua 12 4")
      assert.are.equal(0, rc, out)
      assert.is_truthy(out:find("mode compile", 1, true), out)
      assert.is_truthy(out:find("\n4 passed, 0 failed\n", 1, true), out)
    end)
  end)
end)
