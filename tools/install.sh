#!/bin/sh
# install / uninstall cuteluajit (called by `make install` / `make uninstall`,
# and by tools/bundle.sh for dist/).
#   sh tools/install.sh install   DEST PREFIX VERSION [--bundle]
#   sh tools/install.sh uninstall DEST PREFIX VERSION
# DEST is $(DESTDIR)$(PREFIX): where files go; PREFIX is written into
# cuteluajit.pc.  --bundle (dist/): a relocatable .pc (paths from the .pc's own
# place) and LuaJIT's library and headers copied in, for a GPU host with only
# the NVIDIA driver.
# Installed: lib/libcute.so.VERSION (soname libcute.so.MAJOR) + the two links,
# include/cuteluajit/*.h, bin/cuteluajit (over lib/libcute.so.MAJOR, found at
# $ORIGIN/../lib), share/lua/5.1/cute/*.lua (the same
# modules are embedded in the library: C hosts need no Lua files; these are
# for plain luajit), lib/pkgconfig/cuteluajit.pc.  With --bundle: the library
# (stripped), headers and .pc only.
set -e
action=$1 dest=$2 prefix=$3 version=$4 bundle=$5
[ -n "$action" ] && [ -n "$dest" ] && [ -n "$prefix" ] && [ -n "$version" ] || {
  echo "usage: sh tools/install.sh install|uninstall DEST PREFIX VERSION [--bundle]" >&2; exit 2; }
major=${version%%.*}
lib=$dest/lib inc=$dest/include/cuteluajit lua=$dest/share/lua/5.1/cute
pc=$dest/lib/pkgconfig/cuteluajit.pc

if [ "$action" = uninstall ]; then
  rm -f "$lib/libcute.so.$version" "$lib/libcute.so.$major" "$lib/libcute.so" "$pc" "$dest/bin/cuteluajit"
  rm -rf "$inc" "$lua"
  # the directories this created, when nothing else is in them
  for d in "$lib/pkgconfig" "$dest/share/lua/5.1" "$dest/share/lua" "$dest/share" "$dest/include" \
           "$dest/lib" "$dest/bin"; do
    rmdir "$d" 2>/dev/null || true
  done
  echo "uninstalled cuteluajit $version from $dest"
  exit 0
fi
[ "$action" = install ] || { echo "install.sh: unknown action $action" >&2; exit 2; }

mkdir -p "$lib/pkgconfig" "$inc"
cp build/libcute.so "$lib/libcute.so.$version"
ln -sf "libcute.so.$version" "$lib/libcute.so.$major"
ln -sf "libcute.so.$major" "$lib/libcute.so"
cp include/*.h "$inc/"
if [ "$bundle" != --bundle ]; then   # the bundle has its own bin/ and lua/
  mkdir -p "$lua" "$dest/bin"
  cp lua/cute/*.lua "$lua/"
  cp build/bin/cuteluajit "$dest/bin/cuteluajit"   # (links lib/libcute.so.MAJOR: ../lib)
fi
if [ "$bundle" = --bundle ]; then
  strip --strip-unneeded "$lib/libcute.so.$version"
  # LuaJIT for C hosts (libcute.so takes lua_* from the program)
  lj=$(ls /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2.* | head -1)
  cp "$lj" "$lib/" && ln -sf "$(basename "$lj")" "$lib/libluajit-5.1.so.2" && ln -sf libluajit-5.1.so.2 "$lib/libluajit-5.1.so"
  mkdir -p "$inc/luajit-2.1" && cp /usr/include/luajit-2.1/*.h "$inc/luajit-2.1/"
  pcprefix='${pcfiledir}/../..' ljcflags='-I${includedir}/cuteluajit/luajit-2.1' ljlibs='-lluajit-5.1'
else
  pcprefix=$prefix
  ljcflags=$(pkg-config --cflags luajit 2>/dev/null || echo "-I/usr/include/luajit-2.1")
  ljlibs=$(pkg-config --libs luajit 2>/dev/null || echo "-lluajit-5.1")
fi
sed -e "s|@PREFIX@|$pcprefix|" -e "s|@VERSION@|$version|" -e "s|@LUAJIT_CFLAGS@|$ljcflags|" \
    -e "s|@LUAJIT_LIBS@|$ljlibs|" tools/cuteluajit.pc.in > "$pc"
echo "installed cuteluajit $version in $dest"
