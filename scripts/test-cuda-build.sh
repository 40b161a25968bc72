#!/usr/bin/env bash
# CI step (make test-cuda-build, part of make test): builds the CUDA variant,
# libcolio_cuda.so, against the CUDA headers on a machine without a GPU, and
# checks what it exports. The headers come from scripts/fetch-cuda-headers.sh
# (downloaded once, about 770 MB, cached outside the repository). The step is
# skipped only when that download fails: the command and its exit code are
# printed, and make test goes on. Anything failing after the headers are
# there (the build, the symbol check, go vet -tags cuda) fails the step.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
echo "+ scripts/fetch-cuda-headers.sh"
out=$(scripts/fetch-cuda-headers.sh)
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "test-cuda-build: SKIPPED: the CUDA header download failed:" \
       "\`scripts/fetch-cuda-headers.sh\` exited with code $rc (its output above names the failed step)"
  exit 0
fi
dir=$(tail -n1 <<<"$out")
echo "  headers in $dir ($((SECONDS - start)) s)"
set -e
export COLIO_CUDA=1 COLIO_CUDA_HOME="$dir/usr"
./build.sh
lib=build/lib/libcolio_cuda.so
tests/c/check_symbols.sh "$lib" include/colio.h
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
needed=$(objdump -p "$lib" | awk '$1 == "NEEDED" {print $2}' | tr '\n' ' ')
[[ $soname == libcolio_cuda.so.0 ]] || { echo "FAIL $lib: SONAME is '$soname'" >&2; exit 1; }
[[ " $needed" == *" libcuda.so.1 "* ]] || { echo "FAIL $lib: does not link libcuda.so.1 (NEEDED: $needed)" >&2; exit 1; }
echo "ok   $lib: SONAME $soname, NEEDED $needed"
CGO_CFLAGS="-I$dir/usr/include" CGO_LDFLAGS="-L$dir/usr/lib/x86_64-linux-gnu/stubs" \
  ${GO:-go} vet -tags cuda ./gpu/... ./capi/
echo "ok   go vet -tags cuda ./gpu/... ./capi/"
echo "ok   test-cuda-build ($((SECONDS - start)) s)"
