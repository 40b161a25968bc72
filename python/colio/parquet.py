"""colio.parquet: Parquet reads that fetch every column chunk a reader needs
at once, before the reader asks.

    import colio.parquet
    table = colio.parquet.read_table("https://host/data.parquet", columns=["a", "b"])
    f = colio.parquet.open("s3://bucket/data.parquet", columns=["a", "b"])
    pq.read_table(f, columns=["a", "b"])     # or pandas.read_parquet(f, columns=...)

Against storage with latency the number of round trips, not the bytes, sets
the time of a Parquet read: a reader that asks for one column chunk after
another pays a round trip each (issue 16). ``open`` makes two: one read of
the file's tail (64 KiB for local files; for sources with latency as much
as their coalescing hole, up to 1 MiB, since a footer larger than the
first read costs another round trip; more if the footer needs it), then every byte
range the selected columns and row groups need, all in one fan-out read
(``Source.read_ranges``: the engine merges ranges closer than the source's
hole size and runs the rest in parallel). It returns a seekable binary file
object over the source: reads of prefetched bytes are served from memory,
anything else (a column that was not selected) falls through to the source
as an ordinary read, so a reader is never wrong, only slower.

What is prefetched, per selected row group and leaf column: the column
chunk from its dictionary page (or first data page) to its end; gaps of up
to 8 KiB between them (pyarrow's ``pre_buffer`` reads span those); and, when
any chunk has a column or offset index, the region between the last column
chunk and the footer, where writers (Arrow, parquet-mr, polars) put the
page indexes. ``columns`` names top-level columns or dotted paths; a dotted
path prefetches its whole top-level column (pyarrow's dataset reader reads
a whole struct to project one field).

The footer is parsed by pyarrow (``pyarrow.parquet.read_metadata`` on the
tail bytes): pyarrow is imported here only, never by ``import colio``. A
footer parser in Go (arrow-go's ``parquet/metadata``) would serve C users
too, at a cost of several MB of library size; the readers colio serves are
pyarrow-based, so the footer is parsed where they already are.

Sources whose reads run on an fsspec event loop (``via="loop"``: fsspec's
HTTP and S3 until the native remote sources serve a URL) do not go through
the engine's planner; for them this module merges the ranges itself with a
256 KiB hole (``LOOP_HOLE``: the loop runs up to 256 requests at once, so
another request costs little) before reading. With a native source
(``colio.source(url)``), the engine does it with the hole it measured.

A remote object read once is read again in one round trip: its footer is
kept (colio._parquet_footers, by URL, options and the object's strong
ETag), and the next ``open`` or ``read_table`` of it opens the object with
``size=`` and ``etag=`` (no request) and fetches the chunks at once, each
GET carrying ``If-Match``; a changed object (ESTALE) drops the footer and
is read afresh.

``read_table`` does not go through that file object: it fetches into one
buffer that pyarrow reads directly, and decodes each row group as soon as
its bytes are in while later ones are still arriving (colio._parquet_eager).
"""

from __future__ import annotations

import bisect
import errno
import io
import os

from ._parquet_ranges import chunk as _chunk
from ._parquet_ranges import merge as _merge
from ._parquet_ranges import selected as _selected

__all__ = ["open", "read_table", "read_metadata", "column_ranges", "PrefetchedFile"]

TAIL = 64 << 10          # the first tail read at least: most footers fit
OPEN_TAIL = 1 << 20      # the tail a native URL's open brings (see _with_tail)
LOOP_HOLE = 256 << 10    # merge hole for sources that bypass the engine
LOOP_MAX = 32 << 20      # and the largest merged read for them
ARROW_HOLE = 8 << 10     # pyarrow's pre_buffer hole (CacheOptions.hole_size_limit)


def _open_source(where, storage_options):
    from . import _open, _source
    if isinstance(where, _source.Source):
        if storage_options:
            raise TypeError("colio.parquet: storage options apply to paths and URLs, "
                            "not to an open colio.Source")
        return where, False
    if isinstance(where, (str, bytes, os.PathLike)):
        return _open.source(where, **_with_tail(where, storage_options)), True
    raise TypeError("colio.parquet takes a path, a URL or a colio.Source, not "
                    f"{type(where).__name__}")


