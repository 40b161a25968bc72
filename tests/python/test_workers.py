"""Python callables run on Python worker threads (issue 15, item 2).

Before this change, reads of colio.from_callable and synchronous fsspec
sources ran on colio's Go threads, each entering the interpreter through a
ctypes callback (the GIL convoy). Now the library queues each part and the
threads of colio._workers take it (colio_work_take), run the callable and
hand the result back (colio_work_done). What failed before is said in each
test; the others pin down behaviour that the move had to keep.
"""

from __future__ import annotations

import _thread
import random
import threading
import time

import pytest

import colio
from colio import _workers

WATCHDOG = 30.0  # hang limits, not timings


def _copier(ref, record=None, latency=0.0, short=False):
    def read_into(buf, off):
        if record is not None:
            record(threading.current_thread())
        if latency:
            time.sleep(latency)
        n = min(len(buf), len(ref) - off)
        if short and n > 1:
            n = max(1, n // 3)  # fills less than asked: colio asks again
        buf[:n] = ref[off:off + n]
        return n
    return read_into


_before: set = set()  # the queued sources open when the running test began


@pytest.fixture(autouse=True)
def _sources_open_before():
    _before.clear()
    _before.update(_workers._callbacks)
    yield


def _no_workers_left():
    """True once this test's queued sources are gone and, when no other
    source is open, every worker thread has exited. Workers stay while any
    source needs them, by design: sources that earlier tests dropped in
    reference cycles are collected first, and a source an earlier test
    still holds (a failed test's traceback keeps its frames) is not this
    test's to close; in the full suite three of these tests failed for
    that alone."""
    import gc
    gc.collect()
    deadline = time.monotonic() + WATCHDOG
    while time.monotonic() < deadline:
        left = set(_workers._callbacks)
        if left and left <= _before:
            return True
        alive = [t for t in threading.enumerate() if t.name.startswith("colio-python-worker")]
        if not left and not alive and _workers.thread_count() == 0:
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def workers():
    """Restores python_workers after a test that changes it."""
    old = colio.get_config()["python_workers"]
    yield
    colio.set_config(python_workers=old)


def test_callables_run_on_python_worker_threads(ref):
    """Failed before: the callable ran on colio's Go threads (ctypes
    DummyThread objects named Dummy-N), never on a Python thread."""
    seen = set()
    lock = threading.Lock()

    def record(t):
        with lock:
            seen.add(t.name)

    with colio.from_callable(_copier(ref, record), len(ref)) as s:
        ranges = [(i * 9000, 9000) for i in range(50)]
        for p, (off, n) in zip(s.read_ranges(ranges), ranges):
            assert p == ref[off:off + n]
    assert seen and all(n.startswith("colio-python-worker-") for n in seen), seen


def test_results_byte_exact(ref):
    """Random batches, reads at and across the end, a callable that fills
    less than asked, parts split at task_size: every byte as the reference."""
    rng = random.Random(15)
    size = len(ref)
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=100_000)
    try:
        for short in (False, True):
            with colio.from_callable(_copier(ref, short=short), size) as s:
                for _ in range(5):
                    ranges = [(o, rng.randrange(0, 300_000))
                              for o in (rng.randrange(0, size + 1) for _ in range(rng.randrange(0, 40)))]
                    ranges += [(size, 10), (size - 5, 100)]
                    for p, (off, n) in zip(s.read_ranges(ranges), ranges):
                        assert p == ref[off:off + n]
                b = bytearray(1_000_000)
                assert s.read_into(b, 3) == 1_000_000 and b == ref[3:1_000_003]
                assert s.read(size - 7) == ref[-7:]
    finally:
        colio.set_config(task_size=old)


class Custom(Exception):
    pass


def test_callback_exceptions_keep_type_and_message(ref):
    def read_into(buf, off):
        if off >= 4096:
            raise Custom(f"no bytes at {off}")
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    with colio.from_callable(read_into, len(ref)) as s:
        with pytest.raises(Custom, match="no bytes at 8192"):
            s.read(8192, 10)
        f = s.read_async(bytearray(10), 5000)
        with pytest.raises(Custom, match="no bytes at 5000"):
            f.result(WATCHDOG)
        with pytest.raises(FileNotFoundError, match="gone"):
            colio.from_callable(lambda b, o: (_ for _ in ()).throw(FileNotFoundError(2, "gone")),
                                100).read(0, 10)
        assert s.read(0, 4096) == ref[:4096]  # the source still works


def test_python_workers_setting_bounds_concurrency(ref, workers):
    """Failed before: set_config had no python_workers (InvalidArgumentError);
    the callable's concurrency followed threads."""
    for n in (1, 3):
        colio.set_config(python_workers=n)
        lock = threading.Lock()
        state = {"now": 0, "peak": 0}

        def read_into(buf, off):
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(0.002)
            buf[:] = ref[off:off + len(buf)]
            with lock:
                state["now"] -= 1
            return len(buf)

        with colio.from_callable(read_into, len(ref)) as s:
            ranges = [(i * 1000, 1000) for i in range(24)]
            for p, (off, k) in zip(s.read_ranges(ranges), ranges):
                assert p == ref[off:off + k]
        assert 1 <= state["peak"] <= n, (state, n)
    with pytest.raises(ValueError, match="python_workers"):
        colio.set_config(python_workers=0)


