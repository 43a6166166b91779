-- Line info all the way down (issue 12 item 2; docs/LINEINFO.md): with the
-- compile option lineinfo the PTX carries .file/.loc naming this file (its
-- absolute path) and the line of each traced op, also inside helper functions,
-- cute.range and if bodies; none without it; ptxas assembles it for sm_80 and
-- sm_90a; k:sass interleaves the SASS with the Lua source (a fake nvdisasm here,
-- the real one when present); the disk cache key has the working directory when
-- lineinfo is on.  #gpu: results unchanged by lineinfo, and compute-sanitizer
-- names the Lua line of an out-of-bounds store (tools/lineinfo_oob.sh).
local ffi = require("ffi")
local cute = require("cute")
local C = require("cute.ffi").C
local U = dofile("spec/support/util.lua")
local has, gpu_it, self_exe = U.has, U.gpu_it, U.self_exe

local THIS = "spec/lineinfo_spec.lua"
local PTXAS = C.cute_ptxas_path() ~= nil
local DISASM = C.cute_disassembler_path() ~= nil and ffi.string(C.cute_disassembler_path()) or nil
local f32 = cute.float32
local spec = cute.tensor_spec({ 256 }, f32)
local function line_of(marker) return U.line_of(THIS, marker) end

pcall(ffi.cdef, "char *getcwd(char *buf, size_t size);")
local function cwd()
  local b = ffi.new("char[4096]")
  return ffi.string(assert(ffi.C.getcwd(b, 4096)))
end

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("*a")
  p:close()
  return (out:gsub("rc=%d+\n?$", "")), tonumber(out:match("rc=(%d+)\n?$"))
end
local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end
local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute("mkdir -p " .. tmp) == 0)

-- PTX: the .file table ({[n] = path}) and, for the first instruction matching
-- pattern, the file and line of the .loc in force there
local function ptx_files(ptx)
  local files = {}
  for n, path in ptx:gmatch('%.file%s+(%d+)%s+"([^"]*)"') do files[tonumber(n)] = path end
  return files
end
local function loc_of(ptx, pattern)
  local files, file, line = ptx_files(ptx), nil, nil
  for l in ptx:gmatch("[^\n]+") do
    local f, n = l:match("^%s*%.loc%s+(%d+)%s+(%d+)")
    if f then
      file, line = files[tonumber(f)], tonumber(n)
    elseif l:find(pattern) then
      return file, line
    end
  end
  error("no instruction matches " .. pattern .. " in:\n" .. ptx)
end

-- the kernel: ops on lines of their own, in a helper, an if body, a cute.range body
local function root(x)
  local y = cute.math.sqrt(x) -- LI helper
  return y
end
local function li_kernel(opts)
  return cute.kernel(function(A, B, n)
    local t = cute.arch.thread_idx()
    if t < n then
      B[t] = A[t] / 3.0 -- LI if body
    end
    for i in cute.range(0, n) do
      A[t] = root(A[t]) -- LI range body
    end
    cute.arch.sync_threads() -- LI barrier
    B[t] = B[t] * 5.0 -- LI tail
  end, opts)
end
local function compile(opts) return li_kernel(opts):compile(spec, spec, cute.Int32(100)) end

