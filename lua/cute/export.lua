-- Ahead-of-time export of kernels to plain C (docs/EXPORT.md).
--
--   k:export{ spec_A, spec_B, cute.Int32(0), name = "vadd", dir = "out/" }
--   cute.export{ name = "kernels", dir = "out/", arch = "sm_90a", ptx = true,
--     kernels = { { k1, argsA..., name = "vadd" }, { k2, argsB..., name = "scale" } } }
--
-- Each specialisation (a kernel and the arguments k:compile takes) is traced
-- and compiled as a launch would be; its image (cubin via ptxas when present,
-- else PTX for the driver's JIT) goes into <dir>/<name>.c as a byte array
-- beside a launcher int <fn>_launch(CUstream, grid, block, smem, params...)
-- whose parameters follow the launch plan that Kernel:trace returns (the plan
-- launch.lua's writer fills).  The C needs only libcuda: no CUDA headers.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local dt = require("cute.dtype")

local M = {}

-- C keywords and the launcher's own names, which a Lua parameter name may
-- collide with (a suffix _ is added)
local c_keywords = {}
for w in ([[auto break case char const continue default do double else enum extern float for goto if inline
  int long register restrict return short signed sizeof static struct switch typedef union unsigned void
  volatile while _Bool _Complex _Imaginary bool true false NULL stream grid block smem params st]]):gmatch("%S+") do
  c_keywords[w] = true
end
local function c_ident(n) return c_keywords[n] and (n .. "_") or n end

local function is_ident(s) return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil end

-- compile one specialisation; returns { fn, kname, image, is_ptx, ptx, cubin,
-- plan, params = {{ctype, cname, p}...}, dyn_smem }
local function build_one(what, k, args, nargs, fn, arch, want_cubin)
  local K = require("cute.kernel")
  local sp = require("cute.specialise")
  local compile = require("cute.compile")
  sp.check_args(k, args, nargs, false)
  k._alias_mask = sp.static_mask(args, nargs)
  local o = k.options:for_current_device(what)
  local changes = { use_ptxas = want_cubin }
  if arch then changes.arch = arch end
  o = o:with(changes, what)
  local ir, plan = k:trace(unpack(args, 1, nargs))
  local cc, st, msg = compile.run(ir, o)
  if st ~= 0 then cf.fail(("%s: compile of kernel %s failed: %s"):format(what, k.name, compile.explain(o, msg))) end
  local r = compile.result(cc)
  local names = k.param_names or {}
  local params, used = {}, {}
  for j, p in ipairs(plan) do
    local base = c_ident(names[p.arg] or ("arg" .. p.arg))
    local cname, ctype
    if p.kind == "ptr" then
      cname, ctype = base, "CUdeviceptr"
    elseif p.kind == "bytes" then
      cf.fail(("cute.export: argument %d (%s): TMA atoms (by-value tensor maps) cannot be exported yet"):format(p.arg, base))
    elseif p.kind == "scalar" then
      cname = base
      local info = dt.scalars[p.t]
      ctype = info.bool and "uint8_t" or info.ctype
    else
      cname = ("%s_%s%d"):format(base, p.field == "shape" and "shape" or "stride", p.d)
      ctype = p.bits == 64 and "int64_t" or "int32_t"
    end
    while used[cname] do cname = cname .. "_" end
    used[cname] = true
    -- a tensor traced as 16-byte aligned (its spec's ptr, default 0): the kernel assumed it
    local align16 = p.kind == "ptr" and (tonumber(args[p.arg].ptr or 0) or 0) % 16 == 0
    params[j] = { ctype = ctype, cname = cname, p = p, align16 = align16 }
  end
  local image, is_ptx = r.cubin, false
  if not image then image, is_ptx = r.ptx .. "\0", true end
  return { fn = fn, kname = k.name, image = image, is_ptx = is_ptx, ptx = r.ptx, cubin = r.cubin,
    arch = r.arch, plan = plan, params = params, dyn_smem = K.compiled_dyn_smem(cc) }
end

local function write_file(what, path, data)
  local f, err = io.open(path, "wb")
  if not f then cf.fail(("%s: cannot write %s: %s"):format(what, path, tostring(err))) end
  f:write(data)
  f:close()
end

local CUDA_DECLS = [[
/* The few CUDA driver types this needs, declared here so that no CUDA
   headers are needed (identical to cuda.h's typedefs where they overlap). */
#ifndef CUTE_AOT_CUDA_TYPES
#define CUTE_AOT_CUDA_TYPES
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct cute_aot_dim3 { unsigned x, y, z; } cute_aot_dim3;
#endif
]]

local function signature(e)
  local s = { ("int %s_launch(CUstream stream, cute_aot_dim3 grid, cute_aot_dim3 block, unsigned smem"):format(e.fn) }
  for _, q in ipairs(e.params) do s[#s + 1] = (", %s %s"):format(q.ctype, q.cname) end
  return table.concat(s) .. ")"
end

local function header(name, entries)
  local guard = name:upper() .. "_CUTE_AOT_H"
  local h = { ("/* %s.h: kernels exported by cuteluajit (k:export / cute.export); see docs/EXPORT.md.\n" ..
    "   Link %s.c and libcuda only.  Every function returns 0 or a CUresult code. */"):format(name, name),
    "#ifndef " .. guard, "#define " .. guard, "#include <stdint.h>", CUDA_DECLS,
    "#ifdef __cplusplus", 'extern "C" {', "#endif", "" }
  for _, e in ipairs(entries) do
    h[#h + 1] = ("/* kernel %s for %s (%s image); its dynamic shared tensors need %d bytes\n" ..
      "   (smem = 0: exactly that; less than that but not 0: CUDA_ERROR_INVALID_VALUE) */"):format(
      e.kname, e.arch, e.is_ptx and "PTX" or "cubin", e.dyn_smem)
    h[#h + 1] = signature(e) .. ";"
    h[#h + 1] = ("#define %s_DYNAMIC_SMEM %du"):format(e.fn:upper(), e.dyn_smem)
    h[#h + 1] = ""
  end
  h[#h + 1] = ("/* Load every image into the current context now (else at the first launch). */\nint %s_load(void);")
    :format(name)
  h[#h + 1] = ("/* Unload the modules (call with the context they were loaded into current). */\nint %s_unload(void);")
    :format(name)
  h[#h + 1] = "#ifdef __cplusplus\n}\n#endif\n#endif"
  return table.concat(h, "\n") .. "\n"
end

local function byte_array(s)
  local out, line = {}, {}
  for i = 1, #s do
    line[#line + 1] = tostring(s:byte(i))
    if #line == 24 then out[#out + 1] = table.concat(line, ",") .. ","; line = {} end
  end
  if #line > 0 then out[#out + 1] = table.concat(line, ",") end
  return table.concat(out, "\n")
end

local function source(name, entries)
  local c = { ("/* %s.c: generated by cuteluajit (docs/EXPORT.md); needs only libcuda. */"):format(name),
    ('#include "%s.h"'):format(name), "#include <stddef.h>", "",
    "typedef struct CUmod_st *cute_aot_module;", "typedef struct CUfunc_st *cute_aot_function;",
    "extern int cuModuleLoadData(cute_aot_module *module, const void *image);",
    "extern int cuModuleUnload(cute_aot_module module);",
    "extern int cuModuleGetFunction(cute_aot_function *fn, cute_aot_module module, const char *name);",
    "extern int cuFuncSetAttribute(cute_aot_function fn, int attrib, int value);",
    "extern int cuLaunchKernel(cute_aot_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,\n" ..
    "  unsigned by, unsigned bz, unsigned smem, CUstream stream, void **params, void **extra);",
    "#define CUTE_AOT_INVALID_VALUE 1",
    "#define CUTE_AOT_MAX_DYNAMIC_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */", "" }
  for i, e in ipairs(entries) do
    c[#c + 1] = ("/* %s: %s for %s, %d bytes */"):format(e.fn, e.is_ptx and "PTX" or "cubin", e.arch, #e.image)
    c[#c + 1] = ("static const unsigned char %s_image[%d] = {\n%s\n};"):format(e.fn, #e.image, byte_array(e.image))
    c[#c + 1] = ("static cute_aot_module %s_module;\nstatic cute_aot_function %s_function;\n" ..
      "static unsigned %s_smem_set = 48u * 1024u;"):format(e.fn, e.fn, e.fn)
    c[#c + 1] = ([[
static int %s_get(void) {
  int st;
  if (%s_function) return 0;
  if (!%s_module) {
    st = cuModuleLoadData(&%s_module, %s_image);
    if (st) { %s_module = NULL; return st; }
  }
  return cuModuleGetFunction(&%s_function, %s_module, "%s");
}
]]):format(e.fn, e.fn, e.fn, e.fn, e.fn, e.fn, e.fn, e.fn, e.kname)
    local body = { signature(e) .. " {" }
    body[#body + 1] = "  int st = " .. e.fn .. "_get();"
    body[#body + 1] = "  if (st) return st;"
    if e.dyn_smem > 0 then
      body[#body + 1] = ("  if (smem == 0) smem = %du;\n  else if (smem < %du) return CUTE_AOT_INVALID_VALUE;"):format(
        e.dyn_smem, e.dyn_smem)
    end
    body[#body + 1] = ("  if (smem > %s_smem_set) {\n    st = cuFuncSetAttribute(%s_function, " ..
      "CUTE_AOT_MAX_DYNAMIC_SMEM, (int)smem);\n    if (st) return st;\n    %s_smem_set = smem;\n  }"):format(
      e.fn, e.fn, e.fn)
    local ptrs = {}
    for _, q in ipairs(e.params) do
      local p = q.p
      if p.kind == "dim" and p.div then -- cute.dynamic(t, {divisibility = n}): the kernel assumed it
        body[#body + 1] = ("  if (%s %% %d != 0) return CUTE_AOT_INVALID_VALUE;"):format(q.cname, p.div)
      end
      if q.align16 then -- the kernel was compiled for a 16-byte aligned address
        body[#body + 1] = ("  if (%s %% 16u != 0) return CUTE_AOT_INVALID_VALUE;"):format(q.cname)
      end
      ptrs[#ptrs + 1] = "&" .. q.cname
    end
    if #ptrs > 0 then
      body[#body + 1] = ("  void *params[%d] = { %s };"):format(#ptrs, table.concat(ptrs, ", "))
    else
      body[#body + 1] = "  void **params = NULL;"
    end
    body[#body + 1] = ("  return cuLaunchKernel(%s_function, grid.x, grid.y, grid.z, block.x, block.y, block.z,\n" ..
      "    smem, stream, params, NULL);\n}\n"):format(e.fn)
    c[#c + 1] = table.concat(body, "\n")
    entries[i] = e
  end
  local load, unload = { ("int %s_load(void) {\n  int st;"):format(name) },
    { ("int %s_unload(void) {\n  int st, first = 0;"):format(name) }
  for _, e in ipairs(entries) do
    load[#load + 1] = ("  if ((st = %s_get()) != 0) return st;"):format(e.fn)
    unload[#unload + 1] = ("  if (%s_module) {\n    st = cuModuleUnload(%s_module);\n    if (st && !first) first = st;\n" ..
      "    %s_module = NULL;\n    %s_function = NULL;\n    %s_smem_set = 48u * 1024u;\n  }"):format(
      e.fn, e.fn, e.fn, e.fn, e.fn)
  end
  load[#load + 1] = "  return 0;\n}\n"
  unload[#unload + 1] = "  return first;\n}"
  c[#c + 1] = table.concat(load, "\n")
  c[#c + 1] = table.concat(unload, "\n")
  return table.concat(c, "\n") .. "\n"
end

-- cute.export{ name =, dir =, arch =, ptx =, kernels = { {k, args..., name = fn}, ... } }
-- Returns { header =, source =, files = {paths}, kernels = { {fn, params, image, ...} } }.
function M.export(t)
  local what = "cute.export"
  if type(t) ~= "table" then cf.fail(what .. ": expected a table {name =, dir =, kernels = {...}}, got " .. type(t)) end
  local K = require("cute.kernel")
  local name, dir = t.name, t.dir
  if not is_ident(name) then
    cf.fail(("%s: name must be a C identifier string, got %s"):format(what, tostring(name)))
  end
  what = ("cute.export %s"):format(name)
  if type(dir) ~= "string" or dir == "" then
    cf.fail(("%s: dir must be a directory path string, got %s"):format(what, tostring(dir)))
  end
  if t.arch ~= nil and (type(t.arch) ~= "string" or not t.arch:match("^sm_%d+a?$")) then
    cf.fail(("%s: arch must be a string such as \"sm_80\" or \"sm_90a\", got %s"):format(what, tostring(t.arch)))
  end
  if t.ptx ~= nil and type(t.ptx) ~= "boolean" then
    cf.fail(("%s: ptx must be true or false, got %s"):format(what, tostring(t.ptx)))
  end
  local list = t.kernels
  if type(list) ~= "table" or #list == 0 then
    cf.fail(("%s: kernels must be a non-empty list of {k, args...}, got %s"):format(what, tostring(list)))
  end
  for key in pairs(t) do
    if key ~= "name" and key ~= "dir" and key ~= "arch" and key ~= "ptx" and key ~= "kernels" then
      cf.fail(("%s: unknown option %s (name, dir, arch, ptx, kernels)"):format(what, tostring(key)))
    end
  end
  local want_cubin = C.cute_ptxas_path() ~= nil
  local entries, seen, files = {}, {}, {}
  for i, item in ipairs(list) do
    local k = type(item) == "table" and item[1]
    if not K.is_kernel(k) then
      cf.fail(("%s: kernels[%d] must be {k, args...} with k a cute.kernel, got %s"):format(what, i, tostring(k)))
    end
    local fn = item.name or (#list == 1 and name or (name .. "_" .. i))
    if not is_ident(fn) then
      cf.fail(("%s: kernels[%d].name must be a C identifier string, got %s"):format(what, i, tostring(fn)))
    end
    if seen[fn] then
      cf.fail(("%s: kernels[%d]: launcher name %s is used twice (give each {k, ..., name = ...})"):format(what, i, fn))
    end
    seen[fn] = true
    local nargs = table.maxn(item) - 1
    local args = {}
    for a = 1, nargs do args[a] = item[a + 1] end
    entries[i] = build_one(what, k, args, nargs, fn, t.arch, want_cubin)
  end
  local lfs_ok = os.execute(("mkdir -p '%s'"):format(dir:gsub("'", "'\\''")))
  if lfs_ok ~= 0 and lfs_ok ~= true then cf.fail(("%s: cannot create directory %s"):format(what, dir)) end
  local sep = dir:sub(-1) == "/" and "" or "/"
  local function out(file, data)
    local path = dir .. sep .. file
    write_file(what, path, data)
    files[#files + 1] = path
  end
  for _, e in ipairs(entries) do
    if e.cubin then out(e.fn .. ".cubin", e.cubin) end
    if t.ptx or not e.cubin then out(e.fn .. ".ptx", e.ptx) end
  end
  local h, c = header(name, entries), source(name, entries)
  out(name .. ".h", h)
  out(name .. ".c", c)
  return { header = h, source = c, files = files, kernels = entries,
    note = not want_cubin and "ptxas not found: the images are PTX, JIT-compiled by the driver at load" or nil }
end

-- k:export{ args..., name =, dir =, arch =, ptx = }: one specialisation
function M.kernel_export(k, t)
  if not require("cute.kernel").is_kernel(k) then
    cf.fail(("cute.kernel: call k:export{...} with ':' (got %s as the kernel)"):format(type(k)))
  end
  if type(t) ~= "table" then
    cf.fail(("cute.kernel %s export: expected a table {args..., name =, dir =}, got %s"):format(k.name, type(t)))
  end
  local item = { k, name = t.name }
  for i = 1, table.maxn(t) do item[i + 1] = t[i] end
  return M.export{ name = t.name, dir = t.dir, arch = t.arch, ptx = t.ptx, kernels = { item } }
end

return M
