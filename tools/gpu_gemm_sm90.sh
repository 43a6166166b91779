#!/bin/sh
# The Hopper GEMMs on an sm_90 GPU host, from the bundle directory (dist/) or the repo:
#   sh tools/gpu_gemm_sm90.sh specs      spec/gemm_sm90_spec.lua (CPU and #gpu parts)
#   sh tools/gpu_gemm_sm90.sh examples   examples/gemm_sm90.lua and gemm_fp8_sm90.lua, self-checked
#   sh tools/gpu_gemm_sm90.sh bench      baselines (cuBLAS, Triton autotuned, torch._scaled_mm) and ours
# Logs under $OUT (or /tmp).
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
[ -x "$BIN" ] || BIN=build/cuteluajit
BUSTED=./bin/busted
[ -x "$BUSTED" ] || BUSTED="$BIN /usr/bin/busted"
case "$1" in
specs)
  timeout 600 $BUSTED -o plainTerminal spec/gemm_sm90_spec.lua > "$O/spec_gemm_sm90.log" 2>&1
  echo "gemm_sm90 rc=$? $(grep -E '^[0-9]+ succ' "$O/spec_gemm_sm90.log")"
  grep -A12 -E '^(Failure|Error) ->' "$O/spec_gemm_sm90.log" | head -40 ;;
examples)
  for e in "gemm_sm90 1000 1030 520" "gemm_sm90 4096 4096 4096" \
           "gemm_fp8_sm90 1000 1030 528" "gemm_fp8_sm90 4096 4096 4096"; do
    echo "== $e"
    set -- $e
    n=$1; shift
    timeout 300 $BIN "examples/$n.lua" "$@" 2>&1 | tail -4
    BN=128 timeout 300 $BIN "examples/$n.lua" "$@" 2>&1 | tail -2
    CLUSTER=1 timeout 300 $BIN "examples/$n.lua" "$@" 2>&1 | tail -2
    SCHEDULE=pingpong timeout 300 $BIN "examples/$n.lua" "$@" 2>&1 | tail -2
    SCHEDULE=pingpong BM=128 BN=128 timeout 300 $BIN "examples/$n.lua" "$@" 2>&1 | tail -2
  done ;;
bench)
  timeout 600 python3 bench/tc_baselines.py 4096 8192 > "$O/tc_baselines.json" 2> "$O/tc_baselines.err"
  cat "$O/tc_baselines.json"
  timeout 600 $BIN bench/gemm_sm90.lua "$O/tc_baselines.json" 4096 8192 2>&1 | tee "$O/gemm_sm90.log" ;;
*)
  echo "usage: sh tools/gpu_gemm_sm90.sh specs|examples|bench" ;;
esac
