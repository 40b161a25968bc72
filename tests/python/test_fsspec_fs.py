"""colio as an fsspec file system (issue 17): ``colio::`` URLs.

- fsspec's own abstract suites (copy, get, put, open, pipe), as fsspec runs
  them for its local and memory file systems, against colio over local and
  memory targets (nothing skipped);
- every read path (cat_file, cat_ranges, cat, open) byte-exact against
  os.pread / the generator's bytes, over local files, memory://, a loopback
  HTTP server and moto's S3;
- writes through colio sinks (open "wb"/"ab"/"xb", pipe_file, put_file)
  compared with the bytes written, read back without colio;
- the source cache: bounded, reopens a file replaced behind its back, never
  closes a source under an open file;
- pandas read_csv / read_parquet / to_parquet give the same frames through
  colio:: as through the plain URL (Dask's are in test_fsspec_dask.py).
"""

from __future__ import annotations

import os
import pickle
import random

import pytest

fsspec = pytest.importorskip("fsspec")
from fsspec.tests.abstract import (  # noqa: E402
    AbstractCopyTests, AbstractFixtures, AbstractGetTests, AbstractOpenTests,
    AbstractPipeTests, AbstractPutTests)

import colio  # noqa: E402
from colio.fsspec import ColioFileSystem  # noqa: E402

SIZE = (3 << 20) + 4321


@pytest.fixture(scope="module")
def data():
    return random.Random(17).randbytes(SIZE)


def _pread(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, n, off)
    finally:
        os.close(fd)


# ---- fsspec's abstract suites -------------------------------------------------------

class ColioLocalFixtures(AbstractFixtures):
    @pytest.fixture(scope="class")
    @classmethod
    def fs(cls):
        # auto_mkdir as fsspec's own local fixtures set it
        return fsspec.filesystem("colio", target_protocol="file",
                                 target_options={"auto_mkdir": True})

    @pytest.fixture
    def fs_path(self, tmpdir):
        return str(tmpdir)


class ColioMemoryFixtures(AbstractFixtures):
    @pytest.fixture(scope="class")
    @classmethod
    def fs(cls):
        fs = fsspec.filesystem("colio", target_protocol="memory")
        m = fs.fs
        m.store.clear()
        m.pseudo_dirs.clear()
        m.pseudo_dirs.append("")
        try:
            yield fs
        finally:
            m.store.clear()
            m.pseudo_dirs.clear()
            m.pseudo_dirs.append("")

    @pytest.fixture
    def fs_join(self):
        return lambda *args: "/".join(args)

    @pytest.fixture
    def fs_path(self):
        return ""


class TestLocalCopy(AbstractCopyTests, ColioLocalFixtures):
    pass


class TestLocalGet(AbstractGetTests, ColioLocalFixtures):
    pass


class TestLocalPut(AbstractPutTests, ColioLocalFixtures):
    pass


class TestLocalOpen(AbstractOpenTests, ColioLocalFixtures):
    pass


class TestLocalPipe(AbstractPipeTests, ColioLocalFixtures):
    pass


class TestMemoryCopy(AbstractCopyTests, ColioMemoryFixtures):
    pass


class TestMemoryGet(AbstractGetTests, ColioMemoryFixtures):
    pass


class TestMemoryPut(AbstractPutTests, ColioMemoryFixtures):
    pass


class TestMemoryOpen(AbstractOpenTests, ColioMemoryFixtures):
    pass


class TestMemoryPipe(AbstractPipeTests, ColioMemoryFixtures):
    pass


# ---- the chain: how URLs reach the target -------------------------------------------

def test_registered_by_entry_point():
    assert fsspec.get_filesystem_class("colio") is ColioFileSystem


def test_url_forms(tmp_path, data):
    p = tmp_path / "x.bin"
    p.write_bytes(data)
    fsspec.filesystem("memory").pipe_file("/colio-fsfs/x.bin", data)
    for url in (f"colio::{p}", f"colio::file://{p}", "colio::memory://colio-fsfs/x.bin"):
        fs, path = fsspec.core.url_to_fs(url)
        assert isinstance(fs, ColioFileSystem), url
        with fsspec.open(url, "rb") as f:
            assert f.read() == data, url
        assert fs.unstrip_protocol(path).startswith("colio::"), url
        # the URL it names opens the same object again
        with fsspec.open(fs.unstrip_protocol(path), "rb") as f:
            assert f.read(100) == data[:100]
    fsspec.filesystem("memory").rm("/colio-fsfs", recursive=True)


