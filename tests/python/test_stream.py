"""colio.open and Source.stream: read-ahead file objects, compared with
reads made without colio, and handed to the consumers users hand files to."""

from __future__ import annotations

import io
import os
import pickle
import random
import threading
import zipfile

import pytest

import colio
from conftest import ROOT


def test_random_sized_reads_equal_reference(data_file, ref):
    rng = random.Random(5)
    with colio.open(data_file, buffer_size=256 * 1024, depth=3) as f:
        got = bytearray()
        while True:
            b = f.read(rng.randint(1, 900_000))
            if not b:
                break
            got += b
        assert bytes(got) == ref
        assert f.read() == b"" and f.read(10) == b""  # EOF like a regular file


def test_readinto_numpy_and_bytearray(data_file, ref):
    np = pytest.importorskip("numpy")
    with colio.open(data_file) as f:
        a = np.empty((100, 1000), dtype=np.uint8)
        assert f.readinto(a) == 100_000
        assert a.tobytes() == ref[:100_000]
        b = bytearray(5000)
        assert f.readinto(b) == 5000
        assert bytes(b) == ref[100_000:105_000]


def test_seek_tell_peek_readline(data_file, ref):
    with colio.open(data_file) as f:
        assert f.seekable() and f.readable() and not f.writable()
        assert f.read(10) == ref[:10] and f.tell() == 10
        assert f.seek(500_000, io.SEEK_CUR) == 500_010          # forward
        assert f.read(100) == ref[500_010:500_110]
        assert f.seek(-200, io.SEEK_CUR) == 499_910             # backward
        assert f.read(50) == ref[499_910:499_960]
        assert f.seek(-7, io.SEEK_END) == len(ref) - 7           # to the end
        assert f.read() == ref[-7:]
        assert f.seek(3) == 3
        assert f.peek(1)[:4] == ref[3:7] and f.tell() == 3
        line = f.readline()
        nl = ref.find(b"\n", 3)
        assert line == ref[3:nl + 1]
        assert f.seek(len(ref) + 100) == len(ref) + 100         # past the end
        assert f.read(5) == b""


def test_stream_from_source_leaves_it_open(src, ref):
    f = src.stream(offset=1000)
    assert f.read(4096) == ref[1000:5096]
    f.close()
    assert not src.closed
    assert src.read(0, 10) == ref[:10]


def test_text_mode(tmp_path):
    p = tmp_path / "t.txt"
    text = "".join(f"line {i}: héllo\n" for i in range(10000))
    p.write_text(text, encoding="utf-8")
    with colio.open(str(p), "r", encoding="utf-8") as f:
        assert f.read() == text
    with colio.open(str(p), "rt", encoding="utf-8") as f:
        assert list(f)[:3] == text.splitlines(keepends=True)[:3]


def test_pickle_load(tmp_path):
    obj = {"a": list(range(100000)), "b": b"x" * 100000, "c": ("t", 1.5)}
    p = tmp_path / "o.pkl"
    with open(p, "wb") as f:
        pickle.dump(obj, f)
    with colio.open(str(p)) as f:
        assert pickle.load(f) == obj


def test_zipfile(tmp_path):
    p = tmp_path / "z.zip"
    rng = random.Random(3)
    members = {f"m{i}.bin": rng.randbytes(rng.randint(0, 300_000)) for i in range(20)}
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for k, v in members.items():
            z.writestr(k, v)
    with colio.open(str(p)) as f, zipfile.ZipFile(f) as z:
        assert sorted(z.namelist()) == sorted(members)
        for k, v in members.items():
            assert z.read(k) == v


def test_pandas_read_csv(tmp_path):
    pd = pytest.importorskip("pandas")
    p = tmp_path / "d.csv"
    rng = random.Random(4)
    with open(p, "w") as f:
        f.write("a,b,c\n")
        for i in range(50000):
            f.write(f"{i},{rng.random()},name{rng.randint(0, 999)}\n")
    want = pd.read_csv(p)
    with colio.open(str(p)) as f:
        got = pd.read_csv(f)
    pd.testing.assert_frame_equal(got, want)


