"""Reads of an async fsspec source, run as coroutines on the file system's
own event loop (``via="loop"``, see colio._fsspec).

A coroutine fills a buffer that belongs to someone else: the caller's
(``read_into``, ``read_async``) or colio's (``read``, ``read_ranges*``).
Its owner may stop waiting at any moment: Ctrl-C or an exception from a
signal handler interrupts a synchronous call, ``Future.cancel()`` gives a
buffer back. So every read writes through a :class:`_Gate` that the owner
shuts before it lets go; once ``shut()`` returns, no byte is written into
the buffer again, whatever the coroutine is doing. An interrupted call
also cancels its coroutines and waits (at most ``CANCEL_WAIT`` seconds)
for the cancellation to be acknowledged, so its requests stop too.

``close()`` fails the reads that have not started (still queued for one
of the ``max_in_flight`` slots, or not yet scheduled) with ClosedError at
once; the running ones finish.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading

from . import _future, _lib
from ._errors import ClosedError, InvalidArgumentError
from ._fsspec_bytes import copy as _copy
from ._fsspec_bytes import too_long as _too_long

# How long an interrupted call waits for its cancelled coroutines to end
# before it raises anyway (its gate is shut by then, so that is safe).
CANCEL_WAIT = 2.0


class _Abandoned(Exception):
    """A read's owner let go of its buffer: the coroutine stops."""


class _Gate:
    """The destination of one read, open to the coroutines that fill it
    until its owner shuts it."""

    __slots__ = ("lock", "open", "finished")

    def __init__(self):
        self.lock = threading.Lock()
        self.open = True
        self.finished = False  # the read completed its future (see _one)

    def copy(self, addr, data, k) -> None:
        # The loop copies under the lock so that shut() can wait out a copy
        # already under way instead of letting the buffer go under it.
        with self.lock:
            if not self.open:
                raise _Abandoned()
            _copy(addr, data, k)

    def shut(self) -> None:
        self.open = False  # no copy starts after this store...
        while True:
            try:
                with self.lock:  # ...and one under way has ended
                    return
            except KeyboardInterrupt:  # a second Ctrl-C must not skip the wait
                continue


class _Read:
    """One read on the loop: its gate, the task running it, and an event
    set when that task has ended (the cancel acknowledged)."""

    __slots__ = ("gate", "task", "ended", "loop")

    def __init__(self, loop):
        self.gate = _Gate()
        self.task = None
        self.ended = threading.Event()
        self.loop = loop

    def started_on_loop(self) -> None:
        self.task = asyncio.current_task()
        if not self.gate.open:  # abandoned before it ran: abandon() saw no task
            raise _Abandoned()

    def abandon(self) -> None:
        """Shuts the gate, then cancels the coroutine (from any thread)."""
        self.gate.shut()
        task = self.task
        if task is not None:
            try:
                self.loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop is closed: nothing runs any more
                pass

    def cancel_hook(self) -> bool:
        """Future.cancel() of an asynchronous read: True unless the read
        already completed its future."""
        if self.ended.is_set():
            return False
        self.abandon()
        return not self.gate.finished


def _wait_ended(reads, timeout) -> None:
    import time
    deadline = time.monotonic() + timeout
    for r in reads:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            r.ended.wait(left)
        except KeyboardInterrupt:  # another Ctrl-C: stop waiting; the gates are shut
            return