def _with_tail(where, storage_options):
    """storage_options plus a tail prefetch of OPEN_TAIL bytes where the
    native remote source reads the URL: the open then brings the footer,
    one round trip fewer (a HEAD, then the tail, otherwise). As much as
    _tail_size would read for a source with latency: a footer larger than
    the open's bytes costs a round trip before the chunks (the bench file
    of 20 x 30 chunks has a 72 KB footer), and the last chunks come with
    it. Left as they are for local paths, fsspec URLs and callers who
    chose a prefetch."""
    from . import _remote
    url = os.fsdecode(where)
    if (_remote.scheme_of(url) not in _remote.SCHEMES or "prefetch" in storage_options
            or "prefetch_tail" in storage_options or storage_options.get("backend") == "fsspec"):
        return storage_options
    opts = {k: v for k, v in storage_options.items() if k != "backend"}
    try:
        _remote.translate(url, {**opts, "prefetch_tail": OPEN_TAIL})
    except _remote.NotUnderstood:
        return storage_options
    return {**storage_options, "prefetch_tail": OPEN_TAIL}


def _tail_size(src):
    """How much of the tail to read first: TAIL, or more where another
    round trip would cost more than the extra bytes (a source's
    coalescing hole says how many bytes a request is worth): a footer
    larger than the first read costs a second round trip."""
    if getattr(src, "_loop", None) is not None:
        return max(TAIL, LOOP_HOLE)
    kept = (getattr(src, "_options", None) or {}).get("prefetch_tail")
    if kept:
        # The open brought that much of the tail: reading more than it
        # holds would be a request of its own, a round trip for bytes the
        # footer most often does not need (a larger footer gets exactly
        # what is missing).
        return int(kept)
    try:
        hole = src.coalescing[0]
    except Exception:  # noqa: BLE001 - a source without the setting: the minimum
        hole = 0
    return max(TAIL, min(hole, 1 << 20))


def _tail(src, size, name):
    """(offset, bytes) of the file's tail, at least the whole footer."""
    n = min(_tail_size(src), size)
    tail = bytes(src.read(size - n, n))
    if size < 12 or tail[-4:] != b"PAR1":
        raise ValueError(f"colio.parquet: {name} is not a Parquet file (no PAR1 at its end)")
    need = int.from_bytes(tail[-8:-4], "little") + 8
    if need > size - 4:
        raise ValueError(f"colio.parquet: {name}: footer of {need} bytes in a file of {size}")
    if need > n:  # a large footer: one more read, of exactly what is missing
        tail = bytes(src.read(size - need, need - n)) + tail
        n = need
    return size - n, tail


def _parse(tail):
    import pyarrow as pa
    import pyarrow.parquet as pq
    need = int.from_bytes(tail[-8:-4], "little") + 8
    return pq.read_metadata(pa.BufferReader(tail[-need:]))


def read_metadata(where, **storage_options):
    """The file's ``pyarrow.parquet.FileMetaData``, from one tail read."""
    src, owned = _open_source(where, storage_options)
    try:
        return _parse(_tail(src, src.size, _name(where))[1])
    finally:
        if owned:
            src.close()


def _name(where):
    return repr(os.fsdecode(where)) if isinstance(where, (str, bytes, os.PathLike)) else repr(where)


def column_ranges(md, columns=None, row_groups=None, size=None):
    """The (offset, size) byte ranges that reading ``columns`` (None: all) of
    ``row_groups`` (None: all) needs, from the file metadata ``md``; with
    ``size`` (the file's) also the page index region when there is one."""
    if isinstance(columns, str):
        raise TypeError("colio.parquet: columns must be a list of names, not a string")
    cols = None if columns is None else [str(c) for c in columns]
    rgs = range(md.num_row_groups) if row_groups is None else list(row_groups)
    for r in rgs:
        if not 0 <= r < md.num_row_groups:
            raise IndexError(f"colio.parquet: row group {r} out of range (the file has "
                             f"{md.num_row_groups})")
    leaves = [i for i in range(md.num_columns) if _selected(md.schema.column(i).path, cols)]
    out = []
    for r in rgs:
        rg = md.row_group(r)
        for c in leaves:
            out.append(_chunk(rg.column(c)))
    if size is not None and md.num_row_groups:
        # Writers put the page indexes after the last row group (whose
        # chunks end last) and before the footer.
        last = md.row_group(md.num_row_groups - 1)
        chunks = [last.column(c) for c in range(last.num_columns)]
        if any(cc.has_column_index or cc.has_offset_index for cc in chunks):
            end = max(o + n for o, n in map(_chunk, chunks))
            footer = size - 8 - int(md.serialized_size)
            if end < footer:
                out.append((end, footer - end))
    return out


