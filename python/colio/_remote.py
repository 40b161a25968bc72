"""Native remote sources: ``http://``, ``https://`` and ``s3://`` URLs read
by the Go engine (``colio_source_open_url``), with no Python on the data
path.

``colio.source(url, backend=..., **storage_options)`` and ``colio.open``
come here first. ``backend="auto"`` (the default) takes the native source
when the URL is http, https or s3 and every storage option is one it
understands, and fsspec otherwise; ``"native"`` insists (an option it does
not understand raises, naming it); ``"fsspec"`` skips this module.

Options are accepted in the spellings s3fs and fsspec's HTTP file system
users already pass, plus colio's own keys (docs/remote.md):

===============================================  ==============================
storage option                                   contract key (colio.h)
===============================================  ==============================
``key``, ``secret``, ``token``, ``profile``      the same (s3)
``anon``, ``requester_pays`` (bool)              ``anon=1``, ``requester_pays=1``
``endpoint_url``, ``region``, ``path_style``     the same (s3)
``client_kwargs={"endpoint_url", "region_name"}``  ``endpoint_url``, ``region``
``config_kwargs={"s3": {"addressing_style"}}``   ``path_style``
``headers={"Name": "value"}``                    ``header.Name=value`` (http/https)
``max_in_flight``, ``request_size``, ``retries``,  the same (integers)
``size``, ``prefetch``
``connect_timeout``, ``first_byte_timeout``,     the same (seconds)
``idle_timeout``, ``request_timeout``
``ca_bundle``                                    the same (a PEM path)
``etag``                                         the same (``Source.etag`` of an
                                                 earlier open)
===============================================  ==============================

A ``None`` value (s3fs's default for ``key=None``) is no option at all.
Secrets (``key``, ``secret``, ``token``, header values, a URL's password
and query string) never appear in ``repr``, in ``storage_options`` or in a message
from here. Pickling carries the URL and the options as given, secrets
included, so that a Dask worker opens the same object (as s3fs file
systems pickle their credentials).

This module knows no Source: the source class (``RemoteSource``) and its
opener (``open_native``, which pickles) are colio._source's, which
imports this module, never the reverse.
"""

from __future__ import annotations

import os
import re
from ctypes import byref, c_char_p, c_void_p

from ._errors import ColioError, InvalidArgumentError, last_error
from ._handle import lib

SCHEMES = ("http", "https", "s3")
BACKENDS = ("auto", "native", "fsspec")
REDACTED = "***"

_INTS = ("max_in_flight", "request_size", "retries", "size", "prefetch", "prefetch_tail")
_SECONDS = ("connect_timeout", "first_byte_timeout", "idle_timeout", "request_timeout")
_FLAGS = ("anon", "requester_pays", "path_style")
_S3_STRINGS = ("key", "secret", "token", "profile", "endpoint_url", "region")
_S3_ONLY = frozenset(_S3_STRINGS + _FLAGS)
_SECRET_KEYS = frozenset(("key", "secret", "token"))  # as the library treats them
# What each integer may be: at least this.
_INT_MIN = {"max_in_flight": 1, "request_size": 1, "retries": 1, "size": 0, "prefetch": 0,
            "prefetch_tail": 0}
# fsspec's own instance options, which say how the file system object is
# cached, not how the bytes travel: the native source has nothing to do
# with them (colio:: passes its target's options through unchanged).
_FSSPEC_INSTANCE = frozenset(("skip_instance_cache", "use_listings_cache",
                              "listings_expiry_time", "max_paths", "asynchronous", "loop"))
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token


class NotUnderstood(Exception):
    """An option the native source does not take: with backend="auto" the
    URL goes to fsspec; with backend="native" it becomes an error."""

    def __init__(self, name: str, why: str):
        super().__init__(name, why)
        self.name, self.why = name, why


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def check_backend(backend, where: str) -> str:
    if backend not in BACKENDS:
        raise InvalidArgumentError(
            f"{where}: backend must be 'auto', 'native' or 'fsspec', not {backend!r}")
    return backend


