"""colio inside Dask's distributed workers (issue 8), against a real
distributed.LocalCluster with worker processes (spawned, so each loads its
own libcolio): no mocks.

- many tasks read ranges of shared files and write per-task output files
  through colio, byte-exact against plain Python reads;
- pickled sources reopen in the worker (local file, fsspec); an unpickled
  sink reopens its file "r+" (never truncated), explicit offsets only;
- each worker has its own engine: COLIO_NTHREADS from the worker's
  environment, set_config inside one worker changes only that worker;
- colio.dask.read_bytes computes to exactly the blocks of
  dask.bytes.read_bytes, with and without delimiters, including delimiters
  that cross block boundaries and end searches longer than one window.

One module-scoped cluster; every result has a timeout, so nothing hangs.
"""

from __future__ import annotations

import logging
import os
import pickle
import random
import threading

import pytest

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
import dask.bytes  # noqa: E402
import fsspec  # noqa: E402

import colio  # noqa: E402
import colio.dask  # noqa: E402
import colio.testing  # noqa: E402  (registers latency://)

T = 60  # seconds: the most any result may take

WORKER_THREADS = 6  # COLIO_NTHREADS in the workers' environment


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=2, dashboard_address=None,
        silence_logs=logging.ERROR, env={"COLIO_NTHREADS": str(WORKER_THREADS)})
    c = distributed.Client(cluster, timeout=T)
    try:
        c.wait_for_workers(2, timeout=T)
        yield c
    finally:
        c.close(timeout=T)
        cluster.close(timeout=T)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """Two shared input files, written without colio."""
    d = tmp_path_factory.mktemp("dask-in")
    rng = random.Random(8)
    files = {}
    for name, size in (("a.bin", (3 << 20) + 321), ("b.bin", (1 << 20) + 7)):
        data = rng.randbytes(size)
        (d / name).write_bytes(data)
        files[str(d / name)] = data
    return files


def _workers(client):
    return sorted(client.scheduler_info()["workers"])


# ---- tasks (run in the workers) ------------------------------------------------

def _engine():
    return os.getpid(), colio.get_config()["threads"]


def _set_threads(n):
    colio.set_config(threads=n)
    return _engine()


def _copy_ranges(src_a, src_b, ranges, out):
    """Reads (which, offset, size) ranges from two pickled sources, all at
    once, and writes them one after another to a new file through colio."""
    futs = [(src_a if w == 0 else src_b).read_ranges_async([(o, n)])[0] for w, o, n in ranges]
    with colio.sink(out, "w") as k:
        writes = [k.write_async(f.result(T)) for f in futs]
        total = sum(w.result(T) for w in writes)
    src_a.close()
    src_b.close()
    return os.getpid(), threading.get_ident(), total


def _read_pickled(src, offset, size):
    try:
        return src.kind, type(src.fs).__name__, src.read(offset, size), os.getpid()
    finally:
        src.close()


def _write_pickled(sink, offset, data):
    try:
        sink.write_async(data, offset).result(T)
        try:
            sink.write(b"appended")
            appended = "accepted"
        except ValueError as e:
            appended = str(e)
        return appended
    finally:
        sink.close()


# ---- engines per worker -----------------------------------------------------------

def test_each_worker_has_its_own_engine(client):
    mine = colio.get_config()["threads"]
    ws = _workers(client)
    before = {w: client.submit(_engine, workers=[w], pure=False).result(T) for w in ws}
    pids = {pid for pid, _ in before.values()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(t == WORKER_THREADS for _, t in before.values())  # from the worker's env
    # set_config inside one worker changes only that worker's engine
    pid, t = client.submit(_set_threads, 3, workers=[ws[0]], pure=False).result(T)
    assert (pid, t) == (before[ws[0]][0], 3)
    assert client.submit(_engine, workers=[ws[1]], pure=False).result(T) == before[ws[1]]
    assert client.submit(_engine, workers=[ws[0]], pure=False).result(T) == (pid, 3)
    assert colio.get_config()["threads"] == mine  # nor this process's
    client.submit(_set_threads, WORKER_THREADS, workers=[ws[0]], pure=False).result(T)


# ---- many tasks: shared inputs, per-task outputs ------------------------------------

def test_many_tasks_read_shared_files_and_write_outputs(client, shared, tmp_path):
    (pa, da), (pb, db) = shared.items()
    sa, sb = colio.source(pa), colio.source(pb)  # pickled into every task
    rng = random.Random(1)
    tasks = []
    for t in range(40):
        ranges = []
        for _ in range(8):
            w = rng.randrange(2)
            n = rng.choice((1, 4096, 65536, 300001))
            limit = len(da if w == 0 else db)
            ranges.append((w, rng.randrange(0, limit - n), n))
        tasks.append((ranges, str(tmp_path / f"out-{t}.bin")))
    futs = [client.submit(_copy_ranges, sa, sb, r, out, pure=False) for r, out in tasks]
    res = [f.result(T) for f in futs]
    sa.close()
    sb.close()
    pids = {pid for pid, _, _ in res}
    assert len(pids) == 2 and os.getpid() not in pids  # both worker processes did work
    for (ranges, out), (_, _, total) in zip(tasks, res):
        want = b"".join((da if w == 0 else db)[o:o + n] for w, o, n in ranges)
        with open(out, "rb") as f:  # plain Python, no colio
            got = f.read()
        assert total == len(want) and got == want, out


# ---- pickling: sources reopen in the worker, sinks never truncate --------------------

def test_pickled_fsspec_source_reopens_in_worker(client, shared):
    path, data = next(iter(shared.items()))
    fs = colio.testing.LatencyFileSystem(fsspec.filesystem("file"), latency=0.001)
    with colio.from_fsspec(fs, path) as src:
        src.read(0, 1)
        futs = [client.submit(_read_pickled, src, off, 100000, workers=[w], pure=False)
                for w in _workers(client) for off in (0, len(data) - 50000)]
        got = [f.result(T) for f in futs]
    for (kind, fsname, b, pid), off in zip(got, (0, len(data) - 50000) * 2):
        assert (kind, fsname) == ("fsspec", "LatencyFileSystem")
        assert b == data[off:off + 100000] and pid != os.getpid()
    assert len({pid for *_, pid in got}) == 2


def test_pickled_sink_reopens_r_plus_in_worker(client, tmp_path):
    p = str(tmp_path / "shared-out.bin")
    with colio.sink(p, "w") as k:
        k.write(b"H" * 100)  # written before the sink travels
        k.flush()
        pieces = [(100 + 10 * i, bytes([65 + i]) * 10) for i in range(8)]
        futs = [client.submit(_write_pickled, k, off, b, pure=False) for off, b in pieces]
        msgs = [f.result(T) for f in futs]
    for m in msgs:  # appends from several processes could not be ordered: refused
        assert "explicit offsets" in m, m
    with open(p, "rb") as f:
        got = f.read()
    assert got == b"H" * 100 + b"".join(b for _, b in pieces)  # nothing truncated or lost
    # and an unpickled sink never creates a file that is gone
    blob = pickle.dumps(colio.sink(str(tmp_path / "gone.bin"), "w"))
    os.unlink(tmp_path / "gone.bin")
    with pytest.raises(FileNotFoundError):
        pickle.loads(blob)


class _Unpicklable:
    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, buf, off):
        buf[:] = b"x" * len(buf)
        return len(buf)


