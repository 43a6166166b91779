#!/bin/sh
# Runs every test suite and ends with one line "N passed, N failed, N skipped".
#   busted specs (spec/) under build/cuteluajit
#   the #gpu specs again on the CPU target (CUTE_TARGET=cpu), every example on
#   the CPU target (tools/cpu_examples.lua): docs/CPU_TARGET.md, "CI"
#   the same specs under the ASan+UBSan build (build/asan/cuteluajit)
#   the C API test (build/test_capi), the embedding example (build/embed),
#   the host API test (build/test_host_c), install into a temporary prefix,
#   a bundle in a temporary directory (tools/bundle_test.sh)
#   a short fuzz run, the size budget (tools/size_budget.sh)
# TEST_ONLY=asan runs only the sanitizer suite.
B=build
P=0; F=0; S=0
log=$(mktemp)
# the disk cache of compiled kernels (docs/CACHE.md): a fresh directory per run,
# so that no entry of another build or run is read and none is left in ~/.cache
cache_dir=$(mktemp -d); export CUTE_CACHE_DIR="$cache_dir"
trap 'rm -f "$log"; rm -rf "$cache_dir"' EXIT

count_busted() { # $1 = label, rest = command
  label=$1; shift
  echo "== $label: $*"
  "$@" > "$log" 2>&1; rc=$?
  cat "$log"
  line=$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "== $label: no busted summary (exit $rc): counted as 1 failure"; F=$((F + 1)); return
  fi
  set -- $(echo "$line" | sed -E 's/^([0-9]+)[^/]*\/ ([0-9]+)[^/]*\/ ([0-9]+)[^/]*\/ ([0-9]+).*/\1 \2 \3 \4/')
  P=$((P + $1)); F=$((F + $2 + $3)); S=$((S + $4))
  [ "$rc" -ne 0 ] && [ $(($2 + $3)) -eq 0 ] && { echo "== $label: exit $rc"; F=$((F + 1)); }
}

count_plain() { # programs printing their own "N passed, N failed" last line
  label=$1; shift
  echo "== $label: $*"
  "$@" > "$log" 2>&1; rc=$?
  cat "$log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "== $label: no summary (exit $rc): counted as 1 failure"; F=$((F + 1)); return
  fi
  set -- $(echo "$line" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*/\1 \2 \4/')
  P=$((P + $1)); F=$((F + $2)); S=$((S + ${3:-0}))
  [ "$rc" -ne 0 ] && [ "$2" -eq 0 ] && { echo "== $label: exit $rc"; F=$((F + 1)); }
}

BUSTED="/usr/bin/busted -o plainTerminal --defer-print"
# the specs test the no-GPU errors and swap in stub drivers: no automatic CPU target
# (spec/cpu_target_spec.lua installs it itself; docs/CPU_TARGET.md)
export CUTE_TARGET=gpu
if [ "${TEST_ONLY:-}" != asan ]; then
  count_busted "specs" $B/cuteluajit $BUSTED spec
  # the #gpu specs on the CPU target: the tests that need a real GPU and the
  # ops the engine does not run yet are pending with their reason
  count_busted "#gpu specs on the CPU target" env CUTE_TARGET=cpu $B/cuteluajit $BUSTED --tags=gpu spec
  count_plain "examples on the CPU target" $B/cuteluajit tools/cpu_examples.lua
  ORACLE=${CUTE_ORACLE:-spec/data/layout_public.jsonl}
  count_plain "C layout oracle (ASan)" $B/test_oracle_c "$ORACLE"
  count_plain "C layout errors (ASan)" $B/test_layout_errors_c
  count_plain "C CUDA driver layer (ASan)" $B/test_cuda_c
  count_plain "C IR and codegen" $B/test_ir_c
  count_plain "C compile pool" $B/test_compile_pool_c
  if [ -f "${NCCL_INC:-/usr/local/cuda/include}/nccl.h" ] && [ -x $B/test_nccl_abi ]; then
    count_plain "C NCCL declarations against nccl.h" $B/test_nccl_abi
  else
    echo "== C NCCL declarations against nccl.h: skipped (no nccl.h in ${NCCL_INC:-/usr/local/cuda/include})"; S=$((S + 1))
  fi
  count_plain "embed example" $B/embed
  count_plain "C host API, DLPack, one lua_State per thread" $B/test_host_c
  count_plain "make install / pkg-config / uninstall" sh tools/install_test.sh
  count_plain "bundle: size budget, ldd closure, moved copy" sh tools/bundle_test.sh
  count_plain "size budget (1,000 lines a file)" sh tools/size_budget.sh
fi
# Sanitizers: our C code instrumented (LuaJIT itself is not).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  count_busted "specs under ASan+UBSan" $B/asan/cuteluajit $BUSTED --exclude-tags=slow,gpu spec
FUZZ_SECONDS=${FUZZ_SECONDS:-20} count_plain "IR fuzzer (ASan)" $B/asan/cuteluajit tools/fuzz_ir.lua
FUZZ_SECONDS=10 FUZZ_SEED=${FUZZ_SEED:-1} count_plain "kernel fuzzer" $B/cuteluajit tools/fuzz_kernels.lua
FUZZ_SECONDS=${FUZZ_SECONDS:-20} count_plain "layout fuzzer (ASan)" $B/asan/cuteluajit tools/fuzz_layout.lua
count_plain "kernel fuzzer, launched on the CPU target (docs/FUZZ.md)" env FUZZ_SECONDS=10 FUZZ_SEED=${FUZZ_SEED:-1} FUZZ_LAUNCH=1 CUTE_TARGET=cpu $B/cuteluajit tools/fuzz_kernels.lua
[ "${TEST_ONLY:-}" != asan ] && count_plain "C threads: lua_States compiling and launching at once" $B/test_threads_c
count_plain "soak: 300 kernels compiled, launched on the CPU target, freed (docs/SOAK.md)" env CUTE_TARGET=cpu $B/cuteluajit bench/soak.lua 300 30
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
