-- The CPU target's bounds checks (always on) and its checking mode
-- (docs/CPU_TARGET.md, "Bounds checks" and "Checking mode"): planted bugs
-- are launch errors at the right Lua line, nothing is written by the
-- faulting access, and correct kernels run clean.  CI: no GPU needed.
local cute = require("cute")
local ffi = require("ffi")
local cpu = require("cute.target_cpu")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local THIS = "spec/cpu_check_spec.lua"
local f32, i32 = cute.float32, cute.int32

-- "at spec/cpu_check_spec.lua:LINE" of the line holding marker
local function at(marker) return ("at %s:%d (block "):format(THIS, util.line_of(THIS, marker)) end
local function where(marker) return ("%s:%d"):format(THIS, util.line_of(THIS, marker)) end

-- the launch error of f, which must contain every string given
local function launch_error(f, ...)
  local e = util.err_of(f)
  for _, s in ipairs({ ... }) do assert(util.has(e, s), ("%q not in: %s"):format(s, e)) end
  return e
end

-- a host float array of n sentinels and a tensor viewing its first m
local function host_view(n, m, v)
  local h = ffi.new("float[?]", n)
  for i = 0, n - 1 do h[i] = v end
  return h, cute.from_ptr(ffi.cast("uint64_t", ffi.cast("uintptr_t", h)), { m }, f32)
end