class PrefetchedFile(io.RawIOBase):
    """A seekable, read-only binary file over a colio source, whose reads
    are served from the prefetched blocks where they cover the bytes and
    fall through to the source where they do not. ``hits`` and ``misses``
    count the reads served each way (a miss reads only what is missing)."""

    def __init__(self, src, size, blocks, metadata=None, owned=False, name=""):
        super().__init__()
        self._src, self._size, self._owned = src, size, owned
        blocks = sorted((o, memoryview(b)) for o, b in blocks if len(b))
        self._offs = [o for o, _ in blocks]
        self._blocks = [b for _, b in blocks]
        self._pos = 0
        self.metadata = metadata
        self.name = name
        self.hits = self.misses = 0
        self.prefetched_bytes = sum(len(b) for b in self._blocks)

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        if pos < 0:
            raise OSError(22, f"negative seek position {pos}")
        self._pos = pos
        return pos

    def size(self):
        return self._size

    def readinto(self, b):
        mv = memoryview(b).cast("B")
        n = self._fill(mv, self._pos)
        self._pos += n
        return n

    def read(self, size=-1):
        end = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        out = bytearray(max(0, end - self._pos))
        n = self.readinto(out)
        return bytes(out) if n == len(out) else bytes(out[:n])

    def readall(self):
        return self.read()

    def read_buffer(self, nbytes=-1):
        """read, without a copy where one block holds the bytes: pyarrow
        calls it instead of read when a file object has it."""
        pos = self._pos
        end = self._size if nbytes is None or nbytes < 0 else min(self._size, pos + nbytes)
        k = bisect.bisect_right(self._offs, pos) - 1
        if k >= 0 and end <= self._offs[k] + len(self._blocks[k]) and end > pos:
            self._pos = end
            self.hits += 1
            return self._blocks[k][pos - self._offs[k]:end - self._offs[k]]
        return self.read(nbytes)

    def _fill(self, mv, pos):
        """Fills mv from pos (to the end of the file at most) and returns
        the bytes filled: from the blocks where they hold them, else one
        source read per gap."""
        want = max(0, min(len(mv), self._size - pos))
        done = 0
        hit = miss = False
        while done < want:
            p = pos + done
            k = bisect.bisect_right(self._offs, p) - 1
            if k >= 0 and p < self._offs[k] + len(self._blocks[k]):
                blk = self._blocks[k][p - self._offs[k]:]
                c = min(len(blk), want - done)
                mv[done:done + c] = blk[:c]
                done += c
                hit = True
                continue
            nxt = self._offs[k + 1] if k + 1 < len(self._offs) else self._size
            c = min(nxt - p, want - done)
            got = self._src.read_into(mv[done:done + c], p)
            miss = True
            done += got
            if got < c:
                break
        self.hits += hit
        self.misses += miss
        return done

    def close(self):
        if not self.closed:
            self._blocks = []
            self._offs = []
            if self._owned:
                self._src.close()
        super().close()


