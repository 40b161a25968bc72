"""The sources a ColioFileSystem keeps open, one per path, least recently
used first out.

A source is opened once per path and reused by every cat_file, cat_ranges
and open of that path, so a Dask task that reads twenty ranges of one
object pays one open (a HEAD request for HTTP) instead of twenty. A source
is leased while a call uses it: eviction, invalidation and close only mark
it, and the last lease to end closes it, so no read ever finds its source
closed under it by another thread's eviction.

Each entry carries a token (for local files the inode, size and mtime; for
memory the size and creation time; None for remote objects): a lease whose
token differs from the cached one reopens the path, so a file replaced
behind the file system's back is not read through a stale descriptor.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class _Entry:
    __slots__ = ("src", "token", "users", "dropped")

    def __init__(self, src, token):
        self.src, self.token, self.users, self.dropped = src, token, 0, False


class SourceCache:
    def __init__(self, opener, capacity: int):
        self._open = opener  # path -> Source
        self._capacity = max(int(capacity), 1)
        self._lock = threading.Lock()
        self._entries: "OrderedDict[str, _Entry]" = OrderedDict()

    def acquire_cached(self, path: str, token):
        """A leased entry for path if one is open already, else None (never
        opens: for callers on an event loop, which must not block)."""
        with self._lock:
            e = self._entries.get(path)
            if e is not None and e.token == token:
                e.users += 1
                self._entries.move_to_end(path)
                return e
        return None

    def acquire(self, path: str, token) -> _Entry:
        """A leased entry for path; release it with release()."""
        with self._lock:
            e = self._entries.get(path)
            if e is not None and e.token == token:
                e.users += 1
                self._entries.move_to_end(path)
                return e
        # Opened outside the lock: an open may wait on the network, and other
        # paths must not wait behind it.
        e = _Entry(self._open(path), token)
        e.users = 1
        closing = []
        with self._lock:
            old = self._entries.pop(path, None)
            if old is not None:
                closing.append(self._drop(old))
            self._entries[path] = e
            while len(self._entries) > self._capacity:
                _, victim = self._entries.popitem(last=False)
                closing.append(self._drop(victim))
        _close_all(closing)
        return e

    def release(self, e: _Entry) -> None:
        with self._lock:
            e.users -= 1
            last = e.dropped and e.users == 0
        if last:
            _close_all([e.src])

    def invalidate(self, paths=None) -> None:
        """Forgets the given paths (None: all); their sources close once
        their last lease ends."""
        closing = []
        with self._lock:
            keys = list(self._entries) if paths is None else [p for p in paths
                                                               if p in self._entries]
            for k in keys:
                closing.append(self._drop(self._entries.pop(k)))
        _close_all(closing)

    close = invalidate

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _drop(e: _Entry):
        """Marks e as out of the cache; returns its source if nobody holds
        it (to close after the lock is released), else None."""
        e.dropped = True
        return e.src if e.users == 0 else None


def _close_all(sources) -> None:
    for s in sources:
        if s is not None:
            try:
                s.close()
            except Exception:  # noqa: BLE001 - a failing close must not fail a read
                pass
