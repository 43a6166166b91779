#!/bin/sh
# cute.autotune over several GPUs (docs/AUTOTUNE.md, "Several GPUs"), on a
# host with 2 or more GPUs of one model (nvidia-h200-x2), from the bundle
# directory (dist/):
#   sh tools/gpu_autotune_multi.sh        the specs, the #gpu child script's two
#                                         tables, the 24-config GEMM sweep on one
#                                         GPU and on all of them
#   sh tools/gpu_autotune_multi.sh spec   the specs only
# Logs under $OUT (or /tmp): autotune_devices_spec.log, autotune_gpu_devices.log,
# autotune_devices.log; a summary of the machine-readable lines at the end.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
# a fresh disk cache (the workers load the parent's compiles from it): no
# entry of an earlier run is read, none left behind
CUTE_CACHE_DIR=$(mktemp -d); export CUTE_CACHE_DIR
trap 'rm -rf "$CUTE_CACHE_DIR"' EXIT
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | tee "$O/gpus.txt"
echo "CPUs: $(nproc)"
timeout 300 ./bin/busted -o plainTerminal spec/autotune_devices_spec.lua spec/autotune_spec.lua \
  > "$O/autotune_devices_spec.log" 2>&1
echo "autotune_devices_spec rc=$? $(grep -E '^[0-9]+ succ' "$O/autotune_devices_spec.log")"
grep -A12 -E '^(Failure|Error) ->' "$O/autotune_devices_spec.log" | head -40
[ "$1" = spec ] && exit 0
timeout 300 $BIN spec/data/autotune_gpu_devices.lua > "$O/autotune_gpu_devices.log" 2>&1
echo "autotune_gpu_devices rc=$?"
tail -3 "$O/autotune_gpu_devices.log"
timeout 590 $BIN bench/autotune_devices.lua 8192 2>&1 | tee "$O/autotune_devices.log"
echo "== summary"
grep -h -E '^AUTOTUNE_DEVICES' "$O/autotune_gpu_devices.log" "$O/autotune_devices.log"