def test_ctrl_c_interrupts_a_wait(ref):
    started, release = threading.Event(), threading.Event()

    def read_into(buf, off):
        started.set()
        release.wait(WATCHDOG)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    s = colio.from_callable(read_into, len(ref))

    def interrupt():
        if started.wait(WATCHDOG):
            _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        s.read(0, 100)
    assert time.monotonic() - t0 < WATCHDOG and not release.is_set()
    release.set()
    assert s.read(0, 100) == ref[:100]
    s.close()
    assert _no_workers_left()


def test_close_fails_queued_parts_and_leaves_no_thread(ref, workers):
    """With one worker held by a callable, the other reads wait in the
    queue; closing the source fails them with ClosedError at once, lets the
    running one finish, and the worker threads exit."""
    colio.set_config(python_workers=1)
    started, release = threading.Event(), threading.Event()

    def read_into(buf, off):
        if off == 0:
            started.set()
            release.wait(WATCHDOG)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    s = colio.from_callable(read_into, len(ref))
    first = s.read_async(bytearray(100), 0)
    assert started.wait(WATCHDOG)
    queued = [s.read_async(bytearray(100), 1000 * (i + 1)) for i in range(5)]
    closer = threading.Thread(target=s.close)
    closer.start()
    for f in queued:
        with pytest.raises(colio.ClosedError):
            f.result(WATCHDOG)
    assert not first.done()  # running: close waits for it
    release.set()
    closer.join(WATCHDOG)
    assert first.result(WATCHDOG) == 100
    assert _no_workers_left()


def test_cancel_a_part_no_worker_took(ref, workers):
    colio.set_config(python_workers=1)
    started, release = threading.Event(), threading.Event()
    calls = []

    def read_into(buf, off):
        calls.append(off)
        if off == 0:
            started.set()
            release.wait(WATCHDOG)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    with colio.from_callable(read_into, len(ref)) as s:
        first = s.read_async(bytearray(10), 0)
        assert started.wait(WATCHDOG)
        later = s.read_async(bytearray(10), 500)
        assert not later.done()  # truthful: queued, not run
        assert later.cancel()
        release.set()
        assert first.result(WATCHDOG) == 10
        assert later.cancelled()
        assert s.read(600, 10) == ref[600:610]
    assert 500 not in calls


def test_nested_read_finishes_with_one_worker(ref, data_file, workers):
    """A callable that reads another callable source (and a file) through
    colio and waits: with a single worker, the nested part runs on another
    thread while the waiting worker does not count."""
    colio.set_config(python_workers=1)
    inner = colio.from_callable(_copier(ref), len(ref))
    f = colio.source(data_file)

    def outer_read(buf, off):
        n = min(len(buf), len(ref) - off)
        got = inner.read(off, n)                     # waits on a queued part
        got2 = f.read_ranges([(off, n)])[0]           # and on a file read
        assert bytes(got2) == got
        buf[:n] = got
        return n

    done = threading.Event()
    result = {}

    def run():
        with colio.from_callable(outer_read, len(ref)) as outer:
            result["ranges"] = outer.read_ranges([(i * 7000, 7000) for i in range(8)])
            result["one"] = outer.read(123, 4567)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(WATCHDOG), "nested read hung"
    for i, p in enumerate(result["ranges"]):
        assert p == ref[i * 7000:(i + 1) * 7000]
    assert result["one"] == ref[123:123 + 4567]
    inner.close()
    f.close()
    assert _no_workers_left()


def test_serial_callable_runs_one_at_a_time(ref):
    lock = threading.Lock()
    state = {"now": 0, "peak": 0, "order": []}

    def read_into(buf, off):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            state["order"].append(off)
        time.sleep(0.001)
        buf[:] = ref[off:off + len(buf)]
        with lock:
            state["now"] -= 1
        return len(buf)

    with colio.from_callable(read_into, len(ref), concurrent=False) as s:
        ranges = [(i * 100, 100) for i in range(20)]
        for p, (off, n) in zip(s.read_ranges(ranges), ranges):
            assert p == ref[off:off + n]
    assert state["peak"] == 1
    assert state["order"] == [o for o, _ in ranges]  # in submission order


def test_nested_batch_reads_finish_with_one_worker(ref, workers):
    """Every blocking wait of a worker thread must free its place, not only
    colio_future_wait: here the nested read is read_ranges and
    read_ranges_async(...)[i].result() of another callable source (the
    batch calls of issue 15 item 1 wait with their own C calls)."""
    colio.set_config(python_workers=1)
    inner = colio.from_callable(_copier(ref), len(ref))

    def outer_read(buf, off):
        n = min(len(buf), len(ref) - off)
        a = inner.read_ranges_async([(off, n)])[0].result(WATCHDOG)
        b = inner.read_ranges([(off, n)])[0]
        assert bytes(a) == bytes(b)
        buf[:n] = a
        return n

    done = threading.Event()
    result = {}

    def run():
        with colio.from_callable(outer_read, len(ref)) as outer:
            result["one"] = outer.read(5, 5000)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(WATCHDOG), "nested batch read hung"
    assert result["one"] == ref[5:5005]
    inner.close()
