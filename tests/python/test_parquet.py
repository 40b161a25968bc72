"""colio.parquet (issue 16): for Parquet files written by pyarrow and by
polars (several row groups, nested and nullable columns, dictionary and
plain encodings, with and without page indexes), every column subset and
row-group subset read through colio.parquet equals pyarrow's read of the
local file; the prefetch covers everything pyarrow then reads (no read
falls through to the source); over HTTP the footer and the chunks are two
fetches; `import colio` does not import pyarrow."""

import itertools
import os
import subprocess
import sys

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import colio  # noqa: E402
import colio.parquet as cpq  # noqa: E402

N = 5000
COLUMNS = ["id", "cat", "txt", "lst", "st"]


def table():
    ids = pa.array(range(N), pa.int64())
    cat = pa.array([None if i % 11 == 0 else f"c{i % 5}" for i in range(N)])
    txt = pa.array([f"row {i} " * (i % 4) if i % 7 else None for i in range(N)])
    lst = pa.array([None if i % 9 == 0 else list(range(i % 4)) for i in range(N)], pa.list_(pa.int32()))
    st = pa.array([None if i % 13 == 0 else {"x": i * 0.5, "y": str(i)} for i in range(N)],
                  pa.struct([("x", pa.float64()), ("y", pa.string())]))
    return pa.table({"id": ids, "cat": cat, "txt": txt, "lst": lst, "st": st})


WRITERS = {
    "pyarrow-dict-index": dict(row_group_size=1200, use_dictionary=True, write_page_index=True),
    "pyarrow-plain": dict(row_group_size=700, use_dictionary=False, write_page_index=False,
                          compression="none"),
    "pyarrow-mixed-big-footer": dict(row_group_size=50, use_dictionary=["cat"], write_page_index=True,
                                     data_page_size=1024),
}


@pytest.fixture(scope="module", params=list(WRITERS) + ["polars"])
def pfile(request, tmp_path_factory):
    p = str(tmp_path_factory.mktemp("pq") / f"{request.param}.parquet")
    if request.param == "polars":
        pl = pytest.importorskip("polars")
        pl.from_arrow(table()).write_parquet(p, row_group_size=1000, statistics=True)
    else:
        pq.write_table(table(), p, **WRITERS[request.param])
    return p


def subsets(items):
    for k in range(1, len(items) + 1):
        yield from itertools.combinations(items, k)


def test_every_column_subset(pfile):
    for cols in [None, *map(list, subsets(COLUMNS)), ["st.x"], ["lst", "st.y"]]:
        want = pq.read_table(pfile, columns=cols)
        assert cpq.read_table(pfile, columns=cols).equals(want), cols
        with colio.source(pfile) as src:  # a Source: the prefetch path, not pyarrow's own
            assert cpq.read_table(src, columns=cols).equals(want), cols
        with cpq.open(pfile, columns=cols) as f:  # pyarrow on the file object
            assert pq.read_table(f, columns=cols).equals(want), cols
            assert f.misses == 0, f"{cols}: {f.misses} reads fell through the prefetch"


def test_every_row_group_subset(pfile):
    n = pq.ParquetFile(pfile).metadata.num_row_groups
    assert n >= 4
    picks = [[0], [n - 1], [n - 1, 0], list(range(0, n, 2)), list(range(n))]
    for rgs in picks:
        for cols in [None, ["id"], ["lst", "cat"], ["st"]]:
            want = pq.ParquetFile(pfile).read_row_groups(rgs, columns=cols)
            assert cpq.read_table(pfile, columns=cols, row_groups=rgs).equals(want), (rgs, cols)
            with colio.source(pfile) as src:
                assert cpq.read_table(src, columns=cols, row_groups=rgs).equals(want), (rgs, cols)
            with cpq.open(pfile, columns=cols, row_groups=rgs) as f:
                got = pq.ParquetFile(f, metadata=f.metadata).read_row_groups(rgs, columns=cols)
                assert got.equals(want)
                assert f.misses == 0


