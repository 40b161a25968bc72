"""The source an ``open(path, "rb")`` of a ColioFileSystem reads.

Where a source of the path is kept open, that one. Otherwise, for a
target colio reads natively (http, https, s3), a source of the file's own,
opened with ``prefetch`` (docs/remote.md): its open is a GET of the first
``prefetch_max`` bytes, which brings the size with them, so a file that
fits (the file the reader would have fetched whole anyway, see
colio._fsspec_fs_files) is one request instead of a HEAD and then the
GET. A Dask read_csv task opens one file and reads it: one round trip
less per task. The source lives as long as the file object (its bytes are
the file's, as the whole-file fetch's buffer was), and is not kept in the
file system's cache, which would hold up to prefetch_max bytes per path.
"""

from __future__ import annotations

from . import _remote
from ._fsspec_fs_cache import _Entry
from ._fsspec_fs_files import PREFETCH_MAX

# The targets colio.source reads natively when it understands every option.
URL_ROUTED = frozenset(("http", "https", "s3", "s3a"))
# Set to False to open through the kept sources only (a HEAD at open).
ENABLED = True


def read_entry(cfs, path: str, prefetch_max=None):
    """(entry, release) for ColioReadFile."""
    limit = PREFETCH_MAX if prefetch_max is None else prefetch_max
    kept = cfs._sources.acquire_cached(path, cfs._token(path))
    if kept is not None:
        return kept, cfs._sources.release
    kw = _native_options(cfs, path, limit)
    if kw is None:
        return cfs._lease(path), cfs._sources.release
    import colio
    e = _Entry(colio.source(cfs.fs.unstrip_protocol(path), backend="native", **kw), None)
    e.users = 1
    return e, _close


def _native_options(cfs, path, limit):
    if (not ENABLED or limit <= 0 or cfs._local or cfs._routed_options is None
            or cfs.backend == "fsspec" or cfs.target_protocol not in URL_ROUTED):
        return None
    kw = dict(cfs._routed_options, prefetch=limit)
    try:
        _remote.translate(cfs.fs.unstrip_protocol(path), kw)
    except _remote.NotUnderstood:
        return None
    return kw


def _close(entry) -> None:
    entry.src.close()

