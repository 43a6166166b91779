#!/bin/sh
# Several GPUs in one process and CUDA IPC between processes (docs/MULTIGPU.md),
# on a host with 2 or more GPUs (nvidia-h200-x2), from the bundle directory
# (dist/):
#   sh tools/gpu_multidevice.sh
# Runs spec/multidevice_gpu_spec.lua (two devices: kernels on each, the device
# check, kernels on device 0 over device 1's memory, copy_peer, IPC with a
# child process, 256 MiB peer-copy bandwidth) and spec/multidevice_spec.lua
# (the stand-in driver's logic), plus tests/cuda_c's peer calls where built.
# Logs under $OUT (or /tmp): multidevice_gpu_spec.log, multidevice_spec.log;
# the MULTIDEVICE lines (bandwidth) at the end.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | tee "$O/gpus.txt"
nvidia-smi topo -m > "$O/topo.txt" 2>&1
timeout 300 ./bin/busted -o plainTerminal spec/multidevice_gpu_spec.lua > "$O/multidevice_gpu_spec.log" 2>&1
echo "multidevice_gpu_spec rc=$? $(grep -E '^[0-9]+ succ' "$O/multidevice_gpu_spec.log")"
grep -A14 -E '^(Failure|Error|Pending) ->' "$O/multidevice_gpu_spec.log" | head -60
timeout 120 ./bin/busted -o plainTerminal spec/multidevice_spec.lua > "$O/multidevice_spec.log" 2>&1
echo "multidevice_spec rc=$? $(grep -E '^[0-9]+ succ' "$O/multidevice_spec.log")"
grep -A14 -E '^(Failure|Error) ->' "$O/multidevice_spec.log" | head -40
echo "== summary"
grep -h '^MULTIDEVICE' "$O/multidevice_gpu_spec.log"