def redact_url(url: str) -> str:
    """url as it may be shown: no password, and no query values (a
    presigned URL carries its signature and credential there)."""
    url = re.sub(r"(://)[^/@?#]*@", r"\1" + REDACTED + "@", url, count=1)
    base, q, query = url.partition("?")
    if not q:
        return url
    query, h, frag = query.partition("#")
    parts = [p.partition("=")[0] + ("=" + REDACTED if "=" in p else "") for p in query.split("&")]
    return base + "?" + "&".join(parts) + (h + frag)


# ---- option translation ---------------------------------------------------

def _flag(name, v) -> str:
    if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
        return "1" if v else "0"
    if isinstance(v, str) and v.lower() in ("1", "0", "true", "false", "yes", "no"):
        return "1" if v.lower() in ("1", "true", "yes") else "0"
    raise InvalidArgumentError(f"colio: storage option {name} must be True or False, not {v!r}")


def _int(name, v) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidArgumentError(
            f"colio: storage option {name} must be an integer, not {type(v).__name__}")
    if v < _INT_MIN[name] or v > (1 << 63) - 1:
        raise InvalidArgumentError(
            f"colio: storage option {name} must be at least {_INT_MIN[name]} and fit in 64 "
            f"bits (got {v})")
    return str(v)


def _seconds(name, v) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e9:
        raise InvalidArgumentError(
            f"colio: storage option {name} must be a positive number of seconds, not {v!r}")
    return repr(float(v)) if isinstance(v, float) else str(v)


def _string(name, v) -> str:
    if isinstance(v, os.PathLike):
        v = os.fspath(v)
    if not isinstance(v, str):
        raise InvalidArgumentError(
            f"colio: storage option {name} must be a string, not {type(v).__name__}")
    if "\x00" in v or "\n" in v or "\r" in v:
        shown = REDACTED if name in _SECRET_KEYS else repr(v)
        raise InvalidArgumentError(
            f"colio: storage option {name} must not hold a NUL or a line break (got {shown})")
    return v


def _client_kwargs(v, out: list) -> None:
    if not isinstance(v, dict):
        raise NotUnderstood("client_kwargs", "it is not a dict")
    for k, x in v.items():
        if x is None:
            continue
        if k == "endpoint_url":
            out.append(("endpoint_url", _string("client_kwargs['endpoint_url']", x)))
        elif k == "region_name":
            out.append(("region", _string("client_kwargs['region_name']", x)))
        else:
            raise NotUnderstood(f"client_kwargs[{k!r}]", "the native S3 source takes only "
                                "endpoint_url and region_name there")


def _config_kwargs(v, out: list) -> None:
    """botocore's Config(s3={"addressing_style": ...}), as s3fs takes it."""
    s3 = v.get("s3") if isinstance(v, dict) and set(v) <= {"s3"} else None
    if not isinstance(s3, dict) or set(s3) - {"addressing_style"}:
        raise NotUnderstood("config_kwargs", "the native S3 source takes only "
                            "{'s3': {'addressing_style': ...}} there")
    style = s3.get("addressing_style")
    if style in (None, "auto"):
        return
    if style not in ("path", "virtual"):
        raise InvalidArgumentError(
            "colio: storage option config_kwargs['s3']['addressing_style'] must be 'path', "
            f"'virtual' or 'auto', not {style!r}")
    out.append(("path_style", "1" if style == "path" else "0"))


def _headers(v, out: list) -> None:
    if not isinstance(v, dict):
        raise NotUnderstood("headers", "it is not a dict")
    for name, x in v.items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise InvalidArgumentError(f"colio: storage option headers: {name!r} is not a "
                                       "valid HTTP header name")
        if not isinstance(x, str) or any(c in x for c in "\x00\r\n"):
            raise InvalidArgumentError(f"colio: storage option headers[{name!r}] must be a "
                                       "string without NUL or line breaks")
        out.append((f"header.{name}", x))


