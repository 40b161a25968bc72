"""colio.Future: a concurrent.futures.Future completed by the library.

A future made by a C call registers one shared ctypes callback with
``colio_future_on_done``; the library runs it on its notifier thread when
the operation ends (no Python thread per future). The callback sets the
result or exception, which wakes ``result()`` through the standard
Condition, so ``result()`` stays interruptible by Ctrl-C, and
``concurrent.futures.wait``, ``as_completed`` and ``asyncio.wrap_future``
work unchanged. ``await fut`` works too.

``result()`` and ``exception()`` do not need the notifier: on a future
still in flight they wait on its C future directly, in slices (so Ctrl-C is
handled between them), and complete the Python future themselves if the
notifier has not yet. A done-callback runs on the notifier, so one that
waits on another colio future would otherwise wait for the very thread it
blocks (issue 12.9). Whichever thread completes a future runs its
done-callbacks: the notifier, or a thread that waited in ``result()``.
``concurrent.futures.wait`` and ``as_completed`` still rely on the notifier,
so a done-callback must not use them on colio futures.

At interpreter exit (``drain``), reads that never started are cancelled,
the rest get ``COLIO_EXIT_TIMEOUT`` seconds (default 10) in all, and what
is still running then is abandoned: its Python future, with the buffer's
pin, is parked for the life of the process, and colio_stop_callbacks keeps
the library from calling into the finalising interpreter.

The future holds its buffer's pin until the operation ends, and the
registry below holds the future until then, so the buffer stays alive even
if the caller drops every reference to both.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
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
# Futures abandoned at exit, kept for the life of the process (see drain).
_abandoned: list = []

# Guards making a future's Condition against completing it without one
# (Future._set_fast).
_cv_lock = threading.Lock()
_ENDED = frozenset((CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED))
_CANCELLED_STATES = frozenset((CANCELLED, CANCELLED_AND_NOTIFIED))

# One wait on a C future lasts at most this long, so that a signal handler
# (KeyboardInterrupt) runs within it: the GIL is released during the wait,
# and a ctypes call cannot be interrupted.
SLICE_NS = 50_000_000


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

    # Defaults on the class: a future sets only what differs, so a small
    # read's future costs a few attribute stores.
    _handle = None      # the C future while in flight
    _pin = None         # keeps the buffer alive and locked
    _owner = None       # the source or sink, for callback errors
    _addr = 0
    _size = 0
    _wrap = None        # nbytes -> result value
    nbytes = None
    offset = None
    _cancel_hook = None
    _key = 0            # its key in _pending while the notifier owes it
    _result = None
    _exception = None
    # Replaced by per-future lists with the Condition (see _condition):
    # only code holding the Condition appends to them.
    _waiters = ()
    _done_callbacks = ()

    def __init__(self):
        # Not concurrent.futures.Future.__init__: its Condition costs more
        # than a small read. The Condition is made on first use, by a
        # thread that waits or adds a callback (see _condition). I/O starts
        # when a colio future is made: it is running from birth.
        self._state = RUNNING

    @property
    def _condition(self):
        d = self.__dict__
        cv = d.get("_cv")
        if cv is None:
            with _cv_lock:
                cv = d.get("_cv")
                if cv is None:
                    d["_waiters"] = []
                    d["_done_callbacks"] = []
                    cv = d["_cv"] = threading.Condition()
        return cv

    @_condition.setter
    def _condition(self, cv):
        d = self.__dict__
        with _cv_lock:
            if "_cv" not in d:
                d["_waiters"] = []
                d["_done_callbacks"] = []
            d["_cv"] = cv

    def _set_fast(self, value, exc) -> bool:
        """Completes a future that nobody waits on and that has no
        callbacks (no Condition yet) without making one; False if there is
        a Condition, and the standard path must run. A waiter makes the
        Condition under _cv_lock before it looks at the state, so it sees
        either no Condition here or the state set."""
        with _cv_lock:
            if "_cv" in self.__dict__:
                return False
            if self._state == RUNNING:
                self._result, self._exception = value, exc
                self._state = FINISHED
            return True

    def done(self):
        return self._state in _ENDED

    def cancelled(self):
        return self._state in _CANCELLED_STATES

    def running(self):
        return self._state == RUNNING

    # -- completion ---------------------------------------------------------

    def _finish(self, status: int, nbytes: int, message=None, errnum: int = 0) -> None:
        """Completes the Python side (any thread)."""
        pin, self._pin = self._pin, None
        if status == 0:
            self.nbytes = nbytes
            value = self._wrap(nbytes) if self._wrap is not None else nbytes
            if self._state != RUNNING:
                return
            if not self._set_fast(value, None):
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
            if not self._set_fast(None, exc):
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

    def _wait_handle(self, timeout):
        """Waits on the C future itself, in slices, and completes this
        future if the notifier has not: nothing then depends on the
        notifier's thread, which may be the caller (a done-callback).
        Returns the time left of timeout (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        h = self._handle
        L = _lib.L
        n = ctypes.c_int64(0)
        ref = ctypes.byref(n)
        while self._state == RUNNING:
            ns = SLICE_NS
            if deadline is not None:
                ns = min(ns, int((deadline - time.monotonic()) * 1e9))
                if ns <= 0:
                    return 0
            rc = L.colio_future_wait(h, ns, ref)
            if rc == _lib.ETIMEDOUT and L.colio_future_done(h) == 1:
                rc = L.colio_future_wait(h, 0, ref)  # ended just after the slice: its own status
            if rc != _lib.ETIMEDOUT:
                # EINVAL: freed meanwhile, after the notifier completed it.
                if rc != _lib.EINVAL and _pending.pop(self._key, None) is self:
                    self._finish_from_handle(h, rc, n.value)
                break
        return None if deadline is None else max(deadline - time.monotonic(), 0)

    def result(self, timeout=None):
        st = self._state
        if st == FINISHED:  # the common case: no Condition
            if self._exception is not None:
                raise self._exception
            return self._result
        if st == RUNNING:
            if _lib._forked:
                self._orphan()
            elif self._key:
                timeout = self._wait_handle(timeout)
        return super().result(timeout)

    def exception(self, timeout=None):
        st = self._state
        if st == FINISHED:
            return self._exception
        if st == RUNNING:
            if _lib._forked:
                self._orphan()
            elif self._key:
                timeout = self._wait_handle(timeout)
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
    fut._key = key
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


def wait_sync(L, submit, owner, pin, addr: int, size: int):
    """Runs submit(out) (a C call that starts an operation and stores its
    future in the c_void_p ``out``; returns its code), then waits for that
    future in slices, so that Ctrl-C is handled; returns (status, nbytes)
    and frees it. If the call is interrupted, the parts that have not
    started are cancelled and the future goes to a Future that holds pin
    until the library is done with the buffer (then the exception goes on):
    the buffer is never let go under a running read.

    The submission is inside the protected region, and the handle comes
    back through an out-parameter, because a KeyboardInterrupt can land on
    any bytecode: right after the C call returned, or while the caller was
    still on its way into the wait, the read was running with nobody left
    to cancel it (test_interrupt's cancel test failed 1 run in 3)."""
    n = ctypes.c_int64(0)
    ref = ctypes.byref(n)
    out = ctypes.c_void_p()
    wait, ended = L.colio_future_wait, False
    h = None
    try:
        rc = submit(ctypes.byref(out))
        h = out.value
        if rc:
            ended = True
            return rc, 0
        while True:
            rc = wait(h, SLICE_NS, ref)
            if rc != _lib.ETIMEDOUT:
                ended = True
                break
            if L.colio_future_done(h) == 1:  # ended just after the slice: its own status
                rc = wait(h, 0, ref)
                ended = True
                break
    except BaseException:
        h = out.value
        if h and not ended:
            c = ctypes.c_int(0)
            L.colio_future_cancel(h, ctypes.byref(c))
            fut = Future()
            fut._pin, fut._addr, fut._size, fut._owner = pin, addr, size, owner
            track(L, fut, h)
        elif h:
            L.colio_future_free(h)  # it had ended: nothing to wait for
        raise
    L.colio_future_free(h)
    return rc, n.value


def drain(deadline: float) -> int:
    """At interpreter exit: cancels the reads that have not started (nobody
    can look at them any more), then waits, in slices and until deadline
    (time.monotonic()), for the rest, completing each. Returns how many are
    still running then; those are parked, never freed."""
    L = _lib.L
    if L is None or _lib.forked():
        return 0
    futs = list(_pending.values())
    c = ctypes.c_int(0)
    for fut in futs:
        h, owner = fut._handle, fut._owner
        if h is not None and owner is not None and owner._what == "source":
            L.colio_future_cancel(h, ctypes.byref(c))
    try:
        for fut in futs:
            if fut._state == RUNNING and fut._key:
                fut._wait_handle(max(deadline - time.monotonic(), 0))
    finally:
        left = [f for f in list(_pending.values()) if f._state == RUNNING]
        abandon(left)
    if not left:
        _drain_free(L)
    return len(left)


def abandon(futs) -> None:
    """Keeps futs, their pins and owners (sources with their ctypes
    callbacks), for the life of the process: the library may still write
    into their buffers, and at finalisation Python would otherwise free
    them. The extra reference keeps the list itself from being cleared."""
    if not _abandoned and futs:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_abandoned))
    _abandoned.extend(futs)


def completed(value=None, exc: BaseException | None = None) -> Future:
    """A future that is done already (no Condition: nobody can have waited)."""
    fut = Future()
    fut._result, fut._exception = value, exc
    fut._state = FINISHED
    return fut
