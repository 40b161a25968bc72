"""Loading libcolio.so and the ctypes declaration of every C function.

This is the only module that names C functions. Each entry of ``FUNCTIONS``
mirrors one prototype of ``include/colio.h``; ``tests/python/test_header.py``
parses the header and checks that every declared function is here with the
same argument and return types (and that nothing here is missing from it).

The library is loaded lazily, on the first call that needs it, so that
``import colio`` stays cheap. Lookup order:

1. ``COLIO_LIBRARY`` (a path to the shared library), if set;
2. the package folder (``colio/libcolio.so``, put there by ``pip install``);
   a CUDA build (``colio/libcolio_cuda.so``) is preferred only when the
   package holds one, ``COLIO_CUDA`` is not ``0`` and a ctypes probe shows
   that ``libcuda.so.1`` loads and ``cuInit(0)`` finds a device;
3. the repository's ``build/lib/libcolio.so`` (development checkouts).

Only one library is ever loaded in a process, and it is never unloaded
(the Go runtime cannot be).
"""

from __future__ import annotations

import ctypes
import os
import _thread  # not threading: its import costs 4 ms of the first read (functools, collections)
from ctypes import (POINTER, Structure, c_char_p, c_int, c_int64, c_size_t,
                    c_uint32, c_void_p)

from . import _errors
# The status codes live in a leaf module shared with _errors; here too, as
# the rest of the package reads them (_lib.EINVAL...).
from ._codes import (ECALLBACK, ECANCELLED, ECLOSED, EFORK, EINTERNAL, EINVAL,  # noqa: F401
                     EIO, ENOSPC, ENOTFOUND, ENOTSUP, ETIMEDOUT, OK)

# ---- constants (mirroring colio.h) -----------------------------------------

WAIT_FOREVER = -1
APPEND = -1

CALLBACK_CONCURRENT = 1
CALLBACK_FAST = 2

SINK_CREATE = 1
SINK_TRUNCATE = 2
SINK_APPEND = 4

STREAM_NONE = 0
STREAM_LEGACY = 1
STREAM_PER_THREAD = 2

# ---- types --------------------------------------------------------------------

# Opaque handles are tokens, passed around as c_void_p (an int or None).
handle_p = c_void_p


class Counters(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("ops_submitted", c_int64),
        ("ops_inline", c_int64),
        ("tasks", c_int64),
        ("bytes_read", c_int64),
        ("bytes_written", c_int64),
        ("in_flight", c_int64),
        ("peak_in_flight", c_int64),
        ("errors", c_int64),
        ("queued", c_int64),
        # device transfers (0 in the CPU build)
        ("device_requests", c_int64),
        ("device_stream_syncs", c_int64),
        ("device_event_waits", c_int64),
        ("device_bytes_to_device", c_int64),
        ("device_bytes_from_device", c_int64),
        ("device_pinned_bytes", c_int64),
    ]


READ_FN = ctypes.CFUNCTYPE(c_int64, c_void_p, c_void_p, c_int64, c_int64)
WRITE_FN = ctypes.CFUNCTYPE(c_int64, c_void_p, c_void_p, c_int64, c_int64)
FLUSH_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_int)
RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p)
FUTURE_CALLBACK = ctypes.CFUNCTYPE(None, c_void_p, handle_p, c_int, c_int64)


class SourceCallbacks(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("ctx", c_void_p),
        ("read", READ_FN),
        ("release", RELEASE_FN),
        ("flags", c_uint32),
    ]


class SinkCallbacks(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("ctx", c_void_p),
        ("write", WRITE_FN),
        ("flush", FLUSH_FN),
        ("release", RELEASE_FN),
        ("flags", c_uint32),
        ("append_start", c_int64),
    ]


class Range(Structure):
    _fields_ = [
        ("offset", c_int64),
        ("size", c_int64),
        ("buf", c_void_p),
    ]


