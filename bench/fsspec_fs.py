"""Workload 7 of bench/run.py: colio:: URLs against the plain URLs (issue 17).

Dask ``read_parquet`` and ``read_csv`` of a directory of files on a
loopback HTTP server that waits 5 or 20 ms before each answer, the
``colio::http://...`` URL against the plain ``http://...`` one on the same
LocalCluster (2 worker processes x 2 threads), runs alternated; and a zarr
array of 1,000 chunks read whole through zarr's FsspecStore on the plain
URL, FsspecStore over ``colio::`` and ``colio.zarr.Store``.

Each Dask case is timed twice: whole (the collection built, then
computed) and compute only (the collection built outside the clock). Dask
builds a read_parquet collection on the client with one ``fs.checksum``
(an HTTP HEAD) per file, one after another, whatever the file system: at
20 ms that is a floor of files x 20 ms that colio cannot shorten, so the
compute-only row is where the file system's own speed shows.

The server is cmd/colio-testserver (Go, one per latency; ``make bench``
builds it), so that the server is neither the bottleneck nor a Python
process taking the benchmark's CPU; the request counts in the notes are
its own.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from goserver import GoServer


# ---- the server (cmd/colio-testserver) -----------------------------------------------

class Server(GoServer):
    def url(self, name=""):
        return f"{self.endpoint}/{name}"


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
    servers = {lat: Server(root, lat) for lat in lats}
    out = []
    try:
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2,
                                      dashboard_address=None, silence_logs=logging.ERROR) as cl, \
                distributed.Client(cl, timeout=120) as client:
            for lat in lats:
                server = servers[lat]
                base = server.url("tab")
                for kind, read in (("parquet", dd.read_parquet), ("csv", dd.read_csv)):
                    urls = [f"{base}/p{i}.{kind}" for i in range(nfiles)]
                    R.log(f"[7] Dask read_{kind}, {nfiles} files, {R._lat(lat)} per request")
                    counts = {}

                    def m(prefix, whole, urls=urls, read=read):
                        t0 = time.perf_counter()
                        df = read([prefix + u for u in urls])
                        if not whole:
                            t0 = time.perf_counter()
                        n = client.compute(df.map_partitions(len).sum()).result(600)
                        dt = time.perf_counter() - t0
                        assert n == nfiles * rows, (prefix, n)
                        return dt

                    for prefix in ("colio::", ""):
                        server.stats(reset=True)
                        m(prefix, True)  # warm-up: imports, connections, file systems
                        st = server.stats()
                        counts[prefix or "plain URL"] = (st["requests"], st["peak_in_flight"])
                    note = "; ".join(f"{k}: {r} requests, peak {p} in flight"
                                     for k, (r, p) in counts.items())
                    title = (f"colio:: URLs, Dask on a LocalCluster (2 x 2), loopback HTTP "
                             f"({nfiles} files)")
                    for whole, label in ((True, ""), (False, ", compute only")):
                        funcs = {"colio::": lambda w=whole: m("colio::", w),
                                 "plain URL": lambda w=whole: m("", w)}
                        s = R.interleave(funcs, rounds)
                        out.append(R.case(7, title, f"read_{kind}, {R._lat(lat)}{label}",
                                          "colio::", {"plain URL": "plain URL"}, s,
                                          nbytes=size[kind], note=note))
        lat = lats[-1]
        server = servers[lat]
        zurl = server.url("z.zarr")
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
                counts = {}
                for name, fn in funcs.items():
                    server.stats(reset=True)
                    fn()  # warm-up, and the request count
                    st = server.stats()
                    counts[name] = (st["requests"], st["peak_in_flight"])
                s = R.interleave(funcs, rounds)
            note = "; ".join(f"{k}: {r} requests, peak {p} in flight"
                             for k, (r, p) in counts.items())
            out.append(R.case(7, "colio:: URLs, zarr array of 1,000 chunks (4 KiB) read whole, "
                              f"loopback HTTP {R._lat(lat)}", f"async.concurrency={conc}",
                              "colio.zarr.Store",
                              {"FsspecStore, colio::": "FsspecStore, colio::",
                               "FsspecStore, plain URL": "FsspecStore, plain URL"},
                              s, nbytes=want.nbytes, note=note))
    finally:
        for server in servers.values():
            server.close()
    return out
