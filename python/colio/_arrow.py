"""Arrow data without copies, through the Arrow C Data Interface and the
Arrow PyCapsule interface.

Reading: ``Source.read_ranges_arrow(ranges)`` and ``Source.read_arrow(offset,
size)`` return an :class:`ArrowData`. libcolio reads straight into one
C-allocated buffer (``colio_read_ranges_arrow`` / ``colio_read_arrow_buffer``)
and exports it as a ``large_binary`` array (one element per range) or a
``uint8`` array. ``ArrowData`` implements ``__arrow_c_array__``, so
``pyarrow.array(obj)``, ``nanoarrow.c_array(obj)``, ``polars.Series(obj)``
and any other consumer of the PyCapsule interface take it; pyarrow and
nanoarrow then point at colio's buffer (no copy).

``__arrow_c_array__`` may be called any number of times. Each call asks the
library for a new *reference* to the export (``colio_arrow_array_ref``): a
fresh ``struct ArrowArray`` with the same buffer pointers and its own release
callback, which a consumer may move and release once, on any thread. The
references share a reference count kept in C, so releasing one never needs
the GIL or Python; the memory is freed when the last reference goes, whether
that is the ``ArrowData`` itself, a pyarrow array, or a capsule nobody
consumed (the capsule destructor releases it). ``requested_schema`` is
accepted and ignored: the data are returned in their own type, which the
interface allows (consumers check the schema they get).

``ArrowData.buffer`` is a ctypes ``c_ubyte`` array laid over the data buffer
(itself holding a reference, so it outlives ``close()``):
``memoryview(obj.buffer)`` and ``numpy.frombuffer(obj.buffer, numpy.uint8)``
see the bytes without a copy. A pure-Python class cannot export the buffer
protocol on Python 3.11; on 3.12 and later ``memoryview(obj)`` works too
(PEP 688, ``__buffer__``).

Writing: :func:`readable` lets ``Sink.write_async`` and ``Sink.write`` take
any object with ``__arrow_c_array__`` of a fixed-width type (ints, floats,
dates, times, timestamps, durations, decimals, fixed-size binary) or a binary
type (binary, string, large_binary, large_string: the value bytes are
written): the array is imported (moved out of its capsule, so its producer
keeps the memory alive), and the library is handed the address of the
array's own data buffer, at the array's offset. The import is released when
the write's future completes.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int64, c_size_t, c_void_p

from . import _lib
from ._arrow_in import _ARRAY_RELEASE_AT, _ARRAY_SIZE, ArrowPin
from ._buffers import EMPTY_ADDR, index
from ._errors import last_error
from ._handle import lib

# ---- the C helpers: libc's allocator, Python's capsule API ---------------------

_libc = ctypes.CDLL(None)
_calloc = _libc.calloc
_calloc.argtypes = [c_size_t, c_size_t]
_calloc.restype = c_void_p
_free = _libc.free
_free.argtypes = [c_void_p]
_free.restype = None

_api = ctypes.pythonapi
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)  # called with the dying capsule
_CapsuleNew = _api.PyCapsule_New
_CapsuleNew.argtypes = [c_void_p, c_char_p, _CAPSULE_DESTRUCTOR]
_CapsuleNew.restype = ctypes.py_object
# Two views of PyCapsule_GetPointer: on a live capsule (a Python object) and
# on one being destroyed (a raw pointer: no reference may be taken then).
_CapsuleGetPointerRaw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(
    ("PyCapsule_GetPointer", _api))
_CapsuleIsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, c_char_p)(
    ("PyCapsule_IsValid", _api))
_ErrClear = _api.PyErr_Clear
_ErrClear.argtypes = []
_ErrClear.restype = None

_SCHEMA_SIZE = ctypes.sizeof(_lib.ArrowSchema)
_P_ARRAY = POINTER(_lib.ArrowArray)
_P_SCHEMA = POINTER(_lib.ArrowSchema)
_SCHEMA_RELEASE_AT = _lib.ArrowSchema.release.offset


def _release_struct_at(addr: int, release_at: int, fntype, ptrtype) -> None:
    """Calls the release callback of the struct at addr, if it has one."""
    fn = c_void_p.from_address(addr + release_at).value
    if fn:
        ctypes.cast(fn, fntype)(ctypes.cast(addr, ptrtype))


def _array_capsule_destructor(cap):
    try:
        p = _CapsuleGetPointerRaw(cap, b"arrow_array")
        if not p:
            _ErrClear()
            return
        _release_struct_at(p, _ARRAY_RELEASE_AT, _lib.ARROW_ARRAY_RELEASE, _P_ARRAY)
        _free(p)
    except BaseException:  # noqa: BLE001 - nothing may escape a destructor
        pass


def _schema_capsule_destructor(cap):
    try:
        p = _CapsuleGetPointerRaw(cap, b"arrow_schema")
        if not p:
            _ErrClear()
            return
        _release_struct_at(p, _SCHEMA_RELEASE_AT, _lib.ARROW_SCHEMA_RELEASE, _P_SCHEMA)
        _free(p)
    except BaseException:  # noqa: BLE001
        pass


_ARRAY_DESTRUCTOR = _CAPSULE_DESTRUCTOR(_array_capsule_destructor)
_SCHEMA_DESTRUCTOR = _CAPSULE_DESTRUCTOR(_schema_capsule_destructor)
# Never freed: a capsule may outlive this module's globals at interpreter
# exit, and its destructor must still be callable then.
_api.Py_IncRef.argtypes = [ctypes.py_object]
_api.Py_IncRef(_ARRAY_DESTRUCTOR)
_api.Py_IncRef(_SCHEMA_DESTRUCTOR)


# ---- reading --------------------------------------------------------------------

class _Ref(ArrowPin):
    """Owns one reference to a colio export (a struct ArrowArray in
    Python memory); releases it when closed or collected (ArrowPin's life
    cycle: the same struct, released once)."""

    __slots__ = ()


class ArrowData:
    """Bytes read by colio, as an Arrow array over one C buffer (no copy).

    ``type`` is ``"large_binary"`` (from ``read_ranges_arrow``: one element
    per range) or ``"uint8"`` (from ``read_arrow``). Pass it to any Arrow
    consumer (``pyarrow.array(obj)``, ``nanoarrow.c_array(obj)``,
    ``polars.Series(obj)``): it implements ``__arrow_c_array__``, callable
    more than once. ``buffer`` exposes the data bytes to ``memoryview`` and
    ``numpy.frombuffer``. The memory is freed once this object and every
    array made from it are gone; ``close()`` drops this object's share early.
    """

    __slots__ = ("_ref", "type", "_buffer", "__weakref__")

    def __init__(self, ref: _Ref, type_: str):
        self._ref = ref
        self.type = type_
        self._buffer = None

    def _arr(self):
        ref = self._ref
        if ref is None or not ref.arr.release:
            raise ValueError("colio: the ArrowData was closed")
        return ref.arr

    def __arrow_c_array__(self, requested_schema=None):
        """A new (schema capsule, array capsule) pair sharing this data.
        requested_schema is ignored: the data keep their own type."""
        a = self._arr()
        L = _lib.L or _lib.load()
        pa = _calloc(1, _ARRAY_SIZE)
        ps = _calloc(1, _SCHEMA_SIZE)
        if not pa or not ps:
            _free(pa)
            _free(ps)
            raise MemoryError("colio: cannot allocate an ArrowArray")
        rc = L.colio_arrow_array_ref(byref(a), ctypes.cast(pa, _P_ARRAY),
                                     ctypes.cast(ps, _P_SCHEMA))
        if rc:
            _free(pa)
            _free(ps)
            raise last_error(rc)
        try:
            schema = _CapsuleNew(ps, b"arrow_schema", _SCHEMA_DESTRUCTOR)
        except BaseException:
            _release_struct_at(pa, _ARRAY_RELEASE_AT, _lib.ARROW_ARRAY_RELEASE, _P_ARRAY)
            _free(pa)
            _free(ps)
            raise
        array = _CapsuleNew(pa, b"arrow_array", _ARRAY_DESTRUCTOR)
        return schema, array

    def __len__(self) -> int:
        return self._arr().length

    @property
    def nbytes(self) -> int:
        """The size of the data buffer's bytes in use (the sum of the
        elements for large_binary)."""
        a = self._arr()
        if a.n_buffers == 3:
            return ctypes.cast(a.buffers[1], POINTER(c_int64))[a.length]
        return a.length

    @property
    def address(self) -> int:
        """The address of the data buffer (what Arrow consumers point at)."""
        a = self._arr()
        return a.buffers[a.n_buffers - 1] or 0

    @property
    def offsets(self) -> list:
        """large_binary only: the n + 1 element boundaries in the buffer."""
        a = self._arr()
        if a.n_buffers != 3:
            raise AttributeError("colio: a uint8 ArrowData has no offsets")
        return ctypes.cast(a.buffers[1], POINTER(c_int64))[: a.length + 1]

    @property
    def buffer(self):
        """The data bytes as a ctypes ``c_ubyte`` array over the C buffer
        (no copy), for ``memoryview()`` and ``numpy.frombuffer()``. It holds
        its own reference: the bytes stay valid while it (or a view of it)
        lives, even after ``close()``. Treat the bytes as read-only while
        Arrow arrays made from this object are in use."""
        b = self._buffer
        if b is None:
            a = self._arr()
            n = self.nbytes
            keep = _Ref()
            L = _lib.L or _lib.load()
            rc = L.colio_arrow_array_ref(byref(a), byref(keep.arr), None)
            if rc:
                raise last_error(rc)
            addr = a.buffers[a.n_buffers - 1] or EMPTY_ADDR
            b = (ctypes.c_ubyte * n).from_address(addr)
            b._colio_ref = keep  # the bytes live as long as the array does
            self._buffer = b
        return b

    def __buffer__(self, flags):  # Python 3.12+ (PEP 688)
        return memoryview(self.buffer)

    def to_bytes(self) -> bytes:
        """A copy of the data bytes."""
        return bytes(self.buffer)

    def close(self) -> None:
        """Drops this object's reference now (arrays made from it, and
        ``buffer``, keep theirs). Idempotent."""
        ref, self._ref = self._ref, None
        self._buffer = None
        if ref is not None:
            ref.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        if self._ref is None or not self._ref.arr.release:
            return f"<colio.ArrowData {self.type} closed>"
        return f"<colio.ArrowData {self.type} length={len(self)} nbytes={self.nbytes}>"


def _raise_read_error(src, rc):
    exc = None
    if rc in (_lib.ECALLBACK, _lib.EIO):
        exc = src._take_callback_error(0, 1 << 63)
    raise exc if exc is not None else src._fail(rc)


def read_ranges_arrow(src, ranges) -> ArrowData:
    rs = src._ranges(ranges)
    n = len(rs)
    arr = (_lib.Range * max(n, 1))()
    for i, (off, size) in enumerate(rs):
        r = arr[i]
        r.offset, r.size, r.buf = off, size, None
    ref = _Ref()
    L = lib()
    rc = L.colio_read_ranges_arrow(src._h(), arr, n, byref(ref.arr), None)
    if rc:
        _raise_read_error(src, rc)
    return ArrowData(ref, "large_binary")


def read_arrow(src, offset: int = 0, size: int | None = None) -> ArrowData:
    offset = index(offset, "offset")
    size = (1 << 62) if size is None else index(size, "size")  # None: to the end
    ref = _Ref()
    L = lib()
    rc = L.colio_read_arrow_buffer(src._h(), offset, size, byref(ref.arr), None)
    if rc:
        _raise_read_error(src, rc)
    return ArrowData(ref, "uint8")
