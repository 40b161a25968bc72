"""S3 sinks: ``colio.sink("s3://bucket/key", **storage_options)``, written
by the engine as a multipart upload (``colio_sink_open_url``) that becomes
the object only when the sink closes.

Storage options are the native S3 source's (``colio._remote``: key, secret,
token, profile, anon, endpoint_url, region, client_kwargs, ...), plus
``part_size`` (bytes, at least 5 MiB; COLIO_S3_PART_SIZE, default 8 MiB)
and ``buffer_size`` (bytes of complete parts held at once;
COLIO_S3_BUFFER_SIZE, default 512 MiB).

What a user can count on:

- ``write_async``'s future completes when its bytes are durable (their
  parts acknowledged by S3). Bytes of a part that is not full yet wait for
  the writes that fill it, or for ``close()``: wait on those futures after
  ``close()``, or not at all (``close()`` raises any failure).
- ``write`` returns once the bytes are copied into their parts, not when
  they are durable: a blocking write that waited for its part could wait
  forever for writes the same thread has not made yet.
- ``close()`` (or leaving a ``with`` block normally) publishes the object.
  An exception in the ``with`` block, ``abort()``, a failed part or a
  garbage-collected sink that was never closed aborts the upload: the
  object keeps its old content or stays absent. A process killed outright
  (SIGKILL) cannot abort: its upload stays open in the bucket until a
  lifecycle rule (AbortIncompleteMultipartUpload) removes it, but the
  object is never half-written.
"""

from __future__ import annotations

import warnings
from ctypes import byref, c_char_p, c_void_p

from . import _remote
from ._errors import InvalidArgumentError, last_error
from ._handle import lib
from ._sink_handle import Sink

_MIN_PART = 5 << 20
_SINK_INTS = ("part_size", "buffer_size")


class S3Sink(Sink):
    """A colio.Sink writing one S3 object with a multipart upload."""

    def write(self, buf, offset: int | None = None) -> int:
        """Copies all of buf into the object's parts at offset (None:
        append) and returns the bytes taken. Durability comes with the
        part's upload: ``close()`` raises if any part failed."""
        fut = self.write_async(buf, offset)
        if fut.done() and fut.exception() is not None:
            raise fut.exception()
        return fut._size

    def abort(self) -> None:
        """Closes the sink without publishing anything: the multipart
        upload is aborted, writes not yet durable fail with
        CancelledError-like ColioError, the object is left as it was.
        Idempotent; after a successful close() it does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        h, self._handle = self._handle, None
        try:
            L = lib()
            rc = L.colio_sink_abort(h)
            if rc:
                raise last_error(rc)
        finally:
            self._after_close()
            self._keep = ()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self):
        # Never publish by accident: a sink nobody closed is given up.
        try:
            if not self._closed and self._handle is not None:
                warnings.warn(f"colio: S3 sink {self.name!r} was never closed; its upload "
                              "was aborted", ResourceWarning, stacklevel=1)
                self.abort()
        except Exception:
            pass

    def __reduce__(self):
        raise TypeError("colio: an S3 sink cannot be pickled: another process would start "
                        "its own upload of the same object and replace this one's")

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        opts = "".join(f" {k}={v!r}" for k, v in _remote.redacted(self._options).items())
        return f"<colio.Sink s3 {self.name!r}{opts} {state}>"


def _sink_int(name, v) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidArgumentError(
            f"colio.sink: storage option {name} must be an integer, not {type(v).__name__}")
    if v < _MIN_PART:
        raise InvalidArgumentError(
            f"colio.sink: storage option {name} must be at least 5 MiB ({_MIN_PART}), got {v}: "
            "S3 refuses smaller parts")
    return str(v)


def open_url(url: str, mode: str, storage_options: dict) -> S3Sink:
    if mode not in ("w", "wb"):
        raise ValueError(f"colio.sink: an s3:// sink is written whole (mode 'w'), not {mode!r}")
    if "\x00" in url:
        raise InvalidArgumentError(
            f"colio.sink: embedded null byte in the URL {_remote.redact_url(url)!r}")
    opts = dict(storage_options)
    pairs = [(k, _sink_int(k, opts.pop(k))) for k in _SINK_INTS if opts.get(k) is not None]
    for k in _SINK_INTS:
        opts.pop(k, None)
    try:
        pairs += _remote.translate(url, opts)
    except _remote.NotUnderstood as e:
        raise InvalidArgumentError(f"colio.sink: storage option {e.name!r}: {e.why}") from None
    secrets = [v for k, v in pairs if k in _remote._SECRET_KEYS]
    L = lib()
    arr = (c_char_p * (len(pairs) + 1))(*[f"{k}={v}".encode() for k, v in pairs], None)
    h = c_void_p()
    rc = L.colio_sink_open_url(url.encode(), arr, 0, byref(h))
    if rc:
        raise _remote._scrub(last_error(rc), secrets)
    k = S3Sink(h.value, "s3", None, name=_remote.redact_url(url))
    k._options = dict(storage_options)
    return k
