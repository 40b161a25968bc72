#!/usr/bin/env python3
"""Read-ahead stream benchmarks from Python (not a test: prints ratios).

1. 4-byte reads over a 16 MiB file: colio.open vs the built-in open,
   interleaved runs, median of several.
2. A consumer that spends a fixed CPU time per MiB, reading a source with
   2 ms latency per read (colio.testing.LatencyFileSystem over a local
   file): colio.open's total time vs max(I/O time, compute time), both
   measured in the same run.

Run: .venv/bin/python bench/python_stream.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import colio  # noqa: E402

REPEAT = 5


def small_reads(path):
    def run(opener):
        t = time.perf_counter()
        with opener(path) as f:
            read = f.read
            while read(4):
                pass
        return time.perf_counter() - t

    ours, builtin = [], []
    for _ in range(REPEAT):
        ours.append(run(lambda p: colio.open(p)))
        builtin.append(run(lambda p: open(p, "rb")))
    a, b = statistics.median(ours), statistics.median(builtin)
    print(f"4-byte reads, 16 MiB: colio.open {a * 1e3:.0f} ms, open() {b * 1e3:.0f} ms, "
          f"ratio {a / b:.2f}x  (spread colio {min(ours) * 1e3:.0f}-{max(ours) * 1e3:.0f} ms)")


def decode(b, rounds):
    """Stands in for a native decoder: CPU work that releases the GIL, as
    pyarrow's and numpy's do (hashlib drops the GIL for large inputs). A
    pure-Python loop would hold the GIL and starve the read-ahead's Python
    callbacks (fsspec), which is a property of the consumer, not of colio."""
    import hashlib
    for _ in range(rounds):
        hashlib.sha256(b).digest()


def slow_consumer(path, size):
    import fsspec
    from colio.testing import LatencyFileSystem
    rounds = 3  # sha256 passes per chunk: the "decoding" cost
    chunk = 256 * 1024
    fs = LatencyFileSystem(fsspec.filesystem("file"), latency=0.002)

    def io_only():
        src = colio.from_fsspec(fs, path)
        t = time.perf_counter()
        with src.stream() as f:
            while f.read(chunk):
                pass
        el = time.perf_counter() - t
        src.close()
        return el

    block = os.urandom(chunk)

    def compute_only():
        t = time.perf_counter()
        for _ in range(size // chunk):
            decode(block, rounds)
        return time.perf_counter() - t

    def both():
        src = colio.from_fsspec(fs, path)
        t = time.perf_counter()
        with src.stream() as f:
            while True:
                b = f.read(chunk)
                if not b:
                    break
                decode(b, rounds)
        el = time.perf_counter() - t
        src.close()
        return el

    rows = [(io_only(), compute_only(), both()) for _ in range(3)]
    i, c, t = (statistics.median(x) for x in zip(*rows))
    print(f"slow consumer over 2 ms latency, {size >> 20} MiB: I/O alone {i * 1e3:.0f} ms, "
          f"compute alone {c * 1e3:.0f} ms, together {t * 1e3:.0f} ms = "
          f"{t / max(i, c):.2f}x max, {t / (i + c):.2f}x sum")


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(16 << 20))
        small_reads(path)
        slow_consumer(path, 16 << 20)


if __name__ == "__main__":
    main()
