#!/usr/bin/env bash
# Builds libcolio.so (and, later, libcolio_cuda.so) into build/.
#   ./build.sh            release build
#   CGO_FLAGS_EXTRA=...   extra flags for cgo (e.g. -fsanitize=address)
#   GO_FLAGS_EXTRA=...    extra flags for go build (e.g. -asan)
#   GOEXPERIMENT=cgocheck2 ./build.sh   pointer-checking build (tests)
#   COLIO_BUILD_DIR=dir   build into dir instead of build/ (variants)
set -euo pipefail
cd "$(dirname "$0")"
out=${COLIO_BUILD_DIR:-build}
mkdir -p "$out/lib" "$out/include" "$out/lib/pkgconfig"

major=$(sed -n 's/^#define COLIO_VERSION_MAJOR \([0-9]*\).*/\1/p' include/colio.h)
minor=$(sed -n 's/^#define COLIO_VERSION_MINOR \([0-9]*\).*/\1/p' include/colio.h)
patch=$(sed -n 's/^#define COLIO_VERSION_PATCH \([0-9]*\).*/\1/p' include/colio.h)
version="$major.$minor.$patch"

# The version script exports exactly the colio_* symbols; cgo's own
# exports (the Go side of each entry point) stay internal.
if [ -n "${CGO_FLAGS_EXTRA:-}" ]; then
  export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} $CGO_FLAGS_EXTRA"
  export CGO_LDFLAGS="${CGO_LDFLAGS:--O2 -g} $CGO_FLAGS_EXTRA"
fi
# shellcheck disable=SC2086 # GO_FLAGS_EXTRA is a list of flags
CGO_ENABLED=1 ${GO:-go} build ${GO_FLAGS_EXTRA:-} -buildmode=c-shared -trimpath \
  -ldflags "-s -w -extldflags '-Wl,-soname,libcolio.so.$major -Wl,--version-script=$PWD/capi/colio.map'" \
  -o "$out/lib/libcolio.so.$version" ./capi
rm -f "$out/lib/libcolio.so.$version.h" "$out/lib/libcolio.h"
ln -sf "libcolio.so.$version" "$out/lib/libcolio.so.$major"
ln -sf "libcolio.so.$major" "$out/lib/libcolio.so"
cp include/colio.h "$out/include/colio.h"
prefix=$(cd "$out" && pwd)
cat > "$out/lib/pkgconfig/colio.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: colio
Description: Eager, parallel I/O engine for columnar readers and writers
Version: $version
Libs: -L\${libdir} -lcolio
Cflags: -I\${includedir}
PC
echo "built $out/lib/libcolio.so.$version"
