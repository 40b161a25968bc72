#!/usr/bin/env bash
# The functions libcolio.so exports must be exactly the functions colio.h
# declares: nothing missing (a declared function that does not link) and
# nothing extra (cgo's colioGo* exports, Go runtime symbols, internal C
# helpers). Usage: check_symbols.sh LIB HEADER
set -euo pipefail
lib=$1 header=$2
cc=${CC:-cc}
# PyInit__native is the Python package's module of builtin small calls
# (capi/pyfast.c), not part of the C API.
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | grep -vx PyInit__native | sort -u)
# Preprocess, so comments and macros cannot confuse the match; a function
# declaration is a colio_ name followed by "(" (function pointer typedefs
# and fields have ")(" instead).
declared=$("$cc" -E -P -x c "$header" | grep -oE '\bcolio_[a-z0-9_]+[[:space:]]*\(' |
  sed 's/[[:space:](]//g' | sort -u)
if [ "$exported" != "$declared" ]; then
  echo "FAIL symbols: exported (<) and declared (>) differ:" >&2
  diff <(echo "$exported") <(echo "$declared") >&2 || true
  exit 1
fi
echo "ok   symbols: $(echo "$exported" | wc -l) exported functions == the functions of colio.h"
