"""A zarr v3 store whose reads are colio fan-outs: ``colio.zarr.Store``.

    import zarr, colio.zarr
    store = colio.zarr.Store("colio::https://host/data.zarr")   # or any fsspec URL
    a = zarr.open_array(store, mode="r")[:]

zarr's own ``FsspecStore`` over a ``colio::`` URL works too, but zarr
needs an async file system, so it wraps colio's (synchronous) one in
fsspec's ``AsyncFileSystemWrapper``, which runs every chunk read on a
thread of asyncio's default executor (min(32, cores + 4) threads): the
fan-out is capped by that pool, not by colio. This store is that
FsspecStore with its reads replaced: ``get`` submits the read to colio
from the event loop and awaits the colio future (no thread per chunk), and
``get_partial_values`` is one colio fan-out over every key and range.
A key read whole (a chunk, a metadata document) from an http(s) or s3
target colio reads natively is fetched by the library (colio._fetch,
``colio_fetch_urls``): one non-blocking call for every whole key of a
``get`` or ``get_partial_values``, the open (with ``prefetch``, a GET that
brings the bytes with the size: one request for a chunk), the read and
the close on the library's goroutines, and the ends delivered to the loop
in batches; no thread and no source per chunk. Listing, writes and
deletes stay FsspecStore's, through the target file system.
tests/python/test_zarr.py and bench/fsspec_fs.py compare them.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.storage import FsspecStore
from zarr.storage._fsspec import _dereference_path

from . import _remote
from ._fetch import Fetcher
from .fsspec import _URL_ROUTED, ColioFileSystem, _as_bytes, _range

__all__ = ["Store"]

# Threads that open the sources of keys read in ranges (a shard) and not
# yet open (an open waits on the network: a HEAD); keys read whole never
# come here (colio._fetch). asyncio's default executor has
# min(32, cores + 4) of them, 6 on 2 cores, which capped a zarr read at 6
# requests in flight whatever async.concurrency said; an idle thread costs
# only its stack.
_OPEN_THREADS = 64
# The prefetch of a key read whole: request_size's default, so that a key
# no larger (most zarr chunks) is one request, and a larger one no more
# round trips than a HEAD and its parts were (its first part comes with
# the open, the rest in parallel after it), never a byte it did not need.
PREFETCH = 8 << 20
_opener = None
_opener_lock = threading.Lock()


def _open_pool() -> ThreadPoolExecutor:
    global _opener
    if _opener is None:
        with _opener_lock:
            if _opener is None:
                _opener = ThreadPoolExecutor(_OPEN_THREADS, thread_name_prefix="colio-zarr-open")
    return _opener


def _start_end(byte_range):
    if byte_range is None:
        return None, None
    if isinstance(byte_range, RangeByteRequest):
        return byte_range.start, byte_range.end
    if isinstance(byte_range, OffsetByteRequest):
        return byte_range.offset, None
    if isinstance(byte_range, SuffixByteRequest):
        return -byte_range.suffix, None
    raise ValueError(f"colio.zarr: unexpected byte_range {byte_range!r}")


class Store(FsspecStore):
    """A zarr store over a URL (``colio::`` or not: the prefix is added) or
    a ColioFileSystem, reading through colio."""

    def __init__(self, url_or_fs, read_only: bool = False, path: str = "",
                 storage_options: dict | None = None, **kwargs):
        from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper
        if isinstance(url_or_fs, ColioFileSystem):
            cfs = url_or_fs
        else:
            import fsspec.core
            url = str(url_or_fs)
            if not url.startswith("colio::"):
                url = "colio::" + url
            cfs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        self.colio_fs = cfs
        super().__init__(AsyncFileSystemWrapper(cfs, asynchronous=True), read_only=read_only,
                         path=cfs._path(path).rstrip("/"), **kwargs)

    def with_read_only(self, read_only: bool = False) -> "Store":
        return type(self)(self.colio_fs, read_only=read_only, path=self.path)

    def _fetcher(self, url: str):
        """The Fetcher of keys read whole, made once per scheme, or None
        where the file system reads them otherwise (local, memory, fsspec,
        an option the native source does not know): there a whole read
        takes the cached source as a ranged one does."""
        scheme = _remote.scheme_of(url)
        cache = self.__dict__.setdefault("_fetchers", {})
        if scheme in cache:
            return cache[scheme]
        cfs = self.colio_fs
        f = None
        if not (cfs._local or cfs.target_protocol not in _URL_ROUTED
                or cfs._routed_options is None or cfs.backend == "fsspec"):
            try:
                f = Fetcher(url, dict(cfs._routed_options, prefetch=PREFETCH))
            except _remote.NotUnderstood:
                f = None
        cache[scheme] = f
        return f

    def _fetch_whole(self, paths) -> dict:
        """{index: asyncio future of the key's bytes} for the (index, path)
        pairs the library can fetch whole, all started by one call per
        scheme; the others are left to the cached sources."""
        unstrip = self.colio_fs.fs.unstrip_protocol
        groups: dict = {}
        for i, path in paths:
            url = unstrip(path)
            f = self._fetcher(url)
            if f is not None:
                idx, urls = groups.setdefault(id(f), (f, [], []))[1:]
                idx.append(i)
                urls.append(url)
        out = {}
        for f, idx, urls in groups.values():
            if len(urls) == 1:  # a get: gathered with the loop iteration's others
                out[idx[0]] = f.get(urls[0])
            else:
                out.update(zip(idx, f.fetch(urls)))
        return out

    async def _lease(self, path: str):
        cfs = self.colio_fs
        e = cfs._sources.acquire_cached(path, cfs._token(path))
        if e is None:  # an open may wait on the network: not on the loop
            e = await asyncio.get_running_loop().run_in_executor(_open_pool(), cfs._lease, path)
        return e

    async def _read(self, paths_ranges):
        """bytes or the exception, per (path, byte_range), all submitted
        before any is awaited."""
        cfs = self.colio_fs
        leases, waits = [], []
        try:
            try:
                wholes = self._fetch_whole([(i, p) for i, (p, br) in enumerate(paths_ranges)
                                            if br is None])
            except Exception as exc:  # noqa: BLE001 - a refused call fails each whole key
                wholes = {i: exc for i, (_p, br) in enumerate(paths_ranges) if br is None}
            for i, (path, br) in enumerate(paths_ranges):
                try:
                    whole = wholes.get(i)
                    if whole is not None:
                        waits.append(whole)
                        continue
                    e = await self._lease(path)
                    leases.append(e)
                    src = e.src
                    start, end = _start_end(br)
                    off, n = _range(start, end, src)
                    waits.append(asyncio.wrap_future(src.read_ranges_async([(off, n)])[0]))
                except Exception as exc:  # noqa: BLE001 - per key, as FsspecStore reports
                    waits.append(exc)
            out = []
            for w in waits:
                if isinstance(w, Exception):
                    out.append(w)
                    continue
                try:
                    out.append(_as_bytes(await w))
                except Exception as exc:  # noqa: BLE001
                    out.append(exc)
            return out
        finally:
            for e in leases:
                cfs._sources.release(e)

    async def get(self, key, prototype, byte_range=None):
        if not self._is_open:
            await self._open()
        r = (await self._read([(_dereference_path(self.path, key), byte_range)]))[0]
        if isinstance(r, self.allowed_exceptions):
            return None
        if isinstance(r, Exception):
            raise r
        return prototype.buffer.from_bytes(r)

    async def get_partial_values(self, prototype, key_ranges):
        key_ranges = list(key_ranges)
        if not key_ranges:
            return []
        res = await self._read([(_dereference_path(self.path, k), br) for k, br in key_ranges])
        for r in res:
            if isinstance(r, Exception) and not isinstance(r, self.allowed_exceptions):
                raise r
        return [None if isinstance(r, Exception) else prototype.buffer.from_bytes(r)
                for r in res]

    def __repr__(self) -> str:
        return f"<colio.zarr.Store {self.colio_fs.unstrip_protocol(self.path)!r}>"
