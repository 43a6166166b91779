#!/bin/sh
# Run on the GPU host from the bundle directory (dist/): the C embedding on a
# real GPU.  Builds examples/embed (host.c: the host API launching saxpy on
# its own stream; embed.c: a lua_State) and tests/host_c.c against dist/lib
# through dist/lib/pkgconfig/cuteluajit.pc (flags written out when pkg-config
# is missing), runs them, and runs spec/dlpack_spec.lua (#gpu included).
# Logs go to $OUT (or /tmp): embed_build.log, embed_host.log, embed_lua.log,
# host_c.log, dlpack_specs.log.  Exit status 0 when all passed.
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp}
here=$(pwd)
export PKG_CONFIG_PATH="$here/lib/pkgconfig"
if command -v pkg-config > /dev/null; then
  flags=$(pkg-config --cflags --libs cuteluajit)
else
  flags="-I$here/include/cuteluajit -I$here/include/cuteluajit/luajit-2.1 -L$here/lib -Wl,-rpath,$here/lib -lcute -lluajit-5.1"
fi
echo "flags: $flags"
rc=0
{ make -C examples/embed OUT="$O" PKG="$flags" &&
  cc -std=gnu11 -O1 -g -o "$O/test_host_c" tests/host_c.c $flags -lpthread; } > "$O/embed_build.log" 2>&1 || {
  echo "build failed:"; tail -20 "$O/embed_build.log"; exit 1; }
run() { # name log command...
  name=$1 log=$2; shift 2
  "$@" > "$O/$log" 2>&1; r=$?
  echo "== $name (exit $r): $(grep -E '^[0-9]+ (passed|success)' "$O/$log" | tail -1)"
  grep -E '^FAIL' "$O/$log" | head -20
  [ $r -eq 0 ] || rc=1
}
run "examples/embed/host.c" embed_host.log "$O/host" examples/embed/kernels.lua
run "examples/embed/embed.c" embed_lua.log "$O/embed"
run "tests/host_c.c" host_c.log "$O/test_host_c"
run "spec/dlpack_spec.lua" dlpack_specs.log ./bin/busted -o plainTerminal spec/dlpack_spec.lua
exit $rc
