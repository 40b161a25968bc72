"""The info of listed files, fetched in one fan-out: what a ColioFileSystem
answers ``info``, ``checksum``, ``size`` and ``ukey`` from after a listing.

Dask builds a collection by asking the file system about every file, one
after another: read_parquet a ``checksum``, read_csv an ``info`` per path,
each a HEAD for an HTTP target, so 12 files at 20 ms are 240 ms before
anything is read. When a ColioFileSystem lists (``ls``, ``find``,
``glob``, ``expand_path``), the files it returns are the ones those calls
will name: it starts the info of every listed file at once on the target's
event loop (an async target: http, s3) and answers the calls that follow
from those answers.

fsspec's semantics are kept:

- an answer is the target's own ``info`` answer (the same dict), and
  ``checksum``, ``size`` and ``ukey`` are derived from it exactly as the
  target derives them, or asked of the target where it derives them
  otherwise;
- an answer lives ``LIFETIME`` seconds from its arrival, and is dropped by
  any write, removal or ``invalidate_cache`` through the file system;
- a failed info is not an answer: the call goes to the target, which
  raises (or answers) as it would have;
- a listing of more than ``MAX_FILES`` files starts nothing (a directory of
  a million objects must not become a million HEADs).

A listing's own entries are not taken as answers (an HTTP index page
gives names and no sizes; s3fs answers info from its listing cache
already): only what the target's info answered is.
"""

from __future__ import annotations

import asyncio
import threading
import time

LIFETIME = 10.0
MAX_FILES = 1000
WAIT_LIMIT = 300.0


class InfoCache:
    def __init__(self):
        self._lock = threading.Lock()
        self._entries: dict = {}  # path -> [future of the info, deadline or None while pending]
        self._epoch = 0           # bumped by invalidate: a fan-out started before it is not kept

    def prefetch(self, fs, paths) -> None:
        """Starts the target's info of each path, all at once, on fs's
        loop; returns at once. Each listing asks afresh: what an earlier
        one fetched is replaced, so an answer is never older than the
        listing before the call that takes it. fs must be async (fsspec's
        AsyncFileSystem with its own loop)."""
        with self._lock:
            todo = list(dict.fromkeys(paths))
            epoch = self._epoch
            if not todo:
                return
            futs = {p: _Pending(fs.loop) for p in todo}
            for p, f in futs.items():
                self._entries[p] = [f, None]

        async def one(p):
            try:
                info = await fs._info(p)
            except Exception as exc:  # noqa: BLE001 - a failure is no answer
                info = exc
            self._arrived(p, futs[p], info, epoch)

        async def all_of():
            await asyncio.gather(*(one(p) for p in todo))

        try:
            asyncio.run_coroutine_threadsafe(all_of(), fs.loop)
        except Exception:  # noqa: BLE001 - no loop: the calls go to the target
            self.invalidate(todo)

    def _arrived(self, path, fut, info, epoch) -> None:
        with self._lock:
            e = self._entries.get(path)
            if e is not None and e[0] is fut:
                if isinstance(info, Exception) or epoch != self._epoch:
                    del self._entries[path]
                else:
                    e[1] = time.monotonic() + LIFETIME
        fut.set(None if isinstance(info, Exception) else info)

    def get(self, path):
        """The prefetched info of path (a copy), or None: not listed, expired,
        failed or invalidated. A fan-out still in flight is waited for: its
        answer is nearer than a new request's."""
        with self._lock:
            e = self._entries.get(path)
            if e is None:
                return None
            fut, deadline = e
            if deadline is not None and deadline <= time.monotonic():
                del self._entries[path]
                return None
        info = fut.wait()
        if info is None:  # failed, or not to be waited for here
            return None
        with self._lock:  # invalidated while it was waited for
            e = self._entries.get(path)
            if e is None or e[0] is not fut:
                return None
        return dict(info)

    def invalidate(self, paths=None) -> None:
        with self._lock:
            self._epoch += 1
            if paths is None:
                self._entries.clear()
            else:
                for p in paths:
                    self._entries.pop(p, None)


