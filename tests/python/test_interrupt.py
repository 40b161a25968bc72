"""Ctrl-C during synchronous reads of slow sources (issue 13, item 3).

read(), read_into() and read_ranges() on a source that calls back into
Python (a callable, an fsspec file system on colio's workers) used to sit in
one blocking C call and ignore Ctrl-C until the read finished. Here the read
callback blocks until the test releases it; a helper thread raises
KeyboardInterrupt in the main thread (``_thread.interrupt_main``) once the
callback has started. Before the fix the KeyboardInterrupt came only after
the callback's own watchdog let it return (so "returned" was already set);
now it comes while the callback still blocks. The interrupted read's
buffer stays pinned until the library has finished with it, and parts that
had not started are cancelled, never run.
"""

from __future__ import annotations

import _thread
import threading
import time

import pytest

import colio

WATCHDOG = 30.0  # hang limits, not timings


class Gate:
    """A read callback over ref whose first call blocks until released;
    counts calls."""

    def __init__(self, ref):
        self.ref = ref
        self.started = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, buf, off):
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first:
            self.started.set()
            self.release.wait(WATCHDOG)
        n = min(len(buf), len(self.ref) - off)
        buf[:n] = self.ref[off:off + n]
        if first:
            self.returned.set()
        return n


def _interrupt_when(ev):
    def run():
        if ev.wait(WATCHDOG):
            _thread.interrupt_main()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _settle(pred):
    end = time.monotonic() + WATCHDOG
    while not pred():
        assert time.monotonic() < end, "never settled"
        time.sleep(0.01)


@pytest.mark.parametrize("call", ["read_into", "read", "read_ranges"])
def test_sync_read_of_a_slow_source_is_interruptible(ref, call):
    g = Gate(ref)
    with colio.from_callable(g, len(ref)) as s:
        buf = bytearray(10_000)
        _interrupt_when(g.started)
        with pytest.raises(KeyboardInterrupt):
            try:
                if call == "read_into":
                    s.read_into(buf, 500)
                elif call == "read":
                    s.read(500, 10_000)
                else:
                    s.read_ranges([(500, 10_000)])
            finally:
                interrupted_while_blocked = not g.returned.is_set()
        assert interrupted_while_blocked, "KeyboardInterrupt came only after the read ended"
        g.release.set()
        _settle(g.returned.is_set)
        if call == "read_into":
            # The buffer stays pinned until the library is done with it,
            # then is let go (a bytearray can be resized again).
            def unpinned():
                try:
                    buf.extend(b"")
                    buf.append(0)
                    buf.pop()
                    return True
                except BufferError:
                    return False
            _settle(unpinned)
            assert bytes(buf) == ref[500:10_500]
        # The source still works, and reads the right bytes.
        assert s.read(123, 4567) == ref[123:123 + 4567]


def test_interrupted_read_cancels_parts_not_started(ref):
    """A read split into many tasks on a serial source: Ctrl-C during the
    first part cancels the others, which never call the source."""
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=4096)
    try:
        g = Gate(ref)
        with colio.from_callable(g, len(ref), concurrent=False) as s:
            _interrupt_when(g.started)
            with pytest.raises(KeyboardInterrupt):
                s.read(0, 40 * 4096)
            assert not g.returned.is_set()
            g.release.set()
            _settle(g.returned.is_set)
            _settle(lambda: colio.stats()["queued"] == 0 and colio.stats()["in_flight"] == 0)
            assert g.calls == 1, g.calls
    finally:
        colio.set_config(task_size=old)


def test_fast_local_reads_stay_synchronous(data_file, ref):
    """Small reads of a local file still run inline on the caller (the fast
    path), and large ones read the right bytes through the interruptible
    path."""
    with colio.source(data_file) as s:
        before = colio.stats()["ops_inline"]
        b = bytearray(4096)
        assert s.read_into(b, 10) == 4096 and b == ref[10:4106]
        assert colio.stats()["ops_inline"] - before == 1
        big = bytearray(3 << 20)
        assert s.read_into(big, 7) == 3 << 20 and big == ref[7:7 + (3 << 20)]
        assert s.read(1000, 2 << 20) == ref[1000:1000 + (2 << 20)]
