"""colio.Sink, the handle class: eager writes at offsets or appended.
Opening one (local, memory, void or s3://) is colio._sink's."""

from __future__ import annotations

from ctypes import byref, c_int64, c_void_p

from . import _fastcall as _fast
from . import _future, _lib
from ._buffers import EMPTY_ADDR, INT64_MAX, index, readable
from ._errors import InvalidArgumentError, last_error
from ._handle import Handle, device_module, lib


# Sinks whose small writes the library runs inline (see _lib.inline_write_max).
_INLINE_KINDS = frozenset(("file", "memory", "void"))
# Codes that colio_write_async reports at once rather than through the future.
_RAISE_NOW = frozenset((_lib.EINVAL, _lib.ECLOSED, _lib.EFORK))


class Sink(Handle):
    """A destination for eager writes. ``write_async`` reserves its offset
    at call time (appends in call order), so parallel writes land where a
    serial writer would have put them. Thread-safe."""

    _what, _free = "sink", "colio_sink_free"
    _keep_errors = False
    _positional = False  # an unpickled file sink: explicit offsets only

    def _offset(self, offset):
        if offset is None:
            if self._positional:
                raise InvalidArgumentError(
                    f"colio: {self.name}: this sink was unpickled (reopened as 'r+'), so it "
                    "writes at explicit offsets only: appends from several processes could "
                    "not be ordered and would overwrite each other. Pass offset=")
            return _lib.APPEND
        return index(offset, "offset")

    def _off(self, offset):
        """_offset for the calls of small writes: a plain int in range, or
        an append to a sink that takes appends, without index()'s frame
        and conversions."""
        if offset is None:
            if not self._positional:
                return _lib.APPEND
        elif type(offset) is int and 0 <= offset <= INT64_MAX:
            return offset
        return self._offset(offset)

    def write_async(self, buf, offset: int | None = None) -> "_future.Future":
        """Starts writing all of buf (``nbytes``) at offset (None: append at
        the next reserved offset); the future's result is the number of
        bytes written and its ``offset`` attribute where they went. buf
        stays alive and locked until the future is done: do not change it
        meanwhile."""
        t = type(buf)
        N = _fast.N or _fast.native()
        if N is not None and self.kind in _INLINE_KINDS and not _fast.device_type(t):
            # The library's builtin call (None back: not served here).
            r = N.write(self._h(), buf, self._off(offset), _lib.inline_write_max)
            if r is not None:
                return self._inline_future(r)
        if t is bytes:
            pin, addr, n = buf, (_fast.bytes_addr(buf) if buf else EMPTY_ADDR), len(buf)
        elif _fast.device_type(t) and device_module().is_device(buf):
            return device_module().write_async(self, buf, offset)
        else:
            pin, addr, n = readable(buf, "the data to write")
        off = self._off(offset)
        L = _lib.L or _lib.load()
        F = _future
        if F._to_free:
            F._drain_free(L)
        if 0 < n <= _lib.inline_write_max and self.kind in _INLINE_KINDS:
            # The library would run it inline anyway: the synchronous call
            # (which says where an append went), and a future that is done
            # before anyone can wait (issue 15.3).
            rc, got, at = _fast.write(self._h(), addr, n, off)
            return self._inline_future((rc or got, at))
        h = c_void_p()
        rc = L.colio_write_async(self._h(), addr, n, off, byref(h))
        if rc:
            raise self._fail(rc)
        fut = F.Future()
        fut._pin, fut._addr, fut._size, fut._owner = pin, addr, n, self
        if offset is None:
            o = c_int64(0)
            if L.colio_future_offset(h.value, byref(o)) == 0:
                fut.offset = o.value
        else:
            fut.offset = off
        return F.track(L, fut, h.value)

    def _inline_future(self, r):
        """The completed future of an inline write: r is (bytes written or
        the library's negative code, where they went)."""
        got, at = r
        if got in _RAISE_NOW:
            raise self._fail(got)
        F = _future
        fut = F.Future()
        if got < 0:
            fut._exception = last_error(got)
        else:
            fut.nbytes = fut._result = got
        fut.offset = at
        fut._state = F.FINISHED
        return fut

    def write(self, buf, offset: int | None = None) -> int:
        """Writes all of buf at offset (None: append) and returns the bytes
        written."""
        t = type(buf)
        N = _fast.N or _fast.native()
        if N is not None and not _fast.device_type(t):
            # Any size: this call blocks in the library like the ctypes one.
            r = N.write(self._h(), buf, self._off(offset), INT64_MAX)
            if r is not None:
                if r[0] < 0:
                    raise self._fail(r[0])
                return r[0]
        if t is bytes:
            pin, addr, n = buf, (_fast.bytes_addr(buf) if buf else EMPTY_ADDR), len(buf)
        elif _fast.device_type(t) and device_module().is_device(buf):
            return device_module().write_async(self, buf, offset).result()
        else:
            pin, addr, n = readable(buf, "the data to write")
        off = self._off(offset)
        if _lib.L is None:
            _lib.load()
        rc, got, _ = _fast.write(self._h(), addr, n, off)
        if rc:
            raise self._fail(rc)
        return got

    def flush(self, fsync: bool = False) -> None:
        """Waits for the writes in flight, then flushes (fsync=True: to
        stable storage). Raises the first write error the sink ever had."""
        L = lib()
        rc = L.colio_sink_flush(self._h(), 1 if fsync else 0)
        if rc:
            raise self._fail(rc)

    @property
    def size(self) -> int:
        """The highest end written so far."""
        L = lib()
        out = c_int64(0)
        rc = L.colio_sink_size(self._h(), byref(out))
        if rc:
            raise self._fail(rc)
        return out.value

    def close(self) -> None:
        """Waits for every accepted write, flushes and closes. Raises the
        sink's first write error, if any. Idempotent."""
        Handle.close(self)

    def __reduce__(self):
        if self.kind == "memory":
            raise TypeError("colio: a memory sink cannot be pickled: it writes into this "
                            "process's memory; pickle a file sink instead")
        return self._description
