-- cute: the public Lua API of cuteluajit.   local cute = require("cute")
--
-- Submodules (each usable alone):
--   cute.layout   CuTe layout algebra on the C core (make_layout, composition, divides...)
--   cute.dtype    scalar types and address spaces (one table, from the C core's)
--   cute.runtime  CUDA driver runtime: devices, streams, events, modules, launch
--   cute.memory   device tensors and host transfers
--   cute.trace    tracing: traced values, cute.range, cute.if_then, cute.var
--   cute.tensor   kernel-side tensors (pointer + layout), copies, fragments
--   cute.arch     GPU operations inside kernels (cute.arch.*, cute.math.*)
--   cute.kernel   kernels: specialisation cache, compile, launch
--   cute.mma      MMA ops (cute.nvgpu.warp.*, cute.nvgpu.MmaUniversalOp) and atoms
--   cute.copy_atom  copy ops (cute.nvgpu.CopyUniversalOp, cute.nvgpu.cpasync, warp.LdMatrix...), atoms, TiledCopy
--   cute.repl     REPL helpers
--   cute.nccl     NCCL collectives over several GPUs (loaded on first use of cute.nccl)
local ffi = require("ffi")
require("cute.jit_policy") -- first: no trace compiler for the tracing modules (jit_policy.lua says why)
local cf = require("cute.ffi")

local cute = {}

local function merge(mod, names)
  for k, v in pairs(mod) do
    if names == nil or names[k] then
      if cute[k] ~= nil and cute[k] ~= v then
        cf.fail("cute: name clash on cute." .. k .. " while loading the API")
      end
      cute[k] = v
    end
  end
end

local layout = require("cute.layout")
local trace = require("cute.trace")
local tensor = require("cute.tensor")
local arch = require("cute.arch")
local kernel = require("cute.kernel")
local runtime = require("cute.runtime")
require("cute.target_cpu").startup() -- CUTE_TARGET, or the CPU target when there is no GPU

merge(layout)
merge(require("cute.smem_atom")) -- make_smem_layout_atom, SmemLayoutAtomKind
merge(runtime)
merge(require("cute.memory"))
merge(require("cute.dtype").exports)
-- several devices, peer memory, CUDA IPC (docs/MULTIGPU.md)
merge(require("cute.peer"), { can_access_peer = true, enable_peer_access = true, copy_peer = true,
  from_ipc_handle = true })
-- faults on the GPU: reported, then the device recovers (docs/FAULTS.md)
cute.reset_device = require("cute.fault").reset_device
-- DLPack in (t:to_dlpack is a tensor method): docs/EMBED.md
cute.from_dlpack = function(...) return require("cute.dlpack").from_dlpack(...) end

-- tracing and control flow
cute.range = trace.range
cute.range_constexpr = trace.range_constexpr
cute.if_then = trace.if_then
cute.while_ = trace.while_
cute.where = trace.select
cute.var = trace.var
cute.return_ = trace.return_
-- the source front end (cute.frontend): chunks loaded from strings under a name
cute.register_source = function(...) return require("cute.frontend").register_source(...) end

-- kernels, typed scalars
cute.kernel = kernel.kernel
cute.tensor_spec = kernel.tensor_spec
cute.dynamic = kernel.dynamic
-- ahead-of-time export to C (docs/EXPORT.md): cute.export{...}, k:export{...}
cute.export = require("cute.export").export
kernel.Kernel.export = require("cute.export").kernel_export
cute.cache = require("cute.cache") -- the on-disk cache of compiled kernels (docs/CACHE.md)
-- pictures of layouts, swizzles, TiledMMA / TiledCopy (docs/REPL.md): SVG and terminal grids
cute.svg = function(...) return require("cute.svg").svg(...) end
cute.show = function(...) return require("cute.svg").show(...) end
cute.autotune = require("cute.autotune") -- parallel-compile sweeps of configurations (docs/AUTOTUNE.md)
for _, n in ipairs(require("cute.dtype").cute_names) do cute[n] = kernel[n] end

-- GPU operations
cute.arch = arch.arch
cute.math = arch.math
for _, n in ipairs({ "min", "max", "div", "rem", "band", "bor", "bxor", "bnot", "lshift", "rshift",
  "lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "and_", "or_", "printf", "assert_" }) do
  cute[n] = arch[n]
end

-- whole-fragment values (CuTe DSL's TensorSSA): t:load(), elementwise ops, reductions
local tssa = require("cute.tensor_ssa")
tssa.wrap_math(cute.math)
cute.ReductionOp = tssa.ReductionOp
cute.reduce = tssa.reduce
cute.TensorSSA = tssa.TensorSSA
cute.is_tensor_ssa = tssa.is_tensor_ssa
cute.butterfly_reduce = tssa.butterfly_reduce
cute.full, cute.full_like, cute.zeros_like = tssa.full, tssa.full_like, tssa.zeros_like
cute.threadquad_reduce = tssa.threadquad_reduce
cute.threadquad_reduce_max, cute.threadquad_reduce_sum = tssa.threadquad_reduce_max, tssa.threadquad_reduce_sum
cute.min, cute.max = cute.math.min, cute.math.max
do
  local where = cute.where
  cute.where = function(c, a, b, ...)
    if tssa.is_tensor_ssa(c) or tssa.is_tensor_ssa(a) or tssa.is_tensor_ssa(b) then return tssa.where(c, a, b) end
    return where(c, a, b, ...)
  end
  for _, n in ipairs({ "lt", "le", "gt", "ge", "eq", "ne" }) do
    local f = cute[n]
    cute[n] = function(a, b, ...)
      if tssa.is_tensor_ssa(a) then return a[n](a, b) end
      if tssa.is_tensor_ssa(b) then
        return tssa.map("cute." .. n, f, a, b)
      end
      return f(a, b, ...)
    end
  end
end

-- kernel-side tensors
cute.make_tensor = tensor.make_tensor
cute.make_fragment = tensor.make_fragment
cute.make_fragment_like = tensor.make_fragment_like
cute.make_shared_tensor = tensor.make_shared_tensor
cute.make_dynamic_shared_tensor = tensor.make_dynamic_shared_tensor
cute.copy = tensor.copy
cute.is_tensor = function(x) return tensor.is_tensor(x) or runtime.is_tensor(x) end

-- MMA ops and atoms (cute.mma)
local mma = require("cute.mma")
cute.nvgpu = mma.nvgpu
cute.make_mma_atom = mma.make_mma_atom
cute.make_tiled_mma = mma.make_tiled_mma
cute.gemm = mma.gemm
-- Hopper warpgroup MMA (cute.warpgroup: instructions, descriptors; cute.wgmma: atoms, partitions)
require("cute.warpgroup").install(cute.arch)
cute.nvgpu.warpgroup = require("cute.wgmma").warpgroup
cute.sm90_utils = require("cute.wgmma").sm90_utils

-- copy ops, atoms and TiledCopy (cute.copy_atom), added into cute.nvgpu and cute.nvgpu.warp
local copy_atom = require("cute.copy_atom")
cute.nvgpu.CopyUniversalOp = copy_atom.nvgpu.CopyUniversalOp
cute.nvgpu.cpasync = copy_atom.cpasync
for k, v in pairs(copy_atom.warp) do cute.nvgpu.warp[k] = v end
for _, n in ipairs({ "make_copy_atom", "make_tiled_copy_tv", "make_tiled_copy_A", "make_tiled_copy_B",
  "make_tiled_copy_C" }) do
  cute[n] = copy_atom[n]
end
-- cute.copy(src, dst) or cute.copy(atom, src, dst) (a universal-copy atom)
local tma_copy = require("cute.tma_copy") -- TMA (docs/HOPPER.md, "TMA")
tma_copy.install(cute.nvgpu.cpasync)
cute.copy = function(a, ...)
  if tma_copy.is_atom(a) then return tma_copy.copy(a, ...) end
  if copy_atom.is_copy_atom(a) or copy_atom.is_tiled_copy(a) then return require("cute.copy_partition").copy(a, ...) end
  return tensor.copy(a, ...)
end

cute.make_identity_tensor, cute.elem_less = tensor.make_identity_tensor, tensor.elem_less
-- the memory of a kernel tensor as another dtype (cute.recast)
cute.recast_tensor = require("cute.recast").recast_tensor

-- ops that take a layout or a kernel-side tensor
local function dual(name, tfn)
  local lfn = layout[name]
  cute[name] = function(x, ...)
    if tensor.is_tensor(x) then return tfn(x, ...) end
    return lfn(x, ...)
  end
end
dual("local_tile", tensor.local_tile)
dual("local_partition", tensor.local_partition)
dual("zipped_divide", tensor.zipped_divide)
dual("logical_divide", tensor.logical_divide)
dual("tiled_divide", tensor.tiled_divide)
dual("flat_divide", tensor.flat_divide)
dual("dice", tensor.dice)
dual("group_modes", tma_copy.group_modes) -- (kernel tensors: lua/cute/tma_copy.lua)
dual("size", tensor.size_of) -- i64 when a tensor's size can exceed 2^31 - 1
do -- cute.size of a register tensor (tiled_mma:make_fragment_*) or a TensorSSA value: its (mode's) size
  local size, regs, ssa = cute.size, require("cute.mma_partition"), require("cute.tensor_ssa")
  cute.size = function(x, ...)
    if regs.is_reg_tensor(x) or ssa.is_tensor_ssa(x) then
      local mode = ...
      return mode == nil and layout.size(x.shape) or layout.size(layout.get(x.shape, mode))
    end
    return size(x, ...)
  end
end

-- Hopper pipelines (cute.pipeline) and the persistent tile scheduler (cute.utils): docs/HOPPER.md
cute.pipeline = require("cute.pipeline")
cute.utils = cute.utils or {}
for k, v in pairs(require("cute.tile_scheduler").exports) do cute.utils[k] = v end

cute.version = ffi.string(cf.C.cute_version())

-- submodules loaded on first use: cute.nccl (NCCL collectives, docs/NCCL.md)
local lazy = { nccl = "cute.nccl" }
setmetatable(cute, { __index = function(t, k)
  local name = lazy[k]
  if name == nil then return nil end
  local m = require(name)
  rawset(t, k, m)
  return m
end })

-- The background warm-ups (LLVM's, started by cute.kernel; the driver JIT's,
-- started by the first context) never run into exit(): lua_close runs this
-- finaliser, and os.exit (which skips lua_close) waits first.
package.loaded["cute.warmup_guard"] = ffi.gc(ffi.new("char[1]"), function()
  cf.C.cute_compile_warmup_wait()
  cf.C.cute_cuda_warmup_wait()
end)
do
  local os_exit = os.exit
  if not rawequal(os_exit, nil) and not package.loaded["cute.exit_wrapped"] then
    package.loaded["cute.exit_wrapped"] = true
    os.exit = function(...)
      cf.C.cute_compile_warmup_wait()
      cf.C.cute_cuda_warmup_wait()
      return os_exit(...)
    end
  end
end

return cute
