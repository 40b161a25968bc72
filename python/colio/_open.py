"""The front doors by path or URL: colio.source and colio.open.

Each decides what reads a path or URL: a local path colio's file source;
an ``http://``, ``https://`` or ``s3://`` URL colio's native remote source
when every storage option is one it understands (colio._remote.choose);
any other URL an fsspec file system (colio._fsspec). This module sits
above all of them, which never import it.

``colio.open`` aims to behave as ``open(path, "rb")`` does (issue 13;
tests/python/test_open_conformance.py holds it to that, and
docs/using-from-python.md lists what still differs):

- A local path is opened with ``io.FileIO`` first, so opening fails
  exactly where and as ``open()`` fails (as colio errors that are the same
  built-in exceptions, with ``filename``). What has no offsets, or no size
  that says how much it holds (a FIFO, a character device, /proc and
  /sys, an empty file), is then read by that FileIO itself: a stream, as
  ``open()`` reads it. Regular files and block devices get the read-ahead.
- The descriptor stays open beside the stream: seeks are checked with
  ``lseek`` on it (so ``SEEK_DATA``/``SEEK_HOLE`` work and the limits are
  the file system's, as for ``open()``).
- The size is the file's at each read: the library looks again at the end
  (a file that grew is read on) and fails a read of bytes read ahead of a
  file that has shrunk since, rather than returning them.
"""

from __future__ import annotations

import errno as _errno
import io
import os
import stat as _stat

from . import _codes
from ._buffers import index, no_nul
from ._errors import ColioError, InvalidArgumentError, NotSupportedError, make_error
from ._stream import stream


def source(path_or_url, *, backend: str = "auto", **storage_options) -> Source:
    """Opens a source: a local path gives a native file source (pread on
    colio's workers); an ``http://``, ``https://`` or ``s3://`` URL a native
    remote source (the engine makes the requests; see colio._remote) when
    every storage option is one it understands, and any other URL
    ``scheme://...`` an fsspec source (storage_options go to the file
    system). ``backend`` ("auto", "native" or "fsspec") forces one for
    URLs; ``src.backend`` says which was taken."""
    from ._source import Source, _open_file, open_native
    if isinstance(path_or_url, Source):
        return path_or_url
    if backend != "auto":
        from . import _remote
        _remote.check_backend(backend, "colio.source()")
    if not isinstance(path_or_url, (str, bytes, os.PathLike)):
        raise TypeError("colio.source() takes a path or URL; use colio.from_buffer, "
                        "colio.from_callable or colio.from_fsspec for "
                        f"{type(path_or_url).__name__}")
    path = os.fsdecode(path_or_url)
    no_nul(path)
    if "://" in path or "::" in path:
        scheme = path.split("://", 1)[0] if "://" in path else ""
        if scheme in ("file", "local") and not storage_options and "::" not in path:
            return _open_file(path.split("://", 1)[1])
        from . import _remote
        native = _remote.choose(path, backend, storage_options, "colio.source()", open_native)
        if native is not None:
            return native
        # fsspec and its back ends raise their own errors (botocore's,
        # aiohttp's, a bare ValueError); users catch colio's and the
        # built-in ones, so they are translated, the original chained.
        try:
            import fsspec.core
            fs, p = fsspec.core.url_to_fs(path, **storage_options)
            from . import _fsspec
            return _fsspec.from_fsspec(fs, p)
        except (ColioError, TypeError):
            raise  # ours already, or a bad argument (as for open())
        except Exception as e:  # noqa: BLE001 - translated, not swallowed
            from ._open_errors import open_error
            raise open_error(e, path) from e
    if storage_options:
        raise TypeError("colio.source(): storage options apply to URLs only, not to the "
                        f"local path {path!r}")
    if backend == "fsspec":
        raise InvalidArgumentError("colio.source(): backend='fsspec' applies to URLs; a local "
                                   f"path is read natively ({path!r})")
    return _open_file(path)


def _os_error(e: OSError, name) -> ColioError:
    """open()'s OSError as the colio error that is the same built-in
    exception (FileNotFoundError, PermissionError, IsADirectoryError...),
    with errno and filename kept."""
    code = _codes.ENOTFOUND if e.errno == _errno.ENOENT else _codes.EIO
    err = make_error(code, f"colio.open: {e.strerror or e}: {os.fsdecode(name)!r}", e.errno or 0)
    err.filename = name
    return err


def _streams_only(st) -> bool:
    """Whether a file must be read as a stream: no offsets, or no size that
    says what it holds. An empty regular file is read as one too: its size
    says nothing about what a reader will find once it is written."""
    if _stat.S_ISBLK(st.st_mode):
        return False
    return not _stat.S_ISREG(st.st_mode) or st.st_size == 0


def _plain(fio: io.FileIO) -> io.BufferedReader:
    """open()'s own file object over fio: its buffer size rule too."""
    try:
        bs = os.fstat(fio.fileno()).st_blksize
    except OSError:
        bs = 0
    return io.BufferedReader(fio, buffer_size=bs if bs > 1 else io.DEFAULT_BUFFER_SIZE)


