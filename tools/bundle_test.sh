#!/bin/sh
# The bundle (make bundle, tools/bundle.sh): its size budget, what it links,
# and that it runs after being moved.
#   sh tools/bundle_test.sh        build a fresh bundle from build/ in a temporary
#                                  directory and check it (run after make; make test)
#   sh tools/bundle_test.sh DIR    check the bundle DIR (e.g. `sh tools/bundle_test.sh .`
#                                  in dist/ on the GPU host); DIR itself is left as it is
# Prints "N passed, N failed, N skipped" (skipped: no readelf on the host).
# Checks:
#   size      under BUNDLE_BUDGET_MIB MiB (default 60; the device tool carries 64 MiB),
#             apparent size, symbolic links as links (what a copy carries)
#   one LLVM  bin/cuteluajit needs libcute.so.0 (found at $ORIGIN/../lib) and glibc only:
#             LLVM is in lib/libcute.so alone, LuaJIT in the program alone
#   closure   ldd of every ELF file in the bundle: each library found, either inside
#             the bundle or one of glibc's (libc, libm, libdl, libpthread, librt, the
#             loader; libgcc_s, which glibc itself needs, for lib/libluajit); nothing from
#             LLVM's directory or from the source tree
#   moved     a copy in another directory, run from / with no LD_LIBRARY_PATH, LUA_PATH,
#             LUA_CPATH or CUTE_LIB: cuteluajit loads the copy's modules and library and
#             maps no other libcute, LLVM or LuaJIT (busted's lfs loaded too);
#             examples/vector_add.lua runs (checked on a GPU, compiled only without
#             one); bin/busted runs two specs; a C host builds and runs against the
#             copy (tools/gpu_embed.sh; skipped without cc or with BUNDLE_TEST_C=0)
P=0 F=0 S=0
ok() { if [ "$1" -eq 0 ]; then P=$((P + 1)); echo "ok   $2"; else F=$((F + 1)); echo "FAIL $2"; fi; }
src=$(pwd)
tmp=$(cd "$(mktemp -d)" && pwd -P)   # (physical: /proc/self/exe is)
trap 'rm -rf "$tmp"' EXIT
budget=${BUNDLE_BUDGET_MIB:-60}

if [ -n "$1" ]; then
  [ -x "$1/bin/cuteluajit" ] || { echo "bundle_test.sh: $1 is not a bundle (no bin/cuteluajit)"; echo "0 passed, 1 failed"; exit 1; }
  dist=$(cd "$1" && pwd -P)
else
  dist=$tmp/dist
  sh tools/bundle.sh "$dist" > "$tmp/log" 2>&1; ok $? "tools/bundle.sh builds a bundle: $(tail -1 "$tmp/log")"
  [ -x "$dist/bin/cuteluajit" ] || { cat "$tmp/log"; echo "$P passed, $((F + 1)) failed"; exit 1; }
fi
major=$(sed -n 's/.*CUTE_VERSION_MAJOR = \([0-9]*\),.*/\1/p' "$dist/include/cuteluajit/cute.h")

# ---- size ----------------------------------------------------------------------
bytes=$(du -sb "$dist" | cut -f1)
mib=$(awk "BEGIN { printf \"%.1f\", $bytes / 1048576 }")
[ "$bytes" -lt $((budget * 1048576)) ]; ok $? "size $mib MiB, budget $budget MiB"
echo "largest files:"; (cd "$dist" && find . -type f -size +1M -exec ls -s --block-size=K {} + | sort -rn | head -5)

