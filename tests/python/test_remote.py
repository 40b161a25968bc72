"""Native remote sources (issue 14) from Python: http/https/s3 URLs read by
the engine, against servers this file starts on 127.0.0.1 and stops.

- the option translation from s3fs/fsspec spellings to the C keys, and
  the backend rule (native when every option is understood, fsspec
  otherwise, either forced);
- moto's ThreadedMotoServer for S3: signed reads with credentials, a wrong
  secret, a missing key and bucket, anonymous reads of a public bucket,
  ranges byte-exact against boto3's get_object(Range=...);
- a fault-injecting HTTP server: each fault ends in its documented outcome
  (docs/remote.md) within its timeout, under a generous hang watchdog;
- repr and messages without secrets, pickling by URL and options, and a
  device read reaching the device entry point with the remote handle.

Before this change every http/https/s3 URL went to fsspec: src.backend did
not exist, backend= was handed to fsspec as a storage option, a server
that accepts and never answers blocked colio.source() forever, and
colio_source_open_url was not declared.
"""

from __future__ import annotations

import collections
import ctypes
import errno
import pickle
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import colio
from colio import _lib, _remote

WATCHDOG = 60.0  # a hang guard, not a timing assertion
DATA = random.Random(14).randbytes((1 << 20) + 4321)  # the reference: the generator's bytes
RANGES = [(0, 1), (7, 4096), (65536, 65536), (len(DATA) - 100, 100), (len(DATA) - 10, 100),
          (123_457, 300_001)]


