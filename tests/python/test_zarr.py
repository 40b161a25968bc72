"""zarr v3 reads through colio (issue 17): colio.zarr.Store and zarr's own
FsspecStore over colio:: URLs give the same arrays as the plain URLs and
the NumPy array written, over local files, memory:// and a loopback HTTP
server; sharded arrays (partial reads: byte ranges of a shard) included."""

from __future__ import annotations

import os
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

zarr = pytest.importorskip("zarr")
np = pytest.importorskip("numpy")
import fsspec  # noqa: E402

import colio._fetch  # noqa: E402
import colio.zarr  # noqa: E402


def _write(url_or_path, **kw):
    """Writes the reference arrays with zarr's own store (no colio); returns
    them by name."""
    rng = np.random.default_rng(17)
    want = {"dense": rng.integers(0, 1 << 30, size=(120, 90), dtype="i4"),
            "sharded": rng.random((64, 64))}
    g = zarr.open_group(url_or_path, mode="w", **kw)
    a = g.create_array("dense", shape=(120, 90), chunks=(10, 9), dtype="i4")
    a[:] = want["dense"]
    b = g.create_array("sharded", shape=(64, 64), chunks=(8, 8), shards=(32, 32), dtype="f8")
    b[:] = want["sharded"]
    return want


def _check(url, want, **kw):
    for name, ref in want.items():
        plain = zarr.open_array(url + "/" + name, mode="r", **kw)
        via_fsspec = zarr.open_array("colio::" + url + "/" + name, mode="r", **kw)
        store = colio.zarr.Store(url + "/" + name, read_only=True,
                                 storage_options=kw.get("storage_options"))
        via_store = zarr.open_array(store, mode="r")
        for arr in (plain, via_fsspec, via_store):
            np.testing.assert_array_equal(arr[:], ref)
            np.testing.assert_array_equal(arr[3:37, 5:29], ref[3:37, 5:29])
        assert isinstance(via_fsspec.store.fs.sync_fs, colio.fsspec.ColioFileSystem)


def test_zarr_local(tmp_path):
    want = _write(str(tmp_path / "g.zarr"))
    _check(f"file://{tmp_path}/g.zarr", want)


def test_zarr_memory():
    want = _write("memory://colio-zarr/g.zarr")
    try:
        _check("memory://colio-zarr/g.zarr", want)
    finally:
        fsspec.filesystem("memory").rm("/colio-zarr", recursive=True)


def test_zarr_http(tmp_path, server):
    root = tmp_path / "g.zarr"
    want = _write(str(root))
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                server.files["/zarr/" + os.path.relpath(p, tmp_path)] = fh.read()
    # sharded too: a shard's index is a suffix range (bytes=-N)
    _check(server.url + "/zarr/g.zarr", want)


def test_store_writes_go_to_the_target(tmp_path):
    """Writes stay FsspecStore's (through the target); reads are colio's
    and see them."""
    # the target's own option, under its name (fsspec's rule for chains)
    store = colio.zarr.Store(f"file://{tmp_path}/w.zarr",
                             storage_options={"file": {"auto_mkdir": True}})
    a = zarr.create_array(store, shape=(30,), chunks=(7,), dtype="i8")
    a[:] = np.arange(30)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "w.zarr"), mode="r")[:],
                                  np.arange(30))
    a[5:9] = -1
    got = zarr.open_array(colio.zarr.Store(f"file://{tmp_path}/w.zarr", read_only=True))[:]
    want = np.arange(30)
    want[5:9] = -1
    np.testing.assert_array_equal(got, want)


def test_store_opens_chunks_as_concurrently_as_zarr_asks(tmp_path, server):
    """Each chunk is its own object. Its opens once ran on asyncio's
    default executor, min(32, cores + 4) threads: 6 here, so a read with
    async.concurrency=32 had at most 6 requests in flight. A chunk is now
    fetched by the library (colio_fetch_urls), its open the chunk's one
    GET (prefetch), so no HEAD is made at all."""
    root = tmp_path / "c.zarr"
    rng = np.random.default_rng(3)
    want = rng.random((64, 16))
    a = zarr.create_array(str(root), shape=(64, 16), chunks=(1, 16), dtype="f8")
    a[:] = want
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                server.files["/zc/" + os.path.relpath(p, tmp_path)] = fh.read()
    server.reset()
    server.delay = server.head_delay = 0.05
    with zarr.config.set({"async.concurrency": 32}):
        got = zarr.open_array(colio.zarr.Store(server.url + "/zc/c.zarr", read_only=True),
                              mode="r")[:]
    np.testing.assert_array_equal(got, want)
    assert server.peak_heads_in_flight == 0, server.peak_heads_in_flight
    assert server.peak_in_flight >= 16, server.peak_in_flight


