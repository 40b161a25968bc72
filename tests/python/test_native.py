"""colio._native (capi/pyfast.c): the small calls as builtin functions of
the loaded library. Every case runs with the builtins and with them turned
off (the ctypes paths), and both must give the bytes, results and errors
that a reference made without colio gives."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

import colio
from colio import _fastcall

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(params=["native", "ctypes"])
def path_kind(request, monkeypatch):
    if request.param == "native":
        if _fastcall.native() is None:
            pytest.fail("colio._native did not load on this CPython")
    else:
        _fastcall.native()
        monkeypatch.setattr(_fastcall, "N", None)
    return request.param


def test_native_loads_from_the_library():
    m = _fastcall.native()
    assert m is not None
    assert os.path.realpath(m.__file__) == os.path.realpath(colio._lib.load().path)
    assert {"read_into", "read", "write", "read_ranges"} <= set(dir(m))


def test_native_off_by_environment():
    code = ("import sys, colio, colio._fastcall as f; colio.source(sys.executable).close(); "
            "print(f.native())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "COLIO_NATIVE": "0"}, cwd=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"


def test_read_into_bytes(path_kind, data_file, ref):
    s = colio.source(data_file)
    rng = random.Random(7)
    for n in (1, 7, 4096, 65536, 1 << 20):
        for _ in range(20):
            o = rng.randrange(0, len(ref))
            for buf in (bytearray(n), np.zeros(n, np.uint8), memoryview(bytearray(n))):
                got = s.read_into(buf, o)
                want = ref[o:o + n]
                assert got == len(want)
                assert bytes(memoryview(buf)[:got]) == want
    assert s.read_into(bytearray(10), len(ref)) == 0  # at the end
    s.close()


def test_read_and_read_async_bytes(path_kind, data_file, ref):
    s = colio.source(data_file)
    rng = random.Random(8)
    for n in (1, 100, 4096, 65536):
        for _ in range(20):
            o = rng.randrange(0, len(ref))
            assert s.read(o, n) == ref[o:o + n]
            buf = bytearray(n)
            f = s.read_async(buf, o)
            assert f.done() and f.result() == len(ref[o:o + n])
            assert bytes(buf[:f.result()]) == ref[o:o + n]
    s.close()


def test_memory_source(path_kind, ref):
    s = colio.from_buffer(ref)
    buf = bytearray(4096)
    assert s.read_into(buf, 1000) == 4096 and bytes(buf) == ref[1000:5096]
    assert s.read(len(ref) - 10, 100) == ref[-10:]
    s.close()


def test_errors_match(path_kind, data_file, ref):
    s = colio.source(data_file)
    with pytest.raises(ValueError, match="past the end"):
        s.read_into(bytearray(10), len(ref) + 1)
    with pytest.raises(ValueError, match="past the end"):
        s.read(len(ref) + 5, 10)
    with pytest.raises((ValueError, OverflowError)):
        s.read_into(bytearray(10), -1)
    with pytest.raises(TypeError):
        s.read_into(b"read-only", 0)
    with pytest.raises((TypeError, ValueError, BufferError)):
        s.read_into(np.zeros((8, 8), np.uint8)[:, ::2], 0)  # not contiguous
    with pytest.raises(ValueError, match="past the end"):  # an argument error: at the call
        s.read_async(bytearray(10), len(ref) + 1)
    s.close()
    with pytest.raises(colio.ClosedError):
        s.read_into(bytearray(10), 0)
    with pytest.raises(colio.ClosedError):
        s.read(0, 10)


def test_read_ranges_bytes(path_kind, data_file, ref):
    s = colio.source(data_file)
    rng = random.Random(9)
    for count in (1, 2, 17, 1000):
        ranges = [(rng.randrange(0, len(ref)), rng.choice((0, 1, 100, 4096, 65536)))
                  for _ in range(count)]
        ranges.append((len(ref) - 3, 4096))  # short at the end
        got = s.read_ranges(ranges)
        assert [bytes(m) for m in got] == [ref[o:o + n] for o, n in ranges]
        assert all(m.readonly for m in got)
    # shapes the builtin leaves to the Python path: numpy ints, a large range
    rs = [(np.int64(5), np.int64(10)), (100, 1 << 20)]
    assert [bytes(m) for m in s.read_ranges(rs)] == [ref[5:15], ref[100:100 + (1 << 20)]]
    with pytest.raises(ValueError, match="range 1"):
        s.read_ranges([(0, 10), (-1, 10)])
    with pytest.raises(TypeError):
        s.read_ranges([(0, 10), (1.5, 10)])
    with pytest.raises(ValueError, match="past the end"):
        s.read_ranges([(0, 10), (len(ref) + 1, 10)])
    s.close()


def test_writes_bytes(path_kind, tmp_path):
    p = tmp_path / "w.bin"
    rng = np.random.default_rng(10)
    chunks = [rng.integers(0, 256, int(n), dtype=np.uint8) for n in rng.integers(1, 9000, 300)]
    with colio.sink(str(p), "w") as snk:
        futs = [snk.write_async(c) for c in chunks[:150]]
        for f, c in zip(futs, chunks):
            assert f.result() == c.nbytes
        assert [f.offset for f in futs] == list(np.cumsum([0] + [c.nbytes for c in chunks[:149]]))
        for c in chunks[150:]:
            assert snk.write(bytes(c)) == c.nbytes
        end = sum(c.nbytes for c in chunks)
        assert snk.write(memoryview(b"tail"), end) == 4
        f = snk.write_async(bytearray(b"at 3"), 3)
        assert f.result() == 4 and f.offset == 3
    want = bytearray(np.concatenate(chunks).tobytes() + b"tail")
    want[3:7] = b"at 3"
    assert p.read_bytes() == bytes(want)


def test_write_errors(path_kind, tmp_path):
    snk = colio.sink(str(tmp_path / "e.bin"), "w")
    with pytest.raises(TypeError):
        snk.write(12345)
    with pytest.raises(TypeError):
        snk.write_async("text")
    with pytest.raises((ValueError, OverflowError)):
        snk.write(b"x", -5)
    snk.close()
    with pytest.raises(colio.ClosedError):
        snk.write(b"x")
    with pytest.raises(colio.ClosedError):
        snk.write_async(b"x")


def test_memory_sink_full(path_kind):
    buf = bytearray(8)
    snk = colio.sink(buf)
    assert snk.write(b"12345678", 0) == 8
    f = snk.write_async(b"9", 8)
    with pytest.raises(OSError, match="does not fit"):
        f.result()
    with pytest.raises(OSError, match="does not fit"):  # sticky: close says so too
        snk.close()


def test_edges(path_kind, data_file, ref):
    s = colio.source(data_file)
    assert [bytes(m) for m in s.read_ranges([(0, 0), (5, 0)])] == [b"", b""]
    assert s.read_ranges([]) == []
    with pytest.raises((ValueError, OverflowError)):
        s.read_into(bytearray(8), 1 << 63)  # not an int64
    with pytest.raises(ValueError, match="past the end"):
        s.read_into(bytearray(8), 1 << 62)
    assert s.read_into(bytearray(0), 0) == 0
    buf = bytearray(16)
    assert s.read_into(memoryview(buf)[4:12], 100) == 8 and bytes(buf[4:12]) == ref[100:108]
    assert bytes(buf[:4]) == bytes(4) and bytes(buf[12:]) == bytes(4)  # nothing outside the view
    s.close()
