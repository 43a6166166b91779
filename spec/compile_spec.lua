-- The compiler front door (issue 9, items 1, 2 and 7): one table of compile
-- options (src/compile_opts.h) reached by name from C and Lua, each option
-- changing the output it should; the environment below explicit options;
-- the architecture rule; the stages of a compile kept even when a later one
-- fails; k:compile through the kernel's cache.  CPU only: specs that need
-- ptxas are pending without it.
local ffi = require("ffi")
local cute = require("cute")
local compile = require("cute.compile")
local IR = require("cute.ir")
local cf = require("cute.ffi")
local C = cf.C
local util = dofile("spec/support/util.lua")
local has = util.has

pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name);")
local this_file = debug.getinfo(1, "S").short_src
local f32 = cute.float32
local spec = cute.tensor_spec({ 256 }, f32)
local PTXAS = IR.ptxas_path()

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end
local function ptxas_it(name, f)
  if PTXAS then it(name, f) else it(name, function() pending("needs ptxas (CUTE_PTXAS, PATH, /usr/local/cuda/bin)") end) end
end
local function with_env(name, value, f)
  C.setenv(name, value, 1)
  local ok, e = pcall(f)
  C.unsetenv(name)
  if not ok then error(e, 0) end
end

-- a kernel with f32 arithmetic, a square root, a division and an exponential
local function mathk(opts)
  return cute.kernel(function(A, B)
    local t = cute.arch.thread_idx()
    local x, y = A[t], B[t]
    A[t] = cute.math.sqrt(x * y + x) / y + cute.math.exp(x)
  end, opts)
end
local function ptx_of(opts) return mathk(opts):compile(spec, spec).ptx end

