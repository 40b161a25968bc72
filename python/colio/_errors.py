"""colio's exceptions and the mapping from C status codes to them.

Every failure raises a :class:`ColioError` subclass carrying ``code`` (the
negative ``COLIO_E*`` status), ``message`` (the library's message) and
``errno`` (the OS errno, 0 if none). Each subclass also derives from the
built-in exception users expect, so ``except FileNotFoundError`` or
``except ValueError`` keep working.
"""

from __future__ import annotations

import errno as _errno
import io

from . import _codes  # the status codes only: this module loads nothing

# The loaded library, for the messages of failed calls; colio._lib.load
# sets it (this module is below _lib and never imports it).
library = None


def _rebuild(cls, message, code, errno):
    return cls(message, code=code, errno=errno)


class ColioError(Exception):
    """Base of every colio error."""

    default_code = _codes.EINTERNAL
    default_errno = 0

    def __init__(self, message: str = "", *, code: int | None = None, errno: int = 0):
        errno = errno or self.default_errno
        if isinstance(self, OSError):
            if errno:
                OSError.__init__(self, errno, message)
            else:
                OSError.__init__(self, message)
        else:
            Exception.__init__(self, message)
            self.errno = errno
        self.message = message
        self.code = self.default_code if code is None else code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code}, errno={self.errno})"

    def __reduce__(self):
        return _rebuild, (type(self), self.message, self.code, self.errno)


class InvalidArgumentError(ColioError, ValueError):
    """COLIO_EINVAL: a bad argument (negative offset, read past the end,
    unknown setting, freed handle...)."""
    default_code = _codes.EINVAL


class ColioIOError(ColioError, OSError):
    """COLIO_EIO: the OS reported an I/O error; ``errno`` says which."""
    default_code = _codes.EIO
    default_errno = _errno.EIO


class NotFoundError(ColioError, FileNotFoundError):
    """COLIO_ENOTFOUND: no such file."""
    default_code = _codes.ENOTFOUND
    default_errno = _errno.ENOENT


class ColioPermissionError(ColioError, PermissionError):
    default_code = _codes.EIO
    default_errno = _errno.EACCES


class ColioIsADirectoryError(ColioError, IsADirectoryError):
    """A directory where a file was expected (a source or a sink)."""
    default_code = _codes.EINVAL
    default_errno = _errno.EISDIR


class ColioConnectionError(ColioError, ConnectionError):
    """A remote end point could not be reached (refused, unreachable, reset):
    COLIO_EIO with that errno from a native remote source, or an fsspec
    back end's error at open (then the original is its ``__cause__``)."""
    default_code = _codes.EIO


class ColioImportError(ColioError, ImportError):
    """A URL's protocol needs a package that is not installed (s3fs,
    gcsfs...); the original ImportError is its ``__cause__``."""
    default_code = _codes.ENOTSUP


class ClosedError(ColioError, ValueError):
    """COLIO_ECLOSED: the source or sink was closed (like Python's
    "I/O operation on closed file", a ValueError)."""
    default_code = _codes.ECLOSED


class ColioTimeoutError(ColioError, TimeoutError):
    """COLIO_ETIMEDOUT: a wait timed out; the operation goes on."""
    default_code = _codes.ETIMEDOUT
    default_errno = _errno.ETIMEDOUT


class NotSupportedError(ColioError, io.UnsupportedOperation):
    """COLIO_ENOTSUP: not supported by this build or handle."""
    default_code = _codes.ENOTSUP


class CallbackError(ColioError):
    """COLIO_ECALLBACK: a user callback reported failure (a Python exception
    raised in a callback is re-raised as itself instead)."""
    default_code = _codes.ECALLBACK


class NoSpaceError(ColioError, OSError):
    """COLIO_ENOSPC: disk full, or a memory sink is full."""
    default_code = _codes.ENOSPC
    default_errno = _errno.ENOSPC


class ColioMemoryError(NoSpaceError, MemoryError):
    """COLIO_ENOSPC with errno ENOMEM: colio could not allocate memory (an
    Arrow buffer for a huge read); also a MemoryError, as Python's own
    allocation failures are."""
    default_errno = _errno.ENOMEM


class ForkError(ColioError, RuntimeError):
    """COLIO_EFORK: colio was called in a child process after fork()."""
    default_code = _codes.EFORK


