#!/bin/sh
# Issue 14's GPU checks in one call, from the bundle directory (dist/), within DEADLINE seconds
# (default 500): the soak (10,000 cycles), the fault specs and REPL-like session, the GPU-vs-CPU
# kernel fuzzer and compute-sanitizer's four tools on every example, run side by side (one GPU,
# 16 CPUs), then one tarball $OUT/issue14.tar.gz of every log (what finished by the deadline).
cd "$(dirname "$0")/.." || exit 1
D=${DEADLINE:-500}
W=$(mktemp -d)
P=
mkdir -p "$W/soak" "$W/fault" "$W/fuzz" "$W/san1" "$W/san2" "$W/san3" "$W/san4"
(OUT="$W/soak" SOAK_CPU_CYCLES=${SOAK_CPU_CYCLES:-500} sh tools/gpu_soak.sh > "$W/soak/run.log" 2>&1) &
P="$P $!"
(OUT="$W/fault" sh tools/gpu_fault.sh > "$W/fault/run.log" 2>&1) &
P="$P $!"
(OUT="$W/fuzz" FUZZ_PROGRAMS=${FUZZ_PROGRAMS:-300} sh tools/gpu_fuzz.sh > "$W/fuzz/run.log" 2>&1) &
P="$P $!"
(OUT="$W/san1" EXAMPLES="vector_add saxpy reduce_sum transpose softmax" SAN_TIMEOUT=120 sh tools/gpu_sanitize.sh > "$W/san1/run.log" 2>&1) &
P="$P $!"
(OUT="$W/san2" EXAMPLES="sgemm_naive sgemm_tiled gemm_bf16 gemm_bf16_arch" SAN_TIMEOUT=120 sh tools/gpu_sanitize.sh > "$W/san2/run.log" 2>&1) &
P="$P $!"
(OUT="$W/san3" EXAMPLES="gemm_fp8 gemm_int8 gemm_tf32 gemm_int8_multistage gemm_tf32_multistage" SAN_TIMEOUT=120 sh tools/gpu_sanitize.sh > "$W/san3/run.log" 2>&1) &
P="$P $!"
(OUT="$W/san4" EXAMPLES="gemm_sm90 gemm_fp8_sm90 flash_attention_fwd flash_attention_sm90" SAN_TIMEOUT=120 sh tools/gpu_sanitize.sh > "$W/san4/run.log" 2>&1) &
P="$P $!"
running() { n=0; for p in $P; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
t=0
while [ $t -lt "$D" ] && [ "$(running)" -gt 0 ]; do sleep 5; t=$((t + 5)); done
echo "== after ${t}s (deadline ${D}s); still running: $(running)"
for d in soak fault fuzz san1 san2 san3 san4; do echo "=== $d"; tail -25 "$W/$d/run.log"; done
tar -czf "${OUT:-/tmp}/issue14.tar.gz" -C "$W" .
