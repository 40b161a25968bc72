"""colio._fsspec_info: a listing through a ColioFileSystem starts the info
(HEAD) of every listed file at once, and info, checksum, size and ukey
are answered from those answers: the same values as the plain URL's file
system gives, the HEADs overlapping at the server, and dropped by
invalidation, by their lifetime and on failure. The server is the test's
own (loopback), with an HTML index, as fsspec's HTTP listing reads."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fsspec
import pytest

import colio.fsspec  # noqa: F401 - registers colio::
from colio import _fsspec_info

N = 12


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        srv = self.server
        p = self.path.split("?", 1)[0]
        if p.rstrip("/") == "/tab":
            links = "".join(f'<a href="/tab/{n}">{n}</a>\n' for n in sorted(srv.listed))
            return f"<html><body>{links}</body></html>".encode(), "text/html"
        if p.startswith("/tab/") and p[5:] in srv.files:
            return srv.files[p[5:]], "text/csv"
        return None, None

    def do_HEAD(self):
        srv = self.server
        with srv.lock:
            srv.heads += 1
            srv.per_path[self.path] = srv.per_path.get(self.path, 0) + 1
            srv.heads_in_flight += 1
            srv.peak = max(srv.peak, srv.heads_in_flight)
        try:
            time.sleep(srv.head_delay)
            body, ctype = self._body()
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", ctype)
            self.send_header("ETag", srv.etags.get(self.path, '"v1"'))
            self.end_headers()
        finally:
            with srv.lock:
                srv.heads_in_flight -= 1

    def do_GET(self):
        body, ctype = self._body()
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", ctype)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def listing():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.files = {f"p{i}.csv": b"a,b\n" + f"{i},{i * i}\n".encode() * (i + 1) for i in range(N)}
    srv.listed = set(srv.files)
    srv.etags, srv.lock = {}, threading.Lock()
    srv.heads = srv.heads_in_flight = srv.peak = 0
    srv.per_path = {}
    srv.head_delay = 0.05
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}/tab"
    yield srv
    srv.shutdown()
    srv.server_close()
    t.join(10)


def _fresh_fs():
    return fsspec.filesystem("colio", target_protocol="http", skip_instance_cache=True)


def _reset(srv):
    with srv.lock:
        srv.heads = srv.peak = 0
        srv.per_path = {}


def _settled(srv, n):
    """Waits until the server has answered n HEADs in all: a listing's
    fan-out of the other files may still be under way when the info of
    one has come back (on a loaded machine its last requests reached the
    server after a _reset and were counted against the next step)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with srv.lock:
            if srv.heads >= n and srv.heads_in_flight == 0:
                return
        time.sleep(0.005)
    raise AssertionError(f"the server answered {srv.heads} HEADs, not {n}")


def _file_heads(srv):
    with srv.lock:
        return {p: n for p, n in srv.per_path.items() if p.endswith(".csv")}


def test_a_glob_fetches_the_info_of_its_files_at_once(listing):
    plain = fsspec.filesystem("http", skip_instance_cache=True)
    want_paths = sorted(plain.glob(listing.base + "/*.csv"))
    want = {p: (plain.info(p), plain.checksum(p), plain.size(p), plain.ukey(p)) for p in want_paths}
    _reset(listing)
    fs = _fresh_fs()
    paths = sorted(fs.glob(listing.base + "/*.csv"))
    assert paths == want_paths and len(paths) == N
    got = {p: (fs.info(p), fs.checksum(p), fs.size(p), fs.ukey(p)) for p in paths}
    assert got == want
    assert set(_file_heads(listing).values()) == {1}  # one HEAD per file, from the fan-out
    assert listing.peak >= 4, listing.peak  # overlapping, not one after another


@pytest.mark.parametrize("how", ["ls", "find", "expand_path"])
def test_other_listings_start_it_too(listing, how):
    fs = _fresh_fs()
    _reset(listing)
    arg = listing.base + ("/*.csv" if how == "expand_path" else "/")
    out = getattr(fs, how)(arg)
    files = [p for p in _fsspec_info.listed_files(out)]
    assert len(files) == N, out
    for p in files:
        fs.info(p)
    heads = _file_heads(listing)
    assert len(heads) == N and set(heads.values()) == {1} and listing.peak >= 4, heads


def test_answers_are_dropped_by_invalidation_and_lifetime(listing, monkeypatch):
    fs = _fresh_fs()
    paths = fs.glob(listing.base + "/*.csv")
    p = paths[0]
    fs.info(p)
    _settled(listing, N)
    _reset(listing)
    fs.info(p)
    assert listing.heads == 0
    listing.etags["/tab/p0.csv"] = '"v2"'  # the object changed behind the file system
    fs.invalidate_cache()
    assert fs.info(p)["ETag"] == '"v2"' and listing.heads == 1
    monkeypatch.setattr(_fsspec_info, "LIFETIME", 0.0)  # answers that expire as they come
    fs.invalidate_cache()
    fs.glob(listing.base + "/*.csv")
    assert fs.info(paths[1])["ETag"] == '"v1"'  # waited for the fan-out's answer
    _settled(listing, N + 1)
    _reset(listing)
    listing.etags["/tab/p1.csv"] = '"v3"'
    assert fs.info(paths[1])["ETag"] == '"v3"'
    assert _file_heads(listing) == {"/tab/p1.csv": 1}


def test_a_failed_info_goes_to_the_target(listing):
    """A listed file whose HEAD fails is asked again, and fails as the plain
    file system's does."""
    listing.listed.add("gone.csv")
    fs = _fresh_fs()
    paths = fs.glob(listing.base + "/*.csv")
    assert listing.base + "/gone.csv" in paths
    _reset(listing)
    with pytest.raises(FileNotFoundError):
        fs.info(listing.base + "/gone.csv")
    assert listing.heads >= 1


def test_dask_read_csv_of_a_glob(listing):
    dd = pytest.importorskip("dask.dataframe")
    import dask
    want = dd.read_csv(listing.base + "/*.csv").compute().reset_index(drop=True)
    _reset(listing)
    with dask.config.set(scheduler="sync"):
        got = dd.read_csv("colio::" + listing.base + "/*.csv").compute().reset_index(drop=True)
    assert got.equals(want)
    assert listing.peak >= 4, listing.peak


def test_each_listing_asks_afresh(listing):
    """An answer is never older than the listing before the call: a second
    listing fetches every file's info again."""
    fs = _fresh_fs()
    p = fs.glob(listing.base + "/*.csv")[0]
    assert fs.info(p)["ETag"] == '"v1"'
    listing.etags["/tab/p0.csv"] = '"v2"'
    fs.glob(listing.base + "/*.csv")
    assert fs.info(p)["ETag"] == '"v2"'
