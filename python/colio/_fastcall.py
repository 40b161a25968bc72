"""Small calls at the cost of a call (issue 15.3).

A 4 KiB read from the page cache takes about as long as a ctypes call, so
what Python does around the call shows. These helpers keep it to the call:

- one argument pack per thread (prebuilt c_void_p/c_int64 objects and a
  function pointer without argtypes): setting four values costs less than
  ctypes converting four Python ints through argtypes into fresh objects;
- the address of a fresh bytes object without a library call (CPython
  keeps its bytes at a fixed offset in the object; checked at import, and
  the ctypes call is used where the check fails);
- the caller decides (file, memory and void handles, sizes at or under the
  engine's inline thresholds) when the synchronous call serves an
  asynchronous one, so that the future comes back completed.

Where the interpreter allows, the calls skip ctypes altogether: native()
is the module colio._native, builtin functions in the loaded library
itself (capi/pyfast.c) that take the buffer, ints and range list as they
are. A 4 KiB read_into took 2.5 us through ctypes and takes 0.47 us
through the builtin, about what os.preadv costs. COLIO_NATIVE=0 turns
it off (the ctypes paths then serve every call, as in a Python where it
does not load).
"""

from __future__ import annotations

import _thread
import os
import sys
from ctypes import byref, c_int64, c_void_p

from . import _lib
from ._buffers import _BytesAsString, new_bytes

_local = _thread._local()


class _Args:
    __slots__ = ("read", "write", "h", "a", "n", "o", "out", "ref", "at", "at_ref")

    def __init__(self, L):
        dll = L.dll
        # dll[name] is a fresh function pointer: no argtypes, so the
        # prebuilt objects below go through as they are.
        self.read = dll["colio_read"]
        self.write = dll["colio_write_ex"]
        self.h, self.a = c_void_p(), c_void_p()
        self.n, self.o, self.out = c_int64(), c_int64(), c_int64()
        self.ref = byref(self.out)
        self.at = c_int64()
        self.at_ref = byref(self.at)


def args():
    """This thread's argument pack."""
    try:
        return _local.args
    except AttributeError:
        a = _local.args = _Args(_lib.L or _lib.load())
        return a


def _bytes_offset():
    b = bytes(64)
    off = bytes.__basicsize__ - 1  # the object's header; ob_sval follows
    return off if _BytesAsString(b) == id(b) + off else None


_OFF = _bytes_offset()


def fresh_bytes(n: int):
    """A new bytes object of n bytes (not yet shared) and its address."""
    if n > 1 and _OFF is not None:  # bytes(0) and bytes(1) are shared singletons
        b = bytes(n)
        return b, id(b) + _OFF
    return new_bytes(n)


def bytes_addr(b: bytes) -> int:
    """The address of a bytes object's data."""
    if _OFF is not None:
        return id(b) + _OFF
    return _BytesAsString(b)


_DEVICE_TYPES: dict = {}


def device_type(t) -> bool:
    """Whether objects of type t may be device arrays
    (__cuda_array_interface__), asked once per type: hasattr on a type that
    lacks the attribute costs a raised AttributeError, more than a small
    read."""
    d = _DEVICE_TYPES.get(t)
    if d is None:
        d = _DEVICE_TYPES[t] = hasattr(t, "__cuda_array_interface__")
    return d


def read(h, addr: int, n: int, offset: int):
    """colio_read through this thread's pack: (rc, nread)."""
    t = args()
    t.h.value, t.a.value, t.n.value, t.o.value = h, addr, n, offset
    rc = t.read(t.h, t.a, t.n, t.o, t.ref)
    return rc, t.out.value


def write(h, addr: int, n: int, offset: int):
    """colio_write_ex through this thread's pack: (rc, nwritten, where the
    bytes went)."""
    t = args()
    t.h.value, t.a.value, t.n.value, t.o.value = h, addr, n, offset
    rc = t.write(t.h, t.a, t.n, t.o, t.ref, t.at_ref)
    return rc, t.out.value, t.at.value


N = None        # colio._native once loaded (the hot paths read it directly)
_tried = False


def native():
    """colio._native from the loaded library, or None where it does not
    load: COLIO_NATIVE=0, not CPython, a free-threaded or trace-refs build
    (another object layout than the one pyfast.c declares), or a library
    without it."""
    global N, _tried
    if _tried:
        return N
    L = _lib.L or _lib.load()
    if (os.environ.get("COLIO_NATIVE", "1") != "0" and sys.implementation.name == "cpython"
            and "t" not in sys.abiflags and "d" not in sys.abiflags):
        # importlib.machinery is part of the interpreter's startup;
        # importlib.util would cost 3 ms of imports (contextlib and more).
        from importlib.machinery import ExtensionFileLoader, ModuleSpec
        try:
            # The path ctypes loaded: dlopen hands back the same library.
            loader = ExtensionFileLoader("colio._native", L.path)
            spec = ModuleSpec("colio._native", loader, origin=L.path)
            m = loader.create_module(spec)
            loader.exec_module(m)
            N = m
        except (ImportError, SystemError, OSError):
            N = None
    _tried = True
    return N
