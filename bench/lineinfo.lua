-- bench/lineinfo.lua: what the compile option lineinfo costs (CPU only):
-- trace + compile of vector add, the bf16 GEMM (examples/gemm_bf16_arch.lua)
-- and the attention kernel (examples/flash_attention_fwd.lua), with and without
-- lineinfo, disk cache off, medians over `reps` fresh kernels; per stage, and
-- with ptxas (-lineinfo) when it is installed.  docs/LINEINFO.md quotes it.
--   cuteluajit bench/lineinfo.lua [reps]
local cute = require("cute")
local C = require("cute.ffi").C
local exdir = (arg[0]:match("(.*/)") or "./") .. "../examples/"
local ex = dofile(exdir .. "common.lua")
local reps = tonumber(arg[1]) or 15
local PTXAS = C.cute_ptxas_path() ~= nil

local function lib(file)
  local saved = arg
  arg, CUTE_EXAMPLE_LIB = { [0] = exdir .. file }, true
  local m = dofile(arg[0])
  arg, CUTE_EXAMPLE_LIB = saved, nil
  return m
end

local cases = {}
do
  local s = cute.tensor_spec({ 2 ^ 20 }, cute.float32)
  cases[#cases + 1] = { "vector add", ex.load_kernel("vector_add"), { s, s, s } }
  local g = lib("gemm_bf16_arch.lua").make_gemm{}
  local function sp(r, c) return cute.dynamic(cute.tensor_spec({ r, c }, cute.bfloat16), { index_bits = 32 }) end
  cases[#cases + 1] = { "bf16 GEMM (sm_80 path)", g.kernel,
    { sp(1024, 1024), sp(1024, 1024), sp(1024, 1024), cute.Float32(1), cute.Float32(0) } }
  local fa = lib("flash_attention_fwd.lua")
  cases[#cases + 1] = { "attention forward d128", fa.make_kernel({ d = 128 }), { fa.specs(4, 1024, 128) } }
end

local function median(t)
  table.sort(t)
  return t[math.floor(#t / 2) + 1]
end

-- one compile of a fresh kernel: its total time, its stage times, its PTX size
local function once(k, specs, opts)
  local kk = k:with(opts)
  local t0 = cute.now_us()
  local r = kk:compile(unpack(specs))
  return cute.now_us() - t0, r.times, #r.ptx
end

-- the two settings alternate, so that load on the machine hits both alike
for _, c in ipairs(cases) do
  for _, use_ptxas in ipairs(PTXAS and { false, true } or { false }) do
    local row = {}
    for i = 1, 2 do row[i] = { tot = {}, st = {}, ptx = 0 } end
    for _ = 1, reps do
      for i, li in ipairs({ false, true }) do
        local opts = { lineinfo = li, use_ptxas = use_ptxas, cache = false, keep = { "ptx" }, arch = "sm_90a" }
        local t, times, n = once(c[2], c[3], opts)
        local r = row[i]
        r.tot[#r.tot + 1], r.ptx = t, n
        for name, us in pairs(times) do
          r.st[name] = r.st[name] or {}
          r.st[name][#r.st[name] + 1] = us
        end
      end
    end
    local function med(i, name) return median(name and (row[i].st[name] or { 0 }) or row[i].tot) / 1e3 end
    print(("%-24s %-6s total %7.2f -> %7.2f ms (%+5.1f%%)  lower %.2f->%.2f  opt %.2f->%.2f  emit %.2f->%.2f  ptxas %.2f->%.2f  PTX %d->%d bytes")
      :format(c[1], use_ptxas and "ptxas" or "PTX", med(1), med(2), (med(2) / med(1) - 1) * 100,
        med(1, "lower"), med(2, "lower"), med(1, "optimise"), med(2, "optimise"), med(1, "emit_ptx"), med(2, "emit_ptx"),
        med(1, "assemble"), med(2, "assemble"), row[1].ptx, row[2].ptx))
  end
end
