"""colio.Source and the ways to make one."""

from __future__ import annotations

import ctypes
import errno as _errno
import os
import _thread
import _weakref  # not weakref: its import costs 2 ms of the first read
from ctypes import addressof, byref, c_char, c_int, c_int64, c_size_t, c_void_p

from . import _fastcall as _fast
from . import _lib
from ._buffers import EMPTY_ADDR as _EMPTY_ADDR
from ._buffers import INT64_MAX, index, new_bytes, no_nul, readable, view_of, writable
from ._errors import ColioError, InvalidArgumentError, last_error
from ._handle import Handle, device_module, lib

# Sources whose small reads the library runs inline (see _lib.inline_read_max).
_INLINE_KINDS = frozenset(("file", "memory"))
# Codes that colio_read_async reports at once rather than through the future.
_RAISE_NOW = frozenset((_lib.EINVAL, _lib.ECLOSED, _lib.EFORK))

# Reads larger than this are clamped to the source's size before their
# result is allocated, so read(0, 1 << 62) on a small file returns the file
# instead of raising MemoryError. Smaller ones skip the size query.
_CLAMP_FROM = 1 << 16
_COALESCE = 1  # COLIO_READV_COALESCE

# Per-thread scratch for synchronous calls (see Source.read_into).
_tls = _thread._local()


_future = None  # colio._future, imported on the first asynchronous call


def _fut():
    global _future
    if _future is None:
        from . import _future as f
        _future = f
    return _future


_batch = None  # colio._batch, imported on the first read_ranges


def _bat():
    global _batch
    if _batch is None:
        from . import _batch as b
        _batch = b
    return _batch


