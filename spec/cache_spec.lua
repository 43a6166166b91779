-- The on-disk cache of compiled kernels (issue 12, items 1 and 4;
-- docs/CACHE.md): hits and misses, a key that changes with every input,
-- corrupt entries (truncated, flipped byte, wrong version, wrong key) read as
-- misses and rewritten, unsafe directories refused with one clear message,
-- 2 and 8 processes sharing one directory, LRU eviction, the CLI.  CPU only,
-- except the last test (#gpu): a second process launches from the cache.
local ffi = require("ffi")
local cute = require("cute")
local C = require("cute.ffi").C
local compile = require("cute.compile")
local U = dofile("spec/support/util.lua")
local has, read_file, self_exe, gpu_it = U.has, U.read_file, U.self_exe, U.gpu_it

pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name);")
local function setenv(name, value)
  if value == nil then C.unsetenv(name) else C.setenv(name, value, 1) end
end
-- the environment this file changes, restored at the end (busted runs every
-- spec file in one process: tools/run_tests.sh sets CUTE_CACHE_DIR for all)
local saved_env = {}
for _, name in ipairs({ "CUTE_CACHE_DIR", "CUTE_CACHE_MAX_BYTES", "CUTE_CACHE", "XDG_CACHE_HOME", "HOME" }) do
  saved_env[name] = os.getenv(name) or false
end
local function default_env(name) return saved_env[name] or nil end

local f32 = cute.float32
local spec = cute.tensor_spec({ 256 }, f32)
local HAVE_PTXAS = C.cute_ptxas_path() ~= nil

local sh = U.sh

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- a fresh cache directory (not yet created: the cache makes it) per test
local base = os.tmpname()
os.remove(base)
assert(os.execute("mkdir -p " .. base .. " && chmod 700 " .. base) == 0)
local ndirs = 0
local function fresh_dir()
  ndirs = ndirs + 1
  local d = ("%s/c%d/cache"):format(base, ndirs)
  setenv("CUTE_CACHE_DIR", d)
  return d
end