class Work(Structure):  # a queued part for a Python worker (colio._workers)
    _fields_ = [
        ("ctx", c_void_p),
        ("buf", c_void_p),
        ("size", c_int64),
        ("offset", c_int64),
        ("token", c_int64),
        ("out", c_int64),
    ]


class WorkNote(Structure):  # the end of a tagged read, for a Python worker (colio._work_futures)
    _fields_ = [
        ("tag", ctypes.c_uint64),
        ("future", c_void_p),
        ("nbytes", c_int64),
        ("status", c_int),
    ]


class CqEntry(Structure):  # one completed range of a batch (colio._batch)
    _fields_ = [
        ("ctx", ctypes.c_uint64),
        ("nbytes", c_int64),
        ("status", c_int),
    ]


# The Arrow C Data Interface structs (colio.h declares them as the Arrow
# specification does). Used by colio._arrow.
class ArrowSchema(Structure):
    pass


ARROW_SCHEMA_RELEASE = ctypes.CFUNCTYPE(None, POINTER(ArrowSchema))
ArrowSchema._fields_ = [
    ("format", c_char_p),
    ("name", c_char_p),
    ("metadata", c_char_p),
    ("flags", c_int64),
    ("n_children", c_int64),
    ("children", POINTER(POINTER(ArrowSchema))),
    ("dictionary", POINTER(ArrowSchema)),
    ("release", ARROW_SCHEMA_RELEASE),
    ("private_data", c_void_p),
]


class ArrowArray(Structure):
    pass


ARROW_ARRAY_RELEASE = ctypes.CFUNCTYPE(None, POINTER(ArrowArray))
ArrowArray._fields_ = [
    ("length", c_int64),
    ("null_count", c_int64),
    ("offset", c_int64),
    ("n_buffers", c_int64),
    ("n_children", c_int64),
    ("buffers", POINTER(c_void_p)),
    ("children", POINTER(POINTER(ArrowArray))),
    ("dictionary", POINTER(ArrowArray)),
    ("release", ARROW_ARRAY_RELEASE),
    ("private_data", c_void_p),
]


# Struct layouts, checked against the header by the tests.
STRUCTS = {
    "colio_counters": Counters,
    "colio_source_callbacks": SourceCallbacks,
    "colio_sink_callbacks": SinkCallbacks,
    "colio_range": Range,
    "colio_cq_entry": CqEntry,
    "colio_work": Work,
    "colio_work_note": WorkNote,
    "ArrowSchema": ArrowSchema,
    "ArrowArray": ArrowArray,
}

# Function-pointer typedefs of the header, checked by the tests too.
CALLBACK_TYPES = {"colio_future_callback": FUTURE_CALLBACK}

# ---- every function of colio.h: name -> (restype, argtypes) ----------------

_p_handle = POINTER(handle_p)
_p_i64 = POINTER(c_int64)
_p_int = POINTER(c_int)

