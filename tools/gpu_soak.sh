#!/bin/sh
# Run on the GPU host from the bundle directory (dist/): the soak (bench/soak.lua,
# docs/SOAK.md) on the GPU, SOAK_CYCLES (default 10000) compile + load + launch +
# check + free cycles, host RSS and cuMemGetInfo sampled every SOAK_EVERY (default
# 250) cycles; then the same on the CPU target (SOAK_CPU_CYCLES, default 2000).
# Logs, the samples (CSV) and the figures (SVG) go to $OUT (or /tmp):
# gpu_soak.log, gpu_soak.csv, gpu_soak.svg, cpu_soak.*.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
CUTE=${CUTE:-./bin/cuteluajit}   # (CUTE=build/cuteluajit from a repository after make)
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader 2>&1 | head -2
rc=0
SOAK_CSV="$O/gpu_soak.csv" SOAK_SVG="$O/gpu_soak.svg" CUTE_TARGET=gpu \
  "$CUTE" bench/soak.lua "${SOAK_CYCLES:-10000}" "${SOAK_EVERY:-250}" > "$O/gpu_soak.log" 2>&1 || rc=1
tail -8 "$O/gpu_soak.log"
SOAK_CSV="$O/cpu_soak.csv" SOAK_SVG="$O/cpu_soak.svg" CUTE_TARGET=cpu \
  "$CUTE" bench/soak.lua "${SOAK_CPU_CYCLES:-2000}" 100 > "$O/cpu_soak.log" 2>&1 || rc=1
tail -6 "$O/cpu_soak.log"
exit $rc
