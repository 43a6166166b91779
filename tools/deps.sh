#!/bin/sh
# Check (and with --install, or when something is missing, install) the Debian
# packages cuteluajit needs. Quiet when everything is present.
PKGS="llvm-19-dev libzstd-dev luajit libluajit-5.1-dev lua-busted libreadline-dev pkgconf"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && [ "$1" != "--install" ] && exit 0
[ -z "$missing" ] && { echo "deps: all present:$PKGS"; exit 0; }
echo "deps: installing$missing"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq || exit 1
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null || exit 1
echo "deps: done"
