-- cute.host: the Lua half of the C host API (include/cute_host.h,
-- src/host_api.c).  C calls these functions under cute_lua_pcall; argument
-- arrays and launch configurations arrive as light userdata and are read
-- through the FFI with the layouts of cute_host.h.
local ffi = require("ffi")
local cf = require("cute.ffi")
local dlpack = require("cute.dlpack")
local mem = require("cute.memory")
local kernel = require("cute.kernel")
local cute = require("cute")

local fail = cf.fail

if not pcall(ffi.typeof, "cute_host_arg") then
  ffi.cdef [[
typedef struct cute_host_arg { int kind; const DLTensor *tensor; int64_t i; double f; } cute_host_arg;
typedef struct cute_host_launch_cfg { unsigned grid[3]; unsigned block[3]; unsigned smem; void *stream; } cute_host_launch_cfg;
]]
end

local M = {}

-- CUTE_ARG_* (cute_host.h)
local TENSOR, I32, I64, U32, F32, F64, CINT, CFLOAT, CBOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9

function M.register_source(name, code) return require("cute.frontend").register_source(name, code) end

-- merge the kernels of a loaded chunk's result (a table) into kernels
function M.collect(kernels, result)
  if type(result) ~= "table" then return end
  for k, v in pairs(result) do
    if type(k) == "string" and kernel.is_kernel(v) then kernels[k] = v end
  end
end

local function names(kernels)
  local out = {}
  for k in pairs(kernels) do out[#out + 1] = k end
  for k, v in pairs(_G) do
    if type(k) == "string" and kernel.is_kernel(v) and not kernels[k] then out[#out + 1] = k end
  end
  table.sort(out)
  return #out > 0 and table.concat(out, ", ") or "none loaded"
end

function M.find(kernels, name)
  local k = kernels[name]
  if k == nil and kernel.is_kernel(rawget(_G, name)) then k = rawget(_G, name) end
  if k == nil then
    fail(("no kernel named '%s' (kernels: %s)"):format(name, names(kernels)))
  end
  return k
end

-- the Lua values of the C argument array
local function lua_args(p, n, compile_only)
  local a = ffi.cast("const cute_host_arg *", p)
  local out = {}
  for j = 0, n - 1 do
    local x, kind, v = a[j], a[j].kind, nil
    if kind == TENSOR then
      if x.tensor == nil then fail(("argument %d: CUTE_ARG_TENSOR with a NULL DLTensor"):format(j + 1)) end
      local t = x.tensor[0]
      local F = ("argument %d (DLTensor)"):format(j + 1)
      if t.data == nil then
        if not compile_only then
          fail(F .. ": data is NULL: a description without memory can be compiled, not launched")
        end
        local shape, dtype, strides = dlpack.describe(t, F, true)
        v = kernel.tensor_spec(shape, dtype, strides)
      else
        local shape, dtype, strides, addr = dlpack.describe(t, F, compile_only)
        v = mem._view(addr, shape, dtype, strides, nil, F)
      end
    elseif kind == I32 then v = cute.Int32(tonumber(x.i))
    elseif kind == I64 then v = cute.Int64(x.i)
    elseif kind == U32 then v = cute.Uint32(tonumber(x.i))
    elseif kind == F32 then v = cute.Float32(x.f)
    elseif kind == F64 then v = cute.Float64(x.f)
    elseif kind == CINT then
      local i = tonumber(x.i)
      if i >= 2 ^ 53 or i <= -2 ^ 53 then fail(("argument %d: CUTE_ARG_CONST_INT %s does not fit a Lua number exactly"):format(j + 1, tostring(x.i))) end
      v = i
    elseif kind == CFLOAT then v = x.f
    elseif kind == CBOOL then v = x.i ~= 0
    else fail(("argument %d: unknown kind %d (CUTE_ARG_TENSOR .. CUTE_ARG_CONST_BOOL)"):format(j + 1, kind)) end
    out[j + 1] = v
  end
  return out
end

local function dims(a)
  local x, y, z = a[0], a[1], a[2]
  return { x == 0 and 1 or x, y == 0 and 1 or y, z == 0 and 1 or z }
end

function M.launch(k, cfgp, argp, n)
  local c = ffi.cast("const cute_host_launch_cfg *", cfgp)
  local args = lua_args(argp, n, false)
  local cfg = { grid = dims(c.grid), block = dims(c.block) }
  if c.smem ~= 0 then cfg.smem = c.smem end
  if c.stream ~= nil then cfg.stream = c.stream end
  k:launch(cfg)(unpack(args, 1, n))
end

local stages = { ir = true, llvm = true, ptx = true, sass = true }

function M.compile(k, stage, arch, argp, n)
  if not stages[stage] then fail(("stage '%s' is not one of ir, llvm, ptx, sass"):format(stage)) end
  local args = lua_args(argp, n, true)
  if arch then   -- one kernel object per target, so its compile cache is kept
    local per = rawget(k, "_host_arch") or {}
    rawset(k, "_host_arch", per)
    per[arch] = per[arch] or k:with({ arch = arch })
    k = per[arch]
  end
  if stage == "ir" then return k:ir(unpack(args, 1, n)) end
  if stage == "sass" then return k:sass(unpack(args, 1, n)) end
  if stage == "ptx" then return (k:ptx(unpack(args, 1, n))) end  -- also when ptxas rejects it, as k:ptx
  return k:compile(unpack(args, 1, n)).llvm
end

return M
