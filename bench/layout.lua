-- bench/layout.lua: cost per call of the layout algebra from Lua.
--   cuteluajit bench/layout.lua [iterations]
-- Targets (issue 2): crd2idx on a rank-3 layout <= 50 ns per call on the
-- JIT-compiled FFI path; composition and logical_divide of typical tiles <= 2 us.
-- Baseline measured in the same run: the same crd2idx written as plain Lua
-- arithmetic on the leaves (what hand-written index math costs).
local cute = require("cute")
local ffi = require("ffi")

ffi.cdef [[ int clock_gettime(int clk, struct timespec_ *ts); ]]
pcall(ffi.cdef, [[ struct timespec_ { long tv_sec; long tv_nsec; }; ]])
local ts = ffi.new("struct timespec_")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local N = tonumber(arg and arg[1]) or 2000000

local function bench(label, n, f)
  f(math.min(n, 1000)) -- warm up / JIT
  local best = math.huge
  for _ = 1, 5 do
    local t0 = now()
    f(n)
    best = math.min(best, now() - t0)
  end
  local ns = best / n * 1e9
  return ns
end

local L = cute.make_layout({ 8, 16, 4 }, { 64, 1, 16 })
local sink = 0

local t_crd = bench("crd2idx L(i,j,k)", N, function(n)
  local s = 0
  for it = 1, n do
    local i, j, k = it % 8, it % 16, it % 4
    s = s + L(i, j, k)
  end
  sink = sink + s
end)

local t_lin = bench("crd2idx L(idx)", N, function(n)
  local s = 0
  for it = 1, n do s = s + L(it % 512) end
  sink = sink + s
end)

local t_lua = bench("plain Lua i*64+j+k*16", N, function(n)
  local s = 0
  for it = 1, n do
    local i, j, k = it % 8, it % 16, it % 4
    s = s + i * 64 + j + k * 16
  end
  sink = sink + s
end)

local M = cute.make_layout({ 128, 64 }, { 64, 1 })
local tile = { cute.make_layout(32), cute.make_layout(16) }
local n2 = math.max(1000, math.floor(N / 20))
local t_comp = bench("composition", n2, function(n)
  for _ = 1, n do sink = sink + (cute.composition(M, tile) and 1 or 0) end
end)
local t_div = bench("logical_divide", n2, function(n)
  for _ = 1, n do sink = sink + (cute.logical_divide(M, tile) and 1 or 0) end
end)
local t_zdiv = bench("zipped_divide", n2, function(n)
  for _ = 1, n do sink = sink + (cute.zipped_divide(M, tile) and 1 or 0) end
end)

print(("layout bench (%s, %d iterations)"):format(jit.version, N))
print(("%-40s %10s %10s"):format("case", "ns/call", "target"))
print(("%-40s %10.1f %10s"):format("crd2idx rank-3 L(i,j,k)", t_crd, "<= 50"))
print(("%-40s %10.1f %10s"):format("crd2idx rank-3 L(idx)", t_lin, "<= 50"))
print(("%-40s %10.1f %10s"):format("baseline: plain Lua index arithmetic", t_lua, ""))
print(("%-40s %10.1f %10s"):format("composition((128,64):(64,1), (32,16))", t_comp, "<= 2000"))
print(("%-40s %10.1f %10s"):format("logical_divide same", t_div, "<= 2000"))
print(("%-40s %10.1f %10s"):format("zipped_divide same", t_zdiv, "<= 2000"))
print(("ratio crd2idx / plain Lua: %.2fx"):format(t_crd / t_lua))
if sink == 0.5 then print(sink) end
