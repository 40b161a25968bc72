"""Callable sources: results, concurrency, exceptions from callbacks, and
callbacks that call back into colio."""

from __future__ import annotations

import errno
import pickle
import threading
import time

import pytest

import colio


class Counting:
    """A read_into over ref that records concurrency and threads."""

    def __init__(self, ref, delay=0.0):
        self.ref = ref
        self.delay = delay
        self.lock = threading.Lock()
        self.in_flight = self.peak = self.calls = 0
        self.threads = set()

    def __call__(self, buf, off):
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.threads.add(threading.get_ident())
        try:
            if self.delay:
                time.sleep(self.delay)
            chunk = self.ref[off:off + len(buf)]
            buf[:len(chunk)] = chunk
            return len(chunk)
        finally:
            with self.lock:
                self.in_flight -= 1


def test_from_callable_every_call(ref):
    fn = Counting(ref)
    with colio.from_callable(fn, len(ref)) as s:
        assert s.size == len(ref) and s.kind == "callable"
        assert s.read() == ref
        assert s.read(100, 50) == ref[100:150]
        b = bytearray(1000)
        assert s.read_into(b, 7) == 1000 and b == ref[7:1007]
        assert s.read_async(b, 9).result(5) == 1000 and b == ref[9:1009]
        parts = s.read_ranges([(0, 10), (len(ref) - 5, 10), (len(ref), 3)])
        assert [bytes(p) for p in parts] == [ref[:10], ref[-5:], b""]
    assert threading.get_ident() not in fn.threads, "callbacks must run on colio's workers"


def test_short_reads_are_completed(ref):
    def dribble(buf, off):  # at most 100 bytes per call
        n = min(len(buf), 100)
        buf[:n] = ref[off:off + n]
        return n

    with colio.from_callable(dribble, len(ref)) as s:
        assert s.read(5, 10_000) == ref[5:10_005]


def test_callable_ending_early(ref):
    # Short only at the end of the source (issue 13.1; test_short_reads.py).
    with colio.from_callable(lambda buf, off: 0, 1000) as s:
        with pytest.raises(colio.ColioIOError, match="stopped at offset 0"):
            s.read_into(bytearray(100), 0)


def test_callable_concurrency(ref):
    fn = Counting(ref, delay=0.005)
    with colio.from_callable(fn, len(ref)) as s:
        s.read_ranges([(i * 4096, 4096) for i in range(32)])
    assert fn.peak > 1
    fn = Counting(ref, delay=0.002)
    with colio.from_callable(fn, len(ref), concurrent=False) as s:
        s.read_ranges([(i * 4096, 4096) for i in range(16)])
    assert fn.peak == 1, "concurrent=False must serialise the calls"


class Boom(Exception):
    pass


def test_exceptions_fail_their_future_with_type_and_message(ref):
    def failing(buf, off):
        if off >= 1000:
            raise Boom(f"no bytes at {off}")
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    with colio.from_callable(failing, len(ref)) as s:
        with pytest.raises(Boom, match="no bytes at 5000"):
            s.read(5000, 10)
        f = s.read_async(bytearray(10), 2000)
        with pytest.raises(Boom, match="no bytes at 2000"):
            f.result(5)
        assert isinstance(f.exception(), Boom)
        futs = s.read_ranges_async([(0, 10), (3000, 10), (10, 10)])
        assert bytes(futs[0].result()) == ref[:10]
        with pytest.raises(Boom, match="3000"):
            futs[1].result()
        assert bytes(futs[2].result()) == ref[10:20]  # only its own future fails
        assert s.read(0, 100) == ref[:100]  # the source still works


@pytest.mark.parametrize("exc", [FileNotFoundError(errno.ENOENT, "gone"), PermissionError("denied"),
                                 KeyError("k"), MemoryError(), ZeroDivisionError("x")])
def test_exception_types_survive(exc):
    def failing(buf, off):
        raise exc

    with colio.from_callable(failing, 100) as s:
        with pytest.raises(type(exc)) as got:
            s.read_async(bytearray(10)).result(5)
        assert got.value is exc


def test_bad_return_values():
    with colio.from_callable(lambda buf, off: "x", 100) as s:
        with pytest.raises(TypeError, match="number of bytes"):
            s.read(0, 10)
    with colio.from_callable(lambda buf, off: len(buf) + 1, 100) as s:
        with pytest.raises(ValueError, match="returned 11"):
            s.read(0, 10)
    with colio.from_callable(lambda buf, off: -1, 100) as s:
        with pytest.raises(ValueError):
            s.read(0, 10)
    with pytest.raises(TypeError):
        colio.from_callable("not callable", 10)
    with pytest.raises(ValueError):
        colio.from_callable(lambda b, o: 0, -1)


def test_nested_calls_from_callbacks(ref, data_file):
    inner = colio.source(data_file)

    def through_colio(buf, off):  # a callback that waits on colio futures
        return inner.read_async(buf, off).result()

    with colio.from_callable(through_colio, len(ref)) as outer:
        parts = outer.read_ranges([(i * 65536, 65536) for i in range(40)])
        for i, p in enumerate(parts):
            assert p == ref[i * 65536:(i + 1) * 65536]
    inner.close()


def _module_level_reader(buf, off):
    buf[:] = bytes((off + i) % 256 for i in range(len(buf)))
    return len(buf)


def test_pickle_callable_source():
    with colio.from_callable(_module_level_reader, 1000) as s:
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.read(250, 10) == bytes(range(250, 256)) + bytes(range(0, 4))
        s2.close()


def test_fast_callable_runs_small_reads_inline(ref):
    fn = Counting(ref)
    with colio.from_callable(fn, len(ref), fast=True) as s:
        s.read_async(bytearray(100), 0).result(5)
    assert threading.get_ident() in fn.threads


def test_read_into_gets_a_plain_writable_view_of_the_part(ref):
    # The workers hand read_into a view made from prebuilt arguments
    # (colio._workers): it must be what any buffer user expects, over
    # exactly the part, and the bytes it takes must land in the caller's
    # buffer. A short answer continues on a view of the rest.
    seen = []

    def reader(buf, off):
        seen.append((buf.format, buf.ndim, buf.readonly, buf.nbytes, off))
        n = min(len(buf), 3000)
        buf[:n] = ref[off:off + n]
        return n

    with colio.from_callable(reader, len(ref)) as s:
        b = bytearray(7000)
        assert s.read_async(b, 11).result(5) == 7000
    assert b == ref[11:7011]
    assert seen == [("B", 1, False, 7000, 11), ("B", 1, False, 4000, 3011),
                    ("B", 1, False, 1000, 6011)]


def test_read_into_may_return_any_integer_and_keep_an_export(ref):
    np = pytest.importorskip("numpy")
    kept = []

    def reader(buf, off):
        a = np.frombuffer(buf, dtype=np.uint8)  # an export of buf, kept past the call
        a[:] = np.frombuffer(ref, dtype=np.uint8, count=len(buf), offset=off)
        kept.append(a)
        return np.int64(len(buf))

    with colio.from_callable(reader, len(ref)) as s:
        bufs = [bytearray(4096) for _ in range(20)]
        futs = [s.read_async(b, i * 4096) for i, b in enumerate(bufs)]
        assert [f.result(5) for f in futs] == [4096] * 20
    for i, b in enumerate(bufs):
        assert b == ref[i * 4096:(i + 1) * 4096]
