#!/bin/sh
# Line info down to the hardware (docs/LINEINFO.md), on the GPU host: an
# out-of-bounds store (spec/data/lineinfo_oob.lua, compile option lineinfo)
# under compute-sanitizer's memcheck, once through the driver's JIT and once
# as a ptxas cubin; the report must name the Lua file and the store's line.
#   sh tools/lineinfo_oob.sh          (from the repository root or the bundle, dist/)
# Exit status 0: both reports name the line (a mode without ptxas is skipped);
# 1: a report does not; 2: no compute-sanitizer.  Logs in $OUT (or /tmp).
cd "$(dirname "$0")/.." || exit 1
BIN=./bin/cuteluajit
[ -x "$BIN" ] || BIN=./build/cuteluajit
CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
[ -x "$CS" ] || { echo "lineinfo_oob: no compute-sanitizer (set COMPUTE_SANITIZER)"; exit 2; }
SRC=spec/data/lineinfo_oob.lua
LINE=$(grep -n -e '-- OOB STORE' "$SRC" | head -1 | cut -d: -f1)
ABS="$(cd spec/data && pwd -P)/lineinfo_oob.lua"
O=${OUT:-/tmp}
fail=0
for mode in jit ptxas; do
  "$CS" --tool memcheck "$BIN" "$SRC" "$mode" > "$O/lineinfo_oob_$mode.log" 2>&1
  if grep -q '^SKIP' "$O/lineinfo_oob_$mode.log"; then
    echo "lineinfo_oob $mode: skipped ($(grep '^SKIP' "$O/lineinfo_oob_$mode.log"))"
  elif grep -q 'Invalid __global__ write' "$O/lineinfo_oob_$mode.log" &&
       grep -qF "$ABS:$LINE" "$O/lineinfo_oob_$mode.log"; then
    echo "lineinfo_oob $mode: ok, the report names $ABS:$LINE"
    grep -m1 -F "$ABS:$LINE" "$O/lineinfo_oob_$mode.log"
  else
    echo "lineinfo_oob $mode: FAIL, the report does not name $ABS:$LINE"
    head -40 "$O/lineinfo_oob_$mode.log"
    fail=1
  fi
done
exit $fail
