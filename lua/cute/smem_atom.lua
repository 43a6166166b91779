-- cute.smem_atom: shared-memory layout atoms, the swizzled tiles that
-- tensor-core kernels build their shared-memory layouts from (CuTe DSL's
-- cute.make_smem_layout_atom / SmemLayoutAtomKind; CuTe C++'s
-- GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>).
--
-- Each atom is defined in bits: 8 rows of R bits (R = 128, 256, 512, 1024 for
-- INTER, SW32, SW64, SW128) under Swizzle<B, 4, 3> on byte offsets, B = 0..3:
-- 16-byte chunks, 2^B of them xor-permuted by the row index.  In elements of a
-- w-bit dtype a row holds R / w elements and a chunk 128 / w, so the atom is
--   K-major   Sw<B, log2(128/w), 3> o 0 o (8, R/w):(R/w, 1)
--   MN-major  Sw<B, log2(128/w), 3> o 0 o (R/w, 8):(1, R/w)
-- e.g. K_SW128 for 16-bit elements = Sw<3,3,3> o 0 o (8,64):(64,1).
-- With tile_to_shape they make multistage layouts:
--   cute.tile_to_shape(atom, {128, 64, 3}, {1, 2, 3})
local cf = require("cute.ffi")
local lay = require("cute.layout")
local tr = require("cute.trace")

local M = {}

-- kind -> { major, row bits, B }
local kinds = {
  MN_INTER = { "MN", 128, 0 }, MN_SW32 = { "MN", 256, 1 }, MN_SW64 = { "MN", 512, 2 },
  MN_SW128 = { "MN", 1024, 3 },
  K_INTER = { "K", 128, 0 }, K_SW32 = { "K", 256, 1 }, K_SW64 = { "K", 512, 2 },
  K_SW128 = { "K", 1024, 3 },
}

-- cute.SmemLayoutAtomKind.X is the string "X" (so it prints as its name)
M.SmemLayoutAtomKind = {}
for k in pairs(kinds) do M.SmemLayoutAtomKind[k] = k end

local order = { "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128", "K_INTER", "K_SW32", "K_SW64", "K_SW128" }

local function dtype_bits(dtype)
  local t = dtype
  if type(dtype) == "table" then t = dtype.name and tr.dtype_ir[dtype.name] or dtype.scalar end
  local info = t and tr.tinfo[t]
  return info and info.bits
end

-- cute.make_smem_layout_atom(kind, dtype) -> ComposedLayout
function M.make_smem_layout_atom(kind, dtype)
  local F = "cute.make_smem_layout_atom"
  local k = kinds[kind]
  if not k then
    cf.fail(("%s: unknown kind %s; expected one of cute.SmemLayoutAtomKind.%s"):format(F, tostring(kind),
      table.concat(order, ", ")))
  end
  local w = dtype_bits(dtype)
  if not w then cf.fail(("%s: %s is not a dtype (e.g. cute.float16)"):format(F, tostring(dtype))) end
  if w > 128 or 128 % w ~= 0 then
    cf.fail(("%s: a %d-bit dtype %s does not divide the 16-byte swizzle chunk"):format(F, w, tostring(dtype)))
  end
  local major, rbits, B = k[1], k[2], k[3]
  local n = rbits / w
  local m = math.floor(math.log(128 / w) / math.log(2) + 0.5)
  local L = major == "K" and lay.make_layout({ 8, n }, { n, 1 }) or lay.make_layout({ n, 8 }, { 1, n })
  return lay.make_composed_layout(lay.make_swizzle(B, m, 3), 0, L)
end

return M