class Source(Handle):
    """A random-access source of bytes. Every read starts its I/O when
    called; ``*_async`` calls return a :class:`colio.Future` at once.

    Thread-safe: any number of threads may read from one source at once.
    """

    _what, _free = "source", "colio_source_free"

    def __init__(self, handle, kind: str, description, *, keep=(), name: str = ""):
        super().__init__(handle, kind, description, keep=keep, name=name)
        self._errors: dict = {}     # buffer address -> exception from a callback
        # Synchronous reads of sources with latency wait in slices (Ctrl-C);
        # only small reads of file and memory sources take one blocking call.
        self._slow = kind not in _INLINE_KINDS
        self._loop = None           # fsspec async fan-out (see _fsspec.py)

    # -- basic properties ---------------------------------------------------

    @property
    def size(self) -> int:
        """The source's current size in bytes."""
        L = lib()
        out = c_int64(0)
        rc = L.colio_source_size(self._h(), byref(out))
        if rc:
            raise self._error(rc, 0, 0)
        return out.value

    def __len__(self) -> int:
        return self.size

    # -- callback errors ----------------------------------------------------

    def _record_callback_error(self, addr: int, exc: BaseException) -> None:
        with self._lock:
            self._errors[addr] = exc

    def _take_callback_error(self, addr: int, size: int):
        """The Python exception raised by a callback while filling
        [addr, addr+size), if any (the earliest in the range)."""
        if not self._errors:
            return None
        with self._lock:
            hits = [a for a in self._errors if addr <= a < addr + max(size, 1)]
            if not hits:
                return None
            exc = self._errors.pop(min(hits))
            for a in hits:
                self._errors.pop(a, None)
            return exc

    def _error(self, rc: int, addr: int, size: int):
        err = self._fail(rc)
        if rc == _lib.ECALLBACK or rc == _lib.EIO:
            exc = self._take_callback_error(addr, size)
            if exc is not None:
                return exc
        return err

    # -- reads ----------------------------------------------------------------

    def read_into(self, buf, offset: int = 0, size: int | None = None) -> int:
        """Fills buf (``size`` bytes, default ``buf.nbytes``) from offset and
        returns the number of bytes read: fewer only at the end of the
        source, 0 at the end."""
        # The common small case first: a plain offset, a file or memory
        # source (issue 15.3: nothing but the call), through the library's
        # builtin call where it loaded (None back: not served here).
        N = _fast.N or _fast.native()
        if (N is not None and size is None and type(offset) is int and not self._slow
                and not _fast.device_type(type(buf))):
            h = self._handle
            if h is not None and not self._closed:
                got = N.read_into(h, buf, offset, _lib.inline_read_max)
                if got is not None:
                    if got < 0:
                        raise self._error(got, 0, 0)
                    return got
        if (type(buf) is bytearray and size is None and type(offset) is int
                and not self._slow and 0 <= offset <= INT64_MAX):
            n = len(buf)
            if 0 < n <= _lib.inline_read_max:
                pin = c_char.from_buffer(buf)
                h = self._handle
                if h is None or self._closed:
                    h = self._h()  # raises ClosedError
                addr = addressof(pin)
                rc, got = _fast.read(h, addr, n, offset)
                if rc:
                    raise self._error(rc, addr, n)
                return got
        if _fast.device_type(type(buf)) and device_module().is_device(buf):
            return device_module().read_async(self, buf, offset, size).result()
        pin, addr, n = _destination(buf, size)
        if type(offset) is not int or not 0 <= offset <= INT64_MAX:  # the common case skips the call
            offset = index(offset, "offset")
        if self._loop is not None:
            return self._loop.read_into(self, pin, addr, n, offset)
        L = _lib.L or _lib.load()
        if self._slow or n > _lib.inline_read_max:
            return self._read_waiting(L, pin, addr, n, offset)
        # One out-parameter per thread, made once: a c_int64 and its byref
        # cost about as much as the read they report on.
        try:
            out, out_ref = _tls.out
        except AttributeError:
            out = c_int64(0)
            out_ref = byref(out)
            _tls.out = (out, out_ref)
        h = self._handle
        if h is None or self._closed:
            h = self._h()  # raises ClosedError
        rc = L.colio_read(h, addr, n, offset, out_ref)
        if rc:
            raise self._error(rc, addr, n)
        return out.value

    def _read_waiting(self, L, pin, addr: int, n: int, offset: int) -> int:
        """A synchronous read that may take a while (a source with latency,
        a large read): started as an asynchronous one and waited on in
        slices, so Ctrl-C interrupts it like Future.result(); the parts not
        started are then cancelled, and the buffer stays pinned until the
        library is done with it (see _future.wait_sync)."""
        F = _future or _fut()  # imported before the read starts: see wait_sync
        handle = self._h()
        rc, got = F.wait_sync(L, lambda out: L.colio_read_async(handle, addr, n, offset, out),
                              self, pin, addr, n)
        if rc:
            raise self._error(rc, addr, n)
        return got

    def read_async(self, buf, offset: int = 0, size: int | None = None) -> "_future.Future":
        """Starts filling buf from offset; the future's result is the number
        of bytes read. buf stays alive and locked until the future is done."""
        if _fast.device_type(type(buf)) and device_module().is_device(buf):
            return device_module().read_async(self, buf, offset, size)
        N = _fast.N or _fast.native()
        if N is not None and size is None and type(offset) is int and not self._slow:
            got = N.read_into(self._h(), buf, offset, _lib.inline_read_max)
            if got is not None:  # served inline, as the library would have
                return self._inline_future(got, 0, 0)
        pin, addr, n = _destination(buf, size)
        offset = index(offset, "offset")
        if self._loop is not None:
            return self._loop.submit(self, [(pin, addr, n, offset, None)])[0]
        L = _lib.L or _lib.load()
        F = _future or _fut()
        if n <= _lib.inline_read_max and self.kind in _INLINE_KINDS:
            return self._read_inline(F, L, pin, addr, n, offset)
        if self._work_read is not None:  # a queued source: its workers complete the future
            return self._work_read(self, L, pin, addr, n, offset)
        if F._to_free:
            F._drain_free(L)
        h = c_void_p()
        rc = L.colio_read_async(self._h(), addr, n, offset, byref(h))
        if rc:
            raise self._error(rc, addr, n)
        fut = F.Future()
        fut._pin = pin
        fut._addr, fut._size = addr, n
        fut._owner = self  # a dropped source must not close under its reads
        return F.track(L, fut, h.value)

    def _read_inline(self, F, L, pin, addr, n, offset):
        """read_async of a small read that the library runs inline: made
        with the synchronous call, returned as a completed future. Argument
        errors raise, as colio_read_async's do; I/O errors go into the
        future, as they would from an inline C future."""
        rc, got = _fast.read(self._h(), addr, n, offset)
        return self._inline_future(rc or got, addr, n)

    def _inline_future(self, got, addr, n):
        """The completed future of an inline read: got is the bytes read
        or the library's (negative) code."""
        if got in _RAISE_NOW:
            raise self._error(got, addr, n)
        F = _future or _fut()
        fut = F.Future()  # done before anyone can wait: no Condition
        if got < 0:
            fut._exception = self._error(got, addr, n)
        else:
            fut.nbytes = fut._result = got
        fut._state = F.FINISHED
        return fut

    def read(self, offset: int = 0, size: int | None = None) -> bytes:
        """Reads size bytes (None: to the end) from offset into new bytes."""
        offset = index(offset, "offset")
        if size is None:
            n = max(self.size - offset, 0)
        else:
            n = index(size, "size")
            if n > _CLAMP_FROM:  # allocate what exists, not what was asked
                n = min(n, max(self.size - offset, 0))
        if self._loop is not None:
            return self._loop.read_bytes(self, offset, n)
        L = _lib.L or _lib.load()
        if self._slow or n > _lib.inline_read_max:
            b, addr = new_bytes(n)  # uninitialised: large reads skip a zero-filling pass
            if n == 0:
                addr = _EMPTY_ADDR
            # b is the pin: if interrupted, it is never handed out.
            got = self._read_waiting(L, b, addr, n, offset)
            return b if got == n else b[:got]
        N = _fast.N or _fast.native()
        if N is not None and n:
            b = N.read(self._h(), offset, n)
            if b is not None:
                if type(b) is int:
                    raise self._error(b, 0, n)
                return b
        b, addr = _fast.fresh_bytes(n)
        if n == 0:
            addr = _EMPTY_ADDR
        rc, got = _fast.read(self._h(), addr, n, offset)
        if rc:
            raise self._error(rc, addr, n)
        return b if got == n else b[:got]

    def _ranges(self, ranges):
        try:
            items = list(ranges)
        except TypeError:
            raise TypeError("colio: ranges must be an iterable of (offset, size) pairs") from None
        out = []
        for i, r in enumerate(items):
            try:
                off, size = r
            except (TypeError, ValueError):
                raise TypeError(f"colio: range {i} must be an (offset, size) pair, not {r!r}") from None
            out.append((index(off, f"range {i} offset"), index(size, f"range {i} size")))
        if any(s > _CLAMP_FROM for _, s in out):  # allocate what exists, not what was asked
            end = self.size
            out = [(o, min(s, max(end - o, 0))) for o, s in out]
        return out

    def read_ranges_async(self, ranges) -> "list[_future.Future]":
        """Starts one read per (offset, size) range, all at once, and returns
        one future per range; each result is a read-only memoryview of the
        bytes read (shorter than size only at the end of the source).

        Each range gets its own fresh, uninitialised bytes object, filled in
        place by colio's workers (no zero-filling pass on the caller)."""
        caps = self._captures
        if caps is None and self._loop is None:  # one call per batch (issue 15)
            return (_batch or _bat()).read_ranges_async(self, ranges)
        rs = self._ranges(ranges)
        items = []
        if caps is not None and rs and self._loop is None:
            region = caps.new(sum(s for _, s in rs))
            pos = region.base
            for off, s in rs:
                items.append((region, pos, s, off, _capture_result(region, pos)))
                pos += s
            return self._submit_ranges(items)
        for off, s in rs:
            b, addr = new_bytes(s)
            items.append((b, addr if s else _EMPTY_ADDR, s, off, _result_of(b, s)))
        if self._loop is not None:
            return self._loop.submit(self, items)
        return self._submit_ranges(items)

    def _submit_ranges(self, items):
        n = len(items)
        L = _lib.L or _lib.load()
        F = _future or _fut()
        if F._to_free:
            F._drain_free(L)
        if n == 0:
            self._h()
            return []
        arr = (_lib.Range * n)()
        for i, (_, addr, size, off, _w) in enumerate(items):
            r = arr[i]
            r.offset, r.size, r.buf = off, size, addr
        hs = (c_void_p * n)()
        # Coalesced (issue 16) where the engine may read a span into a
        # scratch buffer: not for Python callbacks, whose errors and
        # zero-copy captures are keyed by the caller's buffer address.
        flags = 0 if self._keep_errors or self._captures is not None else _COALESCE
        rc = L.colio_readv_async_ex(self._h(), arr, n, flags, hs)
        if rc:
            raise self._fail(rc)
        futs = []
        owner = self
        track = F.track
        Fut = F.Future
        for i, (pin, addr, size, off, wrap) in enumerate(items):
            f = Fut()
            f._pin, f._addr, f._size, f._wrap, f._owner = pin, addr, size, wrap, owner
            futs.append(track(L, f, hs[i]))
        return futs

    def set_coalesce(self, hole: int | None = None, max_size: int | None = None) -> None:
        """Fixes how read_ranges merges this source's ranges: gaps of at most
        ``hole`` bytes are read through (and dropped) instead of making
        another request, up to requests of ``max_size`` bytes. None returns
        either to the engine's setting (``coalesce_hole``, -1 by default:
        0 for local files and memory, derived from the latency measured
        for remote sources; ``coalesce_max``, 32 MiB)."""
        h = -1 if hole is None else index(hole, "hole")
        m = -1 if max_size is None else index(max_size, "max_size")
        if h < 0 and hole is not None or m < 1 and max_size is not None:
            raise InvalidArgumentError(
                "colio: set_coalesce: hole must be >= 0 and max_size >= 1 (None: the engine's setting)")
        L = _lib.L or _lib.load()
        rc = L.colio_source_set_coalesce(self._h(), h, m)
        if rc:
            raise self._fail(rc)

    @property
    def coalescing(self) -> "tuple[int, int]":
        """(hole, max_size) that the next read_ranges of this source uses."""
        L = _lib.L or _lib.load()
        h, m = c_int64(0), c_int64(0)
        rc = L.colio_source_get_coalesce(self._h(), byref(h), byref(m))
        if rc:
            raise self._fail(rc)
        return h.value, m.value

    def stream(self, offset: int = 0, buffer_size: int | None = None, depth: int | None = None):
        """A buffered binary file object (``io.BufferedReader``) that reads
        this source sequentially from offset, with ``depth`` buffers of
        ``buffer_size`` bytes read ahead by colio's workers (defaults:
        4 x 1 MiB). Closing it leaves the source open."""
        from . import _stream
        return _stream.stream(self, offset, buffer_size, depth)

    def read_ranges(self, ranges) -> "list[memoryview]":
        """read_ranges_async, then waits for every range (in parallel)."""
        if self._loop is not None:  # an interrupted wait cancels the coroutines
            return self._loop.results(self.read_ranges_async(ranges))
        if self._captures is None:  # one call, one wait (issue 15)
            return (_batch or _bat()).read_ranges(self, ranges)
        # Ctrl-C or a failed range: the ranges not started are cancelled.
        futs = self.read_ranges_async(ranges)
        try:
            return [f.result() for f in futs]
        except BaseException:
            for f in futs:
                f.cancel()
            raise

    def read_ranges_arrow(self, ranges) -> "colio.ArrowData":
        """Reads every (offset, size) range at once, in parallel, into one
        C buffer, and returns it as an Arrow large_binary array (one element
        per range; shorter at the end of the source) that pyarrow, nanoarrow
        and polars take without a copy. See colio._arrow."""
        from . import _arrow
        return _arrow.read_ranges_arrow(self, ranges)

    def read_arrow(self, offset: int = 0, size: int | None = None) -> "colio.ArrowData":
        """Reads size bytes (None: to the end) from offset into one C buffer,
        as an Arrow uint8 array; its ``buffer`` gives the bytes to
        memoryview and numpy.frombuffer without a copy. See colio._arrow."""
        from . import _arrow
        return _arrow.read_arrow(self, offset, size)

    # -- lifetime -------------------------------------------------------------

    _keep_errors = False  # True for sources backed by Python callbacks

    @property
    def backend(self) -> str:
        """"fsspec" where fsspec makes the requests, else "native"."""
        return "fsspec" if self.kind == "fsspec" else "native"
    _captures = None      # fsspec sources: zero-copy results (see _fsspec.py)

    def close(self) -> None:
        """Closes the source: reads that have not started fail with
        ClosedError, running ones finish first. Idempotent."""
        Handle.close(self)

    def _forget(self) -> None:
        self._handle = self._loop = None

    _work_key = None      # queued sources: their ctx for colio._workers
    _work_read = None     # queued sources: colio._work_futures.read_async

    def _after_close(self) -> None:
        if self._loop is not None:
            self._loop.close()
        if self._work_key is not None:
            from . import _workers
            _workers.unregister(self._work_key)

    def __reduce__(self):
        d = self._description
        return d() if callable(d) else d