def test_target_options_reach_the_target():
    fs, path = fsspec.core.url_to_fs(
        "colio::s3://bucket/key.bin",
        s3={"anon": True, "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}})
    assert path == "bucket/key.bin"
    assert type(fs.fs).__name__ == "S3FileSystem" and fs.fs.anon is True


def test_pickles_and_reopens(tmp_path, data):
    p = tmp_path / "x.bin"
    p.write_bytes(data)
    fs = fsspec.filesystem("colio", target_protocol="file")
    fs2 = pickle.loads(pickle.dumps(fs))
    assert isinstance(fs2, ColioFileSystem) and fs2.cat_file(str(p), 5, 50) == data[5:50]


# ---- reads, byte-exact -------------------------------------------------------------

def _ranges(n):
    return [(0, 1), (5, 4096), (n - 100, None), (n - 10, n + 100), (-300, -7), (-10, None),
            (None, 50), (1 << 20, (3 << 20) + 17), (n, None), (70, 70), (1000, 10)]


def _want(data, s, e):
    n = len(data)
    s = 0 if s is None else (max(0, n + s) if s < 0 else s)
    e = n if e is None else (n + e if e < 0 else e)
    return data[s:e] if e > s else b""


@pytest.fixture(params=["local", "memory", "http", "http-fsspec"])
def target(request, tmp_path, data, server):
    """(colio fs, path, plain fs) for the same bytes on each kind of target."""
    if request.param == "local":
        p = str(tmp_path / "d.bin")
        with open(p, "wb") as f:
            f.write(data)
        yield fsspec.filesystem("colio", target_protocol="file"), p, fsspec.filesystem("file")
    elif request.param == "memory":
        m = fsspec.filesystem("memory")
        m.pipe_file("/colio-fsfs/d.bin", data)
        yield fsspec.filesystem("colio", target_protocol="memory"), "/colio-fsfs/d.bin", m
        m.rm("/colio-fsfs", recursive=True)
    else:
        server.files["/fsfs/d.bin"] = data
        url = server.url + "/fsfs/d.bin"
        backend = "fsspec" if request.param == "http-fsspec" else "auto"
        yield (fsspec.filesystem("colio", target_protocol="http", backend=backend), url,
               fsspec.filesystem("http"))
        server.files.pop("/fsfs/d.bin", None)


def test_cat_file_and_ranges_byte_exact(target, data):
    fs, path, plain = target
    rs = _ranges(len(data))
    for s, e in rs:
        assert fs.cat_file(path, s, e) == _want(data, s, e), (s, e)
    got = fs.cat_ranges([path] * len(rs), [s for s, _ in rs], [e for _, e in rs])
    assert got == [_want(data, s, e) for s, e in rs]
    assert all(type(b) is bytes for b in got)
    assert fs.cat_file(path) == data == plain.cat_file(path)


def test_open_is_colio_read_ahead_with_fsspec_attributes(target, data):
    fs, path, plain = target
    with fs.open(path, "rb") as f:
        assert f.size == len(data) and f.path == fs._path(path) and f.fs is fs
        assert f.info()["size"] == len(data) == plain.info(path)["size"]
        assert f.seekable() and f.readable() and f.mode == "rb"
        rng = random.Random(3)
        for _ in range(50):
            off, n = rng.randrange(len(data)), rng.randrange(70_000)
            f.seek(off)
            assert f.read(n) == data[off:off + n]
        f.seek(-5, 2)
        assert f.read() == data[-5:] and f.tell() == len(data)
    with fs.open(path, "rt", encoding="latin-1") as t:
        assert t.read(10) == data[:10].decode("latin-1")


def test_cat_ranges_many_paths_and_errors(tmp_path, data):
    fs = fsspec.filesystem("colio", target_protocol="file")
    paths = []
    for i in range(5):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(data[i * 1000:])
        paths.append(str(p))
    missing = str(tmp_path / "missing.bin")
    ps = paths + [missing] + paths[::-1]
    got = fs.cat_ranges(ps, [7] * len(ps), [5000] * len(ps))
    for p, g in zip(ps, got):
        if p == missing:
            assert isinstance(g, FileNotFoundError)
        else:
            assert g == _pread(p, 7, 4993)
    with pytest.raises(FileNotFoundError):
        fs.cat_ranges(ps, [0] * len(ps), [10] * len(ps), on_error="raise")
    out = fs.cat(str(tmp_path / "f*.bin"))
    assert out == {p: open(p, "rb").read() for p in paths}
    assert fs.cat(paths[0]) == open(paths[0], "rb").read()
    with pytest.raises(FileNotFoundError):
        fs.cat_file(missing)


def test_s3_through_moto(data):
    """colio::s3:// with storage options under the target's name."""
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        ep = f"http://{host}:{port}"
        cred = dict(aws_access_key_id="moto", aws_secret_access_key="moto",
                    region_name="us-east-1")
        s3 = boto3.client("s3", endpoint_url=ep, **cred)
        s3.create_bucket(Bucket="colio-fsfs")
        s3.put_object(Bucket="colio-fsfs", Key="d.bin", Body=data)
        opts = {"s3": {"key": "moto", "secret": "moto", "skip_instance_cache": True,
                       "client_kwargs": {"endpoint_url": ep, "region_name": "us-east-1"}}}
        with fsspec.open("colio::s3://colio-fsfs/d.bin", "rb", **opts) as f:
            assert f.size == len(data)
            f.seek(12345)
            assert f.read(100_000) == data[12345:112345]
        fs, path = fsspec.core.url_to_fs("colio::s3://colio-fsfs/d.bin", **opts)
        rs = _ranges(len(data))
        got = fs.cat_ranges([path] * len(rs), [s for s, _ in rs], [e for _, e in rs])
        assert got == [_want(data, s, e) for s, e in rs]
        assert fs.ls("colio-fsfs", detail=False) == ["colio-fsfs/d.bin"]
        fs.pipe_file("colio-fsfs/new.bin", data[:1000])  # colio's S3 sink
        assert s3.get_object(Bucket="colio-fsfs", Key="new.bin")["Body"].read() == data[:1000]
    finally:
        server.stop()


# ---- writes -------------------------------------------------------------------------

def test_local_writes_go_through_colio_sinks(tmp_path, data, monkeypatch):
    fs = fsspec.filesystem("colio", target_protocol="file")
    made = []
    real = colio.sink

    def spy(target, mode="w"):
        made.append(mode)
        return real(target, mode)

    monkeypatch.setattr(colio, "sink", spy)
    big = data * 7  # several write buffers, in flight together
    p = str(tmp_path / "w.bin")
    with fs.open(p, "wb") as f:
        for i in range(0, len(big), 1_000_003):
            assert f.write(big[i:i + 1_000_003]) == len(big[i:i + 1_000_003])
        assert f.tell() == len(big)
    assert open(p, "rb").read() == big
    with fs.open(p, "ab") as f:
        f.write(b"tail")
    assert open(p, "rb").read() == big + b"tail"
    with pytest.raises(FileExistsError):
        fs.open(p, "xb")
    fs.pipe_file(str(tmp_path / "pipe.bin"), data)
    assert open(tmp_path / "pipe.bin", "rb").read() == data
    with pytest.raises(FileExistsError):
        fs.pipe_file(str(tmp_path / "pipe.bin"), b"x", mode="create")
    fs.put_file(p, str(tmp_path / "sub" / "put.bin"))
    assert open(tmp_path / "sub" / "put.bin", "rb").read() == big + b"tail"
    assert made == ["w", "a", "w", "w"]


def test_memory_writes_use_the_target(data):
    fs = fsspec.filesystem("colio", target_protocol="memory")
    with fs.open("/colio-fsfs/w.bin", "wb") as f:
        f.write(data)
    assert fsspec.filesystem("memory").cat_file("/colio-fsfs/w.bin") == data
    assert fs.cat_file("/colio-fsfs/w.bin", 10, 20) == data[10:20]
    fs.pipe_file("/colio-fsfs/w.bin", b"new")  # a cached source must not serve the old bytes
    assert fs.cat_file("/colio-fsfs/w.bin") == b"new"
    fs.rm("/colio-fsfs", recursive=True)


# ---- the source cache ---------------------------------------------------------------

def test_cache_is_bounded_and_reopens_replaced_files(tmp_path, data):
    fs = ColioFileSystem(target_protocol="file", max_sources=3, skip_instance_cache=True)
    paths = []
    for i in range(6):
        p = tmp_path / f"c{i}.bin"
        p.write_bytes(data[i:i + 5000])
        paths.append(str(p))
    with fs.open(paths[0], "rb") as f:  # holds its source while others evict it
        for p in paths:
            assert fs.cat_file(p, 1, 9) == _pread(p, 1, 8)
        assert len(fs._sources) <= 3
        assert f.read() == data[0:5000]
    # replaced behind the file system's back (a new inode): read anew
    tmp = tmp_path / "new.bin"
    tmp.write_bytes(b"replacement")
    os.replace(tmp, paths[5])
    assert fs.cat_file(paths[5]) == b"replacement"
    fs.close()
    assert len(fs._sources) == 0
    assert fs.cat_file(paths[1], 0, 4) == data[1:5]  # usable after close


# ---- pandas ---------------------------------------------------------------------------

def _frame():
    pd = pytest.importorskip("pandas")
    rng = random.Random(5)
    return pd.DataFrame({"a": [rng.randrange(1 << 30) for _ in range(20_000)],
                         "b": [rng.random() for _ in range(20_000)],
                         "c": [f"s{rng.randrange(999)}" for _ in range(20_000)]})


@pytest.fixture(params=["local", "memory", "http"])
def base(request, tmp_path, server):
    """(plain base URL, a function that publishes bytes under a name)."""
    if request.param == "local":
        def put(name, b):
            (tmp_path / name).write_bytes(b)
        # file://: pandas takes only "proto://" URLs to fsspec, so
        # "colio::/tmp/x" would be a local name to it
        yield f"file://{tmp_path}", put
    elif request.param == "memory":
        m = fsspec.filesystem("memory")
        yield "memory://colio-fsfs-pd", lambda name, b: m.pipe_file(f"/colio-fsfs-pd/{name}", b)
        m.rm("/colio-fsfs-pd", recursive=True)
    else:
        def put(name, b):
            server.files[f"/fsfs-pd/{name}"] = b
        yield server.url + "/fsfs-pd", put


def test_pandas_same_frames_through_colio(base, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    url, put = base
    df = _frame()
    put("x.csv", df.to_csv(index=False).encode())
    pq = tmp_path / "ref.parquet"
    df.to_parquet(pq, row_group_size=4000)
    put("x.parquet", pq.read_bytes())
    for name, read in (("x.csv", pd.read_csv), ("x.parquet", pd.read_parquet)):
        plain = read(f"{url}/{name}")
        via = read(f"colio::{url}/{name}")
        pd.testing.assert_frame_equal(via, plain)
        pd.testing.assert_frame_equal(via, df)
    sub = pd.read_parquet(f"colio::{url}/x.parquet", columns=["c", "a"])
    pd.testing.assert_frame_equal(sub, df[["c", "a"]])


def test_pandas_to_parquet_through_colio(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = _frame()
    df.to_parquet(f"colio::file://{tmp_path}/w.parquet")
    df.to_parquet(tmp_path / "plain.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "w.parquet"), df)
    df.to_parquet("colio::memory://colio-fsfs-w/w.parquet")
    got = pd.read_parquet("memory://colio-fsfs-w/w.parquet")
    pd.testing.assert_frame_equal(got, df)
    fsspec.filesystem("memory").rm("/colio-fsfs-w", recursive=True)


def test_fsspec_parquet_columns_fan_out(tmp_path):
    """open(path, columns=...) (as fsspec.parquet asks) fetches the footer
    and the chosen column chunks through this file system's cat_ranges."""
    pd = pytest.importorskip("pandas")
    pq = pytest.importorskip("pyarrow.parquet")
    df = _frame()
    p = str(tmp_path / "c.parquet")
    df.to_parquet(p, row_group_size=5000)
    fs = ColioFileSystem(target_protocol="file", skip_instance_cache=True)
    calls = []
    real = fs.cat_ranges

    def spy(paths, starts, ends, **kw):
        calls.append(len(paths))
        return real(paths, starts, ends, **kw)

    fs.cat_ranges = spy
    # max_gap=0: each row group's chunk of b is its own range; a small
    # footer sample, or the whole (small) file would be the sample
    with fs.open(p, "rb", columns=["b"], max_gap=0, footer_sample_size=65536) as f:
        got = pq.read_table(f, columns=["b"]).to_pandas()
    pd.testing.assert_frame_equal(got, df[["b"]])
    assert calls and max(calls) >= 4  # the row groups' chunks of b, in one call


# ---- small remote files are fetched whole at open ----------------------------------

@pytest.fixture
def own_server():
    """A range server of this test's own: no other test's late request
    counts in it."""
    import threading

    from conftest import RangeServer
    srv = RangeServer()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_small_remote_file_is_fetched_whole_at_open(own_server, data):
    """A remote file no larger than prefetch_max is read whole, in one
    eager fan-out started by open: pyarrow's footer-then-columns seeks cost
    no further requests. Before this, each seek restarted the read-ahead
    stream: a 3 MiB Parquet-shaped read pattern (tail, then chunks from the
    start) made 202 range requests."""
    server = own_server
    server.files["/fsfs/whole.bin"] = data
    url = server.url + "/fsfs/whole.bin"
    fs = fsspec.filesystem("colio", target_protocol="http", skip_instance_cache=True)
    server.reset()
    with fs.open(url, "rb") as f:
        rng = random.Random(5)
        f.seek(-8, 2)
        assert f.read() == data[-8:]
        for _ in range(40):
            off, n = rng.randrange(len(data)), rng.randrange(100_000)
            f.seek(off)
            assert f.read(n) == data[off:off + n]
        f.seek(0)
        assert f.read() == data
    # the default request size (8 MiB) covers 3 MiB in one GET
    assert server.range_requests + server.full_requests == 1
    assert server.bytes_served == len(data)
    # a file over prefetch_max streams as before, byte-exact
    server.reset()
    with fs.open(url, "rb", prefetch_max=1 << 20) as f:
        f.seek(12345)
        assert f.read(1 << 20) == data[12345:12345 + (1 << 20)]
    assert 0 < server.bytes_served


def test_small_remote_file_fetch_error_raises_at_read(server, data):
    """The eager fetch's error reaches the first read, as the stream's would."""
    fs = fsspec.filesystem("colio", target_protocol="http", skip_instance_cache=True)
    server.files["/fsfs/gone.bin"] = data[:5000]
    url = server.url + "/fsfs/gone.bin"
    f = fs.open(url, "rb")
    try:
        assert f.read(10) == data[:10]
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.read(1)
    server.files.pop("/fsfs/gone.bin", None)


# ---- S3 targets: writes through colio's multipart sink -----------------------------

@pytest.fixture(scope="module")
def s3w():
    pytest.importorskip("s3fs")
    from conftest import moto_s3
    ep, key, secret, client, stop = moto_s3("colio-fsfs-writer")
    client.create_bucket(Bucket="colio-fsw")
    opts = {"key": "moto", "secret": "moto", "skip_instance_cache": True,
            "client_kwargs": {"endpoint_url": ep, "region_name": "us-east-1"}}
    yield fsspec.filesystem("colio", target_protocol="s3", target_options=opts), client
    stop()


def _uploads(client):
    return client.list_multipart_uploads(Bucket="colio-fsw").get("Uploads", [])


def test_s3_writes_go_through_colio_sinks(s3w, monkeypatch):
    """open("wb"), pipe_file and put_file on an s3 target write with colio's
    S3 sink (issue 18), byte-exact as boto3 reads them back. Before, all
    three were s3fs's own writers."""
    fs, client = s3w
    made = []
    real = colio.sink

    def spy(target, mode="w", **kw):
        made.append(target)
        return real(target, mode, **kw)

    monkeypatch.setattr(colio, "sink", spy)
    rng = random.Random(11)
    blob = rng.randbytes(13 << 20)
    with fs.open("colio-fsw/opened.bin", "wb") as f:
        pos = 0
        while pos < len(blob):
            n = rng.choice([1, 777, 65536, 3 << 20, 9 << 20])
            f.write(blob[pos:pos + n])
            pos += n
        f.flush()  # must not wait for a part that is not full
    fs.pipe_file("colio-fsw/piped.bin", blob[:12345])
    local = fs.fs  # any local path: put_file reads it
    import tempfile
    with tempfile.NamedTemporaryFile() as t:
        t.write(blob[5:])
        t.flush()
        fs.put_file(t.name, "colio-fsw/put.bin")
    assert made == ["s3://colio-fsw/opened.bin", "s3://colio-fsw/piped.bin",
                    "s3://colio-fsw/put.bin"], (made, local)
    get = lambda k: client.get_object(Bucket="colio-fsw", Key=k)["Body"].read()  # noqa: E731
    assert get("opened.bin") == blob
    assert get("piped.bin") == blob[:12345]
    assert get("put.bin") == blob[5:]
    assert fs.cat_file("colio-fsw/opened.bin", 100, 200) == blob[100:200]
    assert _uploads(client) == []


def test_s3_write_with_exception_leaves_no_object(s3w):
    """An exception inside ``with fs.open(..., "wb")`` aborts the upload, as
    a colio.sink with block does: no object, no open upload (s3fs's file
    publishes what was written)."""
    fs, client = s3w
    with pytest.raises(RuntimeError, match="stop"):
        with fs.open("colio-fsw/never.bin", "wb") as f:
            f.write(b"x" * (12 << 20))
            raise RuntimeError("stop")
    assert not fs.exists("colio-fsw/never.bin")
    assert _uploads(client) == []