def within(fn, seconds=WATCHDOG):
    """fn() on a thread; its result or exception, or a failure if it is
    still running after ``seconds`` (the hang colio must not have)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"still running after {seconds:.0f} s (a hang)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def want(off, n):
    return DATA[off:off + n]


# ---- option translation and the backend rule (no server) ------------------------

def test_s3fs_spellings_translate_to_the_contract_keys():
    pairs = _remote.translate("s3://b/k", {
        "key": "AKIA", "secret": "shh", "token": "tok", "anon": False, "profile": "dev",
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9", "region_name": "eu-west-1"},
        "requester_pays": True, "config_kwargs": {"s3": {"addressing_style": "path"}},
        "max_in_flight": 64, "request_size": 1 << 20, "retries": 2, "size": 10,
        "connect_timeout": 1.5, "first_byte_timeout": 3, "idle_timeout": 4,
        "request_timeout": 60, "ca_bundle": "/etc/ssl/x.pem", "endpoint_url": None})
    assert pairs == [
        ("key", "AKIA"), ("secret", "shh"), ("token", "tok"), ("profile", "dev"),
        ("endpoint_url", "http://127.0.0.1:9"), ("region", "eu-west-1"),
        ("requester_pays", "1"), ("path_style", "1"), ("max_in_flight", "64"),
        ("request_size", str(1 << 20)), ("retries", "2"), ("size", "10"),
        ("connect_timeout", "1.5"), ("first_byte_timeout", "3"), ("idle_timeout", "4"),
        ("request_timeout", "60"), ("ca_bundle", "/etc/ssl/x.pem")]
    assert _remote.translate("s3://b/k", {"anon": True}) == [("anon", "1")]
    assert _remote.translate("https://h/x", {"headers": {"Authorization": "Bearer t"}}) == [
        ("header.Authorization", "Bearer t")]


@pytest.mark.parametrize("url,opts,name", [
    ("s3://b/k", {"use_ssl": False}, "use_ssl"),
    ("s3://b/k", {"client_kwargs": {"verify": False}}, "client_kwargs['verify']"),
    ("s3://b/k", {"config_kwargs": {"retries": {}}}, "config_kwargs"),
    ("s3://b/k", {"headers": {"X": "y"}}, "headers"),
    ("https://h/x", {"anon": True}, "anon"),
    ("https://h/x", {"key": "k"}, "key"),
    ("https://h/x", {"block_size": 0}, "block_size"),
    ("gs://b/k", {}, "url"),
])
def test_options_it_does_not_understand(url, opts, name):
    with pytest.raises(_remote.NotUnderstood) as ei:
        _remote.translate(url, opts)
    assert ei.value.name == name


@pytest.mark.parametrize("opts,name", [
    ({"max_in_flight": 0}, "max_in_flight"), ({"retries": "3"}, "retries"),
    ({"size": -1}, "size"), ({"idle_timeout": 0}, "idle_timeout"),
    ({"connect_timeout": True}, "connect_timeout"), ({"anon": "maybe"}, "anon"),
    ({"secret": "a\nb"}, "secret"), ({"region": 5}, "region"),
    ({"config_kwargs": {"s3": {"addressing_style": "odd"}}}, "addressing_style"),
])
def test_bad_values_raise_naming_the_option(opts, name):
    with pytest.raises(colio.InvalidArgumentError, match=name) as ei:
        _remote.translate("s3://b/k", opts)
    assert "a\nb" not in str(ei.value)


def test_bad_header_values_are_refused():
    for h in ({"Bad Name": "x"}, {"X": "a\r\nInjected: 1"}, {"X": 3}):
        with pytest.raises(colio.InvalidArgumentError, match="header"):
            _remote.translate("http://h/x", {"headers": h})


def test_redaction():
    assert _remote.redact_url("https://u:pw@h/p?X-Amz-Signature=abc&a=1#f") == \
        "https://***@h/p?X-Amz-Signature=***&a=***#f"
    assert _remote.redact_url("s3://b/k") == "s3://b/k"
    assert _remote.redacted({"key": "AK", "secret": "s", "token": None,
                             "headers": {"Authorization": "t"}}) == {
        "key": "***", "secret": "***", "token": None, "headers": {"Authorization": "***"}}


def test_backend_argument_is_checked(http_server):
    for call in (lambda: colio.source(http_server.url + "/ref.bin", backend="go"),
                 lambda: colio.open(http_server.url + "/ref.bin", backend="nope")):
        with pytest.raises(colio.InvalidArgumentError, match="backend"):
            call()
    with pytest.raises(colio.InvalidArgumentError, match="native"):
        colio.source("memory://x", backend="native")


# ---- a fault-injecting HTTP server -----------------------------------------------

AUTH = "Bearer colio-test-s3cr3t-token"


class FaultServer(ThreadingHTTPServer):
    """Serves DATA at /<mode>/<tag>/data.bin; the mode says what goes
    wrong, the tag keeps each test's counts apart. Counts requests by path
    and method, and the peak of GETs in flight."""

    daemon_threads = True
    request_queue_size = 512

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _FaultHandler)
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.in_flight = self.peak = 0
        self.delay = 0.0

    def url(self, mode, tag="t"):
        return f"http://127.0.0.1:{self.server_address[1]}/{mode}/{tag}/data.bin"

    def count(self, mode, tag="t", method="GET"):
        with self.lock:
            return self.counts[(f"/{mode}/{tag}/data.bin", method)]


class _FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _empty(self, code, **headers):
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _serve(self):
        srv, path = self.server, self.path.split("?", 1)[0]
        parts = path.split("/")
        mode = parts[1] if len(parts) == 4 and parts[3] == "data.bin" else "missing"
        with srv.lock:
            n_any = sum(v for (p, _), v in srv.counts.items() if p == path)
            n_get = srv.counts[(path, "GET")]
            srv.counts[(path, self.command)] += 1
        if mode == "missing":
            return self._empty(404)
        if mode == "auth" and self.headers.get("Authorization") != AUTH:
            return self._empty(403)
        if mode == "503x2" and n_any < 2:
            return self._empty(503, Retry_After="0")
        etag = '"v2"' if mode == "etag" and self.command == "GET" else '"v1"'
        match = self.headers.get("If-Match")
        if match is not None and match != etag:
            return self._empty(412)
        if self.command == "HEAD":
            self.send_response(200)
            if mode != "nolength":
                self.send_header("Content-Length", str(len(DATA)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag)
            self.end_headers()
            return
        with srv.lock:
            srv.in_flight += 1
            srv.peak = max(srv.peak, srv.in_flight)
        try:
            if srv.delay:
                time.sleep(srv.delay)
            self._body(mode, n_get, etag)
        finally:
            with srv.lock:
                srv.in_flight -= 1

    def _body(self, mode, n_get, etag):
        rng = self.headers.get("Range", "")
        if not rng.startswith("bytes=") or mode == "norange":
            self.send_response(200)
            self.send_header("Content-Length", str(len(DATA)))
            self.send_header("ETag", etag)
            self.end_headers()
            self.wfile.write(DATA)
            return
        a, _, b = rng[6:].partition("-")
        start = int(a)
        end = min(int(b) if b else len(DATA) - 1, len(DATA) - 1)
        if start >= len(DATA):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(DATA)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = DATA[start:end + 1]
        self.send_response(206)
        shown = (start + 1, end + 1) if mode == "badcr" else (start, end)
        total = "*" if mode == "nolength" else len(DATA)
        self.send_header("Content-Range", f"bytes {shown[0]}-{shown[1]}/{total}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.end_headers()
        if mode == "dropall" or (mode == "drop1" and n_get == 0):
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "trickle":  # one byte every 3 s: slower than idle_timeout=1
            for i in range(min(len(body), 10)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(3)
            self.close_connection = True
            return
        self.wfile.write(body)

    def do_GET(self):
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    do_HEAD = do_GET


@pytest.fixture(scope="module")
def faults():
    srv = FaultServer()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    t.join(10)


@pytest.fixture(scope="module")
def silent():
    """A server that accepts connections and never answers."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    held, stop = [], threading.Event()

    def accept():
        ls.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(ls.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{ls.getsockname()[1]}/data.bin"
    stop.set()
    t.join(10)
    for c in held:
        c.close()
    ls.close()


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_http_native_reads_are_byte_exact(faults):
    with within(lambda: colio.source(faults.url("ok", "exact"))) as src:
        assert src.backend == "native" and src.kind == "http"
        assert src.size == len(DATA)
        assert src.read(3, 1000) == want(3, 1000)
        b = bytearray(5000)
        assert src.read_into(b, 11) == 5000 and b == want(11, 5000)
        assert src.read_async(b, 13).result(WATCHDOG) == 5000 and b == want(13, 5000)
        for got, (off, n) in zip(src.read_ranges(RANGES), RANGES):
            assert got == want(off, n)
        assert src.read(len(DATA) - 10, 100) == DATA[-10:]  # the bytes that exist
        assert src.read(len(DATA), 10) == b""
        assert src.read() == DATA
    assert faults.count("ok", "exact", "GET") >= len(RANGES)


def test_large_range_splits_into_parallel_requests(faults):
    """request_size splits a read; the server counts the requests and how
    many it had in flight at once."""
    faults.delay = 0.05
    try:
        with colio.source(faults.url("ok", "split"), request_size=64 << 10) as src:
            with faults.lock:
                faults.peak = 0
            assert within(lambda: src.read(0, len(DATA))) == DATA
    finally:
        faults.delay = 0.0
    assert faults.count("ok", "split") >= len(DATA) // (64 << 10)
    assert faults.peak >= 2


def test_open_reads_natively(faults):
    with colio.open(faults.url("ok", "open")) as f:
        assert f.read() == DATA
    with colio.open(faults.url("ok", "open2"), size=len(DATA)) as f:  # size= skips the HEAD
        assert f.read() == DATA
    assert faults.count("ok", "open2", "HEAD") == 0
    with colio.open(faults.url("ok", "open3"), size=1000) as f:  # a wrong one is found out
        with pytest.raises(colio.ColioIOError, match="changed since open"):
            f.read()


def test_open_streams_an_object_of_unknown_size_as_fsspec_does(faults):
    """No length anywhere (HEAD without Content-Length, Content-Range
    totals '*'): a random-access source cannot have it, but colio.open
    reads it as a stream through fsspec, as fsspec.open does."""
    url = faults.url("nolength")
    with pytest.raises(colio.ColioIOError) as ei:
        colio.source(url)
    assert ei.value.errno == errno.EPROTO
    with pytest.raises(colio.ColioIOError):
        colio.open(url, backend="native")
    with colio.open(url) as f:
        assert f.read() == DATA


def test_fsspec_when_an_option_is_not_understood(faults):
    url = faults.url("ok", "route")
    with colio.source(url, block_size=1 << 20) as src:  # fsspec's HTTP option
        assert src.backend == "fsspec" and src.read(5, 10) == want(5, 10)
    with colio.source(url, backend="fsspec") as src:
        assert src.backend == "fsspec" and src.read(5, 10) == want(5, 10)
    with colio.source(url, backend="native") as src:
        assert src.backend == "native" and src.read(5, 10) == want(5, 10)
    with pytest.raises(colio.InvalidArgumentError, match="block_size") as ei:
        colio.source(url, backend="native", block_size=1 << 20)
    assert "fsspec" in str(ei.value)
    with colio.open(url, backend="fsspec", block_size=1 << 16) as f:
        assert f.read(10) == DATA[:10]


def test_503_twice_then_ok_is_retried(faults):
    with within(lambda: colio.source(faults.url("503x2"))) as src:
        assert within(lambda: src.read(100, 5000)) == want(100, 5000)


def test_dropped_mid_body_is_retried(faults):
    with colio.source(faults.url("drop1")) as src:
        assert within(lambda: src.read(0, 100_000)) == want(0, 100_000)
    assert faults.count("drop1") == 2


def test_dropped_every_time_fails_after_the_retries(faults):
    with colio.source(faults.url("dropall"), retries=3) as src:
        with pytest.raises(colio.ColioError) as ei:
            within(lambda: src.read(0, 100_000))
    assert isinstance(ei.value, OSError)
    assert faults.url("dropall") in str(ei.value)
    assert faults.count("dropall") == 3


def test_server_ignoring_range_is_an_error(faults):
    with colio.source(faults.url("norange"), retries=1) as src:
        buf = bytearray(b"\xee" * 1000)
        with pytest.raises(colio.ColioIOError):
            within(lambda: src.read_into(buf, 10))
        with pytest.raises(colio.ColioIOError):
            within(lambda: src.read_async(bytearray(100), 10).result(WATCHDOG))


def test_wrong_content_range_is_an_error(faults):
    with colio.source(faults.url("badcr"), retries=1) as src:
        with pytest.raises(colio.ColioIOError) as ei:
            within(lambda: src.read(10, 1000))
    assert faults.url("badcr") in str(ei.value)


def test_changed_etag_is_an_error(faults):
    with colio.source(faults.url("etag"), retries=1) as src:
        with pytest.raises(colio.ColioIOError, match="changed since open"):
            within(lambda: src.read(10, 1000))


def test_trickle_slower_than_idle_timeout_times_out(faults):
    with colio.source(faults.url("trickle"), idle_timeout=1, retries=1) as src:
        with pytest.raises(colio.ColioError) as ei:
            within(lambda: src.read(0, 1000))
    assert isinstance(ei.value, TimeoutError), repr(ei.value)


def test_silent_server_times_out_at_open_and_read(silent):
    """Before: colio.source() on such a server blocked indefinitely."""
    with pytest.raises(colio.ColioError) as ei:
        within(lambda: colio.source(silent, first_byte_timeout=1, retries=1))
    assert isinstance(ei.value, TimeoutError), repr(ei.value)

    def open_and_read():
        with colio.source(silent, size=1000, first_byte_timeout=1, retries=1) as src:
            return src.read(0, 100)
    with pytest.raises(colio.ColioError) as ei:
        within(open_and_read)
    assert isinstance(ei.value, TimeoutError), repr(ei.value)


def test_missing_and_forbidden(faults):
    url = faults.url("missing", "x").replace("/missing/x/data.bin", "/nothing.bin")
    with pytest.raises(colio.NotFoundError) as ei:
        within(lambda: colio.source(url))
    assert isinstance(ei.value, FileNotFoundError) and url in str(ei.value)
    assert "404" in str(ei.value)
    with pytest.raises(colio.ColioError) as ei:
        within(lambda: colio.source(faults.url("auth")))
    assert isinstance(ei.value, PermissionError) and "403" in str(ei.value)


def test_refused_connection_fails_fast_as_a_connection_error():
    url = f"http://127.0.0.1:{closed_port()}/x.bin"
    with pytest.raises(colio.ColioError) as ei:
        within(lambda: colio.source(url, retries=1))
    assert isinstance(ei.value, ConnectionError), repr(ei.value)
    assert ei.value.errno == errno.ECONNREFUSED and url in str(ei.value)


def test_headers_reach_the_server_and_stay_secret(faults):
    url = faults.url("auth", "hdr")
    with colio.source(url, headers={"Authorization": AUTH}) as src:
        assert src.read(0, 100) == DATA[:100]
        shown = repr(src) + str(src.storage_options)
    assert AUTH not in shown and "colio-test-s3cr3t" not in shown
    assert "Authorization" in shown
    with pytest.raises(colio.ColioError) as ei:
        colio.source(url, headers={"Authorization": "Bearer wrong-s3cr3t"})
    assert "wrong-s3cr3t" not in str(ei.value)


def test_password_and_query_are_not_shown(faults):
    url = faults.url("ok", "pw").replace("://", "://user:pa55word@") + "?X-Amz-Signature=deadbeef"
    with colio.source(url) as src:
        assert src.read(0, 10) == DATA[:10]
        shown = repr(src) + src.name + src.url
    assert "pa55word" not in shown and "deadbeef" not in shown


def test_pickles_by_url_and_options(faults):
    url = faults.url("ok", "pickle")
    with colio.source(url, headers={"X-Colio": "1"}, retries=2) as src:
        fn, args = src.__reduce__()
        assert args == (url, {"headers": {"X-Colio": "1"}, "retries": 2})
        back = pickle.loads(pickle.dumps(src))
    with back:
        assert back.backend == "native" and back.read(77, 1000) == want(77, 1000)


class FakeDevArray:
    """A device array as CuPy presents one (see test_device.py)."""

    def __init__(self, ptr=0x7F0000002000, n=64):
        self.cai = {"version": 3, "shape": (n,), "typestr": "|u1", "data": (ptr, False),
                    "strides": None, "stream": 1}

    @property
    def __cuda_array_interface__(self):
        return self.cai


def test_device_reads_take_the_device_entry_point(faults, monkeypatch):
    """A remote source is an ordinary source to the device path: the CPU
    build refuses the array clearly, and the call reaches
    colio_read_device_async_stream with the remote handle, pointer, size,
    offset and stream."""
    with colio.source(faults.url("ok", "dev")) as src:
        with pytest.raises(colio.NotSupportedError, match="CPU build"):
            src.read_async(FakeDevArray(), 5)
        L = _lib.load()
        calls = []

        def fake(h, ptr, size, off, stream, out):
            calls.append((h, ptr, size, off, stream))
            return _lib.ENOTSUP
        monkeypatch.setattr(L, "colio_read_device_async_stream", fake)
        with pytest.raises(colio.NotSupportedError):
            src.read_async(FakeDevArray(), 5)
        assert calls == [(src._handle, 0x7F0000002000, 64, 5, _lib.STREAM_LEGACY)]


# ---- S3 against moto ---------------------------------------------------------------

BUCKET, PUBLIC, OBJ = "colio-private", "colio-public", "data.bin"


@pytest.fixture(scope="module")
def moto():
    """moto's S3 (and IAM, for a user whose key signs requests) on
    127.0.0.1; IAM authentication is switched on by the `signed` fixture."""
    import boto3
    from moto import settings

    from conftest import moto_s3

    ep, key, secret, s3, stop = moto_s3("colio-reader")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=OBJ, Body=DATA)
    s3.create_bucket(Bucket=PUBLIC)
    s3.put_object(Bucket=PUBLIC, Key=OBJ, Body=DATA, ACL="public-read")
    ref = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key,
                       aws_secret_access_key=secret, region_name="us-east-1")
    yield {"endpoint": ep, "key": key, "secret": secret, "boto3": ref, "settings": settings}
    stop()


