"""colio.Future with the standard library: wait, as_completed,
wrap_future, await, callbacks, cancel, Ctrl-C; and many Python threads."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import os
import signal
import threading
import time

import pytest

import colio


def _gated_source(size=1 << 20):
    gate = threading.Event()
    data = bytes(range(256)) * (size // 256)

    def read(buf, off):
        gate.wait(10)
        buf[:] = data[off:off + len(buf)]
        return len(buf)

    return gate, data, colio.from_callable(read, size)


def test_is_a_concurrent_future(src):
    f = src.read_async(bytearray(10))
    assert isinstance(f, cf.Future)
    assert f.result(5) == 10
    assert f.done() and not f.cancelled() and f.exception() is None


def test_done_is_truthful_and_eager():
    gate, data, s = _gated_source()
    b = bytearray(100)
    f = s.read_async(b, 0)
    time.sleep(0.05)
    assert not f.done() and f.running()
    with pytest.raises(cf.TimeoutError):
        f.result(timeout=0.05)
    gate.set()
    assert f.result(5) == 100 and f.done()
    assert b == data[:100]
    s.close()


def test_wait_and_as_completed(src, ref):
    futs = [src.read_async(bytearray(1000), i * 1000) for i in range(50)]
    done, not_done = cf.wait(futs, timeout=10)
    assert len(done) == 50 and not not_done
    futs = src.read_ranges_async([(i * 777, 777) for i in range(60)])
    seen = {}
    for f in cf.as_completed(futs, timeout=10):
        seen[futs.index(f)] = bytes(f.result())
    assert len(seen) == 60
    assert all(seen[i] == ref[i * 777:(i + 1) * 777] for i in range(60))


def test_wait_first_completed_does_not_wait_for_all():
    gate, data, s = _gated_source()
    slow = s.read_async(bytearray(10), 0)
    with colio.from_buffer(data) as fast_src:
        fast = fast_src.read_async(bytearray(10), 0)
        done, pending = cf.wait([slow, fast], timeout=5, return_when=cf.FIRST_COMPLETED)
        assert fast in done and slow in pending
    gate.set()
    slow.result(5)
    s.close()


def test_add_done_callback_runs_off_the_caller():
    gate, data, s = _gated_source()
    seen = []
    ev = threading.Event()
    f = s.read_async(bytearray(10), 0)
    f.add_done_callback(lambda fut: (seen.append((threading.get_ident(), fut.result())), ev.set()))
    gate.set()
    assert ev.wait(5)
    assert seen[0][1] == 10 and seen[0][0] != threading.get_ident()
    s.close()


def test_wrap_future_and_await(src, ref):
    async def main():
        loop = asyncio.get_running_loop()
        b = bytearray(4096)
        n = await src.read_async(b, 100)  # await directly
        assert n == 4096 and b == ref[100:4196]
        parts = await asyncio.gather(*(asyncio.wrap_future(f)
                                       for f in src.read_ranges_async([(0, 10), (20, 10)])))
        assert [bytes(p) for p in parts] == [ref[:10], ref[20:30]]
        # the loop is not blocked while a slow read is in flight
        gate, data, s = _gated_source()
        f = s.read_async(bytearray(10), 0)
        ticks = 0
        loop.call_later(0.05, gate.set)
        while not f.done():
            ticks += 1
            await asyncio.sleep(0.005)
        assert await f == 10
        assert ticks >= 5
        s.close()

    asyncio.run(main())


def test_cancel():
    # A callable source runs on Python workers (python_workers), not on the
    # engine's threads: one of each, so the second read waits in the queue.
    cfg = colio.get_config()
    old, old_workers = cfg["threads"], cfg["python_workers"]
    colio.set_config(threads=1, python_workers=1)
    try:
        gate, data, s = _gated_source()
        first = s.read_async(bytearray(10), 0)  # occupies the only worker
        time.sleep(0.05)
        queued = s.read_async(bytearray(10), 10)
        assert queued.cancel() is True
        assert queued.cancelled() and queued.done()
        with pytest.raises(cf.CancelledError):
            queued.result()
        assert first.cancel() is False  # already running
        gate.set()
        assert first.result(5) == 10
        assert first.cancel() is False
        s.close()
    finally:
        colio.set_config(threads=old, python_workers=old_workers)


def test_ctrl_c_interrupts_result():
    gate, data, s = _gated_source()
    f = s.read_async(bytearray(10), 0)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        f.result()  # no timeout: only Ctrl-C can end this wait
    assert time.perf_counter() - t0 < 3
    gate.set()
    assert f.result(5) == 10  # the operation itself went on
    s.close()


def test_100_python_threads_at_once(data_file, ref):
    s = colio.source(data_file)
    errors = []
    barrier = threading.Barrier(100)

    def worker(i):
        try:
            barrier.wait(10)
            for j in range(20):
                off = (i * 7919 + j * 104729) % (len(ref) - 70000)
                n = 1 + (i * 31 + j * 17) % 65536
                if j % 3 == 0:
                    assert s.read(off, n) == ref[off:off + n]
                elif j % 3 == 1:
                    b = bytearray(n)
                    assert s.read_async(b, off).result(30) == n and b == ref[off:off + n]
                else:
                    ps = s.read_ranges([(off, n), (off + 1, 100)])
                    assert ps[0] == ref[off:off + n] and ps[1] == ref[off + 1:off + 101]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(100)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    s.close()
    assert not errors, errors[:3]


def test_100_threads_on_callback_source(ref):
    def read(buf, off):
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    s = colio.from_callable(read, len(ref))
    errors = []

    def worker(i):
        try:
            for j in range(5):
                off = (i * 1000 + j * 333) % (len(ref) - 5000)
                assert s.read_async(bytearray(5000), off).result(30) == 5000
                assert s.read(off, 5000) == ref[off:off + 5000]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(100)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    s.close()
    assert not errors, errors[:3]


def test_done_callback_may_submit_more_io(src, ref):
    # A done-callback runs on colio's notifier; it may start more reads
    # (which frees finished C futures) without waiting for itself.
    results = []
    finished = threading.Event()

    def chain(fut, depth=0):
        results.append(bytes(fut.result()))
        if depth < 30:
            nxt = src.read_ranges_async([(depth * 100, 100)])[0]
            nxt.add_done_callback(lambda f: chain(f, depth + 1))
        else:
            finished.set()

    first = src.read_ranges_async([(0, 100)])[0]
    first.add_done_callback(chain)
    assert finished.wait(10), "a done-callback that submits I/O deadlocked"
    assert results[1:] == [ref[d * 100:d * 100 + 100] for d in range(30)]
