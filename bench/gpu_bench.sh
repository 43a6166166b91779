#!/bin/sh
# All GPU benchmarks in one run (from dist/ or the repo): PyTorch baselines,
# then ours.  Output under $OUT (or /tmp): baselines.json, bench.log.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=${CUTELUAJIT:-./bin/cuteluajit}
[ -x "$BIN" ] || BIN=build/cuteluajit
python3 bench/baselines.py > "$O/baselines.json" 2> "$O/baselines.err" || cat "$O/baselines.err"
cat "$O/baselines.json"
{
  "$BIN" bench/first_call.lua cubin
  for gap in 0 50; do CUDA_CACHE_DISABLE=1 "$BIN" bench/first_call.lua ptx $gap; done
  "$BIN" bench/first_call.lua ptx
  for m in cubin ptx; do "$BIN" bench/cache.lua $m 5; done
  "$BIN" bench/kernels.lua "$O/baselines.json"
  "$BIN" bench/transpose_modes.lua 8192 100 old
} 2>&1 | tee "$O/bench.log"
