"""Device arrays as read destinations and write data.

Any object with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba, cuDF
columns...) can be read into with ``Source.read_async`` / ``read_into`` and
written with ``Sink.write_async`` / ``write``. The interface is parsed here
(versions 0 to 3 of the specification:
https://numba.readthedocs.io/en/stable/cuda/cuda_array_interface.html):

* ``shape`` and ``typestr`` give the size: ``prod(shape) * itemsize``;
* ``strides`` must be absent/None or describe a C-contiguous layout (a
  non-contiguous array is refused: colio moves one contiguous range);
* ``data`` is ``(pointer, readonly)``: a read-only array is refused as a
  read destination;
* ``mask`` must be absent or None;
* ``stream`` orders colio's copies after the producer's work: absent (or
  ``version`` < 3) means the legacy default stream, ``None`` no ordering,
  1 and 2 the legacy and per-thread default streams, any other integer a
  CUDA stream of the array's context; 0 is refused, as the specification
  disallows it.

Only the CUDA build (libcolio_cuda.so) moves device memory; the CPU build
refuses with :class:`colio.NotSupportedError` explaining why it was loaded
and how to get the CUDA build.
"""

from __future__ import annotations

import os
import re
from ctypes import byref, c_int64, c_void_p

from . import _lib
from ._buffers import index
from ._errors import InvalidArgumentError, NotSupportedError, last_error

_TYPESTR = re.compile(r"^[<>|=]([a-zA-Z])(\d+)$")


class DeviceBuffer:
    """What colio needs of a device array: where, how many bytes, whether
    it may be written, and the stream to order after."""

    __slots__ = ("obj", "ptr", "nbytes", "readonly", "stream", "shape", "typestr", "version")

    def __init__(self, obj, ptr, nbytes, readonly, stream, shape, typestr, version):
        self.obj = obj
        self.ptr = ptr
        self.nbytes = nbytes
        self.readonly = readonly
        self.stream = stream
        self.shape = shape
        self.typestr = typestr
        self.version = version

    def __repr__(self) -> str:
        return (f"DeviceBuffer(ptr={self.ptr:#x}, nbytes={self.nbytes}, readonly={self.readonly}, "
                f"stream={self.stream}, shape={self.shape}, typestr={self.typestr!r}, "
                f"version={self.version})")


def is_device(obj) -> bool:
    """True for objects whose type declares ``__cuda_array_interface__``
    (a class attribute or property, as CuPy, PyTorch and Numba have). A
    property that raises (a PyTorch CPU tensor) is then treated as host."""
    if not hasattr(type(obj), "__cuda_array_interface__"):
        return False
    try:
        obj.__cuda_array_interface__
    except AttributeError:
        return False
    return True


def _bad(what: str, msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"colio: {what}: __cuda_array_interface__ {msg}")


def parse(obj, what: str = "the device array") -> DeviceBuffer:
    """Reads ``obj.__cuda_array_interface__`` (see the module doc)."""
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise _bad(what, f"is a {type(cai).__name__}, not a dict")
    version = cai.get("version")
    if type(version) is not int or version < 0:
        raise _bad(what, f"has no valid 'version' (got {version!r})")
    # shape
    shape = cai.get("shape")
    if not isinstance(shape, tuple) or not all(type(d) is int and d >= 0 for d in shape):
        raise _bad(what, f"'shape' must be a tuple of non-negative ints (got {shape!r})")
    # typestr -> itemsize
    typestr = cai.get("typestr")
    m = _TYPESTR.match(typestr) if isinstance(typestr, str) else None
    if m is None or int(m.group(2)) <= 0 or m.group(1) == "O":
        raise _bad(what, f"'typestr' {typestr!r} is not a fixed-size array-interface type "
                         "such as '<f4' or '|u1'")
    itemsize = int(m.group(2))
    n = itemsize
    for d in shape:
        n *= d
    # data
    data = cai.get("data")
    if (not isinstance(data, tuple) or len(data) != 2 or type(data[0]) is not int
            or data[0] < 0 or not isinstance(data[1], bool)):
        raise _bad(what, f"'data' must be (pointer: int, readonly: bool) (got {data!r})")
    ptr, readonly = data
    if ptr == 0 and n > 0:
        raise _bad(what, f"has a NULL data pointer for {n} bytes")
    # strides: C-contiguous only
    strides = cai.get("strides")
    if strides is not None:
        if not isinstance(strides, tuple) or len(strides) != len(shape) or \
                not all(type(s) is int for s in strides):
            raise _bad(what, f"'strides' {strides!r} does not match shape {shape}")
        if n > 0:
            want = itemsize
            for d, s in zip(reversed(shape), reversed(strides)):
                if d != 1 and s != want:
                    raise InvalidArgumentError(
                        f"colio: {what} is not C-contiguous (shape {shape}, strides {strides}, "
                        f"itemsize {itemsize}); colio moves one contiguous range of device memory: "
                        "pass a contiguous array or a copy (cupy.ascontiguousarray(a), "
                        "tensor.contiguous())")
                want *= d
    if cai.get("mask") is not None:
        raise InvalidArgumentError(f"colio: {what} has a mask (__cuda_array_interface__ "
                                   "'mask'); masked device arrays are not supported")
    # stream
    if version < 3 or "stream" not in cai:
        stream = _lib.STREAM_LEGACY
    else:
        s = cai["stream"]
        if s is None:
            stream = _lib.STREAM_NONE
        elif type(s) is not int or s < 0:
            raise _bad(what, f"'stream' must be None or a non-negative int (got {s!r})")
        elif s == 0:
            raise _bad(what, "'stream' is 0, which the specification disallows (ambiguous); "
                             "the producer should give None, 1 (legacy default stream), "
                             "2 (per-thread default stream) or a stream handle")
        else:
            stream = s
    return DeviceBuffer(obj, ptr, n, readonly, stream, shape, typestr, version)


