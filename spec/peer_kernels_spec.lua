-- Kernels that communicate (docs/PEER_KERNELS.md) without a GPU: the memory-
-- ordering ops of cute.nvgpu_sys in PTX, and the one-shot / two-shot
-- all-reduce kernels of examples/allreduce_peer.lua traced and compiled for
-- sm_90a and sm_80.  The runs on two GPUs are spec/peer_kernels_gpu_spec.lua.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local has = util.has
local AR = dofile("examples/common.lua").load("allreduce_peer")

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

local function ptx_of(fn, arch, ...)
  return cute.kernel(fn, { arch = arch or "sm_90a" }):ptx(...)
end

local U32 = cute.tensor_spec({ 64 }, cute.uint32)
local I64 = cute.tensor_spec({ 64 }, cute.int64)

describe("cute.arch memory-ordering ops (cute.nvgpu_sys)", function()
  it("ld_acquire / st_release at system scope by default, other scopes when given", function()
    local p = ptx_of(function(F, G, e)
      cute.arch.st_release(F, 3, e)
      G[0] = cute.Int64(cute.arch.ld_acquire(F, 5))
      cute.arch.st_release(G, 1, 7, "gpu")
      F[9] = cute.arch.ld_acquire(F, 2, "cta")
    end, "sm_90a", U32, I64, cute.Uint32(1))
    assert.is_true(has(p, "st.release.sys.global.u32 [%rd"), p)
    assert.is_true(has(p, "ld.acquire.sys.global.u32 %r"), p)
    assert.is_true(has(p, "st.release.gpu.global.s64 [%rd"), p)
    assert.is_true(has(p, "ld.acquire.cta.global.u32"), p)
  end)

  it("relaxed and volatile forms, fences", function()
    local p = ptx_of(function(F, G)
      cute.arch.st_relaxed(F, 0, cute.arch.ld_relaxed(F, 1))
      cute.arch.fence_acq_rel("sys")
      cute.arch.st_volatile(G, 0, cute.arch.ld_volatile(G, 1))
      cute.arch.fence_sc("gpu")
    end, "sm_80", U32, I64)
    for _, s in ipairs({ "ld.relaxed.sys.global.u32", "st.relaxed.sys.global.u32", "fence.acq_rel.sys;",
      "ld.volatile.global.s64", "st.volatile.global.s64", "fence.sc.gpu;" }) do
      assert.is_true(has(p, s), s .. " in\n" .. p)
    end
  end)

  it("a spin loop on ld_acquire reloads the flag every iteration", function()
    local p = ptx_of(function(F, e)
      while cute.arch.ld_acquire(F, 0) ~= e do end
      F[1] = 1
    end, "sm_90a", U32, cute.Uint32(1))
    local loop = p:match("(%$L__BB0_%d+:.-bra[^\n]*)")
    assert.is_truthy(loop, p)
    assert.is_true(has(loop, "ld.acquire.sys.global.u32"), p)
  end)

  it("argument errors name the operation and the value", function()
    local function expect(msg, fn, ...)
      local ok, e = pcall(ptx_of, fn, "sm_90a", ...)
      assert.is_false(ok)
      assert.is_true(has(tostring(e), msg), tostring(e))
    end
    expect("cute.arch.ld_acquire: scope must be 'cta', 'gpu' or 'sys', got system",
      function(F) cute.arch.ld_acquire(F, 0, "system") end, U32)
    expect("cute.arch.st_release: the tensor's elements must be 32- or 64-bit integers",
      function(F) cute.arch.st_release(F, 0, 1) end, cute.tensor_spec({ 8 }, cute.float32))
    expect("cute.arch.st_release(tensor, coordinate, value [, scope]): the value is missing",
      function(F) cute.arch.st_release(F, 0) end, U32)
    expect("cute.arch.ld_volatile(tensor, coordinate, ...): the first argument must be a tensor, got number 3",
      function(F) F[0] = cute.arch.ld_volatile(3, 0) end, U32)
    expect("cute.arch.ld_acquire: the tensor must be in global or generic memory, got shared memory",
      function(F) F[0] = cute.arch.ld_acquire(cute.make_shared_tensor(8, cute.uint32), 0) end, U32)
    expect("cute.arch.fence_acq_rel: scope must be 'cta', 'gpu' or 'sys', got grid",
      function(F) cute.arch.fence_acq_rel("grid"); F[0] = 1 end, U32)
  end)

  it("outside a kernel is an error", function()
    local ok, e = pcall(cute.arch.ld_acquire, U32, 0)
    assert.is_false(ok)
    assert.is_true(has(tostring(e), "cute.arch.ld_acquire"), tostring(e))
  end)
end)

