#!/usr/bin/env bash
# Fetches the CUDA driver-API headers and link stubs that the `cuda` build of
# colio needs (gorgonia.org/cu wants cuda.h and -lcuda), without installing
# CUDA: the Debian package nvidia-cuda-dev (bookworm, non-free; CUDA 11.8
# headers, about 770 MB to download) is downloaded and only ./usr/include/ and
# ./usr/lib/x86_64-linux-gnu/stubs/ are extracted, into a cache outside the
# repository. See "GPU note" in DESIGN.md.
#
#   scripts/fetch-cuda-headers.sh            fetch (once) and print the directory
#   COLIO_CUDA_CACHE=/some/dir scripts/...   cache elsewhere
#
# Then build with:
#   CGO_CFLAGS=-I$dir/usr/include CGO_LDFLAGS=-L$dir/usr/lib/x86_64-linux-gnu/stubs \
#     go build -tags cuda ./gpu/...
# The last line of output is always the cache directory. Exits non-zero (after
# printing the failed command and its exit code) if the download fails, so CI
# can skip the cuda build only in that case.
# Needs root for apt-get update (it adds a sources entry); apt-get download
# itself needs no root.
set -uo pipefail

dir=${COLIO_CUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colio-cuda}
marker="$dir/.complete"

if [[ -f "$marker" && -f "$dir/usr/include/cuda.h" && -e "$dir/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" ]]; then
  echo "colio: CUDA headers already in $dir" >&2
  echo "$dir"
  exit 0
fi

run() {
  echo "+ $*" >&2
  "$@" >&2
  local rc=$?
  echo "  exit code $rc" >&2
  return $rc
}

fail() {
  echo "colio: fetching the CUDA headers failed: $1" >&2
  exit "${2:-1}"
}

mkdir -p "$dir" || fail "cannot create $dir"

# 1. A Debian source entry for bookworm contrib/non-free, copied from the
#    system's own deb.debian.org entry (same mirror and keyring).
list=/etc/apt/sources.list.d/colio-cuda-nonfree.sources
if [[ ! -f "$list" ]]; then
  sys=/etc/apt/sources.list.d/debian.sources
  uri=http://deb.debian.org/debian
  key=/usr/share/keyrings/debian-archive-keyring.gpg
  if [[ -f "$sys" ]]; then
    u=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$sys")
    k=$(awk '/^Signed-By:/ {print $2; exit}' "$sys")
    [[ -n "$u" ]] && uri=$u
    [[ -n "$k" ]] && key=$k
  fi
  echo "+ write $list (Suites: bookworm, Components: contrib non-free, URIs: $uri)" >&2
  if ! printf 'Types: deb\nURIs: %s\nSuites: bookworm\nComponents: contrib non-free\nSigned-By: %s\n' \
      "$uri" "$key" > "$list"; then
    fail "cannot write $list (run as root, or add the entry by hand)"
  fi
fi

run apt-get update -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- \
  -o APT::Get::List-Cleanup=0 || fail "apt-get update" $?

work=$(mktemp -d "$dir/.download.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
(cd "$work" && run apt-get download nvidia-cuda-dev) || fail "apt-get download nvidia-cuda-dev" $?
deb=$(ls "$work"/nvidia-cuda-dev_*.deb 2>/dev/null | head -n1)
[[ -n "$deb" ]] || fail "apt-get download produced no .deb"

echo "+ dpkg-deb --fsys-tarfile $(basename "$deb") | tar -x -C $dir ./usr/include/ ./usr/lib/x86_64-linux-gnu/stubs/" >&2
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" ./usr/include/ ./usr/lib/x86_64-linux-gnu/stubs/
rc=("${PIPESTATUS[@]}")
echo "  exit codes ${rc[*]}" >&2
[[ ${rc[0]} -eq 0 && ${rc[1]} -eq 0 ]] || fail "extracting $deb" 1
[[ -f "$dir/usr/include/cuda.h" ]] || fail "cuda.h missing after extraction"
# The stubs directory holds libcuda.so (the link-time stub); make sure the
# unversioned name exists for -lcuda.
stubs="$dir/usr/lib/x86_64-linux-gnu/stubs"
if [[ ! -e "$stubs/libcuda.so" ]]; then
  so=$(ls "$stubs"/libcuda.so* 2>/dev/null | head -n1)
  [[ -n "$so" ]] && ln -sf "$(basename "$so")" "$stubs/libcuda.so"
fi
[[ -e "$stubs/libcuda.so" ]] || fail "libcuda.so stub missing after extraction"
touch "$marker"
echo "colio: CUDA headers in $dir" >&2
echo "$dir"
