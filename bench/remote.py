"""Workload 6 of bench/run.py: remote reads (issue 14).

colio's native remote sources against the tools a Python user would reach
for, all in the same run, against one loopback server per latency
(cmd/colio-testserver: Go, fast enough not to be the bottleneck; HTTP and
path-style S3 from one directory, SigV4 verified, latency injected before
every answer, requests in flight counted at GET /_stats):

- colio.source(url).read_ranges over HTTP, and over S3 (s3:// with
  endpoint_url and a key the server verifies);
- fsspec's HTTP file system ``cat_ranges``; s3fs ``cat_ranges`` (endpoint_url
  to the same server);
- obstore.get_ranges with an HTTPStore and an S3Store;
- a ThreadPoolExecutor(8) over requests (a Session per thread, one GET with
  Range per range);
- KvikIO ``RemoteFile.open_http`` + ``pread`` per range, where it runs (it
  needs libcuda; its error is printed where it does not);
- the floor: bench/remotefloor, a plain Go net/http client with a
  goroutine per request (the "ideal" column), run in the same interleaved
  rounds; for the S3 rows its requests are signed with the SDK's SigV4
  signer as colio's are, so both pay the signing and the server's check of
  it, and it reads into fresh pages and frees them inside its timing, as
  the timed Python calls do.

Shapes: 1000 x 64 KiB at random slots of a 256 MiB object, and 32 x 8 MiB
(the whole object), at 0, 5 and 20 ms per request. Every method's bytes are
checked against the generator's once before it is timed; rounds are
interleaved as in the rest of bench/run.py. The server's peak in flight is
read for one more run of each method after the timed rounds (warm
connection pools: a first run's peak mostly measures dialling).

    python bench/run.py --only 6 [--quick]
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

import colio
from goserver import GoServer

KiB, MiB = 1 << 10, 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOLS = os.path.join(ROOT, "build", "bench")
BUCKET, KEY = "bench", "data.bin"
S3_KEY, S3_SECRET = "COLIOBENCHKEY", "colio-bench-secret"


class TestServer(GoServer):
    """One cmd/colio-testserver process with a fixed latency, signing S3
    with the benchmark's key."""

    def __init__(self, directory, latency):
        super().__init__(directory, latency, ("-s3-key", S3_KEY, "-s3-secret", S3_SECRET))
        self.url = f"{self.endpoint}/{BUCKET}/{KEY}"


# ---- the methods -------------------------------------------------------------------
# Each maker returns (fn, None, close) with fn(ranges) -> a list of
# bytes-likes, or (None, "why it cannot run here", close); close may be None.


def _colio_http(srv):
    src = colio.source(srv.url)
    assert src.backend == "native"
    return src.read_ranges, None, src.close


def _colio_s3(srv):
    src = colio.source(f"s3://{BUCKET}/{KEY}", key=S3_KEY, secret=S3_SECRET,
                       endpoint_url=srv.endpoint, region="us-east-1")
    assert src.backend == "native"
    return src.read_ranges, None, src.close


def _fsspec_http(srv):
    import fsspec
    fs = fsspec.filesystem("http", skip_instance_cache=True)

    def read(ranges):
        return fs.cat_ranges([srv.url] * len(ranges), [o for o, _ in ranges],
                             [o + n for o, n in ranges])
    return read, None, None


def _s3fs(srv):
    import s3fs
    fs = s3fs.S3FileSystem(key=S3_KEY, secret=S3_SECRET, skip_instance_cache=True,
                           client_kwargs={"endpoint_url": srv.endpoint,
                                          "region_name": "us-east-1"})
    path = f"{BUCKET}/{KEY}"

    def read(ranges):
        return fs.cat_ranges([path] * len(ranges), [o for o, _ in ranges],
                             [o + n for o, n in ranges])
    return read, None, None


def _obstore(store):
    import obstore

    def read(ranges):
        return obstore.get_ranges(store, KEY, starts=[o for o, _ in ranges],
                                  lengths=[n for _, n in ranges])
    return read, None, None


def _obstore_http(srv):
    from obstore.store import HTTPStore
    return _obstore(HTTPStore.from_url(f"{srv.endpoint}/{BUCKET}/",
                                       client_options={"allow_http": True}))


