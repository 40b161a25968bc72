"""Local file, memory and callable sources: every call, byte-exact against
reads made without colio, and every kind of bad input."""

from __future__ import annotations

import array
import gc
import os
import pickle
import threading
import time
import weakref

import numpy as np
import pytest
from conftest import SIZE, pread

import colio

RANGES = [(0, 1), (1, 4095), (4096, 4096), (12345, 1 << 20), (SIZE - 10, 10), (SIZE - 5, 100),
          (SIZE, 7), (100, 0), (2 << 20, 5 << 20)]


def test_size_and_repr(src, data_file):
    assert src.size == os.path.getsize(data_file) == SIZE
    assert len(src) == SIZE
    assert "file" in repr(src) and not src.closed


@pytest.mark.parametrize("offset,size", [(0, 1), (0, 4096), (7, 16384), (12345, 100000),
                                         (0, SIZE), (SIZE - 3, 3), (1 << 20, 5 << 20 // 2)])
def test_read_into_bytearray(src, data_file, offset, size):
    buf = bytearray(size)
    n = src.read_into(buf, offset)
    assert n == size
    assert bytes(buf) == pread(data_file, offset, size)


def test_read_into_numpy_1d_and_2d(src, data_file):
    a = np.zeros(5000, dtype=np.uint32)
    assert src.read_into(a, 99) == a.nbytes
    assert a.tobytes() == pread(data_file, 99, a.nbytes)
    b = np.zeros((300, 77), dtype=np.float64)  # 2-D: size from nbytes, not len
    assert src.read_into(b, 3) == b.nbytes == 300 * 77 * 8
    assert b.tobytes() == pread(data_file, 3, b.nbytes)
    c = np.zeros((4, 5, 6), dtype=np.int16, order="C")
    assert src.read_into(c, 1) == c.nbytes
    assert c.tobytes() == pread(data_file, 1, c.nbytes)


def test_read_into_other_buffers(src, data_file):
    a = array.array("d", bytes(8 * 1000))
    assert src.read_into(a, 5) == 8000
    assert a.tobytes() == pread(data_file, 5, 8000)
    big = bytearray(10000)
    mv = memoryview(big)[100:1100]  # a contiguous slice of a larger buffer
    assert src.read_into(mv, 42) == 1000
    assert big[100:1100] == pread(data_file, 42, 1000)
    assert big[:100] == bytes(100) and big[1100:] == bytes(8900)


def test_read_into_with_size(src, data_file):
    buf = bytearray(100)
    assert src.read_into(buf, 10, size=40) == 40
    assert buf[:40] == pread(data_file, 10, 40) and buf[40:] == bytes(60)


def test_read_at_and_past_the_end(src, data_file):
    buf = bytearray(100)
    assert src.read_into(buf, SIZE - 30) == 30  # crosses the end: what exists
    assert buf[:30] == pread(data_file, SIZE - 30, 30)
    assert src.read_into(buf, SIZE) == 0  # at the end: 0
    with pytest.raises(ValueError, match="past the end"):  # past it: an error
        src.read_into(buf, SIZE + 1)
    with pytest.raises(colio.InvalidArgumentError):
        src.read_async(buf, SIZE + 1)
    assert src.read(SIZE) == b""
    assert src.read(SIZE - 4, 100) == pread(data_file, SIZE - 4, 4)


def test_read_bytes(src, ref):
    assert src.read() == ref
    assert src.read(10) == ref[10:]
    assert src.read(10, 20) == ref[10:30]
    assert src.read(size=0) == b""
    assert type(src.read(0, 5)) is bytes


def test_read_async(src, data_file):
    bufs = [bytearray(s) for _, s in RANGES[:6]]
    futs = [src.read_async(b, off) for b, (off, _) in zip(bufs, RANGES)]
    for b, f, (off, s) in zip(bufs, futs, RANGES):
        assert isinstance(f, colio.Future)
        n = f.result(timeout=10)
        assert n == f.nbytes == min(s, SIZE - off)
        assert bytes(b[:n]) == pread(data_file, off, s)


def test_read_ranges(src, data_file):
    parts = src.read_ranges(RANGES)
    assert len(parts) == len(RANGES)
    for p, (off, s) in zip(parts, RANGES):
        assert isinstance(p, memoryview)
        assert bytes(p) == pread(data_file, off, s)
    futs = src.read_ranges_async(RANGES)
    for f, (off, s) in zip(futs, RANGES):
        assert bytes(f.result()) == pread(data_file, off, s)
    assert src.read_ranges([]) == []


def test_read_ranges_many_small(src, ref):
    rs = [((i * 7919) % (SIZE - 4096), 4096) for i in range(500)]
    for p, (off, s) in zip(src.read_ranges(rs), rs):
        assert p == ref[off:off + s]


def test_read_ranges_bad_range_starts_nothing(src):
    before = colio.stats()["ops_submitted"]
    with pytest.raises(ValueError):
        src.read_ranges_async([(0, 10), (SIZE + 5, 10)])
    with pytest.raises(ValueError, match="negative"):
        src.read_ranges_async([(0, 10), (-1, 10)])
    with pytest.raises(TypeError):
        src.read_ranges_async([(0, 10), "ab"])
    with pytest.raises(TypeError):
        src.read_ranges_async([(0, 1.5)])
    with pytest.raises(TypeError):
        src.read_ranges_async(5)
    assert colio.stats()["ops_submitted"] == before


def test_bad_inputs(src):
    with pytest.raises(TypeError, match="buffer protocol"):
        src.read_into("not a buffer")
    with pytest.raises(TypeError, match="buffer protocol"):
        src.read_async([1, 2, 3])
    with pytest.raises(TypeError, match="read-only"):
        src.read_into(b"immutable")
    with pytest.raises(TypeError, match="read-only"):
        ro = np.zeros(10, dtype=np.uint8)
        ro.flags.writeable = False
        src.read_async(ro)
    with pytest.raises(TypeError, match="read-only"):
        src.read_into(memoryview(bytearray(10)).toreadonly())
    with pytest.raises(ValueError, match="not C-contiguous"):
        src.read_into(np.zeros((10, 10), dtype=np.uint8)[:, ::2])
    with pytest.raises(ValueError, match="not C-contiguous"):
        src.read_async(np.zeros((10, 10), dtype=np.uint8, order="F"))
    with pytest.raises(ValueError, match="not C-contiguous"):
        src.read_into(memoryview(bytearray(10))[::2])
    with pytest.raises(ValueError, match="negative"):
        src.read_into(bytearray(10), -1)
    with pytest.raises(ValueError, match="negative"):
        src.read(-5)
    with pytest.raises(ValueError, match="negative"):
        src.read(0, -1)
    with pytest.raises(TypeError, match="integer"):
        src.read_into(bytearray(10), 1.5)
    with pytest.raises(TypeError, match="integer"):
        src.read("0")
    with pytest.raises(ValueError, match="too small"):
        src.read_into(bytearray(10), 0, size=11)
    with pytest.raises(ValueError, match="too small"):
        src.read_async(np.zeros(2, dtype=np.uint8), 0, size=3)
    with pytest.raises(TypeError):
        colio.source(42)
    with pytest.raises(TypeError):
        colio.source("/tmp/x", anon=True)  # storage options are for URLs


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        colio.source(str(tmp_path / "nope.bin"))
    assert isinstance(e.value, colio.NotFoundError)
    assert isinstance(e.value, colio.ColioError)
    assert e.value.code == -3 and e.value.errno == 2
    assert "nope.bin" in str(e.value)
    with pytest.raises(colio.ColioError, match="directory"):
        colio.source(str(tmp_path)).read(0, 10)


def test_closed_source(data_file):
    s = colio.source(data_file)
    s.close()
    s.close()  # idempotent
    assert s.closed
    for call in (lambda: s.read(), lambda: s.read_into(bytearray(4)), lambda: s.size,
                 lambda: s.read_async(bytearray(4)), lambda: s.read_ranges_async([(0, 1)])):
        with pytest.raises(colio.ClosedError):
            call()
    with pytest.raises(ValueError):  # like Python's own closed files
        s.read()


def test_context_manager(data_file, ref):
    with colio.source(data_file) as s:
        assert s.read(0, 10) == ref[:10]
    assert s.closed


def test_pathlike_and_file_url(data_file, ref):
    import pathlib
    with colio.source(pathlib.Path(data_file)) as s:
        assert s.read(1, 5) == ref[1:6]
    with colio.source("file://" + data_file) as s:
        assert s.kind == "file" and s.read(1, 5) == ref[1:6]


def test_source_sees_file_growth(tmp_path):
    p = tmp_path / "grow.bin"
    p.write_bytes(b"abc")
    with colio.source(str(p)) as s:
        assert s.size == 3
        with open(p, "ab") as f:
            f.write(b"defg")
        assert s.size == 7 and s.read() == b"abcdefg"


def test_from_buffer(ref):
    for obj in (ref, bytearray(ref), memoryview(ref), np.frombuffer(ref, dtype=np.uint8)):
        with colio.from_buffer(obj) as s:
            assert s.size == len(ref)
            assert s.read(5, 1000) == ref[5:1005]
            assert bytes(s.read_ranges([(0, 3), (len(ref) - 3, 3)])[1]) == ref[-3:]
    a = np.arange(1000, dtype=np.int64).reshape(10, 100)
    with colio.from_buffer(a) as s:
        assert s.size == a.nbytes
        assert s.read() == a.tobytes()
    with colio.from_buffer(b"") as s:
        assert s.size == 0 and s.read() == b""
    with pytest.raises(TypeError):
        colio.from_buffer(12)
    with pytest.raises(ValueError, match="C-contiguous"):
        colio.from_buffer(np.zeros((4, 4))[:, 1])


def test_from_buffer_locks_bytearray(ref):
    ba = bytearray(b"x" * 100)
    s = colio.from_buffer(ba)
    with pytest.raises(BufferError):
        ba.extend(b"more")  # the library points into it: it must not move
    s.close()
    ba.extend(b"more")


def test_buffer_kept_alive_until_done():
    gate = threading.Event()

    def slow(buf, off):
        gate.wait(5)
        buf[:] = b"z" * len(buf)
        return len(buf)

    with colio.from_callable(slow, 1 << 16) as s:
        arr = np.zeros(4096, dtype=np.uint8)
        ref = weakref.ref(arr)
        base_addr = arr.ctypes.data
        fut = s.read_async(arr)
        del arr
        gc.collect()
        assert ref() is not None, "the destination was freed while the read was in flight"
        gate.set()
        assert fut.result(5) == 4096
        del fut
        gc.collect()
        assert ref() is None, "the destination leaked after completion"
        assert base_addr


def test_bytearray_cannot_be_resized_while_in_flight():
    gate = threading.Event()

    def slow(buf, off):
        gate.wait(5)
        return len(buf)

    with colio.from_callable(slow, 1 << 16) as s:
        ba = bytearray(1000)
        fut = s.read_async(ba)
        with pytest.raises(BufferError):
            ba.extend(b"x")
        gate.set()
        fut.result(5)
        time.sleep(0.01)
        ba.extend(b"x")  # released once done


def test_pickle_sources(data_file, ref):
    with colio.source(data_file) as s:
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.read(3, 10) == ref[3:13]
        s2.close()
    with colio.from_buffer(ref[:100]) as s:
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.read() == ref[:100]
        s2.close()


def test_small_read_async_of_a_file_completes_inline(src, ref):
    # At or under small_read_threshold a file read runs on the caller: its
    # future is done on return, with the bytes in place.
    limit = colio.get_config()["small_read_threshold"]
    buf = bytearray(min(4096, limit))
    before = colio.stats()["ops_inline"]
    fut = src.read_async(buf, 100)
    assert fut.done() and fut.result() == len(buf) and fut.nbytes == len(buf)
    assert bytes(buf) == ref[100:100 + len(buf)]
    assert colio.stats()["ops_inline"] > before
    with pytest.raises(ValueError):
        src.read_async(buf, len(ref) + 1)  # past the end: raised at once, as before
    colio.set_config(small_read_threshold=0)  # inline off: the pool path, same bytes
    try:
        buf2 = bytearray(4096)
        assert src.read_async(buf2, 7).result() == 4096 and bytes(buf2) == ref[7:4103]
    finally:
        colio.set_config(small_read_threshold=limit)
