"""Footers of remote Parquet objects kept between reads (colio.parquet;
issue 16).

A read of a remote Parquet file costs two round trips: the footer, then
the column chunks it names. A process that reads the same object again
(a dashboard's query, Dask tasks that each read some row groups of one
file) pays the first again for bytes it already has. So the footer of
an object the server gave a strong ETag is kept here, by URL and
storage options, with the object's size and ETag; the next read opens
the object with ``size=`` and ``etag=`` (no request at open) and fetches
the chunks at once, every GET carrying ``If-Match``. If the object
changed meanwhile the server refuses (412, ESTALE), the entry is
dropped and the read starts over from the footer: a kept footer costs
one failed round trip when stale, and can never pair with another
version's bytes. An object without a strong ETag (weak, or none: a
Last-Modified's one-second resolution cannot tell two writes apart) is
never kept, nor one whose answer said it was modified less than a second
before (``Source.etag_stable``): a server whose ETag comes from the
modification time in seconds, as nginx's does, can give a second write
within that second the same ETag.

Bounded: at most MAX_ENTRIES footers and MAX_BYTES of their bytes, the
least recently used going first. Only the footer's bytes are kept, not
the rest of the tail the open read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_ENTRIES = 256
MAX_BYTES = 64 << 20

_lock = threading.Lock()
_entries: "OrderedDict[tuple, Footer]" = OrderedDict()
_bytes = 0


class Footer:
    """What a read needs of an object it has read before: its size and
    ETag, the footer's bytes (``tail``, from ``tail_off`` to the end) and
    the parsed metadata (``md``, a pyarrow FileMetaData: read-only, shared
    by concurrent reads)."""

    __slots__ = ("size", "etag", "tail_off", "tail", "md", "hole")

    def __init__(self, size, etag, tail_off, tail, md):
        self.size, self.etag, self.tail_off, self.tail, self.md = size, etag, tail_off, tail, md
        self.hole = None  # (hole, max) of the source that read it (its measured rule)


def key(url: str, storage_options: dict):
    """The entry's key for url opened with storage_options, or None when
    the value of an option cannot be part of one."""
    try:
        opts = tuple(sorted((k, repr(v)) for k, v in storage_options.items()
                            if k not in ("size", "etag", "prefetch_tail", "prefetch")))
    except TypeError:
        return None
    return (url, opts)


def keepable(etag: str) -> bool:
    """Whether an ETag identifies one version: strong, and plain ASCII
    (it goes back to the server as the If-Match it sent)."""
    return bool(etag) and not etag.startswith("W/") and etag.isascii()


def get(k):
    if k is None:
        return None
    with _lock:
        f = _entries.get(k)
        if f is not None:
            _entries.move_to_end(k)
        return f


def put(k, footer: Footer) -> None:
    global _bytes
    if k is None or len(footer.tail) > MAX_BYTES // 4:
        return
    with _lock:
        old = _entries.pop(k, None)
        if old is not None:
            _bytes -= len(old.tail)
        _entries[k] = footer
        _bytes += len(footer.tail)
        while len(_entries) > MAX_ENTRIES or _bytes > MAX_BYTES:
            _, f = _entries.popitem(last=False)
            _bytes -= len(f.tail)


def drop(k, footer: Footer) -> None:
    """Forgets k's entry if it is still footer (a concurrent read may have
    put a newer one)."""
    global _bytes
    with _lock:
        if _entries.get(k) is footer:
            del _entries[k]
            _bytes -= len(footer.tail)


def clear() -> None:
    global _bytes
    with _lock:
        _entries.clear()
        _bytes = 0
