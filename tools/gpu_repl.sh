#!/bin/sh
# Run on the GPU host from the bundle directory (dist/): the REPL's specs
# (spec/repl_spec.lua through a pseudo-terminal, its #gpu test of :time,
# :info and :device included) and the picture specs, then a scripted REPL
# session on a real kernel (:device, :info, :time, :ptx, :sass when nvdisasm
# is there) as a user would see it.  Logs go to $OUT (or /tmp): gpu_repl.log
# and gpu_repl_session.log.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
./bin/busted -o plainTerminal --defer-print spec/repl_spec.lua spec/svg_spec.lua > "$O/gpu_repl.log" 2>&1
rc=$?
grep -E '^[0-9]+ success' "$O/gpu_repl.log"
grep -A12 -E '^(Failure|Error) ->' "$O/gpu_repl.log" | head -60
cat > "$O/gpu_repl_input.lua" <<'EOS'
k = cute.kernel(function(A) local i = cute.arch.block_idx() * 256 + cute.arch.thread_idx() A[i] = A[i] * 2 + 1 end, {name = 'scale'})
A = cute.zeros({2^22}, cute.float32)
k({grid = 2^22 / 256, block = 256}, A)
:device
:info
:time -n 50
:time -n 50 k({grid = 2^22 / 256, block = 256}, A)
:ptx
:sass
k:compile(A)
A:to_table()[1]
EOS
CUTE_HISTORY= timeout 300 ./bin/cuteluajit -i < "$O/gpu_repl_input.lua" > "$O/gpu_repl_session.log" 2>&1
echo "== session: $O/gpu_repl_session.log"
grep -E "^cute> (device|  |GPU|host|kernel)|occupancy|median|compute capability" "$O/gpu_repl_session.log" | head -20
exit $rc
