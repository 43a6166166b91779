#!/bin/sh
# Kernels that communicate (docs/PEER_KERNELS.md) on a host with 2 or more GPUs
# with peer access (nvidia-h200-x2), from the bundle directory (dist/):
#   sh tools/gpu_peer.sh          checks, then benchmarks (about 5 minutes)
#   sh tools/gpu_peer.sh check    the specs and the two examples' checks only
#   sh tools/gpu_peer.sh bench    the benchmarks only
# Logs under $OUT (or /tmp): peer_spec.log, allreduce_peer.log, tp_linear.log,
# bench_allreduce.log, nccl_torch.log (float32), bench_allreduce_bf16.log, nccl_torch_bf16.log
# (bfloat16, 4 KiB .. 256 KiB), bench_tp_linear.log; at the end the
# machine-readable lines and one RATIO line per size:
#   RATIO size= dtype= cute_nccl_vs_torch= oneshot_vs_nccl= twoshot_vs_nccl= oneshot_vs_torch=
# (speed ratios: > 1 means the first is faster; cute_nccl_vs_torch = torch_us / cute_nccl_us).
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
what=${1:-all}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | tee "$O/gpus.txt"
nvidia-smi topo -m > "$O/topo.txt" 2>&1 && head -4 "$O/topo.txt"
run() { # run NAME TIMEOUT command...: the log under $O/NAME.log, its rc and last lines
  name=$1; t=$2; shift 2
  timeout "$t" "$@" > "$O/$name.log" 2>&1
  echo "== $name rc=$?"
  tail -4 "$O/$name.log"
}
if [ "$what" != bench ]; then
  run peer_spec 150 ./bin/busted -o plainTerminal spec/peer_kernels_spec.lua spec/peer_kernels_gpu_spec.lua
  grep -A12 -E '^(Failure|Error) ->' "$O/peer_spec.log" | head -40
  run allreduce_peer 150 $BIN examples/allreduce_peer.lua
  grep -c ' OK$' "$O/allreduce_peer.log"; grep 'FAILED' "$O/allreduce_peer.log"
  run tp_linear 120 $BIN examples/tp_linear.lua
fi
if [ "$what" != check ]; then
  run bench_allreduce 150 $BIN bench/allreduce.lua
  run nccl_torch 150 python3 bench/nccl_torch.py
  SMALL="4096 16384 65536 262144"
  run bench_allreduce_bf16 90 env DTYPE=bfloat16 $BIN bench/allreduce.lua $SMALL
  run nccl_torch_bf16 90 env DTYPE=bfloat16 python3 bench/nccl_torch.py $SMALL
  run bench_tp_linear 200 $BIN bench/tp_linear.lua
  echo "== summary"
  LOGS="$O/bench_allreduce.log $O/nccl_torch.log $O/bench_allreduce_bf16.log $O/nccl_torch_bf16.log"
  grep -h -E '^(ALLREDUCE|ALLREDUCE_TORCH|PEER_COPY|TP_LINEAR) ' $LOGS "$O/bench_tp_linear.log"
  # one RATIO line per size measured by both
  # (the lines of each dtype, joined by size and dtype)
  grep -h -E '^(ALLREDUCE|ALLREDUCE_TORCH) ' $LOGS | awk '
    { split("", f); for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } s = f["size"] " " f["dtype"] }
    $1 == "ALLREDUCE" { nccl[s] = f["cute_nccl_us"]; one[s] = f["oneshot_us"]; two[s] = f["twoshot_us"]; order[++n] = s }
    $1 == "ALLREDUCE_TORCH" { torch[s] = f["torch_us"] }
    END { for (i = 1; i <= n; i++) { s = order[i]; if (torch[s] == "") continue
      split(s, sd, " ")
      printf "RATIO size=%d dtype=%s cute_nccl_vs_torch=%.3f oneshot_vs_nccl=%.3f twoshot_vs_nccl=%.3f oneshot_vs_torch=%.3f\n",
        sd[1], sd[2], torch[s] / nccl[s], nccl[s] / one[s], nccl[s] / two[s], torch[s] / one[s] } }'
fi
