#!/bin/sh
# cute.nccl on a host with 2 or more GPUs and NCCL (docs/NCCL.md), from the
# bundle directory (dist/):
#   sh tools/gpu_nccl.sh          the specs, then spec/data/nccl_ranks.lua as
#                                 2 processes three ways: under torchrun, with
#                                 RANK/WORLD_SIZE/LOCAL_RANK set by hand (the id
#                                 through CUTE_NCCL_ID_FILE), and with Open
#                                 MPI's variables and CUTE_NCCL_ID
#   sh tools/gpu_nccl.sh spec     the specs only
#   sh tools/gpu_nccl.sh ranks    the three multi-process runs only
# NCCL is found as cute finds it (CUTE_NCCL_LIB, the library path, python
# site-packages: PyTorch's nvidia/nccl/lib); the logs name the library.
# Logs under $OUT (or /tmp): nccl_abi.log (tests/nccl_abi.c against this host's nccl.h), nccl_spec.log, nccl_torchrun.log,
# nccl_env_ranks.log, nccl_mpi_env.log; a summary at the end.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
BIN=./bin/cuteluajit
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | tee "$O/gpus.txt"
$BIN -e 'local n = require("cute").nccl; print("NCCL " .. n.version() .. " from " .. n.library())' 2>&1 | tee "$O/nccl_library.txt"
# the declarations against this host's nccl.h (PyTorch's wheel or a CUDA toolkit), where a C compiler is
py_inc=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
nh=""; ch=""
for d in $py_inc; do
  [ -z "$nh" ] && [ -f "$d/nvidia/nccl/include/nccl.h" ] && nh="$d/nvidia/nccl/include"
  [ -z "$ch" ] && [ -f "$d/nvidia/cuda_runtime/include/cuda_runtime.h" ] && ch="$d/nvidia/cuda_runtime/include"
done
[ -z "$nh" ] && [ -f /usr/local/cuda/include/nccl.h ] && nh=/usr/local/cuda/include
[ -z "$ch" ] && [ -f /usr/local/cuda/include/cuda_runtime.h ] && ch=/usr/local/cuda/include
if command -v cc > /dev/null 2>&1 && [ -n "$nh" ] && [ -n "$ch" ]; then
  cc -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -I"$nh" -I"$ch" -o "$O/nccl_abi" tests/nccl_abi.c \
    > "$O/nccl_abi.log" 2>&1 && "$O/nccl_abi" >> "$O/nccl_abi.log" 2>&1
  echo "nccl_abi ($nh) rc=$?: $(tail -1 "$O/nccl_abi.log")"
else
  echo "nccl_abi: skipped (cc: $(command -v cc || echo none), nccl.h: ${nh:-none}, cuda_runtime.h: ${ch:-none})"
fi
if [ "$1" != ranks ]; then
  timeout 400 ./bin/busted -o plainTerminal spec/nccl_spec.lua spec/nccl_gpu_spec.lua > "$O/nccl_spec.log" 2>&1
  echo "nccl specs rc=$? $(grep -E '^[0-9]+ succ' "$O/nccl_spec.log")"
  grep -A12 -E '^(Failure|Error) ->' "$O/nccl_spec.log" | head -60
fi
[ "$1" = spec ] && exit 0

# 1. torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, TORCHELASTIC_RUN_ID)
if command -v torchrun > /dev/null 2>&1; then
  timeout 150 torchrun --standalone --nproc-per-node 2 --no-python $BIN spec/data/nccl_ranks.lua \
    > "$O/nccl_torchrun.log" 2>&1
  echo "torchrun rc=$?"
else
  echo "NCCL_RANKS FAIL rank=-: torchrun not found" > "$O/nccl_torchrun.log"
fi

# 2. by hand: the id file of rank 0 read by rank 1
idf=$(mktemp -u "${TMPDIR:-/tmp}/cute-nccl-test.XXXXXX")
: > "$O/nccl_env_ranks.log"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r CUTE_NCCL_ID_FILE=$idf timeout 150 $BIN spec/data/nccl_ranks.lua \
    >> "$O/nccl_env_ranks.log" 2>&1 &
done
wait
[ -e "$idf" ] && echo "NCCL_RANKS FAIL rank=0: the id file $idf was not removed" >> "$O/nccl_env_ranks.log"

# 3. Open MPI's variables, the id in CUTE_NCCL_ID, made by a third process
# that stays alive until both ranks are done (NCCL's bootstrap root runs in the
# process that made the id: docs/NCCL.md)
idd=$(mktemp -d)
IDD=$idd $BIN -e 'local d = os.getenv("IDD"); local f = io.open(d .. "/id.tmp", "w")
  f:write(require("cute").nccl.unique_id():hex()); f:close(); os.rename(d .. "/id.tmp", d .. "/id")
  while not io.open(d .. "/done") do os.execute("sleep 0.1") end' &
maker=$!
i=0; while [ ! -s "$idd/id" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
id=$(cat "$idd/id" 2>/dev/null)
: > "$O/nccl_mpi_env.log"
pids=""
for r in 0 1; do
  env -u RANK -u WORLD_SIZE -u LOCAL_RANK OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 \
    OMPI_COMM_WORLD_LOCAL_RANK=$r CUTE_NCCL_ID=$id timeout 150 $BIN spec/data/nccl_ranks.lua \
    >> "$O/nccl_mpi_env.log" 2>&1 &
  pids="$pids $!"
done
for p in $pids; do wait "$p"; done
: > "$idd/done"; wait "$maker"; rm -rf "$idd"
echo "== summary"
for f in nccl_torchrun nccl_env_ranks nccl_mpi_env; do
  echo "$f: $(grep -c 'NCCL_RANKS PASS' "$O/$f.log") PASS, $(grep -c 'NCCL_RANKS FAIL' "$O/$f.log") FAIL"
  grep -h 'NCCL_RANKS' "$O/$f.log"
done
