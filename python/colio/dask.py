"""colio.dask: ``read_bytes`` for Dask, each block read by colio with eager
parallel range reads.

    import colio.dask
    sample, blocks = colio.dask.read_bytes("s3://bucket/logs-*.csv", blocksize="64 MiB",
                                           delimiter=b"\\n", anon=True)
    # blocks: one list per file of dask.delayed values, each computing to bytes

The contract is ``dask.bytes.read_bytes``'s: the same arguments, the same
return shape (``sample, blocks`` or ``sample, blocks, paths`` with
``include_path=True``), the same block offsets and lengths, and the same
delimiter semantics (a block with a delimiter starts just after the first
delimiter at or after its offset, or at 0 for the first block, and ends just
after the first delimiter at or after its nominal end, or at the end of the
file), so every block computes to exactly the bytes Dask's block would.

Where it differs is how a block is read. Dask reads a block through one
buffered file object: a seek and a read to find the start delimiter, a seek
and a read to find the end, then a seek back and the read of the block, each
a round trip to the store, one after the other. Here the task opens a colio
source on the worker (a native file source for local paths, an fsspec source
otherwise) and issues, in one call, the block as ranges of ``part_size``
bytes plus the window after it where the end delimiter is searched; all are
in flight at once on colio's workers (or on the file system's event loop for
async file systems). The start delimiter is found in the block's own bytes.
Only when the end delimiter lies beyond the first window are further
windows read, several at once.

Beyond Dask's version:

- each block is read with parallel range requests (``part_size``, default
  the worker's ``task_size`` setting, 4 MiB) and its delimiter search
  overlaps the block read, instead of up to three sequential requests;
- the file sizes are fetched concurrently on the client (one metadata request
  per file; Dask makes two, ``info`` and ``ukey``), and each task receives its
  file's size, so workers make no metadata requests;
- the sample is read with colio too, the chunks after the first ``sample``
  bytes (needed only to complete the sample up to a delimiter) several at
  once;
- ``search_size`` (default 64 KiB, Dask's search step) sets the window read
  after each block for the end delimiter;
- a ``delimiter`` that is not bytes is refused at call time, not at compute.

Compression: ``compression=None`` reads raw bytes; a named or ``"infer"``red
compression works with ``blocksize=None`` (each file is one block, read with
colio and decompressed in memory on the worker) and is refused with a
blocksize, as Dask does. The tasks' keys are ``colio-read-block-<offset>-<token>``
(Dask's are ``read-block-...``), so both can live in one graph.

Threads: each Dask worker process has its own colio engine (its own
``COLIO_NTHREADS`` I/O slots, default 8, and ``task_size``), shared by all of
that worker's task threads; see docs/using-from-python.md, "Dask".
"""

from __future__ import annotations

import os

__all__ = ["read_bytes", "read_parquet"]

DEFAULT_SEARCH_SIZE = 1 << 16  # fsspec's seek_delimiter step