# What a Python user can do about COLIO_EFORK; ends every ForkError message.
FORK_HINT = ("Start worker processes with the 'spawn' or 'forkserver' start method "
             "(multiprocessing.get_context('spawn'), multiprocessing.set_start_method("
             "'forkserver'); Dask's distributed workers use 'spawn' by default), or fork before "
             "the first colio call (import colio alone loads nothing).")


class InternalError(ColioError, RuntimeError):
    """COLIO_EINTERNAL: a bug in colio; the message says where."""
    default_code = _codes.EINTERNAL


_BY_CODE = {
    _codes.EINVAL: InvalidArgumentError,
    _codes.EIO: ColioIOError,
    _codes.ENOTFOUND: NotFoundError,
    _codes.ECLOSED: ClosedError,
    _codes.ETIMEDOUT: ColioTimeoutError,
    _codes.ECANCELLED: None,  # ColioCancelledError, made on first use
    _codes.ENOTSUP: NotSupportedError,
    _codes.ECALLBACK: CallbackError,
    _codes.ENOSPC: NoSpaceError,
    _codes.EFORK: ForkError,
    _codes.EINTERNAL: InternalError,
}

# An I/O failure whose errno has a more precise built-in exception.
_BY_ERRNO = {
    _errno.ENOENT: NotFoundError,
    _errno.EACCES: ColioPermissionError,
    _errno.EPERM: ColioPermissionError,
    _errno.EISDIR: ColioIsADirectoryError,
    _errno.ENOSPC: NoSpaceError,
    _errno.ETIMEDOUT: ColioTimeoutError,
    # remote sources (colio_source_open_url): the end point was not reached
    _errno.ECONNREFUSED: ColioConnectionError,
    _errno.ECONNRESET: ColioConnectionError,
    _errno.ECONNABORTED: ColioConnectionError,
    _errno.EHOSTUNREACH: ColioConnectionError,
    _errno.ENETUNREACH: ColioConnectionError,
}


def python_message(message: str) -> str:
    """The library's message as a Python user should read it: "colio_read:
    read at ..." names a C function they never called, so the entry
    point's name becomes "colio:"."""
    if message.startswith("colio_"):
        name, sep, rest = message.partition(": ")
        if sep and name.isidentifier():
            return "colio: " + rest
    return message


def make_error(code: int, message: str | bytes | None, errnum: int = 0) -> ColioError:
    """The exception for a C status code."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    message = python_message(message) if message else f"colio: error {code}"
    cls = _BY_CODE.get(code, InternalError)
    if cls is None:
        cls = _cancelled_class()
    if code in (_codes.EIO, _codes.ECALLBACK) and errnum in _BY_ERRNO:
        cls = _BY_ERRNO[errnum]
    elif code == _codes.ENOSPC and errnum == _errno.ENOMEM:
        cls = ColioMemoryError
    elif errnum == _errno.EISDIR:  # the library calls a directory an invalid argument
        cls = ColioIsADirectoryError
    return cls(message, code=code, errno=errnum)


def last_error(code: int, lib=None) -> ColioError:
    """The exception for a failed call made just now on this thread (lib:
    the library it was made through, if not the loaded one)."""
    L = lib if lib is not None else library
    if code == _codes.EFORK:  # the library's message, plus what to do from Python
        msg = (L.colio_last_error() or b"colio: called after fork()").decode("utf-8", "replace")
        msg = python_message(msg)
        return make_error(code, f"{msg.rstrip('.')}. {FORK_HINT}", L.colio_last_errno())
    return make_error(code, L.colio_last_error(), L.colio_last_errno())


def check(code: int) -> None:
    if code != 0:
        raise last_error(code)


_cancelled = None


def _cancelled_class():
    """ColioCancelledError subclasses concurrent.futures.CancelledError;
    it is made on first use so that a plain read does not import
    concurrent.futures (and logging)."""
    global _cancelled
    if _cancelled is None:
        from concurrent.futures import CancelledError

        class ColioCancelledError(ColioError, CancelledError):
            """COLIO_ECANCELLED: the operation was cancelled."""
            default_code = _codes.ECANCELLED

        ColioCancelledError.__module__ = __name__
        ColioCancelledError.__qualname__ = "ColioCancelledError"
        _cancelled = ColioCancelledError
    return _cancelled


def __getattr__(name):
    if name == "ColioCancelledError":
        return _cancelled_class()
    raise AttributeError(name)
