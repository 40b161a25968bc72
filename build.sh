#!/usr/bin/env bash
# Builds libcolio.so and, where CUDA headers are found, libcolio_cuda.so
# into build/.
#   ./build.sh            release build
#   CGO_FLAGS_EXTRA=...   extra flags for cgo (e.g. -fsanitize=address)
#   GO_FLAGS_EXTRA=...    extra flags for go build (e.g. -asan)
#   GOEXPERIMENT=cgocheck2 ./build.sh   pointer-checking build (tests)
#   COLIO_BUILD_DIR=dir   build into dir instead of build/ (variants)
#   COLIO_CUDA=0          do not build libcolio_cuda.so; COLIO_CUDA=1: fail
#                         if cuda.h is not found (default: build it if found)
#   COLIO_CUDA_HOME=dir   where cuda.h is (dir/include); see below
#   COLIO_STRIP=0         keep symbols and DWARF (for gdb on a hung test)
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
strip="-s -w"
[ "${COLIO_STRIP:-1}" = 0 ] && strip=""
# shellcheck disable=SC2086 # GO_FLAGS_EXTRA is a list of flags
CGO_ENABLED=1 ${GO:-go} build ${GO_FLAGS_EXTRA:-} -buildmode=c-shared -trimpath \
  -ldflags "$strip -extldflags '-Wl,-soname,libcolio.so.$major -Wl,--version-script=$PWD/capi/colio.map'" \
  -o "$out/lib/libcolio.so.$version" ./capi
# cgo writes its header beside the library, named after the last dot
# (libcolio.so.0.1.h); it is not shipped: include/colio.h is the contract.
rm -f "$out/lib/libcolio.so.$major.$minor.h" "$out/lib/libcolio.so.$version.h" "$out/lib/libcolio.h"
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

# The CUDA variant, libcolio_cuda.so, when cuda.h is found: $COLIO_CUDA_HOME
# or $CUDA_HOME (include/, lib64/stubs or lib/x86_64-linux-gnu/stubs),
# /usr/local/cuda, /usr, or the cache of scripts/fetch-cuda-headers.sh.
# COLIO_CUDA=0 skips it; COLIO_CUDA=1 makes a missing cuda.h an error.
cuda_found=
if [[ ${COLIO_CUDA:-auto} != 0 ]]; then
  for root in ${COLIO_CUDA_HOME:-} ${CUDA_HOME:-} /usr/local/cuda /usr \
              "${COLIO_CUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colio-cuda}/usr"; do
    [[ -f "$root/include/cuda.h" ]] || continue
    for stubs in "$root/lib64/stubs" "$root/lib/x86_64-linux-gnu/stubs" "$root/lib64" "$root/lib/x86_64-linux-gnu"; do
      if [[ -e "$stubs/libcuda.so" ]]; then cuda_found="$root|$stubs"; break 2; fi
    done
  done
fi
if [[ -n $cuda_found ]]; then
  cuda_inc="${cuda_found%%|*}/include" cuda_lib="${cuda_found##*|}"
  # shellcheck disable=SC2086 # GO_FLAGS_EXTRA is a list of flags
  CGO_ENABLED=1 CGO_CFLAGS="-I$cuda_inc ${CGO_CFLAGS:-}" CGO_LDFLAGS="-L$cuda_lib ${CGO_LDFLAGS:-}" \
    ${GO:-go} build ${GO_FLAGS_EXTRA:-} -tags cuda -buildmode=c-shared -trimpath \
    -ldflags "-s -w -extldflags '-Wl,-soname,libcolio_cuda.so.$major -Wl,--version-script=$PWD/capi/colio.map'" \
    -o "$out/lib/libcolio_cuda.so.$version" ./capi
  rm -f "$out/lib/libcolio_cuda.so.$version.h" "$out/lib/libcolio_cuda.so.$major.$minor.h" # cgo names it after the last dot
  ln -sf "libcolio_cuda.so.$version" "$out/lib/libcolio_cuda.so.$major"
  ln -sf "libcolio_cuda.so.$major" "$out/lib/libcolio_cuda.so"
  echo "built $out/lib/libcolio_cuda.so.$version (CUDA headers: $cuda_inc)"
elif [[ ${COLIO_CUDA:-auto} == 1 ]]; then
  echo "build.sh: COLIO_CUDA=1 but no cuda.h found; run scripts/fetch-cuda-headers.sh" >&2
  exit 1
elif [[ ${COLIO_CUDA:-auto} == 0 ]]; then
  echo "COLIO_CUDA=0: libcolio_cuda.so not built"
else
  echo "no CUDA headers found: libcolio_cuda.so not built (scripts/fetch-cuda-headers.sh fetches them)"
fi
