#!/bin/sh
# Faults on the GPU (docs/FAULTS.md), on the GPU host from the bundle directory (dist/):
#   sh tools/gpu_fault.sh
# 1. the fault specs, #gpu ones included (spec/fault_spec.lua): fault_spec.log;
# 2. a REPL-like script (one process, one error after another, each caught as the
#    REPL catches it, then correct work): fault_repl.log; it ends "REPL OK" when
#    every step behaved;
# 3. the same script under compute-sanitizer --tool memcheck when there is one
#    (its report names the faulting Lua line: lineinfo): fault_memcheck.log.
# Logs under $OUT (or /tmp).
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | tee "$O/gpus.txt"
timeout 300 ./bin/busted -o plainTerminal spec/fault_spec.lua > "$O/fault_spec.log" 2>&1
echo "== fault_spec rc=$?"
grep -E '^[0-9]+ success' "$O/fault_spec.log"
grep -A14 -E '^(Failure|Error) ->' "$O/fault_spec.log" | head -80
timeout 300 $BIN tools/fault_repl.lua > "$O/fault_repl.log" 2>&1
echo "== fault_repl rc=$?"
cat "$O/fault_repl.log" | head -120
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)}
if [ -n "$SAN" ] && [ -x "$SAN" ]; then
  CUTE_LINEINFO=1 FAULT_ONLY=oob timeout 300 "$SAN" --tool memcheck --print-limit 4 $BIN tools/fault_repl.lua \
    > "$O/fault_memcheck.log" 2>&1
  echo "== fault_memcheck rc=$?"
  grep -m 20 -E '^=========|fault_repl' "$O/fault_memcheck.log"
else
  echo "== compute-sanitizer not found: no memcheck run"
fi