FUNCTIONS = {
    # library
    "colio_version": (c_char_p, []),
    "colio_last_error": (c_char_p, []),
    "colio_last_errno": (c_int, []),
    "colio_config_set_int": (c_int, [c_char_p, c_int64]),
    "colio_config_get_int": (c_int, [c_char_p, _p_i64]),
    "colio_stats": (c_int, [POINTER(Counters)]),
    "colio_stop_callbacks": (c_int, []),
    # sources
    "colio_source_open_file": (c_int, [c_char_p, _p_handle]),
    "colio_source_from_memory": (c_int, [c_void_p, c_int64, _p_handle]),
    "colio_source_from_callbacks": (c_int, [POINTER(SourceCallbacks), c_int64, _p_handle]),
    "colio_source_from_queue": (c_int, [c_int64, c_uint32, c_void_p, _p_handle]),
    "colio_work_take": (c_int, [c_int64, POINTER(Work)]),
    "colio_work_done": (c_int, [c_int64, c_int64]),
    "colio_work_next": (c_int, [c_int64, c_int64, c_int64, POINTER(Work)]),
    "colio_work_step": (c_int, [c_int64, c_int64, c_int64, POINTER(Work), POINTER(WorkNote),
                                c_int64, _p_i64]),
    "colio_read_async_tagged": (c_int, [handle_p, c_void_p, c_int64, c_int64, ctypes.c_uint64,
                                        _p_handle]),
    "colio_work_wait": (c_int, [c_int64]),
    "colio_source_open_url": (c_int, [c_char_p, POINTER(c_char_p), _p_handle]),
    "colio_source_size": (c_int, [handle_p, _p_i64]),
    "colio_source_etag": (c_int, [handle_p, c_char_p, c_size_t, POINTER(c_size_t), _p_int]),
    "colio_source_free": (c_int, [handle_p]),
    # reads
    "colio_read": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_i64]),
    "colio_read_async": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_handle]),
    "colio_readv_async": (c_int, [handle_p, POINTER(Range), c_int64, _p_handle]),
    "colio_readv_async_ex": (c_int, [handle_p, POINTER(Range), c_int64, c_uint32, _p_handle]),
    "colio_source_set_coalesce": (c_int, [handle_p, c_int64, c_int64]),
    "colio_source_get_coalesce": (c_int, [handle_p, _p_i64, _p_i64]),
    # batches and completion queues (issue 15)
    "colio_readv": (c_int, [handle_p, POINTER(Range), c_int64, c_uint32, _p_i64, _p_int]),
    "colio_cq_new": (c_int, [_p_handle]),
    "colio_cq_wait": (c_int, [handle_p, POINTER(CqEntry), c_int64, c_int64, _p_i64]),
    "colio_cq_free": (c_int, [handle_p]),
    "colio_readv_batch": (c_int, [handle_p, POINTER(Range), c_int64, c_uint32, _p_i64, _p_int,
                                  handle_p, ctypes.c_uint64, _p_handle]),
    "colio_readv_packed": (c_int, [handle_p, _p_i64, c_int64, c_uint32, c_void_p, c_int64, _p_i64,
                                   _p_int, handle_p, ctypes.c_uint64, _p_handle]),
    "colio_future_wait_part": (c_int, [handle_p, c_int64, c_int64, _p_i64]),
    "colio_future_cancel_part": (c_int, [handle_p, c_int64, _p_int]),
    "colio_future_error_part": (c_int, [handle_p, c_int64, POINTER(c_char_p), _p_int]),
    # whole remote objects (colio._fetch)
    "colio_fetch_urls": (c_int, [POINTER(c_char_p), c_int64, POINTER(c_char_p), handle_p,
                                 ctypes.c_uint64, _p_handle]),
    "colio_fetch_copy": (c_int, [handle_p, c_int64, c_void_p, c_int64, _p_i64]),
    # Arrow C Data Interface
    "colio_read_ranges_arrow": (c_int, [handle_p, POINTER(Range), c_int64, POINTER(ArrowArray),
                                        POINTER(ArrowSchema)]),
    "colio_read_arrow_buffer": (c_int, [handle_p, c_int64, c_int64, POINTER(ArrowArray),
                                        POINTER(ArrowSchema)]),
    "colio_arrow_array_ref": (c_int, [POINTER(ArrowArray), POINTER(ArrowArray),
                                      POINTER(ArrowSchema)]),
    # sinks
    "colio_sink_open_file": (c_int, [c_char_p, c_int, _p_handle]),
    "colio_sink_from_memory": (c_int, [c_void_p, c_int64, _p_handle]),
    "colio_sink_void": (c_int, [_p_handle]),
    "colio_sink_from_callbacks": (c_int, [POINTER(SinkCallbacks), _p_handle]),
    "colio_sink_flush": (c_int, [handle_p, c_int]),
    "colio_sink_size": (c_int, [handle_p, _p_i64]),
    "colio_sink_free": (c_int, [handle_p]),
    "colio_sink_open_url": (c_int, [c_char_p, POINTER(c_char_p), c_int, _p_handle]),
    "colio_sink_abort": (c_int, [handle_p]),
    # writes
    "colio_write": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_i64]),
    "colio_write_ex": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_i64, _p_i64]),
    "colio_write_async": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_handle]),
    "colio_writev_async": (c_int, [handle_p, POINTER(Range), c_int64, _p_handle]),
    # futures
    "colio_future_wait": (c_int, [handle_p, c_int64, _p_i64]),
    "colio_future_done": (c_int, [handle_p]),
    "colio_future_cancel": (c_int, [handle_p, _p_int]),
    "colio_future_on_done": (c_int, [handle_p, FUTURE_CALLBACK, c_void_p]),
    "colio_future_error": (c_int, [handle_p, POINTER(c_char_p), _p_int]),
    "colio_future_offset": (c_int, [handle_p, _p_i64]),
    "colio_future_free": (c_int, [handle_p]),
    # device memory (CUDA build; COLIO_ENOTSUP in the CPU build)
    "colio_has_cuda": (c_int, []),
    "colio_read_device_async": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_handle]),
    "colio_read_device_async_stream": (c_int, [handle_p, c_void_p, c_int64, c_int64, c_size_t,
                                               _p_handle]),
    "colio_write_device_async": (c_int, [handle_p, c_void_p, c_int64, c_int64, _p_handle]),
    "colio_write_device_async_stream": (c_int, [handle_p, c_void_p, c_int64, c_int64, c_size_t,
                                                _p_handle]),
    # streams
    "colio_stream_open": (c_int, [handle_p, c_int64, c_int64, c_int64, _p_handle]),
    "colio_stream_read": (c_int, [handle_p, c_void_p, c_int64, _p_i64]),
    "colio_stream_seek": (c_int, [handle_p, c_int64, c_int, _p_i64]),
    "colio_stream_tell": (c_int, [handle_p, _p_i64]),
    "colio_stream_free": (c_int, [handle_p]),
}


