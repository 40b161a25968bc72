"""Sinks: modes, eager writes at offsets and appended, flush, close,
memory and void sinks, bad inputs."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import colio


def test_write_modes(tmp_path):
    p = str(tmp_path / "out.bin")
    with colio.sink(p, "w") as k:
        assert k.write(b"hello ") == 6
        assert k.write(bytearray(b"world")) == 5
        assert k.size == 11
    assert open(p, "rb").read() == b"hello world"
    with colio.sink(p, "a") as k:  # appends after the current end
        k.write(b"!!")
    assert open(p, "rb").read() == b"hello world!!"
    with colio.sink(p, "r+") as k:  # writes into the existing file
        k.write(b"J", 6)
    assert open(p, "rb").read() == b"hello Jorld!!"
    with colio.sink(p, "w") as k:  # truncates
        k.write(b"x")
    assert open(p, "rb").read() == b"x"
    with pytest.raises(FileNotFoundError):
        colio.sink(str(tmp_path / "missing"), "r+")
    with pytest.raises(ValueError, match="mode"):
        colio.sink(p, "rw")


def test_eager_appends_land_in_call_order(tmp_path, ref):
    p = str(tmp_path / "out.bin")
    chunks = [ref[i:i + 100_000] for i in range(0, len(ref), 100_000)]
    with colio.sink(p) as k:
        futs = [k.write_async(c) for c in chunks]
        offs = [f.offset for f in futs]
        assert offs == [i * 100_000 for i in range(len(chunks))]  # reserved at call time
        assert sum(f.result(10) for f in futs) == len(ref)
    assert open(p, "rb").read() == ref


def test_write_at_offsets_any_order(tmp_path, ref):
    p = str(tmp_path / "out.bin")
    n = 64 * 1024
    pieces = list(range(0, len(ref), n))[::-1]
    with colio.sink(p) as k:
        futs = [k.write_async(memoryview(ref)[o:o + n], o) for o in pieces]
        for f, o in zip(futs, pieces):
            assert f.result(10) == min(n, len(ref) - o) and f.offset == o
        k.flush(fsync=True)
    assert open(p, "rb").read() == ref


def test_write_numpy_and_readonly(tmp_path):
    p = str(tmp_path / "out.bin")
    a = np.arange(1000, dtype=np.float32).reshape(10, 100)
    ro = np.arange(10, dtype=np.int64)
    ro.flags.writeable = False
    with colio.sink(p) as k:
        assert k.write(a) == a.nbytes  # 2-D: nbytes
        assert k.write_async(ro).result(5) == ro.nbytes  # read-only data is fine to write
        assert k.write(memoryview(b"ab").toreadonly()) == 2
        assert k.write(b"") == 0
    assert open(p, "rb").read() == a.tobytes() + ro.tobytes() + b"ab"


def test_data_kept_alive_until_written(tmp_path):
    p = str(tmp_path / "out.bin")
    with colio.sink(p) as k:
        futs = [k.write_async(bytes([i]) * 10_000) for i in range(50)]  # temporaries
        for f in futs:
            f.result(10)
    data = open(p, "rb").read()
    assert data == b"".join(bytes([i]) * 10_000 for i in range(50))


def test_sink_bad_inputs(tmp_path):
    p = str(tmp_path / "out.bin")
    k = colio.sink(p)
    with pytest.raises(TypeError):
        k.write("text is not bytes")
    with pytest.raises(TypeError):
        k.write_async(12)
    with pytest.raises(ValueError, match="negative"):
        k.write(b"x", -1)  # -1 is not a way to say "append"
    with pytest.raises(TypeError):
        k.write(b"x", 1.0)
    with pytest.raises(ValueError, match="C-contiguous"):
        k.write(np.zeros((4, 4))[:, 1])
    k.close()
    k.close()
    with pytest.raises(colio.ClosedError):
        k.write(b"x")
    with pytest.raises(colio.ClosedError):
        k.flush()
    with pytest.raises(TypeError):
        colio.sink(3.5)


def test_memory_sink_and_full():
    buf = bytearray(10)
    k = colio.sink(buf)
    assert k.write(b"abcd") == 4
    assert k.write_async(b"ef").result(5) == 2
    assert k.size == 6
    with pytest.raises(colio.NoSpaceError) as e:
        k.write(b"0123456789")
    assert isinstance(e.value, OSError)
    with pytest.raises(colio.NoSpaceError):  # write errors are sticky
        k.flush()
    with pytest.raises(colio.NoSpaceError):
        k.close()
    assert k.closed
    assert buf[:6] == b"abcdef"
    with pytest.raises(TypeError, match="read-only"):
        colio.sink(memoryview(b"immutable"))
    with pytest.raises(TypeError):
        pickle.dumps(colio.sink(bytearray(4)))


def test_void_sink():
    with colio.sink(None) as k:
        assert k.write(b"x" * 1000) == 1000
        assert k.write_async(b"y" * 10).result(5) == 10
    before = colio.stats()["bytes_written"]
    with colio.sink(None) as k:
        k.write(b"z" * 123)
    assert colio.stats()["bytes_written"] - before == 123


def test_pickled_sink_never_truncates(tmp_path):
    p = str(tmp_path / "out.bin")
    with colio.sink(p, "w") as k:
        k.write(b"0123456789")
        blob = pickle.dumps(k)
    k2 = pickle.loads(blob)
    k2.write(b"AB", 4)
    k2.close()
    assert open(p, "rb").read() == b"0123AB6789"


def test_copy_through_colio(tmp_path, data_file, ref):
    p = str(tmp_path / "copy.bin")
    with colio.source(data_file) as s, colio.sink(p) as k:
        futs = []
        for f in s.read_ranges_async([(o, 1 << 20) for o in range(0, s.size, 1 << 20)]):
            futs.append(k.write_async(f.result()))
        for f in futs:
            f.result(10)
    assert os.path.getsize(p) == len(ref)
    assert open(p, "rb").read() == ref


def test_write_offsets_of_any_integer_type_and_range(tmp_path):
    # Small writes take plain ints without index(); everything else still
    # goes through it: integer types, the int64 bound, unpickled sinks.
    p = str(tmp_path / "out.bin")
    with colio.sink(p, "w") as k:
        assert k.write_async(b"abcd", np.int64(4)).result() == 4
        assert k.write(b"wxyz", 0) == 4
        assert k.write_async(np.frombuffer(b"EF", dtype=np.uint8), 8).result() == 2
        for bad in (2 ** 63, -1):
            with pytest.raises(ValueError):
                k.write_async(b"x", bad)
            with pytest.raises(ValueError):
                k.write(b"x", bad)
        with pytest.raises(TypeError):
            k.write_async(b"x", 1.0)
        blob = pickle.dumps(k)
    assert open(p, "rb").read() == b"wxyzabcdEF"
    k2 = pickle.loads(blob)
    with pytest.raises(colio.InvalidArgumentError, match="explicit offsets"):
        k2.write(b"x")
    with pytest.raises(colio.InvalidArgumentError, match="explicit offsets"):
        k2.write_async(b"x")
    k2.close()
