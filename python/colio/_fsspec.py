"""fsspec sources.

Every range is read with ``fs.cat_file(path, start, end)`` (or the async
``fs._cat_file``): never through one file object shared across threads, so
reads of one source run concurrently.

Two ways to run the requests:

``via="workers"`` (the default for synchronous file systems: local,
memory, SFTP...)
    A callback source (concurrent, not fast: never inlined) whose read
    callback calls ``fs.cat_file`` on colio's workers. Up to ``threads``
    (COLIO_NTHREADS) requests are in flight per source call level, and the
    engine splits large ranges into ``task_size`` pieces.

``via="loop"`` (the default for async file systems: HTTP, S3, GCS...)
    A blocking callback would hold one colio worker per request, so at most
    ``threads`` requests could be in flight. Instead, reads are issued as
    coroutines (``fs._cat_file``) on the file system's own event loop, one
    task per range (large ranges split at ``task_size``), at most
    ``max_in_flight`` at once (default 256; aiohttp's connection pool may
    cap it lower), and complete colio.Future objects from the loop. No
    thread per request; hundreds can be in flight. The counters of
    ``colio.stats()`` do not see these reads.

Either way a response longer than the range asked for (a server that
ignores ``Range``) is an error, never silently sliced.

Two file systems need no Python at all, and with ``via="auto"`` get none:
a ``LocalFileSystem`` path opens colio's own file source (pread on the
engine's threads), and a ``MemoryFileSystem`` file becomes a memory source
over the file's bytes in place (not copied; the bytes the file holds at
open: a file replaced later, by ``pipe_file`` or a new ``open("wb")``, is
not seen, and appending to the same file object raises BufferError while
the source is open). Subclasses keep the fsspec path: they may change how
bytes are read. Either kind pickles as before, by file system and path.
"""

from __future__ import annotations

import ctypes

from ._buffers import index
from ._errors import ColioError, ColioIOError, InvalidArgumentError
from ._fsspec_bytes import copy as _copy
from ._fsspec_bytes import too_long as _too_long
from ._open_errors import no_nul, open_error
from ._source import Source, callback_source

DEFAULT_MAX_IN_FLIGHT = 256


def from_fsspec(fs, path: str, *, via: str = "auto", max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
                size: int | None = None) -> Source:
    """A source over ``path`` on the fsspec file system ``fs``.

    via: "auto" (loop for async file systems, workers otherwise), "workers"
    or "loop" (see the module documentation). size: the file's size if
    known (saves a metadata request).
    """
    if not hasattr(fs, "cat_file"):
        raise TypeError(f"colio.from_fsspec: {type(fs).__name__} is not an fsspec file system")
    if isinstance(path, str):
        no_nul(path)
    is_async = bool(getattr(fs, "async_impl", False))
    auto = via == "auto"
    if via == "auto":
        via = "loop" if is_async else "workers"
    if via not in ("workers", "loop"):
        raise ValueError(f"colio.from_fsspec: via must be 'auto', 'workers' or 'loop', not {via!r}")
    if via == "loop" and not is_async:
        raise ValueError(f"colio.from_fsspec: via='loop' needs an async file system; "
                         f"{type(fs).__name__} is synchronous")
    max_in_flight = index(max_in_flight, "max_in_flight")
    if max_in_flight < 1:
        raise InvalidArgumentError("colio.from_fsspec: max_in_flight must be at least 1")
    if size is not None:
        size = index(size, "size")
    if via == "workers" and auto:
        src = _native(fs, path, max_in_flight, size)
        if src is not None:
            return src
    if size is None:
        try:  # the first request: the back end's errors become colio's (see _open_errors)
            size = fs.size(path)
        except (ColioError, TypeError):
            raise
        except Exception as e:  # noqa: BLE001 - translated, not swallowed
            proto = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
            raise open_error(e, path if "://" in str(path) else f"{proto}://{path}") from e
        if size is None:
            raise ColioIOError(f"colio: {path}: the file system does not report its size; pass size=")
    size = index(size, "size")

    if is_async:
        from fsspec.asyn import sync

        loop, cat_async = fs.loop, fs._cat_file

        def cat(start, end):
            return sync(loop, cat_async, path, start=start, end=end)
    else:
        cat_sync = fs.cat_file

        def cat(start, end):
            return cat_sync(path, start=start, end=end)

    captures = _Captures()

    def fn(addr, n, offset):
        data = cat(offset, offset + n)
        k = len(data)
        if k > n:
            raise _too_long(path, k, n, offset)
        if k and not captures.keep(addr, data):
            _copy(addr, data, k)
        return k

    proto = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    name = path if "://" in path else f"{proto}://{path}"
    src = callback_source(fn, size, concurrent=True, fast=False, kind="fsspec",
                          description=(_rebuild, (fs, path, via, max_in_flight, None)),
                          name=name, keep=(fs,))
    src.fs, src.path, src.via = fs, path, via
    src._captures = captures
    if via == "loop":
        from ._fsspec_loop import LoopReader
        src._loop = LoopReader(fs, path, size, max_in_flight)
        src._loop.name = name
    return src


