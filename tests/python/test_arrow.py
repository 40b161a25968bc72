"""Arrow without copies: Source.read_ranges_arrow / read_arrow through the
Arrow PyCapsule interface, and Sink.write_async of Arrow arrays.

Zero copy is proven from outside colio: a callback source records the
addresses it is asked to fill, and they are the addresses of the buffers
pyarrow (and nanoarrow, polars, numpy) see; a callback sink records the
address it is handed, and it is the written object's own data address.
Data are compared with os.pread. Leaks are measured with glibc's mallinfo2
and /proc/self/statm.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time

import pytest

from conftest import SIZE, pread

import colio
from colio import _lib

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")


# ---- helpers ----------------------------------------------------------------------

class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


_libc = ctypes.CDLL(None)
_mallinfo2 = getattr(_libc, "mallinfo2", None)
if _mallinfo2 is not None:
    _mallinfo2.restype = _MallInfo2
    _mallinfo2.argtypes = []


def heap_bytes() -> int:
    """Bytes in use by malloc (small and mmapped chunks)."""
    mi = _mallinfo2()
    return mi.uordblks + mi.hblkhd


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


needs_mallinfo2 = pytest.mark.skipif(_mallinfo2 is None, reason="needs glibc mallinfo2")


def address_of(mv) -> int:
    """The address of a writable buffer (a memoryview colio handed us)."""
    c = ctypes.c_char.from_buffer(mv)
    addr = ctypes.addressof(c)
    del c
    return addr


def recording_source(ref: bytes):
    """A callable source over ref that records (address, size) of every
    buffer it is asked to fill."""
    calls = []
    lock = threading.Lock()

    def read_into(buf, offset):
        n = min(len(buf), len(ref) - offset)
        with lock:
            calls.append((address_of(buf), len(buf)))
        buf[:n] = ref[offset:offset + n]
        return n

    return colio.from_callable(read_into, len(ref)), calls


class RecordingSink:
    """A C callback sink (through the C ABI directly) that records the
    address, size and offset of every write and keeps a copy of the bytes."""

    def __init__(self):
        self.calls = []
        self.data = bytearray()
        self.lock = threading.Lock()
        self._fn = _lib.WRITE_FN(self._write)
        cb = _lib.SinkCallbacks()
        cb.struct_size = ctypes.sizeof(cb)
        cb.write = self._fn
        cb.flags = _lib.CALLBACK_CONCURRENT
        h = ctypes.c_void_p()
        L = _lib.load()
        assert L.colio_sink_from_callbacks(ctypes.byref(cb), ctypes.byref(h)) == 0
        from colio._sink import Sink
        self.sink = Sink(h.value, "callable", None, keep=(self._fn,), name="recording")

    def _write(self, ctx, buf, size, offset):
        b = ctypes.string_at(buf, size)
        with self.lock:
            self.calls.append((buf, size, offset))
            end = offset + size
            if len(self.data) < end:
                self.data.extend(b"\0" * (end - len(self.data)))
            self.data[offset:end] = b
        return size


RANGES = [(0, 1 << 20), (1000, 100), (5, 0), (SIZE - 10, 500), (2 << 20, (1 << 20) + 77),
          (77, 1), (SIZE, 64), (123456, 3)]


def expected(path, ranges):
    return [pread(path, off, max(0, min(size, SIZE - off))) for off, size in ranges]


# ---- reading ----------------------------------------------------------------------

def test_read_ranges_arrow_pyarrow_zero_copy(src, data_file):
    d = src.read_ranges_arrow(RANGES)
    assert d.type == "large_binary" and len(d) == len(RANGES)
    want = expected(data_file, RANGES)
    a = pa.array(d)
    assert a.type == pa.large_binary() and a.null_count == 0
    assert a.to_pylist() == want  # data equal the pread reference
    # pyarrow points at colio's buffer: the same address, no copy.
    assert a.buffers()[2].address == d.address
    assert d.offsets == [0] + list(np.cumsum([len(w) for w in want]))
    # Callable more than once: each call is an independent reference.
    b = pa.array(d)
    assert b.buffers()[2].address == d.address
    d.close()
    del a
    gc.collect()
    assert b.to_pylist() == want  # b's reference keeps the memory
    c = pa.array(b)  # pyarrow's own re-export works too
    assert c.buffers()[2].address == b.buffers()[2].address


def test_read_arrow_buffer_views(src, data_file):
    off, size = 4096, (1 << 20) + 3
    u = src.read_arrow(off, size)
    assert u.type == "uint8" and len(u) == size == u.nbytes
    ref = pread(data_file, off, size)
    a = pa.array(u)
    assert a.type == pa.uint8() and a.buffers()[1].address == u.address
    mv = memoryview(u.buffer)
    assert mv.nbytes == size and mv.tobytes() == ref
    arr = np.frombuffer(u.buffer, dtype=np.uint8)
    assert arr.ctypes.data == u.address  # numpy sees the same memory
    assert arr.tobytes() == ref
    u.close()  # the views hold their own reference
    gc.collect()
    assert mv.tobytes() == ref and arr[:10].tobytes() == ref[:10]
    assert a.to_numpy().tobytes() == ref
    # Short at the end; empty at the end; None: to the end.
    assert len(src.read_arrow(SIZE - 5, 100)) == 5
    assert len(src.read_arrow(SIZE, 100)) == 0
    assert src.read_arrow(SIZE - 7).to_bytes() == pread(data_file, SIZE - 7, 7)
    assert len(src.read_ranges_arrow([])) == 0


def test_zero_copy_proven_by_callback_source(ref):
    s, calls = recording_source(ref)
    with s:
        ranges = [(100, 1000), (2_000_000, 1_000_000), (50, 7)]
        d = s.read_ranges_arrow(ranges)
        a = pa.array(d)
        assert a.to_pylist() == [ref[o:o + n] for o, n in ranges]
        data = a.buffers()[2].address
        offs = a.buffers()[1].to_pybytes()
        offs = np.frombuffer(offs, dtype=np.int64)
        total = int(offs[-1])
        # Every callback filled memory inside pyarrow's buffer, together
        # exactly all of it, and each element starts where a call started.
        assert all(data <= p and p + n <= data + total for p, n in calls)
        assert sum(n for _, n in calls) == total
        starts = {p for p, _ in calls}
        assert all(data + int(offs[i]) in starts for i in range(len(ranges)))

        calls.clear()
        u = s.read_arrow(12345, 5000)
        b = pa.array(u)
        assert calls == [(b.buffers()[1].address, 5000)]
        assert b.to_numpy().tobytes() == ref[12345:17345]


def test_nanoarrow_and_polars(src, data_file):
    na = pytest.importorskip("nanoarrow")
    pl = pytest.importorskip("polars")
    ranges = [(0, 100), (100, 1000), (5000, 3)]
    want = expected(data_file, ranges)
    d = src.read_ranges_arrow(ranges)
    n = na.c_array(d)
    assert n.length == 3
    assert n.buffers[2] == d.address  # nanoarrow: no copy
    assert na.Array(d).to_pylist() == want
    s = pl.Series(d)
    assert s.dtype == pl.Binary and s.to_list() == want
    # Polars stores binary as views: it builds its own 16-byte view per
    # element, but keeps colio's buffer for the value bytes (not copied).
    views = s.to_arrow(compat_level=pl.CompatLevel.newest())
    if pa.types.is_binary_view(views.type):
        assert d.address in [b.address for b in views.buffers()[2:] if b is not None]
    u = src.read_arrow(0, 4096)
    su = pl.Series(u)
    assert su.dtype == pl.UInt8
    assert su.to_numpy().ctypes.data == u.address  # polars: no copy for uint8
    assert su.to_numpy().tobytes() == pread(data_file, 0, 4096)


def test_capsules(src):
    d = src.read_arrow(0, 100)
    sc, ac = d.__arrow_c_array__()
    assert _capsule_name(sc) == b"arrow_schema" and _capsule_name(ac) == b"arrow_array"
    sc2, ac2 = d.__arrow_c_array__(requested_schema=None)
    assert _capsule_pointer(ac, b"arrow_array") != _capsule_pointer(ac2, b"arrow_array")
    a = pa.Array._import_from_c_capsule(sc2, ac2)  # consumed: its struct is released
    assert _released(ac2)
    del sc2, ac2  # the destructors find it moved and do not release it again
    gc.collect()
    assert a.to_numpy().tobytes() == src.read(0, 100)
    del sc, ac  # unconsumed: the destructor releases it
    d.close()
    with pytest.raises(ValueError):
        d.__arrow_c_array__()
    assert "closed" in repr(d)


def _capsule_name(cap):
    f = ctypes.pythonapi.PyCapsule_GetName
    f.argtypes, f.restype = [ctypes.py_object], ctypes.c_char_p
    return f(cap)


def _capsule_pointer(cap, name):
    f = ctypes.pythonapi.PyCapsule_GetPointer
    f.argtypes, f.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    return f(cap, name)


def _released(cap) -> bool:
    return not _lib.ArrowArray.from_address(_capsule_pointer(cap, b"arrow_array")).release


BIG = 64 << 20  # above glibc's largest mmap threshold: the heap figures show it exactly


@needs_mallinfo2
def test_unconsumed_capsule_frees_its_memory(data_file):
    big = colio.from_buffer(bytes(BIG))
    gc.collect()
    h0 = heap_bytes()
    d = big.read_arrow(0, BIG)
    caps = d.__arrow_c_array__()
    d.close()  # only the capsule holds the memory now
    gc.collect()
    assert heap_bytes() - h0 >= BIG
    del caps
    gc.collect()
    assert heap_bytes() - h0 < BIG // 8
    big.close()


@needs_mallinfo2
def test_release_from_another_thread(src, data_file):
    big = colio.from_buffer(bytes(BIG))
    gc.collect()
    h0 = heap_bytes()
    d = big.read_arrow(0, BIG)
    a = pa.array(d)
    b = pa.array(d)
    d.close()
    made_on = threading.get_ident()
    released_on = []
    box = [a, b]
    del a, b

    def drop():
        released_on.append(threading.get_ident())
        assert box[0].buffers()[1].size >= BIG
        box.clear()  # the last references: released on this thread
        gc.collect()

    t = threading.Thread(target=drop)
    t.start()
    t.join()
    assert released_on and released_on[0] != made_on
    assert heap_bytes() - h0 < BIG // 8  # freed by a release on the other thread
    big.close()
    # And ArrowData itself, closed on another thread while pyarrow reads it.
    d = src.read_ranges_arrow([(0, 1000), (10, 10)])
    a = pa.array(d)
    t = threading.Thread(target=d.close)
    t.start()
    t.join()
    assert a.to_pylist() == expected(data_file, [(0, 1000), (10, 10)])


def test_errors(src):
    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
        src.read_ranges_arrow([(0, 10), (SIZE + 1, 10)])
    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
        src.read_arrow(SIZE + 1, 10)
    with pytest.raises(colio.InvalidArgumentError):
        src.read_arrow(-1, 10)
    with pytest.raises(TypeError):
        src.read_ranges_arrow([(0,)])

    def boom(buf, offset):
        if offset >= 1000:
            raise KeyError("no such block")
        buf[:] = b"x" * len(buf)
        return len(buf)

    with colio.from_callable(boom, 1 << 20) as s:
        with pytest.raises(KeyError, match="no such block"):
            s.read_ranges_arrow([(0, 10), (2000, 10)])
        assert s.read_arrow(0, 100).to_bytes() == b"x" * 100


# ---- writing ----------------------------------------------------------------------

def test_sink_zero_copy_from_bytes_numpy_pyarrow():
    rec = RecordingSink()
    snk = rec.sink
    raw = os.urandom(10000)
    nums = np.arange(1000, dtype=np.int64)
    ints = pa.array(np.arange(3000, dtype=np.int32))
    sliced = ints.slice(100, 500)  # an offset into its buffer
    strs = pa.array(["alpha", "beta", "gamma", "delta"]).slice(1, 2)
    lbin = pa.array([b"xy", b"", b"zzz"], pa.large_binary())
    fsb = pa.array([b"abcd", b"efgh"], pa.binary(4))
    ts = pa.array(np.arange(10).astype("datetime64[us]"))
    cases = [
        (raw, ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value, raw),
        (nums, nums.ctypes.data, nums.tobytes()),
        (ints, ints.buffers()[1].address, ints.to_numpy().tobytes()),
        (sliced, sliced.buffers()[1].address + 100 * 4, sliced.to_numpy().tobytes()),
        (strs, strs.buffers()[2].address + 5, b"betagamma"),
        (lbin, lbin.buffers()[2].address, b"xyzzz"),
        (fsb, fsb.buffers()[1].address, b"abcdefgh"),
        (ts, ts.buffers()[1].address, ts.to_numpy().tobytes()),
    ]
    futs = []
    for obj, _, _ in cases:
        futs.append(snk.write_async(obj))
    for f, (obj, addr, want) in zip(futs, cases):
        assert f.result() == len(want)
    snk.flush()
    # Each write was handed the object's own memory, at its offset.
    by_offset = {off: (p, n) for p, n, off in rec.calls}
    for f, (obj, addr, want) in zip(futs, cases):
        p, n = by_offset[f.offset]
        assert (p, n) == (addr, len(want)), type(obj)
        assert bytes(rec.data[f.offset:f.offset + n]) == want
    # colio's own ArrowData is an __arrow_c_array__ object too.
    s = colio.from_buffer(raw)
    d = s.read_ranges_arrow([(10, 20), (100, 5)])
    f = snk.write_async(d)
    assert f.result() == 25
    snk.flush()
    p, n, off = rec.calls[-1]
    assert (p, n) == (d.address, 25) and bytes(rec.data[off:off + n]) == raw[10:30] + raw[100:105]
    snk.close()
    s.close()


def test_sink_refuses_what_it_cannot_write_raw():
    snk = colio.sink(None)
    with pytest.raises(colio.InvalidArgumentError, match="nulls"):
        snk.write_async(pa.array([1, None, 3]))
    with pytest.raises(TypeError, match="format"):
        snk.write_async(pa.array([True, False]))
    with pytest.raises(TypeError):
        snk.write_async(pa.array([[1], [2, 3]]))
    assert snk.write(pa.array([], pa.int64())) == 0
    assert snk.write(pa.array([1, None, 3]).slice(2, 1)) == 8  # no nulls in this slice
    snk.close()


# ---- leaks ------------------------------------------------------------------------

@needs_mallinfo2
def test_leak_100k_exports(data_file):
    """100,000 exports, each imported by pyarrow (and every 4th one also
    through an extra capsule that nobody consumes) and released: heap and
    RSS grow by less than 2 MiB between the 10,000th and the 100,000th."""
    warmup, total, limit = 10_000, 100_000, 2 << 20
    src = colio.from_buffer(open(data_file, "rb").read(1 << 20))
    import_array = pa.Array._import_from_c_capsule
    t0 = time.perf_counter()
    h0 = r0 = 0
    for i in range(1, total + 1):
        off = (i * 37) % (1 << 19)
        if i % 2:
            d = src.read_ranges_arrow([(off, 64 + i % 300), (off + 4099, 100)])
        else:
            d = src.read_arrow(off, 64 + i % 300)
        a = import_array(*d.__arrow_c_array__())
        if i % 4 == 0:
            d.__arrow_c_array__()  # dropped unconsumed
        assert len(a) == len(d)
        del a, d
        if i == warmup:
            gc.collect()
            h0, r0 = heap_bytes(), rss_bytes()
    gc.collect()
    dh, dr = heap_bytes() - h0, rss_bytes() - r0
    secs = time.perf_counter() - t0
    print(f"\n     arrow leak (Python): {total} exports in {secs:.1f} s; growth from "
          f"{warmup} to {total}: heap {dh:+d} B, RSS {dr // 1024:+d} KiB (limit {limit // 1024} KiB)")
    src.close()
    assert dh < limit
    assert dr < limit
