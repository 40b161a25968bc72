"""colio as an fsspec file system: ``colio::`` URLs.

    import fsspec, pandas as pd
    pd.read_parquet("colio::s3://bucket/x.parquet", storage_options={"s3": {...}})
    with fsspec.open("colio::https://host/data.csv", "rb") as f: ...

Registered under the protocol ``colio`` by the package's ``fsspec.specs``
entry point, so no import is needed. It is a chained file system, as
fsspec's ``simplecache::`` and ``blockcache::`` are: it wraps the target
file system of the chain (``target_protocol`` / ``target_options``, or
``fs=``) and

- runs ``cat_file``, ``cat_ranges`` and ``cat`` through colio's fan-out
  (``Source.read_ranges``: every range of every path submitted at once);
- opens files for reading as colio's read-ahead stream, or, for a file
  with latency of at most ``prefetch_max`` bytes (16 MiB), fetches it
  whole at open in one fan-out; with ``columns=`` (as ``fsspec.parquet``
  passes them) it prefetches the Parquet column chunks instead;
- writes local targets (``open(path, "wb")``, ``pipe_file``, ``put_file``)
  through colio file sinks, eager and parallel, and s3 targets through
  colio's S3 sink (a multipart upload that is published at close and
  aborted by an exception inside ``with``); other targets are written with
  their own API;
- delegates everything else (listing, ``info``, ``exists``, ``rm``,
  ``mkdir``, globbing, copies inside the target...) to the target.

Why synchronous (``AbstractFileSystem``) and not ``AsyncFileSystem``: the
concurrency is colio's, not an event loop's. A fan-out is one call that
submits every range to colio's engine (or the target's own loop, for async
back ends) and waits; pandas, pyarrow and Dask call the synchronous API.
An async wrapper would put every delegated call on a second loop and
double the surface (``_ls`` and ``ls``...) for no gain in parallelism.
zarr, which needs an async store, gets ``colio.zarr``.

See docs/fsspec.md.
"""

from __future__ import annotations

import os

from fsspec.callbacks import DEFAULT_CALLBACK
from fsspec.implementations.chained import ChainedFileSystem

from . import _fsspec_info
from ._fsspec_fs_cache import SourceCache
from ._fsspec_fs_files import WRITE_CHUNK, ColioReadFile, ColioWriteFile
# Targets that colio.source(url) may route to a native remote source (no
# Python on the data path); for the others the target's own object is
# wrapped with colio.from_fsspec.
from ._fsspec_open import URL_ROUTED as _URL_ROUTED
from ._fsspec_open import read_entry

__all__ = ["ColioFileSystem"]

# Copying a local file: pieces read and written at once, and their size.
_COPY_DEPTH = 8


def _proto(fs) -> str:
    p = fs.protocol
    return p[0] if isinstance(p, (tuple, list)) else p


