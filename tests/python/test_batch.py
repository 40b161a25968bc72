"""One C call per batch, batched completions, small calls at the cost of a
call (issue 15.1, 15.3).

Before issue 15, read_ranges made a C future per range and registered a
notifier callback for each, and every colio.Future built a Condition at
birth: the call-counting tests and the Condition checks below failed then.
Data checks compare with os.pread."""

from __future__ import annotations

import concurrent.futures as cf
import os
import random
import threading
import time

import pytest

import colio
from colio import _lib

from conftest import SIZE, pread


def _sources(data_file, ref):
    yield "file", colio.source(data_file)
    yield "memory", colio.from_buffer(ref)

    def read_into(buf, off):
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    yield "callable", colio.from_callable(read_into, len(ref))


def _random_ranges(rng, n, size=SIZE, big=False):
    out = []
    for _ in range(n):
        k = rng.randrange(6)
        if k == 0:
            out.append((size, rng.randrange(10)))           # at the end
        elif k == 1:
            out.append((size - rng.randrange(100), 300))    # across the end
        elif k == 2:
            out.append((rng.randrange(size), 0))
        elif k == 3 and big:
            out.append((rng.randrange(size), rng.randrange(1 << 16, 1 << 19)))
        else:
            out.append((rng.randrange(size), rng.randrange(1, 9000)))
    return out


def _check(data_file, ranges, got):
    assert len(got) == len(ranges)
    for (o, s), mv in zip(ranges, got):
        assert isinstance(mv, memoryview) and mv.readonly
        assert bytes(mv) == pread(data_file, o, s), (o, s)


@pytest.mark.parametrize("n", [0, 1, 2, 37, 10_000])
def test_random_batches_match_pread(data_file, ref, n):
    rng = random.Random(n)
    for kind, s in _sources(data_file, ref):
        with s:
            for big in (False, True):
                if n == 10_000 and (big or kind == "callable"):
                    continue  # the large shapes run at 37
                ranges = _random_ranges(rng, n, big=big)
                _check(data_file, ranges, s.read_ranges(ranges))
                futs = s.read_ranges_async(ranges)
                _check(data_file, ranges, [f.result(30) for f in futs])
                assert all(f.done() for f in futs)
    # 10,000 ranges of a callable, one call each way
    if n == 10_000:
        (_, s), = [x for x in _sources(data_file, ref) if x[0] == "callable"]
        with s:
            ranges = _random_ranges(rng, n)
            _check(data_file, ranges, s.read_ranges(ranges))
            _check(data_file, ranges, [f.result(60) for f in s.read_ranges_async(ranges)])


def test_past_the_end_starts_nothing(data_file, ref):
    for kind, s in _sources(data_file, ref):
        with s:
            with pytest.raises(colio.InvalidArgumentError, match="past the end"):
                s.read_ranges([(0, 10), (SIZE + 1, 1)])
            with pytest.raises(colio.InvalidArgumentError, match="past the end"):
                s.read_ranges_async([(0, 10), (SIZE + 1, 1)])
            assert s.read_ranges([]) == [] and s.read_ranges_async([]) == []
            assert bytes(s.read_ranges([(SIZE, 5)])[0]) == b""


def test_bad_ranges_are_named(src):
    with pytest.raises(TypeError, match="range 1"):
        src.read_ranges([(0, 1), (2, 3, 4)])
    with pytest.raises(TypeError, match="integer"):
        src.read_ranges([(0, 1.5)])
    with pytest.raises(colio.InvalidArgumentError, match="range 0 offset"):
        src.read_ranges_async([(-1, 5)])
    with pytest.raises(TypeError):
        src.read_ranges(5)
    np = pytest.importorskip("numpy")
    got = src.read_ranges([(np.int64(3), np.int32(4))])  # __index__ integers are fine
    assert bytes(got[0]) == bytes(src.read(3, 4))


class _Counting:
    """Counts the library calls made through _lib.L."""

    def __init__(self, monkeypatch):
        self.calls = {}
        L = _lib.load()
        for name in _lib.FUNCTIONS:
            fn = getattr(L, name)

            def wrap(*a, _fn=fn, _name=name):
                self.calls[_name] = self.calls.get(_name, 0) + 1
                return _fn(*a)
            monkeypatch.setattr(L, name, wrap)

    def total(self):
        return sum(self.calls.values())


def test_read_ranges_is_one_call(data_file, monkeypatch):
    """Before: a colio_readv_async_ex, then per range a done check and a
    wait or an on_done registration, and a free: thousands of calls."""
    s = colio.source(data_file)
    ranges = [(i * 1000, 4096) for i in range(1000)]
    s.read_ranges(ranges[:2])  # loads and warms up
    c = _Counting(monkeypatch)
    got = s.read_ranges(ranges)
    assert c.total() <= 4, c.calls
    monkeypatch.undo()
    _check(data_file, ranges, got)
    s.close()


