#!/bin/sh
# Tensor-core work on the GPU host, from the bundle directory (dist/):
#   sh tools/gpu_tc.sh specs    the tensor-core GPU specs, one file at a time
#   sh tools/gpu_tc.sh examples the tensor-core examples (checked against CPU references)
#   sh tools/gpu_tc.sh bench    baselines (PyTorch, Triton) and our figures, same run
# Logs under $OUT (or /tmp).
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
case "$1" in
specs)
  for f in mma_atom_gpu tensorcore_gpu gemm_tiled_mma_gpu gemm_atoms_gpu ldmatrix_copy_gpu copy_atom copy_partition \
           swizzle tensor_ssa fp8 fragment_gpu flash_attention gemm_examples ldmatrix_wide recast_tensor dynamic_partition; do
    timeout 240 ./bin/busted -o plainTerminal "spec/${f}_spec.lua" > "$O/spec_$f.log" 2>&1
    echo "$f rc=$? $(grep -E '^[0-9]+ succ' "$O/spec_$f.log")"
    grep -A10 -E '^(Failure|Error) ->' "$O/spec_$f.log" | head -30
  done ;;
examples)
  for e in "gemm_bf16_arch 1000 777 264" "gemm_bf16_arch 4096 4096 4096" "gemm_bf16 1000 777 264" \
           "gemm_bf16 4096 4096 4096" "gemm_tf32 300 200 136" "gemm_int8 300 200 136" "gemm_fp8 300 200 136" \
           "gemm_tf32_multistage 1000 777 264" "gemm_tf32_multistage 4096 4096 4096" \
           "gemm_int8_multistage 1000 777 272" "gemm_int8_multistage 4096 4096 4096" \
           "flash_attention_fwd 1 2 200 64 0" "flash_attention_fwd 1 2 333 128 1" "flash_attention_fwd 2 4 1024 128 1"; do
    echo "== $e"
    set -- $e
    n=$1; shift
    timeout 240 $BIN "examples/$n.lua" "$@" 2>&1 | tail -4
  done ;;
bench)
  timeout 300 python3 bench/tc_baselines.py 4096 8192 > "$O/tc_baselines.json" 2> "$O/tc_baselines.err"
  cat "$O/tc_baselines.json"
  timeout 300 $BIN bench/gemm_tc.lua "$O/tc_baselines.json" 4096 8192 2>&1 | tee "$O/gemm_tc.log"
  for i in 1 2 3; do
    for m in ptxas jit; do CUDA_CACHE_DISABLE=1 timeout 60 $BIN bench/gemm_compile.lua $m; done
  done 2>&1 | tee "$O/gemm_compile.log" ;;
flash)
  timeout 500 $BIN bench/flash_attention.lua 2>&1 | tee "$O/flash.log" ;;
esac
