-- An out-of-bounds store, for compute-sanitizer (tools/lineinfo_oob.sh and the
-- #gpu test of spec/lineinfo_spec.lua): with lineinfo its report names this
-- file and the line of the store.
--   cuteluajit spec/data/lineinfo_oob.lua jit|ptxas
-- jit: PTX to the driver's JIT (CU_JIT_GENERATE_LINE_INFO); ptxas: a cubin
-- assembled with ptxas -lineinfo (prints "SKIP" when there is no ptxas).
local cute = require("cute")
local mode = arg[1] or "jit"
if mode == "ptxas" and require("cute.ffi").C.cute_ptxas_path() == nil then
  print("SKIP: no ptxas")
  return
end

local function poke(A, i, v)
  A[i] = v -- OOB STORE
end

local oob = cute.kernel(function(A, shift)
  local t = cute.arch.thread_idx()
  poke(A, t + shift, 1.0)
end, { lineinfo = true, use_ptxas = mode == "ptxas", cache = false })

-- spec/lineinfo_spec.lua compiles the kernel without launching it
if CUTE_LINEINFO_OOB_LIB then return oob end

local A = cute.zeros({ 256 }, cute.float32)
-- 2^26 floats (256 MiB) past a 1 KiB allocation: outside every allocation
local ok, e = pcall(function()
  oob:launch{ grid = 1, block = 32 }(A, cute.Int32(2 ^ 26))
  cute.synchronize()
end)
print(ok and "launched" or ("launch failed (expected without the sanitizer): " .. tostring(e)))
