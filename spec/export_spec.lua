-- Ahead-of-time export to C (docs/EXPORT.md): k:export / cute.export write the
-- image, a header and a C source whose launchers follow the launch plan; the
-- C compiles with cc -Wall -Werror without CUDA headers and references only
-- libcuda's symbols; the example C program is built and, with a GPU, run.
local cute = require("cute")
local C = require("cute.ffi").C
local util = dofile("spec/support/util.lua")
local has, read = util.has, util.read_file
local f32 = cute.float32

local PTXAS = C.cute_ptxas_path() ~= nil
local TMP = os.tmpname()
os.remove(TMP)
local n_dir = 0
local function newdir() n_dir = n_dir + 1; return ("%s_export%d"):format(TMP, n_dir) end

local sh = dofile("spec/support/util.lua").sh
local function must(cmd)
  local out, rc = sh(cmd)
  assert(rc == 0, ("command failed (%s):\n%s\n%s"):format(tostring(rc), cmd, out))
  return out
end
local CFLAGS = "cc -std=c11 -Wall -Wextra -Werror -pedantic"

-- the undefined symbols of an object file, sorted
-- the object's undefined symbols, less those the compiler itself adds when a
-- distribution turns hardening on by default (-fstack-protector: libc's
-- __stack_chk_fail / __stack_chk_guard; seen on the GPU host's Ubuntu cc)
local function undefined(obj)
  local syms = {}
  for s in must("nm -u " .. obj):gmatch("U%s+([%w_]+)") do
    if not s:match("^__stack_chk_") then syms[#syms + 1] = s end
  end
  table.sort(syms)
  return table.concat(syms, " ")
end

local function gid() return cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx() end
local vadd = cute.kernel(function(A, B, Cv, n)
  local i = gid()
  cute.if_then(i < n, function() Cv[i] = A[i] + B[i] end)
end, { name = "vadd" })

-- the bytes of the array `name`_image in a generated C source
local function embedded(src, name)
  local body = src:match("static const unsigned char " .. name .. "_image%[%d+%] = {\n(.-)\n};")
  assert(body, "no image array for " .. name)
  local t = {}
  for b in body:gmatch("%d+") do t[#t + 1] = string.char(tonumber(b)) end
  return table.concat(t)
end

describe("k:export", function()
  it("writes the image, the PTX, the header and the source; both compile with cc -Wall -Werror and need " ..
    "only libcuda", function()
    local dir = newdir()
    local v = cute.tensor_spec({ 4096 }, f32)
    local r = vadd:export{ v, cute.tensor_spec({ 4096 }, f32), cute.tensor_spec({ 4096 }, f32), cute.Int32(0),
      name = "vadd1", dir = dir, arch = "sm_80", ptx = true }
    local h, c = read(dir .. "/vadd1.h"), read(dir .. "/vadd1.c")
    assert.are.equal(r.header, h)
    assert.are.equal(r.source, c)
    -- static tensors: their address only; the Int32 scalar by type
    assert.truthy(has(h, "int vadd1_launch(CUstream stream, cute_aot_dim3 grid, cute_aot_dim3 block, unsigned smem, " ..
      "CUdeviceptr A, CUdeviceptr B, CUdeviceptr Cv, int32_t n);"), h)
    local ptx = read(dir .. "/vadd1.ptx")
    assert.truthy(has(ptx, ".entry vadd("), ptx)
    assert.truthy(has(ptx, ".target sm_80"), ptx)
    if PTXAS then
      local cubin = read(dir .. "/vadd1.cubin")
      assert.are.equal("\127ELF", cubin:sub(1, 4))
      assert.are.equal(cubin, embedded(c, "vadd1")) -- the C carries exactly the cubin
      assert.truthy(has(c, '"vadd"'))
    else
      assert.is_nil(read(dir .. "/vadd1.cubin"))
      assert.are.equal(ptx .. "\0", embedded(c, "vadd1"))
      assert.truthy(r.note and r.note:find("ptxas not found", 1, true))
    end
    must(("%s -c %s/vadd1.c -o %s/vadd1.o"):format(CFLAGS, dir, dir))
    assert.are.equal("cuFuncSetAttribute cuLaunchKernel cuModuleGetFunction cuModuleLoadData cuModuleUnload",
      undefined(dir .. "/vadd1.o"))
    -- the header alone, and as C++ when a C++ compiler is there
    local f = assert(io.open(dir .. "/use.c", "w"))
    f:write('#include "vadd1.h"\nint use(CUdeviceptr p, CUstream s) {\n  cute_aot_dim3 g = {1, 1, 1}, b = {32, 1, 1};\n' ..
      '  return vadd1_launch(s, g, b, 0, p, p, p, 7) | vadd1_load() | vadd1_unload();\n}\n')
    f:close()
    must(("%s -I%s -c %s/use.c -o %s/use.o"):format(CFLAGS, dir, dir, dir))
    if select(2, sh("command -v c++ >/dev/null")) == 0 then
      must(("c++ -x c++ -Wall -Wextra -Werror -I%s -c %s/use.c -o %s/use_cpp.o"):format(dir, dir, dir))
      assert.truthy(must("nm -u " .. dir .. "/use_cpp.o"):find("U vadd1_launch\n", 1, true)) -- C linkage
    end
    -- beside cuda.h (same typedefs) when the toolkit is installed
    if io.open("/usr/local/cuda/include/cuda.h") then
      f = assert(io.open(dir .. "/use_cuda.c", "w"))
      f:write('#include <cuda.h>\n#include "vadd1.h"\nint use2(CUdeviceptr p) { CUstream s = 0;\n' ..
        '  cute_aot_dim3 g = {1, 1, 1};\n  return vadd1_launch(s, g, g, 0, p, p, p, 7); }\n')
      f:close()
      must(("%s -I/usr/local/cuda/include -I%s -c %s/use_cuda.c -o %s/use_cuda.o"):format(CFLAGS, dir, dir, dir))
    end
  end)

  it("the launcher's parameters follow the launch plan: runtime shapes and strides, index width, typed scalars; " ..
    "compile-time arguments are not parameters", function()
    local k = cute.kernel(function(X, Y, h, b, q, scale, unroll)
      local i = gid()
      cute.if_then(i < cute.size(X, 0) , function()
        Y[{ 0, i }] = X[{ i, 0 }] * scale + h:to(f32) + q:to(f32)
      end)
      if b then end
      assert(unroll == 4)
    end, { name = "plan" })
    local dir = newdir()
    local X = cute.dynamic(cute.tensor_spec({ 64, 32 }, f32), { divisibility = 4 })
    local Y = cute.dynamic(cute.tensor_spec({ 8, 64 }, f32), { index_bits = 32 })
    local r = k:export{ X, Y, cute.Float16(0), cute.Boolean(true), cute.Int64(0), cute.Float32(1), 4,
      name = "plan", dir = dir }
    local want = "int plan_launch(CUstream stream, cute_aot_dim3 grid, cute_aot_dim3 block, unsigned smem, " ..
      "CUdeviceptr X, int64_t X_shape1, int64_t X_stride1, int64_t X_shape2, CUdeviceptr Y, int32_t Y_shape1, " ..
      "int32_t Y_stride1, int32_t Y_shape2, uint16_t h, uint8_t b, int64_t q, float scale);"
    assert.truthy(has(r.header, want), r.header)
    -- the order is the kernel's: each name is a .param of the PTX entry, in that order
    local ptx = r.kernels[1].ptx
    local last = 0
    for _, nm in ipairs({ "X", "X_shape1", "X_stride1", "X_shape2", "Y", "Y_shape1", "Y_stride1", "Y_shape2", "h",
      "b", "q", "scale" }) do
      local at = ptx:find("plan_param_" .. nm .. "[,\n%[]", last + 1)
      assert.truthy(at and at > last, nm .. " out of order in:\n" .. ptx)
      last = at
    end
    assert.are.equal(12, select(2, ptx:gsub("%.param ", "")))
    -- the divisibility the kernel was compiled for is checked before the launch
    assert.truthy(has(r.source, "if (X_stride1 % 4 != 0) return CUTE_AOT_INVALID_VALUE;"), r.source)
    assert.truthy(has(r.source, "if (X % 16u != 0) return CUTE_AOT_INVALID_VALUE;"), r.source)
    -- a spec at an unaligned address: no alignment assumed, none checked
    local r2 = k:export{ cute.tensor_spec({ 64, 32 }, f32, nil, { ptr = 4 }), Y, cute.Float16(0), cute.Boolean(true),
      cute.Int64(0), cute.Float32(1), 4, name = "plan2", dir = dir }
    assert.falsy(has(r2.source, "if (X % 16u"), r2.source)
    assert.truthy(has(r2.source, "if (Y % 16u != 0)"), r2.source)
    must(("%s -c %s/plan.c -o %s/plan.o"):format(CFLAGS, dir, dir))
  end)

  it("C keywords and the launcher's own names as Lua parameter names get a trailing _; varargs are arg<i>; " ..
    "a kernel without parameters", function()
    local k = cute.kernel(function(int, stream, smem, ...)
      local extra = ...
      int[cute.arch.thread_idx()] = stream:to(f32) + smem + extra
    end, { name = "kw" })
    local dir = newdir()
    local r = cute.export{ name = "kw", dir = dir, kernels = {
      { k, cute.tensor_spec({ 32 }, f32), cute.Int32(0), cute.Float32(0), cute.Float32(0), name = "kw" },
      { cute.kernel(function() end, { name = "empty" }), name = "empty" } } }
    assert.truthy(has(r.header, "unsigned smem, CUdeviceptr int_, int32_t stream_, float smem_, float arg4);"), r.header)
    assert.truthy(has(r.header, "int empty_launch(CUstream stream, cute_aot_dim3 grid, cute_aot_dim3 block, " ..
      "unsigned smem);"), r.header)
    assert.truthy(has(r.source, "void **params = NULL;"))
    must(("%s -c %s/kw.c -o %s/kw.o"):format(CFLAGS, dir, dir))
  end)

  it("dynamic shared memory: smem 0 means the kernel's need, less is refused, more raises the opt-in limit",
    function()
    local k = cute.kernel(function(X)
      local s = cute.make_dynamic_shared_tensor(cute.make_layout(1024), f32)
      local i = cute.arch.thread_idx()
      s[i] = X[i]
      cute.arch.sync_threads()
      X[i] = s[1023 - i]
    end, { name = "rev" })
    local dir = newdir()
    local r = k:export{ cute.tensor_spec({ 1024 }, f32), name = "rev", dir = dir }
    assert.are.equal(4096, r.kernels[1].dyn_smem)
    assert.truthy(has(r.header, "#define REV_DYNAMIC_SMEM 4096u"), r.header)
    assert.truthy(has(r.source, "if (smem == 0) smem = 4096u;\n  else if (smem < 4096u) return CUTE_AOT_INVALID_VALUE;"),
      r.source)
    assert.truthy(has(r.source, "cuFuncSetAttribute(rev_function, CUTE_AOT_MAX_DYNAMIC_SMEM, (int)smem)"))
    must(("%s -c %s/rev.c -o %s/rev.o"):format(CFLAGS, dir, dir))
  end)
end)

describe("cute.export", function()
  it("several kernels and specialisations in one header and source, each with its own launcher", function()
    local dir = newdir()
    local vs = function() return cute.tensor_spec({ 256 }, f32) end
    local vd = function() return cute.dynamic(cute.tensor_spec({ 256 }, f32)) end
    local r = cute.export{ name = "many", dir = dir, kernels = {
      { vadd, vs(), vs(), vs(), cute.Int32(0), name = "vadd_static" },
      { vadd, vd(), vd(), vd(), cute.Int32(0), name = "vadd_dynamic" },
      { vadd, cute.tensor_spec({ 256 }, cute.float16), cute.tensor_spec({ 256 }, cute.float16),
        cute.tensor_spec({ 256 }, cute.float16), cute.Int32(0), name = "vadd_f16" },
    } }
    assert.truthy(has(r.header, "int vadd_static_launch("))
    assert.truthy(has(r.header, "unsigned smem, CUdeviceptr A, int64_t A_shape1, CUdeviceptr B, int64_t B_shape1, " ..
      "CUdeviceptr Cv, int64_t Cv_shape1, int32_t n);"), r.header)
    assert.truthy(has(r.header, "int vadd_f16_launch("))
    assert.truthy(has(r.kernels[3].ptx, "f16"), r.kernels[3].ptx)
    assert.are_not.equal(r.kernels[1].image, r.kernels[2].image)
    for _, fn in ipairs({ "vadd_static", "vadd_dynamic", "vadd_f16" }) do
      assert.truthy(read(dir .. "/" .. fn .. (PTXAS and ".cubin" or ".ptx")), fn)
      assert.truthy(has(r.source, "static const unsigned char " .. fn .. "_image["))
    end
    must(("%s -c %s/many.c -o %s/many.o"):format(CFLAGS, dir, dir))
    local syms = undefined(dir .. "/many.o")
    assert.are.equal("cuFuncSetAttribute cuLaunchKernel cuModuleGetFunction cuModuleLoadData cuModuleUnload", syms)
    local defined = must("nm --defined-only -g " .. dir .. "/many.o")
    for _, s in ipairs({ "vadd_static_launch", "vadd_dynamic_launch", "vadd_f16_launch", "many_load", "many_unload" }) do
      assert.truthy(defined:find("T " .. s .. "\n", 1, true), defined)
    end
  end)

  it("bad input: an error naming the operation and the value, at the user's line", function()
    local v = cute.tensor_spec({ 16 }, f32)
    local dir = newdir()
    util.expect_error(function() cute.export{ name = "bad name", dir = dir, kernels = { { vadd, v, v, v, 1 } } } end,
      "cute.export: name must be a C identifier string, got bad name")
    util.expect_error(function() cute.export{ name = "x", kernels = { { vadd, v, v, v, 1 } } } end,
      "cute.export x: dir must be a directory path string, got nil")
    util.expect_error(function() cute.export{ name = "x", dir = dir, kernels = {} } end,
      "cute.export x: kernels must be a non-empty list")
    util.expect_error(function() cute.export{ name = "x", dir = dir, kernels = { { 42, v } } } end,
      "cute.export x: kernels[1] must be {k, args...} with k a cute.kernel, got 42")
    util.expect_error(function() cute.export{ name = "x", dir = dir, arch = "ampere", kernels = { { vadd } } } end,
      "arch must be a string such as \"sm_80\"", "got ampere")
    util.expect_error(function() cute.export{ name = "x", dir = dir, grid = 3, kernels = { { vadd } } } end,
      "cute.export x: unknown option grid")
    local twice = { { vadd, v, v, v, cute.Int32(0), name = "a" }, { vadd, v, v, v, cute.Int32(0), name = "a" } }
    util.expect_error(function() cute.export{ name = "x", dir = dir, kernels = twice } end,
      "cute.export x: kernels[2]: launcher name a is used twice")
    util.expect_error(function() vadd:export{ v, v, name = "x", dir = dir } end, "vadd", "2")
    util.expect_error(function() vadd.export(7, {}) end, "call k:export{...} with ':'")
  end)
end)

-- examples/aot: export, then build the C program that links only libcuda
local function libcuda()
  local out, rc = sh("ldconfig -p | grep -o '/[^ ]*libcuda\\.so\\.1$' | head -1")
  local p = rc == 0 and out:match("(%S+)") or nil
  return p
end

describe("examples/aot", function()
  local dir = newdir()
  local function export()
    must(("%s examples/aot/export_vadd.lua %s"):format(util.self_exe(), dir))
    must(("%s -I%s -c examples/aot/main.c -o %s/main.o"):format(CFLAGS, dir, dir))
    must(("%s -c %s/kernels.c -o %s/kernels.o"):format(CFLAGS, dir, dir))
  end

  it("the exporter runs without a GPU; main.c and kernels.c compile; every undefined symbol is libc's or " ..
    "libcuda's", function()
    export()
    local syms = undefined(dir .. "/main.o") .. " " .. undefined(dir .. "/kernels.o")
    for s in syms:gmatch("%S+") do
      local ok = s:match("^cu[A-Z]") or ({ atoi = 1, fprintf = 1, free = 1, malloc = 1, printf = 1, stderr = 1,
        kernels_load = 1, kernels_unload = 1, vadd_launch = 1, scale_launch = 1 })[s]
      assert.truthy(ok, "unexpected symbol " .. s)
    end
    local lib = libcuda()
    if lib then -- links with nothing but libcuda (and libc / libm)
      must(("cc %s/main.o %s/kernels.o -o %s/main %s -lm"):format(dir, dir, dir, lib))
      local needed = must("readelf -d " .. dir .. "/main")
      for so in needed:gmatch("NEEDED%)%s+Shared library: %[([^%]]+)%]") do
        assert.truthy(so:match("^libcuda%.so") or so:match("^libc%.so") or so:match("^libm%.so"), so)
      end
    end
  end)

  util.device_it("the C program runs the exported kernels: C = A + B and X = 2 X match the CPU on random data",
    "the exported C program links libcuda and loads cubins", function()
    export()
    local lib = assert(libcuda(), "libcuda.so.1 not found by ldconfig")
    local arch = require("cute.kernel").gpu_arch()
    must(("%s examples/aot/export_vadd.lua %s %s"):format(util.self_exe(), dir, arch))
    must(("%s -I%s examples/aot/main.c %s/kernels.c -o %s/main %s -lm"):format(CFLAGS, dir, dir, dir, lib))
    for _, n in ipairs({ 1, 1000, 100003 }) do
      local out = must(("%s/main %d"):format(dir, n))
      assert.truthy(out:find("ok n=" .. n .. " max_err=0", 1, true), out)
    end
  end)
end)