describe("the peer all-reduce kernels (examples/allreduce_peer.lua)", function()
  local N = 1000003 -- odd: a scalar tail after the 16-byte vectors
  for _, arch in ipairs({ "sm_90a", "sm_80" }) do
    for _, world in ipairs({ 2, 4 }) do
      for _, dt in ipairs({ cute.float32, cute.bfloat16 }) do
        for _, kind in ipairs({ "oneshot", "twoshot" }) do
          it(("%s, %d ranks, %s, %s: system-scope flags, 16-byte loads, no spills"):format(kind, world, dt.name, arch),
            function()
              local rank = world - 1
              local r = AR.compile(kind, dt, N, world, rank, arch)
              local p = r.ptx
              -- two barriers, each one release store and one acquire spin per peer
              assert.are.equal(2 * (world - 1), count(p, "st%.release%.sys%.global%.u32"), p)
              assert.are.equal(2 * (world - 1), count(p, "ld%.acquire%.sys%.global%.u32"), p)
              assert.are.equal(4, count(p, "bar%.sync"), p) -- each barrier: before the flags and after
              -- one 16-byte load per rank's input; the one-shot stores its own output,
              -- the two-shot every rank's
              assert.are.equal(world, count(p, "ld%.global%.nc%.v4%."), p)
              assert.are.equal(kind == "oneshot" and 1 or world, count(p, "st%.global%.v4%."), p)
              assert.are.equal(0, r.info.spill_stores or 0)
              assert.are.equal(0, r.info.spill_loads or 0)
              assert.are.equal(arch, r.arch)
            end)
        end
      end
    end
  end

  it("the flags: (barrier, source rank, block) in the signal buffers, 4-byte words", function()
    -- rank 1 of 2 stores to rank 0's flags (start, 1, b) and (end, 1, b) at byte offsets
    -- 4 * (8 * 1024 * barrier + 1024 * 1) + 4 b and spins on its own (start, 0, b), (end, 0, b)
    local p = AR.compile("oneshot", cute.float32, 4096, 2, 1, "sm_90a").ptx
    assert.is_truthy(p:match("mul%.wide%.u32%s+%%rd%d+, %%r%d+, 4;"), p) -- 4 * %ctaid.x
    for _, off in ipairs({ 4096, 36864, 32768 }) do
      assert.is_truthy(p:match("add%.s64%s+%%rd%d+, %%rd%d+, " .. off .. ";"), off .. " in\n" .. p)
    end
    assert.is_true(has(p, "%ctaid.x"), p)
  end)

  it("a barrier that waits longer than TIMEOUT_S prints which and traps (no hang)", function()
    local p = AR.compile("twoshot", cute.float32, 4096, 2, 1, "sm_90a").ptx
    assert.is_true(count(p, "mov%.u64%s+%%rd%d+, %%globaltimer;") >= 2, p) -- the start and each poll
    -- elapsed > TIMEOUT_S s, compiled as elapsed < TIMEOUT_S * 1e9 + 1 (or <=)
    local limit = tonumber(p:match("setp%.l[te]%.u64[^\n]*, (%d+);"))
    assert.is_true(limit == AR.TIMEOUT_S * 1e9 or limit == AR.TIMEOUT_S * 1e9 + 1, p)
    assert.is_true(has(p, "trap;"), p)
    assert.is_true(count(p, "call%.uni %(retval0%),%s*vprintf") >= 2, p)
  end)

  it("only rank 0's two-shot kernel has the scalar tail; the one-shot's every rank", function()
    local scalar_ld = "ld%.global%.nc%.f32"
    assert.is_true(count(AR.compile("twoshot", cute.float32, 1001, 2, 0).ptx, scalar_ld) == 2)
    assert.are.equal(0, count(AR.compile("twoshot", cute.float32, 1001, 2, 1).ptx, scalar_ld))
    assert.are.equal(2, count(AR.compile("oneshot", cute.float32, 1001, 2, 1).ptx, scalar_ld))
  end)

  it("argument errors", function()
    local ok, e = pcall(AR.args, "threeshot", 0, 1, cute.float32, {}, {}, {})
    assert.is_false(ok)
    assert.is_true(has(tostring(e), 'allreduce_peer: kind = threeshot: must be "oneshot" or "twoshot"'), tostring(e))
    ok, e = pcall(AR.new, {})
    assert.is_false(ok)
    assert.is_true(has(tostring(e), "allreduce_peer.new: devices must be a list of 1 to 8 device ordinals"),
      tostring(e))
  end)
end)

