#!/bin/sh
# make install into a temporary prefix, then: the files, the soname, the
# pkg-config file, examples/embed built with pkg-config only and run (it
# compiles a kernel to PTX; it launches it too when a GPU is present), the
# installed cuteluajit, plain luajit on the installed modules, a DESTDIR
# install; then make uninstall must leave nothing.  Prints "N passed, N failed".
# Run from the source tree after make (make test runs it).
P=0 F=0
ok() { if [ "$1" -eq 0 ]; then P=$((P + 1)); echo "ok   $2"; else F=$((F + 1)); echo "FAIL $2"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s "$@"; }
version=$(sed -n 's/.*CUTE_VERSION_MAJOR = \([0-9]*\), CUTE_VERSION_MINOR = \([0-9]*\), CUTE_VERSION_PATCH = \([0-9]*\).*/\1.\2.\3/p' include/cute.h)
major=${version%%.*}

mk install PREFIX="$prefix" > "$tmp/log" 2>&1; ok $? "make install PREFIX=<tmp> (cuteluajit $version)"
cat "$tmp/log"
test -f "$prefix/lib/libcute.so.$version"; ok $? "lib/libcute.so.$version"
[ "$(readlink "$prefix/lib/libcute.so.$major")" = "libcute.so.$version" ] && \
  [ "$(readlink "$prefix/lib/libcute.so")" = "libcute.so.$major" ]
ok $? "links libcute.so -> libcute.so.$major -> libcute.so.$version"
readelf -d "$prefix/lib/libcute.so.$version" | grep -q "SONAME.*\[libcute.so.$major\]"
ok $? "soname libcute.so.$major"
for h in cute.h cute_ir.h cute_cuda.h cute_compile.h cute_lua.h cute_host.h cute_dlpack.h; do
  test -f "$prefix/include/cuteluajit/$h" || { echo "missing include/cuteluajit/$h"; false; } || break
done
ok $? "headers in include/cuteluajit/"
test -x "$prefix/bin/cuteluajit" && test -f "$prefix/share/lua/5.1/cute/init.lua" && \
  test -f "$prefix/share/lua/5.1/cute/cdef.lua"
ok $? "bin/cuteluajit and the Lua modules"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion cuteluajit)" = "$version" ]; ok $? "pkg-config --modversion cuteluajit"
echo "pkg-config: $(pkg-config --cflags --libs cuteluajit)"
mk -C examples/embed OUT="$tmp" > "$tmp/log" 2>&1; rc=$?
cat "$tmp/log"; ok $rc "examples/embed built with pkg-config only"
if [ -x "$tmp/host" ]; then
  ldd "$tmp/host" | grep -q "$prefix/lib/libcute.so.$major"; ok $? "the program loads the installed libcute.so.$major"
  (cd / && env -u LD_LIBRARY_PATH -u CUTE_LIB "$tmp/host" "$OLDPWD/examples/embed/kernels.lua") > "$tmp/log" 2>&1; rc=$?
  cat "$tmp/log"
  grep -qE '^[0-9]+ passed, 0 failed' "$tmp/log" && [ $rc -eq 0 ]; ok $? "the host program runs (kernel compiled to PTX through the host API)"
  (cd / && env -u LD_LIBRARY_PATH "$tmp/embed") > "$tmp/log" 2>&1; rc=$?
  grep -qE '^[0-9]+ passed, 0 failed' "$tmp/log" && [ $rc -eq 0 ]; ok $? "the lua_State example runs"
fi
out=$(cd / && "$prefix/bin/cuteluajit" -e 'print(require("cute").version)' 2>&1)
[ "$out" = "cuteluajit $version" ]; ok $? "installed cuteluajit runs ($out)"
ldd "$prefix/bin/cuteluajit" | grep -q "=> $prefix/bin/../lib/libcute.so.$major "
ok $? "installed cuteluajit links the installed libcute.so.$major (LLVM installed once)"
if command -v luajit > /dev/null; then
  out=$(cd / && env -u CUTE_LIB LUA_PATH="$prefix/share/lua/5.1/?.lua;$prefix/share/lua/5.1/?/init.lua;;" \
    luajit -e 'local cute = require("cute"); print(tostring(cute.make_layout({4, 2})) .. " " .. require("cute.ffi").lib_path)' 2>&1)
  echo "luajit: $out"
  case "$out" in "(4,2):(1,4) $prefix/"*"libcute.so.$major") true ;; *) false ;; esac
  ok $? "plain luajit finds the installed library beside the installed modules"
fi

mk uninstall PREFIX="$prefix" > "$tmp/log" 2>&1; ok $? "make uninstall"
left=$(find "$prefix" -mindepth 1 2>/dev/null)
[ -z "$left" ]; ok $? "uninstall leaves nothing${left:+: $left}"

stage=$tmp/stage
mk install DESTDIR="$stage" PREFIX=/opt/cute > /dev/null 2>&1 && \
  test -f "$stage/opt/cute/lib/libcute.so.$version" && \
  grep -qx 'prefix=/opt/cute' "$stage/opt/cute/lib/pkgconfig/cuteluajit.pc"
ok $? "DESTDIR install: files under DESTDIR, the .pc names PREFIX"
mk uninstall DESTDIR="$stage" PREFIX=/opt/cute > /dev/null 2>&1
left=$(find "$stage/opt/cute" -mindepth 1 2>/dev/null)
[ -z "$left" ]; ok $? "DESTDIR uninstall leaves nothing"
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
