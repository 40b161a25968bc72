"""Row groups decoded on several threads (colio._parquet_decode, used by
colio.parquet.read_table): pieces that finish out of order come back in the
order given, they really run at once, a read holds at most one piece per
thread (the next waits for a free one), a failed piece stops the ones not yet
started and raises once nothing runs, and read_table's tables equal
pyarrow's read of the local file whatever the number of threads, with a
decode error (corrupt chunk bytes) raised as pyarrow raises it. No timing:
concurrency is shown by a hand-off that only two threads at once can pass
(with a 10 s hang watchdog)."""

import os
import signal
import threading
import time

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import colio  # noqa: E402
import colio._parquet_decode as dec  # noqa: E402
import colio.parquet as cpq  # noqa: E402

WATCHDOG = 10.0
N, RG = 6000, 300   # 20 row groups


@pytest.fixture(scope="module")
def pfile(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("decode") / "t.parquet")
    t = pa.table({"id": pa.array(range(N), pa.int64()),
                  "x": pa.array([i * 0.5 for i in range(N)]),
                  "s": pa.array([None if i % 5 == 0 else f"v{i % 17}" for i in range(N)]),
                  "l": pa.array([list(range(i % 4)) for i in range(N)], pa.list_(pa.int32()))})
    pq.write_table(t, p, row_group_size=RG)
    return p


def test_pieces_come_back_in_order_and_run_at_once():
    """Piece 0 can only finish after piece 1 has run: on one thread at a time
    this would hang (the watchdog fails it instead); its table still comes
    first."""
    one_ran = threading.Event()
    threads = set()

    def decode(pf, rgs):
        threads.add(threading.get_ident())
        if rgs == [0]:
            assert one_ran.wait(WATCHDOG), "piece 1 never ran beside piece 0"
        elif rgs == [1]:
            one_ran.set()
        return rgs

    o = dec.Ordered(lambda: object(), decode, 2)
    for r in range(6):
        o.submit([r])
    try:
        assert o.tables() == [[r] for r in range(6)]
    finally:
        o.close()
    assert len(threads) >= 2 and threading.get_ident() not in threads


def test_a_read_holds_at_most_one_piece_per_thread():
    """With both threads busy the next submit waits (so that the piece it
    would cut holds what arrives meanwhile), and goes on once one is free."""
    gate, started = threading.Event(), threading.Semaphore(0)

    def decode(pf, rgs):
        started.release()
        assert gate.wait(WATCHDOG)
        return rgs

    o = dec.Ordered(lambda: object(), decode, 2)
    submitted = []

    def submitter():
        for r in range(3):
            o.submit([r])
            submitted.append(r)

    t = threading.Thread(target=submitter)
    t.start()
    try:
        assert started.acquire(timeout=WATCHDOG) and started.acquire(timeout=WATCHDOG)
        t.join(0.2)
        assert t.is_alive() and submitted == [0, 1]  # the third waits for a thread
    finally:
        gate.set()
    t.join(WATCHDOG)
    assert not t.is_alive() and submitted == [0, 1, 2]
    assert o.tables() == [[0], [1], [2]]
    o.close()


def test_a_failed_piece_stops_the_rest_and_raises():
    ran, running = [], [0]
    lock = threading.Lock()
    o = None

    def decode(pf, rgs):
        with lock:
            ran.append(rgs[0])
            running[0] += 1
        try:
            if rgs == [1]:
                raise ValueError("bad row group")
            if rgs == [0]:
                # Returns only once the failure is recorded, so the pieces
                # queued behind this one find it there.
                deadline = time.monotonic() + WATCHDOG
                while not o._stop:
                    assert time.monotonic() < deadline
                    time.sleep(0.001)
            return rgs
        finally:
            with lock:
                running[0] -= 1

    o = dec.Ordered(lambda: object(), decode, 2)
    for r in range(10):
        o.submit([r])
    with pytest.raises(ValueError, match="bad row group"):
        o.tables()
    assert running[0] == 0        # nothing of it runs after the raise
    assert sorted(ran) == [0, 1]  # and nothing after the failure started
    o.close()


def test_one_thread_decodes_on_the_caller():
    seen = []
    o = dec.Ordered(lambda: "pf", lambda pf, rgs: seen.append(threading.get_ident()) or rgs, 1)
    o.submit([3])
    o.submit([1, 2])
    assert o.tables() == [[3], [1, 2]]
    assert seen == [threading.get_ident()] * 2


