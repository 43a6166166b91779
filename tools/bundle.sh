#!/bin/sh
# make bundle: dist/, a relocatable directory that runs on an x86-64 Linux host
# with only the NVIDIA driver: cuteluajit (LuaJIT + LLVM static), the Lua
# modules, examples, benchmarks, specs, and busted with its dependencies.
#   dist/bin/cuteluajit examples/vector_add.lua
#   dist/bin/busted spec           (GPU specs run; others too)
set -e
D=dist
rm -rf "$D"
mkdir -p "$D/bin" "$D/lua" "$D/share/lua/5.1" "$D/lib/lua/5.1"
cp build/cuteluajit "$D/bin/"
strip "$D/bin/cuteluajit"
cp -r lua/cute "$D/lua/"
cp -r examples bench spec include docs "$D/"
mkdir -p "$D/tests" "$D/src" && cp tests/cuda_abi.c "$D/tests/" && cp src/cudadef.h "$D/src/"
# LuaJIT's own tools (jit.v, jit.p, jit.dump) for profiling on the GPU host
mkdir -p "$D/share/lua/5.1/jit" && cp /usr/share/luajit-2.1.0-beta3/jit/*.lua "$D/share/lua/5.1/jit/"
mkdir -p "$D/tools" && cp tools/gpu_check.sh tools/gpu_tc.sh tools/gpu_autotune.sh tools/fa_once.lua "$D/tools/" && (cp tools/fuzz*.lua "$D/tools/" 2>/dev/null || true)
# busted and its Lua dependencies (pure Lua) and C modules (need only libc)
for m in busted busted.lua cliargs cliargs.lua dkjson.lua luassert mediator.lua pl say system term; do
  cp -rL "/usr/share/lua/5.1/$m" "$D/share/lua/5.1/"
done
for so in lfs.so system term; do
  cp -rL "/usr/lib/x86_64-linux-gnu/lua/5.1/$so" "$D/lib/lua/5.1/"
done
echo "require('busted.runner')({ standalone = false })" > "$D/bin/busted.lua"
cat > "$D/bin/busted" <<'EOS'
#!/bin/sh
# busted under cuteluajit (module paths are relative to the binary)
here=$(dirname "$0")
exec "$here/cuteluajit" "$here/busted.lua" "$@"
EOS
chmod +x "$D/bin/busted"
# (the oracle vectors travel with spec/, in spec/data/)
echo "bundle: $(du -sh "$D" | cut -f1) in $D/"
