"""colio.Future: a concurrent.futures.Future completed by the library.

A future made by a C call registers one shared ctypes callback with
``colio_future_on_done``; the library runs it on its notifier thread when
the operation ends (no Python thread per future). The callback sets the
result or exception, which wakes ``result()`` through the standard
Condition, so ``result()`` stays interruptible by Ctrl-C, and
``concurrent.futures.wait``, ``as_completed`` and ``asyncio.wrap_future``
work unchanged. ``await fut`` works too.

The future holds its buffer's pin until the operation ends, and the
registry below holds the future until then, so the buffer stays alive even
if the caller drops every reference to both.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections import deque
from concurrent.futures import Future as _StdFuture
from concurrent.futures._base import (CANCELLED, CANCELLED_AND_NOTIFIED,
                                      FINISHED, PENDING, RUNNING)

from . import _lib
from ._buffers import release as _release_pin
from ._errors import make_error

# key -> Future, for every C future whose completion is still to come.
_pending: dict = {}
_keys = itertools.count(1)
# C handles whose Python future completed; freed on the next submission
# (a future must not be freed from inside its own callback).
_to_free: deque = deque()


def _drain_free(L) -> None:
    free = L.colio_future_free
    pop = _to_free.popleft
    while _to_free:
        try:
            h = pop()
        except IndexError:
            break
        free(h)


class Future(_StdFuture):
    """The future of one colio operation. Its I/O started when it was made.

    ``result()`` returns the operation's value: the bytes moved for
    ``read_async``/``write_async``, a memoryview for ``read_ranges_async``.
    ``nbytes`` is the number of bytes moved once done; ``offset`` is where a
    write went (its reserved offset for appends).
    """

    def __init__(self):
        super().__init__()
        self._handle = None     # the C future while in flight
        self._pin = None        # keeps the buffer alive and locked
        self._owner = None      # the source or sink, for callback errors
        self._addr = 0
        self._size = 0
        self._wrap = None       # nbytes -> result value
        self.nbytes = None
        self.offset = None
        self._cancel_hook = None
        # I/O starts when a colio future is made: it is running from birth.
        self.set_running_or_notify_cancel()

    # -- completion ---------------------------------------------------------

    def _finish(self, status: int, nbytes: int, message=None, errnum: int = 0) -> None:
        """Completes the Python side (any thread)."""
        pin, self._pin = self._pin, None
        if status == 0:
            self.nbytes = nbytes
            value = self._wrap(nbytes) if self._wrap is not None else nbytes
            with self._condition:
                if self._state != RUNNING:
                    return
            try:
                self.set_result(value)
            except Exception:  # InvalidStateError: cancelled meanwhile
                pass
        elif status == _lib.ECANCELLED:
            self._mark_cancelled()
        else:
            exc = None
            owner = self._owner
            if owner is not None and owner._keep_errors:
                exc = owner._take_callback_error(self._addr, self._size)
            if exc is None:
                exc = make_error(status, message, errnum)
            try:
                self.set_exception(exc)
            except Exception:
                pass
        if pin is not None:
            _release_pin(pin)
        self._owner = None

    def _finish_from_handle(self, h, status: int, nbytes: int) -> None:
        message = None
        errnum = 0
        if status != 0 and status != _lib.ECANCELLED:
            msg = ctypes.c_char_p()
            err = ctypes.c_int(0)
            _lib.L.colio_future_error(h, ctypes.byref(msg), ctypes.byref(err))
            message, errnum = msg.value, err.value
        self._handle = None
        self._finish(status, nbytes, message, errnum)

    def _mark_cancelled(self) -> None:
        with self._condition:
            if self._state in (CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED):
                return
            self._state = CANCELLED
            self._condition.notify_all()
        self._invoke_callbacks()

    # -- the public surface beyond concurrent.futures ---------------------

    def cancel(self) -> bool:
        """Cancels the parts of the operation that have not started. Returns
        True if the future is now cancelled, False if everything had already
        started or finished. The buffer stays pinned until the library has
        retired the operation; a multi-part request whose first parts were
        already running may still write them."""
        with self._condition:
            if self._state in (CANCELLED, CANCELLED_AND_NOTIFIED):
                return True
            if self._state == FINISHED:
                return False
        h = self._handle
        if h is not None:
            L = _lib.L
            c = ctypes.c_int(0)
            if L.colio_future_cancel(h, ctypes.byref(c)) != 0 or not c.value:
                return False
            # The library completes the C future with COLIO_ECANCELLED once
            # its queued parts are retired; the notifier then drops the pin.
            self._mark_cancelled()
            return True
        if self._cancel_hook is not None and self._cancel_hook():
            self._mark_cancelled()
            return True
        return False

    # -- fork safety: a future inherited by a forked child never completes
    # (the parent's notifier is not there), so waiting on it raises.

    def _orphan(self) -> None:
        """In a forked child: fails this in-flight future with ForkError
        (no done-callbacks run: they belong to the parent's program)."""
        self._condition = threading.Condition()  # another thread may have held it at fork
        self._handle = None
        pin, self._pin = self._pin, None
        self._owner = None
        if self._state == RUNNING:
            self._exception = _lib.fork_error("colio.Future: an operation started before fork()")
            self._state = FINISHED
        if pin is not None:
            try:
                _release_pin(pin)  # nothing writes into the child's copy of the buffer
            except Exception:
                pass

    def result(self, timeout=None):
        if self._state == RUNNING and _lib._forked:
            self._orphan()
        return super().result(timeout)

    def exception(self, timeout=None):
        if self._state == RUNNING and _lib._forked:
            self._orphan()
        return super().exception(timeout)

    def __await__(self):
        import asyncio
        return asyncio.wrap_future(self).__await__()

    def __repr__(self) -> str:
        return "<colio." + super().__repr__()[1:]


def _on_done(ctx, h, status, nbytes):
    # Runs on colio's notifier thread. It must never raise into ctypes.
    if _lib.get_native_id() not in _lib._adopted:
        _lib.adopt_thread()  # keep the notifier's Python state (see _lib)
    try:
        fut = _pending.pop(ctx, None)
        if fut is not None:
            fut._finish_from_handle(h, status, nbytes)
    except BaseException:  # pragma: no cover - a bug here must not crash
        import traceback
        traceback.print_exc()
    finally:
        # Only now may the handle be freed: colio_future_free waits for this
        # callback to return, so freeing it from here (a done-callback that
        # submits more I/O drains the list) would wait for itself.
        _to_free.append(h)


_on_done_c = _lib.FUTURE_CALLBACK(_on_done)


def track(L, fut: Future, h) -> Future:
    """Attaches C future h to fut: completes at once if the operation
    already ended (small inline reads), else on the notifier."""
    if L.colio_future_done(h) == 1:
        n = ctypes.c_int64(0)
        status = L.colio_future_wait(h, 0, ctypes.byref(n))
        fut._handle = h
        fut._finish_from_handle(h, status, n.value)
        _to_free.append(h)
        return fut
    key = next(_keys)
    fut._handle = h
    _pending[key] = fut
    rc = L.colio_future_on_done(h, _on_done_c, key)
    if rc != 0:  # cannot happen for a valid handle; do not lose the future
        _pending.pop(key, None)
        n = ctypes.c_int64(0)
        status = L.colio_future_wait(h, _lib.WAIT_FOREVER, ctypes.byref(n))
        fut._finish_from_handle(h, status, n.value)
        _to_free.append(h)
    return fut


def _after_fork_in_child() -> None:
    """Called by colio._lib in a forked child: the C futures in flight are
    the parent's; fail their Python futures with ForkError so that nothing
    waits for them, and forget the handles (never freed here)."""
    global _pending, _to_free
    orphans = list(_pending.values())
    _pending = {}
    _to_free = deque()
    for fut in orphans:
        fut._orphan()


def drain(timeout: float | None = None) -> None:
    """Waits for every C future in flight and for its completion to be
    delivered (used at interpreter exit)."""
    import time
    L = _lib.L
    if L is None or _lib.forked():
        return
    for fut in list(_pending.values()):
        h = fut._handle
        if h is not None:
            L.colio_future_wait(h, _lib.WAIT_FOREVER, None)
    deadline = None if timeout is None else time.monotonic() + timeout
    while _pending and (deadline is None or time.monotonic() < deadline):
        time.sleep(0.001)
    _drain_free(L)


def completed(value=None, exc: BaseException | None = None) -> Future:
    fut = Future()
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)
    return fut
