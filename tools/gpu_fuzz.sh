#!/bin/sh
# Run on the GPU host from the bundle directory (dist/) (or from the repository
# after make, with CUTE=build/cuteluajit): the kernel fuzzer's differential run,
# GPU against the CPU target (docs/FUZZ.md).  The same FUZZ_PROGRAMS programs
# (default 400) of seed FUZZ_SEED (default: the date) are traced, compiled and
# launched on the GPU and on the CPU target, in two processes (one process is on
# one target); each run checks its launches against plain Lua, and every
# launch's 16 stores, written by both (FUZZ_RESULTS), must be the same.  Logs go
# to $OUT (or /tmp): gpu_fuzz_{gpu,cpu}.log and .txt.  The last line is
# "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
CUTE=${CUTE:-./bin/cuteluajit}
SEED=${FUZZ_SEED:-$(date +%Y%m%d)}
N=${FUZZ_PROGRAMS:-400}
P=0; F=0
for t in gpu cpu; do
  CUTE_TARGET=$t FUZZ_LAUNCH=1 FUZZ_SEED=$SEED FUZZ_PROGRAMS=$N FUZZ_RESULTS="$O/gpu_fuzz_$t.txt" \
    "$CUTE" tools/fuzz_kernels.lua > "$O/gpu_fuzz_$t.log" 2>&1
  tail -2 "$O/gpu_fuzz_$t.log" | sed "s/^/$t: /"
  want=$([ $t = gpu ] && echo "(GPU)" || echo "(CPU target)")
  if tail -1 "$O/gpu_fuzz_$t.log" | grep -q ' 0 failed$' && grep -qF "launches $want" "$O/gpu_fuzz_$t.log"; then P=$((P + 1)); else F=$((F + 1)); fi
done
if [ -s "$O/gpu_fuzz_gpu.txt" ] && cmp -s "$O/gpu_fuzz_gpu.txt" "$O/gpu_fuzz_cpu.txt"; then
  echo "GPU and CPU target: the same stores for $(wc -l < "$O/gpu_fuzz_gpu.txt") launches (seed $SEED)"; P=$((P + 1))
else
  echo "GPU and CPU target differ (seed $SEED; first differences):"; F=$((F + 1))
  diff "$O/gpu_fuzz_gpu.txt" "$O/gpu_fuzz_cpu.txt" | head -20
fi
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
