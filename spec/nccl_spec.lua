-- cute.nccl without a GPU (docs/NCCL.md): where the library is searched for
-- and the error when it is absent (child processes, so each starts with
-- nothing loaded); the real libnccl.so.2 where one is installed (version,
-- NCCL's own error text: no GPU needed); and the marshalling of every call
-- through build/libnccl_stub.so, a stand-in NCCL that logs the arguments it
-- receives (tests/nccl_stub.c).  The declarations themselves are checked
-- against nccl.h by tests/nccl_abi.c (tools/run_tests.sh).  The collectives
-- on GPUs: spec/nccl_gpu_spec.lua.
local ffi = require("ffi")
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local nccl = cute.nccl
local nccl_env = require("cute.nccl_env")
local expect_error, sh = util.expect_error, util.sh

local exe = util.self_exe()
local STUB = "build/libnccl_stub.so"
local have_stub = io.open(STUB) ~= nil
pcall(ffi.cdef, [[
const char *cute_nccl_stub_log(void);
void cute_nccl_stub_reset(void);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
]])

local function tmpdir()
  local p = io.popen("mktemp -d")
  local d = p:read("*l")
  p:close()
  return d
end

-- run Lua code in a fresh child with an environment prefix: output, status.
-- no_cache: under the dynamic loader's --inhibit-cache, which hides libraries
-- that only ld.so.cache knows of (as /usr/local/cuda's libnccl.so.2 here)
local LDSO = "/lib64/ld-linux-x86-64.so.2"
local function child(env, code, no_cache)
  local f = os.tmpname()
  local fh = assert(io.open(f, "w"))
  fh:write(code)
  fh:close()
  local out, rc = sh(("env -u CUTE_NCCL_LIB %s %s%s %s"):format(env, no_cache and (LDSO .. " --inhibit-cache ") or "",
    exe, f))
  os.remove(f)
  return out, rc
end

-- whether dlopen("libnccl.so.2") finds a library here (in a child)
local system_nccl = {}
local function has_system_nccl(no_cache)
  local k = no_cache and 2 or 1
  if system_nccl[k] == nil then
    local out = child("", "print(pcall(require('ffi').load, 'libnccl.so.2') and 'YES' or 'NO')", no_cache)
    system_nccl[k] = out:find("YES", 1, true) ~= nil
  end
  return system_nccl[k]
end
-- a way to run a child that finds no libnccl.so.2 by name: true (plain),
-- "no_cache" (the loader's --inhibit-cache), or nil when there is none
local function without_system_nccl()
  if not has_system_nccl() then return true end
  if io.open(LDSO) and not has_system_nccl(true) then return "no_cache" end
end

describe("nccl: the search for libnccl.so.2", function()
  it("CUTE_NCCL_LIB alone when set", function()
    local out = child("CUTE_NCCL_LIB=/opt/x/libnccl.so.2",
      "for _, p in ipairs(require('cute').nccl.search_list()) do print('P ' .. p) end")
    assert.are.equal("P /opt/x/libnccl.so.2\n", out)
  end)

  it("the library path, then site-packages of VIRTUAL_ENV, CONDA_PREFIX, ~/.local and the system, in order", function()
    local d = tmpdir()
    local venv_lib = d .. "/venv/lib/python3.11/site-packages/nvidia/nccl/lib"
    -- (the stand-in where it is built; else an empty file: the list only needs a match)
    local make_lib = have_stub and ("ln -s %s/%s %s/libnccl.so.2"):format(os.getenv("PWD"), STUB, venv_lib)
      or ("touch %s/libnccl.so.2"):format(venv_lib)
    assert(os.execute(("mkdir -p %s %s/conda %s/home && %s"):format(venv_lib, d, d, make_lib)) == 0)
    local out = child(("VIRTUAL_ENV=%s/venv CONDA_PREFIX=%s/conda HOME=%s/home"):format(d, d, d),
      "for _, p in ipairs(require('cute').nccl.search_list()) do print('P ' .. p) end")
    local list = {}
    for p in out:gmatch("P ([^\n]+)") do list[#list + 1] = p end
    assert.are.equal("libnccl.so.2", list[1])
    assert.are.equal(venv_lib .. "/libnccl.so.2", list[2]) -- the match, not the pattern
    assert.are.equal(d .. "/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", list[3])
    assert.are.equal(d .. "/home/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", list[4])
    assert.truthy(list[5]:find("^/usr/local/lib/python3"), list[5])
    assert.truthy(list[#list]:find("^/usr/lib/python3"), list[#list])
    -- the default search loads the first place that works: the library path
    -- where it has NCCL, else the venv's (the stand-in)
    local vars = ("VIRTUAL_ENV=%s/venv CONDA_PREFIX=%s/conda HOME=%s/home"):format(d, d, d)
    local code = "print('L ' .. require('cute').nccl.library())"
    if has_system_nccl() then
      local lib = child(vars, code)
      assert.truthy(lib:find("L libnccl.so.2\n", 1, true), lib)
    end
    local how = without_system_nccl()
    if how and have_stub then
      local lib = child(vars, code, how == "no_cache")
      assert.truthy(lib:find("L " .. venv_lib .. "/libnccl.so.2\n", 1, true), lib)
    end
    os.execute("rm -rf " .. d)
  end)

  it("CUTE_NCCL_LIB that does not exist: an error naming it, nothing else tried", function()
    local out = child("CUTE_NCCL_LIB=/nonexistent/libnccl.so.2", "require('cute').nccl.version()")
    assert.truthy(out:find("CUTE_NCCL_LIB=/nonexistent/libnccl.so.2: not found", 1, true), out)
    assert.truthy(out:find("unset it to search", 1, true), out)
    assert.falsy(out:find("python3", 1, true), out)
  end)

  it("a library that is not NCCL: the missing entry point", function()
    local lib = util.read_file("build/libcute.so") and "build/libcute.so" or "lib/libcute.so"
    if not util.read_file(lib) then pending("no libcute.so here to try") return end
    local out = child("CUTE_NCCL_LIB=" .. lib, "require('cute').nccl.version()")
    assert.truthy(out:find("has no ncclGetVersion", 1, true), out)
  end)

  it("nothing anywhere: every place tried, with the reason, and what to do", function()
    local how = without_system_nccl()
    if not how then
      pending("libnccl.so.2 is on this machine's library path and cannot be hidden: checked where it is not (CI)")
      return
    end
    local d = tmpdir()
    local out = child(("VIRTUAL_ENV=%s/none HOME=%s"):format(d, d), "require('cute').nccl.version()", how == "no_cache")
    assert.truthy(out:find("no NCCL library (libnccl.so.2) found; tried:", 1, true), out)
    assert.truthy(out:find("\n  libnccl.so.2: cannot open shared object file", 1, true), out)
    assert.truthy(out:find("\n  " .. d .. "/none/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2: no match",
      1, true), out)
    assert.truthy(out:find("\n  " .. d .. "/.local/lib/python3*/site-packages", 1, true), out)
    assert.truthy(out:find("python3's site-packages and sys.path", 1, true), out)
    assert.truthy(out:find("set CUTE_NCCL_LIB", 1, true), out)
    os.execute("rm -rf " .. d)
  end)

  it("nccl.load(path) of a missing file names it", function()
    expect_error(function() nccl.load("/nonexistent/libnccl.so.2") end,
      "cannot load NCCL from /nonexistent/libnccl.so.2: not found")
    expect_error(function() nccl.load(42) end, "nccl.load: path 42 is not a string")
  end)
end)

describe("nccl: the real library, no GPU needed", function()
  local real = false
  setup(function()
    nccl._unload()
    real = pcall(nccl.load) -- wherever the search finds one (site-packages on the GPU host)
  end)
  teardown(function() nccl._unload() end)

  it("version() is the library's and, with nccl.h here, the header's", function()
    if not real then pending("no libnccl.so.2 on this machine") return end
    local v = nccl.version()
    assert.truthy(v:find("^%d+%.%d+%.%d+$"), v)
    local code = nccl.version_code()
    assert.are.equal(v, ("%d.%d.%d"):format(math.floor(code / 10000), math.floor(code % 10000 / 100), code % 100))
    -- the library of /usr/local/cuda (on the library path here) is the version of its nccl.h
    local h = util.read_file("/usr/local/cuda/include/nccl.h")
    if h and nccl.library() == "libnccl.so.2" and util.read_file("/usr/local/cuda/lib64/libnccl.so.2") then
      local want = h:match("NCCL_MAJOR (%d+)") .. "." .. h:match("NCCL_MINOR (%d+)") .. "." .. h:match("NCCL_PATCH (%d+)")
      assert.are.equal(want, v)
    end
  end)

  it("NCCL's own error strings, and unique ids", function()
    if not real then pending("no libnccl.so.2 on this machine") return end
    assert.truthy(nccl.error_string(4):find("invalid argument", 1, true), nccl.error_string(4))
    local a, b = nccl.unique_id(), nccl.unique_id()
    assert.are.equal(256, #a:hex())
    assert.are_not.equal(a:hex(), b:hex())
    assert.are.equal(a:hex(), nccl.id_from_hex(a:hex()):hex())
  end)

  it("without a GPU, init_all fails with NCCL's message", function()
    if not real then pending("no libnccl.so.2 on this machine") return end
    if cute.available() then pending("a GPU is here: spec/nccl_gpu_spec.lua") return end
    expect_error(function() nccl.init_all({ 0 }) end, "ncclCommInitAll(1 devices): ncclUnhandledCudaError (1): ",
      "; last error: ")
  end)
end)

-- the stand-in library's log, as lines, since the last reset
local stub_lib
local function log()
  local lines = {}
  for l in ffi.string(stub_lib.cute_nccl_stub_log()):gmatch("[^\n]+") do lines[#lines + 1] = l end
  stub_lib.cute_nccl_stub_reset()
  return lines
end

local function stub_describe(name, fn)
  describe(name, function()
    setup(function()
      if not have_stub then return end
      nccl._unload()
      nccl.load(STUB)
      stub_lib = ffi.load(STUB)
      stub_lib.cute_nccl_stub_reset()
    end)
    teardown(function() nccl._unload() end)
    fn()
  end)
end
local function sit(name, fn)
  it(name, function()
    if not have_stub then pending("build/libnccl_stub.so not built (make)") return end
    fn()
  end)
end

local A, B, S = 0x7f0000001000, 0x7f0000100000, 0x5000
local function dev(addr, n, dtype) return cute.from_ptr(addr, { n }, dtype) end

stub_describe("nccl: every call reaches NCCL with the right arguments (stand-in library)", function()
  -- the ncclDataType_t of each dtype: nccl.h's numbers
  local want_dt = { int8 = 0, uint8 = 1, int32 = 2, uint32 = 3, int64 = 4, uint64 = 5, float16 = 6,
    float32 = 7, float64 = 8, bfloat16 = 9, float8_e4m3fn = 10, float8_e5m2 = 11 }

  sit("init_all: one communicator per device, rank k - 1 on devices[k]", function()
    log()
    local comms = nccl.init_all({ 3, 1 })
    assert.are.same({ "ncclCommInitAll ndev=2 devs=3,1" }, log())
    assert.are.equal(2, #comms)
    assert.are.same({ 0, 2, 3 }, { comms[1]:rank(), comms[1]:size(), comms[1]:device() })
    assert.are.same({ 1, 2, 1 }, { comms[2]:rank(), comms[2]:size(), comms[2]:device() })
    expect_error(function() nccl.init_all({ 0, 0 }) end, "nccl.init_all: device 0 is listed twice")
    expect_error(function() nccl.init_all({}) end, "nccl.init_all: devices")
    expect_error(function() nccl.init_all({ 0, -1 }) end, "devices[2] is -1")
  end)

  sit("all_reduce, every dtype and op, in place and out of place, on a stream", function()
    log()
    local c = nccl.init_all({ 0, 1 })[2]
    log()
    for name, code in pairs(want_dt) do
      assert.are.equal(code, nccl.dtypes[name], name)
      local dt = cute[name]
      c:all_reduce(dev(A, 5, dt))
      c:all_reduce(dev(A, 7, dt), dev(B, 7, dt), "max", ffi.cast("void *", S))
      local l = log()
      assert.are.same({
        ("ncclAllReduce send=%#x recv=%#x count=5 dtype=%d op=0 comm=1 stream=0"):format(A, A, code),
        ("ncclAllReduce send=%#x recv=%#x count=7 dtype=%d op=2 comm=1 stream=%#x"):format(A, B, code, S),
      }, l)
    end
    for op, code in pairs({ sum = 0, prod = 1, max = 2, min = 3, avg = 4 }) do
      c:all_reduce(dev(A, 1, cute.float32), nil, op)
      assert.truthy(log()[1]:find(" op=" .. code .. " ", 1, true), op)
    end
  end)

  sit("all_gather and reduce_scatter count per rank; broadcast and reduce pass the root", function()
    log()
    local c = nccl.init_all({ 0, 1 })[1]
    log()
    c:all_gather(dev(A, 3, cute.bfloat16), dev(B, 6, cute.bfloat16))
    c:reduce_scatter(dev(A, 8, cute.int64), dev(B, 4, cute.int64), "min", ffi.cast("void *", S))
    c:broadcast(dev(A, 9, cute.uint8), dev(B, 9, cute.uint8), 1)
    c:broadcast(nil, dev(B, 2, cute.int32), 0) -- in place
    c:reduce(dev(A, 4, cute.float64), nil, "prod", 1)
    c:send(dev(A, 11, cute.float16), 1, ffi.cast("void *", S))
    c:recv(dev(B, 12, cute.float16), 1)
    assert.are.same({
      ("ncclAllGather send=%#x recv=%#x count=3 dtype=9 comm=0 stream=0"):format(A, B),
      ("ncclReduceScatter send=%#x recv=%#x count=4 dtype=4 op=3 comm=0 stream=%#x"):format(A, B, S),
      ("ncclBroadcast send=%#x recv=%#x count=9 dtype=1 root=1 comm=0 stream=0"):format(A, B),
      ("ncclBroadcast send=%#x recv=%#x count=2 dtype=2 root=0 comm=0 stream=0"):format(B, B),
      ("ncclReduce send=%#x recv=%#x count=4 dtype=8 op=1 root=1 comm=0 stream=0"):format(A, A),
      ("ncclSend send=%#x recv=0 count=11 dtype=6 peer=1 comm=0 stream=%#x"):format(A, S),
      ("ncclRecv send=0 recv=%#x count=12 dtype=6 peer=1 comm=0 stream=0"):format(B),
    }, log())
  end)

  sit("group calls: start and end around fn, also when fn raises", function()
    log()
    local comms = nccl.init_all({ 0, 1 })
    log()
    local r = nccl.group(function()
      for _, c in ipairs(comms) do c:all_reduce(dev(A, 2, cute.float32)) end
      return 42
    end)
    assert.are.equal(42, r)
    local l = log()
    assert.are.same({ "ncclGroupStart", "ncclGroupEnd" }, { l[1], l[4] })
    assert.truthy(l[2]:find("comm=0", 1, true) and l[3]:find("comm=1", 1, true))
    expect_error(function() nccl.group(function() comms[1]:all_reduce("x") end) end,
      "comm:all_reduce: send x is not a device tensor")
    assert.are.same({ "ncclGroupStart", "ncclGroupEnd" }, log())
    nccl.group_start(); nccl.group_end()
    assert.are.same({ "ncclGroupStart", "ncclGroupEnd" }, log())
  end)

  sit("NCCL's errors are Lua errors with NCCL's message (ncclGetLastError)", function()
    local c = nccl.init_all({ 0, 1 })[1]
    expect_error(function() c:broadcast(dev(A, 4, cute.float32), nil, 5) end,
      "ncclBroadcast(count=4, root=5): ncclInvalidArgument (4): invalid argument (stub); last error: stub: Broadcast: invalid root 5 (nranks 2)")
    expect_error(function() c:send(dev(A, 4, cute.float32), 7) end, "ncclSend(count=4, peer=7): ncclInvalidArgument",
      "invalid peer 7")
  end)

  sit("bad arguments: named, before NCCL sees them", function()
    local c = nccl.init_all({ 0, 1 })[1]
    log()
    local f32 = dev(A, 4, cute.float32)
    expect_error(function() c:all_reduce(f32, dev(B, 4, cute.float16)) end,
      "comm:all_reduce: send is float32 but recv is float16")
    expect_error(function() c:all_reduce(f32, dev(B, 5, cute.float32)) end, "send has 4 elements but recv has 5")
    expect_error(function() c:all_gather(f32, dev(B, 4, cute.float32)) end,
      "comm:all_gather: recv has 4 elements, not nranks x send = 2 x 4 = 8")
    expect_error(function() c:reduce_scatter(f32, dev(B, 4, cute.float32)) end,
      "comm:reduce_scatter: send has 4 elements, not nranks x recv = 2 x 4 = 8")
    expect_error(function() c:all_reduce(f32, nil, "mean") end, "comm:all_reduce: op mean is not one of sum, prod")
    expect_error(function() c:all_reduce(dev(A, 4, cute.int16)) end, "send has dtype int16, which NCCL has no datatype for")
    expect_error(function() c:all_reduce(cute.from_ptr(A, { 4, 4 }, cute.float32, { 1, 4 })) end,
      "comm:all_reduce: send", "is not compact")
    expect_error(function() c:broadcast(nil, nil, 0) end, "comm:broadcast: needs a send or a recv tensor")
    expect_error(function() c:send(f32, 0.5) end, "comm:send: peer 0.5 is not an integer")
    expect_error(function() c:all_reduce(f32, nil, nil, "s") end, "comm:all_reduce: stream s is not a cute.stream")
    expect_error(function() c.all_reduce(f32) end, "is not an NCCL communicator")
    -- a tensor or a stream of another device than the communicator's
    local other = dev(B, 4, cute.float32)
    other.device = 1
    expect_error(function() c:all_reduce(other) end,
      "comm:all_reduce: send is on device 1 but the communicator (rank 0) is on device 0")
    local s = setmetatable({ handle = ffi.cast("void *", S), device = 1 }, getmetatable(cute.default_stream))
    expect_error(function() c:all_reduce(f32, nil, nil, s) end, "the stream is on device 1 but the communicator")
    assert.are.same({}, log())
  end)

  sit("destroy and abort; a destroyed communicator is refused", function()
    log()
    local comms = nccl.init_all({ 0, 1 })
    log()
    comms[1]:destroy()
    comms[2]:abort()
    assert.are.same({ "ncclCommDestroy comm=0", "ncclCommAbort comm=1" }, log())
    expect_error(function() comms[1]:all_reduce(dev(A, 1, cute.float32)) end, "comm:all_reduce", "was destroyed")
    expect_error(function() comms[1]:destroy() end, "was destroyed")
    assert.is_nil(nccl.init_all({ 0 })[1]:async_error())
  end)

  sit("init_rank passes nranks, rank and the id's 128 bytes", function()
    local id = nccl.unique_id()
    log()
    local c = nccl.init_rank({ nranks = 4, rank = 3, id = id })
    assert.are.same({ 3, 4 }, { c:rank(), c:size() })
    local b = { id.bytes:byte(1), id.bytes:byte(128) }
    local s = function(x) return x >= 128 and x - 256 or x end -- the stub logs signed chars
    assert.truthy(log()[1]:find(("ncclCommInitRank nranks=4 rank=3 id0=%d id127=%d "):format(s(b[1]), s(b[2])), 1, true))
    nccl.init_rank({ nranks = 2, rank = 1, id = id:hex() })
    expect_error(function() nccl.init_rank({ nranks = 2, rank = 2, id = id }) end, "nccl.init_rank: rank 2 is not below nranks 2")
    expect_error(function() nccl.init_rank({ nranks = 2, rank = 0, id = "abc" }) end, "nccl.init_rank: id abc is not")
    expect_error(function() nccl.id_from_hex("zz") end, "nccl.id_from_hex: \"zz\" (2 characters) is not 256 hexadecimal digits")
  end)

  sit("data types and ops newer than the library: a clear error naming both versions", function()
    ffi.C.setenv("CUTE_NCCL_STUB_VERSION", "21003", 1)
    nccl._unload()
    nccl.load(STUB)
    ffi.C.unsetenv("CUTE_NCCL_STUB_VERSION")
    assert.are.equal("2.10.3", nccl.version())
    local c = nccl.init_all({ 0, 1 })[1]
    c:all_reduce(dev(A, 2, cute.bfloat16), nil, "avg") -- 2.10 has both
    expect_error(function() c:all_reduce(dev(A, 2, cute.float8_e4m3fn)) end,
      "ncclAllReduce: ncclFloat8e4m3 needs NCCL 2.24.0 or newer; build/libnccl_stub.so is NCCL 2.10.3")
    expect_error(function() c:send(dev(A, 2, cute.float8_e5m2), 1) end, "ncclSend: ncclFloat8e5m2 needs NCCL 2.24.0")
    ffi.C.setenv("CUTE_NCCL_STUB_VERSION", "2804", 1)
    nccl._unload()
    nccl.load(STUB)
    ffi.C.unsetenv("CUTE_NCCL_STUB_VERSION")
    assert.are.equal("2.8.4", nccl.version())
    c = nccl.init_all({ 0, 1 })[1]
    expect_error(function() c:all_reduce(dev(A, 2, cute.float32), nil, "avg") end, "ncclAvg needs NCCL 2.10.0")
    expect_error(function() c:all_gather(dev(A, 2, cute.bfloat16), dev(B, 4, cute.bfloat16)) end,
      "ncclAllGather: ncclBfloat16 needs NCCL 2.10.0")
  end)

  sit("a communicator of a library that was switched away from is refused", function()
    local c = nccl.init_all({ 0, 1 })[1]
    nccl._unload()
    nccl.load(STUB)
    expect_error(function() c:all_reduce(dev(A, 1, cute.float32)) end,
      "belongs to an NCCL library that is no longer loaded (now build/libnccl_stub.so)")
    nccl._unload()
    expect_error(function() c:all_reduce(dev(A, 1, cute.float32)) end, "(none is loaded now)")
    nccl.load(STUB)
  end)
end)

stub_describe("nccl.init_from_env: ranks from the environment, the id through a file", function()
  local d
  before_each(function() d = tmpdir() end)
  after_each(function() os.execute("rm -rf " .. d) end)
  local function env(t)
    t.MASTER_ADDR, t.MASTER_PORT, t.TORCHELASTIC_RUN_ID = "127.0.0.1", "29500", "run7"
    return t
  end

  sit("the world from torchrun's, Open MPI's or PMI's variables", function()
    assert.are.same({ 1, 2, 1, "run7-127.0.0.1-29500-ws2" },
      { nccl.world(env({ RANK = "1", WORLD_SIZE = "2", LOCAL_RANK = "1" })) })
    assert.are.same({ 3, 4, 1, "ws4" },
      { nccl.world({ OMPI_COMM_WORLD_RANK = "3", OMPI_COMM_WORLD_SIZE = "4", OMPI_COMM_WORLD_LOCAL_RANK = "1" }) })
    local r, n = nccl.world({ PMI_RANK = "0", PMI_SIZE = "1" })
    assert.are.same({ 0, 1 }, { r, n })
    expect_error(function() nccl.world({}) end, "nccl.world: the rank and world size are not in the environment")
    expect_error(function() nccl.world({ RANK = "2", WORLD_SIZE = "2" }) end, "RANK=2 is not below WORLD_SIZE=2")
    expect_error(function() nccl.world({ RANK = "x", WORLD_SIZE = "2" }) end, "RANK=x is not an integer")
    assert.are.equal("/t/cute-nccl-run7-1.2.3.4-5.id", nccl_env.id_file("run7-1.2.3.4-5", function(n)
      return ({ TMPDIR = "/t" })[n] end))
  end)

  sit("rank 0 writes the id, initialises, and removes the file", function()
    local path = d .. "/id"
    local e = env({ RANK = "0", WORLD_SIZE = "1" })
    log()
    local c = nccl.init_from_env({ env = e, id_file = path, device = false })
    assert.are.same({ 0, 1 }, { c:rank(), c:size() })
    local l = log()
    assert.are.equal("ncclGetUniqueId", l[1])
    assert.truthy(l[2]:find("ncclCommInitRank nranks=1 rank=0 ", 1, true), l[2])
    assert.is_nil(io.open(path))
  end)

  sit("other ranks read rank 0's file of this run", function()
    local path = d .. "/id"
    local id = nccl.unique_id()
    nccl_env.write_id(path, "run7-127.0.0.1-29500-ws2", id:hex(), "test")
    log()
    local c = nccl.init_from_env({ env = env({ RANK = "1", WORLD_SIZE = "2" }), id_file = path, device = false })
    assert.are.equal(1, c:rank())
    local b1 = id.bytes:byte(1)
    assert.truthy(log()[1]:find(("rank=1 id0=%d "):format(b1 >= 128 and b1 - 256 or b1), 1, true))
    assert.truthy(io.open(path)) -- only rank 0 removes it
  end)

  sit("a file of another run or an old one is never read: the wait ends with an error naming the file", function()
    local path = d .. "/id"
    nccl_env.write_id(path, "run6-127.0.0.1-29500-ws2", nccl.unique_id():hex(), "test")
    local function wait(t)
      return util.err_of(function()
        nccl.init_from_env({ env = env({ RANK = "1", WORLD_SIZE = "2" }), id_file = path, device = false, timeout_s = t })
      end)
    end
    local e = wait(0.2)
    assert.truthy(e:find("nccl.init_from_env: rank 1 waited 0.2 s for rank 0's NCCL id in " .. path, 1, true), e)
    assert.truthy(e:find('written for run key "run6-127.0.0.1-29500-ws2", not "run7-127.0.0.1-29500-ws2"', 1, true), e)
    local f = assert(io.open(path, "w"))
    f:write(("cute-nccl-id 1\nkey=run7-127.0.0.1-29500-ws2\ntime=%d\nid=%s\n"):format(os.time() - 3600, ("ab"):rep(128)))
    f:close()
    e = wait(0.2)
    assert.truthy(e:find("an earlier run's", 1, true), e)
    os.remove(path)
    e = wait(0.1)
    assert.truthy(e:find("(last look: no file)", 1, true), e)
  end)

  sit("two processes: rank 1 waits for the file rank 0 writes later, both get rank 0's id", function()
    local script = d .. "/rank.lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
local ffi = require("ffi")
local nccl = require("cute").nccl
nccl.load(%q)
local c = nccl.init_from_env({ device = false, timeout_s = 30 })
ffi.cdef("const char *cute_nccl_stub_log(void);")
local l = ffi.string(ffi.load(%q).cute_nccl_stub_log())
print(("R%%d %%s"):format(c:rank(), l:match("id0=%%S+ id127=%%S+")))
]]):format(STUB, STUB))
    f:close()
    local vars = ("WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 TORCHELASTIC_RUN_ID=spec%d TMPDIR=%s"):format(
      os.time(), d)
    -- (rank 0's init returns after 1 s, as NCCL's does once rank 1 joined: the file lives that long)
    local out = sh(("(RANK=1 LOCAL_RANK=1 %s %s %s > %s/r1 2>&1 &) ; sleep 0.5; RANK=0 LOCAL_RANK=0 CUTE_NCCL_STUB_INIT_MS=1000 %s %s %s; "
      .. "for i in $(seq 100); do grep -q R1 %s/r1 && break; sleep 0.1; done; cat %s/r1; ls %s")
      :format(vars, exe, script, d, vars, exe, script, d, d, d))
    local id0 = out:match("R0 (id0=%S+ id127=%S+)")
    assert.truthy(id0, out)
    assert.truthy(out:find("R1 " .. id0, 1, true), out)
    assert.falsy(out:find("cute-nccl-", 1, true), out) -- rank 0 removed the id file
  end)

  sit("CUTE_NCCL_ID (hex) instead of the file; the default file name", function()
    local id = nccl.unique_id()
    log()
    nccl.init_from_env({ env = env({ RANK = "1", WORLD_SIZE = "2", CUTE_NCCL_ID = id:hex() }), device = false })
    local l = log()
    assert.are.equal(1, #l)
    assert.truthy(l[1]:find("ncclCommInitRank nranks=2 rank=1", 1, true))
    local e = env({ RANK = "0", WORLD_SIZE = "1", TMPDIR = d })
    nccl.init_from_env({ env = e, device = false })
    assert.is_nil(io.open(d .. "/cute-nccl-run7-127.0.0.1-29500-ws1.id")) -- written, then removed
    e.CUTE_NCCL_ID_FILE = d .. "/chosen"
    assert.are.equal(d .. "/chosen", nccl_env.id_file("k", function(n) return e[n] end))
  end)
end)
