"""fsspec's HTTP file system against a local server that honours Range."""

from __future__ import annotations

import time

import pytest
from conftest import SIZE

import colio

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")


@pytest.fixture
def httpfs():
    return fsspec.filesystem("http", skip_instance_cache=True)


RANGES = [(0, 1), (5, 4096), (SIZE - 100, 100), (SIZE - 10, 100), (1 << 20, 2 << 20)]


@pytest.mark.parametrize("via", ["loop", "workers"])
def test_http_every_call_byte_exact(server, httpfs, ref, via):
    url = server.url + "/ref.bin"
    with colio.from_fsspec(httpfs, url, via=via) as s:
        assert s.size == SIZE
        server.reset()
        assert s.read(3, 1000) == ref[3:1003]
        assert server.bytes_served == 1000 and server.range_requests == 1
        assert server.full_requests == 0
        b = bytearray(5000)
        assert s.read_into(b, 11) == 5000 and b == ref[11:5011]
        assert s.read_async(b, 13).result(10) == 5000 and b == ref[13:5013]
        server.reset()
        parts = s.read_ranges(RANGES)
        for p, (off, n) in zip(parts, RANGES):
            assert p == ref[off:off + n]
        # the server sent exactly the bytes asked for, all with 206
        assert server.bytes_served == sum(min(n, SIZE - off) for off, n in RANGES)
        assert server.full_requests == 0
        assert s.read() == ref


def test_http_url_source(server, ref):
    with colio.source(server.url + "/ref.bin", backend="fsspec") as s:
        assert s.via == "loop" and s.backend == "fsspec"
        assert s.read(100, 200) == ref[100:300]


def test_http_server_ignoring_range_is_an_error(server, httpfs):
    url = server.url + "/norange/ref.bin"
    for via in ("loop", "workers"):
        with colio.from_fsspec(httpfs, url, via=via) as s:
            with pytest.raises(colio.ColioIOError, match="ignore Range"):
                s.read(10, 100)
            with pytest.raises(OSError, match="ignore Range"):
                s.read_async(bytearray(100), 10).result(10)


def test_http_missing(server, httpfs):
    with pytest.raises(FileNotFoundError):
        colio.from_fsspec(httpfs, server.url + "/missing.bin")


def test_async_http_more_in_flight_than_threads(server, httpfs, ref):
    threads = colio.get_config()["threads"]
    server.delay = 0.05
    n = 48
    ranges = [(i * 20000, 20000) for i in range(n)]
    with colio.from_fsspec(httpfs, server.url + "/ref.bin") as s:
        server.reset()
        t0 = time.perf_counter()
        futs = s.read_ranges_async(ranges)
        assert all(isinstance(f, colio.Future) for f in futs)
        parts = [f.result(30) for f in futs]
        dt = time.perf_counter() - t0
    for p, (off, k) in zip(parts, ranges):
        assert p == ref[off:off + k]
    # Counted by the server: more requests at once than colio has threads,
    # so they cannot have been one blocking call per worker.
    assert server.peak_in_flight > threads, (server.peak_in_flight, threads)
    print(f"async HTTP: {n} ranges, peak in flight {server.peak_in_flight} "
          f"(threads={threads}), {dt * 1e3:.0f} ms")


def test_async_max_in_flight_is_honoured(server, httpfs):
    server.delay = 0.02
    with colio.from_fsspec(httpfs, server.url + "/ref.bin", max_in_flight=3) as s:
        server.reset()
        s.read_ranges([(i * 1000, 1000) for i in range(12)])
    assert server.peak_in_flight <= 3


def test_async_large_range_is_split(server, httpfs, ref):
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=256 << 10)
    try:
        with colio.from_fsspec(httpfs, server.url + "/ref.bin") as s:
            server.reset()
            assert s.read_async(bytearray(SIZE), 0).result(30) == SIZE
            assert server.range_requests == -(-SIZE // (256 << 10))
            assert s.read() == ref
    finally:
        colio.set_config(task_size=old)


def test_async_closed_and_bad(server, httpfs):
    s = colio.from_fsspec(httpfs, server.url + "/ref.bin")
    with pytest.raises(ValueError, match="past the end"):
        s.read_async(bytearray(4), SIZE + 1)
    s.close()
    with pytest.raises(colio.ClosedError):
        s.read_ranges_async([(0, 1)])


@pytest.mark.parametrize("how", ["native", "loop", "workers"])
def test_http_empty_object(server, httpfs, how):
    # An empty object's ranges are unsatisfiable: the server answers 416
    # (it sent "bytes 0--1/0" before, which no client can parse).
    import http.client

    server.files["/empty.bin"] = b""
    try:
        c = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        c.request("GET", "/empty.bin", headers={"Range": "bytes=0-9"})
        r = c.getresponse()
        r.read()
        assert r.status == 416 and r.getheader("Content-Range") == "bytes */0"
        c.close()
        url = server.url + "/empty.bin"
        if how == "native":
            s = colio.source(url)
        else:
            s = colio.from_fsspec(httpfs, url, via=how)
        with s:
            assert s.size == 0
            assert s.read(0, 10) == b""
            assert [bytes(p) for p in s.read_ranges([(0, 10), (0, 0)])] == [b"", b""]
        with colio.open(url) as f:
            assert f.read() == b""
        assert httpfs.cat_file(url) == b""
    finally:
        del server.files["/empty.bin"]
