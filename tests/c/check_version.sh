#!/usr/bin/env bash
# The library's file name, SONAME, symlinks and pkg-config version all
# follow COLIO_VERSION_* in colio.h. Usage: check_version.sh BUILD_DIR
set -euo pipefail
b=$1
h=$b/include/colio.h
v() { sed -n "s/^#define COLIO_VERSION_$1 \([0-9]*\).*/\1/p" "$h"; }
major=$(v MAJOR) version=$(v MAJOR).$(v MINOR).$(v PATCH)
fail() { echo "FAIL version: $*" >&2; exit 1; }
[ -f "$b/lib/libcolio.so.$version" ] || fail "no $b/lib/libcolio.so.$version"
soname=$(readelf -d "$b/lib/libcolio.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcolio.so.$major" ] || fail "SONAME is '$soname', want libcolio.so.$major"
[ "$(readlink "$b/lib/libcolio.so.$major")" = "libcolio.so.$version" ] || fail "libcolio.so.$major link"
[ "$(readlink "$b/lib/libcolio.so")" = "libcolio.so.$major" ] || fail "libcolio.so link"
if command -v pkg-config >/dev/null; then
  pc=$(PKG_CONFIG_PATH=$b/lib/pkgconfig pkg-config --modversion colio)
else
  pc=$(sed -n 's/^Version: //p' "$b/lib/pkgconfig/colio.pc")
fi
[ "$pc" = "$version" ] || fail "colio.pc says $pc, want $version"
# The library depends on nothing beyond libc (cgo's libpthread is in libc).
extra=$(readelf -d "$b/lib/libcolio.so.$version" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
  grep -vE '^(libc\.so\.6|libpthread\.so\.0|ld-linux.*|libdl\.so\.2)$' || true)
[ -z "$extra" ] || fail "unexpected dependencies: $extra"
echo "ok   version: libcolio.so.$version, SONAME $soname, pkg-config $pc"
