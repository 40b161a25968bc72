"""The byte ranges of a Parquet file's column chunks, shared by
colio.parquet (the file object's prefetch) and colio._parquet_eager (the
reads of read_table). Pure Python: pyarrow's metadata objects come in."""

from __future__ import annotations


def selected(path, columns):
    """Whether the leaf column at dotted ``path`` is needed for ``columns``
    (None: all). By top-level column: pyarrow's dataset reader reads a
    whole struct to project one field of it, so "s.x" needs every leaf of
    "s"."""
    top = path.split(".", 1)[0]
    return columns is None or any(top == c.split(".", 1)[0] for c in columns)


def chunk(cc):
    """(offset, size) of a column chunk: from its dictionary page, if it
    has one, to its end."""
    start = cc.data_page_offset
    d = cc.dictionary_page_offset
    if cc.has_dictionary_page and d is not None and 0 < d < start:
        start = d
    return start, cc.total_compressed_size


def merge(ranges, hole, cap):
    """ranges merged across gaps of at most hole, into reads of at most cap
    (a single larger range stays whole): internal/plan's rule, for sources
    whose reads bypass the engine and for read_table's reads of each row
    group (merged per row group, so that one completes on its own)."""
    out = []
    for off, n in sorted(r for r in ranges if r[1] > 0):
        if out:
            o, m = out[-1]
            if off < o + m or (off - (o + m) <= hole and off + n - o <= cap):
                out[-1] = (o, max(o + m, off + n) - o)
                continue
        out.append((off, n))
    return out
