"""What colio.Source and colio.Sink share: a library handle's life cycle.

A handle is closed once, by close() or when collected; its buffers and
Python objects (``_keep``) are let go then. In a forked child the handle
belongs to the parent's library, so it is forgotten, never freed.
"""

from __future__ import annotations

import _thread

from . import _lib
from ._errors import ClosedError, last_error


def lib():
    """The loaded library (loads it on first use)."""
    L = _lib.L
    return L if L is not None else _lib.load()


def device_module():
    """colio._device, imported on the first device array (see its doc)."""
    from . import _device
    return _device


class Handle:
    _what = "handle"  # "source" or "sink", for messages
    _free = ""        # the colio_*_free function that closes the handle

    def __init__(self, handle, kind: str, description, *, keep=(), name: str = ""):
        self._handle = handle
        self.kind = kind                 # "file", "memory", "callable", "fsspec", ...
        self._description = description  # what pickling rebuilds it from
        self._keep = keep                # objects the library points into
        self.name = name
        self._closed = False
        self._lock = _thread.allocate_lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def _h(self):
        if self._closed:
            raise ClosedError(
                f"colio: I/O operation on a closed {self._what} ({self.name or self.kind})")
        return self._handle

    def _fail(self, rc: int):
        """The exception for a failed call on this handle. A call that
        raced close() on another thread reached the library after the
        handle was freed, and the library says "not a valid handle"
        (EINVAL); for the caller that is a closed handle, not a bad
        argument."""
        if rc == _lib.EINVAL and self._closed:
            return ClosedError(
                f"colio: I/O operation on a closed {self._what} ({self.name or self.kind})")
        return last_error(rc)

    def _forget(self) -> None:
        """In a forked child: drops what points at the parent's library."""
        self._handle = None

    def _after_close(self) -> None:
        """Releases what the subclass holds besides the handle."""

    def close(self) -> None:
        if _lib.forked():
            if not self._closed:
                self._closed = True
                self._forget()
                raise _lib.fork_error(f"colio.{type(self).__name__}.close")
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
        h, self._handle = self._handle, None
        try:
            if h is not None and _lib.L is not None:
                rc = getattr(_lib.L, self._free)(h)
                if rc:
                    raise last_error(rc)
        finally:
            self._after_close()
            self._keep = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if _lib.forked():  # inherited from the parent: nothing to free here
                self._closed = True
                return
            if not self._closed and self._handle is not None and _lib.L is not None:
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<colio.{type(self).__name__} {self.kind} {self.name!r} {state}>"
