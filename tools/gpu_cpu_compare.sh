#!/bin/sh
# On a GPU host: every example with CI's sizes and the same data (CUTE_EXAMPLE_SEED)
# on the GPU and on the CPU target (tools/cpu_examples.lua --target gpu / cpu),
# then their verdicts side by side (docs/CPU_TARGET.md, "CI"):
#   both PASS    each within its dtype's tolerance against the same host
#                reference; an exact check (tolerance 0: integer kernels,
#                copies) must be 0 on both (bit-exact with each other)
#   CPU SKIP     an op the CPU target does not run yet (the engine's sentence)
#   anything else (a FAIL on either side) is a failure.
#   sh tools/gpu_cpu_compare.sh [NAME...]      (B=build dir, default build)
# Ends with "N passed, N failed, N skipped"; exit 1 on a failure.
B=${B:-build}
seed=${CUTE_EXAMPLE_SEED:-20261128}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/gpu" "$d/cpu"
echo "== on the GPU"
CUTE_EXAMPLE_SEED=$seed $B/cuteluajit tools/cpu_examples.lua --target gpu --out "$d/gpu" "$@"
echo "== on the CPU target"
CUTE_EXAMPLE_SEED=$seed $B/cuteluajit tools/cpu_examples.lua --target cpu --out "$d/cpu" "$@"
echo "== GPU vs CPU target (seed $seed)"
P=0; F=0; S=0
# "rel. error E (tolerance T)" of a verdict file: E T
err_of() { sed -nE 's/.*rel\. error ([^ ]+) \(tolerance ([^)]+)\).*/\1 \2/p' "$1" | head -1; }
for v in "$d"/cpu/*.verdict; do
  name=$(basename "$v" .verdict)
  g=$d/gpu/$name.verdict
  ck=$(cut -d' ' -f1 "$v"); gk=$(cut -d' ' -f1 "$g" 2>/dev/null)
  if [ "$gk" != PASS ] && [ "$gk" != SKIP ]; then
    echo "FAIL $name: on the GPU: $(cat "$g" 2>/dev/null || echo 'no verdict')"; F=$((F + 1)); continue
  fi
  if [ "$ck" = SKIP ] || [ "$gk" = SKIP ]; then
    echo "SKIP $name: GPU $(cut -d' ' -f2- "$g"); CPU $(cut -d' ' -f2- "$v")"; S=$((S + 1)); continue
  fi
  if [ "$ck" != PASS ]; then echo "FAIL $name: on the CPU target: $(cat "$v")"; F=$((F + 1)); continue; fi
  set -- $(err_of "$g") $(err_of "$v")
  if [ $# -lt 4 ]; then
    echo "PASS $name: both ran (no error figure: $(cut -d' ' -f2- "$v"))"; P=$((P + 1)); continue
  fi
  # $1 $2: GPU error and tolerance; $3 $4: the CPU target's
  if [ "$2" != "$4" ]; then echo "FAIL $name: tolerances differ ($2 on the GPU, $4 on the CPU)"; F=$((F + 1)); continue; fi
  if awk -v t="$2" 'BEGIN { exit !(t + 0 == 0) }'; then
    if awk -v a="$1" -v b="$3" 'BEGIN { exit !(a + 0 == 0 && b + 0 == 0) }'; then
      echo "PASS $name: bit-exact on both (error 0 against the same host reference)"; P=$((P + 1))
    else
      echo "FAIL $name: exact check: GPU error $1, CPU error $3"; F=$((F + 1))
    fi
  else
    echo "PASS $name: GPU error $1, CPU error $3, tolerance $2"; P=$((P + 1))
  fi
done
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
