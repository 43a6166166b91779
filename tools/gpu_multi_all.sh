#!/bin/sh
# Issues 13 and 15 on a 2-GPU host (nvidia-h200-x2), from the bundle directory
# (dist/): each part's script with its logs in one directory, packed at the end
# into $OUT/multi_logs.tgz (the device tool returns a few files only).
#   sh tools/gpu_multi_all.sh [parts...]   parts: autotune multidevice nccl
#                                           ranks peer (default: all of them)
cd "$(dirname "$0")/.." || exit 1
REAL_OUT=${OUT:-/tmp}
L=$(mktemp -d)
parts=${*:-"autotune multidevice nccl ranks peer"}
for p in $parts; do
  echo "=== $p $(date -u +%H:%M:%S)"
  mkdir -p "$L/$p"
  case $p in
    autotune) OUT=$L/$p timeout 240 sh tools/gpu_autotune_multi.sh 2>&1 | tail -8 ;;
    multidevice) OUT=$L/$p timeout 300 sh tools/gpu_multidevice.sh 2>&1 | tail -40 ;;
    nccl) OUT=$L/$p timeout 420 sh tools/gpu_nccl.sh spec 2>&1 | tail -40 ;;
    ranks) OUT=$L/$p timeout 300 sh tools/gpu_nccl.sh ranks 2>&1 | tail -20 ;;
    peer) OUT=$L/$p timeout 480 sh tools/gpu_peer.sh 2>&1 | tail -60 ;;
    *) echo "unknown part $p" ;;
  esac
done
# the autotune workers' logs of a failed sweep (kept in the temporary directory they name)
for f in /tmp/tmp.*/log*.txt; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done > "$L/worker_logs.txt" 2>&1
tar czf "$REAL_OUT/multi_logs.tgz" -C "$L" . && rm -rf "$L"