def test_pyarrow_parquet_read_table(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = random.Random(6)
    t = pa.table({"x": list(range(200000)), "y": [rng.random() for _ in range(200000)],
                  "s": [f"v{rng.randint(0, 99)}" for _ in range(200000)]})
    p = tmp_path / "t.parquet"
    pq.write_table(t, p, row_group_size=50000)
    with colio.open(str(p)) as f:
        got = pq.read_table(f)
    assert got.equals(pq.read_table(p))


def test_fsspec_url(ref):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/stream/ref.bin", ref)
    with colio.open("memory://stream/ref.bin", buffer_size=128 * 1024) as f:
        assert f.read() == ref


def test_callable_error_is_sticky(ref):
    fail_at = 1_500_000

    def read_into(buf, offset):
        if offset >= fail_at:
            raise OSError(5, "disk on fire")
        n = min(len(buf), fail_at - offset, len(ref) - offset)
        buf[:n] = ref[offset:offset + n]
        return n

    src = colio.from_callable(read_into, len(ref))
    f = src.stream(buffer_size=256 * 1024, depth=2)
    got = bytearray()
    with pytest.raises(colio.ColioError):
        while True:
            b = f.read(100_000)
            if not b:
                break
            got += b
    assert bytes(got) == ref[:len(got)] and len(got) <= fail_at
    with pytest.raises(colio.ColioError):
        f.raw.readinto(bytearray(10))  # sticky
    f.close()
    src.close()


def test_bad_inputs(data_file, tmp_path):
    with pytest.raises(ValueError):
        colio.open(data_file, "wb")
    with pytest.raises(ValueError):
        colio.open(data_file, "rb", encoding="utf-8")
    with pytest.raises(FileNotFoundError):
        colio.open(str(tmp_path / "missing"))
    with pytest.raises(ValueError):
        colio.open(data_file, buffer_size=-1)
    f = colio.open(data_file)
    f.close()
    with pytest.raises(ValueError):
        f.read(1)
    with pytest.raises(ValueError):
        f.seek(-1)
    with pytest.raises(TypeError):
        pickle.dumps(colio.open(data_file).raw)


def test_close_from_another_thread_while_reading(ref):
    gate = threading.Event()

    def read_into(buf, offset):
        gate.wait(10)
        n = min(len(buf), len(ref) - offset)
        buf[:n] = ref[offset:offset + n]
        return n

    src = colio.from_callable(read_into, len(ref))
    raw = src.stream().raw
    errors = []

    def reader():
        try:
            raw.readinto(bytearray(10))
        except Exception as e:  # closed under the reader: an error, not a hang
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    threading.Timer(0.05, raw.close).start()
    t.join(5)
    gate.set()
    assert not t.is_alive()
    src.close()


def test_exit_with_a_seek_waiting_on_a_stuck_callback(tmp_path):
    """A process exits while a stream's seek waits on a read stuck in a
    callback that never returns. Before, the stream's Close blocked on the
    lock the seek held (internal/readahead TestCloseEndsASeek...), so the
    exit hung in colio_stream_free."""
    import subprocess
    import sys
    script = tmp_path / "stuck.py"
    script.write_text(
        "import sys, threading, time\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'python')!r})\n"
        "import colio\n"
        "ev = threading.Event()\n"
        "def read_into(buf, off):\n"
        "    if off >= 1 << 20:\n"
        "        ev.wait()\n"
        "    buf[:] = bytes(len(buf))\n"
        "    return len(buf)\n"
        "src = colio.from_callable(read_into, 64 << 20, concurrent=True)\n"
        "f = src.stream(buffer_size=1 << 20, depth=4)\n"
        "assert f.read(4096) == bytes(4096)\n"
        "threading.Thread(target=lambda: f.seek(40 << 20), daemon=True).start()\n"
        "time.sleep(0.2)\n"
        "print('exiting', flush=True)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "exiting" in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:])
