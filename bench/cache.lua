-- bench/cache.lua: a cold process's first call with the disk cache missing
-- (trace + compile + store + load) and hitting (trace + key + read + load), for
-- vector add and the bf16 GEMM (examples/gemm_bf16_arch.lua make_gemm{}).
--   cuteluajit bench/cache.lua [ptx|cubin] [runs]
-- Each measurement is a new process (cuteluajit bench/cache.lua --child ...)
-- over a fresh CUTE_CACHE_DIR: the first run misses and stores, the next ones
-- hit.  With a GPU the child times its first launch (until the kernel is
-- loaded and has run); without one, the compile path alone (k:compile with
-- keep = {"ptx"}: trace, key, read or compile).  docs/CACHE.md quotes the results.
local cute = require("cute")
local exdir = (arg[0]:match("(.*/)") or "./") .. "../examples/"

if arg[1] == "--child" then
  local which, mode = arg[2], arg[3]
  local ex = dofile(exdir .. "common.lua")
  local gpu = cute.available()
  local use_ptxas = mode == "cubin"
  local t_start = cute.now_us()
  local k, cfg, args, specs
  if which == "vadd" then
    k = ex.load_kernel("vector_add"):with({ use_ptxas = use_ptxas })
    local n = 2 ^ 20
    if gpu then
      local A, B, C = cute.zeros({ n }, cute.float32), cute.zeros({ n }, cute.float32), cute.zeros({ n }, cute.float32)
      cute.synchronize()
      cfg, args = { grid = 1024, block = 256 }, { A, B, C }
    else
      local s = cute.tensor_spec({ n }, cute.float32)
      specs = { s, s, s }
    end
  else
    local g = ex.load("gemm_bf16_arch").make_gemm{}
    k = g.kernel:with({ use_ptxas = use_ptxas })
    local M, N, K = 1024, 1024, 1024
    if gpu then
      local A, B, C = cute.zeros({ M, K }, cute.bfloat16), cute.zeros({ N, K }, cute.bfloat16),
        cute.zeros({ M, N }, cute.bfloat16)
      cute.synchronize()
      cfg = { grid = { N / g.cfg.bn, M / g.cfg.bm }, block = g.cfg.threads }
      args = { cute.dynamic(A, { index_bits = 32 }), cute.dynamic(B, { index_bits = 32 }),
        cute.dynamic(C, { index_bits = 32 }), cute.Float32(1), cute.Float32(0) }
    else
      local function sp(r, c) return cute.dynamic(cute.tensor_spec({ r, c }, cute.bfloat16), { index_bits = 32 }) end
      specs = { sp(M, K), sp(N, K), sp(M, N), cute.Float32(1), cute.Float32(0) }
    end
  end
  local t0 = cute.now_us()
  local status, b
  if gpu then
    k:launch(cfg)(unpack(args))
    cute.synchronize()
    b = k.last_build
    -- the loaded entry's compile result says what the disk cache did
    local ffi = require("ffi")
    status = ffi.string(require("cute.ffi").C.cute_compiled_cache_status(k:entry(unpack(args)).cc))
  else
    local kk = k:with({ keep = { "ptx" }, use_ptxas = use_ptxas })
    local r = kk:compile(unpack(specs))
    status = r.cache.status
    -- (the compile's own stages; on a hit: the key and the read)
    b = { compile_us = r.times.total, load_us = 0, trace_us = cute.now_us() - t0 - r.times.total }
  end
  local t1 = cute.now_us()
  print(("RESULT first_ms=%.3f status=%s setup_ms=%.3f trace_ms=%.3f compile_ms=%.3f load_ms=%.3f"):format(
    (t1 - t0) / 1e3, status, (t0 - t_start) / 1e3, b and b.trace_us / 1e3 or -1, b and b.compile_us / 1e3 or -1,
    b and b.load_us / 1e3 or -1))
  return
end

local mode = arg[1] or "ptx"
local runs = tonumber(arg[2]) or 5
local timing = dofile((arg[0]:match("(.*/)") or "./") .. "timing.lua")
print(("disk cache, first call of a cold process (%s, %s, best of %d hits)"):format(
  cute.available() and "GPU launch" or "no GPU: compile path only", mode, runs))
for _, which in ipairs({ "vadd", "gemm_bf16" }) do
  local dir = os.tmpname()
  os.remove(dir)
  local function child() return timing.child("CUTE_CACHE_DIR=" .. dir, which .. " " .. mode, "first_ms") end
  local miss = child()
  local best
  for _ = 1, runs do
    local h = child()
    if not best or h.first_ms < best.first_ms then best = h end
  end
  os.execute("rm -rf " .. dir)
  local function line(label, r)
    local parts = r.trace_ms >= 0 and ("  (trace %.2f, compile or lookup %.2f, load %.2f)"):format(r.trace_ms,
      r.compile_ms, r.load_ms) or ""
    print(("  %-10s %-12s %8.2f ms%s"):format(which, label .. ":", r.first_ms, parts))
  end
  line("miss " .. tostring(miss.status), miss)
  line("hit " .. tostring(best.status), best)
  print(("cache_%s_miss_ms=%.3f cache_%s_hit_ms=%.3f"):format(which, miss.first_ms, which, best.first_ms))
end
