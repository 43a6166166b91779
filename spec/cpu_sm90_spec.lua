-- Hopper (sm_90) instructions on the CPU target (docs/CPU_TARGET.md, "Hopper
-- (sm_90)"): src/cpu_sm90.c.  No GPU: wgmma of every input type against a
-- Lua product with each shared-memory layout (INTERLEAVE, 32B, 64B, 128B
-- swizzles, K- and MN-major, A from registers); mbarrier phases, parities and
-- transaction counts step by step; a wait that can never complete reported at
-- its Lua line; the #gpu specs of TMA (tiles, OOB zero fill, stores, reduce,
-- multicast, im2col), clusters (DSMEM, remote arrive), elect, setmaxnreg,
-- named barriers, pipelines and wgmma run here on the CPU target against their
-- own CPU references; the sm90 GEMM (cooperative, ping-pong, fp8) and
-- FlashAttention-3 examples at small sizes in a child process.
local cute = require("cute")
local cpu = require("cute.target_cpu")
local util = dofile("spec/support/util.lua")
local W = dofile("spec/support/wgmma_gemm.lua")
local THIS = "spec/cpu_sm90_spec.lua"
local i32 = cute.int32

-- values exact in every input type (fp8 e5m2: quarters; the others eighths),
-- so that f32 and s32 sums are exact whatever the order of the additions
local function exact_values(n, kind, seed)
  local x, t = seed, {}
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    local k = x % 17 - 8
    if kind == "int8" then t[i] = k * 3
    elseif kind == "uint8" then t[i] = k + 8
    elseif kind == "e5m2" then t[i] = k / 4
    else t[i] = k / 8 end
  end
  return t
end

