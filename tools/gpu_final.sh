#!/bin/sh
# One GPU session's closing run (from dist/): FA2 correctness and speed, the tensor-core
# GEMM benchmarks and the disk cache's cold-process figures, most important first.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
timeout 200 ./bin/busted -o plainTerminal --tags=gpu spec/flash_attention_spec.lua > "$O/spec_fa.log" 2>&1
echo "flash_attention spec rc=$? $(grep -E '^[0-9]+ succ' "$O/spec_fa.log")"
grep -A10 -E '^(Failure|Error) ->' "$O/spec_fa.log" | head -30
timeout 150 $BIN bench/flash_attention.lua 2>&1 | tee "$O/flash.log" | grep -v "^\s*$"
FA_WARPS=4 FA_BLOCK_M=64 timeout 100 $BIN bench/flash_attention.lua 2>&1 | tee "$O/flash4.log" | grep -E "ours|torch"
timeout 60 python3 bench/tc_baselines.py 4096 8192 > "$O/tc_baselines.json" 2> "$O/tc_baselines.err"
timeout 200 $BIN bench/gemm_tc.lua "$O/tc_baselines.json" 4096 8192 2>&1 | tee "$O/gemm_tc.log"
for m in cubin ptx; do timeout 60 $BIN bench/cache.lua $m 5; done 2>&1 | tee "$O/cache.log"