describe("lineinfo: .file/.loc in the PTX", function()
  it("names this file by its absolute path and the line of each op (helper, if body, cute.range body)", function()
    local abs = cwd() .. "/" .. THIS
    for _, opt in ipairs({ 0, 3 }) do
      local r = compile({ lineinfo = true, opt_level = opt, arch = "sm_90a", use_ptxas = false })
      local files = ptx_files(r.ptx)
      assert.are.same({ abs }, files, r.ptx)
      local function at(pattern, marker)
        local f, l = loc_of(r.ptx, pattern)
        assert.are.equal(abs, f, "O" .. opt .. " " .. pattern)
        assert.are.equal(line_of(marker), l, ("O%d: %s: .loc line"):format(opt, pattern))
      end
      at("div%.rn%.f32", "-- LI if body")
      at("sqrt%.rn%.f32", "-- LI helper")
      at("bar%.sync", "-- LI barrier")
      at("mul%.rn%.f32.*0f40A00000", "-- LI tail")
      -- no DWARF sections beyond the (empty) .debug_loc that NVPTX always writes
      assert.falsy(has(r.ptx, ".debug_info"), "O" .. opt)
      assert.falsy(has(r.ptx, ".debug_abbrev"), "O" .. opt)
    end
  end)

  it("without lineinfo: no .loc, no .file", function()
    local r = compile({ arch = "sm_90a", use_ptxas = false })
    assert.falsy(has(r.ptx, ".loc"), r.ptx)
    assert.falsy(has(r.ptx, ".file"), r.ptx)
  end)

  it("kernels traced from strings: [string ...] and =name chunks, PTX-safe names", function()
    local src = "local cute = ...\nreturn function(A)\n  local t = cute.arch.thread_idx()\n  A[t] = A[t] * 3.0\nend\n"
    local plain = load(src)(cute)
    local named = load(src, "=(my kernel)")(cute)
    local r1 = cute.kernel(plain, { lineinfo = true, use_ptxas = false, arch = "sm_80" }):compile(spec)
    local r2 = cute.kernel(named, { lineinfo = true, use_ptxas = false, arch = "sm_80" }):compile(spec)
    local n1 = ptx_files(r1.ptx)[1]
    assert.truthy(n1 and n1:find("^%[string 'local cute = "), r1.ptx)   -- quotes made PTX-safe
    assert.are.equal("=(my kernel)", ptx_files(r2.ptx)[1])
    assert.are.equal(4, select(2, loc_of(r2.ptx, "mul%.rn%.f32")))
    if PTXAS then
      for _, arch in ipairs({ "sm_80", "sm_90a" }) do
        local k = cute.kernel(plain, { lineinfo = true, use_ptxas = true, arch = arch })
        assert.are.equal("\127ELF", k:compile(spec).cubin:sub(1, 4))
      end
    end
  end)

  it("ptxas assembles it for sm_80 and sm_90a (ptxas -lineinfo): the same registers, no spills", function()
    if not PTXAS then return pending("ptxas not found") end
    for _, arch in ipairs({ "sm_80", "sm_90a" }) do
      local with = compile({ lineinfo = true, arch = arch, use_ptxas = true })
      local without = compile({ arch = arch, use_ptxas = true })
      assert.are.equal("\127ELF", with.cubin:sub(1, 4))
      assert.are.equal(without.info.regs, with.info.regs, arch)
      assert.are.equal(0, with.info.spill_stores, arch)
      -- the line table survives into the cubin
      assert.truthy(has(with.cubin, ".nv_debug_line_sass") or has(with.cubin, ".debug_line"), arch)
      assert.falsy(has(without.cubin, ".debug_line"), arch)
    end
  end)

  it("the out-of-bounds kernel of tools/lineinfo_oob.sh: its store is at the OOB STORE line", function()
    _G.CUTE_LINEINFO_OOB_LIB = true
    local ok, k = pcall(dofile, "spec/data/lineinfo_oob.lua")
    _G.CUTE_LINEINFO_OOB_LIB = nil
    assert(ok, k)
    local r = k:with({ arch = "sm_90a", use_ptxas = false }):compile(cute.tensor_spec({ 256 }, f32), cute.Int32(1))
    local f, l = loc_of(r.ptx, "st%.global%.[uf]32")
    assert.are.equal(cwd() .. "/spec/data/lineinfo_oob.lua", f)
    assert.are.equal(U.line_of("spec/data/lineinfo_oob.lua", "-- OOB STORE"), l)
  end)
end)

describe("lineinfo: the disk cache key", function()
  -- one child process per run: prints "<status> <key> <.file>" for one compile of
  -- k.lua (a relative chunk name) from the directory it runs in
  local kfile = [[
    local cute = require("cute")
    local k = cute.kernel(function(A) local t = cute.arch.thread_idx(); A[t] = A[t] + 1 end,
      { keep = { "ptx" }, use_ptxas = false, lineinfo = arg[1] == "on" })
    local r = k:compile(cute.tensor_spec({ 64 }, cute.float32))
    print(r.cache.status .. " " .. r.cache.key .. " " .. (r.ptx:match('%.file%s+%d+%s+"([^"]*)"') or "-"))
  ]]
  it("has the working directory when lineinfo is on (the .file path depends on it), not otherwise", function()
    local d1, d2 = tmp .. "/w1", tmp .. "/w2"
    assert(os.execute(("mkdir -p %s %s"):format(d1, d2)) == 0)
    write(d1 .. "/k.lua", kfile)
    write(d2 .. "/k.lua", kfile)
    local env = "CUTE_CACHE_DIR=" .. tmp .. "/cache "
    local function run(dir, li)
      local out = sh(("cd %s && %s%s k.lua %s"):format(dir, env, self_exe(), li))
      local st, key, file = out:match("(%a+) (%x+) (%S+)")
      assert(st, out)
      return st, key, file
    end
    local s1, k1 = run(d1, "off")
    local s2, k2 = run(d2, "off")
    assert.are.equal("stored", s1)
    assert.are.equal("hit", s2)
    assert.are.equal(k1, k2)
    local s3, k3, f3 = run(d1, "on")
    local s4, k4, f4 = run(d2, "on")
    local s5, k5 = run(d1, "on")
    assert.are.equal("stored", s3)
    assert.are.equal("stored", s4)
    assert.are.equal("hit", s5)
    assert.are_not.equal(k3, k4)
    assert.are.equal(k3, k5)
    assert.are_not.equal(k1, k3)
    assert.truthy(f3:find("/w1/k.lua$"), f3)
    assert.truthy(f4:find("/w2/k.lua$"), f4)
  end)
end)