def read_bytes(urlpath, delimiter=None, not_zero=False, blocksize="128 MiB", sample="10 kiB",
               compression=None, include_path=False, *, part_size=None,
               search_size=DEFAULT_SEARCH_SIZE, **storage_options):
    """Dask's ``read_bytes`` with each block read by colio.

    Returns ``(sample, blocks)``, or ``(sample, blocks, paths)`` with
    ``include_path=True``: ``sample`` is the first ``sample`` bytes of the
    first file (extended to the next delimiter when one is given; ``False``
    for none), ``blocks`` one list per file of ``dask.delayed`` values that
    compute to the file's blocks (bytes), ``paths`` the files.

    urlpath: a path, URL, glob or list of them (one protocol).
    delimiter: bytes on which blocks start and end (the end one included).
    not_zero: skip the first byte of each file, so a header line is dropped.
    blocksize: bytes per block (int or "64 MiB"); None: one block per file.
    compression: None, a name ("gzip", ...) or "infer"; only with blocksize=None.
    part_size: the size of each range read of a block (default: the
        worker's colio ``task_size``).
    search_size: the size of each window read to find an end delimiter.
    storage_options: passed to the fsspec file system.
    """
    from dask.base import tokenize
    from dask.delayed import delayed
    from dask.utils import is_integer, parse_bytes
    from fsspec.core import get_fs_token_paths
    from fsspec.utils import infer_compression

    if not isinstance(urlpath, (str, list, tuple, os.PathLike)):
        raise TypeError("Path should be a string, os.PathLike, list or tuple")
    if delimiter is not None and not isinstance(delimiter, bytes):
        raise TypeError(f"colio.dask.read_bytes: delimiter must be bytes, not "
                        f"{type(delimiter).__name__}")
    if part_size is not None:
        part_size = _positive(parse_bytes(part_size) if isinstance(part_size, str) else part_size,
                              "part_size")
    search_size = _positive(parse_bytes(search_size) if isinstance(search_size, str)
                            else search_size, "search_size")

    fs, fs_token, paths = get_fs_token_paths(urlpath, mode="rb", storage_options=storage_options)
    if len(paths) == 0:
        raise OSError(f"{urlpath} resolved to no files")

    if blocksize is not None:
        if isinstance(blocksize, str):
            blocksize = parse_bytes(blocksize)
        if not is_integer(blocksize):
            raise TypeError("blocksize must be an integer")
        blocksize = int(blocksize)

    comps = [infer_compression(p) if compression == "infer" else compression for p in paths]
    if blocksize is not None and any(c is not None for c in comps):
        raise ValueError("Cannot do chunked reads on compressed files. "
                         "To read, set blocksize=None")
    for c in comps:
        if c is not None:
            from fsspec.compression import compr
            if c not in compr:
                raise ValueError(f"Compression type {c} not supported")

    infos = _infos(fs, paths)
    native = _is_local(fs)
    out = []
    for path, info, comp in zip(paths, infos, comps):
        size = info.get("size")
        if blocksize is None:
            offsets, lengths = [0], [None]
        elif size is None:
            raise ValueError("Backing filesystem couldn't determine file size, cannot "
                             "do chunked reads. To read, set blocksize=None.")
        else:
            offsets, lengths = block_offsets(size, blocksize, not_zero)
        f = _File(fs, path, size, native)
        token = tokenize(fs_token, delimiter, path, str(info), comp, offsets, part_size,
                         search_size, "colio")
        read = delayed(_read_block, pure=True)
        out.append([read(f, o, n, delimiter, comp, part_size, search_size,
                         dask_key_name=f"colio-read-block-{o}-{token}")
                    for o, n in zip(offsets, lengths)])

    if sample:
        if sample is True:
            sample = "10 kiB"
        if isinstance(sample, str):
            sample = parse_bytes(sample)
        sample = _sample(fs, paths[0], infos[0].get("size"), native, comps[0], int(sample),
                         delimiter)
    if include_path:
        return sample, out, paths
    return sample, out


