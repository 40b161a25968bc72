"""from_fsspec on LocalFileSystem and MemoryFileSystem needs no Python in
the loop (issue 15, item 4). Before the change both were callback sources
(kind "fsspec") whose every read called fs.cat_file from Python; now a
local path is colio's file source and a memory file a memory source over
the file's bytes in place. Each test here failed before on the kind or on
the poisoned cat_file."""

from __future__ import annotations

import pickle

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

import colio
from conftest import pread


def _poison(monkeypatch, cls):
    def boom(*a, **k):
        raise AssertionError("fsspec was called for a read")
    monkeypatch.setattr(cls, "cat_file", boom)
    monkeypatch.setattr(cls, "_open", boom)


def test_local_fs_is_a_file_source(monkeypatch, data_file, ref):
    fs = fsspec.filesystem("file")
    with colio.from_fsspec(fs, data_file) as s:
        _poison(monkeypatch, type(fs))
        assert s.kind == "file" and s.via == "native" and s.backend == "native"
        assert s.size == len(ref)
        ranges = [(0, 10), (12345, 70000), (len(ref) - 5, 100)]
        for p, (off, n) in zip(s.read_ranges(ranges), ranges):
            assert p == pread(data_file, off, n)
        b = bytearray(5000)
        assert s.read_into(b, 7) == 5000 and b == pread(data_file, 7, 5000)
        monkeypatch.undo()
        s2 = pickle.loads(pickle.dumps(s))  # by file system and path
        assert s2.kind == "file" and s2.read(3, 9) == pread(data_file, 3, 9)
        s2.close()
    with colio.source("file://" + data_file) as s:
        assert s.kind == "file"


def test_local_fs_errors(tmp_path):
    fs = fsspec.filesystem("file")
    with pytest.raises(FileNotFoundError):
        colio.from_fsspec(fs, str(tmp_path / "nope"))
    with pytest.raises(IsADirectoryError):
        colio.from_fsspec(fs, str(tmp_path))


def test_memory_fs_reads_the_bytes_in_place(monkeypatch, ref):
    fs = MemoryFileSystem()
    fs.pipe_file("/native/ref.bin", ref)
    with colio.from_fsspec(fs, "/native/ref.bin") as s:
        _poison(monkeypatch, MemoryFileSystem)
        assert s.kind == "memory" and s.via == "native" and s.size == len(ref)
        ranges = [(0, 10), (999, 100_000), (len(ref) - 3, 10)]
        for p, (off, n) in zip(s.read_ranges(ranges), ranges):
            assert p == ref[off:off + n]
        # In place: a same-size write into the file object is what a read sees.
        buf = fs.store["/native/ref.bin"].getbuffer()
        buf[0:4] = b"WXYZ"
        assert s.read(0, 6) == b"WXYZ" + ref[4:6]
        buf.release()
        monkeypatch.undo()
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.kind == "memory" and s2.read(4, 10) == ref[4:14]
        s2.close()
    fs.rm("/native/ref.bin")


def test_memory_url_and_missing(ref):
    fs = MemoryFileSystem()
    fs.pipe_file("/native/u.bin", ref[:1000])
    with colio.source("memory://native/u.bin") as s:
        assert s.kind == "memory" and s.read() == ref[:1000]
    with pytest.raises(FileNotFoundError):
        colio.from_fsspec(fs, "/native/nope")
    fs.rm("/native/u.bin")


def test_subclasses_and_explicit_workers_keep_fsspec(ref):
    from colio.testing import LatencyFileSystem
    fs = LatencyFileSystem(latency=0)
    fs.pipe_file("/lat.bin", ref[:5000])
    with colio.from_fsspec(fs, "/lat.bin") as s:
        assert s.kind == "fsspec" and s.read(1, 10) == ref[1:11]
    with colio.from_fsspec(fsspec.filesystem("file"), __file__, via="workers") as s:
        assert s.kind == "fsspec" and s.read(0, 10) == open(__file__, "rb").read(10)
