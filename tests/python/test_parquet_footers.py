"""Footers of remote Parquet objects kept between reads (colio._parquet_footers):
a second read of an unchanged object makes no request before its chunks,
a changed one is read afresh (never its old footer with new bytes), and
objects without a strong ETag are never kept."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import colio  # noqa: E402
import colio.parquet as cpq  # noqa: E402
from colio import _parquet_footers as footers  # noqa: E402

N, RG = 4000, 500   # 8 row groups


def _table(k):
    return pa.table({"id": pa.array(range(k, k + N), pa.int64()),
                     "x": pa.array([i * 0.5 + k for i in range(N)]),
                     "s": pa.array([None if i % 5 == 0 else f"v{i % 11 + k}" for i in range(N)])})


def _bytes(tmp_path, k, rg=RG):
    p = tmp_path / f"t{k}.parquet"
    pq.write_table(_table(k), p, row_group_size=rg)
    return p.read_bytes()


@pytest.fixture(autouse=True)
def small_tail(monkeypatch):
    """The open's tail of 512 bytes: these small files are then larger than
    what it brings (a file the open read whole is not kept)."""
    monkeypatch.setattr(cpq, "TAIL", 512)
    monkeypatch.setattr(cpq, "OPEN_TAIL", 512)


@pytest.fixture(autouse=True)
def empty_cache():
    footers.clear()
    yield
    footers.clear()


@pytest.fixture
def etag_server(server):
    server.etag = "strong"
    yield server


def _read(url, how, cols):
    if how == "read_table":
        return cpq.read_table(url, columns=cols)
    with cpq.open(url, columns=cols) as f:
        return pq.ParquetFile(f, metadata=f.metadata, pre_buffer=False).read(columns=cols)


@pytest.mark.parametrize("how", ["read_table", "open"])
def test_a_second_read_makes_no_request_before_the_chunks(etag_server, tmp_path, how):
    srv = etag_server
    srv.files["/f.parquet"] = data = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    want = _table(0).select(["id", "s"])
    assert _read(url, how, ["id", "s"]).equals(want)
    first = srv.range_requests + srv.heads
    srv.reset()
    srv.etag = "strong"
    assert _read(url, how, ["id", "s"]).equals(want)
    # Only chunk reads: no HEAD, no tail (the file's last bytes are its footer).
    assert srv.heads == 0
    assert srv.range_requests < first
    assert srv.refused == 0
    assert footers.get(footers.key(url, {})).size == len(data)


@pytest.mark.parametrize("how", ["read_table", "open"])
@pytest.mark.parametrize("honor", [True, False])
def test_a_changed_object_is_read_afresh(etag_server, tmp_path, how, honor):
    """Rewritten between two reads (another row-group layout, so the old
    footer's offsets would slice the new bytes wrongly): the second read
    equals the new file, whether the server refuses the stale If-Match
    (412) or ignores it and only its ETag tells."""
    srv = etag_server
    srv.honor_if_match = honor
    srv.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    assert _read(url, how, None).equals(_table(0))
    srv.files["/f.parquet"] = _bytes(tmp_path, 7, rg=300)
    assert _read(url, how, None).equals(_table(7))
    assert srv.refused >= 1 if honor else srv.refused == 0  # the kept footer's reads, refused
    kept = footers.get(footers.key(url, {}))
    assert kept.md.num_row_groups == pq.ParquetFile(pa.BufferReader(srv.files["/f.parquet"])
                                                    ).metadata.num_row_groups
    srv.reset()
    srv.etag = "strong"
    srv.honor_if_match = honor
    assert _read(url, how, ["x"]).equals(_table(7).select(["x"]))  # the new footer, kept
    assert srv.heads == 0 and srv.refused == 0


def test_a_read_that_needs_only_the_kept_footer_still_checks_it(etag_server, tmp_path):
    """No row groups asked: nothing to fetch, but the object changed (other
    columns) and the result must be the new file's empty table."""
    srv = etag_server
    srv.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    assert cpq.read_table(url, row_groups=[]).schema.equals(_table(0).schema)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"y": pa.array(range(N), pa.int32())}), other, row_group_size=RG)
    srv.files["/f.parquet"] = other.read_bytes()
    got = cpq.read_table(url, row_groups=[])
    assert got.num_rows == 0 and got.schema.names == ["y"]
    with cpq.open(url, row_groups=[]) as f:
        assert f.metadata.schema.names == ["y"]


def test_a_file_the_open_reads_whole_is_not_kept(etag_server, tmp_path, monkeypatch):
    monkeypatch.setattr(cpq, "OPEN_TAIL", 1 << 20)
    monkeypatch.setattr(cpq, "TAIL", 1 << 20)
    srv = etag_server
    srv.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    for _ in range(2):
        srv.reset()
        srv.etag = "strong"
        assert cpq.read_table(url).equals(_table(0))
        assert srv.range_requests + srv.heads == 1
    assert footers.get(footers.key(url, {})) is None