describe("the CPU target's bounds checks", function()
  util.use_cpu_target()

  local store = cute.kernel(function(A, n)
    local t = cute.arch.thread_idx()
    A[t + n] = 7.0 -- @oob-store
  end, { name = "chk_store" })

  it("an out-of-bounds store is a launch error at its line; the faulting access writes nothing", function()
    local h, A = host_view(96, 64, -1)
    launch_error(function() store:launch{ grid = 1, block = 64 }(A, 16) end,
      "cute (cpu target): kernel chk_store: out-of-bounds store of 4 bytes at 0x",
      "(0 bytes past the end of a 256-byte global allocation: float32 view {64}) (thread (48,0,0)) " ..
      at("@oob-store") .. "(0,0,0))")
    -- warp 0 (threads 0..31) stored A[16..47]; warp 1's store faulted: nothing of it, nothing past the end
    for i = 0, 95 do assert.are.equal((i >= 16 and i < 48) and 7 or -1, h[i]) end
  end)

  it("names the block and the distance before the start", function()
    local h, A = host_view(64, 64, -1)
    launch_error(function() store:launch{ grid = 1, block = 32 }(A, -3) end,
      "out-of-bounds store of 4 bytes at", "(12 bytes before the start of a 256-byte global allocation",
      "(thread (0,0,0)) " .. at("@oob-store"))
    for i = 0, 63 do assert.are.equal(-1, h[i]) end
  end)

  it("an out-of-bounds load is caught before the value is used", function()
    local k = cute.kernel(function(A, B, n)
      local t = cute.arch.thread_idx()
      B[t] = A[t + n] -- @oob-load
    end, { name = "chk_load" })
    local A = cute.from_host(util.rand_floats(64), f32, { 64 })
    local hb, B = host_view(64, 64, -1)
    launch_error(function() k:launch{ grid = 2, block = 64 }(A, B, 1) end,
      "kernel chk_load: out-of-bounds load of 4 bytes at 0x",
      "(0 bytes past the end of a 256-byte global allocation: float32 tensor {64}) (thread (63,0,0)) " ..
      at("@oob-load") .. "(0,0,0))")
    for i = 0, 31 do assert.are.equal(A:to_host()[i + 1], hb[i]) end -- warp 0 ran
    for i = 32, 63 do assert.are.equal(-1, hb[i]) end
  end)

  it("16-byte vector stores and atomics are checked too", function()
    local vadd = cute.kernel(function(A, B)
      local gA, gB = cute.zipped_divide(A, { 4 }), cute.zipped_divide(B, { 4 })
      local a = cute.make_fragment(4, f32)
      local v = cute.arch.thread_idx()
      cute.copy(gA[{ cute._, v }], a)
      cute.copy(a, gB[{ cute._, v }]) -- @oob-vec
    end, { name = "chk_vec" })
    local A, B = cute.from_host(util.rand_floats(256), f32, { 256 }), cute.zeros({ 128 }, f32)
    launch_error(function() vadd:launch{ grid = 1, block = 64 }(A, B) end,
      "out-of-bounds store of 16 bytes at", "(0 bytes past the end of a 512-byte global allocation",
      "(thread (32,0,0)) " .. at("@oob-vec"))
    local ha, hb = A:to_host(), B:to_host()
    for i = 0, 127 do assert.are.equal(ha[i], hb[i]) end -- (warp 0: threads 0..31, 4 floats each)
    local atom = cute.kernel(function(X, n)
      cute.arch.atomic_add(X, n, 1) -- @oob-atomic
    end, { name = "chk_atom" })
    local X = cute.zeros({ 8 }, i32)
    launch_error(function() atom:launch{ grid = 1, block = 4 }(X, 8) end,
      "kernel chk_atom: out-of-bounds atomic of 4 bytes", "(0 bytes past the end of a 32-byte global allocation",
      at("@oob-atomic"))
    atom:launch{ grid = 1, block = 4 }(X, 7)
    assert.are.equal(4, X:to_host()[7])
  end)

  it("shared memory is checked against the block's bytes", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      s[t + n] = 1.0 -- @oob-shared
      cute.arch.sync_threads()
      A[t] = s[t]
    end, { name = "chk_shared" })
    local A = cute.zeros({ 64 }, f32)
    launch_error(function() k:launch{ grid = 1, block = 64 }(A, 2) end,
      "kernel chk_shared: out-of-bounds store of 4 bytes at",
      "(0 bytes past the end of the block's 256 bytes of shared memory) (thread (62,0,0)) " .. at("@oob-shared"))
    launch_error(function() k:launch{ grid = 1, block = 64 }(A, -1) end,
      "(4 bytes before the start of the block's 256 bytes of shared memory) (thread (0,0,0))")
    k:launch{ grid = 1, block = 64 }(A, 0)
    assert.are.equal(1, A:to_host()[63])
  end)

  it("a lane's local array is checked against its own bytes", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      local f = cute.make_fragment(4, f32)
      for i in cute.range(0, 4) do f[i] = t + i end
      A[t] = f[n + t % 2] -- @oob-local
    end, { name = "chk_local" })
    local A = cute.zeros({ 64 }, f32)
    k:launch{ grid = 1, block = 64 }(A, cute.Int32(2))
    assert.are.equal(63 + 3, A:to_host()[63])
    launch_error(function() k:launch{ grid = 1, block = 64 }(A, cute.Int32(3)) end,
      "kernel chk_local: out-of-bounds load of 4 bytes at", "(outside thread (1,0,0)'s local arrays) (thread (1,0,0)) " ..
      at("@oob-local"))
  end)

  it("memory that is no tensor is not device memory; registered host memory is", function()
    pcall(ffi.cdef, "void *malloc(size_t size); void free(void *p);")
    local big = ffi.C.malloc(4 * 2 ^ 20) -- (a mapping of its own: far from the tensors)
    local h = ffi.cast("float *", big)
    for i = 0, 63 do h[i] = 5 end
    local A = cute.from_ptr(ffi.cast("uint64_t", ffi.cast("uintptr_t", h)), { 64 }, f32)
    local B = cute.zeros({ 64 }, f32)
    local copy = cute.kernel(function(X, Y)
      local t = cute.arch.thread_idx()
      Y[t] = X[t] -- @copy
    end, { name = "chk_copy" })
    copy:launch{ grid = 1, block = 64 }(A, B)
    assert.are.equal(5, B:to_host()[63])
    A._cpu_range:release() -- (as if the driver never saw it)
    launch_error(function() copy:launch{ grid = 1, block = 64 }(A, B) end,
      "out-of-bounds load of 4 bytes at", "not device memory: no tensor of the CPU target holds it", at("@copy"))
    local reg = cpu.register(ffi.cast("uintptr_t", h), 256, "my host buffer")
    copy:launch{ grid = 1, block = 64 }(A, B)
    reg:release()
    assert.are.equal(ffi.sizeof("float"), 4)
    launch_error(function() copy:launch{ grid = 1, block = 64 }(A, B) end, "not device memory")
    ffi.C.free(big)
  end)

  it("a freed tensor leaves the registry", function()
    local n0 = C.cute_cpu_mem_count()
    local T = cute.empty({ 16 }, f32)
    assert.are.equal(n0 + 1, C.cute_cpu_mem_count())
    T:free()
    assert.are.equal(n0, C.cute_cpu_mem_count())
  end)
end)