class Library:
    """The loaded library: one attribute per C function, plus ``path``."""

    def __init__(self, dll: ctypes.CDLL, path: str):
        self.dll = dll
        self.path = path
        missing = []
        for name, (restype, argtypes) in FUNCTIONS.items():
            try:
                fn = getattr(dll, name)
            except AttributeError:
                missing.append(name)
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        if missing:
            raise ImportError(f"colio: {path} lacks {', '.join(missing)}: "
                              "is it an older or foreign libcolio?")


_lock = _thread.allocate_lock()
L: Library | None = None  # set once loaded; hot paths read it directly
_load_error: BaseException | None = None

# ---- fork safety ----------------------------------------------------------
# The Go runtime inside the library does not survive fork(). The C entry
# points already fail with COLIO_EFORK in a child; the Python side must also
# never wait for something only the parent's threads could deliver (a future
# completed by the notifier, the exit-time drain), nor call the library from
# a finaliser. ``forked()`` tells: True in a child forked after the library
# was loaded. A fork before the first use is harmless: the child loads its
# own library then.
_pid: int | None = None  # the process that loaded the library
# ---- library threads calling into Python ----------------------------------
#
# colio's workers and its notifier are threads Python did not create. For
# every ctypes callback on such a thread, ctypes makes a fresh Python thread
# state and destroys it on return, which costs more than many callbacks'
# own work (a fan-out of 200 small fsspec reads: 36 ms with it, 24 ms
# without). The first callback on each library thread takes one extra,
# never-released PyGILState_Ensure, so the thread keeps its state and later
# callbacks only take the GIL. Library threads are few (the pool's workers
# and the notifier), so the states kept are bounded.

_adopted: set = set()
_PyGILState_Ensure = ctypes.pythonapi.PyGILState_Ensure
_PyGILState_Ensure.restype = c_int
_PyGILState_Ensure.argtypes = []
get_native_id = _thread.get_native_id


def adopt_thread() -> None:
    """Called from a callback on a library thread the first time it calls
    into Python (callers check ``get_native_id() in _adopted`` first)."""
    _PyGILState_Ensure()
    _adopted.add(get_native_id())