def _obstore_s3(srv):
    from obstore.store import S3Store
    return _obstore(S3Store(BUCKET, endpoint=srv.endpoint, access_key_id=S3_KEY,
                            secret_access_key=S3_SECRET, region="us-east-1",
                            virtual_hosted_style_request=False,
                            client_options={"allow_http": True}))


def _requests_pool(srv):
    import requests
    local = threading.local()
    pool = cf.ThreadPoolExecutor(8)

    def one(r):
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = requests.Session()
        o, n = r
        resp = s.get(srv.url, headers={"Range": f"bytes={o}-{o + n - 1}"})
        resp.raise_for_status()
        return resp.content

    def read(ranges):
        return list(pool.map(one, ranges))
    return read, None, pool.shutdown


def _kvikio(srv):
    os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")
    try:
        import kvikio
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        return None, f"import kvikio failed: {type(e).__name__}: {e}", None
    try:
        f = kvikio.RemoteFile.open_http(srv.url, nbytes=None)
        probe = np.empty(16, dtype=np.uint8)
        f.pread(probe, 16, 0).get()
    except Exception as e:  # noqa: BLE001
        return None, (f"kvikio {getattr(kvikio, '__version__', '?')} imports, but "
                      f"RemoteFile.open_http(url).pread(numpy_buffer) raised "
                      f"{type(e).__name__}: {str(e).strip()}"), None

    def read(ranges):
        bufs = [np.empty(n, dtype=np.uint8) for _, n in ranges]
        futs = [f.pread(b, n, o) for b, (o, n) in zip(bufs, ranges)]
        for fu in futs:
            fu.get()
        return bufs
    return read, None, f.close


HTTP_PEERS = {"fsspec HTTP cat_ranges": _fsspec_http,
              "obstore get_ranges (HTTPStore)": _obstore_http,
              "ThreadPoolExecutor(8) + requests": _requests_pool,
              "KvikIO RemoteFile": _kvikio}
S3_PEERS = {"s3fs cat_ranges": _s3fs, "obstore get_ranges (S3Store)": _obstore_s3}


def _make(maker, srv):
    try:
        return maker(srv)
    except ImportError as e:
        return None, f"not installed ({e}); pip install '.[bench]'", None
    except Exception as e:  # noqa: BLE001 - a peer that cannot start is reported
        return None, f"{type(e).__name__}: {e}", None