@pytest.fixture
def signed(moto, monkeypatch):
    """moto checks every request's SigV4 signature against its IAM keys."""
    from moto.core.authorization import ActionAuthenticatorMixin
    monkeypatch.setattr(moto["settings"], "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    monkeypatch.setattr(ActionAuthenticatorMixin, "request_count", 0)
    return moto


def _s3(m, **extra):
    opts = {"key": m["key"], "secret": m["secret"],
            "client_kwargs": {"endpoint_url": m["endpoint"], "region_name": "us-east-1"}}
    opts.update(extra)
    return opts


def test_s3_signed_ranges_match_boto3(signed, no_aws):
    with within(lambda: colio.source(f"s3://{BUCKET}/{OBJ}", **_s3(signed))) as src:
        assert src.backend == "native" and src.kind == "s3" and src.size == len(DATA)
        got = src.read_ranges(RANGES)
    for g, (off, n) in zip(got, RANGES):
        end = min(off + n, len(DATA)) - 1
        body = signed["boto3"].get_object(Bucket=BUCKET, Key=OBJ,
                                          Range=f"bytes={off}-{end}")["Body"].read()
        assert g == body == want(off, n)


def test_s3_endpoint_url_spelling_and_open(signed, no_aws):
    opts = {"key": signed["key"], "secret": signed["secret"], "endpoint_url": signed["endpoint"],
            "region": "us-east-1"}
    with colio.open(f"s3://{BUCKET}/{OBJ}", **opts) as f:
        assert f.read() == DATA


def test_s3_wrong_secret_is_a_permission_error(signed, no_aws):
    bad = "colio-wrong-secret-0123456789"
    with pytest.raises(colio.ColioError) as ei:
        within(lambda: colio.source(f"s3://{BUCKET}/{OBJ}", **_s3(signed, secret=bad)))
    e = ei.value
    assert isinstance(e, PermissionError), repr(e)
    msg = str(e)
    assert bad not in msg and signed["secret"] not in msg
    assert "403" in msg and f"s3://{BUCKET}/{OBJ}" in msg


@pytest.mark.parametrize("url,code", [(f"s3://{BUCKET}/missing.bin", "NoSuchKey"),
                                      (f"s3://colio-no-such-bucket/{OBJ}", "NoSuchBucket")])
def test_s3_missing_key_and_bucket(signed, no_aws, url, code):
    with pytest.raises(colio.NotFoundError) as ei:
        within(lambda: colio.source(url, **_s3(signed)))
    assert isinstance(ei.value, FileNotFoundError) and url in str(ei.value)
    assert "404" in str(ei.value) or code in str(ei.value)


def test_s3_anonymous_reads_of_a_public_bucket(moto, no_aws):
    # moto answers unsigned requests only with its IAM checks off (it fails
    # them with a 500 otherwise); the object's ACL still decides.
    ep = {"endpoint_url": moto["endpoint"]}
    with colio.source(f"s3://{PUBLIC}/{OBJ}", anon=True, client_kwargs=ep) as src:
        assert src.backend == "native"
        for g, (off, n) in zip(src.read_ranges(RANGES), RANGES):
            assert g == want(off, n)
    with pytest.raises(colio.ColioError) as ei:
        colio.source(f"s3://{BUCKET}/{OBJ}", anon=True, client_kwargs=ep)
    assert isinstance(ei.value, PermissionError), repr(ei.value)


def test_s3_repr_and_pickle_keep_secrets_out_of_sight(signed, no_aws):
    url = f"s3://{BUCKET}/{OBJ}"
    with colio.source(url, **_s3(signed)) as src:
        shown = repr(src) + str(src.storage_options)
        assert signed["secret"] not in shown and "***" in shown and url in shown
        back = pickle.loads(pickle.dumps(src))
    with back:
        assert back.read(1000, 5000) == want(1000, 5000)
        assert signed["secret"] not in repr(back)


def test_header_declares_open_url():
    fn = _lib.FUNCTIONS["colio_source_open_url"]
    assert fn == (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                 ctypes.POINTER(_lib.handle_p)])


def test_fsspec_instance_options_do_not_leave_the_native_source(server, ref):
    """skip_instance_cache and fsspec's other instance-cache options say how
    a file system object is cached, not how bytes travel: a colio::
    target's options carry them, and before they sent every such URL to
    the fsspec backend (and made backend="native" raise)."""
    server.files["/inst.bin"] = ref[:5000]
    url = server.url + "/inst.bin"
    for kw in ({"skip_instance_cache": True}, {"use_listings_cache": False},
               {"listings_expiry_time": 10, "asynchronous": False}):
        with colio.source(url, **kw) as src:
            assert src.backend == "native", kw
            assert bytes(src.read(10, 100)) == ref[10:110]
        with colio.source(url, backend="native", **kw) as src:
            assert bytes(src.read(0, 5000)) == ref[:5000]
    server.files.pop("/inst.bin", None)
