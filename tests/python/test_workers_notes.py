"""Futures of queued reads are completed by the Python workers themselves
(colio_read_async_tagged and the notes of colio_work_step, see
colio._work_futures), not by colio's notifier thread taking the GIL.

test_a_read_is_done_before_its_worker_runs_the_next_part failed before:
the notifier completed the future later, when it got the GIL. The others
pin down what the change had to keep: errors, cancel, close, done-callbacks
(never run on a worker), no handle or registry entry left behind.
"""

from __future__ import annotations

import ctypes
import random
import threading
import time

import pytest

import colio
from colio import _future, _lib, _work_futures, _workers

WATCHDOG = 30.0  # hang limits, not timings


@pytest.fixture
def workers():
    old = colio.get_config()["python_workers"]
    yield
    colio.set_config(python_workers=old)


def _copy(ref, hook=None):
    def read_into(buf, off):
        if hook is not None:
            hook(off)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)
    return read_into


def _mine(futs):
    """This test's futures still in the registry of futures owed a completion."""
    ids = {id(f) for f in futs}
    return [f for f in list(_future._pending.values()) if id(f) in ids]


def test_a_read_is_done_before_its_worker_runs_the_next_part(ref):
    """A serial source runs its parts one at a time, in order: the step that
    hands back part i - 1 completes its future before part i runs. Failed
    before: read i found read i - 1 not done in most of the 40 reads (its
    completion waited for the notifier to get the GIL)."""
    futs, late = [], []

    def hook(off):
        i = off // 1000
        if i and not futs[i - 1].done():
            late.append(i)

    with colio.from_callable(_copy(ref, hook), len(ref), concurrent=False) as s:
        bufs = [bytearray(1000) for _ in range(40)]
        for i, b in enumerate(bufs):
            futs.append(s.read_async(b, i * 1000))
        assert [f.result(WATCHDOG) for f in futs] == [1000] * 40
    assert all(b == ref[i * 1000:(i + 1) * 1000] for i, b in enumerate(bufs))
    assert late == []


def test_mixed_outcomes_leave_nothing_behind(ref, monkeypatch):
    """Successes, callable errors, short reads and reads at the end, in a
    random order on 8 workers: every future ends with the right bytes or
    error, none stays in the registry, and every C future is freed (by the
    library for a done one, by the next submission for a failed one)."""
    rng = random.Random(7)
    size = len(ref)
    L = _lib.load()
    made = []
    real = _work_futures._submit

    def recording(*args):
        rc, h = real(*args)
        made.append(h)
        return rc, h
    monkeypatch.setattr(_work_futures, "_submit", recording)

    def read_into(buf, off):
        if off % 7 == 3:
            raise KeyError(f"bad offset {off}")
        if off % 7 == 5:
            return 0  # ends early: a short read, which the library fails
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    failed = 0
    with colio.from_callable(read_into, size) as s:
        for _ in range(3):
            offs = [rng.randrange(0, size - 5000) for _ in range(300)] + [size, size - 10]
            bufs = [bytearray(rng.randrange(1, 5000)) for _ in offs]
            futs = [s.read_async(b, o) for b, o in zip(bufs, offs)]
            for f, b, o in zip(futs, bufs, offs):
                want = min(len(b), size - o)
                if o % 7 == 3 and want:
                    with pytest.raises(KeyError, match=f"bad offset {o}"):
                        f.result(WATCHDOG)
                    failed += 1
                elif o % 7 == 5 and want:
                    with pytest.raises(colio.ColioError, match="offset"):
                        f.result(WATCHDOG)
                    failed += 1
                else:
                    assert f.result(WATCHDOG) == want
                    assert b[:want] == ref[o:o + want]
            assert _mine(futs) == []
    assert failed and len(made) == 3 * 302

    def freed(h):
        return L.colio_future_done(h) < 0  # EINVAL: no longer a valid handle

    # A failed one's note may still be on its way to the free list.
    deadline = time.monotonic() + WATCHDOG
    while time.monotonic() < deadline:
        if all(freed(h) or h in _future._to_free for h in made):
            break
        time.sleep(0.01)
    _future._drain_free(L)
    assert all(freed(h) for h in made)


