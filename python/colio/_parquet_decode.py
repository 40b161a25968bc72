"""Row groups decoded on several threads at once, the tables kept in the
order asked (colio.parquet.read_table; issue 16).

``ParquetFile.read_row_groups(use_threads=True)`` spreads one call's
columns over pyarrow's CPU pool, but the rest of a call (reading the pages
of a column chunk one after another, assembling the table) runs on the
calling thread: with 3 of 30 columns the decode ran on one core of two,
and polars, which decodes row groups in parallel, was ahead. Here each
run of row groups is a task on a small pool of long-lived threads (as many
as pyarrow's CPU count), started as soon as its bytes are in; pyarrow
releases the GIL while it decodes, so the tasks run at once. A read has
at most one piece per thread running or queued: the next one is cut only
when a thread is free, and holds every row group that arrived meanwhile
(with no latency row groups arrive one by one, and a call per row group
cost more CPU than the threads saved).

Each thread decodes through a ParquetFile of its own over the same memory
(a reader is not documented to be safe under concurrent calls; making one
over known metadata costs microseconds). A failed task stops the ones not
yet started; ``close`` waits for the running ones, so no decode reads the
buffer after the read has returned or raised.
"""

from __future__ import annotations

import os
import threading

_pool = None
_pool_pid = None       # the process that made _pool
_pool_lock = threading.Lock()


def workers() -> int:
    """How many row groups are decoded at once: pyarrow's CPU count (its
    own pool's size, which pa.set_cpu_count changes)."""
    import pyarrow as pa
    return max(1, pa.cpu_count())


def _executor(n):
    """The process's decode threads, at least n of them (a larger CPU count
    set later gets a larger pool; the old one finishes what it holds). A
    forked child gets a pool of its own: the parent's threads do not exist
    there, and its executor, which believes they do, would queue the work
    for nobody (a local path's read needs no colio call that would refuse
    to run after a fork)."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool._max_workers < n or _pool_pid != os.getpid():
            from concurrent.futures import ThreadPoolExecutor
            _pool = ThreadPoolExecutor(n, thread_name_prefix="colio-parquet-decode")
            _pool_pid = os.getpid()
        return _pool


class Ordered:
    """Decodes pieces (lists of row groups) on the pool and hands back their
    tables in the order the pieces were given. ``opener()`` makes a
    ParquetFile (one per thread and read); ``decode(pf, rgs)`` turns one
    piece into a table."""

    def __init__(self, opener, decode, n=None):
        self._opener, self._decode = opener, decode
        self._n = workers() if n is None else n
        self._files = {}          # thread id -> that thread's ParquetFile
        self._lock = threading.Lock()
        self._stop = False        # a piece failed, or close(): start nothing more
        self._futures = []
        self._busy = 0            # pieces of this read running or queued
        self._cv = threading.Condition(threading.Lock())

    @property
    def parallel(self) -> int:
        return self._n

    def wait_free(self, limit=None) -> None:
        """Waits until fewer than ``limit`` (None: the thread count) pieces
        of this read are running or queued."""
        limit = self._n if limit is None else max(1, min(limit, self._n))
        if self._n > 1:
            with self._cv:
                while self._busy >= limit:
                    self._cv.wait()

    def submit(self, rgs) -> None:
        """Decodes rgs, now on the calling thread without a pool, else on
        the pool once a thread of this read is free (waiting for it)."""
        if self._n <= 1:
            self._futures.append(_Done(self._run(list(rgs))))
            return
        with self._cv:
            while self._busy >= self._n:
                self._cv.wait()
            if self._stop:  # a piece failed meanwhile: tables() raises it
                return
            self._busy += 1
        try:
            self._futures.append(_executor(self._n).submit(self._counted_run, list(rgs)))
        except BaseException:
            self._done_one()
            raise

    def _counted_run(self, rgs):
        try:
            return self._run(rgs)
        finally:
            self._done_one()

    def _done_one(self):
        with self._cv:
            self._busy -= 1
            self._cv.notify_all()

    def _run(self, rgs):
        if self._stop:
            return None
        key = threading.get_ident()
        with self._lock:
            pf = self._files.get(key)
        if pf is None:
            pf = self._opener()
            with self._lock:
                self._files[key] = pf
        try:
            return self._decode(pf, rgs)
        except BaseException:
            self._stop = True
            raise

    def tables(self) -> list:
        """The pieces' tables in order; the first failure (in that order)
        raises, once nothing of this read is running any more."""
        try:
            return [f.result() for f in self._futures]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Starts nothing more, waits for what runs, drops the readers (they
        refer to the read's memory)."""
        self._stop = True
        for f in self._futures:
            f.cancel()
        for f in self._futures:
            try:
                f.exception()
            except BaseException:  # noqa: BLE001 - cancelled or failed: over either way
                pass
        with self._lock:
            self._files.clear()
        self._futures = []


class _Done:
    """A finished piece, for a read without the pool."""

    def __init__(self, value):
        self._value = value

    def result(self):
        return self._value

    def cancel(self):
        return False

    def exception(self):
        return None