def _destination(buf, size):
    """(pin, address, nbytes) of a read's destination: all of buf, or its
    first ``size`` bytes."""
    pin, addr, n = writable(buf)
    if size is not None:
        size = index(size, "size")
        if size > n:
            raise InvalidArgumentError(
                f"colio: the buffer is too small: {n} bytes for a read of {size}")
        n = size
    return pin, addr, n


def _capture_result(region, addr):
    return lambda n: region.result(addr, n)


def _result_of(b, size):
    def result(n):
        mv = memoryview(b)
        return mv if n == size else mv[:n]
    return result


# ---- constructors -------------------------------------------------------------

def _open_file(path: str) -> Source:
    no_nul(path)
    L = lib()
    h = c_void_p()
    rc = L.colio_source_open_file(os.fsencode(path), byref(h))
    if rc:
        raise last_error(rc)
    return Source(h.value, "file", (_open_file, (path,)), name=path)


class RemoteSource(Source):
    """A colio.Source over an http, https or s3 object, read by the engine
    (``backend`` is "native"; see colio._remote)."""

    @property
    def url(self) -> str:
        """The URL, without password or query values."""
        return self.name

    @property
    def etag(self) -> str:
        """The object's ETag as the server sent it (``W/`` included for a
        weak one), from the open or the first answer; "" without one. Open
        it again with ``etag=`` (and ``size=``: no request at open) and no
        read returns another version's bytes: they fail with ESTALE."""
        return self._etag()[0]

    @property
    def etag_stable(self) -> bool:
        """Whether a cache may key on ``etag``: it is strong, and the answer
        that gave it said the object was last modified at least a second
        before (a server whose ETag comes from the modification time in
        seconds can keep it across another write within that second)."""
        return self._etag()[1]

    def _etag(self):
        L = lib()
        n, stable = c_size_t(), c_int()
        buf = ctypes.create_string_buffer(256)
        while True:
            rc = L.colio_source_etag(self._h(), buf, len(buf), byref(n), byref(stable))
            if rc == 0:
                return buf.value.decode("latin-1"), bool(stable.value)
            if n.value < len(buf):
                raise last_error(rc)
            buf = ctypes.create_string_buffer(n.value + 1)

    @property
    def storage_options(self) -> dict:
        """The options it was opened with, secrets shown as ``***``."""
        from ._remote import redacted
        return redacted(self._options)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        opts = "".join(f" {k}={v!r}" for k, v in self.storage_options.items())
        return f"<colio.Source {self.kind} {self.name!r} backend=native{opts} {state}>"


