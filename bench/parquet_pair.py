"""colio.parquet.read_table against polars.read_parquet alone, two methods
alternating in one process (workload 8 interleaves every peer, which
slows some of them): the benchmark's file on the loopback test server.

    python bench/parquet_pair.py [--latency 0.02] [--all] [--rounds 15] [--dir /tmp/pqbench]

The file (about 200 MB, 20 row groups x 30 columns) is written once into
--dir and reused. Prints each method's median and its rounds in ms, then
polars / colio (above 1 colio is faster). colio's rounds after the first
find the object's footer kept (colio/_parquet_footers.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import parquet as P  # noqa: E402  bench/parquet.py


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.02, help="seconds before each answer")
    ap.add_argument("--all", action="store_true", help="all 30 columns (default: 3 of 30)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--dir", default="/tmp/pqbench", help="where the file is kept")
    a = ap.parse_args(argv)
    import colio.parquet
    import polars as pl
    os.makedirs(os.path.join(a.dir, P.BUCKET), exist_ok=True)
    path = os.path.join(a.dir, P.BUCKET, P.KEY)
    if not os.path.exists(path):
        P.write_file(path, False)
    cols = None if a.all else P.THREE
    srv = P.Server(a.dir, a.latency)
    try:
        fns = {"colio.parquet.read_table": lambda: colio.parquet.read_table(srv.url, columns=cols),
               "polars.read_parquet": lambda: pl.read_parquet(srv.url, columns=cols).to_arrow()}
        ts = {k: [] for k in fns}
        for _ in range(a.rounds):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f()
                ts[k].append(time.perf_counter() - t0)
    finally:
        srv.close()
    med = {k: statistics.median(v[1:] or v) for k, v in ts.items()}  # the first is imports
    for k, v in ts.items():
        print(f"{k:26s} {med[k] * 1e3:7.1f} ms  rounds: {' '.join(f'{x * 1e3:.0f}' for x in v)}")
    print(f"polars / colio: {med['polars.read_parquet'] / med['colio.parquet.read_table']:.2f} "
          f"({'all 30' if a.all else '3 of 30'} columns, {a.latency * 1e3:g} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