def _digest(parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(memoryview(p).cast("B") if not isinstance(p, bytes) else p)
    return h.hexdigest()


def _floor(srv, ranges, repeat, want, s3=False):
    """The Go floor's median; with s3 its requests are signed as colio's
    S3 source signs them, so the S3 rows compare like with like."""
    exe = os.path.join(TOOLS, "remotefloor")
    if not os.path.exists(exe):
        return None, f"{exe} is missing; run `make bench`"
    job = {"url": srv.url, "ranges": ranges, "repeat": repeat}
    if s3:
        job["s3"] = {"key": S3_KEY, "secret": S3_SECRET, "region": "us-east-1"}
    r = subprocess.run([exe], input=json.dumps(job), capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    out = json.loads(r.stdout)
    if out["sha256"] != want:
        return None, "the Go floor read the wrong bytes"
    return statistics.median(out["seconds"]), None


def _floor_once(srv, ranges, want, s3):
    t, err = _floor(srv, ranges, 1, want, s3=s3)
    if err:
        raise RuntimeError(f"bench: the Go floor failed: {err}")
    return t


def _lat(s):
    return "0" if s == 0 else f"{s * 1e3:g} ms"


def run(cfg, tmp, bench):
    """The workload; ``bench`` is bench/run.py (its case/interleave/log)."""
    quick = cfg.quick
    size = 32 * MiB if quick else 256 * MiB
    shapes = ([(100, 64 * KiB), (4, 8 * MiB)] if quick
              else [(1000, 64 * KiB), (32, 8 * MiB)])
    latencies = [0, 0.005] if quick else [0, 0.005, 0.020]
    rounds = 2 if quick else 5
    d = os.path.join(tmp, "remote")
    os.makedirs(os.path.join(d, BUCKET), exist_ok=True)
    data = np.random.default_rng(14).integers(0, 256, size=size, dtype=np.uint8)
    data.tofile(os.path.join(d, BUCKET, KEY))
    payload = memoryview(data).cast("B")
    rng = np.random.default_rng(15)
    out = []
    for lat in latencies:
        bench.log(f"[6] remote: server with {_lat(lat)} latency")
        srv = TestServer(d, lat)
        try:
            out += _cells(bench, srv, lat, shapes, rounds, payload, rng, size)
        finally:
            srv.close()
    return out


def _cells(bench, srv, lat, shapes, rounds, payload, rng, size):
    methods, errors, closers = {}, {}, []
    for name, maker in [("colio (HTTP)", _colio_http), ("colio (S3)", _colio_s3),
                        *HTTP_PEERS.items(), *S3_PEERS.items()]:
        # colio itself must work: its failure stops the benchmark
        fn, err, close = maker(srv) if name.startswith("colio") else _make(maker, srv)
        if fn is None:
            errors[name] = err
            bench.log(f"[6] {name}: {err}")
        else:
            methods[name] = fn
        if close is not None:
            closers.append(close)
    out = []
    try:
        for n, per in shapes:
            slots = size // per
            picks = sorted(rng.choice(slots, size=n, replace=False)) if n < slots else range(n)
            ranges = [(int(s) * per, per) for s in picks]
            want = hashlib.sha256(b"".join(payload[o:o + k] for o, k in ranges)).hexdigest()
            shape = f"{n} x {per // MiB} MiB" if per >= MiB else f"{n} x {per // KiB} KiB"
            peaks, ok = {}, {}
            for name, fn in methods.items():  # checks the bytes; warms every path up
                try:
                    got = fn(ranges)
                    if _digest(got) != want:
                        raise AssertionError("read the wrong bytes")
                    ok[name] = fn
                    del got
                except Exception as e:  # noqa: BLE001 - a failing peer is reported
                    if name.startswith("colio"):
                        raise
                    errors[name] = f"{type(e).__name__}: {str(e).strip()[:300]}"
                    bench.log(f"[6] {name} on {shape}: {errors[name]}")
            bench.log(f"[6] {shape} at {_lat(lat)}: {len(ok)} methods x {rounds} rounds")
            timed = {k: (lambda fn=fn: bench.timed(lambda: fn(ranges))) for k, fn in ok.items()}
            # The floor runs in the same rounds, so that it meets the same
            # load as colio (one process per round: a warm-up run, checked,
            # then the one timed).
            for proto in ("HTTP", "S3"):
                _, ferr = _floor(srv, ranges, 1, want, s3=proto == "S3")
                if ferr:
                    bench.log(f"[6] Go floor ({proto}): {ferr}")
                    continue
                timed[f"Go floor ({proto})"] = (
                    lambda s3=proto == "S3": _floor_once(srv, ranges, want, s3))
            s = bench.interleave(timed, rounds)
            for name, fn in ok.items():  # one more, warm, run each: what it keeps in flight
                srv.stats(reset=True)
                fn(ranges)
                peaks[name] = srv.stats()["peak_in_flight"]
            floors = {proto: statistics.median(s[f"Go floor ({proto})"]) if f"Go floor ({proto})" in s
                      else None for proto in ("HTTP", "S3")}
            title = "Remote reads: read_ranges against a loopback server, per fan-out"
            note = "server's peak in flight: " + ", ".join(f"{k} {v}" for k, v in peaks.items())
            bench.log(f"[6] {shape} at {_lat(lat)}: {note}")
            for colio_name, peers in (("colio (HTTP)", HTTP_PEERS), ("colio (S3)", S3_PEERS)):
                if colio_name not in s:
                    continue
                cols = {k: k for k in peers}
                out.append(bench.case(
                    6, title, f"{shape}, {_lat(lat)}, {colio_name[7:-1]}", colio_name, cols, s,
                    nbytes=sum(k for _, k in ranges), ideal=floors[colio_name[7:-1]],
                    errors={k: v for k, v in errors.items() if k in cols},
                    note=note if colio_name == "colio (HTTP)" else None))
    finally:
        for c in closers:
            try:
                c()
            except Exception:  # noqa: BLE001
                pass
    return out
