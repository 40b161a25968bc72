"""A callable that returns fewer bytes than asked, or 0, before the size it
declared (issue 13.1).

A short result is allowed only at the end of the source. Before the fix, a
read that fit in one task succeeded short (40 of 40 reads returned the bytes
before the stop), while the same read split into several tasks failed with
an I/O error naming a different offset from run to run. Now both fail the
same way: ``colio.ColioIOError`` (an ``OSError``), naming where the source
stopped and what was asked and got, on every read entry point.
"""

from __future__ import annotations

import re

import pytest

import colio

SIZE = 1 << 20
STOP = 300_000


@pytest.fixture(scope="module")
def data() -> bytes:
    return __import__("random").Random(1301).randbytes(SIZE)


@pytest.fixture
def small_tasks():
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=64 << 10)
    yield
    colio.set_config(task_size=old)


def stopping(data):
    """read_into that serves data up to STOP, at most 1000 bytes a call,
    and then 0: a source that ended before its declared size."""
    def read_into(buf, off):
        if off >= STOP:
            return 0
        n = min(len(buf), STOP - off, 1000)
        buf[:n] = data[off:off + n]
        return n
    return read_into


def message(n: int, off: int) -> str:
    return re.escape(f"read of {n} bytes at offset {off} got {STOP - off}: "
                     f"the source stopped at offset {STOP}, before its end at {SIZE}")


CASES = [  # (size, offset): inline-sized, one task, eleven tasks
    (4000, STOP - 100),
    (40_000, STOP - 1000),
    (700_000, 0),
]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("n,off", CASES)
def test_stop_before_size_fails_alike(data, small_tasks, fast, n, off):
    with colio.from_callable(stopping(data), SIZE, fast=fast) as s:
        with pytest.raises(colio.ColioIOError, match=message(n, off)):
            s.read(off, n)
        buf = bytearray(n)
        with pytest.raises(colio.ColioIOError, match=message(n, off)):
            s.read_into(buf, off)
        with pytest.raises(colio.ColioIOError, match=message(n, off)):
            s.read_async(buf, off).result(30)
        head, bad = s.read_ranges_async([(0, 100), (off, n)])
        assert bytes(head.result(30)) == data[:100]
        with pytest.raises(OSError, match=message(n, off)):
            bad.result(30)
        # Up to the stop the source is whole: compared with the generator.
        assert s.read(0, STOP) == data[:STOP]


def test_zero_at_once_fails(small_tasks):
    """A callable that never returns a byte, for a source said to hold
    1000: a read inside it fails, naming offset 0; one at the end is b""."""
    with colio.from_callable(lambda buf, off: 0, 1000) as s:
        with pytest.raises(colio.ColioIOError, match="the source stopped at offset 0, before its end at 1000"):
            s.read_into(bytearray(100), 0)
        assert s.read(1000, 10) == b""
