"""Futures of reads of queued sources (``colio.from_callable``, synchronous
fsspec), completed by the Python workers that run them.

A future made by ``colio_read_async`` completes on colio's notifier: a Go
thread that calls into Python and takes the GIL. While a worker runs
callables back to back it holds the GIL and gives it up only for an
instant in each C call, so that thread waited for the interpreter's 5 ms
switch interval: 200 reads of 64 KiB finished in 9 ms, half of it
waiting (bench/callable_fanout.py). Here the read is submitted with
``colio_read_async_tagged`` (one C call, no callback to register) and its
end comes back to the workers as a note from ``colio_work_step``, usually
in the very call that hands back its last part; the worker completes the
future itself, on the thread that holds the GIL.

Every way a read ends makes a note (done, failed, cancelled before a
worker took it, failed by close), and the workers do not exit while a note
is left, so no future is left running. ``result()`` still waits on the C
future (Ctrl-C, and a nested read frees its worker's place); whichever of
it and the note pops the future from ``_future._pending`` completes it.
Done-callbacks do not run on a worker (one that waits on another queued
read would hold the thread that read needs): a future that has them is
completed on a thread of its own, as the notifier did.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import deque

from . import _future as F
from . import _lib

_tls = threading.local()


class _Args:
    """This thread's arguments for colio_read_async_tagged: prebuilt ctypes
    objects and a function pointer without argtypes (setting five values
    costs less than converting five ints through argtypes; see
    _fastcall).

    The call keeps the GIL (PyDLL): it only queues the parts (a queued
    source never runs a part inline, and the queue's lock is never held
    while anything calls into Python), so it returns in microseconds.
    Releasing the GIL for it handed the GIL to a worker at every read: the
    worker then ran parts back to back while the reader waited for the
    5 ms switch interval to take it back, so a fan-out of 200 small reads
    was submitted between the workers' parts, a few at a time (pool time /
    colio time 0.72 at 0 ms latency, bench/callable_fanout.py)."""
    __slots__ = ("fn", "h", "a", "n", "o", "tag", "out", "ref")

    def __init__(self, L):
        self.fn = ctypes.PyDLL(L.path, handle=L.dll._handle)["colio_read_async_tagged"]  # no argtypes
        self.h, self.a = ctypes.c_void_p(), ctypes.c_void_p()
        self.n, self.o = ctypes.c_int64(), ctypes.c_int64()
        self.tag = ctypes.c_uint64()
        self.out = ctypes.c_void_p()
        self.ref = ctypes.byref(self.out)


def _submit(L, h, addr, n, offset, tag):
    """colio_read_async_tagged: (code, future handle)."""
    try:
        a = _tls.args
    except AttributeError:
        a = _tls.args = _Args(L)
    a.h.value, a.a.value, a.n.value, a.o.value, a.tag.value = h, addr, n, offset, tag
    rc = a.fn(a.h, a.a, a.n, a.o, a.tag, a.ref)
    return rc, a.out.value


def read_async(src, L, pin, addr: int, n: int, offset: int) -> "F.Future":
    """Source.read_async of a queued source."""
    if F._to_free:
        F._drain_free(L)
    h = src._handle
    if h is None or src._closed:
        h = src._h()  # raises ClosedError before anything is registered
    fut = F.Future()
    fut._pin = pin
    fut._addr, fut._size = addr, n
    fut._owner = src  # a dropped source must not close under its reads
    key = fut._key = next(F._keys)
    # Registered before the call: a worker may hand back the only part,
    # and collect its note, before the call returns.
    F._pending[key] = fut
    rc, hv = _submit(L, h, addr, n, offset, key)
    if rc:
        F._pending.pop(key, None)
        fut._pin = fut._owner = None
        raise src._error(rc, addr, n)
    if fut._state == F.RUNNING:  # else a worker completed it, and its C future is freed
        fut._handle = hv
    return fut


def complete(q, d, k: int) -> None:
    """On a worker: completes the futures of k notes, given as the note
    array's 64-bit (q) and 32-bit (d) integers. Never raises."""
    pending, ok, cancelled = F._pending, _lib.OK, _lib.ECANCELLED
    lock, running, finished = F._cv_lock, F.RUNNING, F.FINISHED
    for i in range(k):
        st = d[8 * i + 6]
        fut = pending.pop(q[4 * i], None)
        if st == ok and fut is not None and fut._wrap is None and "_cv" not in fut.__dict__:
            # The common end: done, nobody waiting, no callback (no
            # Condition), the result the byte count. Future._finish and
            # _set_fast written out, without their frames and branches.
            n = fut.nbytes = q[4 * i + 2]
            fut._handle = None
            with lock:
                if "_cv" not in fut.__dict__:  # else a waiter came meanwhile: the standard path
                    if fut._state == running:
                        fut._result = n
                        fut._state = finished
                    fut._pin = fut._owner = None  # a read's pin is never a ReadOnlyPin
                    continue
        h = None if st == ok or st == cancelled else q[4 * i + 1]  # the library freed the rest
        try:
            if fut is not None:
                if fut._done_callbacks:
                    _later(fut, h, st, q[4 * i + 2])
                    continue
                if h is None:
                    fut._handle = None
                    fut._finish(st, q[4 * i + 2])
                else:
                    fut._finish_from_handle(h, st, q[4 * i + 2])
        except BaseException:  # pragma: no cover - a bug here must not end the worker
            import traceback
            traceback.print_exc()
        if h is not None:
            F._to_free.append(h)


# Futures with done-callbacks, completed on the callback thread.
_queue: deque = deque()
_cv = threading.Condition(threading.Lock())
_thread = None


def _later(fut, h, st, nbytes) -> None:
    global _thread
    with _cv:
        _queue.append((fut, h, st, nbytes))
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run_later, name="colio-callbacks", daemon=True)
            _thread.start()
        _cv.notify()


def _run_later() -> None:
    while True:
        with _cv:
            while not _queue:
                _cv.wait()
            fut, h, st, nbytes = _queue.popleft()
        try:
            if h is None:
                fut._handle = None
                fut._finish(st, nbytes)
            else:
                fut._finish_from_handle(h, st, nbytes)
        except BaseException:  # pragma: no cover - a callback's error is the user's
            import traceback
            traceback.print_exc()
        if h is not None:
            F._to_free.append(h)


def _after_fork_in_child() -> None:
    global _queue, _cv, _thread
    _queue, _cv, _thread = deque(), threading.Condition(threading.Lock()), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