def test_sources_that_cannot_travel_say_so():
    with colio.from_buffer(bytearray(b"abc")) as s:
        with pytest.raises(TypeError, match="memory source over a bytearray cannot be pickled"):
            pickle.dumps(s)
    with colio.from_buffer(b"immutable") as s:  # bytes: the copy is the same source
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.read() == b"immutable"
        s2.close()
    with colio.from_callable(_Unpicklable(), 10) as s:
        with pytest.raises(TypeError, match="callable source cannot be pickled"):
            pickle.dumps(s)
    with pytest.raises(TypeError, match="memory sink cannot be pickled"):
        pickle.dumps(colio.sink(bytearray(4)))


# ---- read_bytes: exactly Dask's blocks -----------------------------------------------

@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    """Line files whose lines vary from empty to longer than a block (so a
    delimiter search crosses several block boundaries, and some blocks are
    empty), with "\\n" and "\\r\\n" endings, one without a final newline,
    plus an empty file."""
    d = tmp_path_factory.mktemp("dask-text")
    rng = random.Random(88)
    for k, nl in enumerate((b"\n", b"\r\n", b"\n")):
        lines = []
        for i in range(400):
            n = rng.choice((0, 1, 5, 40, 120, 700)) if i % 97 else 2600  # some very long lines
            lines.append(bytes(rng.choice(b"abcdefghij,") for _ in range(n)))
        data = nl.join(lines) + (nl if k != 2 else b"")
        (d / f"part-{k}.csv").write_bytes(data)
    (d / "part-9.csv").write_bytes(b"")
    return str(d)


def _compute(client, blocks):
    return [f.result(T) for f in client.compute(blocks)]  # a future per file


@pytest.mark.parametrize("kw", [
    dict(blocksize=1000),                                         # no delimiter
    dict(blocksize=1000, delimiter=b"\n"),
    dict(blocksize=777, delimiter=b"\r\n", search_size=16),       # end search over many windows
    dict(blocksize=1500, delimiter=b"\n", not_zero=True, sample=300, part_size=100),
    dict(blocksize=None, delimiter=b"\n", sample=5000),           # one block per file
], ids=["plain", "newline", "crlf-small-windows", "not-zero-small-parts", "whole-files"])
def test_read_bytes_gives_dask_blocks(client, text_files, kw):
    kw = dict(kw)
    colio_only = {k: kw.pop(k) for k in ("search_size", "part_size") if k in kw}
    url = os.path.join(text_files, "part-*.csv")
    s1, b1, p1 = dask.bytes.read_bytes(url, include_path=True, **kw)
    s2, b2, p2 = colio.dask.read_bytes(url, include_path=True, **kw, **colio_only)
    assert s2 == s1 and p2 == p1
    assert [len(x) for x in b2] == [len(x) for x in b1]  # same shape: one list per file
    r1, r2 = _compute(client, b1), _compute(client, b2)
    assert r2 == r1
    if kw.get("blocksize") and kw.get("delimiter"):
        assert any(b == b"" for f in r1 for b in f)  # a line longer than a block


def test_read_bytes_without_sample_and_over_fsspec(client, text_files):
    url = "latency://" + os.path.join(text_files, "part-*.csv")
    opts = dict(fs=fsspec.filesystem("file"), latency={"latency": 0.0})  # per-protocol options
    s1, b1 = dask.bytes.read_bytes(url, blocksize=2048, delimiter=b"\n", sample=False, **opts)
    s2, b2 = colio.dask.read_bytes(url, blocksize=2048, delimiter=b"\n", sample=False, **opts)
    assert s1 is False and s2 is False
    assert _compute(client, b2) == _compute(client, b1)
