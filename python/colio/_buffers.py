"""Turning Python buffers into (address, nbytes) pairs, and keeping them
alive and locked while the library uses them.

A *pin* is an object whose lifetime holds a buffer export open: while it
lives, the memory cannot be freed or moved (a bytearray with an export
cannot be resized). Futures keep their pin until they complete.
"""

from __future__ import annotations

import ctypes
import operator
from ctypes import c_char, c_int, c_void_p, py_object

from ._arrow_in import arrow_readable
from ._errors import InvalidArgumentError

# A valid address for zero-byte requests (the C API rejects NULL buffers).
_EMPTY = ctypes.create_string_buffer(1)
EMPTY_ADDR = ctypes.addressof(_EMPTY)


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", c_void_p),
        ("obj", c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", c_int),
        ("ndim", c_int),
        ("format", c_void_p),
        ("shape", c_void_p),
        ("strides", c_void_p),
        ("suboffsets", c_void_p),
        ("internal", c_void_p),
    ]


_api = ctypes.pythonapi
_GetBuffer = _api.PyObject_GetBuffer
_GetBuffer.argtypes = [py_object, ctypes.POINTER(_PyBuffer), c_int]
_GetBuffer.restype = c_int
_ReleaseBuffer = _api.PyBuffer_Release
_ReleaseBuffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_ReleaseBuffer.restype = None
_MemoryViewFromMemory = _api.PyMemoryView_FromMemory
_MemoryViewFromMemory.argtypes = [c_void_p, ctypes.c_ssize_t, c_int]
_MemoryViewFromMemory.restype = py_object
_BytesFromSize = _api.PyBytes_FromStringAndSize
_BytesFromSize.argtypes = [c_void_p, ctypes.c_ssize_t]
_BytesFromSize.restype = py_object
_BytesAsString = _api.PyBytes_AsString
_BytesAsString.argtypes = [py_object]
_BytesAsString.restype = c_void_p

_PyBUF_SIMPLE = 0
_PyBUF_WRITE = 0x200


class ReadOnlyPin:
    """Holds a read-only (or any) contiguous buffer export open."""

    __slots__ = ("view", "held")

    def __init__(self, obj):
        self.view = _PyBuffer()
        self.held = False
        if _GetBuffer(obj, ctypes.byref(self.view), _PyBUF_SIMPLE) != 0:
            raise BufferError("colio: cannot get a contiguous buffer from the object")
        self.held = True

    def release(self):
        if self.held:
            self.held = False
            _ReleaseBuffer(ctypes.byref(self.view))

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def _memoryview(obj, what: str) -> memoryview:
    if isinstance(obj, memoryview):
        return obj
    try:
        return memoryview(obj)
    except TypeError:
        raise TypeError(f"colio: {what} must support the buffer protocol "
                        f"(bytearray, memoryview, numpy array...), not {type(obj).__name__}") from None


def writable(obj, what: str = "the destination"):
    """(pin, address, nbytes) of a writable, C-contiguous buffer."""
    if type(obj) is bytearray:  # the common case, without a memoryview
        n = len(obj)
        if n:
            pin = c_char.from_buffer(obj)
            return pin, ctypes.addressof(pin), n
        return obj, EMPTY_ADDR, 0
    mv = _memoryview(obj, what)
    if mv.readonly:
        raise TypeError(f"colio: {what} is read-only; a writable buffer is needed "
                        f"(got a read-only {type(obj).__name__})")
    if not mv.c_contiguous:
        raise InvalidArgumentError(
            f"colio: {what} is not C-contiguous (shape {mv.shape}, strides {mv.strides}); "
            "pass a contiguous array or a copy")
    n = mv.nbytes
    if n == 0:
        return mv, EMPTY_ADDR, 0
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    pin = c_char.from_buffer(mv)
    return pin, ctypes.addressof(pin), n


# type -> whether it has __arrow_c_array__, asked once per type.
_ARROW_TYPES: dict = {}
# type -> whether c_char.from_buffer takes its objects directly, with
# ``nbytes`` their size (NumPy arrays, memoryviews), asked once per type.
_PLAIN_TYPES: dict = {}