class _Capture:
    """Address space for the results of one read_ranges_async call on an
    fsspec source: reserved (an anonymous mapping that is never touched, so
    it costs no memory), handed to colio as the destination, and the bytes
    objects that fs.cat_file returns are kept as the results instead of
    being copied into it."""

    def __init__(self, total):
        import mmap
        self.mm = mmap.mmap(-1, max(total, 1))
        self.pin = ctypes.c_char.from_buffer(self.mm)
        self.base = ctypes.addressof(self.pin)
        self.end = self.base + max(total, 1)
        self.pieces = {}

    def result(self, addr, n):
        # A range owns [addr, addr + n) for the n bytes it read, and nothing
        # when it read none: a zero-length range is laid out at the same
        # address as the range after it, whose pieces it must not take.
        if n == 0:
            return memoryview(b"")
        # list() snapshots the keys in one step under the GIL: colio's workers
        # keep adding the pieces of other ranges of this call meanwhile.
        keys = sorted(a for a in list(self.pieces) if addr <= a < addr + n)
        parts = [self.pieces.pop(a) for a in keys]
        if len(parts) == 1 and keys[0] == addr and len(parts[0]) == n:
            return memoryview(parts[0]).cast("B")  # zero copy
        return memoryview(b"".join(parts)[:n])


class _Captures:
    """The live _Capture regions of one source (looked up by address from
    the read callback)."""

    def __init__(self):
        import weakref
        self.regions = weakref.WeakValueDictionary()

    def keep(self, addr, data) -> bool:
        if not self.regions:
            return False
        for r in list(self.regions.values()):
            if r.base <= addr < r.end:
                r.pieces[addr] = data
                return True
        return False

    def new(self, total) -> _Capture:
        r = _Capture(total)
        self.regions[r.base] = r
        return r


def _native(fs, path, max_in_flight, size=None):
    """colio's own file or memory source for a plain LocalFileSystem or
    MemoryFileSystem path (see the module documentation), else None."""
    import sys
    kind = None
    local = sys.modules.get("fsspec.implementations.local")
    memory = sys.modules.get("fsspec.implementations.memory")
    if local is not None and type(fs) is local.LocalFileSystem:
        kind = "file"
    elif memory is not None and type(fs) is memory.MemoryFileSystem:
        kind = "memory"
    else:
        return None
    if size is not None and kind == "file":
        return None  # a given size is the size: the native file source follows the file's
    p = fs._strip_protocol(path)
    description = (_rebuild, (fs, path, "auto", max_in_flight, size))
    if kind == "file":
        from ._source import _open_file
        src = _open_file(p)
    else:
        f = fs.store.get(p)
        if f is None or not hasattr(f, "getbuffer"):
            return None  # missing or a directory: the fsspec path says which
        src = _memory_source(f, f"memory://{p}", size)
    src._description = description
    src.fs, src.path, src.via = fs, path, "native"
    return src


def _memory_source(f, name, size=None):
    from ctypes import byref, c_void_p
    from ._buffers import readable
    from ._errors import last_error
    from ._handle import lib
    mv = f.getbuffer()  # the file's bytes in place; pins its size while open
    if size is not None and size < mv.nbytes:
        mv = mv[:size]  # a given size is the size, as on the fsspec path
    pin, addr, n = readable(mv, "the memory file")
    h = c_void_p()
    rc = lib().colio_source_from_memory(addr, n, byref(h))
    if rc:
        raise last_error(rc)
    return Source(h.value, "memory", None, keep=(pin, mv, f), name=name)


def _rebuild(fs, path, via, max_in_flight, size):
    return from_fsspec(fs, path, via=via, max_in_flight=max_in_flight, size=size)
