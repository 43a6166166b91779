#!/bin/sh
# ThreadSanitizer run of the compile pool (docs/AUTOTUNE.md, "Thread safety"):
# every src/*.c (not main.c) and tests/compile_pool_c.c built with
# -fsanitize=thread into a temp directory and linked statically with LLVM
# (itself not instrumented) and LuaJIT, then run twice: LLVM only, and with
# ptxas (when present) and the disk cache.  Not part of `make test` (it
# rebuilds the core, minutes on 2 cores).  Needs `make` first (build/lua_embed.c).
#   sh tools/tsan_compile_pool.sh        prints the test's summary and the race count
set -e
cd "$(dirname "$0")/.."
[ -f build/lua_embed.c ] || { echo "run make first (build/lua_embed.c)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
LLVM_CONFIG=${LLVM_CONFIG:-llvm-config-19}
CF="-std=gnu11 -O1 -g -fsanitize=thread -fPIC -Iinclude -Ibuild -I/usr/include/luajit-2.1 $($LLVM_CONFIG --cflags)"
for f in $(ls src/*.c | grep -v 'src/main.c'); do echo "$f"; done | xargs -P "${JOBS:-2}" -I{} sh -c "cc $CF -c {} -o $T/\$(basename {} .c).o"
cc $CF -c build/lua_embed.c -o "$T/lua_embed.o"
sed -e 's/"cache", "false"/"cache", "true"/' -e 's/"keep", "ptx"/"use_ptxas", "true"/' tests/compile_pool_c.c > "$T/ptxas_cache.c"
LIBS="/usr/lib/x86_64-linux-gnu/libluajit-5.1.a -L$($LLVM_CONFIG --libdir) $($LLVM_CONFIG --link-static --libs core analysis passes target linker bitreader nvptxcodegen nvptxdesc nvptxinfo) -lz -lzstd -lrt -ldl -lm -pthread"
for t in tests/compile_pool_c.c "$T/ptxas_cache.c"; do
  cc $CF -c "$t" -o "$T/main.obj"
  c++ -fsanitize=thread -o "$T/test" "$T"/*.o "$T/main.obj" $LIBS
  if [ "$t" != tests/compile_pool_c.c ] && ! command -v ptxas >/dev/null && [ ! -x /usr/local/cuda/bin/ptxas ]; then
    echo "== $t: skipped (no ptxas)"; continue
  fi
  CUTE_CACHE_DIR=$(mktemp -d -p "$T") TSAN_OPTIONS=halt_on_error=0 "$T/test" > "$T/log" 2>&1 || true
  echo "== $(basename "$t"): $(tail -1 "$T/log"); ThreadSanitizer warnings: $(grep -c 'WARNING: ThreadSanitizer' "$T/log" || true)"
  grep -A30 'WARNING: ThreadSanitizer' "$T/log" | head -60 || true
done