# ---- one LLVM, one LuaJIT ------------------------------------------------------------
if command -v readelf > /dev/null; then
  needed=$(readelf -d "$dist/bin/cuteluajit" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  echo "bin/cuteluajit needs: $needed"
  bad=$(printf '%s\n' $needed | grep -vxE "libcute\.so\.$major|lib(c|m|dl|pthread|rt)\.so\.[0-9]+|ld-linux-x86-64\.so\.2")
  printf '%s\n' $needed | grep -qx "libcute.so.$major" && [ -z "$bad" ]
  ok $? "bin/cuteluajit needs libcute.so.$major and glibc only${bad:+ (also: $bad)}"
  readelf -d "$dist/bin/cuteluajit" | grep -q 'R.*PATH.*\[\$ORIGIN/\.\./lib\]'
  ok $? "bin/cuteluajit finds it at \$ORIGIN/../lib"
  readelf -d "$dist/bin/cuteluajit" | grep -q 'RUNPATH'; [ $? -ne 0 ]
  ok $? "as DT_RPATH, not DT_RUNPATH (LD_LIBRARY_PATH cannot put another libcute.so.$major before it)"
  n=$(find "$dist" -type f -name 'libLLVM*' | wc -l)
  lj=$(find "$dist" -type f \( -name 'libcute.so*' -o -name cuteluajit \) -exec sh -c \
    'readelf -d "$1" | grep -c "NEEDED.*lib\(luajit\|lua\)"' _ {} \; | awk '{ s += $1 } END { print s + 0 }')
  [ "$n" -eq 0 ] && [ "$lj" -eq 0 ]
  ok $? "no libLLVM in the bundle ($n); neither the program nor libcute.so needs a LuaJIT library ($lj)"
  readelf --dyn-syms -W "$dist/bin/cuteluajit" | awk '$7 != "UND" && $8 == "lua_pcall"' | grep -q lua_pcall
  ok $? "the program defines and exports LuaJIT's lua_* (for libcute.so and busted's C modules)"
else   # (binutils: not on every driver-only GPU host; the build host has them)
  S=$((S + 5)); echo "skip 5 checks of the program's dynamic section: no readelf here"
fi

# ---- ldd closure ----------------------------------------------------------------------
find "$dist" -type f | while read -r f; do
  head -c 4 "$f" | grep -q 'ELF' && echo "$f"
done > "$tmp/elfs"
echo "$(wc -l < "$tmp/elfs") ELF files"
: > "$tmp/outside"
while read -r f; do
  ldd "$f" 2>&1 | while read -r line; do
    case "$line" in
      *"not found"*) echo "${f#"$dist"/}: $line" ;;
      *"=> $dist/"*) ;;
      linux-vdso*|*"statically linked"*) ;;
      *)
        path=$(echo "$line" | sed -n 's/.*=> \([^ ]*\) .*/\1/p')
        [ -n "$path" ] || path=$(echo "$line" | awk '{ print $1 }')
        name=$(basename "$path")
        case "$path" in
          "$src"/*|*/llvm-*) echo "${f#"$dist"/}: $line" ;;
          /lib/*|/lib64/*|/usr/lib/*|/usr/lib64/*)
            echo "$name" | grep -qxE 'lib(c|m|dl|pthread|rt)\.so\.[0-9]+|ld-linux-x86-64\.so\.2|libgcc_s\.so\.1' ||
              echo "${f#"$dist"/}: $line" ;;
          *) echo "${f#"$dist"/}: $line" ;;
        esac ;;
    esac
  done
done < "$tmp/elfs" > "$tmp/outside"
cat "$tmp/outside"
[ ! -s "$tmp/outside" ] && [ -s "$tmp/elfs" ]
ok $? "ldd: every library of every ELF file inside the bundle or glibc's"

# ---- moved ------------------------------------------------------------------------------
moved=$tmp/elsewhere/cute-bundle
mkdir -p "$tmp/elsewhere" && cp -a "$dist" "$moved"
[ -z "$1" ] && rm -rf "$dist"   # (a bundle built here: nothing is left to point back to)
clean() { (cd / && env -u LD_LIBRARY_PATH -u LUA_PATH -u LUA_CPATH -u CUTE_LIB "$@"); }
cat > "$tmp/maps.lua" <<'EOS'
local cute = require("cute")
require("lfs")
print("ffi " .. require("cute.ffi").lib_path)
print("src " .. debug.getinfo(require("cute.ffi").check, "S").source)
print("layout " .. tostring(cute.make_layout({4, 2})))
local seen = {}
for l in io.lines("/proc/self/maps") do
  local p = l:match("%s(/%S+)$")
  if p and p:find("%.so") and not seen[p] then seen[p] = true; print("map " .. p) end
end
EOS
clean "$moved/bin/cuteluajit" "$tmp/maps.lua" > "$tmp/maps" 2>&1; rc=$?
cat "$tmp/maps"
grep -qx 'layout (4,2):(1,4)' "$tmp/maps" && [ $rc -eq 0 ]; ok $? "moved: bin/cuteluajit runs from /"
grep -qx "src @$moved/bin/../lua/cute/ffi.lua" "$tmp/maps"; ok $? "moved: the Lua modules of the copy"
libs=$(grep '^map ' "$tmp/maps" | grep -c 'libcute')
grep -q "^map $moved/bin/../lib/libcute.so.$major\.\|^map $moved/lib/libcute.so.$major\." "$tmp/maps" && [ "$libs" -eq 1 ]
ok $? "moved: one libcute mapped, the copy's"
grep -E '^map ' "$tmp/maps" | grep -iE 'llvm|luajit|liblua'; [ $? -ne 0 ]
ok $? "moved: no other LLVM or LuaJIT library mapped"
clean "$moved/bin/cuteluajit" "$moved/examples/vector_add.lua" > "$tmp/log" 2>&1; rc=$?
tail -3 "$tmp/log"
[ $rc -eq 0 ] && grep -qE '^compiled for sm_|^vector_add: rel\. error .* OK$' "$tmp/log"
ok $? "moved: examples/vector_add.lua"
(cd "$moved" && env -u LD_LIBRARY_PATH -u LUA_PATH -u LUA_CPATH -u CUTE_LIB \
  ./bin/busted -o plainTerminal spec/version_spec.lua spec/layout_api_spec.lua) > "$tmp/log" 2>&1; rc=$?
grep -E '^[0-9]+ success' "$tmp/log"
grep -qE '^[1-9][0-9]* success(es)? / 0 failures / 0 errors' "$tmp/log" && [ $rc -eq 0 ]
ok $? "moved: bin/busted spec/version_spec.lua spec/layout_api_spec.lua"
if [ "${BUNDLE_TEST_C:-1}" = 0 ]; then
  S=$((S + 1)); echo "skip the C host: BUNDLE_TEST_C=0"
elif command -v cc > /dev/null; then
  mkdir -p "$tmp/embed"
  (cd / && env -u LD_LIBRARY_PATH -u LUA_PATH -u LUA_CPATH -u CUTE_LIB OUT="$tmp/embed" \
    sh "$moved/tools/gpu_embed.sh") > "$tmp/log" 2>&1; rc=$?
  cat "$tmp/log"
  ok $rc "moved: a C host built against the copy's lib/pkgconfig and run (tools/gpu_embed.sh)"
else
  S=$((S + 1)); echo "skip the C host: no cc here"
fi
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
