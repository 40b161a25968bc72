"""A failed range of read_ranges_async keeps its message whichever thread
completes it and whenever.

Up to three threads complete a range (the completion queue's, a waiter in
result(), the notifier's); one claims the range under _batch._claim_lock
and builds its exception from the batch's C future, whose handle
read_ranges_async stores only once the C call has returned, and the
notifier drops once the batch has ended. A claimant without the handle
failed the range with a bare "colio: error -2" instead of the read's own
message (test_short_reads failed about 1 run in 4 on a loaded machine, and
126 of 3000 batches of a fast callable in a loop). Both orderings are
forced here:

- the queue takes the failed range before the handle is stored (fast
  callables often end their reads inside the submitting call);
- a waiter claims the range, and the notifier finishes the batch and drops
  the handle before the waiter has read the message.
"""

from __future__ import annotations

import random
import re
import threading

import pytest

import colio
from colio import _batch

SIZE = 1 << 20
STOP = 300_000
WATCHDOG = 20  # seconds; a hang here is a failure, not a timing


def stopping(data):
    """A callable source that ends at STOP, before its declared SIZE."""
    def read_into(buf, off):
        if off >= STOP:
            return 0
        n = min(len(buf), STOP - off, 1000)
        buf[:n] = data[off:off + n]
        return n
    return read_into


class _Ordering:
    """Stands in for _batch._claim_lock and orders the claim: threads other
    than the waiter wait, before they take the lock, until the waiter has
    claimed; the waiter, once it has claimed, waits until the batch has
    ended (the notifier completed every range and dropped the handle)."""

    def __init__(self, waiter: int):
        self.lock = threading.Lock()
        self.waiter = waiter
        self.fut = None  # the range, set before the waiter may claim it
        self.claimed = threading.Event()
        self.batch_done = threading.Event()
        self.held_back = 0

    def __enter__(self):
        if threading.get_ident() != self.waiter:
            self.held_back += 1
            self.claimed.wait(WATCHDOG)
        self.lock.acquire()
        self._was = self.fut is not None and self.fut._claimed

    def __exit__(self, *exc):
        self.lock.release()
        f = self.fut
        if (threading.get_ident() == self.waiter and f is not None
                and f._claimed and not self._was):
            self.claimed.set()
            self.batch_done.wait(WATCHDOG)
        return False


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("n,off", [(40_000, STOP - 1000), (700_000, 0)])
def test_claimant_keeps_message_when_batch_ends_first(monkeypatch, fast, n, off):
    data = random.Random(1302).randbytes(SIZE)
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=64 << 10)
    order = _Ordering(threading.get_ident())
    monkeypatch.setattr(_batch, "_claim_lock", order)
    try:
        with colio.from_callable(stopping(data), SIZE, fast=fast) as s:
            head, bad = s.read_ranges_async([(0, 100), (off, n)])
            order.fut = bad
            bad._batch.add_done_callback(lambda _: order.batch_done.set())
            assert bytes(head.result(WATCHDOG)) == data[:100]
            with pytest.raises(colio.ColioIOError) as info:
                bad.result(WATCHDOG)
            # The forced interleaving happened: this thread claimed the
            # range, and the batch ended before it built the exception.
            assert order.claimed.is_set() and order.batch_done.is_set()
            want = (f"read of {n} bytes at offset {off} got {STOP - off}: "
                    f"the source stopped at offset {STOP}, before its end at {SIZE}")
            assert re.search(re.escape(want), str(info.value)), str(info.value)
            assert s.read(0, STOP) == data[:STOP]
    finally:
        order.claimed.set()  # nothing stays held back
        colio.set_config(task_size=old)


class _HandleLate(_batch._Batch):
    """A batch whose handle is stored only after the completion queue has
    handled the failed range's entry (the queue took it before the C call
    returned)."""

    queue_done = None  # set per test: the queue's thread handled range BAD

    @property
    def _handle(self):
        return self.__dict__.get("_h")

    @_handle.setter
    def _handle(self, h):
        if h is not None and "_h" not in self.__dict__:
            type(self).queue_done.wait(WATCHDOG)
        self.__dict__["_h"] = h

    def _complete(self, i, status, nbytes):
        super()._complete(i, status, nbytes)
        if i == BAD and threading.current_thread().name == "colio-completions":
            type(self).queue_done.set()


BAD = 1


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("n,off", [(40_000, STOP - 1000), (700_000, 0)])
def test_queue_before_handle_keeps_message(monkeypatch, fast, n, off):
    data = random.Random(1303).randbytes(SIZE)
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=64 << 10)
    monkeypatch.setattr(_HandleLate, "queue_done", threading.Event())
    monkeypatch.setattr(_batch, "_Batch", _HandleLate)
    try:
        with colio.from_callable(stopping(data), SIZE, fast=fast) as s:
            head, bad = s.read_ranges_async([(0, 100), (off, n)])
            assert _HandleLate.queue_done.is_set()  # the ordering happened
            assert bytes(head.result(WATCHDOG)) == data[:100]
            with pytest.raises(colio.ColioIOError) as info:
                bad.result(WATCHDOG)
            want = (f"read of {n} bytes at offset {off} got {STOP - off}: "
                    f"the source stopped at offset {STOP}, before its end at {SIZE}")
            assert re.search(re.escape(want), str(info.value)), str(info.value)
            assert s.read(0, STOP) == data[:STOP]
    finally:
        _HandleLate.queue_done.set()
        colio.set_config(task_size=old)