describe("the CPU target's checking mode", function()
  util.use_cpu_target()

  -- thread 0 and thread 32 (two warps) write one shared word; sync: a sync_threads between
  local function two_writers(sync, read)
    return cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      s[t] = 0.0
      cute.arch.sync_threads()
      if t == 0 then s[1] = 1.0 end -- @race-first
      if sync then cute.arch.sync_threads() end
      if t == 32 then
        if read then A[0] = s[1] -- @race-read
        else s[1] = 2.0 end -- @race-second
      end
      cute.arch.sync_threads()
      A[t + 1] = s[t]
    end, { check = true, name = sync and "chk_synced" or "chk_race" })
  end

  it("two threads writing one shared word without sync_threads: a race at both lines", function()
    local A = cute.zeros({ 65 }, f32)
    launch_error(function() two_writers(false):launch{ grid = 1, block = 64 }(A) end,
      "kernel chk_race: shared-memory race: store of 4 bytes at shared offset 4 (its byte 0) after a store of the same byte by thread " ..
      "(0,0,0) at " .. where("@race-first") .. " with no barrier between them (thread (32,0,0)) " ..
      at("@race-second"))
    launch_error(function() two_writers(false, true):launch{ grid = 1, block = 64 }(A) end,
      "shared-memory race: load of 4 bytes at shared offset 4 (its byte 0) after a store of the same byte by thread (0,0,0) at " ..
      where("@race-first"), at("@race-read"))
  end)

  it("with a sync_threads between them: no report, and the result", function()
    local A = cute.zeros({ 65 }, f32)
    two_writers(true):launch{ grid = 1, block = 64 }(A)
    assert.are.equal(2, A:to_host()[2])
    two_writers(true, true):launch{ grid = 1, block = 64 }(A)
    assert.are.equal(1, A:to_host()[0])
  end)

  it("lanes of one warp storing different values to one address race; the same value does not", function()
    local k = cute.kernel(function(A, same)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(4), i32)
      if same then s[0] = 7 else s[0] = t end -- @race-lanes
      cute.arch.sync_threads()
      A[t] = s[0]
    end, { check = true, name = "chk_lanes" })
    local A = cute.zeros({ 32 }, i32)
    launch_error(function() k:launch{ grid = 1, block = 32 }(A, false) end,
      "shared-memory race: store of 4 bytes at shared offset 0 (its byte 0) after a store (of another value, in the same instruction) of " ..
      "the same byte by thread (0,0,0)", "(thread (1,0,0)) " .. at("@race-lanes"))
    k:launch{ grid = 1, block = 32 }(A, true)
    assert.are.equal(7, A:to_host()[31])
  end)

  it("atomics do not race with atomics; a plain load of the word does", function()
    local k = cute.kernel(function(A, peek)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(4), i32)
      if t == 0 then s[0] = 0 end
      cute.arch.sync_threads()
      cute.arch.atomic_add(s, 0, 1)
      if peek and t == 64 then A[1] = s[0] end -- @race-peek
      cute.arch.sync_threads()
      if t == 0 then A[0] = s[0] end
    end, { check = true, name = "chk_atomics" })
    local A = cute.zeros({ 2 }, i32)
    k:launch{ grid = 3, block = 96 }(A, false)
    assert.are.equal(96, A:to_host()[0])
    launch_error(function() k:launch{ grid = 1, block = 96 }(A, true) end,
      "shared-memory race: load of 4 bytes at shared offset 0 (its byte 0) after an atomic of the same byte by thread", at("@race-peek"))
  end)

  it("a sync_threads reached by part of a warp is barrier divergence", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      if t < 16 then cute.arch.sync_threads() end -- @div-lanes
      A[t] = 1.0
    end, { check = true, name = "chk_div" })
    local A = cute.zeros({ 64 }, f32)
    launch_error(function() k:launch{ grid = 1, block = 64 }(A) end,
      "kernel chk_div: barrier divergence: barrier 0 reached by 16 of warp 0's 32 live threads; thread (16,0,0) is " ..
      "on another path (thread (0,0,0)) " .. at("@div-lanes"))
  end)

  it("warps waiting at different sync_threads together are barrier divergence", function()
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      if t < 32 then cute.arch.sync_threads() -- @div-a
      else cute.arch.sync_threads() end -- @div-b
      A[t] = 1.0
    end, { check = true, name = "chk_div2" })
    local A = cute.zeros({ 64 }, f32)
    launch_error(function() k:launch{ grid = 1, block = 64 }(A) end,
      "kernel chk_div2: barrier divergence: warp 0 waits at barrier 0 here, warp 1 at another barrier instruction at " ..
      where("@div-b"), at("@div-a"))
  end)

  it("threads that returned early do not count as divergence", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      if t >= n then return end
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      s[t] = t
      cute.arch.sync_threads()
      A[t] = s[n - 1 - t]
    end, { check = true, name = "chk_ret" })
    local A = cute.zeros({ 64 }, f32)
    k:launch{ grid = 1, block = 64 }(A, 40)
    assert.are.equal(39, A:to_host()[0])
  end)

  it("reading shared memory no thread of the block wrote is an uninitialised read", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      if t < n then s[t] = 1.0 end
      cute.arch.sync_threads()
      A[t] = s[63 - t] -- @uninit-shared
    end, { check = true, name = "chk_uninit" })
    local A = cute.zeros({ 64 }, f32)
    launch_error(function() k:launch{ grid = 2, block = 64 }(A, 63) end,
      "kernel chk_uninit: uninitialised load of 4 bytes at shared offset 252: no thread of the block wrote byte " ..
      "252 before (thread (0,0,0)) " .. at("@uninit-shared") .. "(0,0,0))")
    k:launch{ grid = 2, block = 64 }(A, 64)
    -- per block: a second block does not see the first one's writes
    local k2 = cute.kernel(function(A)
      local t, b = cute.arch.thread_idx(), cute.arch.block_idx()
      local s = cute.make_shared_tensor(cute.make_layout(64), f32)
      if b == 0 then s[t] = 1.0 end
      cute.arch.sync_threads()
      A[t] = s[t] -- @uninit-block
    end, { check = true, name = "chk_uninit2" })
    launch_error(function() k2:launch{ grid = 2, block = 64 }(A) end, at("@uninit-block") .. "(1,0,0))")
  end)

  it("reading a local-array byte its lane never wrote is an uninitialised read", function()
    local k = cute.kernel(function(A, n)
      local t = cute.arch.thread_idx()
      local f = cute.make_fragment(4, f32)
      for i in cute.range(0, n) do f[i] = 1.0 end
      A[t] = f[3] -- @uninit-local
    end, { check = true, name = "chk_uninit_local" })
    local A = cute.zeros({ 64 }, f32)
    k:launch{ grid = 1, block = 64 }(A, cute.Int32(4))
    launch_error(function() k:launch{ grid = 1, block = 64 }(A, cute.Int32(3)) end,
      "kernel chk_uninit_local: uninitialised load of 4 bytes of thread (0,0,0)'s local array: byte 0 was never " ..
      "written (thread (0,0,0)) " .. at("@uninit-local"))
  end)

  it("the option is checked; CUTE_CHECK turns the mode on for every kernel", function()
    util.expect_error(function() cute.kernel(function() end, { check = "bogus" }) end,
      "cute.kernel: option check must be true, false or names joined by commas (race, sync, init, all), got bogus")
    -- only the checks named: sync alone does not report the race
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      local s = cute.make_shared_tensor(cute.make_layout(4), i32)
      s[0] = t
      A[t] = 1
    end, { check = "sync,init", name = "chk_only" })
    k:launch{ grid = 1, block = 32 }(cute.zeros({ 32 }, i32))
    local script = os.tmpname() .. ".lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local cute = require("cute")