class ColioFileSystem(ChainedFileSystem):
    """An fsspec file system whose reads go through colio (see the module
    documentation). ``max_sources``: how many paths keep an open source.
    ``backend`` ("auto", "native" or "fsspec"): for http, https and s3
    targets, how ``colio.source`` opens them (its native remote source
    where it can, by default)."""

    protocol = "colio"
    # The path in a chain ("colio::s3://b/k") belongs to the target: one
    # instance serves every path, as simplecache's does.
    _strip_tokenize_options = ("fo",)

    def __init__(self, target_protocol=None, target_options=None, fs=None, max_sources=64,
                 backend="auto", **kwargs):
        kwargs.pop("fo", None)
        super().__init__(**kwargs)
        if fs is not None and target_protocol is not None:
            raise ValueError("colio: pass the target as fs= or as target_protocol=, not both")
        if fs is None:
            import fsspec
            fs = fsspec.filesystem(target_protocol or "file", **(target_options or {}))
            self._routed_options = dict(target_options or {})
        else:
            self._routed_options = None  # an instance: read through it, not a new one
        self.fs = fs
        self.target_protocol = _proto(fs)
        self.target_options = dict(target_options or {})
        if backend not in ("auto", "native", "fsspec"):
            raise ValueError(f"colio: backend must be 'auto', 'native' or 'fsspec', not "
                             f"{backend!r}")
        self.backend = backend
        from fsspec.implementations.local import LocalFileSystem
        from fsspec.implementations.memory import MemoryFileSystem
        self._local = isinstance(fs, LocalFileSystem)
        self._memory = isinstance(fs, MemoryFileSystem)
        self.sep, self.root_marker = fs.sep, fs.root_marker
        self._sources = SourceCache(self._open_source, max_sources)
        # Paths as the target names them, from here on (fsspec.core strips
        # the paths it hands us with the instance's _strip_protocol).
        self._strip_protocol = self._path

    # -- paths ----------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, (list, tuple)):
            return type(path)(cls._strip_protocol(p) for p in path)
        path = os.fspath(path)
        for prefix in ("colio::", "colio://"):
            if path.startswith(prefix):
                return path[len(prefix):]
        return path

    def _path(self, path) -> str:
        """path as the target names it."""
        if isinstance(path, (list, tuple)):
            return [self._path(p) for p in path]
        return self.fs._strip_protocol(type(self)._strip_protocol(path))

    def unstrip_protocol(self, name: str) -> str:
        return "colio::" + self.fs.unstrip_protocol(name)

    # -- sources --------------------------------------------------------------

    def _open_source(self, path: str):
        import colio
        if self._local:
            return colio.source(path)
        if (self.target_protocol in _URL_ROUTED and self._routed_options is not None
                and self.backend != "fsspec"):
            kw = dict(self._routed_options)
            if self.backend != "auto":
                kw["backend"] = self.backend
            return colio.source(self.fs.unstrip_protocol(path), **kw)
        return colio.from_fsspec(self.fs, path)

    def _token(self, path: str):
        """What says the path is still the object its cached source reads."""
        if self._local:
            st = os.stat(path)
            return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
        if self._memory:
            info = self.fs.info(path)
            return info.get("size"), info.get("created")
        return None

    def _lease(self, path: str):
        return self._sources.acquire(path, self._token(path))

    def close(self) -> None:
        """Closes the sources this file system keeps open (each once its
        last read has ended). The file system stays usable."""
        self._sources.close()

    def invalidate_cache(self, path=None) -> None:
        self._sources.invalidate(None if path is None else [self._path(path)])
        self._forget_infos(None if path is None else [self._path(path)])
        self.fs.invalidate_cache(None if path is None else self._path(path))

    def _changed(self, path) -> None:
        """A write or removal went through this file system: later reads
        must see the new object."""
        self._sources.invalidate([self._path(path)])
        self._forget_infos(None)  # a directory's listing may have changed too

    def _forget_infos(self, paths) -> None:
        """Drops the listing fan-out's answers (colio._fsspec_info)."""
        c = self.__dict__.get("_infos")
        if c is not None:
            c.invalidate(paths)

    # -- reads ----------------------------------------------------------------

    def cat_file(self, path, start=None, end=None, **kwargs):
        if start in (None, 0) and end is None:
            # A whole file (zarr reads each chunk so) as an open reads it:
            # one GET where it fits the prefetch, not a HEAD to open a
            # source and then a GET.
            e, release = read_entry(self, self._path(path))
            try:
                return e.src.read(0, None)
            finally:
                release(e)
        return self.cat_ranges([path], [start], [end], on_error="raise")[0]

    def cat_ranges(self, paths, starts, ends, max_gap=None, on_error="return", **kwargs):
        """Reads every (path, start, end) at once through colio: each path's
        source gets one fan-out of all its ranges, and every path's fan-out
        is submitted before any is waited on."""
        if isinstance(paths, str):
            paths = [paths] * (len(starts) if isinstance(starts, list) else 1)
        paths = list(paths)
        n = len(paths)
        starts = starts if isinstance(starts, list) else [starts] * n
        ends = ends if isinstance(ends, list) else [ends] * n
        if not len(starts) == len(ends) == n:
            raise ValueError("colio: cat_ranges: paths, starts and ends must have the same "
                             "length")
        out: list = [None] * n
        by_path: dict = {}
        for i, p in enumerate(paths):
            by_path.setdefault(self._path(p), []).append(i)
        leases, waits = [], []
        try:
            for p, idx in by_path.items():
                try:
                    e = self._lease(p)
                except Exception as exc:  # noqa: BLE001 - one path's failure, per on_error
                    if on_error == "raise":
                        raise
                    for i in idx:
                        out[i] = exc
                    continue
                leases.append(e)
                try:
                    rs = [_range(starts[i], ends[i], e.src) for i in idx]
                    futs = e.src.read_ranges_async([(o, k) for o, k in rs])
                except Exception as exc:  # noqa: BLE001
                    if on_error == "raise":
                        raise
                    for i in idx:
                        out[i] = exc
                    continue
                waits.append((idx, futs))
            for idx, futs in waits:
                for i, f in zip(idx, futs):
                    try:
                        out[i] = _as_bytes(f.result())
                    except Exception as exc:  # noqa: BLE001
                        if on_error == "raise":
                            raise
                        out[i] = exc
        finally:
            for e in leases:
                self._sources.release(e)
        return out

    def cat(self, path, recursive=False, on_error="raise", **kwargs):
        """Whole files, all read at once (one fan-out over every path)."""
        paths = self.expand_path(path, recursive=recursive)
        if len(paths) > 1 or isinstance(path, list) or paths[0] != self._path(path):
            data = self.cat_ranges(paths, [None] * len(paths), [None] * len(paths),
                                   on_error="return")
            out = {}
            for p, d in zip(paths, data):
                if isinstance(d, Exception):
                    if on_error == "raise":
                        raise d
                    if on_error == "omit":
                        continue
                out[p] = d
            return out
        return self.cat_file(paths[0], **kwargs)

    # -- open -----------------------------------------------------------------

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        path = self._path(path)
        if "r" in mode and "+" not in mode:
            columns = kwargs.pop("columns", None)
            if columns is not None:
                return self._open_parquet(path, columns, kwargs)
            e, release = read_entry(self, path, kwargs.get("prefetch_max"))
            try:
                return ColioReadFile(self, path, e, release,
                                     buffer_size=kwargs.get("buffer_size"),
                                     depth=kwargs.get("depth"),
                                     prefetch_max=kwargs.get("prefetch_max"))
            except BaseException:
                release(e)
                raise
        if self._local and autocommit and mode in ("wb", "ab", "xb"):
            self._before_write(path)
            return ColioWriteFile(self, path, self._local_sink(path, mode[0]), mode,
                                  on_close=self._changed)
        if autocommit and mode == "wb":
            k = self._upload_sink(path)
            if k is not None:
                self._changed(path)
                return ColioWriteFile(self, path, k, mode, on_close=self._changed)
        self._changed(path)
        f = self.fs.open(path, mode, block_size=block_size, autocommit=autocommit,
                         cache_options=cache_options, **kwargs)
        return f

    def _open_parquet(self, path, columns, kwargs):
        """Only the footer and the column chunks of ``columns``, fetched as
        one fan-out (colio.parquet where it is there, else fsspec.parquet's
        planner over this file system's cat_ranges)."""
        try:
            from . import parquet as cp
        except ImportError:
            cp = None
        if cp is not None and hasattr(cp, "open_parquet_file"):
            return cp.open_parquet_file(path, fs=self, columns=columns, **kwargs)
        import fsspec.parquet
        keep = {k: kwargs[k] for k in ("row_groups", "engine", "metadata", "filters",
                                       "max_gap", "max_block", "footer_sample_size")
                if k in kwargs}
        return fsspec.parquet.open_parquet_file(path, fs=self, columns=columns, **keep)

    # -- writes ---------------------------------------------------------------

    def _before_write(self, path: str) -> None:
        if getattr(self.fs, "auto_mkdir", False):
            self.fs.makedirs(self.fs._parent(path), exist_ok=True)
        self._changed(path)

    def _local_sink(self, path: str, how: str):
        """A colio file sink: how is "w" (truncate), "a" (append) or "x"
        (create; FileExistsError if it exists, decided by O_EXCL)."""
        import colio
        if how == "x":
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return colio.sink(path, "r+")
        return colio.sink(path, how)

    def _uploads(self, path: str) -> bool:
        """Whether writes to path go through a colio S3 sink: an s3 target
        opened from its options, unless backend="fsspec" or an option is
        one the native sink does not take (with backend="native" the sink
        raises for that one instead). Otherwise the target's own writer
        does: other targets, or an instance passed as fs=."""
        if (self.target_protocol not in ("s3", "s3a") or self._routed_options is None
                or self.backend == "fsspec"):
            return False
        if self.backend == "native":
            return True
        from . import _remote
        try:
            _remote.translate("s3://" + path, dict(self._routed_options))
        except _remote.NotUnderstood:
            return False
        return True

    def _upload_sink(self, path: str):
        """A colio S3 sink (a multipart upload, published at close) for
        path, or None where _uploads says the target writes."""
        if not self._uploads(path):
            return None
        import colio
        return colio.sink("s3://" + path, "w", **self._routed_options)

    def pipe_file(self, path, value, mode="overwrite", **kwargs):
        path = self._path(path)
        if not self._local and mode == "overwrite":
            k = self._upload_sink(path)
            if k is not None:
                self._changed(path)
                try:
                    with k:
                        k.write(value, 0)
                finally:
                    self._changed(path)
                return None
        if not self._local:
            self._changed(path)
            return self.fs.pipe_file(path, value, mode=mode, **kwargs)
        self._before_write(path)
        k = self._local_sink(path, "x" if mode == "create" else "w")
        try:
            k.write(value, 0)  # one call: the engine writes its pieces in parallel
        finally:
            k.close()
            self._changed(path)

    def put_file(self, lpath, rpath, callback=DEFAULT_CALLBACK, mode="overwrite", **kwargs):
        rpath = self._path(rpath)
        if (not self._local and mode == "overwrite" and not os.path.isdir(lpath)
                and self._uploads(rpath)):
            self._changed(rpath)
            try:
                _copy_local(os.fspath(lpath), rpath, callback, "w",
                            lambda p, _how: self._upload_sink(p))
            finally:
                self._changed(rpath)
            return None
        if not self._local:
            self._changed(rpath)
            return self.fs.put_file(lpath, rpath, callback=callback, mode=mode, **kwargs)
        if mode == "create" and self.fs.exists(rpath):
            raise FileExistsError(rpath)
        if os.path.isdir(lpath):
            self.fs.makedirs(rpath, exist_ok=True)
            return None
        self.fs.makedirs(self.fs._parent(rpath), exist_ok=True)
        self._changed(rpath)
        try:
            _copy_local(os.fspath(lpath), rpath, callback, "x" if mode == "create" else "w",
                        self._local_sink)
        finally:
            self._changed(rpath)

    # -- the rest is the target's ----------------------------------------------

    def __repr__(self) -> str:
        return f"<colio.fsspec.ColioFileSystem over {type(self.fs).__name__}>"