def test_cancel_before_a_worker_takes_it(ref, workers):
    colio.set_config(python_workers=1)
    started, release = threading.Event(), threading.Event()

    def hook(off):
        if off == 0:
            started.set()
            release.wait(WATCHDOG)

    with colio.from_callable(_copy(ref, hook), len(ref)) as s:
        first = s.read_async(bytearray(100), 0)
        assert started.wait(WATCHDOG)
        b = bytearray(100)
        second = s.read_async(b, 500)
        assert second.cancel() and second.cancelled() and second.done()
        release.set()
        assert first.result(WATCHDOG) == 100
        third = bytearray(100)
        assert s.read_async(third, 900).result(WATCHDOG) == 100 and third == ref[900:1000]
        assert b == bytearray(100)  # the cancelled read never ran
        assert _mine([first, second]) == []


def test_close_fails_queued_reads(ref, workers):
    colio.set_config(python_workers=1)
    started, release = threading.Event(), threading.Event()

    def hook(off):
        if off == 0:
            started.set()
            release.wait(WATCHDOG)

    s = colio.from_callable(_copy(ref, hook), len(ref))
    first = s.read_async(bytearray(100), 0)
    assert started.wait(WATCHDOG)
    queued = [s.read_async(bytearray(100), 1000 * i) for i in range(1, 6)]
    closer = threading.Thread(target=s.close)
    closer.start()
    for f in queued:
        with pytest.raises(colio.ClosedError):
            f.result(WATCHDOG)
    release.set()
    closer.join(WATCHDOG)
    assert first.result(WATCHDOG) == 100
    assert _mine([first] + queued) == []


def test_done_callbacks_do_not_run_on_a_worker(ref, workers):
    """With one worker, a done-callback that waits on another read of the
    same source would hold the only thread that read needs if it ran
    there; it runs on a thread of its own, and finishes."""
    colio.set_config(python_workers=1)
    with colio.from_callable(_copy(ref), len(ref)) as s:
        seen, out = [], []
        done = threading.Event()

        def cb(f):
            seen.append(threading.current_thread().name)
            out.append(s.read_async(bytearray(10), 20).result(WATCHDOG))
            done.set()

        f = s.read_async(bytearray(10), 0)
        f.add_done_callback(cb)
        assert done.wait(WATCHDOG)
        assert out == [10]
        assert seen and not seen[0].startswith("colio-python-worker"), seen


def test_waiters_of_concurrent_futures_wake(ref):
    import concurrent.futures as cf
    with colio.from_callable(_copy(ref), len(ref)) as s:
        bufs = [bytearray(4096) for _ in range(64)]
        futs = [s.read_async(b, i * 4096) for i, b in enumerate(bufs)]
        done, pending = cf.wait(futs, timeout=WATCHDOG)
        assert not pending
        assert sorted(f.result() for f in cf.as_completed(futs, timeout=WATCHDOG)) == [4096] * 64
        assert all(b == ref[i * 4096:(i + 1) * 4096] for i, b in enumerate(bufs))


def test_tagged_reads_only_for_queued_sources(ref):
    """colio_read_async_tagged of any other source would end with nobody to
    hand its note to: refused."""
    L = _lib.load()
    with colio.from_buffer(bytes(ref[:1000])) as m:
        buf = ctypes.create_string_buffer(10)
        out = ctypes.c_void_p()
        rc = L.colio_read_async_tagged(m._h(), ctypes.addressof(buf), 10, 0, 1, ctypes.byref(out))
        assert rc == _lib.EINVAL and out.value is None
        assert b"queued source" in L.colio_last_error()