local function entries(dir)
  local p = io.popen("ls -A " .. dir .. " 2>/dev/null")
  local out = p:read("*a")
  p:close()
  local t = {}
  for name in out:gmatch("[^\n]+") do t[#t + 1] = name end
  table.sort(t)
  return t
end

local function mode_of(path) return (sh("stat -c %a " .. path)):match("%d+") end

-- the kernel of most tests: B = A * c (c a compile-time number: a new c is new IR)
local function scale(opts)
  return cute.kernel(function(A, B, c)
    local t = cute.arch.thread_idx()
    B[t] = A[t] * c
  end, opts or { keep = { "ptx" } })
end
local function run(opts, c) return scale(opts):compile(spec, spec, c or 2) end

describe("the disk cache: hits and misses", function()
  before_each(function() setenv("CUTE_CACHE_MAX_BYTES", nil) end)
  after_each(function() setenv("CUTE_CACHE", default_env("CUTE_CACHE")) end)

  it("stores a compile in a private directory and a new kernel object hits it", function()
    local dir = fresh_dir()
    local r1 = run()
    assert.are.equal("stored", r1.cache.status, r1.cache.detail)
    assert.are.equal(64, #r1.cache.key)
    assert.are.equal("700", mode_of(dir))
    local files = entries(dir)
    assert.are.same({ r1.cache.key .. ".cute" }, files)
    assert.are.equal("600", mode_of(dir .. "/" .. files[1]))
    local k2 = scale()
    local r2 = k2:compile(spec, spec, 2)
    assert.are.equal("hit", r2.cache.status)
    assert.are.equal(r1.cache.key, r2.cache.key)
    assert.are.equal(1, k2.traces) -- (the trace runs: its IR is the key)
    assert.are.equal(r1.ptx, r2.ptx)
    assert.are.equal(r1.cubin, r2.cubin)
    assert.are.equal(r1.ptxas_log, r2.ptxas_log)
    assert.are.same(r1.kernels, r2.kernels)
    -- the code-generation stages did not run
    for i = 2, 6 do assert.is_false(r2.stages[i].ran, r2.stages[i].name) end
    assert.is_true(r1.stages[5].ran)
  end)

  it("holds a cubin and ptxas's report when use_ptxas (ptxas present)", function()
    if not HAVE_PTXAS then return pending("no ptxas on this machine") end
    fresh_dir()
    local r1 = run({ keep = { "ptx", "cubin" }, use_ptxas = true })
    assert.are.equal("stored", r1.cache.status)
    local r2 = run({ keep = { "ptx", "cubin" }, use_ptxas = true })
    assert.are.equal("hit", r2.cache.status)
    assert.truthy(r2.cubin and #r2.cubin > 0)
    assert.are.equal(r1.cubin, r2.cubin)
    assert.truthy(has(r2.ptxas_log, "Used"), r2.ptxas_log)
    assert.are.equal(r1.info.regs, r2.info.regs)
    assert.is_true(r2.info.regs > 0)
    assert.is_false(r2.stages[6].ran) -- (ptxas did not run again)
  end)

  it("a compile that keeps LLVM text compiles fully; cache = false and CUTE_CACHE=0 bypass it", function()
    local dir = fresh_dir()
    local r = run({ keep = { "ptx", "llvm" } })
    assert.are.equal("skipped", r.cache.status)
    assert.truthy(r.llvm)
    assert.are.equal("off", run({ keep = { "ptx" }, cache = false }).cache.status)
    setenv("CUTE_CACHE", "0")
    local ok, r3 = pcall(run)
    setenv("CUTE_CACHE", nil)
    assert.is_true(ok, r3)
    assert.are.equal("off", r3.cache.status)
    assert.are.same({}, entries(dir))
    -- the option does not change the binary: not part of the options key
    assert.are.equal(scale({ cache = false }).options_key, scale({ cache = true }).options_key)
  end)

  it("a compile that fails stores nothing", function()
    if not HAVE_PTXAS then return pending("no ptxas on this machine") end
    local dir = fresh_dir()
    local k = scale({ keep = { "ptx" }, use_ptxas = true, ptxas_options = "--no-such-ptxas-option" })
    local ok, e = pcall(k.compile, k, spec, spec, 41)
    assert.is_false(ok)
    assert.truthy(has(e, "no-such-ptxas-option"), e)
    assert.are.equal("none", k.last_failure.cache.status)
    assert.are.same({}, entries(dir))
  end)

  it("only verified IR is stored (a hit skips the verifier); verify = false may hit", function()
    local dir = fresh_dir()
    local r = run({ keep = { "ptx" }, verify = false }, 31)
    assert.are.equal("skipped", r.cache.status)
    assert.are.same({}, entries(dir))
    assert.are.equal("stored", run(nil, 31).cache.status)
    assert.are.equal("hit", run({ keep = { "ptx" }, verify = false }, 31).cache.status)
  end)

  it("launches keep only the image, so that they can hit (the kernel's own keep wins)", function()
    -- (compile_ir is the launch path's compile; no GPU needed to compile)
    fresh_dir()
    local K = require("cute.kernel")
    local k = scale({})
    local ir = k:trace(spec, spec, 5)
    local cc = K.compile_ir(k, ir)
    assert.are.equal("stored", ffi.string(C.cute_compiled_cache_status(cc)))
    local cc2 = K.compile_ir(k, (k:trace(spec, spec, 5)))
    assert.are.equal("hit", ffi.string(C.cute_compiled_cache_status(cc2)))
    assert.are.equal(ffi.string(C.cute_compiled_ptx(cc)), ffi.string(C.cute_compiled_ptx(cc2)))
    local k3 = scale({ keep = { "ir", "llvm", "ptx" } })
    local cc3 = K.compile_ir(k3, (k3:trace(spec, spec, 5)))
    assert.are.equal("skipped", ffi.string(C.cute_compiled_cache_status(cc3)))
  end)
end)

describe("the disk cache key", function()
  it("changes with the IR and with every option that changes the binary", function()
    fresh_dir()
    local base_key = run().cache.key
    local seen = { [base_key] = "base" }
    local variants = {
      { "IR (another constant)", nil, 3 },
      { "opt_level", { keep = { "ptx" }, opt_level = 1 } },
      { "arch", { keep = { "ptx" }, arch = "sm_80" } },
      { "ptx_version", { keep = { "ptx" }, ptx_version = 83 } },
      { "lineinfo", { keep = { "ptx" }, lineinfo = true } },
      { "fast_math", { keep = { "ptx" }, fast_math = true } },
      { "ftz", { keep = { "ptx" }, ftz = true } },
      { "max_registers", { keep = { "ptx" }, max_registers = 64 } },
      { "max_threads_per_block", { keep = { "ptx" }, max_threads_per_block = 128 } },
      { "enable_assertions", { keep = { "ptx" }, enable_assertions = false } },
    }
    if HAVE_PTXAS then
      -- (the inspection assembles with ptxas when present: use_ptxas = false is another binary)
      variants[#variants + 1] = { "use_ptxas", { keep = { "ptx" }, use_ptxas = false } }
      variants[#variants + 1] = { "ptxas_options", { keep = { "ptx" }, use_ptxas = true, ptxas_options = "-O2" } }
    end
    for _, v in ipairs(variants) do
      local r = run(v[2], v[3])
      assert.are.equal("stored", r.cache.status, v[1] .. ": " .. r.cache.status .. " " .. r.cache.detail)
      assert.is_nil(seen[r.cache.key], v[1] .. " has the key of " .. tostring(seen[r.cache.key]))
      seen[r.cache.key] = v[1]
      -- and the same inputs again: the same key, a hit
      local again = run(v[2], v[3])
      assert.are.equal("hit", again.cache.status, v[1])
      assert.are.equal(r.cache.key, again.cache.key)
    end
  end)

  it("changes with the content of a linked file", function()
    fresh_dir()
    local ll = base .. "/extra.ll"
    write(ll, "define float @cache_spec_helper(float %x) {\n  ret float %x\n}\n")
    local opts = { keep = { "ptx" }, link = { ll } }
    local r1 = run(opts)
    assert.are.equal("stored", r1.cache.status, r1.cache.detail)
    assert.are.equal("hit", run(opts).cache.status)
    write(ll, "define float @cache_spec_helper(float %x) {\n  %y = fadd float %x, 1.0\n  ret float %y\n}\n")
    local r2 = run(opts)
    assert.are.equal("stored", r2.cache.status)
    assert.are_not.equal(r1.cache.key, r2.cache.key)
  end)

  -- child processes: one prints "<status> <key>" for one compile
  local key_script = base .. "/key_child.lua"
  write(key_script, [[
    local cute = require("cute")
    local k = cute.kernel(function(A, B) local t = cute.arch.thread_idx(); B[t] = A[t] + 1 end,
      { keep = { "ptx" }, use_ptxas = arg[1] == "cubin" })
    local s = cute.tensor_spec({ 64 }, cute.float32)
    local r = k:compile(s, s)
    print(r.cache.status .. " " .. r.cache.key)
  ]])

  it("changes with the ptxas binary (another file: CUTE_PTXAS)", function()
    if not HAVE_PTXAS then return pending("no ptxas on this machine") end
    local dir = fresh_dir()
    local copy = base .. "/ptxas_copy"
    assert(os.execute(("cp %s %s"):format(ffi.string(C.cute_ptxas_path()), copy)) == 0)
    local env = "CUTE_CACHE_DIR=" .. dir .. " "
    local run_child = ("%s %s cubin"):format(self_exe(), key_script)
    local o1, o2 = sh(env .. run_child), sh(env .. run_child)
    local o3 = sh(env .. "CUTE_PTXAS=" .. copy .. " " .. run_child)
    local k1, k2, k3 = o1:match("stored (%x+)"), o2:match("hit (%x+)"), o3:match("stored (%x+)")
    assert.truthy(k1, o1)
    assert.are.equal(k1, k2, o2)
    assert.truthy(k3, o3)
    assert.are_not.equal(k1, k3)
  end)

  it("changes with the library's build (its GNU build ID): cuteluajit and luajit + libcute.so", function()
    local lib = io.open("build/libcute.so") and "build/libcute.so"
    local luajit = (sh("command -v luajit")):match("%S+")
    if not (lib and luajit) then return pending("needs build/libcute.so and luajit") end
    local dir = fresh_dir()
    local env = "CUTE_CACHE_DIR=" .. dir .. " "
    local lj = ("CUTE_LIB=%s/%s LUA_PATH='lua/?.lua;lua/?/init.lua;;' %s %s ptx"):format(
      (sh("pwd")):match("%S+"), lib, luajit, key_script)
    local o1 = sh(env .. self_exe() .. " " .. key_script .. " ptx")
    local o2, o3 = sh(env .. lj), sh(env .. lj)
    local k1, k2, k3 = o1:match("stored (%x+)"), o2:match("stored (%x+)"), o3:match("hit (%x+)")
    assert.truthy(k1, o1)
    assert.truthy(k2, o2)
    assert.are.equal(k2, k3, o3)
    assert.are_not.equal(k1, k2)
  end)
end)

describe("the disk cache: corrupt entries are misses, rewritten", function()
  local function entry_file(dir, r) return dir .. "/" .. r.cache.key .. ".cute" end

  -- damage the entry, compile again: a miss naming why, then a good entry (a hit)
  local function check(damage, why)
    local dir = fresh_dir()
    local r1 = run()
    local path = entry_file(dir, r1)
    damage(path, r1)
    local r2 = run()
    assert.are.equal("stored", r2.cache.status, r2.cache.detail)
    assert.truthy(has(r2.cache.detail, why), r2.cache.detail)
    assert.are.equal(r1.ptx, r2.ptx)
    local r3 = run()
    assert.are.equal("hit", r3.cache.status, r3.cache.detail)
    assert.are.equal(r1.ptx, r3.ptx)
  end

  local function patch(path, offset, fn)
    local s = read_file(path)
    local b = s:byte(offset + 1)
    write(path, s:sub(1, offset) .. string.char(fn(b)) .. s:sub(offset + 2))
  end

  it("truncated", function()
    check(function(p) local s = read_file(p); write(p, s:sub(1, #s - 100)) end, "truncated")
    check(function(p) write(p, read_file(p):sub(1, 40)) end, "truncated")
    check(function(p) write(p, "") end, "truncated")
  end)
  it("a flipped byte in the payload (checksum)", function()
    check(function(p) patch(p, 200, function(b) return bit.bxor(b, 0x20) end) end, "checksum mismatch")
    check(function(p) local s = read_file(p); patch(p, #s - 1, function(b) return bit.bxor(b, 1) end) end,
      "checksum mismatch")
  end)
  it("a flipped byte in the header (magic, format version, key)", function()
    check(function(p) patch(p, 0, function(b) return b + 1 end) end, "bad magic")
    check(function(p) patch(p, 8, function(b) return b + 1 end) end, "format version 2")
    check(function(p) patch(p, 20, function(b) return bit.bxor(b, 0xff) end) end, "key mismatch")
    check(function(p) patch(p, 56, function(b) return bit.bxor(b, 0xff) end) end, "checksum mismatch")
  end)
  it("another kernel's entry under this key", function()
    check(function(p)
      local other = run(nil, 7) -- (another IR: another entry in the same directory)
      local dir = p:match("^(.*)/")
      assert(os.execute(("cp %s/%s.cute %s"):format(dir, other.cache.key, p)) == 0)
    end, "key mismatch")
  end)
  it("a symlink is not followed; a group-writable entry is not read", function()
    check(function(p)
      local real = p:gsub("%.cute$", ".real")
      assert(os.rename(p, real))
      assert(os.execute(("ln -s %s %s"):format(real, p)) == 0)
    end, "symlink")
    check(function(p) assert(os.execute("chmod 660 " .. p) == 0) end, "unsafe entry")
  end)
end)

describe("the disk cache directory's safety", function()
  local warned
  before_each(function()
    compile.cache_warned = false
    warned = {}
    compile.announce = function(line) warned[#warned + 1] = line end
  end)
  after_each(function() compile.announce = function(line) io.stderr:write(line, "\n") end end)

  local function refused(prepare, why)
    local dir = fresh_dir()
    assert(os.execute("mkdir -p " .. dir) == 0)
    prepare(dir)
    local r1 = run()
    local r2 = run(nil, 9)
    assert.are.equal("refused", r1.cache.status)
    assert.are.equal("refused", r2.cache.status)
    assert.truthy(has(r1.cache.detail, why), r1.cache.detail)
    assert.truthy(has(r1.cache.detail, dir), r1.cache.detail)
    assert.truthy(r1.ptx and r2.ptx) -- (compiled without the cache)
    assert.are.equal(1, #warned, table.concat(warned, "\n")) -- once per process
    assert.truthy(has(warned[1], why) and has(warned[1], "without the disk cache"), warned[1])
    assert.truthy(warned[1]:find("^[^:]*cache_spec%.lua:%d+: cute: disk cache: "), warned[1]) -- (the user's line)
    local names = entries(dir)
    for _, n in ipairs(names) do assert.falsy(n:match("%.cute$"), "an entry was written: " .. n) end
    -- and the CLI says the same, with a failing status
    local out, rc = sh("CUTE_CACHE_DIR=" .. dir .. " " .. self_exe() .. " --cache stats")
    assert.are.equal(1, rc, out)
    assert.truthy(has(out, why), out)
    os.execute("chmod 700 " .. dir .. "; chown 0 " .. dir)
  end

  it("refuses a directory writable by its group", function()
    refused(function(d) os.execute("chmod 770 " .. d) end, "writable by its group (mode 0770)")
  end)
  it("refuses a directory writable by others", function()
    refused(function(d) os.execute("chmod 707 " .. d) end, "writable by others")
  end)
  it("refuses a directory owned by another user", function()
    local uid = tonumber((sh("id -u")):match("%d+"))
    if uid ~= 0 then return pending("chown to another user needs root") end
    refused(function(d) assert(os.execute("chown nobody " .. d) == 0) end, "not by you (uid 0)")
  end)
  it("creates missing directories 0700; refuses a file in its place", function()
    local dir = fresh_dir() .. "/deeper/still"
    setenv("CUTE_CACHE_DIR", dir)
    assert.are.equal("stored", run().cache.status)
    assert.are.equal("700", mode_of(dir))
    assert.are.equal("700", mode_of(dir .. "/..")) -- (each new component)
    local file = base .. "/plainfile"
    write(file, "x")
    setenv("CUTE_CACHE_DIR", file)
    local r = run()
    assert.are.equal("refused", r.cache.status)
    assert.truthy(has(r.cache.detail, "cannot create the directory") or has(r.cache.detail, "not a directory"),
      r.cache.detail)
  end)
  it("a malformed CUTE_CACHE_MAX_BYTES is refused, naming the value", function()
    fresh_dir()
    setenv("CUTE_CACHE_MAX_BYTES", "12 apples")
    local r = run()
    setenv("CUTE_CACHE_MAX_BYTES", nil)
    assert.are.equal("refused", r.cache.status)
    assert.truthy(has(r.cache.detail, "CUTE_CACHE_MAX_BYTES: expected a size in bytes"), r.cache.detail)
    assert.truthy(has(r.cache.detail, "'12 apples'"), r.cache.detail)
  end)
  it("XDG_CACHE_HOME, then HOME, when CUTE_CACHE_DIR is not set", function()
    setenv("CUTE_CACHE_DIR", nil)
    local x = base .. "/xdg"
    setenv("XDG_CACHE_HOME", x)
    local ok1, d1 = pcall(cute.cache.dir)
    setenv("XDG_CACHE_HOME", "relative/ignored")
    setenv("HOME", base .. "/home")
    local ok2, d2 = pcall(cute.cache.dir)
    setenv("XDG_CACHE_HOME", default_env("XDG_CACHE_HOME"))
    setenv("HOME", default_env("HOME"))
    assert.is_true(ok1, d1)
    assert.are.equal(x .. "/cuteluajit", d1)
    assert.is_true(ok2, d2)
    assert.are.equal(base .. "/home/.cache/cuteluajit", d2)
  end)
end)

describe("the disk cache's size cap", function()
  after_each(function() setenv("CUTE_CACHE_MAX_BYTES", nil) end)

  it("evicts least recently used entries first (a hit makes an entry recent)", function()
    local dir = fresh_dir()
    local keys, size = {}, 0
    for c = 1, 4 do
      local r = run(nil, c)
      keys[c] = r.cache.key
      local f = io.open(dir .. "/" .. r.cache.key .. ".cute", "rb")
      size = math.max(size, f:seek("end") + 64) -- (+64: entries differ by a few bytes, e.g. ptxas's "Compile time")
      f:close()
      -- distinct, ordered time stamps (mtime is the LRU clock)
      os.execute(("touch -m -d '@%d' %s/%s.cute"):format(1700000000 + c * 10, dir, r.cache.key))
    end
    -- entry 1 used again: now the most recent
    assert.are.equal("hit", run(nil, 1).cache.status)
    -- room for three entries: the next store evicts the least recent (entry 2) ...
    setenv("CUTE_CACHE_MAX_BYTES", tostring(3 * size + math.floor(size / 2)))
    local r5 = run(nil, 5)
    assert.are.equal("stored", r5.cache.status)
    local have = {}
    for _, n in ipairs(entries(dir)) do have[n:sub(1, 64)] = true end
    assert.is_nil(have[keys[2]], "the least recently used entry was kept")
    assert.is_true(have[keys[1]] and have[keys[4]] and have[r5.cache.key] or false)
    local st = cute.cache.stats()
    assert.is_true(st.bytes <= 3 * size + math.floor(size / 2), tostring(st.bytes))
    assert.are.equal(3, st.entries)
    -- cute.cache.evict(cap) and the K/M/G suffixes
    assert.are.equal(2, cute.cache.evict(size))
    assert.are.equal(1, cute.cache.stats().entries)
    setenv("CUTE_CACHE_MAX_BYTES", "2K")
    assert.are.equal(2048, cute.cache.stats().cap)
    setenv("CUTE_CACHE_MAX_BYTES", "1G")
    assert.are.equal(2 ^ 30, cute.cache.stats().cap)
  end)

  it("the entry just written is kept even when alone above the cap", function()
    local dir = fresh_dir()
    setenv("CUTE_CACHE_MAX_BYTES", "10")
    local r = run(nil, 11)
    assert.are.equal("stored", r.cache.status)
    local r2 = run(nil, 12)
    assert.are.same({ r2.cache.key .. ".cute" }, entries(dir))
  end)
end)

describe("cuteluajit --cache", function()
  it("list, stats and clear", function()
    local dir = fresh_dir()
    local r1, r2 = run(nil, 21), run(nil, 22)
    local env = "CUTE_CACHE_DIR=" .. dir .. " "
    local out, rc = sh(env .. self_exe() .. " --cache list")
    assert.are.equal(0, rc, out)
    assert.truthy(has(out, "key") and has(out, "kernels"), out)
    for _, r in ipairs({ r1, r2 }) do
      local line = out:match(r.cache.key:sub(1, 12) .. "[^\n]*")
      assert.truthy(line, out)
      local kname = next(r.kernels)
      assert.truthy(has(line, kname) and has(line, r.arch), line)
      assert.truthy(has(line, r.cubin and "cubin" or "ptx"), line)
    end
    -- a corrupt entry is listed as such
    local p = dir .. "/" .. r2.cache.key .. ".cute"
    write(p, read_file(p):sub(1, 150))
    out = sh(env .. self_exe() .. " --cache list")
    assert.truthy(has(out:match(r2.cache.key:sub(1, 12) .. "[^\n]*"), "corrupt (truncated"), out)
    out, rc = sh(env .. "CUTE_CACHE_MAX_BYTES=1M " .. self_exe() .. " --cache stats")
    assert.are.equal(0, rc, out)
    assert.truthy(has(out, "directory " .. dir), out)
    assert.truthy(has(out, "entries 2\n"), out)
    assert.truthy(has(out, "cap 1048576\n"), out)
    -- a writer's temp file in flight, and a crashed writer's (an hour old)
    write(dir .. "/.tmp-inflight", "x")
    write(dir .. "/.tmp-crashed", "x")
    os.execute("touch -m -d '1 hour ago' " .. dir .. "/.tmp-crashed")
    out, rc = sh(env .. self_exe() .. " --cache clear")
    assert.are.equal(0, rc, out)
    assert.truthy(has(out, "removed 2 entries from " .. dir), out)
    assert.are.same({ ".tmp-inflight" }, entries(dir))
    out = sh(env .. self_exe() .. " --cache stats")
    assert.truthy(has(out, "entries 0\n") and has(out, "temp files 1\n"), out)
    out, rc = sh(env .. self_exe() .. " --cache frobnicate")
    assert.are.equal(1, rc)
    assert.truthy(has(out, "expected list, stats or clear, got frobnicate"), out)
  end)
end)

describe("the disk cache shared by concurrent processes", function()
  -- n processes, each compiling the shared kernels and one of its own, three
  -- rounds; prints "<status> <key> <sha256 of the PTX>" per compile
  local script = base .. "/child.lua"
  write(script, [[
    local cute = require("cute")
    local me = tonumber(arg[1])
    local s = cute.tensor_spec({ 256 }, cute.float32)
    local function mk() return cute.kernel(function(A, B, c) local t = cute.arch.thread_idx(); B[t] = A[t] * c end,
      { keep = { "ptx" } }) end
    for round = 1, 3 do
      for _, c in ipairs({ 1, 2, 3, 4, 1000 + me }) do
        local r = mk():compile(s, s, c)
        print(("%s %s %s c=%d"):format(r.cache.status, r.cache.key, cute.cache.sha256(r.ptx), c))
      end
    end
  ]])

  local function concurrent(n)
    local dir = fresh_dir()
    local outs = {}
    for i = 1, n do outs[i] = ("%s/out%d"):format(base, i) end
    local cmd = {}
    for i = 1, n do
      cmd[#cmd + 1] = ("(CUTE_CACHE_DIR=%s %s %s %d > %s 2>&1; echo \"rc=$?\" >> %s) &"):format(dir,
        self_exe(), script, i, outs[i], outs[i])
    end
    assert(os.execute(table.concat(cmd, " ") .. " wait") == 0)
    local ptx_of, stored, hits = {}, 0, 0
    for i = 1, n do
      local out = read_file(outs[i])
      assert.truthy(has(out, "rc=0"), out)
      local lines = 0
      for status, key, sum, c in out:gmatch("(%a+) (%x+) (%x+) c=(%d+)") do
        lines = lines + 1
        assert.truthy(status == "stored" or status == "hit", out)
        if status == "hit" then hits = hits + 1 else stored = stored + 1 end
        -- one key, one PTX: no process ever read another kernel's code
        assert.are.equal(ptx_of[key] or sum, sum, "two PTX texts for key " .. key)
        ptx_of[key] = sum
        ptx_of[c] = ptx_of[c] or key
        assert.are.equal(ptx_of[c], key)
      end
      assert.are.equal(15, lines, out)
    end
    -- every entry there and whole; no temp file left behind
    local names = entries(dir)
    assert.are.equal(4 + n, #names, table.concat(names, " "))
    for _, name in ipairs(names) do assert.truthy(name:match("^%x+%.cute$"), name) end
    local list = cute.cache.list()
    assert.falsy(has(list, "corrupt"), list)
    assert.are.equal(0, cute.cache.stats().temps)
    -- later rounds hit: at most one store per key per process
    assert.is_true(stored <= (4 + 1) * n, tostring(stored))
    assert.is_true(hits >= 2 * 5 * n, tostring(hits))
  end

  it("two processes", function() concurrent(2) end)
  it("eight processes", function() concurrent(8) end)
end)

describe("a second process launches from the cache", function()
  U.device_it("its first launch hits and computes the right values", "the disk cache holds cubins for the GPU",
    function()
    local dir = fresh_dir()
    local script = base .. "/gpu_child.lua"
    write(script, [[
      local ffi = require("ffi")
      local cute = require("cute")
      local C = require("cute.ffi").C
      local n = 4096
      local k = cute.kernel(function(A, B, C_)
        local i = cute.arch.block_idx() * 256 + cute.arch.thread_idx()
        C_[i] = A[i] * 3 + B[i]
      end)
      math.randomseed(tonumber(arg[1]))
      local a, b = {}, {}
      for i = 1, n do a[i], b[i] = math.random() * 10 - 5, math.random() * 10 - 5 end
      local A = cute.from_host(a, cute.float32, { n })
      local B = cute.from_host(b, cute.float32, { n })
      local Cd = cute.empty({ n }, cute.float32)
      Cd:fill(0 / 0) -- poison: every element must be written
      local t0 = cute.now_us()
      k:launch{ grid = n / 256, block = 256 }(A, B, Cd)
      cute.synchronize()
      local first = cute.now_us() - t0
      local e = k:entry(A, B, Cd)
      local got = Cd:to_host() -- (an ffi array: 0-based)
      local bad = 0
      for i = 1, n do
        local want = a[i] * 3 + b[i]
        if not (math.abs(got[i - 1] - want) <= 1e-5 * (1 + math.abs(want))) then bad = bad + 1 end
      end
      print(("%s bad=%d first_us=%.0f"):format(ffi.string(C.cute_compiled_cache_status(e.cc)), bad, first))
    ]])
    local env = "CUTE_CACHE_DIR=" .. dir .. " "
    local o1 = sh(env .. self_exe() .. " " .. script .. " 1")
    local o2 = sh(env .. self_exe() .. " " .. script .. " 2")
    assert.truthy(has(o1, "stored bad=0"), o1)
    assert.truthy(has(o2, "hit bad=0"), o2)
  end)
end)

teardown(function()
  for name, v in pairs(saved_env) do setenv(name, v or nil) end
  os.execute("chmod -R u+rwx " .. base .. " 2>/dev/null; rm -rf " .. base)
end)
