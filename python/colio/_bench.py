"""The demo behind ``python -m colio bench`` (and ``make demo``).

On generated data it compares colio with what a Python user writes without
it, a plain loop of reads, and prints throughput and the speed-up:

1. a local file read in 1 MiB ranges (page cache warm, so this measures
   the CPU path: pread on colio's workers vs os.preadv in a loop);
2. an fsspec source with injected per-request latency (2 ms, an object
   store's first-byte latency), read in 1 MiB ranges: colio's fan-out vs a
   loop of fs.cat_file.
"""

from __future__ import annotations

import os
import tempfile
import time


def _best(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _row(name, nbytes, t_loop, t_colio):
    gib = 1024 ** 3
    print(f"  {name:<34} {nbytes / gib / t_loop:8.2f} GiB/s {nbytes / gib / t_colio:8.2f} GiB/s"
          f" {t_loop / t_colio:7.1f}x")


def run(size_mib: int = 256, latency: float = 0.002, quick: bool = False) -> int:
    import colio
    from colio.testing import LatencyFileSystem

    if quick:
        size_mib = min(size_mib, 16)
    size = size_mib << 20
    chunk = 1 << 20
    t_start = time.perf_counter()
    print(f"colio {colio.__version__} demo: library {colio.library_path()}")
    cfg = colio.get_config()
    print(f"  threads={cfg['threads']} task_size={cfg['task_size'] >> 20} MiB, "
          f"{os.cpu_count()} CPUs")

    with tempfile.TemporaryDirectory(prefix="colio-demo-") as tmp:
        path = os.path.join(tmp, "data.bin")
        seed = os.urandom(1 << 20)
        with open(path, "wb") as f:  # generated data: 1 MiB of random bytes, rotated
            for i in range(size_mib):
                f.write(seed[i % 997:] + seed[:i % 997])
        ranges = [(off, chunk) for off in range(0, size, chunk)]
        out = bytearray(size)
        mv = memoryview(out)

        # -- 1: local file ------------------------------------------------------
        fd = os.open(path, os.O_RDONLY)

        def loop_local():
            for off, n in ranges:
                os.preadv(fd, [mv[off:off + n]], off)

        with colio.source(path) as src:
            def colio_local():
                futs = [src.read_async(mv[off:off + n], off) for off, n in ranges]
                for f in futs:
                    f.result()

            loop_local()
            ref = bytes(out)
            out[:] = bytes(size)
            colio_local()
            assert out == ref, "colio read different bytes"
            rep = 3 if quick else 5
            t_loop = _best(loop_local, rep)
            t_colio = _best(colio_local, rep)
        os.close(fd)

        print(f"\n  {'workload (' + str(size_mib) + ' MiB, 1 MiB reads)':<34} {'Python loop':>14} "
              f"{'colio':>14} {'speed-up':>8}")
        _row("local file (page cache)", size, t_loop, t_colio)

        # -- 2: fsspec with latency ---------------------------------------------------
        lat_mib = min(size_mib, 16 if quick else 64)
        lat_size = lat_mib << 20
        fs = LatencyFileSystem(latency=latency)
        fs.pipe_file("/data.bin", ref[:lat_size])
        lat_ranges = ranges[:lat_mib]

        def loop_fsspec():
            for off, n in lat_ranges:
                data = fs.cat_file("/data.bin", start=off, end=off + n)
                mv[off:off + len(data)] = data

        with colio.from_fsspec(fs, "/data.bin") as src:
            def colio_fsspec():
                futs = [src.read_async(mv[off:off + n], off) for off, n in lat_ranges]
                for f in futs:
                    f.result()

            out[:lat_size] = bytes(lat_size)
            fs.reset()
            colio_fsspec()
            assert out[:lat_size] == ref[:lat_size], "colio read different bytes (fsspec)"
            peak = fs.peak_in_flight
            rep = 2 if quick else 3
            t_loop = _best(loop_fsspec, rep)
            t_colio = _best(colio_fsspec, rep)
        _row(f"fsspec, {latency * 1e3:g} ms latency ({lat_mib} MiB)", lat_size, t_loop, t_colio)
        print(f"\n  fsspec requests in flight at once: {peak} with colio, 1 with the loop")
    print(f"  done in {time.perf_counter() - t_start:.1f} s")
    return 0