def _range(start, end, src):
    """fsspec's (start, end) (None, negative from the end) as colio's
    (offset, size), clamped to the source as fsspec clamps it."""
    size = None
    if start is None:
        start = 0
    elif start < 0:
        size = src.size
        start = max(0, size + start)
    if end is None:
        end = src.size if size is None else size
    elif end < 0:
        end = (src.size if size is None else size) + end
    return start, max(end - start, 0)


def _as_bytes(mv):
    """A result of read_ranges as bytes, without a copy where it is one
    already (colio fills fresh bytes objects in place)."""
    obj = getattr(mv, "obj", None)
    if type(obj) is bytes and len(obj) == mv.nbytes:
        return obj
    return bytes(mv)


def _copy_local(lpath: str, rpath: str, callback, how: str, open_sink) -> None:
    """Copies a local file through colio: pieces read by colio's workers,
    each written by a colio sink as soon as it has arrived. An upload (S3
    sink) is published only when every piece is in, and aborted on any
    failure; its writes complete as their parts are uploaded, so they are
    not waited on one by one (a part fills only with later pieces)."""
    import colio
    from collections import deque
    with colio.source(lpath) as src:
        size = src.size
        callback.set_size(size)
        k = open_sink(rpath, how)
        upload = hasattr(k, "abort")
        ok = False
        try:
            reads: deque = deque()
            writes: deque = deque()

            def settle(keep):
                while writes and (len(writes) > keep if not upload else writes[0][1].done()):
                    n, w = writes.popleft()
                    w.result()
                    callback.relative_update(n)

            def land():
                off, buf, f = reads.popleft()
                f.result()
                writes.append((len(buf), k.write_async(buf, off)))
                settle(_COPY_DEPTH)

            for off in range(0, size, WRITE_CHUNK):
                buf = bytearray(min(WRITE_CHUNK, size - off))
                reads.append((off, buf, src.read_async(buf, off)))
                if len(reads) >= _COPY_DEPTH:
                    land()
            while reads:
                land()
            if upload:
                k.close()  # the last part, and the object published
            upload = False
            settle(0)
            ok = True
        finally:
            if not ok and hasattr(k, "abort"):
                k.abort()
            else:
                k.close()


def _forward(name):
    def method(self, *args, **kwargs):
        return getattr(self.fs, name)(*args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The target file system's ``{name}``."
    return method


def _forward_changing(name):
    def method(self, *args, **kwargs):
        try:
            return getattr(self.fs, name)(*args, **kwargs)
        finally:
            self._sources.invalidate()  # what it touched may be cached
            self._forget_infos(None)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The target file system's ``{name}`` (forgets cached sources)."
    return method


# Listing and metadata: the target's answer is the answer. Listings start
# the info of the files they return, and info, checksum, size and ukey are
# answered from those (colio._fsspec_info).
for _n in ("exists", "lexists", "isdir", "isfile", "sizes", "created", "modified", "walk",
           "du", "listdir", "sign", "mkdir", "makedirs", "mkdirs"):
    setattr(ColioFileSystem, _n, _forward(_n))
_fsspec_info.install(ColioFileSystem)
# Changes inside the target: done by it (a server-side copy stays one).
for _n in ("rm", "rm_file", "rmdir", "_rm", "cp_file", "copy", "mv", "touch", "delete"):
    setattr(ColioFileSystem, _n, _forward_changing(_n))
del _n
