"""Workload 2's Python callable rows (issue 15, item 2): colio.from_callable
against ThreadPoolExecutor(8) running the same function.

The function is the shape of any Python data source: it sleeps a latency
(the GIL released, as a network wait would) and copies the range's bytes
into the buffer it is given. colio: ``from_callable(read_into, size,
concurrent=True)`` and one ``read_async`` per range into preallocated
buffers, then every result; the peer: ``ThreadPoolExecutor(8).map`` of the
same function over the same buffers. Shapes 20 x 2 MiB at 0, 0.5 and 2 ms
and 200 x 64 KiB at 0 and 0.5 ms. The bytes of both are checked against
the payload once before timing; rounds are interleaved as in the rest of
bench/run.py.

The ideal is ceil(n / python_workers) x latency plus one serial copy of
every range (the floor of any method: the copy holds the GIL).
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import os
import statistics
import time

import colio

KiB, MiB = 1 << 10, 1 << 20
SHAPES = [((20, 2 * MiB), (0, 0.0005, 0.002)), ((200, 64 * KiB), (0, 0.0005))]


def _read_into(payload, lat):
    mv = memoryview(payload)

    def read_into(buf, off):
        if lat:
            time.sleep(lat)
        n = len(buf)
        buf[:] = mv[off:off + n]
        return n
    return read_into


def rows(cfg, R):
    """The cases, for bench/run.py's workload 2 (R: that module)."""
    workers = colio.get_config()["python_workers"]
    rounds = cfg.fanout_rounds
    out = []
    pool = cf.ThreadPoolExecutor(8)
    try:
        for (n, size), lats in SHAPES:
            payload = os.urandom(n * size)
            ranges = [(i * size, size) for i in range(n)]
            bufs = [bytearray(size) for _ in range(n)]
            shape = f"{n} x {R._size(size)}"
            title = (f"Python callable fan-out, {shape} (from_callable vs ThreadPoolExecutor(8), "
                     f"python_workers={workers})")
            for lat in lats:
                R.log(f"[2] callable fan-out {shape}, latency {R._lat(lat)}")
                fn = _read_into(payload, lat)
                src = colio.from_callable(fn, len(payload), concurrent=True)

                def m_colio(src=src):
                    futs = [src.read_async(b, o) for b, (o, _) in zip(bufs, ranges)]
                    for f in futs:
                        f.result()

                def m_pool(fn=fn):
                    list(pool.map(fn, bufs, [o for o, _ in ranges]))

                funcs = {"colio from_callable": m_colio, "ThreadPoolExecutor(8)": m_pool}
                for name, f in funcs.items():  # checks the bytes; warms both up
                    for b in bufs:
                        b[:] = bytes(size)
                    f()
                    assert all(b == payload[o:o + k] for b, (o, k) in zip(bufs, ranges)), name
                s = R.interleave({k: (lambda f=f: R.timed(f)) for k, f in funcs.items()}, rounds)
                mv = memoryview(payload)

                def copy_all():
                    for b, (o, k) in zip(bufs, ranges):
                        b[:] = mv[o:o + k]
                copy_t = min(R.timed(copy_all) for _ in range(5))  # the floor
                ideal = math.ceil(n / workers) * lat + copy_t
                out.append(R.case(2, title, f"{R._lat(lat)}, callable", "colio from_callable",
                                  {"ThreadPoolExecutor(8)": "ThreadPoolExecutor(8)"}, s,
                                  nbytes=n * size, ideal=ideal,
                                  note=f"ideal: ceil({n}/{workers}) x latency + one serial copy "
                                       f"({copy_t * 1e3:.2f} ms)"))
                src.close()
    finally:
        pool.shutdown()
    return out


def main() -> None:
    """These rows alone, as workload 2 makes them (``python
    bench/callable_fanout.py [rounds]``): pool time / colio time as the
    median of the per-round ratios, and colio against the ideal."""
    import sys
    import run as R  # bench/run.py, beside this file
    cfg = R.Config(quick=False)
    if len(sys.argv) > 1:
        cfg.fanout_rounds = int(sys.argv[1])
    for row in rows(cfg, R):
        s = row["samples"]
        c, p = s["colio from_callable"], s["ThreadPoolExecutor(8)"]
        ratio = statistics.median(b / a for a, b in zip(c, p))
        print(f"{row['title'].split(', ')[1].split(' (')[0]:>14}  {row['case']:<18} "
              f"colio {statistics.median(c) * 1e3:7.2f} ms  pool {statistics.median(p) * 1e3:7.2f} ms  "
              f"pool/colio {ratio:4.2f}  colio/ideal {statistics.median(c) / row['ideal']:4.2f}",
              flush=True)


if __name__ == "__main__":
    main()