describe("lineinfo: SASS with the Lua source lines", function()
  -- a stand-in nvdisasm: insists on --print-line-info and prints markers in
  -- nvdisasm's form for lines of this file (and one of a file that does not exist)
  local fake = tmp .. "/nvdisasm"
  write(fake, ([[#!/bin/sh
[ "$1" = "--print-line-info" ] || { echo "no --print-line-info: $*"; exit 0; }
[ -s "$2" ] || { echo "no cubin: $2"; exit 1; }
printf '\t.text.k:\n\t//## File "%%s", line %d\n        /*0000*/                   MUFU.SQRT R3, R2 ;\n' "$SRC"
printf '\t//## File "%%s", line %d inlined at "%%s", line %d\n        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n' "$SRC" "$SRC"
printf '\t//## File "/no/such/file.lua", line 3\n        /*0020*/                   EXIT ;\n'
]]):format(line_of("-- LI helper"), line_of("-- LI barrier"), line_of("-- LI range body")))
  assert(os.execute("chmod +x " .. fake) == 0)
  local child = tmp .. "/sass_child.lua"
  write(child, [[
    local cute = require("cute")
    local k = cute.kernel(function(A) local t = cute.arch.thread_idx(); A[t] = A[t] + 1 end,
      { lineinfo = arg[1] == "on", arch = "sm_80" })
    io.write(k:sass(cute.tensor_spec({ 64 }, cute.float32)))
  ]])

  it("k:sass runs nvdisasm --print-line-info and adds the text of each marked line", function()
    if not PTXAS then return pending("ptxas not found: no cubin to disassemble") end
    local env = ("CUTE_NVDISASM=%s SRC=%s/%s CUTE_CACHE=0 "):format(fake, cwd(), THIS)
    local out, rc = sh(env .. self_exe() .. " " .. child .. " on")
    assert.are.equal(0, rc, out)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    -- marker, then its source text, then the instruction
    local function after(marker_pat)
      for i, l in ipairs(lines) do if l:find(marker_pat) then return lines[i + 1] end end
      error("no marker " .. marker_pat .. " in:\n" .. out)
    end
    local h = line_of("-- LI helper")
    assert.are.equal(("\t//   lineinfo_spec.lua:%d:  local y = cute.math.sqrt(x) -- LI helper"):format(h),
      after(", line " .. h .. "$"))
    local b = line_of("-- LI barrier")
    assert.are.equal(("\t//   lineinfo_spec.lua:%d:  cute.arch.sync_threads() -- LI barrier"):format(b),
      after(", line " .. b .. " inlined at"))
    assert.truthy(after("/no/such/file.lua"):find("EXIT", 1, true), out)   -- unreadable: no text
    -- without lineinfo: plain disassembly (no --print-line-info)
    local plain = sh(env .. self_exe() .. " " .. child .. " off")
    assert.truthy(has(plain, "no --print-line-info"), plain)
  end)

  it("with the real nvdisasm: //## File markers of this file, each followed by its Lua line", function()
    if not (DISASM and DISASM:find("nvdisasm")) then return pending("nvdisasm not found") end
    local k = li_kernel({ lineinfo = true, arch = "sm_90a" })
    local sass = k:sass(spec, spec, cute.Int32(100))
    local abs, n = cwd() .. "/" .. THIS, 0
    local src = {}
    for l in io.lines(THIS) do src[#src + 1] = l end
    local prev
    for l in sass:gmatch("[^\n]+") do
      local ln = prev and prev:match('//## File "' .. abs:gsub("%p", "%%%0") .. '", line (%d+)')
      if ln then
        n = n + 1
        local text = assert(src[tonumber(ln)], ln):match("^%s*(.-)%s*$")
        assert.truthy(l:find("lineinfo_spec.lua:" .. ln .. ":", 1, true), l)
        assert.truthy(l:find(text, 1, true), l)
      end
      prev = l
    end
    assert.is_true(n > 0, sass)
  end)
end)

describe("lineinfo on the GPU", function()
  gpu_it("results are the same with and without lineinfo (random data, CPU reference), JIT and ptxas", function()
    local n = 256
    local h = U.rand_floats(n, 0.5, 2)
    for _, use_ptxas in ipairs(PTXAS and { false, true } or { false }) do
      for _, li in ipairs({ false, true }) do
        local A = cute.from_host(h, f32, { n })
        local B = cute.from_host(h, f32, { n })
        li_kernel({ lineinfo = li, use_ptxas = use_ptxas }):launch{ grid = 1, block = n }(A, B, cute.Int32(2))
        local ha, hb = A:to_host(), B:to_host()
        for i = 0, n - 1 do
          local x = h[i]
          local ra = math.sqrt(math.sqrt(x))
          local rb = (i < 2 and x / 3 or x) * 5
          assert(math.abs(ha[i] - ra) <= 1e-6 * ra, ("A[%d] = %g, want %g"):format(i, ha[i], ra))
          assert(math.abs(hb[i] - rb) <= 1e-6 * math.abs(rb), ("B[%d] = %g, want %g"):format(i, hb[i], rb))
        end
      end
    end
  end)

  U.device_it("compute-sanitizer names the Lua line of an out-of-bounds store (tools/lineinfo_oob.sh)",
    "compute-sanitizer and the cubin's line table", function()
    local out, rc = sh("sh tools/lineinfo_oob.sh")
    if rc == 2 then return pending("no compute-sanitizer: " .. out) end
    assert.are.equal(0, rc, out)
    assert.truthy(has(out, "jit: ok"), out)
  end)
end)
