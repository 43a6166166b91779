#!/bin/sh
# ncu evidence for the Hopper kernels (docs/BENCHMARKS.md, "Hopper"), from the bundle (dist/):
#   sh tools/ncu_sm90.sh
# Profiles one launch of each: the bf16 GEMM (4096^3) with and without the 2x1 cluster, the
# fp8 GEMM without it, the FA3-style attention (B=4 H=16 S=4096 D=128); reports SOL, the
# tensor (gmma) pipe's active cycles, warp stall reasons.  Logs in $OUT (or /tmp).
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
[ -x "$NCU" ] || { echo "ncu_sm90: no ncu"; exit 2; }
"$NCU" --query-metrics --chip gh100 > "$O/ncu_metrics.txt" 2>&1
GMMA=$(grep -oE '^sm__pipe_tensor_op_gmma_cycles_active' "$O/ncu_metrics.txt" | head -1)
M="sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum"
[ -n "$GMMA" ] && M="$M,$GMMA.avg.pct_of_peak_sustained_active"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
prof() { # name, kernel regex, command...
  n=$1; k=$2; shift 2
  timeout 300 "$NCU" --kernel-name "regex:$k" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --metrics "$M" "$@" > "$O/ncu_$n.txt" 2>&1
  echo "== $n (rc=$?)"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|gmma|Registers Per|Achieved Occupancy|Cluster Size" "$O/ncu_$n.txt" | head -12
  grep -E "issue_stalled" "$O/ncu_$n.txt" | awk '{v=$NF; gsub(",","",v); if (v+0 > 0.05) print}' | sort -k3 -n -r | head -8
}
CLUSTER=1 prof gemm_bf16_c1 gemm_sm90 $BIN examples/gemm_sm90.lua 4096 4096 4096
prof gemm_bf16_c2 gemm_sm90 $BIN examples/gemm_sm90.lua 4096 4096 4096
CLUSTER=1 prof gemm_fp8_c1 gemm_fp8 $BIN examples/gemm_fp8_sm90.lua 4096 4096 4096
prof fa3 flash_attention_sm90 $BIN tools/fa3_once.lua 4 16 4096 128 0
