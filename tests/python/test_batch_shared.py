"""Batches of small ranges of fast sources (issue 15.1): the caller and a
few pool workers read them in chunks inside the submitting call, and the
futures come back finished. Before, the caller read a fixed eighth of the
batch and returned; the rest were still running (the done() checks below
failed then for large batches). Data checks compare with os.pread."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import random
import threading

import pytest

import colio

from conftest import SIZE, pread


@pytest.fixture(params=[1, 2, 8], ids=lambda t: f"threads={t}")
def threads(request):
    before = colio.get_config()["threads"]
    colio.set_config(threads=request.param)
    yield request.param
    colio.set_config(threads=before)


def _ranges(rng, n):
    out = []
    for i in range(n):
        k = i % 50
        if k == 0:
            out.append((SIZE, rng.randrange(10)))         # at the end
        elif k == 1:
            out.append((SIZE - rng.randrange(100), 300))  # across it
        elif k == 2:
            out.append((rng.randrange(SIZE), 0))
        else:
            out.append((rng.randrange(SIZE), rng.randrange(1, 8192)))
    return out


def _sources(data_file, ref):
    yield colio.source(data_file)
    yield colio.from_buffer(ref)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000, 10_000])
def test_shared_batches_are_done_and_exact_at_return(data_file, ref, threads, n):
    rng = random.Random(n * 31 + threads)
    for s in _sources(data_file, ref):
        with s:
            ranges = _ranges(rng, n)
            want = [pread(data_file, o, k) for o, k in ranges]
            futs = s.read_ranges_async(ranges)
            assert all(f.done() and not f.running() and not f.cancelled() for f in futs)
            assert [bytes(f.result(0)) for f in futs] == want
            assert [f.nbytes for f in futs] == [len(w) for w in want]
            assert all(f.exception(0) is None and f.cancel() is False for f in futs)
            got = s.read_ranges(ranges)
            assert all(isinstance(m, memoryview) and m.readonly for m in got)
            assert [bytes(m) for m in got] == want


def test_finished_range_futures_work_with_the_standard_tools(data_file):
    ranges = [(i * 5000, 4096) for i in range(300)]
    with colio.source(data_file) as s:
        futs = s.read_ranges_async(ranges)
        assert all(isinstance(f, cf.Future) and isinstance(f, colio.Future) for f in futs)
        done, not_done = cf.wait(futs, timeout=0)
        assert len(done) == len(futs) and not not_done
        assert {id(f) for f in cf.as_completed(futs, timeout=0)} == {id(f) for f in futs}
        seen = []
        futs[7].add_done_callback(lambda f: seen.append((threading.get_ident(), bytes(f.result()))))
        assert seen == [(threading.get_ident(), pread(data_file, 7 * 5000, 4096))]
        assert "state=finished" in repr(futs[0])
        with pytest.raises(cf.InvalidStateError):
            futs[0].set_result(b"")

        async def both():
            return [bytes(await asyncio.wrap_future(f)) for f in futs[:2]]
        assert asyncio.run(both()) == [pread(data_file, o, k) for o, k in ranges[:2]]


def test_negative_offsets_are_named_after_the_library_refuses(src):
    # sizes under 64 KiB go to the library unchecked; its refusal is
    # reported as Source._ranges names it, for both calls
    good = [(i * 10, 5) for i in range(999)]
    with pytest.raises(colio.InvalidArgumentError, match="range 999 offset"):
        src.read_ranges(good + [(-1, 5)])
    with pytest.raises(colio.InvalidArgumentError, match="range 999 offset"):
        src.read_ranges_async(good + [(-(1 << 40), 5)])
    with pytest.raises(colio.InvalidArgumentError, match="range 3 size"):
        src.read_ranges([(0, 1), (0, 2), (0, 3), (0, -4)])
    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
        src.read_ranges(good + [(SIZE + 1, 5)])


@pytest.mark.parametrize("size", [(1 << 16) - 1, 1 << 16, (1 << 16) + 1, 1 << 20])
def test_sizes_around_the_packed_limit(data_file, size):
    # Under 64 KiB the sizes are recognised from their packed bytes; from
    # it on they are compared as ints (and over it clamped, each range with
    # a bytes object of its own).
    ranges = [(0, 10), (123, size), (SIZE - 5, size), (SIZE, size), (7, 0)]
    want = [pread(data_file, o, k) for o, k in ranges]
    with colio.source(data_file) as s:
        got = s.read_ranges(ranges)
        assert [bytes(m) for m in got] == want
        assert [bytes(f.result(10)) for f in s.read_ranges_async(ranges)] == want
        if size > 1 << 16:
            assert len(got[1].obj) == len(want[1])  # its own bytes object
