"""colio.dask.read_bytes vs dask.bytes.read_bytes on one distributed cluster.

Both read the same files through the same fsspec file system,
``latency://`` (colio.testing.LatencyFileSystem over the local file system,
2 ms of latency per request, like an object store's first byte), on the same
LocalCluster (2 worker processes x 2 threads). Each run builds the graph
(read_bytes, which also reads the sample) and computes every block on the
workers; only each block's length comes back, so both pay the same for
results (a first, untimed run of each compares CRC32s of every block). Runs alternate
between the two; the table reports medians and the ratio.

    .venv/bin/python bench/dask_read_bytes.py            # 4 files x 32 MiB, 8 MiB blocks
    .venv/bin/python bench/dask_read_bytes.py --quick

Not a test: it prints a table.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _make_files(d, n, size):
    rng = random.Random(9)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(k))
             for k in range(1, 40)]
    for i in range(n):
        with open(os.path.join(d, f"part-{i:03d}.csv"), "wb") as f:
            written = 0
            while written < size:
                line = b",".join(rng.choice(words) for _ in range(rng.randrange(2, 12))) + b"\n"
                block = line * 64  # cheap to make, still many lines
                f.write(block)
                written += len(block)


def _crc(b):
    return len(b), zlib.crc32(b)


def _run(client, read_bytes, url, opts, kw, check=False):
    import dask
    t = time.perf_counter()
    sample, blocks = read_bytes(url, **kw, **opts)
    summary = [dask.delayed(_crc if check else len)(b) for per_file in blocks for b in per_file]
    got = [f.result(600) for f in client.compute(summary)]
    return time.perf_counter() - t, got, sample


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--file-mib", type=int, default=32)
    ap.add_argument("--blocksize", default="1 MiB,8 MiB", help="comma-separated")
    ap.add_argument("--latency-ms", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 files x 8 MiB, 3 runs")
    a = ap.parse_args(argv)
    if a.quick:
        a.files, a.file_mib, a.runs, a.blocksize = 2, 8, 3, "2 MiB"

    import dask.bytes
    import distributed
    import fsspec

    import colio
    import colio.dask
    import colio.testing  # registers latency://

    with tempfile.TemporaryDirectory(prefix="colio-dask-bench-") as d:
        _make_files(d, a.files, a.file_mib << 20)
        url = "latency://" + os.path.join(d, "*.csv")
        # options for the latency protocol go under its name (fsspec's rule)
        opts = {"fs": fsspec.filesystem("file"), "latency": {"latency": a.latency_ms / 1000}}
        total = a.files * (a.file_mib << 20)
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2,
                                      dashboard_address=None, silence_logs=logging.ERROR) as cl, \
                distributed.Client(cl, timeout=60) as client:
            print(f"# {a.files} files x {a.file_mib} MiB, blocksize {a.blocksize}, "
                  f"{a.latency_ms:g} ms per request, LocalCluster 2 processes x 2 threads, "
                  f"colio {colio.__version__} (COLIO_NTHREADS default "
                  f"{colio.get_config()['threads']} per worker)")
            print(f"{'case':<24} {'dask (s)':>9} {'colio (s)':>10} {'ratio':>7}  "
                  f"{'colio GB/s':>10}  runs dask / colio")
            cases = [(f"{bs}, {'delim' if dl else 'no delim'}", dict(delimiter=dl, blocksize=bs))
                     for bs in a.blocksize.split(",") for dl in (b"\n", None)]
            for name, kw in cases:
                kw = dict(kw, sample="10 kiB")
                # one warm-up each (imports, connections), then alternate
                _, ref, s1 = _run(client, dask.bytes.read_bytes, url, opts, kw, True)
                _, got, s2 = _run(client, colio.dask.read_bytes, url, opts, kw, True)
                assert got == ref and s1 == s2, "colio.dask and dask.bytes disagree"
                ref = [n for n, _ in ref]  # timed runs return lengths only
                td, tc = [], []
                for _ in range(a.runs):
                    t, got, _ = _run(client, dask.bytes.read_bytes, url, opts, kw)
                    assert got == ref
                    td.append(t)
                    t, got, _ = _run(client, colio.dask.read_bytes, url, opts, kw)
                    assert got == ref
                    tc.append(t)
                md, mc = statistics.median(td), statistics.median(tc)
                print(f"{name:<24} {md:>9.3f} {mc:>10.3f} {md / mc:>6.2f}x  "
                      f"{total / mc / 1e9:>10.2f}  "
                      f"{' '.join(f'{x:.2f}' for x in td)} / {' '.join(f'{x:.2f}' for x in tc)}")
            print(f"# ratio = dask time / colio time (median of {a.runs} alternating runs); "
                  "blocks byte-identical in every case (CRC32 per block)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
