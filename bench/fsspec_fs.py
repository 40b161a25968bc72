"""Workload 7 of bench/run.py: colio:: URLs against the plain URLs (issue 17).

Dask ``read_parquet`` and ``read_csv`` of a directory of files on a
loopback HTTP server that sleeps 5 or 20 ms before each answer, the
``colio::http://...`` URL against the plain ``http://...`` one on the same
LocalCluster (2 worker processes x 2 threads), runs alternated; and a zarr
array of 1,000 chunks read whole through zarr's FsspecStore on the plain
URL, FsspecStore over ``colio::`` and ``colio.zarr.Store``.

The server runs in its own process (``python bench/fsspec_fs.py --serve
DIR``: 127.0.0.1 only, port on the first line, exits when stdin closes),
so its threads do not take the benchmark's GIL. It serves
``/lat/<microseconds>/<file>`` with Range (suffix ranges too).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- the server (its own process) -------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _lookup(self):
        parts = self.path.split("/", 3)
        if len(parts) != 4 or parts[1] != "lat":
            return None, None
        data = self.server.files.get(parts[3])
        return int(parts[2]) / 1e6, data

    def do_HEAD(self):
        _, data = self._lookup()
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        lat, data = self._lookup()
        if lat:
            time.sleep(lat)
        if data is None:
            self.send_error(404)
            return
        rng = self.headers.get("Range")
        if rng is None:
            self.send_response(200)
            body = data
        else:
            a, _, b = rng.split("=", 1)[1].partition("-")
            n = len(data)
            if a == "":
                a, b = max(0, n - int(b)), n - 1
            else:
                a, b = int(a), min(int(b) if b else n - 1, n - 1)
            body = data[a:b + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {a}-{b}/{n}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def serve(root: str) -> None:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.files = {}
    for d, _, names in os.walk(root):
        for name in names:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                srv.files[os.path.relpath(p, root)] = memoryview(f.read())
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(srv.server_address[1], flush=True)
    sys.stdin.read()
    os._exit(0)


class Server:
    def __init__(self, root):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", root],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def url(self, latency, name=""):
        return f"http://127.0.0.1:{self.port}/lat/{round(latency * 1e6)}/{name}"

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


# ---- data ---------------------------------------------------------------------------

def _make(root, nfiles, rows):
    import numpy as np
    import pandas as pd
    import zarr
    rng = np.random.default_rng(17)
    os.makedirs(os.path.join(root, "tab"))
    for i in range(nfiles):
        df = pd.DataFrame({"a": rng.integers(0, 1 << 40, rows), "b": rng.random(rows),
                           "c": rng.integers(0, 100, rows).astype(str)})
        df.to_parquet(os.path.join(root, "tab", f"p{i}.parquet"), row_group_size=rows // 4)
        df.to_csv(os.path.join(root, "tab", f"p{i}.csv"), index=False)
    z = zarr.create_array(os.path.join(root, "z.zarr"), shape=(1000, 1024), chunks=(1, 1024),
                          dtype="f4")
    want = rng.random((1000, 1024), dtype="f4")
    z[:] = want
    return want


# ---- the workload -------------------------------------------------------------------

def run(cfg, tmp, R):
    import distributed
    import dask.dataframe as dd
    import numpy as np
    import zarr

    import colio.zarr

    quick = cfg.quick
    nfiles, rows = (4, 20_000) if quick else (12, 100_000)
    rounds = 1 if quick else 3
    lats = (0.005,) if quick else (0.005, 0.020)
    root = os.path.join(tmp, "fsspec-fs")
    want = _make(root, nfiles, rows)
    size = {k: sum(os.path.getsize(os.path.join(root, "tab", f"p{i}.{k}")) for i in range(nfiles))
            for k in ("parquet", "csv")}
    server = Server(root)
    out = []
    try:
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2,
                                      dashboard_address=None, silence_logs=logging.ERROR) as cl, \
                distributed.Client(cl, timeout=120) as client:
            for lat in lats:
                base = server.url(lat, "tab")
                for kind, read in (("parquet", dd.read_parquet), ("csv", dd.read_csv)):
                    urls = [f"{base}/p{i}.{kind}" for i in range(nfiles)]
                    R.log(f"[7] Dask read_{kind}, {nfiles} files, {R._lat(lat)} per request")

                    def m(prefix, urls=urls, read=read):
                        t0 = time.perf_counter()
                        n = client.compute(read([prefix + u for u in urls])
                                           .map_partitions(len).sum()).result(600)
                        dt = time.perf_counter() - t0
                        assert n == nfiles * rows, (prefix, n)
                        return dt

                    funcs = {"colio::": lambda: m("colio::"), "plain URL": lambda: m("")}
                    R.interleave(funcs, 1)  # warm-up: imports, connections, file systems
                    s = R.interleave(funcs, rounds)
                    title = (f"colio:: URLs, Dask on a LocalCluster (2 x 2), loopback HTTP "
                             f"({nfiles} files)")
                    out.append(R.case(7, title, f"read_{kind}, {R._lat(lat)}", "colio::",
                                      {"plain URL": "plain URL"}, s, nbytes=size[kind]))
        lat = lats[-1]
        zurl = server.url(lat, "z.zarr")
        R.log(f"[7] zarr, 1000 chunks read whole, {R._lat(lat)} per request")

        def zread(store):
            t0 = time.perf_counter()
            got = zarr.open_array(store, mode="r")[:]
            dt = time.perf_counter() - t0
            assert np.array_equal(got, want)
            return dt

        funcs = {"colio.zarr.Store": lambda: zread(colio.zarr.Store(zurl, read_only=True)),
                 "FsspecStore, colio::": lambda: zread("colio::" + zurl),
                 "FsspecStore, plain URL": lambda: zread(zurl)}
        for conc in (10, 64):
            with zarr.config.set({"async.concurrency": conc}):
                R.interleave(funcs, 1)
                s = R.interleave(funcs, rounds)
            s = {k: v for k, v in s.items()}
            out.append(R.case(7, "colio:: URLs, zarr array of 1,000 chunks (4 KiB) read whole, "
                              f"loopback HTTP {R._lat(lat)}", f"async.concurrency={conc}",
                              "colio.zarr.Store",
                              {"FsspecStore, colio::": "FsspecStore, colio::",
                               "FsspecStore, plain URL": "FsspecStore, plain URL"},
                              s, nbytes=want.nbytes))
    finally:
        server.close()
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        sys.exit("usage: python bench/fsspec_fs.py --serve DIR (bench/run.py --only 7 runs "
                 "the workload)")
