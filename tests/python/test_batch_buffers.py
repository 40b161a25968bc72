"""Write data straight from NumPy arrays and memoryviews into ctypes
(colio._buffers.readable, issue 15.3: c_char.from_buffer on the object
itself, its nbytes the size), and every kind that path must refuse or
hand on: read-only, not contiguous, empty, multi-dimensional, wider
dtypes, Arrow-capable types. Bytes are read back with open()."""

from __future__ import annotations

import pytest

import colio
from colio import _buffers

np = pytest.importorskip("numpy")


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_arrays_and_views_write_their_bytes(tmp_path):
    rng = np.random.default_rng(155)
    base = rng.integers(0, 256, size=1 << 16, dtype=np.uint8)
    ro = base[:777].copy()
    ro.flags.writeable = False
    cases = [
        base[100:4196],                                # a slice
        base[:4096].reshape(64, 64),                   # 2-D, C-contiguous
        base[:8000].view(np.float64),                  # a wider dtype: nbytes, not len
        base[:6000].view(np.int32).reshape(3, 500),
        ro,                                            # read-only: the general path
        memoryview(base[5:105]),                       # a writable memoryview
        memoryview(bytes(base[:300])),                 # a read-only one
        memoryview(bytearray(base[:64])).cast("I"),    # a memoryview of another format
        np.ascontiguousarray(base[::2][:1000]),
    ]
    path = str(tmp_path / "a.bin")
    want = b""
    with colio.sink(path, "w") as s:
        for c in cases:
            want += bytes(memoryview(c).cast("B"))
            assert s.write_async(c).result() == memoryview(c).nbytes
            want += bytes(memoryview(c).cast("B"))
            assert s.write(c) == memoryview(c).nbytes
    assert _read(path) == want


def test_what_cannot_go_straight_is_refused_or_handed_on(tmp_path):
    a = np.arange(64, dtype=np.uint8).reshape(8, 8)
    with colio.sink(str(tmp_path / "r.bin"), "w") as s:
        with pytest.raises(colio.InvalidArgumentError, match="not C-contiguous"):
            s.write_async(a[:, ::2])
        with pytest.raises(colio.InvalidArgumentError, match="not C-contiguous"):
            s.write(np.asfortranarray(a))
        with pytest.raises(colio.InvalidArgumentError, match="not C-contiguous"):
            s.write(memoryview(bytearray(16))[::2])
        assert s.write_async(np.zeros(0, np.uint8)).result() == 0
        assert s.write(memoryview(b"")) == 0
    pin, addr, n = _buffers.readable(a)
    assert n == 64 and addr == a.ctypes.data  # the array's own memory, no copy


def test_arrow_types_keep_their_path(tmp_path):
    pa = pytest.importorskip("pyarrow")
    arr = pa.array(np.arange(100, dtype=np.uint8))
    path = str(tmp_path / "w.bin")
    with colio.sink(path, "w") as s:
        s.write(arr)
    assert _read(path) == bytes(range(100))