def test_each_thread_has_a_reader_of_its_own():
    made = []
    lock = threading.Lock()
    both = threading.Barrier(2, timeout=WATCHDOG)

    def opener():
        with lock:
            made.append(threading.get_ident())
        return object()

    def decode(pf, rgs):
        if rgs[0] < 2:
            both.wait()  # the first two pieces on two threads at once
        return (threading.get_ident(), id(pf))

    o = dec.Ordered(opener, decode, 2)
    for r in range(8):
        o.submit([r])
    got = o.tables()
    o.close()
    assert len(made) == len(set(made)) == 2
    by_thread = {}
    for t, pf in got:
        by_thread.setdefault(t, set()).add(pf)
    assert all(len(pfs) == 1 for pfs in by_thread.values())


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_read_table_equals_pyarrow_on_any_number_of_threads(pfile, monkeypatch, workers):
    monkeypatch.setattr(dec, "workers", lambda: workers)
    monkeypatch.setattr(cpq, "TAIL", 512)
    monkeypatch.setattr(cpq, "OPEN_TAIL", 512)
    opened = set()
    real = pq.ParquetFile

    def recording(*a, **k):
        opened.add(threading.get_ident())
        return real(*a, **k)

    ref = pq.ParquetFile(pfile)
    monkeypatch.setattr(pq, "ParquetFile", recording)
    for cols in (None, ["s"], ["l", "id"]):
        for rgs in (None, [19, 0, 7, 7, 3], list(range(20))[::-1]):
            want = ref.read_row_groups(list(range(20)) if rgs is None else rgs, columns=cols)
            assert cpq.read_table(pfile, columns=cols, row_groups=rgs).equals(want)
            with colio.source(pfile) as src:  # colio's reads, decoded as they arrive
                got = cpq.read_table(src, columns=cols, row_groups=rgs)
            assert got.equals(want), (workers, cols, rgs)
            assert got.column_names == want.column_names
    assert cpq.read_table(pfile, filters=[("id", ">=", 5000)]).equals(
        pq.read_table(pfile, filters=[("id", ">=", 5000)]))
    if workers > 1:
        assert len(opened - {threading.get_ident()}) >= 2


def test_a_decode_error_raises_and_the_next_read_is_right(pfile, monkeypatch):
    """Row group 12's chunk of "x" arrives as garbage: read_table raises
    pyarrow's error for it and stops the rest; nothing still reads the
    buffer, and the next read of the same source is right."""
    monkeypatch.setattr(dec, "workers", lambda: 2)
    monkeypatch.setattr(cpq, "TAIL", 512)
    data = bytearray(open(pfile, "rb").read())
    md = pq.read_metadata(pfile)
    off, n = cpq._chunk(md.row_group(12).column(1))
    good = bytes(data)
    bad = bytearray(data)
    bad[off:off + n] = b"\xff" * n
    current = [bytes(bad)]

    def read(buf, offset):
        got = current[0][offset:offset + len(buf)]
        buf[:len(got)] = got
        return len(got)

    with colio.from_callable(read, len(data)) as src:
        src.set_coalesce(0)
        with pytest.raises((OSError, pa.ArrowException)):
            cpq.read_table(src, columns=["x"])
        current[0] = good
        assert cpq.read_table(src, columns=["x"]).equals(pq.read_table(pfile, columns=["x"]))


def test_a_forked_child_decodes_with_threads_of_its_own(pfile, monkeypatch):
    """The parent's pool exists (it read first); a child forked after that
    reads a local path (nothing in it calls the library, which refuses
    after a fork) and gets the same table, instead of queueing its decodes
    for the parent's threads, which do not exist in it (that hung)."""
    monkeypatch.setattr(dec, "workers", lambda: 2)
    want = pq.read_table(pfile, columns=["s", "l"])
    assert cpq.read_table(pfile, columns=["s", "l"]).equals(want)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        code = 1
        try:
            os.close(r)
            ok = cpq.read_table(pfile, columns=["s", "l"]).equals(want)
            os.write(w, b"same" if ok else b"different")
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    deadline = time.monotonic() + WATCHDOG
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's read hung")
        time.sleep(0.01)
    with os.fdopen(r, "rb") as f:
        said = f.read()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, said
    assert said == b"same"


def test_while_bytes_arrive_half_the_threads_decode(monkeypatch):
    """_decoded with 2 threads: batches that are not the last are decoded
    one piece at a time (the fetch needs the other core), the last one is
    cut in two and decoded on both threads at once."""
    import colio._parquet_eager as eager
    running, peak, seen = [0], [], []
    lock = threading.Lock()
    both = threading.Barrier(2, timeout=WATCHDOG)

    class PF:
        def read_row_groups(self, rgs, columns=None, use_threads=True):
            with lock:
                running[0] += 1
                peak.append(running[0])
                seen.append(list(rgs))
            try:
                if rgs[0] >= 4:  # the last batch's two pieces meet here
                    both.wait()
                return pa.table({"r": pa.array(rgs, pa.int64())})
            finally:
                with lock:
                    running[0] -= 1

    batches = [([0], False), ([1, 2], False), ([3], False), ([4, 5, 6, 7], True)]
    got = eager._decoded(PF, batches, None, None, None, n=2)
    assert got.column("r").to_pylist() == list(range(8))
    assert seen[:3] == [[0], [1, 2], [3]] and sorted(seen[3:]) == [[4, 5], [6, 7]]
    assert max(peak[:3]) == 1