def open(where, columns=None, row_groups=None, **storage_options) -> PrefetchedFile:
    """Opens a Parquet file (a local path, a URL, or a colio.Source) and
    prefetches, in one fan-out read after the footer, the bytes that
    reading ``columns`` (None: all) of ``row_groups`` (None: all) needs.
    Returns a seekable binary file object for pyarrow, pandas or any other
    reader; its ``metadata`` is the parsed footer (pass it on:
    ``pq.ParquetFile(f, metadata=f.metadata)``). Closing it closes the
    source if it opened one."""
    def read(src, owned, size, tail_off, tail, md, kept):
        ranges = column_ranges(md, columns, row_groups, size)
        # What the tail holds is not asked for again. Gaps up to Arrow's
        # pre_buffer hole are fetched too: pyarrow asks for them (its
        # reads span them), and a fall-through read would be a round trip.
        ranges = [(o, min(n, tail_off - o)) for o, n in ranges if o < tail_off]
        loop = getattr(src, "_loop", None) is not None
        ranges = _merge(ranges, LOOP_HOLE if loop else ARROW_HOLE, LOOP_MAX if loop else 1 << 62)
        blocks = list(zip((o for o, _ in ranges), src.read_ranges(ranges))) if ranges else []
        if kept and not ranges:
            _validate(src, size)
        blocks.append((tail_off, tail))
        name = os.fsdecode(where) if isinstance(where, (str, bytes, os.PathLike)) else repr(where)
        return PrefetchedFile(src, size, blocks, md, owned, name)
    return _with_footer(where, storage_options, read, hand_over=True)


def read_table(where, columns=None, filters=None, row_groups=None, **storage_options):
    """``pyarrow.parquet.read_table`` through colio: the same table, with
    every column chunk it needs fetched at once and each row group decoded
    as soon as its bytes are in (colio._parquet_eager). ``filters`` are
    pyarrow's (a list of tuples, or an expression): row groups whose
    statistics rule them out are not fetched, and the columns a list names
    are fetched too (an expression's: every column). ``row_groups`` reads
    only those row groups, in that order, as ``ParquetFile.read_row_groups``
    does. ``coalesce_hole`` and ``coalesce_max`` set the source's merge rule
    (``Source.set_coalesce``) for a path or URL; other storage options go
    to ``colio.source``."""
    import pyarrow.parquet as pq
    if isinstance(columns, str):
        raise TypeError("colio.parquet: columns must be a list of names, not a string")
    if columns is not None and any("." in str(c) for c in columns):
        # pyarrow's dataset reader projects a field out of a struct; the
        # file object over the prefetch gives it exactly what it expects.
        return _read_through_file(where, columns, filters, row_groups, storage_options)
    expr = pq.filters_to_expression(filters) if isinstance(filters, list) else filters
    need = _needed(columns, filters)
    hole = storage_options.pop("coalesce_hole", None)
    cap = storage_options.pop("coalesce_max", None)
    from . import _parquet_eager
    if _is_local_path(where, storage_options) and (hole, cap) == (None, None):
        # No latency to hide: pyarrow decodes from a memory map of the file.
        return _parquet_eager.read_local(os.fspath(where), need, row_groups, expr, columns)
    if (hole, cap) != (None, None) and not isinstance(where, (str, bytes, os.PathLike)):
        raise TypeError("colio.parquet: coalesce_hole and coalesce_max apply to paths "
                        "and URLs; call set_coalesce on an open colio.Source")

    def read(src, owned, size, tail_off, tail, md, kept):
        h, c = hole, cap
        if getattr(src, "_loop", None) is not None:  # merged here, not by the engine
            h = LOOP_HOLE if h is None else h
            c = LOOP_MAX if c is None else c
        else:
            if (h, c) != (None, None):
                src.set_coalesce(h, c)
            h, c = src.coalescing
        return _parquet_eager.read(src, size, tail_off, tail, md, need, row_groups, expr,
                                   columns, h, c, validate=_validate if kept else None)
    return _with_footer(where, storage_options, read, measured=(hole, cap) == (None, None))


