"""The bytes an fsspec read returns, checked and copied into colio's
buffer: shared by the worker path (colio._fsspec) and the event-loop path
(colio._fsspec_loop)."""

from __future__ import annotations

import ctypes

from ._buffers import view_of
from ._errors import ColioIOError


def too_long(path, got, asked, offset):
    return ColioIOError(
        f"colio: {path}: asked for {asked} bytes at offset {offset} and got {got} "
        "(does the server ignore Range?)")


def copy(addr: int, data, k: int) -> None:
    if type(data) is bytes:
        ctypes.memmove(addr, data, k)  # releases the GIL while copying
    else:
        view_of(addr, k)[:] = memoryview(data).cast("B")[:k]