def open_native(url: str, storage_options: dict) -> RemoteSource:
    """A native remote source (colio._remote opens the handle); raises
    NotUnderstood or a ColioError. Pickled sources reopen through it."""
    from . import _remote
    h = _remote.open_handle(url, storage_options)
    src = RemoteSource(h, _remote.scheme_of(url), (open_native, (url, dict(storage_options))),
                       name=_remote.redact_url(url))
    src._options = dict(storage_options)
    return src


def from_buffer(obj) -> Source:
    """A source over the bytes of any object with the buffer protocol (not
    copied: the object is kept alive and locked until the source closes)."""
    pin, addr, n = readable(obj, "the source buffer")
    L = lib()
    h = c_void_p()
    rc = L.colio_source_from_memory(addr, n, byref(h))
    if rc:
        raise last_error(rc)
    def describe():
        # bytes are immutable, so a copy is the same source; any other
        # buffer is read in place, and a copy would not follow its changes.
        if type(obj) is not bytes:
            raise TypeError(
                f"colio: a memory source over a {type(obj).__name__} cannot be pickled: it "
                "reads this process's memory in place, and a copy in another process would "
                "not follow changes to it. Pickle colio.from_buffer(bytes(buf)) (the copy "
                "travels) or a source that reopens by path or URL instead.")
        return _from_bytes, (obj,)

    return Source(h.value, "memory", describe, keep=(pin, obj), name=f"{type(obj).__name__}[{n}]")