def translate(url: str, storage_options: dict) -> "list[tuple[str, str]]":
    """The contract's (key, value) pairs for url and storage_options.
    Raises NotUnderstood for an option the native source does not take
    (for this URL's scheme), InvalidArgumentError for a bad value of one
    it does."""
    scheme = scheme_of(url)
    if scheme not in SCHEMES:
        raise NotUnderstood("url", f"the native sources read {', '.join(SCHEMES)} URLs, "
                            f"not {scheme or 'local'!r} ones")
    s3 = scheme == "s3"
    out: list = []
    for name, v in storage_options.items():
        if v is None or name in _FSSPEC_INSTANCE:
            continue
        if name in _S3_ONLY and not s3:
            raise NotUnderstood(name, f"it applies to s3:// URLs, not {scheme}://")
        if name == "headers" and s3:
            raise NotUnderstood(name, "it applies to http:// and https:// URLs")
        if name in _INTS:
            out.append((name, _int(name, v)))
        elif name in _SECONDS:
            out.append((name, _seconds(name, v)))
        elif name in _FLAGS:
            f = _flag(name, v)
            if f == "1" or name == "path_style":  # anon=0 is the default; say nothing
                out.append((name, f))
        elif name in _S3_STRINGS or name in ("ca_bundle", "etag"):
            out.append((name, _string(name, v)))
        elif name == "client_kwargs" and s3:
            _client_kwargs(v, out)
        elif name == "config_kwargs" and s3:
            _config_kwargs(v, out)
        elif name == "headers":
            _headers(v, out)
        else:
            raise NotUnderstood(name, "the native remote source does not know it")
    return out


def redacted(storage_options: dict) -> dict:
    """storage_options as they may be shown."""
    out = {}
    for k, v in storage_options.items():
        if k in _SECRET_KEYS and v is not None:
            v = REDACTED
        elif k == "headers" and isinstance(v, dict):
            v = {h: REDACTED for h in v}
        out[k] = v
    return out


# ---- opening -------------------------------------------------------------

def _scrub(err: ColioError, secrets) -> ColioError:
    """The library promises messages without secrets; this makes sure."""
    msg = err.message
    for s in secrets:
        if s and len(s) >= 4 and s in msg:
            msg = msg.replace(s, REDACTED)
    if msg != err.message:
        err.message = msg
        if isinstance(err, OSError):
            err.strerror = msg
    return err


def open_handle(url: str, storage_options: dict) -> int:
    """The library's handle of a native remote source (colio._source wraps
    it in a RemoteSource); raises NotUnderstood or a ColioError."""
    pairs = translate(url, storage_options)
    if "\x00" in url:
        raise InvalidArgumentError(f"colio: embedded null byte in the URL {redact_url(url)!r}")
    secrets = [v for k, v in pairs if k in _SECRET_KEYS or k.startswith("header.")]
    L = lib()
    opts = (c_char_p * (len(pairs) + 1))(*[f"{k}={v}".encode() for k, v in pairs], None)
    h = c_void_p()
    rc = L.colio_source_open_url(url.encode(), opts, byref(h))
    if rc:
        raise _scrub(last_error(rc), secrets + [url.partition("?")[2]])
    return h.value


def choose(url: str, backend: str, storage_options: dict, where: str, open_native):
    """The native source for url, or None where fsspec should read it.
    open_native(url, storage_options) opens it (colio._source.open_native:
    passed in, so that this module needs no Source)."""
    if backend == "fsspec":
        return None
    if "::" in url or scheme_of(url) not in SCHEMES:
        if backend == "native":
            raise InvalidArgumentError(
                f"{where}: backend='native' reads {', '.join(SCHEMES)} URLs, not "
                f"{redact_url(url)!r}; use backend='fsspec'")
        return None
    try:
        return open_native(url, storage_options)
    except NotUnderstood as e:
        if backend == "native":
            raise InvalidArgumentError(
                f"{where}: backend='native' does not understand {e.name} ({e.why}); pass "
                "backend='fsspec' (or 'auto', which falls back to fsspec) to use it") from None
        return None