local k = cute.kernel(function(A)
  local t = cute.arch.thread_idx()
  local s = cute.make_shared_tensor(cute.make_layout(64), cute.float32)
  s[t % 2] = t
  A[t] = 1.0
end, { name = "env_race" })
local ok, e = pcall(function() k:launch{ grid = 1, block = 64 }(cute.zeros({ 64 }, cute.float32)) end)
print(ok, e)
]])
    f:close()
    local out = util.sh(("CUTE_TARGET=cpu CUTE_CHECK=1 %q %q"):format(util.self_exe(), script))
    assert.is_truthy(util.has(out, "false") and util.has(out, "kernel env_race: shared-memory race"), out)
    out = util.sh(("CUTE_TARGET=cpu CUTE_CHECK=0 %q %q"):format(util.self_exe(), script))
    assert.is_truthy(util.has(out, "true"), out)
    os.remove(script)
  end)

  it("every kernel of spec/cpu_target_spec.lua runs clean in checking mode (CUTE_CHECK=1)", function()
    local out, rc = util.sh(("CUTE_CHECK=1 CUTE_TARGET=gpu %q /usr/bin/busted -o plainTerminal spec/cpu_target_spec.lua")
      :format(util.self_exe()))
    local ok, failed = out:match("(%d+) successes? / (%d+) failures?")
    assert.is_truthy(ok and tonumber(ok) >= 19 and failed == "0" and rc == 0, out)
  end)
end)