describe("the CPU target's Hopper instructions", function()
  util.use_cpu_target()

  describe("wgmma.mma_async against a Lua product", function()
    -- {kind, n, bk, a_major, b_major, a_src, wg_m, the smem layouts' swizzles}
    local cases = {
      { "bf16", 64, 16, "K", "K", nil, 1, "A and B Sw<1> (32B)" },
      { "bf16", 64, 32, "K", "K", nil, 1, "A and B Sw<2> (64B)" },
      { "bf16", 64, 64, "K", "K", nil, 1, "A and B Sw<3> (128B)" },
      { "bf16", 256, 64, "K", "K", nil, 1, "N = 256" },
      { "f16", 16, 16, "MN", "MN", nil, 1, "MN-major: A Sw<3>, B Sw<1>" },
      { "bf16", 8, 16, "K", "MN", nil, 1, "B MN-major INTERLEAVE (Sw<0>)" },
      { "bf16", 64, 32, "MN", "K", nil, 2, "two warpgroups, A MN-major" },
      { "f16acc", 32, 64, "K", "K", nil, 1, "f16 accumulators" },
      { "tf32", 24, 32, "K", "K", nil, 1, "tf32 k8" },
      { "e4m3", 32, 128, "K", "K", nil, 1, "e4m3 k32" },
      { "e5m2", 16, 64, "K", "K", nil, 1, "e5m2 k32, Sw<2>" },
      { "int8", 32, 64, "K", "K", nil, 1, "s8 k32" },
      { "uint8", 48, 32, "K", "K", nil, 1, "u8 k32, Sw<1>" },
      { "bf16", 64, 64, "K", "K", "rmem", 1, "A from registers" },
      { "int8", 16, 64, "K", "K", "rmem", 1, "s8, A from registers" },
    }
    for _, c in ipairs(cases) do
      local cfg = { kind = c[1], n = c[2], bk = c[3], k = 2 * c[3], a_major = c[4], b_major = c[5], a_src = c[6],
        wg_m = c[7] }
      it(("%s m64n%dk, BK %d, %s"):format(c[1], c[2], c[3], c[8]), function()
        local kd = W.KINDS[cfg.kind]
        local Mm, Nn, Kk = 64 * cfg.wg_m, cfg.n, cfg.k
        local a, b = exact_values(Mm * Kk, cfg.kind, 7), exact_values(Nn * Kk, cfg.kind, 11)
        local A, B = cute.from_host(a, kd.ab, { Mm, Kk }), cute.from_host(b, kd.ab, { Nn, Kk })
        local Cm = cute.zeros({ Mm, Nn }, kd.acc)
        local k, tm = W.kernel(cfg)
        k:launch{ grid = 1, block = tm.size, smem = 65536 }(A, B, Cm)
        local got = Cm:to_table()
        local bad, first = 0, nil
        for i = 0, Mm - 1 do
          for j = 0, Nn - 1 do
            local want = 0
            for x = 0, Kk - 1 do want = want + a[i * Kk + x + 1] * b[j * Kk + x + 1] end
            local g = got[i * Nn + j + 1]
            local ok = cfg.kind == "f16acc" and math.abs(g - want) <= 2 ^ -10 * math.max(1, math.abs(want)) or g == want
            if not ok then
              bad = bad + 1
              first = first or ("C[%d][%d] = %s, want %s"):format(i, j, tostring(g), tostring(want))
            end
          end
        end
        assert.are.equal(0, bad, first)
      end)
    end
  end)

  describe("mbarriers", function()
    it("phases, parities, arrival counts and transaction bytes, step by step", function()
      local k = cute.kernel(function(Out, Src)
        local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
        local buf = cute.make_shared_tensor(cute.make_layout(4), cute.float32, 16)
        local tid = cute.arch.thread_idx()
        if tid == 0 then
          cute.arch.mbarrier_init(bar, 2)
          cute.arch.mbarrier_init_fence()
          local function probe(i, p) Out[i] = cute.where(cute.arch.mbarrier_try_wait(bar, p), 1, 0) end
          probe(0, 1)                                   -- a new barrier: the phase before phase 0 counts as done
          cute.arch.mbarrier_arrive(bar)
          probe(1, 0)                                   -- one arrival of two: phase 0 still open
          cute.arch.mbarrier_arrive(bar)
          probe(2, 0)                                   -- phase 0 complete
          probe(3, 1)                                   -- phase 1 open
          cute.arch.mbarrier_arrive_and_expect_tx(bar, 16)
          cute.arch.mbarrier_arrive(bar)
          probe(4, 1)                                   -- both arrived, 16 bytes pending
          cute.arch.cp_async_bulk_g2s(buf, Src, 16, bar)
          probe(5, 1)                                   -- the bytes landed: phase 1 complete
          probe(6, 0)                                   -- phase 2 (parity 0) open
          Out[7] = buf[3]:to(cute.int32)
        end
      end, { name = "cpu_mbar_phases" })
      local Out = cute.zeros({ 8 }, i32)
      local Src = cute.from_host({ 1, 2, 3, 42 }, cute.float32, { 4 })
      k:launch{ grid = 2, block = 32 }(Out, Src)
      assert.are.same({ 1, 0, 1, 0, 0, 1, 0, 42 }, Out:to_table())
    end)

    it("a wait that can never complete is an error naming its line, not a hang", function()
      local k = cute.kernel(function(X)
        local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
        if cute.arch.thread_idx() == 0 then cute.arch.mbarrier_init(bar, 65) end
        cute.arch.sync_threads()
        cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_wait(bar, 0) -- the stuck wait
        X[0] = 1
      end, { name = "cpu_mbar_stuck" })
      local X = cute.zeros({ 1 }, i32)
      local ok, e = pcall(function() k:launch{ grid = 1, block = 64 }(X) end)
      assert.is_false(ok)
      local line = util.line_of(THIS, "-- the stuck wait")
      assert.is_truthy(util.has(tostring(e), "kernel cpu_mbar_stuck: a wait that can never complete"), tostring(e))
      assert.is_truthy(util.has(tostring(e), "an mbarrier wait"), tostring(e))
      assert.is_truthy(util.has(tostring(e), THIS .. ":" .. line), tostring(e))
    end)

    it("an arrival on a barrier never initialised is an error", function()
      local k = cute.kernel(function(X)
        local bar = cute.make_shared_tensor(cute.make_layout(1), cute.int64, 8)
        cute.arch.mbarrier_arrive(bar)
        X[0] = 1
      end, { name = "cpu_mbar_uninit" })
      local ok, e = pcall(function() k:launch{ grid = 1, block = 32 }(cute.zeros({ 1 }, i32)) end)
      assert.is_false(ok)
      assert.is_truthy(util.has(tostring(e), "used before mbarrier.init"), tostring(e))
    end)
  end)

  describe("clusters", function()
    it("barrier.cluster: a CTA waits for the other CTAs of its cluster; launch checks the cluster shape", function()
      local k = cute.kernel(function(X)
        local buf = cute.make_shared_tensor(cute.make_layout(1), cute.int32, 16)
        local rank = cute.arch.block_idx_in_cluster()
        local tid = cute.arch.thread_idx()
        if tid == 0 then buf[0] = rank * 10 + 1 end
        cute.arch.cluster_sync()
        -- every CTA reads the next one's value through DSMEM
        local peer = cute.arch.map_shared_rank(buf, cute.rem(rank + 1, cute.arch.cluster_size()))
        if tid == 0 then X[cute.arch.block_idx()] = peer[0] end
        cute.arch.cluster_sync()
      end, { name = "cpu_cluster_ring" })
      local X = cute.zeros({ 8 }, i32)
      k:launch{ grid = 8, block = 64, cluster = { 4, 1, 1 } }(X)
      assert.are.same({ 11, 21, 31, 1, 11, 21, 31, 1 }, X:to_table())
      local ok, e = pcall(function() k:launch{ grid = 6, block = 64, cluster = { 4, 1, 1 } }(X) end)
      assert.is_false(ok)
      assert.is_truthy(util.has(tostring(e), "cluster (4,1,1) with grid (6,1,1)"), tostring(e))
    end)
  end)

  -- the #gpu specs of the Hopper features, run here against their CPU references
  -- (their test names without the #gpu tag)
  describe("the Hopper #gpu specs on the CPU target", function()
    local outer = getfenv(1)
    -- util.gpu_it asks cute.available() when the specs' describe blocks run
    -- (after this body): true until this block's teardown
    local available = cute.available
    cute.available = function() return true end
    teardown(function() cute.available = available end)
    for _, file in ipairs({ "spec/tma_gpu_spec.lua", "spec/tma_im2col_gpu_spec.lua", "spec/sm90_arch_gpu_spec.lua",
      "spec/pipeline_gpu_spec.lua", "spec/wgmma_gpu_spec.lua" }) do
      local chunk = assert(loadfile(file))
      local env = setmetatable({
        it = function(name, fn) outer.it((name:gsub(" #gpu", "")) .. " (" .. file .. ")", fn) end,
      }, { __index = outer })
      setfenv(chunk, env)
      chunk()
    end
  end)

  describe("the sm90 examples at small sizes (a child process, CUTE_TARGET=cpu)", function()
    local function run(env, script, args)
      local out, rc = util.sh(("cd %s && CUTE_TARGET=cpu %s %s examples/%s.lua %s"):format(util.root or ".", env,
        util.self_exe(), script, args))
      assert.are.equal(0, rc, out)
      assert.is_truthy(out:match("OK"), out)
      assert.is_falsy(out:match("FAILED"), out)
    end
    it("gemm_sm90: cooperative, 2-CTA clusters with multicast, ragged 200 x 136 x 64", function()
      run("", "gemm_sm90", "200 136 64")
    end)
    it("gemm_sm90: ping-pong, 1-CTA clusters", function()
      run("SCHEDULE=pingpong CLUSTER=1 BN=128", "gemm_sm90", "192 128 128")
    end)
    it("gemm_fp8_sm90: e4m3 in", function() run("", "gemm_fp8_sm90", "128 256 128") end)
    it("flash_attention_sm90: ping-pong, TMA epilogue; causal with a residue block", function()
      run("", "flash_attention_sm90", "1 1 130 64 1")
      run("FA3_PINGPONG=0 FA3_EPILOGUE=direct", "flash_attention_sm90", "1 2 64 128")
    end)
  end)
end)