# The engine's small_read_threshold, mirrored for Source.read_async: a read
# at or under it from a file or memory source runs inline in the library
# anyway, so Python makes it with the synchronous call and hands back a
# completed future, which skips the C future's life cycle (three library
# calls). Refreshed at load and by colio.set_config; a change made through
# the C API by other code in the process is not seen, which would only move
# such reads between inline and the pool, never change their bytes.
inline_read_max = -1
inline_write_max = -1  # small_write_threshold, the same way for Sink.write_async


def refresh_inline_max(lib) -> None:
    global inline_read_max, inline_write_max
    v = c_int64(0)
    if lib.colio_config_get_int(b"small_read_threshold", ctypes.byref(v)) == 0:
        inline_read_max = v.value
    if lib.colio_config_get_int(b"small_write_threshold", ctypes.byref(v)) == 0:
        inline_write_max = v.value


_forked = False          # set in the child by an os.register_at_fork hook


def forked() -> bool:
    """True in a process forked from the one that loaded the library."""
    return L is not None and (_forked or os.getpid() != _pid)


def fork_error(what: str = "colio"):
    """The ForkError for a call made in a forked child."""
    FORK_HINT, ForkError = _errors.FORK_HINT, _errors.ForkError
    return ForkError(f"{what}: called in a child process after fork(), and this process had "
                     f"loaded libcolio (pid {_pid}) before it forked; the Go runtime inside "
                     f"libcolio does not survive fork. {FORK_HINT}", code=EFORK)


def check_fork(what: str = "colio") -> None:
    if L is not None and (_forked or os.getpid() != _pid):
        raise fork_error(what)


def _after_fork_in_child() -> None:
    # Runs in the child of os.fork() (multiprocessing's fork method too),
    # single-threaded. Only Python state is touched, never the library.
    global _forked
    _forked = True
    import sys
    fut = sys.modules.get("colio._future")
    if fut is not None:
        try:
            fut._after_fork_in_child()
        except Exception:  # pragma: no cover - never break the child
            pass


def _package_dir() -> str:
    return os.path.dirname(os.path.abspath(__file__))


