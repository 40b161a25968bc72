"""What can go wrong when a source or sink is opened, said as colio errors.

Opening a URL runs fsspec and its back ends, which raise their own
exceptions: botocore's NoCredentialsError and EndpointConnectionError,
aiohttp's ClientConnectorError, fsspec's bare ValueError for an unknown
protocol, and often a FileNotFoundError that only wraps the real cause (a
refused connection, an HTTP 403). Users catch colio's exceptions and the
built-in ones, so :func:`open_error` turns each into the colio error that is
also the built-in exception they would expect, with the original chained
as ``__cause__``:

=====================================  ======================================
the cause                              raised as
=====================================  ======================================
refused, unreachable, reset, any       ``ColioConnectionError``
"connection" error of a back end       (a ``ConnectionError``)
missing or rejected credentials,       ``ColioPermissionError``
HTTP 401/403, PermissionError          (a ``PermissionError``)
HTTP 404/410, FileNotFoundError        ``NotFoundError`` (``FileNotFoundError``)
IsADirectoryError                      ``ColioIsADirectoryError``
TimeoutError                           ``ColioTimeoutError`` (``TimeoutError``)
other OSError                          ``ColioIOError`` (``OSError``, same errno)
ValueError (unknown protocol...)       ``InvalidArgumentError`` (``ValueError``)
ImportError (s3fs not installed...)    ``ColioImportError`` (``ImportError``)
anything else but TypeError            ``ColioIOError``
=====================================  ======================================

A TypeError (a storage option the file system does not take) is left as
it is, as ``open()`` leaves its own.
"""

from __future__ import annotations

import errno as _errno
import re

from . import _errors as E
from ._buffers import no_nul  # noqa: F401 - re-exported for _fsspec

_CONNECTION_ERRNOS = frozenset((
    _errno.ECONNREFUSED, _errno.ECONNRESET, _errno.ECONNABORTED, _errno.EHOSTUNREACH,
    _errno.ENETUNREACH, _errno.EHOSTDOWN, _errno.ENETDOWN, _errno.EPIPE))

# Class names, anywhere in an exception's MRO, that mean a connection
# failure or a credential problem in back ends colio does not import
# (botocore, aiohttp, google-auth, azure): matched by name so that none of
# them has to be importable.
_CONNECTION_NAMES = re.compile(r"Connect(ion)?(Error|TimeoutError)$|^ClientConnectorError$")
_CREDENTIAL_NAMES = re.compile(r"Credential|Authenticat|Unauthori[sz]ed|AccessDenied")


def _redact(url: str) -> str:
    """The URL without a password (never in a message)."""
    return re.sub(r"(://)[^/@]*@", r"\1***@", url)


def _chain(exc: BaseException):
    """exc, then what caused it, outermost first."""
    seen = set()
    while exc is not None and id(exc) not in seen and len(seen) < 16:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _names(exc) -> "list[str]":
    return [c.__name__ for c in type(exc).__mro__]


def _status(exc):
    """The HTTP status an exception carries (aiohttp, requests), or None."""
    st = getattr(exc, "status", None)
    if st is None:
        st = getattr(getattr(exc, "response", None), "status_code", None)
    return st if isinstance(st, int) and 100 <= st < 600 else None


def _specific(exc):
    """The colio class for an error that says what went wrong by itself
    (a connection, credentials, an HTTP status), or None."""
    names = _names(exc)
    en = getattr(exc, "errno", None)
    if (isinstance(exc, ConnectionError) or (isinstance(en, int) and en in _CONNECTION_ERRNOS)
            or any(_CONNECTION_NAMES.search(n) for n in names)):
        return E.ColioConnectionError
    if isinstance(exc, PermissionError) or any(_CREDENTIAL_NAMES.search(n) for n in names):
        return E.ColioPermissionError
    if isinstance(exc, IsADirectoryError):
        return E.ColioIsADirectoryError
    st = _status(exc)
    if st in (401, 403):
        return E.ColioPermissionError
    if st in (404, 410):
        return E.NotFoundError
    return None


def _generic(exc):
    if isinstance(exc, FileNotFoundError):
        return E.NotFoundError
    if isinstance(exc, TimeoutError):
        return E.ColioTimeoutError
    if isinstance(exc, OSError):
        return E._BY_ERRNO.get(exc.errno, E.ColioIOError)
    if isinstance(exc, ValueError):
        return E.InvalidArgumentError
    if isinstance(exc, ImportError):
        return E.ColioImportError
    return E.ColioIOError


def open_error(exc: BaseException, what: str) -> E.ColioError:
    """The colio error for exc, raised while opening ``what`` (a path or
    URL); raise it ``from exc``."""
    if isinstance(exc, E.ColioError):
        return exc
    what = _redact(what)
    cls, why = None, exc
    for e in _chain(exc):
        cls = _specific(e)
        if cls is not None:
            why = e
            break
    if cls is None:
        cls = _generic(exc)
    detail = str(why).strip()
    if not detail or detail.rstrip("/") in (what.rstrip("/"), what.split("://", 1)[-1]):
        detail = {E.NotFoundError: "not found", E.ColioPermissionError: "permission denied",
                  E.ColioConnectionError: "cannot connect"}.get(cls, "failed")
    st = _status(why)
    if st is not None and str(st) not in detail:
        detail = f"HTTP {st}: {detail}"
    en = getattr(why, "errno", None)
    en = en if isinstance(en, int) and en > 0 else 0
    err = cls(f"colio: cannot open {what!r}: {detail} ({type(why).__name__})", errno=en)
    if isinstance(err, OSError):
        err.filename = what
    return err
