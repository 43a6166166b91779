#!/bin/sh
# Runs C test programs built with ThreadSanitizer (make test-tsan): each one's
# own "N passed, N failed" summary counts, and each ThreadSanitizer warning in
# its output is one failure (the first reports are shown).  Ends with
# "N passed, N failed, N skipped".  (docs/SOAK.md, "Threads")
P=0; F=0; S=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
  echo "== $t (ThreadSanitizer)"
  TSAN_OPTIONS="halt_on_error=0 suppressions=$(dirname "$0")/tsan.supp ${TSAN_OPTIONS:-}" "$t" > "$log" 2>&1
  grep -v '^cute.kernel .*source front end is off' "$log" | grep -E '^(threads|FAIL|skip)' | head -20
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -z "$line" ]; then echo "no summary: counted as 1 failure"; tail -20 "$log"; F=$((F + 1)); continue; fi
  set -- $(echo "$line" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*/\1 \2 \4/')
  P=$((P + $1)); F=$((F + $2)); S=$((S + ${3:-0}))
  races=$(grep -c 'WARNING: ThreadSanitizer' "$log")
  echo "$line; ThreadSanitizer warnings: $races"
  if [ "$races" -gt 0 ]; then
    F=$((F + races))
    grep -A24 'WARNING: ThreadSanitizer' "$log" | head -80
  else
    P=$((P + 1))
  fi
done
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
