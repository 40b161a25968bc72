"""Workload 9 of bench/run.py: eager parallel writes to S3 (issue 18).

1 GiB (128 MiB with --quick) written as 228 chunks to one object on a
loopback S3 server (cmd/colio-testserver: Go, multipart uploads stored as
files; moto would be the bottleneck) with 0, 5 and 20 ms before every
answer. Methods:

- colio: ``colio.sink("s3://...")``, every chunk ``write_async`` at once,
  then ``close()`` (parts uploaded as they fill, many in flight);
- s3fs: ``fs.open(path, "wb")`` writing the chunks in turn, and
  ``fs.pipe(path, data)`` of the whole buffer;
- obstore: ``obstore.put(store, path, data, use_multipart=True)``;
- boto3: ``upload_fileobj`` with its transfer manager (default
  TransferConfig).

Each method's object is checked once (a SHA-256 of the stored file against
the generator's bytes) before it is timed. The ideal for colio is
ceil(parts / parts in flight) x latency + the bytes' transfer time. The
transfer is measured in the same rounds: a second server with no latency
runs beside the one with latency, and colio's write to it is one more
method of the interleave, so a change of the machine's speed between runs
(the page cache's writeback, other work) moves both alike. The servers keep
their files in /dev/shm where it has room, so that the disk is not what is
measured. The notes name the server's request count and peak requests in
flight for one write of each method.

    python bench/run.py --only 9 [--quick]
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import shutil
import tempfile

import numpy as np
from goserver import GoServer

MiB, GiB = 1 << 20, 1 << 30
BUCKET = "bench"
NCHUNKS = 228
CRED = {"key": "bench", "secret": "bench"}  # the server checks no signature


Server = GoServer


# ---- methods: maker(endpoint) -> fn(key, data, chunks) --------------------------------

def _colio(ep):
    import colio

    def write(key, data, chunks):
        with colio.sink(f"s3://{BUCKET}/{key}", endpoint_url=ep, region="us-east-1", **CRED) as k:
            for c in chunks:
                k.write_async(c)
    return write


def _s3fs_fs(ep):
    import s3fs
    fs = s3fs.S3FileSystem(key=CRED["key"], secret=CRED["secret"], skip_instance_cache=True,
                           client_kwargs={"endpoint_url": ep, "region_name": "us-east-1"})
    return fs


def _s3fs_open(ep):
    fs = _s3fs_fs(ep)

    def write(key, data, chunks):
        with fs.open(f"{BUCKET}/{key}", "wb") as f:
            for c in chunks:
                f.write(c)
    return write


def _s3fs_pipe(ep):
    fs = _s3fs_fs(ep)
    return lambda key, data, chunks: fs.pipe(f"{BUCKET}/{key}", data)


def _obstore(ep):
    import obstore
    from obstore.store import S3Store
    store = S3Store(BUCKET, endpoint=ep, region="us-east-1", access_key_id=CRED["key"],
                    secret_access_key=CRED["secret"], client_options={"allow_http": True},
                    virtual_hosted_style_request=False)
    return lambda key, data, chunks: obstore.put(store, key, data, use_multipart=True)


def _boto3(ep):
    import boto3
    client = boto3.client("s3", endpoint_url=ep, aws_access_key_id=CRED["key"],
                          aws_secret_access_key=CRED["secret"], region_name="us-east-1")
    return lambda key, data, chunks: client.upload_fileobj(io.BytesIO(data), BUCKET, key)


METHODS = {"colio.sink write_async": _colio, "s3fs open('wb')": _s3fs_open,
           "s3fs pipe": _s3fs_pipe, "obstore.put (multipart)": _obstore,
           "boto3 upload_fileobj": _boto3}


def run(cfg, tmp, bench):
    quick = cfg.quick
    size = (128 * MiB) if quick else GiB
    data = np.random.default_rng(18).integers(0, 256, size, dtype=np.uint8).tobytes()
    want = hashlib.sha256(data).hexdigest()
    edges = [size * i // NCHUNKS for i in range(NCHUNKS + 1)]
    mv = memoryview(data)
    chunks = [mv[a:b] for a, b in zip(edges, edges[1:])]
    rounds = 2 if quick else 3
    latencies = [0, 0.020] if quick else [0, 0.005, 0.020]
    d = tempfile.mkdtemp(prefix="colio-bench-s3write-", dir=_server_root(tmp, size))
    os.makedirs(os.path.join(d, BUCKET), exist_ok=True)
    bench.log(f"[9] S3 writes: {size / MiB:.0f} MiB as {NCHUNKS} chunks")
    part = int(os.environ.get("COLIO_S3_PART_SIZE") or 8 * MiB)
    inflight = max(1, min(int(os.environ.get("COLIO_REMOTE_MAX_IN_FLIGHT") or 256),
                          int(os.environ.get("COLIO_S3_BUFFER_SIZE") or 512 * MiB) // part))
    parts = math.ceil(size / part)
    out = []
    try:
        for lat in latencies:
            out.append(_at_latency(bench, d, lat, data, chunks, want, size, rounds, parts, inflight))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out


def _server_root(tmp, size):
    """/dev/shm when it can hold a few copies of the object (parts, the
    assembled object, a second method's), else the benchmark's tmp."""
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize > 4 * size:
            return "/dev/shm"
    except OSError:
        pass
    return tmp


def _at_latency(bench, d, lat, data, chunks, want, size, rounds, parts, inflight):
    COL, REF = "colio.sink write_async", "colio, 0 ms server (transfer)"
    srv = Server(d, lat)
    ref = Server(d, 0) if lat else None
    try:
        fns, errors, notes = {}, {}, []
        for name, maker in METHODS.items():
            try:
                fn = maker(srv.endpoint)
                key = "check-" + name.split()[0]
                srv.stats(reset=True)
                fn(key, data, chunks)
                st = srv.stats()
                path = os.path.join(d, BUCKET, key)
                with open(path, "rb") as f:
                    got = hashlib.file_digest(f, "sha256").hexdigest()
                os.unlink(path)
                if got != want:
                    raise AssertionError("the stored object differs from the bytes written")
                notes.append(f"{name} {st['requests']} requests, peak {st['peak_in_flight']}")
                fns[name] = fn
            except Exception as e:  # noqa: BLE001 - a failing peer is reported
                if name.startswith("colio"):
                    raise
                errors[name] = f"{type(e).__name__}: {str(e).strip()[:300]}"
                bench.log(f"[9] {name}: {errors[name]}")

        def timed(name, fn):
            def one():
                key = "timed-" + name.split()[0]
                t = bench.timed(lambda: fn(key, data, chunks))
                try:
                    os.unlink(os.path.join(d, BUCKET, key))
                except FileNotFoundError:
                    pass
                return t
            return one
        methods = {k: timed(k, fn) for k, fn in fns.items()}
        if ref is not None:
            methods[REF] = timed(REF, _colio(ref.endpoint))
        bench.log(f"[9] {lat * 1e3:g} ms: {len(methods)} methods x {rounds} rounds")
        s = bench.interleave(methods, rounds)
        ideal, note = None, "; ".join(notes)
        if ref is not None:
            transfer = s.pop(REF)
            med = sorted(transfer)[len(transfer) // 2]
            ideal = math.ceil(parts / inflight) * lat + med
            note += (f"; ideal = ceil({parts} parts / {inflight} in flight) x latency + "
                     f"{med * 1e3:.0f} ms transfer (colio to a 0 ms server, in the same "
                     f"rounds: {', '.join(f'{t * 1e3:.0f}' for t in transfer)} ms)")
        bench.log(f"[9] {lat * 1e3:g} ms: {note}")
        peers = {k: k for k in fns if k != COL}
        return bench.case(9, f"S3 writes: {size // MiB} MiB as {NCHUNKS} chunks",
                          f"{lat * 1e3:g} ms per request", COL, peers, s, nbytes=size,
                          ideal=ideal, errors=errors, note=note)
    finally:
        srv.close()
        if ref is not None:
            ref.close()
