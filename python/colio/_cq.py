"""The thread that drains a completion queue (colio_cq_wait): one wake-up
of Python for up to ``n`` ended operations, each an entry of three int64s
(the caller's context, the bytes moved, the status in the low 32 bits),
handed as one batch to ``handle``. Used by batches (_batch) and whole-object
fetches (_fetch); below both, above only _lib."""

from __future__ import annotations

import threading
from array import array
from ctypes import byref, c_int64, c_void_p

from . import _lib


def status(word: int) -> int:
    """An entry's status: the low 32 bits, signed."""
    st = word & 0xFFFFFFFF
    return st - (1 << 32) if st >> 31 else st


def drain(L, cq, n: int, handle) -> None:
    """Runs until the queue is closed (or the process forked): each wake-up
    calls handle(buf, count), where entry k is buf[3k], buf[3k+1] and
    buf[3k+2]. An exception in handle is printed, never ends the thread."""
    buf = array("q", bytes(24 * n))
    entries = (_lib.CqEntry * n).from_buffer(buf)
    count = c_int64(0)
    ref = byref(count)
    wait = L.colio_cq_wait
    while True:
        rc = wait(cq, entries, n, _lib.WAIT_FOREVER, ref)
        if rc:
            if rc == _lib.ETIMEDOUT:
                continue
            return  # closed, or forked
        try:
            handle(buf, count.value)
        except BaseException:  # pragma: no cover - a bug here must not end the thread
            import traceback
            traceback.print_exc()


class Queue:
    """A completion queue and the thread draining it, made on first use:
    ``get(L)`` returns its handle. ``make_handle(L)`` gives the function each
    wake-up's batch goes to (see drain)."""

    def __init__(self, name: str, n: int, make_handle):
        self._name, self._n, self._make = name, n, make_handle
        self._h = None
        self._lock = threading.Lock()

    def get(self, L) -> int:
        h = self._h
        if h is None:
            with self._lock:
                if self._h is None:
                    c = c_void_p()
                    rc = L.colio_cq_new(byref(c))
                    if rc:
                        from ._errors import last_error
                        raise last_error(rc)
                    threading.Thread(target=drain, args=(L, c.value, self._n, self._make(L)),
                                     name=self._name, daemon=True).start()
                    self._h = c.value
                h = self._h
        return h

    def forget(self) -> None:
        """In a forked child: the parent's queue and thread are not there."""
        self._h = None
