"""colio: eager, parallel I/O for Python, over libcolio.so.

    import colio
    with colio.source("data.parquet") as src:          # or "s3://...", "https://..."
        futs = src.read_ranges_async([(0, 4096), (1 << 20, 1 << 20)])   # I/O starts now
        first, second = (f.result() for f in futs)

``import colio`` is cheap: the library is loaded on first use, and numpy,
fsspec and asyncio are imported only by the calls that need them.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = [
    "__version__", "open", "source", "from_fsspec", "from_callable", "from_buffer", "sink",
    "Source", "Sink", "Future", "get_config", "set_config", "stats", "library_version",
    "library_path", "ColioError", "InvalidArgumentError", "ColioIOError", "NotFoundError",
    "ClosedError", "ColioTimeoutError", "ColioCancelledError", "NotSupportedError",
    "CallbackError", "NoSpaceError", "ForkError", "InternalError", "ColioPermissionError",
    "ColioIsADirectoryError", "ColioConnectionError", "ColioImportError", "ArrowData",
]

# name -> module that defines it; imported on first access.
_LAZY = {
    "source": "_open", "from_callable": "_source", "from_buffer": "_source",
    "Source": "_source", "from_fsspec": "_fsspec",
    "sink": "_sink", "Sink": "_sink",
    "Future": "_future",
    "open": "_open",
    "ColioError": "_errors", "InvalidArgumentError": "_errors", "ColioIOError": "_errors",
    "NotFoundError": "_errors", "ClosedError": "_errors", "ColioTimeoutError": "_errors",
    "ColioCancelledError": "_errors", "NotSupportedError": "_errors",
    "CallbackError": "_errors", "NoSpaceError": "_errors", "ForkError": "_errors",
    "InternalError": "_errors", "ColioPermissionError": "_errors",
    "ColioIsADirectoryError": "_errors", "ColioConnectionError": "_errors",
    "ColioImportError": "_errors",
    "ArrowData": "_arrow",
}

_CONFIG_KEYS = ("threads", "task_size", "small_read_threshold", "small_write_threshold",
                "bounce_buffer_size", "python_workers")


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'colio' has no attribute {name!r}")
    # __import__ rather than importlib.import_module: importing the
    # importlib package costs 0.7 ms of the first call.
    value = getattr(__import__("colio." + mod, fromlist=("_",)), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def _loaded():
    from . import _lib
    _lib.check_fork()  # colio_version needs no Go, so the C guard would not say it
    return _lib.L or _lib.load()


def library_version() -> str:
    """The loaded library's version (loads it)."""
    return _loaded().colio_version().decode()


def library_path() -> str:
    """The path of the loaded library (loads it)."""
    return _loaded().path


def get_config() -> dict:
    """The engine settings: threads, task_size, small_read_threshold,
    small_write_threshold, bounce_buffer_size, python_workers (the Python
    threads that run reads of callable and fsspec sources at once)."""
    import ctypes
    from ._errors import last_error
    L = _loaded()
    out = {}
    v = ctypes.c_int64(0)
    for key in _CONFIG_KEYS:
        rc = L.colio_config_get_int(key.encode(), ctypes.byref(v))
        if rc:
            raise last_error(rc)
        out[key] = v.value
    return out


def set_config(**settings) -> None:
    """Changes engine settings at run time, e.g. ``set_config(threads=16)``.
    Values are integers (sizes in bytes: ``task_size=4 << 20``). Unknown
    keys, values that are not integers and out-of-range values raise
    InvalidArgumentError (a ValueError); the keys before a failing one are
    set, the failing one and those after it are not."""
    from ._errors import InvalidArgumentError, last_error
    from . import _lib
    L = _loaded()
    try:
        for key, value in settings.items():
            if key not in _CONFIG_KEYS:
                raise InvalidArgumentError(f"colio.set_config: unknown setting {key!r}; known: "
                                           + ", ".join(_CONFIG_KEYS))
            rc = L.colio_config_set_int(key.encode(), _config_value(key, value))
            if rc:
                err = last_error(rc)
                # The library's "colio: threads=0: must be ..." in this call's name.
                err.message = "colio.set_config: " + err.message.removeprefix("colio: ")
                err.args = (err.message,)
                raise err
    finally:
        _lib.refresh_inline_max(L)


def _config_value(key: str, value) -> int:
    """value as the int64 the library takes, for set_config(key=value)."""
    import operator
    from ._buffers import INT64_MAX
    from ._errors import InvalidArgumentError
    try:
        v = operator.index(value)
    except TypeError:
        hint = (" (size suffixes such as '4M' are for the COLIO_* environment variables; "
                "write 4 << 20)") if isinstance(value, str) else ""
        raise InvalidArgumentError(
            f"colio.set_config: {key}={value!r}: must be an integer{hint}") from None
    if not -INT64_MAX - 1 <= v <= INT64_MAX:
        raise InvalidArgumentError(
            f"colio.set_config: {key}={v} is too large (at most 2**63-1 = {INT64_MAX})")
    return v


def stats() -> dict:
    """The engine counters: ops_submitted, ops_inline, tasks, bytes_read,
    bytes_written, in_flight, peak_in_flight, errors, queued."""
    import ctypes
    from . import _lib
    from ._errors import last_error
    L = _loaded()
    c = _lib.Counters()
    c.struct_size = ctypes.sizeof(c)
    rc = L.colio_stats(ctypes.byref(c))
    if rc:
        raise last_error(rc)
    return {name: getattr(c, name) for name, _ in _lib.Counters._fields_ if name != "struct_size"}


def _at_exit():
    """Ends colio's part of the program before the interpreter finalises.

    Reads that have not started are cancelled; the operations still in
    flight get COLIO_EXIT_TIMEOUT seconds (default 10) in all to end, waited
    on in slices so that Ctrl-C ends the wait; what still runs after that
    is abandoned (its buffers stay allocated until the process ends) and
    named on stderr. Then the library stops calling into Python
    (colio_stop_callbacks): a callback that would start later fails its
    operation instead of entering a finalising interpreter."""
    import sys
    lib = sys.modules.get("colio._lib")
    if lib is None or lib.L is None or lib.forked():
        return  # not loaded, or the parent's operations in a forked child
    # Every colio.Future and batch is registered in _future: where it was
    # never imported there is nothing to drain, and importing it here would
    # bring concurrent.futures and logging (27 ms) to every exit.
    _future = sys.modules.get("colio._future")
    limit = lib.exit_timeout(at_exit=True)
    try:
        try:
            import time
            left = _future.drain(time.monotonic() + limit) if _future is not None else 0
            if left:
                print(f"colio: at exit, {left} operation(s) still running after "
                      f"COLIO_EXIT_TIMEOUT={limit:g} s were abandoned (their buffers stay "
                      "allocated until the process ends)", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            left = sum(1 for f in _future._abandoned if not f.done()) if _future is not None else 0
            print(f"colio: exit interrupted; {left} operation(s) still running were "
                  "abandoned", file=sys.stderr, flush=True)
    finally:
        lib.L.colio_stop_callbacks()
