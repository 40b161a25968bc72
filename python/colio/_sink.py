"""colio.sink: opens a sink (a local file, a buffer, the void, or an
s3:// URL through colio._sink_s3). The Sink class is colio._sink_handle's,
below both this module and colio._sink_s3."""

from __future__ import annotations

import os
from ctypes import byref, c_void_p

from . import _lib
from ._buffers import no_nul, writable
from ._errors import last_error
from ._handle import lib
from ._sink_handle import Sink

_MODES = {
    "w": _lib.SINK_CREATE | _lib.SINK_TRUNCATE,
    "wb": _lib.SINK_CREATE | _lib.SINK_TRUNCATE,
    "a": _lib.SINK_CREATE | _lib.SINK_APPEND,
    "ab": _lib.SINK_CREATE | _lib.SINK_APPEND,
    "r+": 0,
    "r+b": 0,
    "rb+": 0,
}


def _open_file(path: str, flags: int, mode_for_pickle: str) -> Sink:
    no_nul(path)
    L = lib()
    h = c_void_p()
    rc = L.colio_sink_open_file(os.fsencode(path), flags, byref(h))
    if rc:
        raise last_error(rc)
    # Unpickled elsewhere, a file sink reopens as "r+" (see _reopen).
    return Sink(h.value, "file", (_reopen, (path,)), name=path)


def _reopen(path: str) -> Sink:
    """An unpickled file sink: the file reopened as "r+" (never created,
    never truncated), writing at explicit offsets only."""
    k = _open_file(path, 0, "r+")
    k._positional = True
    return k


def sink(target, mode: str = "w", **storage_options) -> Sink:
    """Opens a sink.

    target: a local path (mode "w" creates or truncates, "a" appends after
    the current end, "r+" writes into an existing file), an ``s3://bucket/key``
    URL (a multipart upload published by close() and aborted by abort() or
    an exception in a with block; storage_options as for colio.source, plus
    part_size and buffer_size: see colio._sink_s3), a writable buffer (a
    memory sink that never writes past its end), or None (a sink that
    discards everything, for measurements).
    """
    if isinstance(target, str) and target[:5].lower() == "s3://":
        from ._sink_s3 import open_url
        return open_url(target, mode, storage_options)
    if storage_options:
        raise TypeError(f"colio.sink: storage options ({', '.join(storage_options)}) apply to "
                        "s3:// URLs only")
    if target is None:
        L = lib()
        h = c_void_p()
        rc = L.colio_sink_void(byref(h))
        if rc:
            raise last_error(rc)
        return Sink(h.value, "void", (sink, (None,)), name="void")
    if isinstance(target, (str, bytes, os.PathLike)):
        path = os.fsdecode(target)
        if not isinstance(mode, str) or mode not in _MODES:
            raise ValueError(f"colio.sink: mode must be 'w', 'a' or 'r+', not {mode!r}")
        return _open_file(path, _MODES[mode], mode)
    pin, addr, n = writable(target, "the sink buffer")
    L = lib()
    h = c_void_p()
    rc = L.colio_sink_from_memory(addr, n, byref(h))
    if rc:
        raise last_error(rc)
    return Sink(h.value, "memory", None, keep=(pin, target), name=f"{type(target).__name__}[{n}]")
