"""Python worker threads for sources backed by Python code.

Reads of ``colio.from_callable`` and synchronous fsspec sources are not run
by colio's Go threads calling into Python through ctypes: those threads
took the GIL in a convoy (84,568 context switches against 1,464 for 200
reads, BENCHMARKS.md). The library queues each part of such a read at call
time (``colio_source_from_queue``), and the long-lived Python threads here
wait for parts with a blocking C call (``colio_work_wait``, the GIL
released), take them by polling ``colio_work_step`` with the GIL held, run
the callable, and hand the result back in the next poll, which also takes
the next part and tells of the reads that ended: the worker completes
their futures itself (``_work_futures``), and no other thread takes the
GIL for a read.

How many parts run at once is the engine setting ``python_workers``
(``COLIO_PYTHON_WORKERS``, ``colio.set_config(python_workers=...)``). The
library does not count a worker whose callable is waiting on a colio read
(a nested read): it lets another take a part instead, so one more thread
than are busy always waits for work here, and a nested read never waits
behind the worker that waits for it. Threads start with the first such
source and exit when the last one closes.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import itertools
import os
import threading
import time

from . import _lib, _work_futures

# Takes wait in slices so that a thread notices a fork or a stop request.
_TAKE_NS = 1_000_000_000
# Nested reads each free one worker's place: bound the threads as the pool
# bounds its levels (a deeper nesting is a runaway recursion).
_MAX_NESTING = 64
# Threads started at once with the first source; more start as needed.
_EAGER = 16
# Closing the last source waits this long for the threads to exit.
_JOIN_S = 10.0
# Notes (ended reads) one step collects at most.
_NOTES = 64

_lock = threading.RLock()  # re-entrant: a source collected while it is held closes through unregister
_threads: set = set()
_callbacks: dict = {}           # ctx value -> run(addr, size, offset) -> bytes or -errno
_by_view: set = set()           # ctx values whose run is run(view, addr, size, offset)
_keys = itertools.count(1)
_names = itertools.count(1)


def _limit(L) -> int:
    v = ctypes.c_int64(0)
    if L.colio_config_get_int(b"python_workers", ctypes.byref(v)):
        return 16  # config.DefaultPythonWorkers
    return v.value


def register(run, views: bool = False) -> int:
    """Adds a source's read function; returns the ctx value to create its
    queued source with. Call start() once the source exists. views: run
    takes (view, addr, size, offset), the part's memory as a writable
    memoryview that the worker makes from its own prebuilt arguments."""
    key = next(_keys)
    if views:
        _by_view.add(key)
    _callbacks[key] = run
    return key


def start(L) -> None:
    """Makes sure workers wait for the new source's parts (more start as
    parts keep every one busy)."""
    with _lock:
        for _ in range(min(_limit(L), _EAGER) - len(_threads)):
            _spawn_locked()


def unregister(key: int) -> None:
    """Forgets a closed source's read function. When it was the last, waits
    for the workers to exit (the library wakes them: no source is open)."""
    _callbacks.pop(key, None)
    _by_view.discard(key)
    if _callbacks:
        return
    me = threading.current_thread()
    with _lock:
        threads = [t for t in _threads if t is not me]
    for t in threads:
        t.join(_JOIN_S)


def _spawn_locked() -> None:
    t = threading.Thread(target=_work, name=f"colio-python-worker-{next(_names)}", daemon=True)
    _threads.add(t)
    t.start()


def _more(L, out: int) -> None:
    """Starts a thread when every one is busy with a part (out of them)."""
    with _lock:
        if len(_threads) <= out and len(_threads) < _limit(L) + _MAX_NESTING:
            _spawn_locked()


def _poll_step(L):
    """colio_work_step called with the GIL held, for polls (timeout 0).

    Releasing the GIL for a call that returns in a microsecond costs more
    than the call: the worker must take the GIL back before it can run the
    part it took, and while it runs callables back to back the other
    threads that wake to take it (other workers, the reader) wait for the
    5 ms switch interval. A poll never blocks: the queue's lock is held
    only for list updates, no lock of it is held while anything calls
    into Python, and completing a future only posts to the notifier's
    unbounded queue. Waits (a timeout) go through the CDLL, GIL released.
    Both are function pointers without argtypes, called with prebuilt
    ctypes objects (see _fastcall)."""
    return ctypes.PyDLL(L.path, handle=L.dll._handle)["colio_work_step"]


def _view_maker(w):
    """PyMemoryView_FromMemory and its arguments for a writable memoryview
    of the part in w (a Work), with no argument conversion: ctypes objects
    that alias w's buf and size fields. Through argtypes the three
    conversions cost a microsecond per part."""
    make = ctypes.pythonapi["PyMemoryView_FromMemory"]  # a fresh pointer: no argtypes
    make.restype = ctypes.py_object
    buf = ctypes.c_void_p.from_buffer(w, _lib.Work.buf.offset)
    size = ctypes.c_ssize_t.from_buffer(w, _lib.Work.size.offset)
    write = ctypes.c_int(0x200)  # PyBUF_WRITE
    return make, buf, size, write


def _work() -> None:
    L = _lib.L
    w = _lib.Work()
    ref = ctypes.byref(w)
    notes = (_lib.WorkNote * _NOTES)()
    # The notes as 64- and 32-bit integers: indexing these is cheaper than
    # a Structure per note (colio_work_note: tag, future, nbytes, status).
    q = (ctypes.c_int64 * (4 * _NOTES)).from_buffer(notes)
    d = (ctypes.c_int32 * (8 * _NOTES)).from_buffer(notes)
    got = ctypes.c_int64(0)
    got_ref = ctypes.byref(got)
    tok, res = ctypes.c_int64(0), ctypes.c_int64(0)
    zero, wait_ns, most = ctypes.c_int64(0), ctypes.c_int64(_TAKE_NS), ctypes.c_int64(_NOTES)
    # One call hands a part back, collects the ends of reads (their
    # futures are completed here, see _work_futures) and takes the next
    # part, without giving up the GIL while parts are queued (poll), and
    # no other thread takes the GIL to complete a future.
    wait, poll = L.dll["colio_work_wait"], _poll_step(L)
    complete = _work_futures.complete
    me = threading.current_thread()
    ok, closed, forked, timedout = _lib.OK, _lib.ECLOSED, _lib.EFORK, _lib.ETIMEDOUT
    callbacks, by_view = _callbacks, _by_view
    view, vbuf, vsize, vwrite = _view_maker(w)
    while True:
        rc = poll(tok, res, zero, ref, notes, most, got_ref)
        tok.value = 0
        if rc == timedout:
            # Nothing queued: wait with the GIL released, and take what
            # came by polling once the GIL is back (a part taken before
            # would be stuck with this thread while another runs).
            rc = wait(wait_ns)
            if rc == ok:
                continue
        if got.value:
            complete(q, d, got.value)
        if rc == ok:
            if not w.token:
                continue  # only notes
            if len(_threads) <= w.out:
                _more(L, w.out)  # the next part must find a thread waiting
            ctx = w.ctx
            run = callbacks.get(ctx)
            if run is None:
                res.value = -_errno.EIO
            elif ctx in by_view:
                res.value = run(view(vbuf, vsize, vwrite), w.buf, w.size, w.offset)
            else:
                res.value = run(w.buf, w.size, w.offset)
            tok.value = w.token
            continue
        if _lib._forked or rc == forked:
            return
        if rc != closed:
            continue  # ETIMEDOUT: take again
        with _lock:
            # No source open (ECLOSED): exit, unless a source is being made right now (its ctx is
            # registered before the library knows it; start() then finds
            # this thread gone and starts another).
            if not callbacks:
                _threads.discard(me)
                return
        time.sleep(0.001)


def thread_count() -> int:
    """The worker threads alive now (for tests)."""
    with _lock:
        return len(_threads)


def _after_fork_in_child() -> None:
    global _lock, _threads, _callbacks, _by_view
    _lock = threading.RLock()
    _threads = set()
    _callbacks = {}
    _by_view = set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
