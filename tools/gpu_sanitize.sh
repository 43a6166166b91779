#!/bin/sh
# compute-sanitizer on every example (docs/FAULTS.md "Sanitizers"), on the GPU
# host from the bundle directory (dist/):
#   sh tools/gpu_sanitize.sh                   memcheck racecheck synccheck initcheck, every example
#   TOOLS="memcheck" EXAMPLES="vector_add saxpy" sh tools/gpu_sanitize.sh
# Each example runs with small sizes (its own arguments, below) and
# CUTE_LINEINFO=1, so that a report names the Lua file and line.  Logs under
# $OUT (or /tmp) as sanitize_<example>_<tool>.log; the table of results is
# $OUT/sanitize.txt and is printed at the end, one line per run:
#   example tool rc errors seconds   (errors: the sanitizer's ERROR SUMMARY count)
# Libraries (common, mma_gemm_lib, gemm_multistage), the layout tour (no kernel) and
# the examples that need two GPUs (allreduce_peer, tp_linear: listed as skipped
# on one GPU) are not sanitized.  A missing compute-sanitizer is one line of the table.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
TOOLS=${TOOLS:-memcheck racecheck synccheck initcheck}
# example and its small arguments
SIZES="vector_add:65536 saxpy:65536 reduce_sum:65536 transpose:256,256 softmax:64,1024
sgemm_naive:128,128,128 sgemm_tiled:256,256,256 gemm_bf16:256,256,256 gemm_bf16_arch:256,256,256
gemm_fp8:128,128,128 gemm_int8:128,128,128 gemm_tf32:128,128,64 gemm_int8_multistage:256,256,256
gemm_tf32_multistage:256,256,256 gemm_sm90:256,256,256 gemm_fp8_sm90:256,256,256
flash_attention_fwd:1,2,128,64 flash_attention_sm90:1,2,128,128 allreduce_peer: tp_linear:256,512,1024,2"
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)}
T="$O/sanitize.txt"
printf '%-24s %-10s %4s %7s %8s\n' example tool rc errors seconds > "$T"
if [ -z "$SAN" ] || [ ! -x "$SAN" ]; then
  echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin, COMPUTE_SANITIZER): nothing sanitized" | tee -a "$T"
  exit 0
fi
"$SAN" --version | head -3
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
for pair in $SIZES; do
  e=${pair%%:*}
  args=$(echo "${pair#*:}" | tr ',' ' ')
  [ -n "$EXAMPLES" ] && ! echo " $EXAMPLES " | grep -q " $e " && continue
  [ -f "examples/$e.lua" ] || continue
  case $e in allreduce_peer|tp_linear)
    if [ "$ngpu" -lt 2 ]; then printf '%-24s %-10s %4s %7s %8s\n' "$e" all - skipped "(1 GPU)" >> "$T"; continue; fi;;
  esac
  for t in $TOOLS; do
    log="$O/sanitize_${e}_$t.log"
    t0=$(date +%s)
    # (racecheck and synccheck: shared memory and barriers; initcheck: reads of uninitialised global memory)
    CUTE_LINEINFO=1 timeout "${SAN_TIMEOUT:-600}" "$SAN" --tool "$t" --error-exitcode 9 --print-limit 20 \
      $BIN "examples/$e.lua" $args > "$log" 2>&1
    rc=$?
    t1=$(date +%s)
    n=$(grep -E 'ERROR SUMMARY: [0-9]+' "$log" | tail -1 | sed -E 's/.*ERROR SUMMARY: ([0-9]+).*/\1/')
    [ -z "$n" ] && n=$(grep -E 'RACECHECK SUMMARY: [0-9]+ hazard' "$log" | tail -1 | sed -E 's/.*SUMMARY: ([0-9]+).*/\1/')
    printf '%-24s %-10s %4s %7s %8s\n' "$e" "$t" "$rc" "${n:-?}" "$((t1 - t0))" >> "$T"
    tail -1 "$T"
  done
done
echo "== table ($T)"
cat "$T"
# the first reports of every run that found something
grep -l -E 'ERROR SUMMARY: [1-9]|SUMMARY: [1-9][0-9]* hazard' "$O"/sanitize_*.log 2>/dev/null | while read -r f; do
  echo "== $f"; grep -m 12 -E '^=========' "$f"
done
