"""Device arrays (__cuda_array_interface__) without a GPU: the interface is
parsed with fake objects, the CPU build refuses device arrays clearly, the
arguments reach the C entry points as parsed, and the CUDA build is chosen
only as DESIGN.md says. The device path itself is tested by gpu/ (Go, fake
device) and on a GPU machine by tests/gpu/run.sh."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

import colio
from colio import _device, _lib


class FakeDevArray:
    """A device array as CuPy, PyTorch and Numba present one: a class-level
    __cuda_array_interface__ property."""

    def __init__(self, **cai):
        self.cai = {"version": 3, "shape": (16,), "typestr": "|u1", "data": (0x7F0000001000, False),
                    "strides": None, "stream": 1}
        self.cai.update(cai)
        for k in [k for k, v in cai.items() if v is _DROP]:
            del self.cai[k]

    @property
    def __cuda_array_interface__(self):
        return self.cai


_DROP = object()


class CPUTensorLike:
    """Like a PyTorch CPU tensor: the class has the property, which raises."""

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor")


# ---- parsing --------------------------------------------------------------

@pytest.mark.parametrize("shape,typestr,nbytes", [
    ((16,), "|u1", 16), ((3, 4), "<f4", 48), ((2, 3, 5), "<f8", 240), ((), "<i2", 2),
    ((0,), "<f4", 0), ((7, 0, 3), "<c16", 0), ((5,), ">u8", 40), ((4,), "|b1", 4),
])
def test_size_from_shape_and_typestr(shape, typestr, nbytes):
    d = _device.parse(FakeDevArray(shape=shape, typestr=typestr))
    assert d.nbytes == nbytes and d.shape == shape and d.typestr == typestr
    assert d.ptr == 0x7F0000001000 and d.readonly is False


@pytest.mark.parametrize("cai,stream", [
    ({"stream": 1}, _lib.STREAM_LEGACY),
    ({"stream": 2}, _lib.STREAM_PER_THREAD),
    ({"stream": None}, _lib.STREAM_NONE),
    ({"stream": 0x55AA1234}, 0x55AA1234),
    ({"stream": _DROP}, _lib.STREAM_LEGACY),            # v3 without a stream
    ({"version": 2, "stream": _DROP}, _lib.STREAM_LEGACY),
    ({"version": 2, "stream": None}, _lib.STREAM_LEGACY),  # no stream before v3
    ({"version": 1, "stream": _DROP}, _lib.STREAM_LEGACY),
])
def test_stream(cai, stream):
    assert _device.parse(FakeDevArray(**cai)).stream == stream


def test_stream_zero_and_garbage_refused():
    with pytest.raises(colio.InvalidArgumentError, match="disallows"):
        _device.parse(FakeDevArray(stream=0))
    for bad in (-1, "1", 1.0, True):
        with pytest.raises(colio.InvalidArgumentError, match="stream"):
            _device.parse(FakeDevArray(stream=bad))


def test_strides_contiguous_only():
    # Explicit C-contiguous strides, and any stride on a dimension of 1.
    assert _device.parse(FakeDevArray(shape=(3, 4), typestr="<f4", strides=(16, 4))).nbytes == 48
    assert _device.parse(FakeDevArray(shape=(3, 1), typestr="<f4", strides=(4, 999))).nbytes == 12
    assert _device.parse(FakeDevArray(shape=(0, 4), typestr="<f4", strides=(4, 8))).nbytes == 0
    # Transposed, sliced with a step, padded rows: refused, naming the fix.
    for shape, strides in [((4, 3), (4, 16)), ((8,), (8,)), ((3, 4), (32, 4))]:
        with pytest.raises(colio.InvalidArgumentError, match="not C-contiguous") as ei:
            _device.parse(FakeDevArray(shape=shape, typestr="<f4", strides=strides))
        assert "contiguous" in str(ei.value) and str(strides) in str(ei.value)
    with pytest.raises(colio.InvalidArgumentError, match="strides"):
        _device.parse(FakeDevArray(shape=(3, 4), typestr="<f4", strides=(4,)))


def test_readonly_parsed():
    assert _device.parse(FakeDevArray(data=(0x1000, True))).readonly is True


@pytest.mark.parametrize("cai,msg", [
    ({"version": _DROP}, "version"),
    ({"shape": [16]}, "shape"),
    ({"shape": (-1,)}, "shape"),
    ({"typestr": "f4"}, "typestr"),
    ({"typestr": "|O8"}, "typestr"),
    ({"typestr": "<f0"}, "typestr"),
    ({"data": 0x1000}, "data"),
    ({"data": (0x1000,)}, "data"),
    ({"data": (0, False)}, "NULL"),
    ({"mask": object()}, "mask"),
])
def test_malformed_interface_refused(cai, msg):
    with pytest.raises(colio.InvalidArgumentError, match=msg):
        _device.parse(FakeDevArray(**cai))


def test_is_device():
    assert _device.is_device(FakeDevArray())
    assert not _device.is_device(CPUTensorLike())
    assert not _device.is_device(bytearray(4))
    # A CPU-tensor-like object goes down the host path (and fails there as
    # a non-buffer, not as a device array).
    with pytest.raises(TypeError, match="buffer protocol"):
        colio.from_buffer(b"abcd").read_async(CPUTensorLike())


# ---- the CPU build refuses device arrays ------------------------------------

def test_cpu_build_refuses_device_arrays(tmp_path):
    assert _lib.load().colio_has_cuda() == 0
    src = colio.from_buffer(b"x" * 100)
    snk = colio.sink(str(tmp_path / "out.bin"))
    dev = FakeDevArray()  # a bogus pointer: the CPU build must not touch it
    for call in (lambda: src.read_async(dev), lambda: src.read_into(dev, 4),
                 lambda: snk.write_async(dev), lambda: snk.write(dev, 0)):
        with pytest.raises(colio.NotSupportedError) as ei:
            call()
        msg = str(ei.value)
        assert "CPU build" in msg and "libcolio_cuda.so" in msg and "__cuda_array_interface__" in msg
        assert "fetch-cuda-headers.sh" in msg or "COLIO_LIBRARY" in msg or "probe" in msg
    snk.close()
    assert os.path.getsize(tmp_path / "out.bin") == 0


def test_checks_come_before_the_library(tmp_path):
    src = colio.from_buffer(b"x" * 100)
    with pytest.raises(TypeError, match="read-only device array"):
        src.read_async(FakeDevArray(data=(0x1000, True)))
    with pytest.raises(colio.InvalidArgumentError, match="too small"):
        src.read_async(FakeDevArray(), 0, 17)
    with pytest.raises(colio.InvalidArgumentError, match="not C-contiguous"):
        src.read_async(FakeDevArray(shape=(4, 4), strides=(1, 4)))
    with pytest.raises(colio.InvalidArgumentError, match="negative"):
        src.read_async(FakeDevArray(), -1)


def test_arguments_reach_the_c_entry_points(monkeypatch, tmp_path):
    """What the parser found (pointer, size, offset, stream) is what the
    _stream entry points get; writes with offset None append."""
    L = _lib.load()
    calls = []

    def fake(name):
        def f(h, ptr, size, off, stream, out):
            calls.append((name, ptr, size, off, stream))
            return _lib.ENOTSUP
        return f

    monkeypatch.setattr(L, "colio_read_device_async_stream", fake("read"))
    monkeypatch.setattr(L, "colio_write_device_async_stream", fake("write"))
    src = colio.from_buffer(b"x" * 100)
    snk = colio.sink(str(tmp_path / "o.bin"))
    cases = [
        (lambda: src.read_async(FakeDevArray(shape=(2, 8), typestr="<f4", stream=None), 5),
         ("read", 0x7F0000001000, 64, 5, _lib.STREAM_NONE)),
        (lambda: src.read_async(FakeDevArray(stream=0xABC000), 0, 10),
         ("read", 0x7F0000001000, 10, 0, 0xABC000)),
        (lambda: snk.write_async(FakeDevArray(version=2, data=(0x2000, True))),
         ("write", 0x2000, 16, _lib.APPEND, _lib.STREAM_LEGACY)),
        (lambda: snk.write_async(FakeDevArray(stream=2), 7),
         ("write", 0x7F0000001000, 16, 7, _lib.STREAM_PER_THREAD)),
    ]
    for call, want in cases:
        with pytest.raises(colio.NotSupportedError):
            call()
        assert calls[-1] == want
    snk.close()


def test_header_stream_constants():
    text = open(os.path.join(ROOT, "include", "colio.h")).read()
    defs = dict(re.findall(r"#define\s+COLIO_(STREAM_\w+)\s+\(\(uintptr_t\)(\d+)\)", text))
    assert {k: int(v) for k, v in defs.items()} == {
        "STREAM_NONE": _lib.STREAM_NONE, "STREAM_LEGACY": _lib.STREAM_LEGACY,
        "STREAM_PER_THREAD": _lib.STREAM_PER_THREAD}


def test_device_stats():
    s = colio.stats()
    for k in ("device_requests", "device_stream_syncs", "device_event_waits",
              "device_bytes_to_device", "device_bytes_from_device", "device_pinned_bytes"):
        assert s[k] == 0, k


# ---- choosing the CUDA build --------------------------------------------------

def test_candidates_choose_cuda_only_as_designed(monkeypatch, tmp_path):
    for name in ("libcolio.so", "libcolio_cuda.so"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.delenv("COLIO_LIBRARY", raising=False)
    monkeypatch.delenv("COLIO_CUDA", raising=False)
    monkeypatch.setattr(_lib, "_package_dir", lambda: str(tmp_path))
    cuda, cpu = str(tmp_path / "libcolio_cuda.so"), str(tmp_path / "libcolio.so")
    monkeypatch.setattr(_lib, "_cuda_usable", lambda: True)
    assert _lib.candidates()[:2] == [cuda, cpu]
    monkeypatch.setenv("COLIO_CUDA", "0")
    assert cuda not in _lib.candidates()
    monkeypatch.setenv("COLIO_CUDA", "1")
    monkeypatch.setattr(_lib, "_cuda_usable", lambda: False)  # the probe failed
    assert cuda not in _lib.candidates() and _lib.candidates()[0] == cpu
    monkeypatch.setattr(_lib, "_cuda_usable", lambda: True)
    (tmp_path / "libcolio_cuda.so").unlink()  # the package has none
    assert cuda not in _lib.candidates()


def test_probe_without_a_gpu_is_false_and_safe():
    # This machine has no usable GPU: the probe says so, without loading
    # the CUDA build (whose load would exit the process).
    r = subprocess.run([sys.executable, "-c", "from colio import _lib; print(_lib._cuda_usable())"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "True":
        pytest.skip("this machine has a usable GPU")
    assert r.stdout.strip() == "False"


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "build", "lib", "libcolio_cuda.so")),
                    reason="libcolio_cuda.so not built (no CUDA headers)")
def test_package_with_cuda_build_loads_cpu_build_here(tmp_path):
    """A package holding both builds, on a machine without a usable GPU,
    loads the CPU build (the probe fails) and keeps working; device arrays
    are then refused with the reason."""
    site = tmp_path / "site"
    shutil.copytree(os.path.join(ROOT, "python", "colio"), site / "colio",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("libcolio.so", "libcolio_cuda.so"):
        shutil.copyfile(os.path.realpath(os.path.join(ROOT, "build", "lib", name)),
                        site / "colio" / name)
    code = ("import colio, colio._device as d\n"
            "print(colio.library_path())\n"
            "print(colio.from_buffer(b'abc').read(0, 3))\n"
            "class A:\n"
            "    __cuda_array_interface__ = {'version': 3, 'shape': (3,), 'typestr': '|u1',\n"
            "                                'data': (4096, False), 'stream': 1}\n"
            "try:\n"
            "    colio.from_buffer(b'abc').read_async(A())\n"
            "except colio.NotSupportedError as e:\n"
            "    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COLIO_LIBRARY", "COLIO_CUDA")}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=str(tmp_path), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.splitlines()
    if out[0].endswith("libcolio_cuda.so"):
        pytest.skip("this machine has a usable GPU")
    assert out[0] == str(site / "colio" / "libcolio.so")
    assert out[1] == "b'abc'"
    assert "probe failed" in out[2]
