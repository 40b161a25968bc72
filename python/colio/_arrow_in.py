"""Arrow arrays handed to colio to write: the memory of any object
exporting ``__arrow_c_array__`` (pyarrow, polars, nanoarrow, colio.ArrowData),
pinned while a sink writes it, never copied.

Below colio._buffers (whose ``readable`` calls ``arrow_readable`` for such
objects) and above nothing of colio's but the ctypes declarations: the
reading side, colio._arrow, imports from here, never the reverse.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int64, c_void_p

from . import _lib
from ._errors import InvalidArgumentError

_CapsuleGetPointer = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_ARRAY_SIZE = ctypes.sizeof(_lib.ArrowArray)
_ARRAY_RELEASE_AT = _lib.ArrowArray.release.offset


# ---- writing: objects with __arrow_c_array__ -------------------------------------

# Byte widths of the fixed-width formats (the Arrow C data interface's
# format strings); timestamps ("ts?:tz"), fixed-size binary ("w:N") and
# decimals ("d:p,s[,bits]") are parsed below.
_FIXED = {
    b"c": 1, b"C": 1, b"s": 2, b"S": 2, b"i": 4, b"I": 4, b"l": 8, b"L": 8,
    b"e": 2, b"f": 4, b"g": 8,
    b"tdD": 4, b"tdm": 8, b"tts": 4, b"ttm": 4, b"ttu": 8, b"ttn": 8,
    b"tDs": 8, b"tDm": 8, b"tDu": 8, b"tDn": 8, b"tiM": 4, b"tiD": 8, b"tin": 16,
}
_BINARY = {b"z": 4, b"u": 4, b"Z": 8, b"U": 8}  # offset widths


def _width(fmt: bytes):
    """('fixed', bytes per value) or ('binary', offset width), or None."""
    w = _FIXED.get(fmt)
    if w is not None:
        return "fixed", w
    if fmt in _BINARY:
        return "binary", _BINARY[fmt]
    if fmt[:2] == b"ts" and len(fmt) >= 4 and fmt[3:4] == b":":
        return "fixed", 8
    if fmt[:2] == b"w:":
        return "fixed", int(fmt[2:])
    if fmt[:2] == b"d:":
        parts = fmt[2:].split(b",")
        bits = int(parts[2]) if len(parts) > 2 else 128
        return "fixed", bits // 8
    return None


class ArrowPin:
    """An imported Arrow array (moved out of its capsule), kept alive while
    colio reads its memory; released when dropped."""

    __slots__ = ("arr",)

    def __init__(self):
        self.arr = _lib.ArrowArray()

    def release(self) -> None:
        a = self.arr
        if a.release:
            a.release(byref(a))

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def _null_count(a, offset: int, length: int) -> int:
    if a.null_count >= 0:
        return a.null_count
    bits = a.buffers[0]
    if not bits:
        return 0
    first, last = offset // 8, (offset + length + 7) // 8
    word = int.from_bytes(ctypes.string_at(bits + first, last - first), "little")
    word >>= offset - first * 8
    word &= (1 << length) - 1
    return length - bin(word).count("1")


def arrow_readable(obj, what: str):
    """(pin, address, nbytes) of the data of an object exporting
    __arrow_c_array__: the array's own memory, never a copy."""
    schema_cap, array_cap = obj.__arrow_c_array__()
    ps = _CapsuleGetPointer(schema_cap, b"arrow_schema")
    pa = _CapsuleGetPointer(array_cap, b"arrow_array")
    pin = ArrowPin()
    # Move the array out of its capsule: the capsule's destructor then
    # finds it released, and the pin releases it when the write is done.
    ctypes.memmove(ctypes.addressof(pin.arr), pa, _ARRAY_SIZE)
    c_void_p.from_address(pa + _ARRAY_RELEASE_AT).value = None
    del array_cap
    schema = _lib.ArrowSchema.from_address(ps)
    fmt = schema.format or b""
    kind = _width(fmt)
    name = type(obj).__name__
    if kind is None or schema.n_children or schema.dictionary:
        raise TypeError(f"colio: {what} is an Arrow array of format {fmt.decode(errors='replace')!r} "
                        f"({name}); colio writes fixed-width and binary/string arrays only")
    a = pin.arr
    length, off = a.length, a.offset
    if a.n_children or a.dictionary:
        raise TypeError(f"colio: {what} ({name}) has child arrays; colio writes flat arrays only")
    if length and _null_count(a, off, length):
        raise InvalidArgumentError(
            f"colio: {what} ({name}) has nulls; colio writes raw data buffers, which "
            "cannot represent them (fill or drop the nulls first)")
    if length == 0:
        return pin, None, 0
    k, w = kind
    if k == "fixed":
        data = a.buffers[1]
        start, n = off * w, length * w
    else:
        offs = ctypes.cast(a.buffers[1], POINTER(ctypes.c_int32 if w == 4 else c_int64))
        data = a.buffers[2]
        start = offs[off]
        n = offs[off + length] - start
    if n == 0:
        return pin, None, 0
    if not data:
        raise InvalidArgumentError(f"colio: {what} ({name}) has no data buffer")
    return pin, data + start, n