def _cuda_usable() -> bool:
    """Probe the CUDA driver through ctypes, without loading the CUDA build
    (whose Go init exits the process when cuInit fails)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        if cuda.cuInit(0) != 0:
            return False
        n = c_int(0)
        return cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0
    except (OSError, AttributeError):
        return False


def candidates() -> list[str]:
    """Where the library is looked for, in order."""
    env = os.environ.get("COLIO_LIBRARY")
    if env:
        return [env]
    pkg = _package_dir()
    out = []
    cuda = os.path.join(pkg, "libcolio_cuda.so")
    if os.path.exists(cuda) and os.environ.get("COLIO_CUDA", "") != "0" and _cuda_usable():
        out.append(cuda)
    out.append(os.path.join(pkg, "libcolio.so"))
    out.append(os.path.join(os.path.dirname(os.path.dirname(pkg)), "build", "lib", "libcolio.so"))
    return out


def load() -> Library:
    """Returns the library, loading it on first use (thread-safe)."""
    global L, _load_error, _pid
    if L is not None:
        return L
    with _lock:
        if L is not None:
            return L
        if _load_error is not None:
            raise ImportError(str(_load_error)) from _load_error
        tried = []
        env = bool(os.environ.get("COLIO_LIBRARY"))
        for path in candidates():
            if not env and not os.path.exists(path):
                tried.append(f"{path} (missing)")
                continue
            try:
                dll = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                if env:
                    break
                continue
            try:
                lib = Library(dll, path)
            except ImportError as e:
                _load_error = e
                raise
            _apply_environment(lib)
            exit_timeout()  # an invalid COLIO_EXIT_TIMEOUT fails now, not at exit
            refresh_inline_max(lib)
            _pid = os.getpid()
            _errors.library = lib
            L = lib
            import atexit
            atexit.register(_at_exit)
            os.register_at_fork(after_in_child=_after_fork_in_child)
            return lib
        err = ImportError("colio: cannot load libcolio.so; tried: " + "; ".join(tried) +
                          ". Build it with `make lib` or install the package with pip, "
                          "or set COLIO_LIBRARY.")
        raise err


# COLIO_* variables -> engine settings, in the order the engine reads them.
ENV_SETTINGS = (("COLIO_NTHREADS", "threads"), ("COLIO_TASK_SIZE", "task_size"),
                ("COLIO_SMALL_READ_THRESHOLD", "small_read_threshold"),
                ("COLIO_SMALL_WRITE_THRESHOLD", "small_write_threshold"),
                ("COLIO_BOUNCE_BUFFER_SIZE", "bounce_buffer_size"))
_SUFFIXES = (("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("kb", 1 << 10),
             ("mb", 1 << 20), ("gb", 1 << 30), ("k", 1 << 10), ("m", 1 << 20),
             ("g", 1 << 30), ("b", 1))


def parse_size(text: str) -> int:
    """The engine's size syntax: an integer with an optional binary suffix
    (4096, 64k, 64KiB, 4M, 1g)."""
    import re
    t = text.strip().lower()
    mult = 1
    for suf, m in _SUFFIXES:
        if t.endswith(suf):
            t, mult = t[:-len(suf)].strip(), m
            break
    if not re.fullmatch(r"[+-]?[0-9]+", t):
        raise ValueError("not an integer (optionally with a k, M or G suffix)")
    v = int(t) * mult
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("out of range")
    return v


def _apply_environment(lib: Library) -> None:
    """Hands the COLIO_* variables of os.environ to the engine. The Go runtime
    reads the environment the process started with, so a variable set later
    (os.environ in Python, a Dask nanny's ``env=``, a multiprocessing
    initializer) would be invisible to it. An invalid value is an error."""
    for var, key in ENV_SETTINGS:
        text = os.environ.get(var)
        if text is None:
            continue
        InvalidArgumentError = _errors.InvalidArgumentError
        try:
            value = parse_size(text)
        except ValueError as e:
            raise InvalidArgumentError(f"colio: invalid {var}={text!r}: {e}") from None
        rc = lib.colio_config_set_int(key.encode(), value)
        if rc:
            err = _errors.last_error(rc, lib)  # not loaded yet: the message through lib
            msg = str(err)  # the library's message names the variable when it read it itself
            raise InvalidArgumentError(
                msg if var in msg else f"colio: invalid {var}={text!r}: {msg.removeprefix('colio: ')}"
            ) from None


# How long interpreter exit waits for colio's operations in flight, in
# seconds (see colio._at_exit).
EXIT_TIMEOUT_DEFAULT = 10.0


def exit_timeout(at_exit: bool = False) -> float:
    """COLIO_EXIT_TIMEOUT (seconds, >= 0; default 10). An invalid value
    raises InvalidArgumentError, except at exit, where it is reported on
    stderr and the default is used."""
    text = os.environ.get("COLIO_EXIT_TIMEOUT")
    if text is None:
        return EXIT_TIMEOUT_DEFAULT
    try:
        v = float(text)
        if not v >= 0 or v == float("inf"):
            raise ValueError
        return v
    except ValueError:
        msg = (f"colio: invalid COLIO_EXIT_TIMEOUT={text!r}: expected a number of seconds "
               "(0 or more, e.g. 10 or 2.5)")
    if at_exit:
        import sys
        print(f"{msg}; using {EXIT_TIMEOUT_DEFAULT:g}", file=sys.stderr)
        return EXIT_TIMEOUT_DEFAULT
    raise _errors.InvalidArgumentError(msg)


def _at_exit():
    if forked():
        return  # a forked child: nothing of the parent's can be drained here
    import sys
    colio = sys.modules.get("colio")
    if colio is not None:
        colio._at_exit()
