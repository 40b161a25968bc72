"""Helpers for tests and benchmarks: an fsspec file system with injected
latency that counts the requests it serves and how many overlap.

    from colio.testing import LatencyFileSystem
    fs = LatencyFileSystem(latency=0.002)     # over a fresh memory fs
    fs.pipe("/data", payload)
    src = colio.from_fsspec(fs, "/data")

Importing this module imports fsspec and registers the "latency" protocol,
so ``fsspec.open("latency:///path", fs=fsspec.filesystem("file"))`` works.
"""

from __future__ import annotations

import threading
import time

from fsspec.implementations.memory import MemoryFileSystem
from fsspec.registry import register_implementation
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem


class LatencyFileSystem(AbstractFileSystem):
    """Wraps another fsspec file system (default: a private memory one) and
    sleeps ``latency`` seconds in every ``cat_file``, like an object store's
    first-byte latency. ``peak_in_flight`` is counted inside cat_file, so
    it shows how many requests really overlapped."""

    protocol = "latency"
    cachable = False

    def __init__(self, fs=None, latency: float = 0.002, **kwargs):
        super().__init__(**kwargs)
        if fs is None:
            # A private instance: MemoryFileSystem() alone is fsspec's cached
            # one (fsspec.filesystem("memory")), and a store set on it would
            # hide every memory:// file of the process from that instance.
            fs = MemoryFileSystem(skip_instance_cache=True)
            fs.store = {}
            fs.pseudo_dirs = [""]
        self.fs = fs
        self.latency = latency
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.calls = 0
            self.bytes_served = 0
            self.in_flight = 0
            self.peak_in_flight = 0
            self.threads = set()

    def cat_file(self, path, start=None, end=None, **kwargs):
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self.threads.add(threading.get_ident())
        try:
            if self.latency:
                time.sleep(self.latency)
            data = self.fs.cat_file(path, start=start, end=end, **kwargs)
        finally:
            with self._lock:
                self.in_flight -= 1
        with self._lock:
            self.bytes_served += len(data)
        return data

    def pipe_file(self, path, value, **kwargs):
        return self.fs.pipe_file(path, value, **kwargs)

    def info(self, path, **kwargs):
        return self.fs.info(path, **kwargs)

    def ls(self, path, detail=True, **kwargs):
        return self.fs.ls(path, detail=detail, **kwargs)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        if "r" not in mode:
            return self.fs._open(path, mode=mode, **kwargs)
        # Reads through a file object pay the latency too: an object store's
        # buffered file (s3fs, gcsfs) makes one ranged request per buffer fill.
        return LatencyFile(self, path, mode, block_size=block_size or "default",
                           cache_options=cache_options, **kwargs)


class LatencyFile(AbstractBufferedFile):
    """A buffered read-only file of a LatencyFileSystem: every buffer fill
    is one fs.cat_file, so it pays (and counts) the latency."""

    def _fetch_range(self, start, end):
        return self.fs.cat_file(self.path, start=start, end=end)


# "latency://path" URLs (storage options: fs=<inner file system>, latency=).
register_implementation("latency", LatencyFileSystem, clobber=True)
