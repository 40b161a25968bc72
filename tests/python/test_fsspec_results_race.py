"""read_ranges_async on a synchronous fsspec file system collects each
range's bytes while colio's workers are still adding those of the other
ranges of the same call. Found by bench/run.py (200 x 64 KiB, 500 us
latency): iterating the shared dict raised "dictionary changed size during
iteration" in Future.result()."""

import os

import colio
from colio.testing import LatencyFileSystem


def test_results_while_other_ranges_land():
    fs = LatencyFileSystem(latency=0.0002)
    payload = os.urandom(200 * 8192)
    fs.pipe_file("/data", payload)
    ranges = [(i * 8192, 8192) for i in range(200)]
    with colio.from_fsspec(fs, "/data") as src:
        for _ in range(10):
            got = [bytes(f.result()) for f in src.read_ranges_async(ranges)]
            assert got == [payload[o:o + n] for o, n in ranges]