def _with_footer(where, storage_options, read, measured=True, hand_over=False):
    """read(src, owned, size, tail_off, tail, md, kept) for the Parquet file at
    where: the source open (owned: by this call, not the caller), the
    file's size, its tail (at least the footer) from tail_off, and the
    parsed footer. A remote object read before comes with its kept footer
    (colio._parquet_footers): opened with its size and ETag, no request
    before the chunks; if it changed since (ESTALE), the footer is dropped
    and read again. A read of a kept footer (``kept``) that fetches
    nothing calls _validate: its chunk reads are what would tell a changed
    object. A footer is kept once a read with it succeeded; not for an
    object the open read whole (no larger than its tail: reading it again
    is one request either way). The source is closed at the end if owned,
    or with ``hand_over`` only on an error (the result holds it then).
    ``measured``: the source's merge rule is its own (no caller's), and
    the next read of the object starts from it."""
    from . import _open
    from . import _parquet_footers as footers
    k = _footer_key(where, storage_options)
    kept = footers.get(k)
    if kept is not None:
        src = _open.source(where, **storage_options, size=kept.size, etag=kept.etag)
        ok = False
        try:
            if kept.hole is not None:
                # A fresh source has measured nothing: the last one's hole.
                src.set_coalesce(*kept.hole)
            out = read(src, True, kept.size, kept.tail_off, kept.tail, kept.md, True)
            ok = True
            return out
        except BaseException as e:
            footers.drop(k, kept)  # stale, gone, or failing: the next read asks afresh
            if not (isinstance(e, OSError) and e.errno == errno.ESTALE):
                raise
        finally:
            if not (ok and hand_over):
                src.close()
    src, owned = _open_source(where, storage_options)
    ok = False
    try:
        size = src.size
        tail_off, tail = _tail(src, size, _name(where))
        md = _parse(tail)
        # One call for both (RemoteSource._etag); other sources have no ETag.
        etag, stable = src._etag() if k is not None and hasattr(src, "_etag") else ("", False)
        footer = None
        if tail_off > 0 and stable and footers.keepable(etag):
            need = int.from_bytes(tail[-8:-4], "little") + 8
            footer = footers.Footer(size, etag, size - need, bytes(tail[-need:]), md)
        out = read(src, owned, size, tail_off, tail, md, False)
        ok = True
        if footer is not None:
            if measured:
                footer.hole = src.coalescing
            footers.put(k, footer)
        return out
    finally:
        if owned and not (ok and hand_over):
            src.close()


def _validate(src, size):
    """Raises ESTALE if src's object is not the version its ETag names (a
    read of its last byte carries If-Match): for a read whose kept footer
    is all it needs."""
    src.read(size - 1, 1)


def _footer_key(where, storage_options):
    """The kept-footer key of a remote URL opened by colio, or None (local
    paths and Sources passed in are not kept, nor a caller's own size,
    ETag or prefetch)."""
    from . import _parquet_footers as footers
    from . import _remote
    if not isinstance(where, (str, bytes, os.PathLike)):
        return None
    url = os.fsdecode(where)
    if (_remote.scheme_of(url) not in _remote.SCHEMES or storage_options.get("backend") == "fsspec"
            or {"size", "etag", "prefetch", "prefetch_tail"} & set(storage_options)):
        return None
    return footers.key(url, storage_options)


def _read_through_file(where, columns, filters, row_groups, storage_options):
    import pyarrow.parquet as pq
    need = _needed(columns, filters)
    with open(where, need, row_groups, **storage_options) as f:
        # pre_buffer off: the bytes are in memory already, and pyarrow's
        # read cache would only copy them again on its own threads.
        if row_groups is None:
            return pq.read_table(f, columns=columns, filters=filters, pre_buffer=False)
        t = pq.ParquetFile(f, metadata=f.metadata, pre_buffer=False).read_row_groups(
            list(row_groups), columns=need)
    return t if filters is None else _filtered(t, filters, columns)


def _needed(columns, filters):
    """The columns to fetch: those asked for and those a list of filters
    names (an expression's are not known: every column)."""
    if filters is None or columns is None:
        return columns
    named = _filter_columns(filters) if isinstance(filters, list) else None
    return None if named is None else list(columns) + [c for c in named if c not in columns]


def _filtered(t, filters, columns):
    import pyarrow.parquet as pq
    expr = pq.filters_to_expression(filters) if isinstance(filters, list) else filters
    t = t.filter(expr)
    return t if columns is None else t.select(list(columns))


def _is_local_path(where, storage_options):
    if storage_options or not isinstance(where, (str, bytes, os.PathLike)):
        return False
    p = os.fsdecode(where)
    return "://" not in p and "::" not in p


def _filter_columns(filters):
    """The column names a list-of-tuples filter refers to."""
    names = []
    for f in filters:
        for term in (f if isinstance(f, list) else [f]):
            if term[0] not in names:
                names.append(term[0])
    return names