def _open_local(name, path: str, buffer_size, depth):
    try:
        fio = io.FileIO(name, "r")
    except OSError as e:
        raise _os_error(e, name) from None
    try:
        if _streams_only(os.fstat(fio.fileno())):
            return _plain(fio)
        from ._source import _open_file
        try:
            src = _open_file(path)
        except NotSupportedError as e:  # /sys and kin: regular, but no offsets
            if e.errno != _errno.ESPIPE:
                raise
            return _plain(fio)
        except ColioError as e:
            e.filename = name
            raise
        try:
            return stream(src, 0, buffer_size, depth, owns_source=True, name=fio.name, fio=fio)
        except BaseException:
            src.close()
            raise
    except BaseException:
        fio.close()
        raise


def _open_url(url: str, size, buffer_size, depth, storage_options):
    """A URL through fsspec. A size the file system does not know is no
    error: the object is read as a stream, by fsspec's own file object, as
    fsspec.open reads it (HTTP servers that send no Content-Length)."""
    from ._fsspec import from_fsspec
    try:
        import fsspec.core
        fs, p = fsspec.core.url_to_fs(url, **storage_options)
        if size is None:
            size = fs.size(p)
            if size is None:
                return fs.open(p, "rb")
        src = from_fsspec(fs, p, size=size)
    except (ColioError, TypeError):
        raise
    except Exception as e:  # noqa: BLE001 - translated, as colio.source does
        try:
            from ._open_errors import open_error
        except ImportError:
            raise e from None
        raise open_error(e, url) from e
    try:
        return stream(src, 0, buffer_size, depth, owns_source=True, name=url)
    except BaseException:
        src.close()
        raise


def _local(path_or_url, storage_options):
    """The local path to open with FileIO (the caller's own object, so
    that ``name`` keeps its type, as open()'s does) and its str, or None
    for a URL."""
    path = os.fsdecode(path_or_url)
    if "://" not in path and "::" not in path:
        if storage_options:
            raise TypeError("colio.open(): storage options apply to URLs only, not to the "
                            f"local path {path!r}")
        return path_or_url, path
    scheme, _, rest = path.partition("://")
    if scheme in ("file", "local") and not storage_options and "::" not in path:
        return rest, rest
    return None


def open(path_or_url, mode: str = "rb", buffer_size: int | None = None,
         depth: int | None = None, *, encoding: str | None = None, errors: str | None = None,
         newline: str | None = None, size: int | None = None, backend: str = "auto",
         **storage_options):
    """Opens a local path or fsspec URL for reading with read-ahead, like
    ``open`` and ``fsspec.open``. ``mode`` is "rb" (an ``io.BufferedReader``)
    or "r"/"rt" (an ``io.TextIOWrapper`` over it). ``buffer_size`` and
    ``depth`` size the read-ahead (defaults: 1 MiB, 4 buffers). ``size``
    tells a URL's size where the file system cannot (unknown sizes are read
    as a stream, as fsspec does). FIFOs, devices, /proc and /sys files and
    empty files are read as streams, without read-ahead. http, https and
    s3 URLs are read by the engine when it understands every storage
    option; ``backend`` ("auto", "native", "fsspec") decides as for
    colio.source."""
    if mode not in ("rb", "r", "rt"):
        raise InvalidArgumentError(
            f"colio.open: mode {mode!r} is not supported: colio streams read ('rb', 'r' or "
            "'rt'); use colio.sink(path) to write")
    if mode == "rb" and (encoding is not None or errors is not None or newline is not None):
        raise InvalidArgumentError("colio.open: encoding, errors and newline apply to text mode")
    if not isinstance(path_or_url, (str, bytes, os.PathLike)):
        raise TypeError(f"colio.open() takes a path or URL, not {type(path_or_url).__name__}")
    from . import _remote
    _remote.check_backend(backend, "colio.open()")
    local = _local(path_or_url, storage_options)
    if local is not None:
        if size is not None:
            raise TypeError("colio.open(): size= applies to URLs; a local file's size is "
                            "the file's own")
        f = _open_local(local[0], local[1], buffer_size, depth)
    else:
        if size is not None:
            size = index(size, "size")
        url = os.fsdecode(path_or_url)
        opts = storage_options if size is None else {**storage_options, "size": size}
        try:
            from ._source import open_native
            src = _remote.choose(url, backend, opts, "colio.open()", open_native)
        except ColioError as e:
            # A server that does not say the size as the native source needs
            # it (no length, no total in Content-Range): read as a stream, as
            # fsspec.open reads it, unless the native source was asked for.
            if backend != "auto" or e.errno != _errno.EPROTO:
                raise
            src = None
        if src is not None:
            try:
                f = stream(src, 0, buffer_size, depth, owns_source=True, name=src.name)
            except BaseException:
                src.close()
                raise
        else:
            f = _open_url(url, size, buffer_size, depth, storage_options)
    if mode == "rb":
        return f
    t = io.TextIOWrapper(f, encoding=encoding, errors=errors, newline=newline)
    t.mode = mode  # as open() sets it
    return t
