#!/bin/sh
# cute.autotune on the GPU host (issue 13), from the bundle directory (dist/):
#   sh tools/gpu_autotune.sh           the #gpu autotune spec, the C pool test's
#                                      figures, our 24-config GEMM sweep and
#                                      Triton's 8-config @autotune, same run
#   sh tools/gpu_autotune.sh spec      the spec only
# Logs under $OUT (or /tmp): autotune_spec.log, autotune_sweep.log (+ .csv),
# triton_autotune.log; a summary of the machine-readable lines at the end.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
# a fresh disk cache: no entry of an earlier run is read, none left behind
CUTE_CACHE_DIR=$(mktemp -d); export CUTE_CACHE_DIR
trap 'rm -rf "$CUTE_CACHE_DIR"' EXIT
timeout 300 ./bin/busted -o plainTerminal spec/autotune_spec.lua > "$O/autotune_spec.log" 2>&1
echo "autotune_spec rc=$? $(grep -E '^[0-9]+ succ' "$O/autotune_spec.log")"
grep -A12 -E '^(Failure|Error) ->' "$O/autotune_spec.log" | head -40
[ "$1" = spec ] && exit 0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee "$O/gpu.txt"
echo "CPUs: $(nproc)"
# ours: compile stage with 1 worker and all cores (disk cache off), then the whole sweep
OUT="$O" CUTE_CACHE=0 timeout 590 $BIN bench/autotune_sweep.lua 8192 2>&1 | tee "$O/autotune_sweep.log"
# Triton's first call over its 8 configs (empty cache), same host, same run
timeout 590 python3 bench/triton_autotune.py 8192 2>&1 | tee "$O/triton_autotune.log"
echo "== summary"
grep -h -E '^(AUTOTUNE|TRITON_AUTOTUNE) ' "$O/autotune_sweep.log" "$O/triton_autotune.log"