def test_filters(pfile):
    flt = [("id", ">=", 1234), ("cat", "!=", "c3")]
    for cols in [None, ["txt"], ["id", "st"]]:
        want = pq.read_table(pfile, columns=cols, filters=flt)
        assert cpq.read_table(pfile, columns=cols, filters=flt).equals(want)
        with colio.source(pfile) as src:
            assert cpq.read_table(src, columns=cols, filters=flt).equals(want)
    expr = pa.compute.field("id") < 100
    assert cpq.read_table(pfile, columns=["lst"], filters=expr).equals(
        pq.read_table(pfile, columns=["lst"], filters=expr))
    ref = pq.ParquetFile(pfile).read_row_groups([1]).filter(pq.filters_to_expression(flt))
    assert cpq.read_table(pfile, columns=["txt"], filters=flt, row_groups=[1]).equals(
        ref.select(["txt"]))
    with colio.source(pfile) as src:
        assert cpq.read_table(src, columns=["txt"], filters=flt, row_groups=[1]).equals(
            ref.select(["txt"]))


def test_unselected_bytes_fall_through(pfile, monkeypatch):
    """Bytes outside the prefetch are read from the source, and right."""
    monkeypatch.setattr(cpq, "TAIL", 1024)  # so that the tail does not hold them
    with cpq.open(pfile, columns=["id"], row_groups=[0]) as f:
        want = pq.read_table(pfile, columns=["txt", "id"])
        assert pq.read_table(f, columns=["txt", "id"]).equals(want)
        assert f.misses > 0
        f.seek(0)
        with open(pfile, "rb") as g:
            assert f.read() == g.read()
        f.seek(-10, os.SEEK_END)
        assert f.read(100) == open(pfile, "rb").read()[-10:]
        assert f.read(5) == b""


def test_pandas_reads_the_file_object(pfile):
    pd = pytest.importorskip("pandas")
    with cpq.open(pfile, columns=["id", "cat"]) as f:
        got = pd.read_parquet(f, columns=["id", "cat"])
    pd.testing.assert_frame_equal(got, pd.read_parquet(pfile, columns=["id", "cat"]))


def test_large_footer_is_read_whole(tmp_path):
    """A footer over the 64 KiB tail read takes one more read, of the rest."""
    p = str(tmp_path / "wide.parquet")
    wide = pa.table({f"column_{i:04d}": pa.array([i, None, i]) for i in range(600)})
    pq.write_table(wide, p, row_group_size=1)
    md = pq.read_metadata(p)
    assert md.serialized_size > cpq.TAIL
    assert cpq.read_table(p, columns=["column_0007", "column_0599"]).equals(
        pq.read_table(p, columns=["column_0007", "column_0599"]))
    assert cpq.read_metadata(p).num_row_groups == 3


def test_errors(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match="not a Parquet file"):
        cpq.open(str(p))
    with pytest.raises(TypeError, match="list of names"):
        cpq.column_ranges(None, columns="id")
    with pytest.raises(TypeError):
        cpq.open(12)


def test_over_http(pfile, server):
    """The footer, then the column chunks in one fan-out: two fetches for an
    fsspec source (merged here), at most one per chunk for a native one."""
    pytest.importorskip("aiohttp")
    data = open(pfile, "rb").read()
    server.files["/t.parquet"] = data
    url = server.url + "/t.parquet"
    cols = ["id", "st"]
    server.reset()
    with cpq.open(url, columns=cols) as f:
        loop = getattr(f._src, "_loop", None) is not None
        requests = server.range_requests
        got = pq.read_table(f, columns=cols)
        assert f.misses == 0
    assert got.equals(pq.read_table(pfile, columns=cols))
    md = pq.read_metadata(pfile)
    chunks = len(cpq.column_ranges(md, cols, None, len(data)))
    assert requests <= (2 if loop else 1 + chunks)
    assert server.range_requests == requests  # nothing after the prefetch
    assert cpq.read_table(url, columns=["txt"], row_groups=[1]).equals(
        pq.ParquetFile(pfile).read_row_groups([1], columns=["txt"]))