class _CountingHandler(BaseHTTPRequestHandler):
    """Serves server.files with single ranges (suffix ones too) and counts
    each request by method and path."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self, body_too):
        srv = self.server
        with srv.lock:
            srv.counts[(self.command, self.path)] += 1
        data = srv.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        status, body, crange = 200, data, None
        rng = self.headers.get("Range")
        if rng:
            a, _, b = rng.partition("=")[2].partition("-")
            start = max(0, len(data) - int(b)) if a == "" else int(a)
            end = len(data) - 1 if a == "" or b == "" else min(int(b), len(data) - 1)
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status, body, crange = 206, data[start:end + 1], f"bytes {start}-{end}/{len(data)}"
        self.send_response(status)
        if crange:
            self.send_header("Content-Range", crange)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"v1"')
        self.end_headers()
        if body_too:
            self.wfile.write(body)

    def do_GET(self):
        self._serve(True)

    def do_HEAD(self):
        self._serve(False)


@pytest.fixture
def counting(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _CountingHandler)
    srv.daemon_threads = True
    srv.files, srv.counts, srv.lock = {}, Counter(), threading.Lock()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    t.join(10)


def _serve_tree(srv, root, prefix):
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                srv.files[prefix + os.path.relpath(p, root).replace(os.sep, "/")] = fh.read()


def _chunk_keys(srv, prefix):
    return sorted(k for k in srv.files if k.startswith(prefix + "/c/"))


@pytest.mark.parametrize("prefetch", [None, 64])
def test_store_reads_a_chunk_in_one_request(tmp_path, counting, monkeypatch, prefetch):
    """A chunk read whole is one GET (the open's, with prefetch), as zarr's
    own FsspecStore makes: before, an open's HEAD and then the GET, two
    per chunk. With chunks larger than the prefetch (64 bytes here), the
    rest of each chunk is one more GET, and still no HEAD. Sharded arrays
    (partial reads of a shard) keep the cached sources; every array is
    compared with what zarr wrote."""
    if prefetch is not None:
        monkeypatch.setattr(colio.zarr, "PREFETCH", prefetch)
    want = _write(str(tmp_path / "g.zarr"))
    _serve_tree(counting, tmp_path / "g.zarr", "/g.zarr/")
    base = f"http://127.0.0.1:{counting.server_address[1]}/g.zarr"
    chunks = _chunk_keys(counting, "/g.zarr/dense")
    sizes = [len(counting.files[k]) for k in chunks]
    assert len(chunks) == 12 * 10 and min(sizes) > 64, (len(chunks), min(sizes))

    def read(store):
        counting.counts.clear()
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], want["dense"])
        return dict(counting.counts)

    plain = read(base + "/dense")
    ours = read(colio.zarr.Store(base + "/dense", read_only=True))
    assert not [k for k in ours if k[0] == "HEAD"], ours
    per_chunk = 1 if prefetch is None else 2
    assert {k: ours.get(("GET", k)) for k in chunks} == {k: per_chunk for k in chunks}
    if prefetch is None:
        assert sum(ours.values()) <= sum(plain.values()), (ours, plain)
        assert sum(plain[("GET", k)] for k in chunks) == len(chunks)
    counting.counts.clear()
    sharded = zarr.open_array(colio.zarr.Store(base + "/sharded", read_only=True), mode="r")
    np.testing.assert_array_equal(sharded[:], want["sharded"])
    np.testing.assert_array_equal(sharded[3:37, 5:29], want["sharded"][3:37, 5:29])


def test_store_fetches_whole_keys_in_the_library(tmp_path, server, monkeypatch):
    """A chunk read whole is fetched by the library (colio_fetch_urls):
    no Python thread opens it (the open pool is never asked), the gets of
    one loop iteration start in one call, and a chunk never written (a
    404) reads as the fill value, as through the plain URL."""
    root = tmp_path / "m.zarr"
    want = np.full((40, 8), -1.5)
    a = zarr.create_array(str(root), shape=(40, 8), chunks=(2, 8), dtype="f8", fill_value=-1.5)
    want[4:30] = np.random.default_rng(5).random((26, 8))
    a[4:30] = want[4:30]  # chunks 0, 1 and 15..19 are never written
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                server.files["/zm/" + os.path.relpath(p, tmp_path)] = fh.read()
    calls = []
    real = colio._fetch.Fetcher._start

    def start(self, loop, enc, futs):
        calls.append(len(enc))
        return real(self, loop, enc, futs)

    def no_pool():
        raise AssertionError("a whole key went to the open pool")
    monkeypatch.setattr(colio._fetch.Fetcher, "_start", start)
    monkeypatch.setattr(colio.zarr, "_open_pool", no_pool)
    url = server.url + "/zm/m.zarr"
    plain = zarr.open_array(url, mode="r")[:]
    with zarr.config.set({"async.concurrency": 64}):
        got = zarr.open_array(colio.zarr.Store(url, read_only=True), mode="r")[:]
    np.testing.assert_array_equal(plain, want)
    np.testing.assert_array_equal(got, want)
    assert calls[-1] == 20, calls  # after the metadata keys, the 20 chunks in one call