def test_concurrent_reads_share_the_kept_footer(etag_server, tmp_path):
    import threading
    srv = etag_server
    srv.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    want = _table(0).select(["x", "s"])
    assert cpq.read_table(url, columns=["x", "s"]).equals(want)
    srv.reset()
    srv.etag = "strong"
    bad = []

    def work():
        for _ in range(5):
            if not cpq.read_table(url, columns=["x", "s"]).equals(want):
                bad.append(1)
    ts = [threading.Thread(target=work) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad and srv.heads == 0 and srv.refused == 0


def test_a_deleted_object_raises_and_is_forgotten(etag_server, tmp_path):
    srv = etag_server
    srv.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    cpq.read_table(url, columns=["x"])
    del srv.files["/f.parquet"]
    with pytest.raises(FileNotFoundError):
        cpq.read_table(url, columns=["x"])
    assert footers.get(footers.key(url, {})) is None


@pytest.mark.parametrize("modified, kept", [("now", False), (1.0e9, True)])
def test_an_object_modified_within_the_second_is_not_kept(etag_server, tmp_path, modified, kept):
    """Last-Modified in the second of the answer's Date: a server whose
    ETag comes from the modification time in seconds could give the next
    write the same one (RFC 9110 8.8.2.2), so the footer is not kept."""
    etag_server.last_modified = modified
    etag_server.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = etag_server.url + "/f.parquet"
    with colio.source(url) as src:
        assert src.etag.startswith('"') and src.etag_stable is kept
    assert cpq.read_table(url, columns=["x"]).equals(_table(0).select(["x"]))
    assert (footers.get(footers.key(url, {})) is not None) is kept


@pytest.mark.parametrize("mode", [None, "weak"])
def test_no_strong_etag_no_kept_footer(server, tmp_path, mode):
    server.etag = mode
    server.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = server.url + "/f.parquet"
    for _ in range(2):
        server.reset()
        server.etag = mode
        assert cpq.read_table(url, columns=["x"]).equals(_table(0).select(["x"]))
        assert server.refused == 0
    assert footers.get(footers.key(url, {})) is None


def test_other_options_are_another_entry(etag_server, tmp_path):
    srv = etag_server
    srv.files["/f.parquet"] = _bytes(tmp_path, 0)
    url = srv.url + "/f.parquet"
    cpq.read_table(url, columns=["x"])
    assert footers.get(footers.key(url, {"max_in_flight": 4})) is None
    # A caller's own size, ETag or prefetch is not mixed with a kept one.
    assert cpq._footer_key(url, {"prefetch_tail": 4096}) is None
    assert cpq._footer_key(url, {"backend": "fsspec"}) is None
    assert cpq._footer_key(str(tmp_path / "local.parquet"), {}) is None


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(footers, "MAX_ENTRIES", 3)
    monkeypatch.setattr(footers, "MAX_BYTES", 1000)

    def put(i, n):
        footers.put(("u%d" % i, ()), footers.Footer(n, '"e"', 0, b"x" * n, None))

    for i in range(5):
        put(i, 10)
    assert [footers.get(("u%d" % i, ())) is not None for i in range(5)] == [False] * 2 + [True] * 3
    footers.get(("u2", ()))         # the most recently used is kept longest
    put(5, 10)
    assert footers.get(("u2", ())) is not None and footers.get(("u3", ())) is None
    put(6, 260)                      # over MAX_BYTES / 4: never kept
    assert footers.get(("u6", ())) is None
    monkeypatch.setattr(footers, "MAX_ENTRIES", 10)
    for i in range(7, 12):
        put(i, 240)                  # 5 x 240 > 1000 bytes: the oldest go
    assert footers._bytes <= 1000 and footers.get(("u7", ())) is None
    assert footers.get(("u11", ())) is not None
    kept = footers.get(("u11", ()))
    footers.drop(("u11", ()), footers.Footer(1, '"e"', 0, b"", None))  # not that entry
    assert footers.get(("u11", ())) is kept
    footers.drop(("u11", ()), kept)
    assert footers.get(("u11", ())) is None
    assert footers.keepable('"abc"') and not footers.keepable('W/"abc"')
    assert not footers.keepable("") and not footers.keepable('"\u00e9"')


def test_s3_a_kept_footer_reads_through_if_match_and_a_rewrite_is_read_afresh(no_aws, tmp_path):
    """On S3 (moto, signed requests): the second read of an object uploaded
    over a second ago finds its footer kept; the object overwritten with
    another table (a new MD5 ETag) reads as the new one."""
    import time

    from conftest import moto_s3
    ep, key, secret, s3, stop = moto_s3("colio-footers")
    try:
        s3.create_bucket(Bucket="colio-pq")
        s3.put_object(Bucket="colio-pq", Key="t.parquet", Body=_bytes(tmp_path, 0))
        time.sleep(1.2)  # the answer's Date a second after Last-Modified: a stable ETag
        url = "s3://colio-pq/t.parquet"
        opts = {"key": key, "secret": secret, "endpoint_url": ep, "region": "us-east-1"}
        for _ in range(2):
            assert cpq.read_table(url, columns=["id", "x"], **opts).equals(
                _table(0).select(["id", "x"]))
        kept = footers.get(footers.key(url, opts))
        assert kept is not None and kept.etag.startswith('"')
        s3.put_object(Bucket="colio-pq", Key="t.parquet", Body=_bytes(tmp_path, 3, rg=700))
        assert cpq.read_table(url, **opts).equals(_table(3))
        assert footers.get(footers.key(url, opts)) is not kept
    finally:
        stop()
