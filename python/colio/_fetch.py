"""Whole remote objects fetched by the library (``colio_fetch_urls``), each
ending as an asyncio future: what colio.zarr.Store reads a chunk with.

A chunk read through a source costs Python an open (a blocking call that
waits on the network, so a thread parked in it), a read and a close. A
fetch is one non-blocking call for any number of URLs: the library opens,
reads and closes each object on its own goroutines and posts its end to a
completion queue. One thread here waits on that queue (the GIL released)
and hands what a wake-up collected to each event loop with one
``call_soon_threadsafe``, where the bytes are copied out and the futures
completed: no thread per object, no wake-up of the loop per object.

    f = Fetcher(url, storage_options)   # options checked and encoded once
    futs = f.fetch([url1, url2, ...])   # on a running loop; asyncio futures
    fut = f.get(url)                    # gathered with the loop iteration's others

Each future's result is the object's bytes; its exception what opening
the URL would raise (a 404 is FileNotFoundError).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from ctypes import byref, c_char_p, c_void_p

from . import _lib, _remote
from . import _cq
from ._cq import status as _cq_status
from ._buffers import new_bytes
from ._errors import last_error
from ._handle import lib

__all__ = ["Fetcher"]

_ENTRIES = 512
_LOW = (1 << 32) - 1
_live: dict = {}            # key -> _Fetch, until every object has been delivered
_keys = itertools.count(1)


class _Fetch:
    __slots__ = ("h", "loop", "futs", "left", "secrets", "key")


class Fetcher:
    """Fetches whole objects of one scheme with one set of storage options
    (translated as colio.source translates them; raises NotUnderstood for
    an option the native sources do not take)."""

    def __init__(self, url: str, storage_options: dict):
        pairs = _remote.translate(url, storage_options)
        self._secrets = [v for k, v in pairs if k in _remote._SECRET_KEYS or k.startswith("header.")]
        self._opts = (c_char_p * (len(pairs) + 1))(*[f"{k}={v}".encode() for k, v in pairs], None)
        self._pending: dict = {}  # loop -> (urls, futures) gathered for its next iteration

    def get(self, url: str):
        """An asyncio future of url's bytes, on the running loop. The URLs
        asked for in one iteration of the loop (zarr starts up to
        async.concurrency gets at once, and resumes many together when a
        batch of ends arrives) are started by one call, just after it."""
        loop = asyncio.get_running_loop()
        enc = _encode(url)
        fut = loop.create_future()
        p = self._pending.get(loop)
        if p is None:
            p = self._pending[loop] = ([], [])
            loop.call_soon(self._flush, loop)
        p[0].append(enc)
        p[1].append(fut)
        return fut

    def _flush(self, loop) -> None:
        enc, futs = self._pending.pop(loop)
        try:
            self._start(loop, enc, futs)
        except Exception as exc:  # noqa: BLE001 - the call's refusal is each future's
            for f in futs:
                if not f.done():
                    f.set_exception(exc)

    def fetch(self, urls) -> list:
        """One asyncio future per URL, on the running loop, all started now."""
        loop = asyncio.get_running_loop()
        enc = [_encode(u) for u in urls]
        futs = [loop.create_future() for _ in enc]
        if futs:
            self._start(loop, enc, futs)
        return futs

    def _start(self, loop, enc, futs) -> None:
        L = lib()
        cq = _queue.get(L)
        fx = _Fetch()
        fx.loop, fx.futs, fx.left, fx.key = loop, futs, len(futs), next(_keys)
        fx.secrets = self._secrets + [u.partition(b"?")[2].decode() for u in enc]
        h = c_void_p()
        _live[fx.key] = fx  # before the call: an entry may come before it returns
        rc = _calls(L)[0]((c_char_p * len(enc))(*enc), len(enc), self._opts, cq,
                          fx.key << 32, byref(h))
        if rc:
            del _live[fx.key]
            raise _remote._scrub(last_error(rc), fx.secrets)
        fx.h = h.value


def _encode(url: str) -> bytes:
    if "\x00" in url:
        raise _remote.InvalidArgumentError(
            f"colio: embedded null byte in the URL {_remote.redact_url(url)!r}")
    return url.encode()


_held = None


def _calls(L):
    """colio_fetch_urls, colio_fetch_copy and colio_future_free that keep
    the GIL (PyDLL): none of them waits (the first only starts goroutines,
    the others copy or drop what has ended), and releasing the GIL on the
    loop for a call of microseconds hands it to a busy thread (zarr's
    decoders) that keeps it for up to the 5 ms switch interval."""
    global _held
    if _held is None:
        import ctypes
        d = ctypes.PyDLL(L.path, handle=L.dll._handle)
        fns = []
        for name in ("colio_fetch_urls", "colio_fetch_copy", "colio_future_free"):
            f = d[name]
            f.restype, f.argtypes = _lib.FUNCTIONS[name]
            fns.append(f)
        _held = tuple(fns)
    return _held


def _handler(L):
    """The queue's thread: what one wake-up collected goes to each loop in
    one call."""
    def handle(buf, count):
        by_loop: dict = {}
        for j in range(0, 3 * count, 3):
            ctx = buf[j]
            fx = _live.get(ctx >> 32)
            if fx is not None:
                by_loop.setdefault(fx.loop, []).append(
                    (fx, ctx & _LOW, _cq_status(buf[j + 2]), buf[j + 1]))
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_deliver, items)
            except RuntimeError:  # the loop is closed: nobody awaits these
                _drop(L, items)
    return handle


_queue = _cq.Queue("colio-fetches", _ENTRIES, _handler)


def _deliver(items) -> None:
    """On the loop: copy each object's bytes out and complete its future."""
    L = lib()
    _, copy, free = _calls(L)
    for fx, i, st, nbytes in items:
        fut = fx.futs[i]
        if st == 0:
            b, addr = new_bytes(nbytes)
            rc = copy(fx.h, i, addr, nbytes, None)
        else:
            b, rc = None, copy(fx.h, i, None, 0, None)
        if not fut.done():  # not cancelled by its awaiter
            if rc:
                fut.set_exception(_remote._scrub(last_error(rc), fx.secrets))
            else:
                fut.set_result(b)
        _ended(fx, free)


def _drop(L, items) -> None:
    for fx, _i, _st, _n in items:
        _ended(fx, L.colio_future_free)


def _ended(fx, free) -> None:
    fx.left -= 1
    if fx.left == 0:
        _live.pop(fx.key, None)
        free(fx.h)  # done: every object ended before its entry came, so no wait


def _after_fork_in_child() -> None:
    _queue.forget()
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
