"""The thread that drains a completion queue (colio_cq_wait): one wake-up
of Python for up to ``n`` ended operations, each an entry of three int64s
(the caller's context, the bytes moved, the status in the low 32 bits),
handed as one batch to ``handle``. Used by batches (_batch) and whole-object
fetches (_fetch); below both, above only _lib."""

from __future__ import annotations

from array import array
from ctypes import byref, c_int64

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