def _not_supported(L, what: str) -> NotSupportedError:
    """Why the CPU build is loaded, and how to get the CUDA build."""
    pkg = _lib._package_dir()
    cuda = os.path.join(pkg, "libcolio_cuda.so")
    if os.environ.get("COLIO_LIBRARY"):
        why = (f"COLIO_LIBRARY={os.environ['COLIO_LIBRARY']} names the CPU build; point it at "
               "libcolio_cuda.so instead (on a machine with a usable GPU only: it exits the "
               "process at load time where cuInit fails)")
    elif not os.path.exists(cuda):
        why = ("this colio package has no CUDA build (colio/libcolio_cuda.so): build it where "
               "the CUDA headers are (scripts/fetch-cuda-headers.sh or a CUDA toolkit, then "
               "./build.sh or pip install .; README, \"GPU\")")
    elif os.environ.get("COLIO_CUDA", "") == "0":
        why = "COLIO_CUDA=0 turned the CUDA build off; unset it to use libcolio_cuda.so"
    else:
        why = ("the package has libcolio_cuda.so, but the CUDA driver probe failed "
               "(libcuda.so.1 missing, cuInit(0) failed or no GPU), so the CPU build was loaded")
    return NotSupportedError(f"colio: {what} is device memory (__cuda_array_interface__), but "
                             f"the loaded library ({L.path}) is the CPU build, which cannot move "
                             f"device memory: {why}")


def _submit(owner, fn, dev: DeviceBuffer, n: int, off: int, what: str):
    L = _lib.L or _lib.load()
    from . import _future as F
    if F._to_free:
        F._drain_free(L)
    h = c_void_p()
    rc = fn(L)(owner._h(), dev.ptr, n, off, dev.stream, byref(h))
    if rc:
        if rc == _lib.ENOTSUP and L.colio_has_cuda() != 1:
            raise _not_supported(L, what)
        raise owner._fail(rc)
    fut = F.Future()
    fut._pin = dev.obj  # the array stays alive until the future is done
    fut._addr, fut._size = dev.ptr, n
    fut._owner = owner
    return F, L, fut, h.value


def read_async(src, obj, offset, size):
    """Source.read_async into a device array."""
    dev = parse(obj, "the destination")
    if dev.readonly:
        raise TypeError(f"colio: the destination is a read-only device array "
                        f"({type(obj).__name__}, __cuda_array_interface__ data[1] is True); "
                        "a writable one is needed")
    n = dev.nbytes
    if size is not None:
        size = index(size, "size")
        if size > n:
            raise InvalidArgumentError(
                f"colio: the device array is too small: {n} bytes for a read of {size}")
        n = size
    offset = index(offset, "offset")
    F, L, fut, h = _submit(src, lambda L: L.colio_read_device_async_stream, dev, n, offset,
                           "the destination")
    return F.track(L, fut, h)


def write_async(snk, obj, offset):
    """Sink.write_async of a device array (offset None: append)."""
    dev = parse(obj, "the data to write")
    off = snk._offset(offset)
    F, L, fut, h = _submit(snk, lambda L: L.colio_write_device_async_stream, dev, dev.nbytes, off,
                           "the data to write")
    if offset is None:
        o = c_int64(0)
        if L.colio_future_offset(h, byref(o)) == 0:
            fut.offset = o.value
    else:
        fut.offset = off
    return F.track(L, fut, h)
