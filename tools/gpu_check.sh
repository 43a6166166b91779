#!/bin/sh
# Run on the GPU host from the bundle directory (dist/): specs and examples.
# Logs go to $OUT (or /tmp) as gpu_specs.log and examples.log.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | head -2
./bin/busted -o plainTerminal --defer-print ${SPECS:-spec} > "$O/gpu_specs.log" 2>&1
grep -E '^[0-9]+ success' "$O/gpu_specs.log"
grep -A12 -E '^(Failure|Error) ->' "$O/gpu_specs.log" | head -${FAILLINES:-60}
for e in ${EXAMPLES:-vector_add saxpy reduce_sum transpose softmax sgemm_naive sgemm_tiled}; do
  [ -f examples/$e.lua ] || continue
  echo "== $e"
  timeout 300 ./bin/cuteluajit examples/$e.lua 2>&1 | tail -${TAIL:-6}
done 2>&1 | tee "$O/examples.log"
