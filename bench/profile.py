#!/usr/bin/env python3
"""Runs one benchmark scenario in a loop for a few seconds, for a profiler to
watch. BENCHMARKS.md's analysis of the cases where colio is not ahead comes
from these, e.g.

    perf record -e cpu-clock -g -o /tmp/w.data -- .venv/bin/python bench/profile.py write-colio
    perf report -i /tmp/w.data --no-children --sort dso,sym --stdio | head -40

(cpu-clock: this VM has no hardware counters; `perf stat -e instructions true`
says <not supported>.) Scenarios: write-colio, write-serial, write-threads
(228 x ~1.07 MB to a local file), read4k-into, read4k-async, read4k-preadv,
fanout0-colio, fanout0-cat (20 x 2 MiB, fsspec memory fs, no latency),
fanout500-colio, fanout500-threads (the same with 500 us latency), fanout0small-colio,
fanout0small-cat (200 x 64 KiB, no latency), large-colio-N,
large-c-N (a warm 256 MiB read, N threads: colio and the C pread loop).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

# numpy's OpenBLAS threads would spin beside the measurements; nothing here needs them.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import colio  # noqa: E402


def main():
    what = sys.argv[1]
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    tmp = tempfile.mkdtemp(prefix="colio-prof-")
    path = os.path.join(tmp, "f.bin")
    n = 0
    if what.startswith("write"):
        per, count = 243_000_000 // 228, 228
        data = np.random.default_rng(3).integers(0, 256, size=per * count, dtype=np.uint8)
        chunks = [data[i * per:(i + 1) * per] for i in range(count)]
        pool = cf.ThreadPoolExecutor(8)

        def once():
            if os.path.exists(path):
                os.unlink(path)
            if what == "write-colio":
                s = colio.sink(path, "w")
                for f in [s.write_async(c) for c in chunks]:
                    f.result()
                s.close()
                return
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            if what == "write-serial":
                for i, c in enumerate(chunks):
                    os.pwrite(fd, c, i * per)
            else:
                for f in [pool.submit(os.pwrite, fd, c, i * per) for i, c in enumerate(chunks)]:
                    f.result()
            os.close(fd)
    elif what.startswith("read4k"):
        with open(path, "wb") as f:
            f.write(os.urandom(64 << 20))
        src = colio.source(path)
        fd = os.open(path, os.O_RDONLY)
        buf = bytearray(4096)
        offs = [int(x) * 4096 for x in np.random.default_rng(5).integers(0, 16000, size=1000)]

        def once():
            if what == "read4k-into":
                for o in offs:
                    src.read_into(buf, o)
            elif what == "read4k-async":
                for o in offs:
                    src.read_async(buf, o).result()
            else:
                for o in offs:
                    os.preadv(fd, [buf], o)
    elif what.startswith("fanout"):
        from colio.testing import LatencyFileSystem
        lat = 0.0005 if what.startswith("fanout500") else 0.0
        fs = LatencyFileSystem(latency=lat)
        payload = os.urandom(41 << 20)
        fs.pipe_file("/data", payload)
        ranges = ([(i * (64 << 10), 64 << 10) for i in range(200)] if "small" in what
                  else [(i * (2 << 20), 2 << 20) for i in range(20)])
        src = colio.from_fsspec(fs, "/data")
        pool = cf.ThreadPoolExecutor(8)

        def once():
            if what.endswith("colio"):
                [f.result() for f in src.read_ranges_async(ranges)]
            elif what.endswith("threads"):
                list(pool.map(lambda r: fs.cat_file("/data", start=r[0], end=r[0] + r[1]),
                              ranges))
            else:
                fs.cat_ranges(["/data"] * len(ranges), [o for o, _ in ranges],
                              [o + k for o, k in ranges])
    elif what.startswith("large"):
        import ctypes
        size = 256 << 20
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        dest = np.zeros(size, dtype=np.uint8)
        threads = int(what.rsplit("-", 1)[1])
        colio.set_config(threads=threads)
        src = colio.source(path)
        lib = ctypes.CDLL(os.path.join(os.path.dirname(HERE), "build", "bench",
                                       "libpread_loop.so"))
        lib.pread_loop_run.restype = ctypes.c_double
        lib.pread_loop_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
                                       ctypes.c_int, ctypes.c_int64]
        fd = os.open(path, os.O_RDONLY)

        def once():
            if what.startswith("large-colio"):
                src.read_into(dest)
            else:
                lib.pread_loop_run(fd, dest.ctypes.data, size, threads, 4 << 20)
    else:
        sys.exit(f"unknown scenario {what!r}")
    once()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < secs:
        once()
        n += 1
    el = time.perf_counter() - t0
    print(f"{what}: {n} runs, {el / n * 1e3:.3f} ms per run")
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