def test_source_argument(pfile):
    with colio.source(pfile) as src:
        f = cpq.open(src, columns=["cat"])
        assert pq.read_table(f, columns=["cat"]).equals(pq.read_table(pfile, columns=["cat"]))
        f.close()
        assert src.read(0, 4) == b"PAR1"  # not closed: the caller's
    with pytest.raises(TypeError, match="storage options"):
        cpq.open(colio.source(pfile), anon=True)


def test_import_colio_does_not_import_pyarrow():
    code = "import sys, colio; import colio.dask; assert 'pyarrow' not in sys.modules, 'pyarrow'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_native_url_open_brings_the_footer(pfile, server):
    """A native http(s)/s3 URL is opened with a tail prefetch: the open's
    GET (bytes=-OPEN_TAIL) gives the size and the footer, so there is no HEAD
    and no footer request of its own. Before, read_table made a HEAD, a
    tail GET and then the chunks' GETs."""
    data = open(pfile, "rb").read()  # smaller than the tail: the open brings all of it
    server.files["/tail.parquet"] = data
    url = server.url + "/tail.parquet"
    cols = ["id"]
    md = pq.read_metadata(pfile)
    chunks = len(cpq.column_ranges(md, cols, None, len(data)))
    server.reset()
    got = cpq.read_table(url, columns=cols)
    assert got.equals(pq.read_table(pfile, columns=cols))
    assert server.heads == 0
    assert 1 <= server.range_requests <= (1 if len(data) <= cpq.OPEN_TAIL else 1 + chunks)
    # a caller's own prefetch choice is kept, and fsspec URLs get none
    server.reset()
    assert cpq.read_table(url, columns=cols, prefetch=1 << 10).equals(got)
    assert server.range_requests >= 2
    server.files.pop("/tail.parquet", None)


@pytest.mark.parametrize("n,rg", [(200_000, 25_000), (40_000, 40)], ids=["3MB", "big-footer"])
def test_native_url_reads_no_tail_beyond_the_open(tmp_path, server, monkeypatch, n, rg):
    """read_table of a native URL: the footer comes from the open's GET
    (its last OPEN_TAIL bytes), so when the footer is parsed the server has
    answered that one request, and then one per row group whose chunk of
    the one column read starts before those bytes (nothing merges across
    row groups). Before, the first tail read was as large as the coalescing
    hole (1 MiB here) while the open had brought 64 KiB, and a footer over
    64 KiB (the second file's) needed a read of its own: a round trip
    before the chunks either way."""
    p = str(tmp_path / "big.parquet")
    pq.write_table(pa.table({"a": pa.array(range(n), pa.int64()),
                             "b": pa.array([i * 0.5 for i in range(n)])}),
                   p, row_group_size=rg, compression="none")
    data = open(p, "rb").read()
    md = pq.read_metadata(p)
    assert md.serialized_size + 8 < cpq.OPEN_TAIL and len(data) > cpq.TAIL
    assert (len(data) > 2 * cpq.OPEN_TAIL) == (rg > 1000)
    assert (md.serialized_size > cpq.TAIL) == (rg < 1000)
    tail_off = max(0, len(data) - cpq.OPEN_TAIL)
    chunks = sum(1 for r in range(md.num_row_groups) if cpq._chunk(md.row_group(r).column(1))[0]
                 < tail_off)
    server.files["/big.parquet"] = data
    at_parse = []
    parse = cpq._parse
    monkeypatch.setattr(cpq, "_parse", lambda tail: (at_parse.append(server.range_requests),
                                                     parse(tail))[1])
    try:
        server.reset()
        got = cpq.read_table(server.url + "/big.parquet", columns=["b"], coalesce_hole=1 << 20)
        assert got.equals(pq.read_table(p, columns=["b"]))
        assert server.heads == 0
        assert at_parse == [1]
        assert server.range_requests == 1 + chunks
    finally:
        server.files.pop("/big.parquet", None)