def _from_bytes(b):
    return from_buffer(b)


class _ReadCallback:
    """Runs a Python read function for one queued part (on a worker thread
    of colio._workers) or one C callback (fast sources, on colio's
    threads), and never lets an exception escape: it is recorded for the
    reader, keyed by the buffer address, and the part fails."""

    def __init__(self, fn, what, read_into=None):
        self.fn = fn              # fn(addr, size, offset) -> int
        self.what = what
        self.source_ref = None    # weakref to the Source, for errors
        self.read_into = read_into  # from_callable's read_into(view, offset), for fill_view

    def __call__(self, ctx, buf, size, offset):
        if _lib.get_native_id() not in _lib._adopted:
            _lib.adopt_thread()  # keep this library thread's Python state (see _lib)
        return self.run(buf, size, offset)

    def run(self, buf, size, offset):
        try:
            return self.fn(buf, size, offset)
        except BaseException as e:  # noqa: BLE001 - must not escape to C
            return self._failed(buf, e)

    def fill(self, buf, size, offset):
        """A queued part: calls fn until the part is full or the source
        ends (fn may fill less than asked, as read(2) does)."""
        done = 0
        fn = self.fn
        try:
            while done < size:
                got = fn(buf + done, size - done, offset + done)
                if got <= 0:
                    break
                done += got
        except BaseException as e:  # noqa: BLE001 - must not escape to C
            return self._failed(buf + done, e)
        return done

    def fill_view(self, mv, buf, size, offset):
        """A queued part of a from_callable source, its memory already a
        writable view (mv, at address buf): read_into is called without
        fn's view making, checks and frames, a third of a worker's own
        time per 64 KiB part (colio._workers)."""
        read_into = self.read_into
        done = 0
        try:
            try:
                while True:
                    got = read_into(mv if not done else mv[done:], offset + done)
                    if type(got) is not int:
                        got = _filled(got)
                    if got < 0 or got > size - done:
                        raise ValueError(f"colio: read_into returned {got} for a request of {size - done} bytes")
                    if not got:
                        break
                    done += got
                    if done >= size:
                        break
            finally:
                try:
                    mv.release()
                except BufferError:  # the callable kept an export; it must not use it
                    pass
        except BaseException as e:  # noqa: BLE001 - must not escape to C
            return self._failed(buf + done, e)
        return done

    def _failed(self, buf, e):
        src = self.source_ref() if self.source_ref is not None else None
        if src is not None:
            src._record_callback_error(buf, e)
        en = getattr(e, "errno", None)
        if isinstance(e, OSError) and isinstance(en, int) and en > 0:
            return -en
        return -_errno.EIO