def block_offsets(size: int, blocksize: int, not_zero: bool = False):
    """The (offsets, lengths) of one file's blocks, as Dask computes them: the
    file is cut into ``size // blocksize`` blocks (at least one) of equal
    size, the remainder spread over them; ``not_zero`` moves the first
    offset to 1. An empty file has no blocks."""
    if size == 0:
        return [], []
    step = size / (size // blocksize) if size % blocksize and size > blocksize else blocksize
    offsets, lengths = [0], []
    pos = 0
    while size - pos > step * 2 - 1:  # the last block takes what is left
        pos += step
        offsets.append(int(pos))
        lengths.append(offsets[-1] - offsets[-2])
    lengths.append(size - offsets[-1])
    if not_zero:
        offsets[0] = 1
        lengths[0] -= 1
    return offsets, lengths


# ---- the client side ----------------------------------------------------------

def _positive(v, what):
    import operator
    v = operator.index(v)
    if v <= 0:
        raise ValueError(f"colio.dask.read_bytes: {what} must be positive, not {v}")
    return v


def _is_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem
    return type(fs) is LocalFileSystem


def _infos(fs, paths):
    """fs.info of every path, concurrently (a metadata request each)."""
    if len(paths) == 1:
        return [fs.info(paths[0])]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(min(16, len(paths))) as pool:
        return list(pool.map(fs.info, paths))


class _File:
    """What a task needs to open a file on the worker: the file system (it
    pickles as its description), the path and the size (so no metadata
    request is made there)."""

    __slots__ = ("fs", "path", "size", "native")

    def __init__(self, fs, path, size, native):
        self.fs, self.path, self.size, self.native = fs, path, size, native

    def __reduce__(self):
        return _File, (self.fs, self.path, self.size, self.native)

    def open(self):
        import colio
        if self.native:
            return colio.source(self.path)
        return colio.from_fsspec(self.fs, self.path, size=self.size)


def _sample(fs, path, size, native, comp, n, delimiter):
    """Dask's sample: the first n bytes; with a delimiter, then n-byte chunks
    until one holds the delimiter, which ends the sample (the chunks' order
    and boundaries are Dask's; they are read several at once)."""
    if comp is not None:  # compressed: through fsspec's decompressor, as Dask
        from fsspec.core import OpenFile
        with OpenFile(fs, path, compression=comp) as f:
            return _complete_sample(lambda k: [f.read(n) for _ in range(k)], delimiter)
    with _File(fs, path, size, native).open() as src:
        end = src.size
        pos = [0]

        def chunks(k):
            ranges = []
            for _ in range(k):
                o = pos[0]
                pos[0] += n
                ranges.append((o, max(0, min(n, end - o))))
            live = [(o, s) for o, s in ranges if s > 0]
            got = iter(src.read_ranges(live))
            return [bytes(next(got)) if s > 0 else b"" for _, s in ranges]

        return _complete_sample(chunks, delimiter)


def _complete_sample(chunks, delimiter):
    first = chunks(1)[0]
    if delimiter is None:
        return first
    parts = [first]
    batch = 2
    while True:
        for new in chunks(batch):
            if not new:
                return b"".join(parts)
            if delimiter in new:
                parts.append(new.split(delimiter, 1)[0] + delimiter)
                return b"".join(parts)
            parts.append(new)
        batch = min(batch * 2, 16)


# ---- the worker side ------------------------------------------------------------

def _read_block(f: _File, offset: int, length, delimiter, compression, part_size, search_size):
    """One block, read on the worker (a Dask task)."""
    import colio
    if part_size is None:
        part_size = colio.get_config()["task_size"]
    with f.open() as src:
        size = src.size
        if offset == 0 and length is None:  # the whole file
            data = _Pieces.read(src, [(0, size)], part_size).slice(0, size)
            if compression is not None:
                import io
                from fsspec.compression import compr
                with compr[compression](io.BytesIO(data), mode="rb") as z:
                    data = z.read()
            return data
        end = min(offset + length, size)
        if not delimiter:
            return _Pieces.read(src, [(offset, end)], part_size).slice(offset, end)
        return _delimited(src, size, offset, length, delimiter, part_size, search_size)


def _delimited(src, size, offset, length, d, part_size, search_size):
    """fsspec's read_block(f, offset, length, d), from ranges read at once:
    start just after the first d at or after offset (0 if offset is 0),
    end just after the first d at or after offset + length (or at the end of
    the file)."""
    L = len(d)
    w = max(search_size, L)
    nominal_end = offset + length
    win_end = min(nominal_end + w, size)
    p = _Pieces.read(src, [(offset, win_end)], part_size)  # the window rides with the block

    if offset == 0:
        start = 0
    else:
        i = p.find(d, offset)
        while i < 0 and p.end < size and p.end - (L - 1) < nominal_end:
            p.more(src, size, w)  # an occurrence may start before nominal_end
            i = p.find(d, offset)
        if i < 0 or i >= nominal_end:
            # The first delimiter at or after offset is also the first at or
            # after the nominal end: start and end meet, the block is empty.
            return b""
        start = i + L

    j = p.find(d, nominal_end)
    batch = 1
    while j < 0 and p.end < size:
        p.more(src, size, w, batch)
        batch = min(batch * 2, 16)
        j = p.find(d, nominal_end)
    stop = j + L if j >= 0 else size
    if stop < start:
        # Overlapping delimiters (b"aa" in b"aaa"): fsspec then reads with
        # a negative length, which is "to the end of the file".
        return _Pieces.read(src, [(start, size)], part_size).slice(start, size)
    return p.slice(start, stop)


class _Pieces:
    """Contiguous bytes of a source, as the bytes objects colio returned
    (no copy), with a delimiter search across their boundaries."""

    def __init__(self):
        self.items = []  # (absolute offset, bytes, valid length), contiguous
        self.start = None
        self.end = None

    @classmethod
    def read(cls, src, spans, part_size):
        """Reads the contiguous spans [(lo, hi), ...] as ranges of at most
        part_size bytes, all in flight at once."""
        p = cls()
        p._read(src, spans, part_size)
        return p

    def _read(self, src, spans, part_size):
        ranges = []
        for lo, hi in spans:
            for o in range(lo, hi, part_size):
                ranges.append((o, min(part_size, hi - o)))
        if self.start is None:
            self.start = self.end = spans[0][0]
        if not ranges:
            return
        for (o, want), f in zip(ranges, src.read_ranges_async(ranges)):
            mv = f.result()
            n = mv.nbytes
            b = mv.obj
            # Zero copy only where the view is its bytes object whole: small
            # ranges of one batch share a bytes object (colio._batch), so the
            # start of mv.obj is another range's bytes (wrong blocks in
            # test_dask until this checked the length exactly).
            if type(b) is not bytes or len(b) != n:
                b = bytes(mv)
            assert o == self.end, "colio.dask: ranges out of order"
            self.items.append((o, b, n))
            self.end = o + n
            if n < want:  # the source ended early
                break

    def more(self, src, size, w, batch=1):
        """Reads batch more windows of w bytes after the end, at once."""
        lo = self.end
        hi = min(lo + w * batch, size)
        self._read(src, [(lo, hi)], w)

    def find(self, d, lo):
        """The offset of the first d that starts at or after lo and lies
        within these bytes, or -1."""
        L = len(d)
        carry, carry_at = b"", lo  # the last L-1 bytes before the piece, from lo on
        for a, b, n in self.items:
            e = a + n
            if e <= lo:
                continue
            s = lo - a if lo > a else 0
            if carry:
                h = (carry + b[s:s + L - 1]).find(d)
                if h >= 0:
                    return carry_at + h
            h = b.find(d, s, n)
            if h >= 0:
                return a + h
            if L > 1:
                carry = (carry + b[max(s, n - (L - 1)):n])[-(L - 1):]
                carry_at = e - len(carry)
        return -1

    def slice(self, lo, hi) -> bytes:
        """The bytes [lo, hi) (hi clamped to what was read)."""
        hi = min(hi, self.end)
        if hi <= lo:
            return b""
        parts = []
        for a, b, n in self.items:
            e = a + n
            if e <= lo or a >= hi:
                continue
            if a == lo and e == hi and n == len(b):
                return b  # exactly one whole piece: no copy
            parts.append(memoryview(b)[max(lo - a, 0):min(hi, e) - a])
        return b"".join(parts)



# ---- read_parquet ------------------------------------------------------------

def read_parquet(urlpath, columns=None, *, split_row_groups=True, **storage_options):
    """A Dask DataFrame of Parquet files, each partition read through
    ``colio.parquet`` (its column chunks fetched at once, after one tail
    read for the footer).

    urlpath: a file, a directory (its ``*.parquet`` files, or every file not
    starting with ``_`` or ``.``), a glob, or a list of them, local or any
    URL colio reads. Partitions: one per row group (``split_row_groups=True``)
    or one per file. The footers are read on the client, several at once,
    to count the row groups and take the schema of the first file; each
    task then reads its row group's chunks on its worker. String columns
    follow Dask's ``dataframe.convert-string`` setting, as
    ``dask.dataframe.read_parquet`` does."""
    import dask
    import dask.dataframe as dd
    from concurrent.futures import ThreadPoolExecutor

    from . import parquet as cpq

    if isinstance(columns, str):
        raise TypeError("colio.dask.read_parquet: columns must be a list of names, not a string")
    files = _parquet_files(urlpath, storage_options)
    if not files:
        raise FileNotFoundError(f"colio.dask.read_parquet: no Parquet files at {urlpath!r}")
    with ThreadPoolExecutor(min(16, len(files))) as ex:
        mds = list(ex.map(lambda f: cpq.read_metadata(f, **storage_options), files))
    parts = []
    for f, md in zip(files, mds):
        if split_row_groups:
            parts += [(f, r) for r in range(md.num_row_groups)] or [(f, None)]
        else:
            parts.append((f, None))
    schema = mds[0].schema.to_arrow_schema()
    empty = schema.empty_table()
    if columns is not None:
        empty = empty.select(list(columns))
    convert = bool(dask.config.get("dataframe.convert-string", True))
    meta = _to_pandas(empty, convert)
    return dd.from_map(_read_parquet_part, parts, cols=None if columns is None else list(columns),
                       convert=convert, storage_options=storage_options, meta=meta,
                       label="colio-read-parquet", enforce_metadata=False)


def _read_parquet_part(part, cols, convert, storage_options):
    from . import parquet as cpq
    path, rg = part
    t = cpq.read_table(path, columns=cols, row_groups=None if rg is None else [rg],
                       **storage_options)
    return _to_pandas(t, convert)


def _to_pandas(table, convert):
    if not convert:
        return table.to_pandas()
    import pandas as pd
    import pyarrow as pa

    def mapper(t):  # what Dask's convert-string makes of strings
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return pd.StringDtype("pyarrow")
        return None
    return table.to_pandas(types_mapper=mapper)


def _parquet_files(urlpath, storage_options):
    import fsspec.core
    paths = urlpath if isinstance(urlpath, (list, tuple)) else [urlpath]
    out = []
    for p in paths:
        p = os.fsdecode(p)
        fs, path = fsspec.core.url_to_fs(p, **storage_options)
        local = _is_local(fs)
        if any(ch in path for ch in "*?["):
            found = sorted(fs.glob(path))
        elif fs.isdir(path):
            found = sorted(f for f in fs.find(path)
                           if not os.path.basename(f).startswith(("_", ".")))
            pq_only = [f for f in found if f.endswith((".parquet", ".parq", ".pq"))]
            found = pq_only or found
        else:
            found = [path]
        out += [f if local else fs.unstrip_protocol(f) for f in found]
    return out