def _plain(t) -> bool:
    if t is memoryview:
        return True
    return (hasattr(t, "__array_interface__") and hasattr(t, "nbytes")
            and not hasattr(t, "__arrow_c_array__"))


def readable(obj, what: str = "the data"):
    """(pin, address, nbytes) of any C-contiguous buffer, read-only or not."""
    if isinstance(obj, bytes):
        # Immutable: the reference keeps the memory alive and unchanged.
        return obj, (_BytesAsString(obj) if obj else EMPTY_ADDR), len(obj)
    t = type(obj)
    plain = _PLAIN_TYPES.get(t)
    if plain is None:
        plain = _PLAIN_TYPES[t] = _plain(t)
    if plain:
        # A writable, C-contiguous, non-empty NumPy array or memoryview
        # straight into ctypes: half the cost of a memoryview, its checks
        # and a cast (issue 15.3). from_buffer refuses the rest (read-only,
        # not contiguous, empty), which take the general path below.
        try:
            pin = c_char.from_buffer(obj)
        except (TypeError, ValueError, BufferError):
            pass
        else:
            return pin, ctypes.addressof(pin), obj.nbytes
    arrow = _ARROW_TYPES.get(t)
    if arrow is None:  # hasattr on a type that lacks it costs a raised AttributeError
        arrow = _ARROW_TYPES[t] = hasattr(t, "__arrow_c_array__")
    if arrow:  # pyarrow, polars, colio.ArrowData...
        pin, addr, n = arrow_readable(obj, what)
        return pin, (addr if addr is not None else EMPTY_ADDR), n
    mv = _memoryview(obj, what)
    if not mv.c_contiguous:
        raise InvalidArgumentError(
            f"colio: {what} is not C-contiguous (shape {mv.shape}, strides {mv.strides}); "
            "pass a contiguous array or a copy")
    n = mv.nbytes
    if n == 0:
        return mv, EMPTY_ADDR, 0
    if not mv.readonly:
        if mv.ndim != 1 or mv.format != "B":
            mv = mv.cast("B")
        pin = c_char.from_buffer(mv)
        return pin, ctypes.addressof(pin), n
    pin = ReadOnlyPin(mv)
    return pin, pin.view.buf, n


def release(pin) -> None:
    """Lets go of a pin now rather than when it is collected."""
    if type(pin) is ReadOnlyPin:
        pin.release()


def view_of(addr: int, size: int) -> memoryview:
    """A writable memoryview over raw memory (for callbacks)."""
    return _MemoryViewFromMemory(addr, size, _PyBUF_WRITE)


def new_bytes(n: int):
    """A fresh, not yet shared bytes object of n bytes and its address: the
    C API's way to build a bytes object in place (filled before anyone sees
    it)."""
    b = _BytesFromSize(None, n)
    return b, _BytesAsString(b)


# The largest offset or size the C API takes (int64_t). ctypes keeps only
# the low 64 bits of a larger int, so 1 << 64 would silently become 0: every
# integer bound for the library is checked against this first.
INT64_MAX = (1 << 63) - 1


def too_large(v: int, what: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"colio: {what} is too large (got {v}; at most 2**63-1 = {INT64_MAX})")


def no_nul(path: str) -> None:
    """Refuses a NUL in a path as ``open()`` does: the library takes C
    strings, which end at the first NUL, so "a.bin\\0.txt" would open
    "a.bin"."""
    if "\x00" in path:
        raise InvalidArgumentError(f"colio: embedded null byte in the path {path!r}")


def index(v, what: str) -> int:
    """v as a non-negative int that fits in int64_t; ``what`` names it in
    the error (the caller's argument name)."""
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"colio: {what} must be an integer, not {type(v).__name__}") from None
    if v < 0:
        raise InvalidArgumentError(f"colio: {what} must not be negative (got {v})")
    if v > INT64_MAX:
        raise too_large(v, what)
    return v


def signed_index(v, what: str) -> int:
    """v as an int that fits in int64_t, negative allowed (relative seeks)."""
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"colio: {what} must be an integer, not {type(v).__name__}") from None
    if not -INT64_MAX - 1 <= v <= INT64_MAX:
        raise InvalidArgumentError(
            f"colio: {what} is too large (got {v}; it must fit in 64 bits: "
            f"-2**63 to 2**63-1)")
    return v