class _Pending:
    """One info's answer, set once from the target's loop."""

    __slots__ = ("_ev", "_value", "_loop")

    def __init__(self, loop):
        self._ev = threading.Event()
        self._value = None
        self._loop = loop

    def set(self, value) -> None:
        self._value = value
        self._ev.set()

    def wait(self):
        """The answer, or None where waiting cannot end (on the target's
        own loop, which runs the fan-out) or does not (WAIT_LIMIT: the
        target's own timeouts end an info long before)."""
        if not self._ev.is_set():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self._loop or not self._ev.wait(WAIT_LIMIT):
                return None
        return self._value


def listed_files(result):
    """The file paths of a listing's result: ls/find/glob with or without
    detail, expand_path's list."""
    if isinstance(result, dict):  # find/glob(detail=True): path -> info
        return [p for p, i in result.items() if not _is_dir(i)]
    out = []
    for r in result or ():
        if isinstance(r, dict):
            if not _is_dir(r) and r.get("name"):
                out.append(r["name"])
        elif isinstance(r, str) and not r.endswith("/"):
            out.append(r)
    return out


def _is_dir(info) -> bool:
    return isinstance(info, dict) and info.get("type") == "directory"


# ---- the ColioFileSystem methods ---------------------------------------------------

def _infos(fs) -> InfoCache:
    c = fs.__dict__.get("_infos")
    if c is None:
        c = fs.__dict__.setdefault("_infos", InfoCache())
    return c


def _prefetches(fs) -> bool:
    """Whether listing fs's target starts the fan-out: an async target
    with its own loop (http, s3); a local or memory one answers info
    without a round trip."""
    t = fs.fs
    return bool(getattr(t, "async_impl", False)) and getattr(t, "loop", None) is not None


def _listing(name):
    def method(self, *args, **kwargs):
        out = getattr(self.fs, name)(*args, **kwargs)
        if _prefetches(self):
            files = listed_files(out)
            if 0 < len(files) <= MAX_FILES:
                _infos(self).prefetch(self.fs, files)
        return out
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"The target file system's ``{name}``; the info of the files it "
                      "returns is fetched at once, in the background (colio._fsspec_info).")
    return method


def _info(self, path, **kwargs):
    """The target's info of path: the listing fan-out's answer where there
    is a fresh one (colio._fsspec_info), else the target's own."""
    if not kwargs and "_infos" in self.__dict__:
        got = self._infos.get(self._path(path))
        if got is not None:
            return got
    return self.fs.info(path, **kwargs)


def _derived(name):
    """checksum, size, ukey: from info as fsspec's defaults derive them
    where the target keeps those defaults (so the answer is the one the
    target would give from the same info), else the target's own."""
    from fsspec.spec import AbstractFileSystem
    default = getattr(AbstractFileSystem, name)
    asynced = {"size": "_size"}.get(name)

    def method(self, path):
        t = type(self.fs)
        own = getattr(t, name, None) is default
        if not own and asynced and getattr(t, "async_impl", False):
            from fsspec.asyn import AsyncFileSystem
            own = getattr(t, asynced, None) is getattr(AsyncFileSystem, asynced)
        if own and "_infos" in self.__dict__:
            return default(self, path)  # through _info: the fan-out's answer if fresh
        return getattr(self.fs, name)(path)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The target file system's ``{name}`` (see colio._fsspec_info)."
    return method


LISTINGS = ("ls", "find", "glob", "expand_path")
DERIVED = ("checksum", "size", "ukey")


def install(cls) -> None:
    """Puts the listing, info and derived methods on cls (ColioFileSystem)."""
    for n in LISTINGS:
        setattr(cls, n, _listing(n))
    cls.info = _info
    for n in DERIVED:
        setattr(cls, n, _derived(n))
