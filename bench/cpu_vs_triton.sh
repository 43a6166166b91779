#!/bin/sh
# The CPU target against Triton's interpreter, both on one core (CPU 0) in the same run (issue 14):
#   sh bench/cpu_vs_triton.sh [python]     from the repository root or the bundle (dist/)
# Prints each side's median and the ratio triton/cute (> 1: the CPU target is faster).
cd "$(dirname "$0")/.." || exit 1
BIN=./bin/cuteluajit; [ -x "$BIN" ] || BIN=./build/cuteluajit
PY=${1:-python3}
cute=$(CUTE_TARGET=cpu taskset -c 0 "$BIN" bench/cpu_target.lua 7) || { echo "$cute"; exit 1; }
echo "$cute"
tri=$(OMP_NUM_THREADS=1 taskset -c 0 "$PY" bench/triton_interp.py 5) || { echo "$tri"; exit 1; }
echo "$tri"
ratio() { # $1 = cute line pattern, $2 = triton name
  c=$(echo "$cute" | grep "$1" | sed -E 's/.*median ([0-9.]+) s.*/\1/')
  t=$(echo "$tri" | grep "$2" | sed -E 's/.*median_s=([0-9.]+).*/\1/')
  awk -v c="$c" -v t="$t" -v n="$2" 'BEGIN { printf "ratio %s: triton interpreter %.3f s / cpu target %.3f s = %.2fx\n", n, t, c, t / c }'
}
ratio "^vector add" vector_add_2^20
ratio "^sgemm_tiled" matmul_256^3