describe("allreduce_peer's host side on a stub driver (no GPU)", function()
  -- the driver and the contract's device functions are stand-ins: launches are
  -- recorded with the current device; tensors are plain tables at made-up addresses
  local ffi = require("ffi")
  local rt = require("cute.runtime")
  local saved, enabled, launches = {}, {}, {}
  local next_ptr = 2 ^ 20
  local function fake_tensor(n, dt, device)
    next_ptr = next_ptr + 2 ^ 28
    return { ptr = next_ptr, shape = { n }, strides = { 1 }, dtype = dt, device = device,
      numel = function() return n end }
  end
  local driver = util.stub_driver(function(_, gx, _, _, bx, _, _, _, stream)
    launches[#launches + 1] = { device = rt.current_device(), grid = gx, block = bx,
      stream = tonumber(ffi.cast("uintptr_t", stream)) }
  end)
  local dev_now = 0
  driver.cute_cuda_set_device = function(i) dev_now = i; return 0 end
  driver.cute_cuda_get_device = function(out) out[0] = dev_now; return 0 end
  driver.cute_cuda_device_count = function(out) out[0] = 2; return 0 end
  -- (the real cute.enable_peer_access over the stub: the launch's device check accepts the peers then)
  driver.cute_cuda_can_access_peer = function(_, _, out) out[0] = 1; return 0 end
  driver.cute_cuda_enable_peer_access = function(dev, peer) enabled[#enabled + 1] = dev .. "->" .. peer; return 0 end
  local fakes = {
    zeros = function(shape, dt, opts) return fake_tensor(shape[1], dt, opts.device) end,
    stream = function(opts) return { handle = ffi.cast("void*", 0x1000 + opts.device), device = opts.device } end,
    device = function() return { sm_count = 132 } end,
  }
  setup(function()
    for k, f in pairs(fakes) do saved[k] = rawget(cute, k) or false; rawset(cute, k, f) end
    rt._use_driver(driver)
  end)
  teardown(function()
    for k, f in pairs(saved) do rawset(cute, k, f or nil) end
    rt._use_driver(nil)
  end)
  before_each(function() launches, enabled = {}, {} end)

  local function lists(n, dt)
    local a, b = {}, {}
    for k = 1, 2 do a[k], b[k] = fake_tensor(n, dt, k - 1), fake_tensor(n, dt, k - 1) end
    return a, b
  end

  it("new: peer access both ways, a signal buffer and a stream per device, one block per SM at most", function()
    local ar = AR.new({ 0, 1 })
    assert.are.same({ "0->1", "1->0" }, enabled)
    assert.are.equal(132, ar.max_blocks)
    assert.are.equal(AR.SIG_WORDS, ar.sigs[2].shape[1])
    assert.are.equal(1, ar.sigs[2].device)
  end)

  it("run: one launch per device on its own stream, the grid from the size, a new epoch per call", function()
    local ar = AR.new({ 0, 1 })
    local a, b = lists(1000003, cute.float32)
    ar:run("oneshot", a, b)
    assert.are.equal(2, #launches)
    for k = 1, 2 do
      assert.are.equal(k - 1, launches[k].device)
      assert.are.equal(0x1000 + k - 1, launches[k].stream)
      assert.are.equal(132, launches[k].grid) -- 250000 vectors: capped at the SMs
      assert.are.equal(AR.THREADS, launches[k].block)
    end
    assert.are.equal(1, ar.epoch)
    local c, d = lists(4096, cute.float32)
    ar:run("twoshot", c, c) -- in place: fine for the two-shot
    assert.are.equal(4, #launches)
    assert.are.equal(1, launches[4].grid) -- 1024 vectors, 512 per rank: one block
    assert.are.equal(2, ar.epoch)
    ar:run("oneshot", c, d)
    assert.are.equal(3, ar.epoch)
    assert.are.equal(0, rt.current_device()) -- back on the first device
  end)

  it("run: argument errors", function()
    local ar = AR.new({ 0, 1 })
    local a, b = lists(4096, cute.float32)
    local function expect(msg, ...)
      local ok, e = pcall(ar.run, ar, ...)
      assert.is_false(ok)
      assert.is_true(has(tostring(e), msg), tostring(e))
    end
    expect("the one-shot kernel cannot run in place", "oneshot", a, a)
    expect("expected 2 inputs and outputs, rank 1 has none", "oneshot", { a[1] }, { b[1] })
    local c = lists(100, cute.float32)
    expect("rank 1: input", "twoshot", { a[1], c[2] }, b)
    local h = lists(4096, cute.float16)
    expect("dtype float16: float32 and bfloat16 are supported", "twoshot", h, h)
    expect('kind = fourshot: must be "oneshot" or "twoshot"', "fourshot", a, b)
    expect("rank 1 runs on device 1, but its output is on device 0", "twoshot", a, { b[1], b[1] })
    assert.are.equal(0, #launches)
  end)
end)

describe("the multi-GPU scripts", function()
  it("parse, and the benchmarks print machine-readable lines", function()
    for _, f in ipairs({ "examples/allreduce_peer.lua", "examples/tp_linear.lua", "bench/allreduce.lua",
      "bench/tp_linear.lua" }) do
      assert.is_truthy(loadfile(f), f)
    end
    local src = util.read_file("bench/allreduce.lua")
    assert.is_true(has(src, "ALLREDUCE size="), "bench/allreduce.lua")
    assert.is_true(has(util.read_file("bench/nccl_torch.py"), "ALLREDUCE_TORCH size="), "bench/nccl_torch.py")
    assert.is_true(has(util.read_file("bench/tp_linear.lua"), "TP_LINEAR "), "bench/tp_linear.lua")
    local _, rc = util.sh("sh -n tools/gpu_peer.sh")
    assert.are.equal(0, rc)
  end)

  it("examples/allreduce_peer.lua without GPUs compiles both kernels for sm_90a", function()
    if cute.available() then return pending("with a GPU the example runs: spec/peer_kernels_gpu_spec.lua") end
    local out, rc = util.sh(util.self_exe() .. " examples/allreduce_peer.lua")
    assert.are.equal(0, rc, out)
    assert.is_truthy(out:match("allreduce_peer oneshot bf16: %d+ registers, 0 spill bytes"), out)
    assert.is_truthy(out:match("allreduce_peer twoshot bf16: %d+ registers, 0 spill bytes"), out)
  end)
end)
