-- cute.nvgpu_sys: memory-ordering loads, stores and fences for flags that
-- other GPUs (over NVLink / PCIe peer access) or other blocks read and write
-- while a kernel runs (docs/PEER_KERNELS.md, "Memory ordering").  Exported
-- from cute.arch:
--   ld_acquire(T, crd [, scope]) -> value    ld.acquire.<scope>.global
--   ld_relaxed(T, crd [, scope]) -> value    ld.relaxed.<scope>.global
--   ld_volatile(T, crd) -> value             ld.volatile.global
--   st_release(T, crd, v [, scope])          st.release.<scope>.global
--   st_relaxed(T, crd, v [, scope])          st.relaxed.<scope>.global
--   st_volatile(T, crd, v)                   st.volatile.global
--   fence_acq_rel(scope)                     fence.acq_rel.<scope>
--   fence_sc(scope)                          fence.sc.<scope>
-- scope: "cta", "gpu" (default: "sys" here: these ops exist for flags between
-- devices) or "sys".  T: a global (or generic) tensor of 32- or 64-bit
-- integers; crd: any coordinate T[crd] takes.  Each is one PTX instruction
-- through the IR's inline asm with a memory clobber, so the compiler neither
-- moves other memory accesses across it nor merges two of them; the
-- .acquire / .release / .relaxed forms need sm_70.
local ffi = require("ffi")
local cf = require("cute.ffi")
local C = cf.C
local tr = require("cute.trace")
local ten = require("cute.tensor")
local na = require("cute.nvgpu_arch")

local T = tr.T
local fail = tr.fail

local M = {}

local MEM = "~{memory}"
local SCOPES = { cta = true, gpu = true, sys = true }

-- the PTX type suffix and register constraint of each element type
local ELEM = {
  [T.I32] = { ptx = "s32", reg = "r" },
  [T.U32] = { ptx = "u32", reg = "r" },
  [T.I64] = { ptx = "s64", reg = "l" },
  [T.U64] = { ptx = "u64", reg = "l" },
}

local function begin(what)
  tr.need_trace(what)
  local s = tr.state()
  local n, a = na.sm_of(s)
  if n and n < 70 then
    fail(("%s needs sm_70 or newer; the kernel is compiled for %s"):format(what, a))
  end
  return s
end

local function scope_of(scope, what)
  scope = scope or "sys"
  if not SCOPES[scope] then
    fail(("%s: scope must be 'cta', 'gpu' or 'sys', got %s"):format(what, tostring(scope)))
  end
  return scope
end

-- T[crd]'s address (u64) and the element's PTX type; T must be a global or
-- generic tensor of 32/64-bit integers
local function target(Tn, crd, what)
  if not ten.is_tensor(Tn) then
    fail(("%s(tensor, coordinate, ...): the first argument must be a tensor, got %s"):format(what,
      tr.is_value(Tn) and "a traced value" or (type(Tn) .. " " .. tostring(Tn))))
  end
  na.need_space(Tn.space, { "global", "generic" }, what, "the tensor")
  local e = ELEM[Tn.elem]
  if not e then
    fail(("%s: the tensor's elements must be 32- or 64-bit integers (cute.int32, cute.uint32, cute.int64, " ..
      "cute.uint64), got %s"):format(what, ffi.string(C.cute_ir_type_name(tr.state().ir, Tn.elem))))
  end
  return na.global_u64(Tn:ptr_at(crd)), e
end

local function value_of(v, elem)
  local x = tr.lift(v, elem)
  if x.t ~= elem then x = tr.cvt(x, elem) end
  return x
end

local function load(sem)
  local name = "cute.arch.ld_" .. sem
  return function(Tn, crd, scope)
    begin(name)
    local q = sem == "volatile" and "volatile" or (sem .. "." .. scope_of(scope, name))
    local p, e = target(Tn, crd, name)
    return na.asm(Tn.elem, ("ld.%s.global.%s $0, [$1];"):format(q, e.ptx), "=" .. e.reg .. ",l," .. MEM, { p })
  end
end
M.ld_acquire, M.ld_relaxed, M.ld_volatile = load("acquire"), load("relaxed"), load("volatile")

local function store(sem)
  local name = "cute.arch.st_" .. sem
  return function(Tn, crd, v, scope)
    begin(name)
    local q = sem == "volatile" and "volatile" or (sem .. "." .. scope_of(scope, name))
    local p, e = target(Tn, crd, name)
    if v == nil then fail(name .. "(tensor, coordinate, value [, scope]): the value is missing") end
    local x = value_of(v, Tn.elem)
    na.asm(0, ("st.%s.global.%s [$0], $1;"):format(q, e.ptx), "l," .. e.reg .. "," .. MEM, { p, x })
  end
end
M.st_release, M.st_relaxed, M.st_volatile = store("release"), store("relaxed"), store("volatile")

local function fence(sem)
  local name = "cute.arch.fence_" .. sem
  return function(scope)
    begin(name)
    na.asm(0, ("fence.%s.%s;"):format(sem, scope_of(scope, name)), MEM, {})
  end
end
M.fence_acq_rel, M.fence_sc = fence("acq_rel"), fence("sc")

local EXPORTS = { "ld_acquire", "ld_relaxed", "ld_volatile", "st_release", "st_relaxed", "st_volatile",
  "fence_acq_rel", "fence_sc" }

function M.install(arch)
  for _, k in ipairs(EXPORTS) do arch[k] = M[k] end
end

return M