def callback_source(fn, size: int, *, concurrent: bool, fast: bool, kind: str,
                    description, name: str, keep=(), read_into=None) -> Source:
    """A Source whose reads call fn(buf_address, size, offset) -> bytes
    filled. Reads are queued for colio's Python worker threads
    (colio._workers): no Go thread calls into Python. A ``fast`` source
    answers in microseconds, so its small reads run inline on the caller;
    it keeps a C callback, called on the reading thread or colio's."""
    size = index(size, "size")
    L = lib()
    cb = _ReadCallback(fn, name, read_into)
    if not fast:
        return _queued_source(L, cb, size, concurrent, kind, description, name, keep)
    cfn = _lib.READ_FN(cb)
    s = _lib.SourceCallbacks()
    s.struct_size = ctypes.sizeof(_lib.SourceCallbacks)
    s.ctx = None
    s.read = cfn
    s.release = _lib.RELEASE_FN()  # NULL
    s.flags = (_lib.CALLBACK_CONCURRENT if concurrent else 0) | (_lib.CALLBACK_FAST if fast else 0)
    h = c_void_p()
    rc = L.colio_source_from_callbacks(byref(s), size, byref(h))
    if rc:
        raise last_error(rc)
    src = Source(h.value, kind, description, keep=(cb, cfn) + tuple(keep), name=name)
    src._keep_errors = True
    cb.source_ref = _weakref.ref(src)
    return src


