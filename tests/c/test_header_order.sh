#!/usr/bin/env bash
# colio.h composes with other copies of the Arrow C ABI in every include
# order, in C and in C++ (issue 13.13). Usage: test_header_order.sh BUILD_DIR
#
# Before the fix, colio.h defined ARROW_C_DATA_INTERFACE and the
# ARROW_FLAG_* macros but not struct ArrowArrayStream. nanoarrow takes
# ARROW_FLAG_DICTIONARY_ORDERED to mean "the whole C data and stream
# interface is declared" and skipped its own, so colio.h before nanoarrow
# failed with errors on the incomplete struct ArrowArrayStream (the
# "colio nanoarrow" orders below failed in C and C++).
#
# The headers: colio.h; arrow/c/abi.h from pyarrow's include directory
# (skipped, with a note, if pyarrow is not installed); nanoarrow: the real
# <nanoarrow/nanoarrow.h> if NANOARROW_INCLUDE names its directory, else
# standin/nanoarrow_guards.h, which reproduces nanoarrow's guard logic
# (nanoarrow's wheel ships no headers).
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$build/tests/c/header_order
mkdir -p "$out"
CC=${CC:-cc} CXX=${CXX:-g++}

declare -A inc
inc[colio]='#include <colio.h>'
flags=(-I"$build/include" -I"$here/standin")
if [ -n "${NANOARROW_INCLUDE:-}" ] && [ -f "$NANOARROW_INCLUDE/nanoarrow/nanoarrow.h" ]; then
  inc[nanoarrow]='#include <nanoarrow/nanoarrow.h>'
  flags+=(-I"$NANOARROW_INCLUDE")
  na="nanoarrow.h from $NANOARROW_INCLUDE"
else
  inc[nanoarrow]='#include <nanoarrow_guards.h>'
  na="a stand-in for nanoarrow's guards (standin/nanoarrow_guards.h)"
fi
names=(colio nanoarrow)
py=$root/.venv/bin/python
[ -x "$py" ] || py=python3
if pa=$("$py" -c 'import pyarrow; print(pyarrow.get_include())' 2>/dev/null) && [ -f "$pa/arrow/c/abi.h" ]; then
  inc[abi]='#include <arrow/c/abi.h>'
  flags+=(-I"$pa")
  names+=(abi)
  abi="arrow/c/abi.h from pyarrow"
else
  abi="none (pyarrow not installed: arrow/c/abi.h orders skipped)"
fi

# Every ordering of every non-empty subset that includes colio.h.
orders=()
permute() { # prefix... -- remaining...
  local -a pre=() rest=()
  while [ "$1" != -- ]; do pre+=("$1"); shift; done; shift
  rest=("$@")
  if [ ${#pre[@]} -gt 0 ] && [[ " ${pre[*]} " == *" colio "* ]]; then orders+=("${pre[*]}"); fi
  local i
  for i in "${!rest[@]}"; do
    local -a r2=("${rest[@]:0:i}" "${rest[@]:i+1}")
    permute "${pre[@]}" "${rest[i]}" -- "${r2[@]}"
  done
}
permute -- "${names[@]}"

# The body uses every struct and macro of both interfaces and a colio
# declaration, so that any missing or doubly defined piece fails to build.
body='
#include <string.h>
static int next_empty(struct ArrowArrayStream *s, struct ArrowArray *out) {
  (void)s;
  memset(out, 0, sizeof *out);
  return 0;
}
int main(void) {
  struct ArrowSchema schema;
  struct ArrowArray array;
  struct ArrowArrayStream stream;
  memset(&schema, 0, sizeof schema);
  memset(&stream, 0, sizeof stream);
  schema.flags = ARROW_FLAG_DICTIONARY_ORDERED | ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED;
  stream.get_next = next_empty;
  stream.get_next(&stream, &array);
  int (*f)(colio_source *, int64_t, int64_t, struct ArrowArray *, struct ArrowSchema *) =
      colio_read_arrow_buffer;
  return (f != NULL && schema.flags == 7 && stream.get_schema == NULL && array.release == NULL) ? 0 : 1;
}'

fails=0 n=0
for order in "${orders[@]}"; do
  src=$out/$(echo "$order" | tr ' ' '_').c
  { for h in $order; do echo "${inc[$h]}"; done; echo "$body"; } > "$src"
  for lang in c c++; do
    if [ $lang = c ]; then cmd=("$CC" -std=c11); else cmd=("$CXX" -x c++ -std=c++17); fi
    n=$((n + 1))
    if ! log=$("${cmd[@]}" -Wall -Wextra -Werror "${flags[@]}" -c "$src" -o "$src.$lang.o" 2>&1); then
      echo "FAIL header order ($lang): $order" >&2
      echo "$log" | head -20 >&2
      fails=$((fails + 1))
    fi
  done
done
[ $fails -eq 0 ] || { echo "FAIL header order: $fails of $n builds failed" >&2; exit 1; }
echo "ok   header order: colio.h with $na and $abi, ${#orders[@]} orders x C/C++ ($n builds)"
