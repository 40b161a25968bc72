"""Argument validation at every Python entry point (issue 12 items 3 and 4)
and messages in the caller's language (issue 13 item 7).

Before the fixes: integers of 2**64 and more were handed to ctypes' c_int64,
which keeps the low 64 bits, so ``read(1 << 64, 10)`` read from offset 0 and
``write(b"abc", offset=1 << 64)`` overwrote the start of the file;
``read(0, 1 << 63)`` raised SystemError and ``read(0, 1 << 62)``
MemoryError on a small file; a NUL byte in a path cut it short (ctypes'
c_char_p ends at the first NUL); messages named C functions
(``colio_read: ...``), ``set_config(thredas=4)`` said ``invalid value
thredas for "thredas"`` and ``set_config(task_size="4M")`` raised TypeError.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT, SIZE, pread

import colio

BIG = [1 << 63, 1 << 64, (1 << 64) + 5, 1 << 100]
INT64_MAX = (1 << 63) - 1


def _refused(fn, name):
    """fn() must raise InvalidArgumentError (a ValueError) naming ``name``
    and saying the value is too large."""
    with pytest.raises(colio.InvalidArgumentError) as ei:
        fn()
    msg = str(ei.value)
    assert isinstance(ei.value, ValueError)
    assert name in msg and "too large" in msg, msg
    assert "colio_" not in msg, msg


# ---- 12.3: integers that do not fit in int64_t ---------------------------------------

@pytest.mark.parametrize("big", BIG)
def test_source_reads_refuse_offsets_past_int64(src, big):
    buf = bytearray(10)
    _refused(lambda: src.read(big, 10), "offset")
    _refused(lambda: src.read(big), "offset")
    _refused(lambda: src.read_into(buf, big), "offset")  # the plain-int fast path
    _refused(lambda: src.read_into(buf, 0, big), "size")
    _refused(lambda: src.read_async(buf, big), "offset")
    _refused(lambda: src.read_async(buf, 0, big), "size")
    _refused(lambda: src.read_ranges([(0, 1), (big, 10)]), "range 1 offset")
    _refused(lambda: src.read_ranges([(0, big)]), "range 0 size")
    _refused(lambda: src.read_ranges_async([(big, 10)]), "range 0 offset")
    _refused(lambda: src.read_arrow(big, 10), "offset")
    _refused(lambda: src.read_arrow(0, big), "size")
    _refused(lambda: src.read_ranges_arrow([(big, 10)]), "range 0 offset")
    _refused(lambda: src.stream(big), "offset")
    _refused(lambda: src.stream(0, buffer_size=big), "buffer_size")
    _refused(lambda: src.stream(0, depth=big), "depth")
    assert bytes(buf) == bytes(10)  # nothing was read from a wrapped offset


def test_int64_max_is_past_the_end_not_wrapped(src):
    """2**63-1 fits: the library gets it and refuses it itself."""
    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
        src.read(INT64_MAX, 0)
    with pytest.raises(colio.InvalidArgumentError, match="overflows a 64-bit offset"):
        src.read_into(bytearray(1), INT64_MAX)


@pytest.mark.parametrize("size", [1 << 62, INT64_MAX, SIZE + 1])
def test_read_size_far_past_the_end_is_clamped(src, data_file, size):
    """read(0, huge) allocates what the source holds, not what was asked."""
    assert src.read(0, size) == pread(data_file, 0, SIZE)
    assert src.read(SIZE - 7, size) == pread(data_file, SIZE - 7, 7)
    assert src.read(SIZE, size) == b""
    got = src.read_ranges([(5, size), (SIZE - 3, size), (SIZE, size)])
    assert [bytes(g) for g in got] == [pread(data_file, 5, SIZE - 5), pread(data_file, SIZE - 3, 3), b""]
    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
        src.read(SIZE + 1, size)


@pytest.mark.parametrize("big", BIG)
def test_stream_seek_refuses_offsets_past_int64(data_file, big):
    with colio.open(data_file) as f:
        f.read(3)
        raw = f.raw
        _refused(lambda: raw.seek(big), "offset")
        _refused(lambda: raw.seek(big, os.SEEK_CUR), "offset")
        _refused(lambda: raw.seek(-big - 1, os.SEEK_END), "offset")
        # The io.BufferedReader on top refuses as the built-in open does.
        with pytest.raises((ValueError, OverflowError)):
            f.seek(big)
        assert f.tell() == 3
        assert f.read(5) == pread(data_file, 3, 5)


@pytest.mark.parametrize("big", BIG)
def test_sink_writes_refuse_offsets_past_int64(tmp_path, big):
    p = tmp_path / "out.bin"
    p.write_bytes(b"0123456789")
    with colio.sink(str(p), "r+") as k:
        _refused(lambda: k.write(b"abc", offset=big), "offset")
        _refused(lambda: k.write_async(b"abc", offset=big), "offset")
    assert p.read_bytes() == b"0123456789"  # the start was not overwritten


def test_constructors_refuse_sizes_past_int64():
    def fill(buf, offset):
        return 0
    _refused(lambda: colio.from_callable(fill, 1 << 64), "size")
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/validation.bin", b"abc")
    _refused(lambda: colio.from_fsspec(fs, "/validation.bin", size=1 << 64), "size")
    _refused(lambda: colio.from_fsspec(fs, "/validation.bin", max_in_flight=1 << 64), "max_in_flight")


def test_set_config_refuses_values_past_int64():
    """(1 << 64) + 4 MiB used to wrap to 4 MiB and be accepted."""
    before = colio.get_config()
    _refused(lambda: colio.set_config(task_size=(1 << 64) + (4 << 20)), "task_size")
    _refused(lambda: colio.set_config(threads=(1 << 64) + 2), "threads")
    assert colio.get_config() == before


# ---- 12.4: NUL bytes in paths ------------------------------------------------------------

def _nul_refused(fn):
    with pytest.raises(ValueError, match="embedded null byte") as ei:
        fn()
    assert isinstance(ei.value, colio.ColioError)


def test_nul_in_a_path_is_refused(tmp_path):
    short = tmp_path / "small.bin"
    short.write_bytes(b"abc")
    with pytest.raises(ValueError, match="embedded null byte"):
        open(str(short) + "\x00.txt", "rb")  # what Python's open does
    for p in (str(short) + "\x00.txt", os.fsencode(str(short)) + b"\x00.txt",
              "file://" + str(short) + "\x00.txt"):
        _nul_refused(lambda: colio.source(p))
        with pytest.raises(ValueError, match="embedded null byte"):
            colio.open(p)  # a local file opens as open() does, and fails as it does
    target = tmp_path / "out.bin"
    for mode in ("w", "a", "r+"):
        _nul_refused(lambda: colio.sink(str(target) + "\x00.txt", mode))
        _nul_refused(lambda: colio.sink(os.fsencode(str(target)) + b"\x00", mode))
    assert not target.exists()  # the shortened name was not created
    assert short.read_bytes() == b"abc"


def test_nul_in_an_fsspec_path_is_refused():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/nul.bin", b"abc")
    _nul_refused(lambda: colio.source("memory:///nul.bin\x00x"))
    _nul_refused(lambda: colio.from_fsspec(fs, "/nul.bin\x00x"))
    _nul_refused(lambda: colio.from_fsspec(fs, "/nul.bin\x00x", size=3))


# ---- 13.7: messages speak Python ------------------------------------------------------------

def test_library_messages_do_not_name_c_functions(src, tmp_path):
    with pytest.raises(colio.InvalidArgumentError) as ei:
        src.read(SIZE + 1, 1)
    msg = str(ei.value)
    assert msg.startswith("colio: ") and "colio_" not in msg, msg
    assert ei.value.message == msg
    with pytest.raises(colio.NotFoundError) as ei:
        colio.source(str(tmp_path / "missing.bin"))
    assert "colio_" not in str(ei.value) and "missing.bin" in str(ei.value)
    with pytest.raises(colio.NotFoundError) as ei:
        colio.sink(str(tmp_path / "missing.bin"), "r+")
    assert "colio_" not in str(ei.value)


def test_set_config_unknown_key():
    with pytest.raises(colio.InvalidArgumentError) as ei:
        colio.set_config(thredas=4)
    msg = str(ei.value)
    assert msg.startswith("colio.set_config: ") and "unknown setting 'thredas'" in msg, msg
    assert "invalid value" not in msg
    for key in ("threads", "task_size", "small_read_threshold", "small_write_threshold",
                "bounce_buffer_size"):
        assert key in msg


def test_set_config_bad_values_are_value_errors():
    before = colio.get_config()
    for bad in ("4M", "4096", "", 4.5, None, [4]):
        with pytest.raises(colio.InvalidArgumentError) as ei:
            colio.set_config(task_size=bad)
        msg = str(ei.value)
        assert msg.startswith("colio.set_config: task_size") and repr(bad) in msg, msg
    with pytest.raises(colio.InvalidArgumentError) as ei:
        colio.set_config(threads=0)
    msg = str(ei.value)
    assert msg == "colio.set_config: threads=0: must be between 1 and 4096", msg
    with pytest.raises(colio.InvalidArgumentError) as ei:
        colio.set_config(small_read_threshold=-1)
    assert "small_read_threshold" in str(ei.value) and "-1" in str(ei.value)
    assert colio.get_config() == before


def test_set_config_size_string_says_what_to_write():
    with pytest.raises(colio.InvalidArgumentError) as ei:
        colio.set_config(task_size="4M")
    msg = str(ei.value)
    assert "task_size='4M'" in msg and "must be an integer" in msg and "4 << 20" in msg, msg


def test_c_message_for_an_unknown_setting():
    """The library's own message (what C callers see) names the key once."""
    from colio import _lib
    colio.get_config()
    L = _lib.L
    assert L.colio_config_set_int(b"thredas", 4) == _lib.EINVAL
    msg = L.colio_last_error().decode()
    assert 'unknown setting "thredas"' in msg and "invalid value" not in msg, msg
    assert L.colio_config_set_int(b"threads", 0) == _lib.EINVAL
    msg = L.colio_last_error().decode()
    assert msg == "colio_config_set_int: threads=0: must be between 1 and 4096", msg


def test_bad_environment_variable_is_said_once():
    env = dict(os.environ, COLIO_NTHREADS="0", PYTHONPATH=os.path.join(ROOT, "python"))
    code = ("import colio\n"
            "try:\n"
            "    colio.get_config()\n"
            "except colio.InvalidArgumentError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    msg = out.stdout.strip()
    assert msg == 'colio: invalid COLIO_NTHREADS="0": must be between 1 and 4096', (msg, out.stderr)
