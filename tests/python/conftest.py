"""Shared fixtures: reference data written without colio, a local HTTP
server that honours Range, and helpers."""

from __future__ import annotations

import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Run against the working tree even without an installed package.
sys.path.insert(0, os.path.join(ROOT, "python"))

import colio  # noqa: E402

SIZE = 3 * (1 << 20) + 12345  # not a multiple of anything


@pytest.fixture(scope="session")
def ref() -> bytes:
    rng = __import__("random").Random(1234)
    return rng.randbytes(SIZE)


@pytest.fixture(scope="session")
def data_file(tmp_path_factory, ref) -> str:
    p = tmp_path_factory.mktemp("data") / "ref.bin"
    with open(p, "wb") as f:  # plain Python, no colio
        f.write(ref)
    return str(p)


@pytest.fixture
def src(data_file):
    s = colio.source(data_file)
    yield s
    s.close()


def pread(path: str, offset: int, size: int) -> bytes:
    """A reference read made without colio."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, offset)
    finally:
        os.close(fd)


# ---- a local HTTP server (127.0.0.1 only) ------------------------------------

class RangeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {}
        self.delay = 0.0
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.bytes_served = 0
            self.range_requests = 0
            self.full_requests = 0
            self.in_flight = 0
            self.peak_in_flight = 0
            self.heads = 0
            self.head_delay = 0.0  # seconds before each HEAD answer
            self.heads_in_flight = 0
            self.peak_heads_in_flight = 0
            # ETags: None sends none, "strong" or "weak" one from the bytes'
            # hash; honor_if_match answers 412 to an If-Match of another.
            self.etag = None
            self.honor_if_match = True
            self.refused = 0  # 412s sent
            # Last-Modified: None sends none, "now" the answer's own time,
            # a number that POSIX time.
            self.last_modified = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _file(self):
        return self.server.files.get(self.path.split("?", 1)[0])

    def _validators(self, data):
        """Sends the ETag the server's mode asks for; False (412 sent) when
        the request's If-Match names another."""
        srv = self.server
        if srv.etag is None:
            return True
        import hashlib
        tag = '"%s"' % hashlib.sha1(data).hexdigest()[:16]
        if srv.etag == "weak":
            tag = "W/" + tag
        im = self.headers.get("If-Match")
        if im is not None and srv.honor_if_match and (srv.etag == "weak" or im != tag):
            with srv.lock:
                srv.refused += 1
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        self._etag = tag
        return True

    def send_header(self, keyword, value):
        super().send_header(keyword, value)
        if keyword == "Content-Length" and getattr(self, "_etag", None):
            super().send_header("ETag", self._etag)
            self._etag = None
            lm = self.server.last_modified
            if lm is not None:
                import email.utils
                super().send_header("Last-Modified", email.utils.formatdate(
                    time.time() if lm == "now" else lm, usegmt=True))

    def do_HEAD(self):
        srv = self.server
        with srv.lock:
            srv.heads += 1
        if srv.head_delay:
            with srv.lock:
                srv.heads_in_flight += 1
                srv.peak_heads_in_flight = max(srv.peak_heads_in_flight, srv.heads_in_flight)
            time.sleep(srv.head_delay)
            with srv.lock:
                srv.heads_in_flight -= 1
        data = self._file()
        if data is None:
            self.send_error(404)
            return
        if not self._validators(data):
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        srv = self.server
        data = self._file()
        if data is None:
            self.send_error(404)
            return
        with srv.lock:
            srv.in_flight += 1
            srv.peak_in_flight = max(srv.peak_in_flight, srv.in_flight)
        try:
            if srv.delay:
                time.sleep(srv.delay)
            if not self._validators(data):
                return
            rng = self.headers.get("Range")
            ignore = self.path.startswith("/norange/")
            if rng and not ignore:
                unit, _, spec = rng.partition("=")
                a, _, b = spec.partition("-")
                # Unsatisfiable (RFC 9110 14.1.2): a suffix of nothing, or a
                # start at or past the end, an empty file's every range among
                # them (it answered "bytes 0--1/0" for those).
                if (not data or not int(b)) if a == "" else int(a) >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if a == "":
                    start, end = max(0, len(data) - int(b)), len(data) - 1
                else:
                    start = int(a)
                    end = min(int(b) if b else len(data) - 1, len(data) - 1)
                body = data[start:end + 1]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                with srv.lock:
                    srv.range_requests += 1
            else:
                body = data
                self.send_response(200)
                with srv.lock:
                    srv.full_requests += 1
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            self.wfile.write(body)
            with srv.lock:
                srv.bytes_served += len(body)
        finally:
            with srv.lock:
                srv.in_flight -= 1


@pytest.fixture(scope="session")
def http_server(ref):
    srv = RangeServer()
    srv.files["/ref.bin"] = ref
    srv.files["/norange/ref.bin"] = ref
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def server(http_server):
    http_server.reset()
    http_server.delay = 0.0
    yield http_server
    http_server.delay = 0.0


# ---- S3 on loopback (moto), shared by the S3 tests --------------------------------

@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """No credentials anywhere botocore or the Go SDK look (environment,
    files, the instance metadata service), so only the options count."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def moto_s3(user):
    """Starts moto's S3 and IAM on 127.0.0.1 with an IAM user allowed every
    S3 action (its key signs colio's requests). Returns (endpoint, key,
    secret, boto3 client of moto's root account, stop)."""
    import json
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    ep = f"http://{host}:{port}"
    root = dict(endpoint_url=ep, aws_access_key_id="moto", aws_secret_access_key="moto",
                region_name="us-east-1")
    iam = boto3.client("iam", **root)
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    k = iam.create_access_key(UserName=user)["AccessKey"]
    return ep, k["AccessKeyId"], k["SecretAccessKey"], boto3.client("s3", **root), server.stop