describe("compile options: one table", function()
  it("C reflection lists every option with its type, default and environment variable", function()
    local names = {}
    for _, s in ipairs(compile.specs) do
      names[s.name] = s
      assert.truthy(s.env:match("^CUTE_[A-Z_]+$"), s.name)
      assert.truthy(#s.doc > 10, s.name)
    end
    for _, n in ipairs({ "arch", "opt_level", "ptx_version", "ptxas_options", "use_ptxas", "lineinfo",
      "enable_assertions", "fast_math", "ftz", "max_registers", "min_blocks_per_sm", "max_threads_per_block",
      "keep", "dump_dir", "link", "verify", "libdevice" }) do
      assert.truthy(names[n], n)
    end
    assert.are.equal("integer", names.opt_level.type)
    assert.are.equal("boolean", names.ftz.type)
    assert.are.equal("list", names.keep.type)
    assert.are.equal("CUTE_OPT_LEVEL", names.opt_level.env)
    assert.are.equal("sm_90a", names.arch.default)
  end)

  it("C setters: unknown name lists the valid ones; ill-typed and out-of-range values say what was expected", function()
    local o = ffi.gc(C.cute_compile_opts_new(), C.cute_compile_opts_free)
    assert.are.equal(C.CUTE_E_ARG, C.cute_compile_opts_set(o, "opt", "1", cf.err))
    local m = ffi.string(cf.err[0].msg)
    assert.truthy(has(m, "compile option 'opt': unknown; valid options: arch, opt_level"), m)
    assert.are.equal(C.CUTE_E_ARG, C.cute_compile_opts_set(o, "opt_level", "9", cf.err))
    assert.are.equal("compile option 'opt_level': expected an integer 0..3, got '9'", ffi.string(cf.err[0].msg))
    assert.are.equal(C.CUTE_E_ARG, C.cute_compile_opts_set(o, "ftz", "maybe", cf.err))
    assert.truthy(has(ffi.string(cf.err[0].msg), "expected a boolean"))
    assert.are.equal(C.CUTE_E_ARG, C.cute_compile_opts_set(o, "keep", "ptx,asm", cf.err))
    assert.truthy(has(ffi.string(cf.err[0].msg), "'asm' is not a stage"))
    assert.are.equal(0, C.cute_compile_opts_set(o, "keep", " sass, ptx ,ir", cf.err))
    assert.are.equal("ir,ptx,sass", ffi.string(C.cute_compile_opts_get(o, "keep")))
    assert.are.equal(0, C.cute_compile_opts_set(o, "opt_level", "1", cf.err))
    assert.are.equal("1", ffi.string(C.cute_compile_opts_get(o, "opt_level")))
    assert.are.equal(C.CUTE_OPT_FROM_USER, C.cute_compile_opts_source(o, "opt_level"))
    -- the key holds what changes the binary, and only that
    local key = ffi.string(C.cute_compile_opts_key(o))
    assert.truthy(has(key, "opt_level=1"), key)
    assert.falsy(has(key, "keep="), key)
    assert.falsy(has(key, "dump_dir="), key)
    -- a copy is independent
    local c = ffi.gc(C.cute_compile_opts_copy(o), C.cute_compile_opts_free)
    assert.are.equal(0, C.cute_compile_opts_set(c, "opt_level", "2", cf.err))
    assert.are.equal("1", ffi.string(C.cute_compile_opts_get(o, "opt_level")))
  end)

  it("cute.kernel: unknown, renamed and ill-typed options are errors at the user's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local e = err_of(function() cute.kernel(function() end, { opt = 0 }) end)
    assert.truthy(has(e, ("%s:%d:"):format(this_file, line)), e)
    assert.truthy(has(e, "compile option 'opt' is now called 'opt_level'"), e)
    e = err_of(function() cute.kernel(function() end, { maxrregcount = 32 }) end)
    assert.truthy(has(e, "now called 'max_registers'"), e)
    e = err_of(function() cute.kernel(function() end, { lineinfos = true }) end)
    assert.truthy(has(e, "compile option 'lineinfos': unknown; valid options: arch, opt_level"), e)
    e = err_of(function() cute.kernel(function() end, { opt_level = 9 }) end)
    assert.truthy(has(e, "compile option 'opt_level': expected an integer 0..3, got '9'"), e)
    e = err_of(function() cute.kernel(function() end, { lineinfo = 1 }) end)
    assert.truthy(has(e, "compile option 'lineinfo': expected a boolean, got number 1"), e)
    e = err_of(function() cute.kernel(function() end, { keep = { "ptx", 3 } }) end)
    assert.truthy(has(e, "compile option 'keep': expected a list of strings"), e)
  end)

  it("cute.ir's m:compile takes the same names (old ones are errors naming the new)", function()
    local m = IR.new()
    m:func("k", "kernel")
    m:ret()
    local e = err_of(function() return m:compile { opt = 0 } end)
    assert.truthy(has(e, "now called 'opt_level'"), e)
    local r = assert(m:compile { opt_level = 0, use_ptxas = false, keep = { "ptx" } })
    assert.truthy(r.ptx)
    assert.is_nil(r.llvm)
    assert.is_nil(r.ir)
  end)

  it("the optimised module is printed only when keep has llvm; the stage runs either way", function()
    local k = mathk({ opt_level = 3, use_ptxas = false, cache = false })
    local function stage(r, name)
      for _, s in ipairs(r.stages) do if s.name == name then return s end end
    end
    local r = k:with{ keep = "ptx" }:compile(spec, spec)
    assert.is_nil(r.llvm)
    assert.is_true(stage(r, "optimise").ran)
    assert.is_nil(stage(r, "optimise").text)
    assert.truthy(has(r.ptx, ".entry"))
    local r2 = k:with{ keep = "llvm,ptx" }:compile(spec, spec)
    assert.truthy(has(r2.llvm, "define ptx_kernel void"), r2.llvm)
    assert.are.equal(r.ptx, r2.ptx)
  end)

  it("options are copied and frozen at creation; their key is the kernel's k.options_key", function()
    local opts = { opt_level = 1 }
    local k = mathk(opts)
    opts.opt_level = 3
    assert.are.equal(1, k.options.values.opt_level)
    assert.truthy(has(k.options_key, "opt_level=1"), k.options_key)
    assert.has_error(function() k.options.values = {} end)
    assert.has_error(function() k.options.values.opt_level = 3 end)
    local k2 = k:with({ opt_level = 2 })
    assert.truthy(has(k2.options_key, "opt_level=2"))
    assert.are_not.equal(k.options_key, k2.options_key)
  end)

  it("the environment gives options not set explicitly; an explicit option beats it", function()
    with_env("CUTE_OPT_LEVEL", "1", function()
      assert.are.equal(1, mathk().options.values.opt_level)
      assert.are.equal(2, mathk({ opt_level = 2 }).options.values.opt_level)
    end)
    with_env("CUTE_FTZ", "true", function()
      assert.truthy(has(ptx_of(), "add.rn.ftz.f32"))
      assert.falsy(has(ptx_of({ ftz = false }), "add.rn.ftz"))
    end)
    with_env("CUTE_OPT_LEVEL", "7", function()
      local e = err_of(mathk)
      assert.truthy(has(e, "compile option 'opt_level' (from CUTE_OPT_LEVEL): expected an integer 0..3, got '7'"), e)
    end)
  end)
end)

describe("compile options change the output", function()
  it("opt_level: O0 and O3 PTX differ (O0 keeps local-memory variables)", function()
    local p0, p3 = ptx_of({ opt_level = 0 }), ptx_of({ opt_level = 3 })
    assert.are_not.equal(p0, p3)
    assert.truthy(#p0 > #p3)
  end)

  it("ftz: f32 add, mul, div and sqrt flushed", function()
    local p = ptx_of({ ftz = true })
    for _, w in ipairs({ "add.rn.ftz.f32", "mul.rn.ftz.f32", "div.rn.ftz.f32", "sqrt.rn.ftz.f32" }) do
      assert.truthy(has(p, w), w .. "\n" .. p)
    end
    local q = ptx_of()
    assert.falsy(has(q, "div.rn.ftz.f32") or has(q, "sqrt.rn.ftz.f32") or has(q, "mul.rn.ftz"), q)
  end)

  it("fast_math: approximate div, sqrt and ex2", function()
    local p = ptx_of({ fast_math = true })
    for _, w in ipairs({ "div.approx", "sqrt.approx", "ex2.approx" }) do assert.truthy(has(p, w), w .. "\n" .. p) end
    local q = ptx_of()
    assert.falsy(has(q, "div.approx") or has(q, "sqrt.approx"), q)
  end)

  it("max_registers, max_threads_per_block, min_blocks_per_sm: .maxnreg, .maxntid, .minnctapersm", function()
    local k = mathk({ max_registers = 32, max_threads_per_block = 128, min_blocks_per_sm = 2, use_ptxas = false })
    local r = k:compile(spec, spec)
    assert.truthy(has(r.ptx, ".maxnreg 32"), r.ptx)
    assert.truthy(has(r.ptx, ".maxntid 128, 1, 1"), r.ptx)
    assert.truthy(has(r.ptx, ".minnctapersm 2"), r.ptx)
    assert.are.equal(128, r.info.max_threads)
    assert.are.equal(2, r.info.min_blocks)
    assert.falsy(has(ptx_of(), ".maxnreg"))
  end)

  ptxas_it("max_registers is visible in ptxas's report", function()
    -- many live values: unbounded it takes more than 24 registers
    local function wide(opts)
      return cute.kernel(function(A)
        local t = cute.arch.thread_idx()
        local v = {}
        for i = 1, 48 do v[i] = A[t + i * 256] end
        local s = 0
        for i = 1, 48 do for j = i, 48, 7 do s = s + v[i] * v[j] end end
        A[t] = s
      end, opts)
    end
    local big = cute.tensor_spec({ 256 * 64 }, f32)
    local free = wide({ use_ptxas = true }):compile(big)
    local capped = wide({ use_ptxas = true, max_registers = 24 }):compile(big)
    assert.truthy(free.info.regs > 24, "unbounded kernel used " .. free.info.regs)
    assert.truthy(capped.info.regs <= 24, "capped kernel used " .. capped.info.regs)
    assert.truthy(has(capped.ptxas_log, "Used " .. capped.info.regs .. " registers"), capped.ptxas_log)
  end)

  ptxas_it("ptxas_options are passed to ptxas", function()
    local r = mathk({ use_ptxas = true, ptxas_options = "-O1 --warn-on-spills" }):compile(spec, spec)
    assert.are.equal("\127ELF", r.cubin:sub(1, 4))
    local e = err_of(function() mathk({ use_ptxas = true, ptxas_options = "--no-such-option-here" }):compile(spec, spec) end)
    assert.truthy(has(e, "no-such-option-here"), e)
  end)

  it("lineinfo: .loc directives of the Lua source", function()
    local p = ptx_of({ lineinfo = true })
    assert.truthy(has(p, ".loc"), p)
    assert.truthy(has(p, "compile_spec.lua"), p)
    assert.falsy(has(ptx_of(), ".loc"))
  end)

  it("enable_assertions = false compiles cute.assert_ out (no exit path, no printf)", function()
    local function k(opts)
      return cute.kernel(function(A)
        local t = cute.arch.thread_idx()
        cute.assert_(A[t] > 0, "positive")
        A[t] = A[t] + 1
      end, opts)
    end
    local on = k():compile(spec).ptx -- (a failing assert ends its thread: docs/FAULTS.md)
    assert.truthy(has(on, "exit;") and has(on, "vprintf"), on)
    local p = k({ enable_assertions = false }):compile(spec).ptx
    assert.falsy(has(p, "exit;"), p)
    assert.falsy(has(p, "vprintf"), p)
  end)

  it("keep and dump_dir: kept stages on the result and in files named <kernel>-<hash>.<ext>", function()
    local dir = os.tmpname()
    os.remove(dir)
    local k = mathk({ name = "dumped", dump_dir = dir, keep = { "ir", "ptx" }, use_ptxas = false })
    local r = k:compile(spec, spec)
    assert.truthy(r.ir and r.ptx)
    assert.is_nil(r.llvm)
    local r2 = k:compile(cute.tensor_spec({ 512 }, f32), spec) -- another specialisation: another file
    local p = io.popen("ls " .. dir)
    local files = {}
    for l in p:lines() do files[#files + 1] = l end
    p:close()
    table.sort(files)
    assert.are.equal(4, #files, table.concat(files, " "))
    for _, f in ipairs(files) do assert.truthy(f:match("^dumped%-%x%x%x%x%x%x%x%x%.[ip][rt]x?$"), f) end
    local ptxfile
    for _, f in ipairs(files) do
      if f:match("%.ptx$") and util.read_file(dir .. "/" .. f) == r.ptx then ptxfile = f end
    end
    assert.truthy(ptxfile, "no dumped file holds the first specialisation's PTX")
    assert.truthy(r2.ptx ~= r.ptx)
    for _, f in ipairs(files) do os.remove(dir .. "/" .. f) end
    os.remove(dir)
  end)

  it("link: an LLVM text file defines a function the kernel calls", function()
    local ll = os.tmpname() .. ".ll"
    local f = assert(io.open(ll, "w"))
    f:write([[
define float @my_scale(float %x) {
  %y = fmul float %x, 3.0
  ret float %y
}
]])
    f:close()
    local function module()
      local m = IR.new()
      local fn = m:func("my_scale", "device", "f32")
      m:param("f32", "x")
      m:func("k", "kernel")
      local p = m:param("ptr.global.f32", "p")
      local v = m:load(p)
      m:store(p, m:call(fn, v))
      m:ret()
      return m
    end
    local r = assert(module():compile { link = { ll }, use_ptxas = false, opt_level = 0 })
    assert.truthy(has(r.ptx, "my_scale"), r.ptx)
    assert.truthy(has(r.ptx, "3.0") or has(r.ptx, "0f40400000"), r.ptx)
    local link_stage
    for _, s in ipairs(r.stages) do if s.name == "link" then link_stage = s end end
    assert.truthy(has(link_stage.text, ll))
    -- without it: a clear error, not a late failure
    local nr, e = module():compile { use_ptxas = false }
    assert.is_nil(nr)
    assert.truthy(has(e, "function 'my_scale' is called but not defined"), e)
    -- PTX cannot be linked into the module
    nr, e = module():compile { use_ptxas = false, link = { "x.ptx" } }
    assert.is_nil(nr)
    assert.truthy(has(e, "'x.ptx' is PTX; link LLVM bitcode (.bc) or LLVM text (.ll)"), e)
    os.remove(ll)
  end)
end)

describe("architectures", function()
  it("one rule maps a compute capability to a target", function()
    local rule = {
      { 8, 0, "sm_80", false }, { 8, 6, "sm_86", false }, { 8, 7, "sm_87", false }, { 8, 9, "sm_89", false },
      { 9, 0, "sm_90a", false }, { 7, 5, "sm_75", false }, { 7, 0, "sm_70", false },
      { 10, 0, "sm_90", true }, { 10, 3, "sm_90", true }, { 12, 0, "sm_90", true }, { 12, 1, "sm_90", true },
      { 9, 9, "sm_90", true }, { 8, 8, "sm_87", false }, { 5, 2, nil, false },
    }
    for _, c in ipairs(rule) do
      local a, portable = compile.arch_for_cc(c[1], c[2])
      assert.are.equal(c[3], a, ("cc %d.%d"):format(c[1], c[2]))
      assert.are.equal(c[4], portable, ("cc %d.%d portable"):format(c[1], c[2]))
      if a then assert.are.equal(1, C.cute_arch_supported(a)) end
    end
  end)

  it("an explicit arch the toolchain cannot target is an error at kernel creation", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local e = err_of(function() cute.kernel(function() end, { arch = "sm_100a" }) end)
    assert.truthy(has(e, ("%s:%d:"):format(this_file, line)), e)
    assert.truthy(has(e, "'sm_100a' is not a target this toolchain can emit"), e)
    assert.truthy(has(e, "sm_90a"), e)
  end)

  it("compiles for each supported arch: .target in the PTX", function()
    for _, a in ipairs({ "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a" }) do
      local p = mathk({ arch = a, use_ptxas = false }):compile(spec, spec).ptx
      assert.truthy(has(p, ".target " .. a), a)
    end
  end)

  it("an sm_90a-only instruction on another target is an error at lowering naming the feature and the arch", function()
    local function k(arch)
      return cute.kernel(function(A)
        cute.arch.asm(nil, "wgmma.fence.sync.aligned;", "")
        A[0] = 1
      end, { arch = arch, use_ptxas = false })
    end
    assert.truthy(has(k("sm_90a"):compile(spec).ptx, "wgmma.fence.sync.aligned;"))
    local e = err_of(function() k("sm_90"):compile(spec) end)
    assert.truthy(has(e, "'wgmma.fence.sync.aligned' needs the arch-specific target sm_90a; the target is sm_90"), e)
    assert.truthy(has(e, this_file), e)
  end)

  -- (the device is simulated: compile.device_arch is what cute.kernel and
  -- every compile ask for the current device's target)
  local function with_device(arch, portable, f)
    local saved, saved_p = compile.device_arch, compile.portable_device
    local dev = { arch = arch, portable = portable }
    compile.device_arch = function()
      compile.portable_device = dev.portable
      return dev.arch, dev.portable
    end
    local ok, e = pcall(f, dev)
    compile.device_arch, compile.portable_device = saved, saved_p
    if not ok then error(e, 0) end
  end

  it("a failure on a portable target names the device, the arch and the feature", function()
    with_device("sm_90", "NVIDIA Test GPU (compute capability 12.0)", function()
      local k = cute.kernel(function(A)
        cute.arch.asm(nil, "wgmma.fence.sync.aligned;", "")
        A[0] = 1
      end, { use_ptxas = false })
      assert.are.equal("sm_90", k.options.values.arch)
      assert.is_true(k.options.portable)
      local e = err_of(function() k:compile(spec) end) -- MARK-portable
      assert.truthy(has(e, "NVIDIA Test GPU (compute capability 12.0)") and has(e, "sm_90")
        and has(e, "wgmma.fence.sync.aligned"), e)
      assert.truthy(has(e, this_file .. ":" .. util.line_of(this_file, "MARK-portable") .. ":"), e)
    end)
  end)

  it("an arch taken from the device follows the current device; an explicit one does not", function()
    with_device("sm_80", nil, function(dev)
      local f = function(A) local i = cute.arch.thread_idx(); A[i] = A[i] + 1 end
      local k = cute.kernel(f, { use_ptxas = false })
      local pinned = cute.kernel(f, { arch = "sm_86", use_ptxas = false })
      assert.truthy(has(k:ptx(spec), ".target sm_80"))
      dev.arch = "sm_90a" -- another device is current
      assert.truthy(has(k:ptx(spec), ".target sm_90a"))
      assert.truthy(has(pinned:ptx(spec), ".target sm_86"))
      dev.arch = "sm_80"
      local traces = k.traces
      assert.truthy(has(k:ptx(spec), ".target sm_80"))
      assert.are.equal(traces, k.traces) -- one cache per target: the sm_80 build is still there
    end)
  end)
end)

describe("the stages of a compile", function()
  it("each stage has a name, a time and its text", function()
    local r = mathk({ use_ptxas = false }):compile(spec, spec)
    local names = {}
    for i, s in ipairs(r.stages) do names[i] = s.name end
    assert.are.same({ "verify", "lower", "link", "optimise", "emit_ptx", "assemble", "load_info", "sass" }, names)
    for i = 1, 5 do
      assert.is_true(r.stages[i].ran, names[i])
      assert.truthy(r.times[names[i]] >= 0)
    end
    assert.truthy(has(r.stages[1].text, "kernel @"))
    assert.is_nil(r.stages[2].text) -- (the module before optimisation: only when a stage fails)
    assert.truthy(has(r.stages[4].text, "define"))
    assert.truthy(has(r.stages[5].text, ".entry"))
    assert.is_false(r.stages[6].ran) -- use_ptxas = false
    assert.truthy(has(tostring(r), "compiled {"), tostring(r))
  end)

  it("k:compile goes through the kernel's cache: a second identical call does not trace", function()
    local k = mathk({ use_ptxas = false })
    local r1 = k:compile(spec, spec)
    assert.are.equal(1, k.traces)
    local r2 = k:compile(spec, spec)
    assert.are.equal(1, k.traces)
    assert.are.equal(r1.ptx, r2.ptx)
    k:compile(cute.tensor_spec({ 128 }, f32), spec)
    assert.are.equal(2, k.traces)
    assert.are.equal(r1.ptx, k:ptx(spec, spec))
    assert.are.equal(2, k.traces)
  end)

  it("a ptxas error keeps the PTX and quotes the PTX line and the Lua line of the op", function()
    if not PTXAS then return pending("needs ptxas") end
    local line
    local k = cute.kernel(function(A)
      local t = cute.arch.thread_idx()
      A[t] = A[t] + 1
      line = debug.getinfo(1, "l").currentline + 1
      cute.arch.asm(nil, "bogus.instruction.b32 42;", "")
    end, { use_ptxas = true })
    local ptx, msg = k:ptx(spec)
    assert.truthy(has(ptx, "bogus.instruction.b32 42;"), ptx)
    assert.truthy(msg and has(msg, "ptxas"), msg)
    local e = err_of(function() return k:compile(spec) end)
    assert.truthy(has(e, "PTX line"), e)
    assert.truthy(has(e, "bogus.instruction.b32 42;"), e)
    assert.truthy(has(e, ("compile_spec.lua:%d"):format(line)), e)
    assert.are.equal("assemble", k.last_failure.failed_stage)
    assert.truthy(k.last_failure.ptx and k.last_failure.llvm and k.last_failure.ir)
  end)

  ptxas_it("k:compile(...).cubin is the cubin's bytes (an ELF file)", function()
    local r = mathk({ use_ptxas = true }):compile(spec, spec)
    assert.are.equal("\127ELF", r.cubin:sub(1, 4))
  end)

  it("k:sass: through nvdisasm or cuobjdump, or an error naming where they were searched", function()
    local k = mathk()
    if C.cute_disassembler_path() ~= nil and PTXAS then
      local s = k:sass(spec, spec)
      assert.truthy(has(s, "FMUL") or has(s, "MUFU"), s)
    else
      local e = err_of(function() k:sass(spec, spec) end)
      assert.truthy(has(e, "sass") and has(e, "nvdisasm") and has(e, "/usr/local/cuda/bin"), e)
    end
  end)
end)

describe("docs/COMPILE.md", function()
  it("its option table lists exactly the options the C reflection returns, with their env vars", function()
    local doc = assert(util.read_file("docs/COMPILE.md"))
    local rows = {}
    for name, env in doc:gmatch("\n| `([%w_]+)` |[^\n]-| `(CUTE_[A-Z_]+)` |") do rows[name] = env end
    local n = 0
    for _, s in ipairs(compile.specs) do
      n = n + 1
      assert.are.equal(s.env, rows[s.name], "docs/COMPILE.md lacks the row of " .. s.name)
    end
    local m = 0
    for _ in pairs(rows) do m = m + 1 end
    assert.are.equal(n, m, "docs/COMPILE.md lists options the code does not have")
  end)
end)

describe("compile options on the GPU", function()
  local rand_floats = util.rand_floats
  -- y = sqrt(x * x + 1) / x + exp(-x) with x in [0.5, 2]: each option set against
  -- a CPU reference in double precision (approximate math: a looser bound)
  for _, case in ipairs({
    { opts = {}, tol = 1e-6 },
    { opts = { use_ptxas = true }, tol = 1e-6 },
    { opts = { opt_level = 0, lineinfo = true }, tol = 1e-6 },
    { opts = { ftz = true, max_registers = 32, max_threads_per_block = 256, min_blocks_per_sm = 2 }, tol = 1e-6 },
    { opts = { fast_math = true }, tol = 1e-5 },
    { opts = { enable_assertions = false }, tol = 1e-6 },
  }) do
    local label = {}
    for k, v in pairs(case.opts) do label[#label + 1] = k .. "=" .. tostring(v) end
    table.sort(label)
    util.gpu_it("{" .. table.concat(label, ", ") .. "} runs and matches the CPU reference", function()
      if case.opts.use_ptxas and not PTXAS then return pending("needs ptxas") end
      local n = 100000
      local k = cute.kernel(function(X, Y, n_)
        local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()
        if i < n_ then
          local x = X[i]
          cute.assert_(x > 0, "x positive")
          Y[i] = cute.math.sqrt(x * x + 1) / x + cute.math.exp(-x)
        end
      end, case.opts)
      local hx = rand_floats(n, 0.5, 2)
      local X, Y = cute.from_host(hx, f32, { n }), cute.empty({ n }, f32)
      Y:fill(0 / 0)
      k:launch{ grid = math.ceil(n / 256), block = 256 }(X, Y, cute.Int32(n))
      local hy = Y:to_host()
      local worst = 0
      for i = 0, n - 1 do
        local x = hx[i]
        local ref = math.sqrt(x * x + 1) / x + math.exp(-x)
        local e = math.abs(hy[i] - ref) / math.abs(ref)
        if not (e <= worst) then worst = e end
      end
      assert.is_true(worst <= case.tol, ("worst relative error %g (tolerance %g)"):format(worst, case.tol))
      assert.are.equal(1, k.traces)
    end)
  end
end)
