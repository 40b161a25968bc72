"""Failed C allocations are exceptions, not aborts (issue 12.6).

Before the fix, ``src.read_arrow()`` of a 64 GiB sparse file (and
``read_ranges_arrow`` over it) killed the interpreter with SIGABRT: the
library's allocator fell back to cgo's ``C.malloc``, and a NULL from it is
a Go runtime fatal error ("fatal error: runtime: C malloc failed").

The allocation must fail whatever the machine: each scenario runs in a
child interpreter that caps its own address space (RLIMIT_AS) a few GiB
above what it uses once colio has started, so the parent sees whether the
child survived and what it raised.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and sparse files")

SPARSE = 64 << 30
DATA_OFF = 1 << 30

CHILD = r"""
import os, resource, sys
sys.path.insert(0, os.path.join(%(root)r, "python"))
import colio

path = sys.argv[1]
ref = os.pread(os.open(path, os.O_RDONLY), 4096, %(data_off)d)  # the reference, without colio
src = colio.source(path)
assert src.read(0, 16) == bytes(16)  # the engine is up before the cap
pages = int(open("/proc/self/statm").read().split()[0])
cap = pages * os.sysconf("SC_PAGE_SIZE") + (4 << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

def expect_memory_error(what, call):
    try:
        call()
    except MemoryError as e:
        assert isinstance(e, colio.ColioError), type(e).__mro__
        assert "68719476736" in str(e), str(e)
        print(what, "MemoryError", type(e).__name__, e.errno)
    else:
        raise AssertionError(what + " did not fail")

expect_memory_error("read_arrow", lambda: src.read_arrow())
expect_memory_error("read_ranges_arrow",
                    lambda: src.read_ranges_arrow([(0, %(half)d), (%(half)d, %(half)d)]))
# Still alive, and right: the real bytes against os.pread's.
a = src.read_arrow(%(data_off)d, 4096)
assert a.to_bytes() == ref
r = src.read_ranges_arrow([(%(data_off)d, 10), (%(data_off)d + 10, 4086)])
assert r.offsets == [0, 10, 4096] and r.to_bytes() == ref
print("survived")
"""


def test_arrow_reads_of_a_64_gib_sparse_file_raise_memory_error(tmp_path):
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as f:  # plain Python: a hole of 64 GiB, a page of data
        f.truncate(SPARSE)
        f.seek(DATA_OFF)
        f.write(os.urandom(4096))
    code = CHILD % {"root": ROOT, "data_off": DATA_OFF, "half": SPARSE // 2}
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, f"child exited {r.returncode}:\n{r.stdout}\n{r.stderr[-3000:]}"
    lines = r.stdout.splitlines()
    assert lines[-1] == "survived"
    for what in ("read_arrow", "read_ranges_arrow"):
        line = next(x for x in lines if x.startswith(what + " "))
        # a NoSpaceError that is also a MemoryError, errno ENOMEM
        assert line.split()[1:] == ["MemoryError", "ColioMemoryError", "12"], line


def test_open_with_huge_read_ahead_raises_memory_error(tmp_path):
    """colio.open's buffer_size x depth is allocated at open. 1 GiB x 1024
    was taken without a word (overcommit), and the read-ahead's fill of a
    large file would then abort the process from Go's allocator; now it is
    refused at open with colio's MemoryError, and the process goes on."""
    import colio
    p = tmp_path / "f.bin"
    data = os.urandom(1 << 16)
    p.write_bytes(data)
    with pytest.raises(MemoryError) as ei:
        colio.open(str(p), "rb", buffer_size=1 << 30, depth=1024)
    assert isinstance(ei.value, colio.ColioError)
    assert "buffer_size or depth" in str(ei.value)
    with colio.open(str(p), "rb", buffer_size=1 << 20, depth=4) as f:
        assert f.read() == data
