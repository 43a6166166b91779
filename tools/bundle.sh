#!/bin/sh
# make bundle: dist/, a relocatable directory that runs on an x86-64 Linux host
# with only the NVIDIA driver: cuteluajit, libcute.so (the C core with LLVM,
# shipped once: bin/cuteluajit links it from ../lib, with LuaJIT static in the
# program), the Lua modules, examples, benchmarks, specs, and busted with its
# dependencies; for C hosts the headers, LuaJIT's library and cuteluajit.pc
# (docs/EMBED.md).  tools/bundle_test.sh checks the result (size, ldd).
#   dist/bin/cuteluajit examples/vector_add.lua
#   dist/bin/busted spec           (GPU specs run; others too)
#   usage: sh tools/bundle.sh [DIR]   (default dist; run after make)
set -e
D=${1:-dist}
rm -rf "$D"
mkdir -p "$D/bin" "$D/lua" "$D/share/lua/5.1" "$D/lib/lua/5.1"
cp build/bin/cuteluajit "$D/bin/"
strip "$D/bin/cuteluajit"
cp -r lua/cute "$D/lua/"
cp -r examples bench spec include docs "$D/"
mkdir -p "$D/tests" "$D/src" && cp tests/cuda_abi.c "$D/tests/" && cp src/cudadef.h "$D/src/"
# the NCCL declarations' check, for the GPU host's nccl.h (tools/gpu_nccl.sh)
cp tests/nccl_abi.c "$D/tests/" && cp src/nccldef.h "$D/src/"
# LuaJIT's own tools (jit.v, jit.p, jit.dump) for profiling on the GPU host
mkdir -p "$D/share/lua/5.1/jit" && cp /usr/share/luajit-2.1.0-beta3/jit/*.lua "$D/share/lua/5.1/jit/"
# every GPU-host script and Lua tool (gpu_*.sh, lineinfo_oob.sh, fa_once.lua, fuzzers, ...)
mkdir -p "$D/tools" && cp tools/*.sh tools/*.lua "$D/tools/"
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
# libcute.so (for bin/cuteluajit and C hosts), its headers and a relocatable
# cuteluajit.pc (with LuaJIT's library and headers, for C hosts): lib/,
# include/cuteluajit/, lib/pkgconfig/
version=$(sed -n 's/.*CUTE_VERSION_MAJOR = \([0-9]*\), CUTE_VERSION_MINOR = \([0-9]*\), CUTE_VERSION_PATCH = \([0-9]*\).*/\1.\2.\3/p' include/cute.h)
sh tools/install.sh install "$D" "$D" "$version" --bundle > /dev/null
cp tests/host_c.c tests/check.h "$D/tests/" && cp tools/gpu_embed.sh "$D/tools/"
# (the oracle vectors travel with spec/, in spec/data/)
echo "bundle: $(du -sh --apparent-size "$D" | cut -f1) in $D/"