class LoopReader:
    """Runs a source's reads as coroutines on an async file system's loop."""

    def __init__(self, fs, path, size, max_in_flight):
        from . import get_config
        self.fs = fs
        self.path = path
        self.size = size
        self.max_in_flight = max_in_flight
        self.chunk = max(int(get_config()["task_size"]), 1)
        self._sem = None
        self._queued = set()  # tasks waiting for a slot (cancelled by close)
        self.closed = False
        self.name = path
        self.in_flight = 0
        self.peak_in_flight = 0

    # -- on the loop ------------------------------------------------------------

    def _closed_error(self):
        return ClosedError(f"colio: I/O operation on a closed source ({self.name})")

    async def _cat(self, off, n):
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.max_in_flight)
        if self.closed:
            raise self._closed_error()
        task = asyncio.current_task()
        self._queued.add(task)
        try:
            await self._sem.acquire()
        except asyncio.CancelledError:
            if self.closed:  # close() cancelled the wait: the read never started
                raise self._closed_error() from None
            raise
        finally:
            self._queued.discard(task)
        try:
            if self.closed:  # closed while it waited for the slot
                raise self._closed_error()
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                data = await self.fs._cat_file(self.path, start=off, end=off + n)
            finally:
                self.in_flight -= 1
        finally:
            self._sem.release()
        if len(data) > n:
            raise _too_long(self.path, len(data), n, off)
        return data

    async def _fill(self, gate, addr, n, off):
        """Reads [off, off+n) into addr through gate; returns the bytes read."""
        if n == 0:
            return 0
        if n <= self.chunk:
            parts = [(off, n)]
            datas = [await self._cat(off, n)]
        else:
            parts = [(off + i, min(self.chunk, n - i)) for i in range(0, n, self.chunk)]
            datas = await asyncio.gather(*(self._cat(o, s) for o, s in parts))
        total = 0
        for (o, s), d in zip(parts, datas):
            k = len(d)
            if k:
                gate.copy(addr + (o - off), d, k)
            total += k
            if k < s:
                break  # the source ended early
        return total

    async def _run(self, read, fn, *args):
        """fn(*args) for a synchronous call, which waits on read.ended."""
        try:
            read.started_on_loop()
            return await fn(*args)
        finally:
            read.ended.set()

    async def _one(self, fut, read, addr, n, off):
        try:
            read.started_on_loop()
            got = await self._fill(read.gate, addr, n, off)
        except BaseException as e:  # noqa: BLE001 - fail the future, whatever it is
            if self._settle(read):
                try:
                    fut.set_exception(e)
                except Exception:
                    pass
            if not isinstance(e, Exception):
                raise
            return
        finally:
            fut._pin = None  # nothing writes into the buffer any more
            read.ended.set()
        if self._settle(read):
            fut._finish(0, got)

    @staticmethod
    def _settle(read) -> bool:
        """Whether this read completes its own future: not once its future
        was cancelled (Future.cancel completes it then)."""
        gate = read.gate
        with gate.lock:
            if not gate.open:
                return False
            gate.finished = True
            return True

    async def _batch(self, work):
        await asyncio.gather(*(self._one(*w) for w in work), return_exceptions=True)

    def _fail_queued(self) -> None:
        for task in list(self._queued):
            task.cancel()

    # -- on the caller's thread ---------------------------------------------------

    def _check(self, src, n, off):
        if _lib.forked():  # the file system's loop thread is the parent's
            raise _lib.fork_error(f"colio: {self.path}")
        if src._closed or self.closed:
            raise ClosedError(f"colio: I/O operation on a closed source ({src.name})")
        if off > self.size:
            raise InvalidArgumentError(
                f"colio: read at offset {off} starts past the end of the source ({self.size} bytes)")
        return min(n, self.size - off)

    def _loop(self):
        loop = self.fs.loop
        if loop is None or loop.is_closed():
            raise RuntimeError(f"colio: {self.path}: the file system's event loop is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise NotImplementedError(
                f"colio: {self.path}: a synchronous read from inside the file system's own "
                "event loop would wait for itself; use read_async and await it")
        return loop

    def _call(self, fn, *args):
        """Runs fn(gate, *args) on the loop and waits for it. If the wait is
        interrupted, the read is abandoned (no byte written after this
        returns), its coroutine cancelled and waited for, briefly."""
        loop = self._loop()
        read = _Read(loop)
        try:  # an interrupt that lands before cf exists abandons the read too
            cf = asyncio.run_coroutine_threadsafe(self._run(read, fn, read.gate, *args), loop)
            return cf.result()
        except BaseException:
            if not read.ended.is_set():
                read.abandon()
                _wait_ended([read], CANCEL_WAIT)
            raise

    def submit(self, src, items):
        checked = [self._check(src, n, off) for (_, _, n, off, _) in items]
        loop = self.fs.loop
        futs, work = [], []
        for (pin, addr, _, off, wrap), n in zip(items, checked):
            f = _future.Future()
            f._pin, f._wrap, f._owner = pin, wrap, src
            read = _Read(loop)
            f._cancel_hook = read.cancel_hook
            f._loop_read = read
            futs.append(f)
            work.append((f, read, addr, n, off))
        if work:
            asyncio.run_coroutine_threadsafe(self._batch(work), loop)
        return futs

    def results(self, futs):
        """The results of futs from submit(), for read_ranges: if the wait
        is interrupted, every read still running is cancelled (and waited
        for, briefly) before the exception goes on."""
        try:
            return [f.result() for f in futs]
        except BaseException:
            for f in futs:
                f.cancel()
            _wait_ended([f._loop_read for f in futs], CANCEL_WAIT)
            raise

    def read_into(self, src, pin, addr, n, off):
        n = self._check(src, n, off)
        if n == 0:
            return 0
        return self._call(self._fill, addr, n, off)

    async def _cat_bytes(self, gate, off, n):
        return await self._cat(off, n)

    def read_bytes(self, src, off, n):
        n = self._check(src, n, off)
        if n == 0:
            return b""
        if n <= self.chunk:
            data = self._call(self._cat_bytes, off, n)
            return data if type(data) is bytes else bytes(data)
        buf = bytearray(n)
        pin = (ctypes.c_char * n).from_buffer(buf)
        got = self.read_into(src, pin, ctypes.addressof(pin), n, off)
        del pin
        return bytes(memoryview(buf)[:got])

    def close(self):
        """Fails the reads that have not started; running ones finish."""
        self.closed = True
        loop = self.fs.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # closed from a coroutine (or a finaliser) on the loop
            self._fail_queued()
            return
        try:
            loop.call_soon_threadsafe(self._fail_queued)
        except RuntimeError:  # closed meanwhile
            pass