def _queued_source(L, cb, size, concurrent, kind, description, name, keep) -> Source:
    from . import _workers
    if cb.read_into is not None:
        key = _workers.register(cb.fill_view, views=True)
    else:
        key = _workers.register(cb.fill)
    h = c_void_p()
    rc = L.colio_source_from_queue(size, _lib.CALLBACK_CONCURRENT if concurrent else 0, key, byref(h))
    if rc:
        _workers.unregister(key)
        raise last_error(rc)
    src = Source(h.value, kind, description, keep=(cb,) + tuple(keep), name=name)
    src._keep_errors = True
    src._work_key = key
    src._work_read = _workers._work_futures.read_async
    cb.source_ref = _weakref.ref(src)
    _workers.start(L)
    return src


def from_callable(read_into, size: int, concurrent: bool = True, *, fast: bool = False) -> Source:
    """A source of ``size`` bytes whose reads call ``read_into(buf, offset)``
    on colio's workers: buf is a writable memoryview to fill from offset;
    return the bytes filled (fewer is fine, 0 means the end). An exception
    it raises fails the read with that exception. ``concurrent=False``
    makes colio serialise the calls; ``fast=True`` declares it answers in
    microseconds, so small reads may run inline on the caller."""
    if not callable(read_into):
        raise TypeError(f"colio.from_callable: read_into must be callable, not {type(read_into).__name__}")

    def fn(addr, n, offset):
        mv = view_of(addr, n)
        try:
            got = read_into(mv, offset)
        finally:
            try:
                mv.release()
            except BufferError:  # the callable kept an export; it must not use it
                pass
        got = _filled(got)
        if got < 0 or got > n:
            raise ValueError(f"colio: read_into returned {got} for a request of {n} bytes")
        return got

    name = getattr(read_into, "__qualname__", None) or type(read_into).__name__

    def describe():
        _check_travels(read_into, name)
        return _from_callable_args, (read_into, size, concurrent, fast)

    return callback_source(fn, size, concurrent=concurrent, fast=fast, kind="callable",
                           description=describe, name=name, read_into=read_into)


def _filled(got) -> int:
    """read_into's answer as an int (numpy integers and the like)."""
    try:
        return int(got)
    except (TypeError, ValueError):
        raise TypeError(f"colio: read_into returned {got!r}, expected the number of bytes filled") from None


def _check_travels(fn, name) -> None:
    """A callable source travels only with its function: refuse clearly,
    at pickling time, one that neither pickle nor cloudpickle (Dask's) can
    carry, instead of a pickling error about some inner object."""
    import pickle
    try:
        pickle.dumps(fn)
        return
    except Exception as e:  # noqa: BLE001 - any failure means "cannot travel"
        first = e
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    if cloudpickle is not None:
        try:
            cloudpickle.dumps(fn)
            return
        except Exception:  # noqa: BLE001
            pass
    raise TypeError(
        f"colio: a callable source cannot be pickled: its read function {name!r} cannot "
        f"travel to another process ({type(first).__name__}: {first}). Pickle a source "
        "that reopens by path or URL (colio.source, colio.from_fsspec), or make the read "
        "function picklable (a module-level function or a picklable object)") from first


def _from_callable_args(fn, size, concurrent, fast):
    return from_callable(fn, size, concurrent, fast=fast)