def test_read_ranges_async_completions_come_in_batches(ref, monkeypatch):
    """A source with latency: one submission and one notifier registration
    for the whole batch, not one per range."""
    def read_into(buf, off):
        time.sleep(0.001)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    s = colio.from_callable(read_into, len(ref))
    ranges = [(i * 3000, 2000) for i in range(300)]
    s.read_ranges_async(ranges[:2])[1].result(10)
    c = _Counting(monkeypatch)
    futs = s.read_ranges_async(ranges)
    submitted = dict(c.calls)
    got = [bytes(f.result(30)) for f in cf.as_completed(futs, timeout=30)]
    assert len(got) == 300
    # colio_readv_packed when every range is small, else colio_readv_batch
    assert submitted.get("colio_readv_batch", 0) + submitted.get("colio_readv_packed", 0) == 1
    assert c.calls.get("colio_future_on_done", 0) <= 1, c.calls
    assert c.total() < 100, c.calls  # per-range waits happen only for ranges not yet delivered
    monkeypatch.undo()
    for (o, n), f in zip(ranges, futs):
        assert bytes(f.result()) == ref[o:o + n]
    s.close()


def test_done_futures_have_no_condition(src, tmp_path):
    """A future nobody waited on completes without a Condition (before,
    every colio.Future made one at birth)."""
    f = src.read_async(bytearray(4096), 100)
    assert f.done() and f.result() == 4096
    futs = src.read_ranges_async([(0, 10), (50, 10)])
    for g in [f, *futs]:
        assert g.done()
        assert "_cv" not in vars(g) and "_condition" not in vars(g)
    k = colio.sink(str(tmp_path / "out.bin"))
    w = k.write_async(b"abcd" * 1024, 0)
    assert w.done() and w.result() == 4096 and w.offset == 0
    assert "_cv" not in vars(w)
    k.close()
    assert open(tmp_path / "out.bin", "rb").read() == b"abcd" * 1024


def test_light_futures_still_work_with_the_standard_tools(ref):
    gate = threading.Event()

    def read_into(buf, off):
        gate.wait(10)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    s = colio.from_callable(read_into, len(ref))
    futs = s.read_ranges_async([(i * 100, 100) for i in range(20)])
    seen = []
    futs[3].add_done_callback(lambda f: seen.append(bytes(f.result())))
    # 12.9: a done-callback that waits on another colio future of the batch
    futs[0].add_done_callback(lambda f: seen.append(bytes(futs[19].result(10))))
    done, not_done = cf.wait(futs, timeout=0.05)
    assert not done
    gate.set()
    done, not_done = cf.wait(futs, timeout=10)
    assert not not_done
    deadline = time.monotonic() + 10
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(seen) == sorted([ref[300:400], ref[1900:2000]])
    s.close()


def test_errors_belong_to_their_ranges(ref):
    def read_into(buf, off):
        if off <= 5000 < off + len(buf):
            raise KeyError(f"no bytes at {off}")
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    s = colio.from_callable(read_into, len(ref))
    ranges = [(0, 100), (4990, 100), (6000, 100), (4000, 2000)]
    with pytest.raises(KeyError, match="no bytes at 4990"):
        s.read_ranges(ranges)
    futs = s.read_ranges_async(ranges)
    assert bytes(futs[0].result(10)) == ref[:100]
    assert bytes(futs[2].result(10)) == ref[6000:6100]
    for i, off in ((1, 4990), (3, 4000)):
        with pytest.raises(KeyError, match=f"no bytes at {off}"):
            futs[i].result(10)
    s.close()


def test_cancel_one_range():
    gate = threading.Event()
    started = threading.Event()

    def read_into(buf, off):
        started.set()
        gate.wait(10)
        buf[:] = bytes(len(buf))
        return len(buf)

    s = colio.from_callable(read_into, 1 << 20, concurrent=False)  # one at a time
    futs = s.read_ranges_async([(i * 10, 10) for i in range(5)])
    assert started.wait(10)
    assert futs[3].cancel() is True
    assert futs[3].cancelled() and futs[3].done()
    with pytest.raises(cf.CancelledError):
        futs[3].result()
    gate.set()
    for i in (0, 1, 2, 4):
        assert futs[i].result(10).nbytes == 10
    s.close()


def test_small_calls_match_pread(data_file, tmp_path):
    s = colio.source(data_file)
    rng = random.Random(7)
    buf = bytearray(4096)
    for _ in range(200):
        o = rng.randrange(SIZE + 1)
        n = s.read_into(buf, o)
        assert bytes(buf[:n]) == pread(data_file, o, 4096)
        assert s.read(o, 100) == pread(data_file, o, 100)
        assert s.read_async(buf, o).result() == len(pread(data_file, o, 4096))
    assert s.read(5, 1) == pread(data_file, 5, 1) and s.read(5, 0) == b""
    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
        s.read_into(buf, SIZE + 1)
    s.close()
    with pytest.raises(colio.ClosedError):
        s.read_into(buf, 0)
    p = str(tmp_path / "w.bin")
    k = colio.sink(p)
    chunks = [rng.randbytes(rng.randrange(1, 5000)) for _ in range(100)]
    futs = [k.write_async(c) for c in chunks]          # appends, in call order
    at = sum(len(c) for c in chunks)
    assert k.write(b"tail", at) == 4
    futs.append(k.write_async(bytearray(b"end!"), at + 4))
    assert [f.result() for f in futs] == [len(c) for c in chunks] + [4]
    k.close()
    assert open(p, "rb").read() == b"".join(chunks) + b"tail" + b"end!"
