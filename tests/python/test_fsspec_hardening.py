"""fsspec sources at the edges (issue 12 items 0 and 5, issue 13 item 2).

- A differential run of every read path (native file, memory buffer, sync
  fsspec over memory and local file systems, async fsspec on its event loop
  over a local HTTP server) and every batch call (read_ranges,
  read_ranges_async, read_ranges_arrow) against os.pread and fs.cat_ranges,
  on seeded random batches with empty, duplicate, overlapping, adjacent,
  at-end and past-end ranges.
- Async fsspec sources: a read interrupted by Ctrl-C or any exception never
  writes into the caller's buffer after the call raised.
- Async fsspec sources: close() fails the reads that have not started.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time

import fsspec
import pytest
from fsspec.asyn import AsyncFileSystem

import colio

pa = pytest.importorskip("pyarrow")

DIFF_SIZE = 50_021       # not a multiple of the task size below
DIFF_TASK_SIZE = 4096    # small, so ranges split into several tasks
DIFF_BATCHES = 200


# ---- the differential run ------------------------------------------------------

@pytest.fixture(scope="module")
def diff_data(tmp_path_factory):
    data = random.Random(12).randbytes(DIFF_SIZE)
    p = tmp_path_factory.mktemp("diff") / "diff.bin"
    with open(p, "wb") as f:  # plain Python, no colio
        f.write(data)
    return data, str(p)


@pytest.fixture
def small_tasks():
    old = colio.get_config()["task_size"]
    colio.set_config(task_size=DIFF_TASK_SIZE)
    yield
    colio.set_config(task_size=old)


def _batches(seed, count, size):
    """Random batches of (offset, size); about one in eight has a range that
    starts past the end (those must raise)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        rs = []
        for _ in range(rng.randint(1, 10)):
            kind = rng.choice(("empty", "plain", "plain", "big", "dup", "overlap",
                               "adjacent", "at-end", "across-end"))
            prev = rs[-1] if rs else (rng.randrange(size), rng.randint(1, 3000))
            if kind == "empty":
                r = (rng.choice((0, rng.randrange(size), size, prev[0], prev[0] + prev[1])), 0)
            elif kind == "plain":
                r = (rng.randrange(size), rng.randint(1, 3000))
            elif kind == "big":
                r = (rng.randrange(size), rng.randint(DIFF_TASK_SIZE, 3 * DIFF_TASK_SIZE + 7))
            elif kind == "dup":
                r = prev
            elif kind == "overlap":
                r = (prev[0] + rng.randint(0, prev[1]), rng.randint(1, 5000))
            elif kind == "adjacent":
                r = (prev[0] + prev[1], rng.randint(1, 3000))
            elif kind == "at-end":
                r = (size, rng.randint(0, 100))
            else:
                r = (size - rng.randint(1, 200), rng.randint(200, 9000))
            rs.append((min(r[0], size), r[1]))
        if rng.random() < 0.125:
            rs.insert(rng.randrange(len(rs) + 1), (size + rng.randint(1, 50), rng.randint(0, 10)))
        out.append(rs)
    return out


def _pread(path, ranges):
    fd = os.open(path, os.O_RDONLY)
    try:
        return [os.pread(fd, n, off) for off, n in ranges]
    finally:
        os.close(fd)


def _read_all_ways(src, ranges):
    """{call: [bytes per range]} for every batch call."""
    arrow = pa.array(src.read_ranges_arrow(ranges))
    return {
        "read_ranges": [bytes(p) for p in src.read_ranges(ranges)],
        "read_ranges_async": [bytes(f.result(30)) for f in src.read_ranges_async(ranges)],
        "read_ranges_arrow": [arrow[i].as_py() for i in range(len(ranges))],
    }


def _sources(kind, data, path, http_server):
    """(source, reference fs and path for fs.cat_ranges, or None)."""
    if kind == "file":
        return colio.source(path), None
    if kind == "buffer":
        return colio.from_buffer(data), None
    if kind in ("fsspec-memory", "memory-url"):
        fs = fsspec.filesystem("memory")
        fs.pipe_file("/colio-hardening/diff.bin", data)
        if kind == "memory-url":
            return colio.source("memory://colio-hardening/diff.bin"), (fs, "/colio-hardening/diff.bin")
        return colio.from_fsspec(fs, "/colio-hardening/diff.bin"), (fs, "/colio-hardening/diff.bin")
    if kind == "fsspec-local":
        fs = fsspec.filesystem("file")
        return colio.from_fsspec(fs, path), (fs, path)
    if kind == "fsspec-http-loop":
        http_server.files["/diff.bin"] = data
        fs = fsspec.filesystem("http")
        url = http_server.url + "/diff.bin"
        src = colio.from_fsspec(fs, url, via="loop")
        assert src.via == "loop"
        return src, (fs, url)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["file", "buffer", "fsspec-memory", "memory-url",
                                  "fsspec-local", "fsspec-http-loop"])
def test_every_read_path_matches_pread_and_cat_ranges(kind, diff_data, small_tasks, http_server):
    """Before the fix, the sync fsspec paths (memory, memory URL, local)
    returned b"" or the wrong range's bytes for a range that followed a
    zero-length one in read_ranges_async (and, racily, read_ranges): the
    zero-length range shared its reserved address with the next range and
    took its captured bytes."""
    data, path = diff_data
    src, ref_fs = _sources(kind, data, path, http_server)
    checked = raised = 0
    try:
        for i, ranges in enumerate(_batches(7, DIFF_BATCHES, DIFF_SIZE)):
            if any(off > DIFF_SIZE for off, _ in ranges):
                for call in (src.read_ranges, src.read_ranges_async, src.read_ranges_arrow):
                    with pytest.raises(colio.InvalidArgumentError, match="past the end"):
                        call(ranges)
                raised += 1
                continue
            want = _pread(path, ranges)
            if ref_fs is not None:
                fs, p = ref_fs
                # A range starting at the end is unsatisfiable over HTTP: the
                # server answers 416, as real ones do, and fsspec returns that
                # error; the reference covers the others.
                inside = [j for j, (o, _) in enumerate(ranges) if o < DIFF_SIZE]
                cat = fs.cat_ranges([p] * len(inside), [ranges[j][0] for j in inside],
                                    [sum(ranges[j]) for j in inside])
                assert [bytes(c) for c in cat] == [want[j] for j in inside], \
                    "reference disagrees with pread"
            for call, got in _read_all_ways(src, ranges).items():
                bad = [j for j, (g, w) in enumerate(zip(got, want)) if g != w]
                assert not bad, (f"{kind} {call} batch {i}: ranges "
                                 f"{[ranges[j] for j in bad]} of {ranges} wrong")
            checked += 1
    finally:
        src.close()
    assert checked > 150 and raised > 10, (checked, raised)


# ---- a slow async file system ------------------------------------------------------

class SlowAsyncFS(AsyncFileSystem):
    """An async fsspec file system over bytes whose _cat_file sleeps
    ``delay`` seconds on the loop, counting the requests that started, were
    cancelled and completed."""

    protocol = "colio-slow"
    cachable = False

    def __init__(self, data, delay, **kwargs):
        super().__init__(**kwargs)
        self.data = data
        self.delay = delay
        self.started = threading.Event()
        self.calls = self.cancelled = self.completed = 0

    async def _cat_file(self, path, start=None, end=None, **kwargs):
        self.calls += 1
        delay = self.delay
        self.started.set()
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.completed += 1
        return self.data[start:end]

    async def _info(self, path, **kwargs):
        return {"name": path, "size": len(self.data), "type": "file"}


class Interrupted(Exception):
    """What the SIGALRM handler raises: any exception, not only Ctrl-C."""


@pytest.fixture(params=["ctrl-c", "exception"])
def interrupt(request):
    """interrupt(fs) arranges for the main thread to be interrupted, by
    SIGINT (KeyboardInterrupt) or by a signal handler that raises
    Interrupted, as soon as fs has started a request. Returns the
    exception type to expect."""
    how = request.param
    old = None
    if how == "exception":
        def handler(signum, frame):
            raise Interrupted("interrupted by SIGALRM")
        old = signal.signal(signal.SIGALRM, handler)
    else:
        # Re-install Python's own SIGINT handler at the C level. After
        # test_arrow.py imports polars, a SIGINT sent to the main thread was
        # seen only once the read had finished (all 5 ctrl-c cases failed in
        # the full suite, none alone); re-installing the handler restores
        # Python's behaviour for these tests.
        old = signal.signal(signal.SIGINT, signal.getsignal(signal.SIGINT))
    sig = signal.SIGINT if how == "ctrl-c" else signal.SIGALRM
    main = threading.main_thread().ident

    def arm(fs):
        def fire():
            if fs.started.wait(10):
                time.sleep(0.05)  # let the caller settle into its wait
                signal.pthread_kill(main, sig)
        threading.Thread(target=fire, daemon=True).start()
        return KeyboardInterrupt if how == "ctrl-c" else Interrupted

    yield arm
    if old is not None:
        signal.signal(sig, old)


CANARY = 0xA5


def _slow_source(data, delay, **kwargs):
    fs = SlowAsyncFS(data, delay)
    return fs, colio.from_fsspec(fs, "/slow.bin", size=len(data), **kwargs)


@pytest.mark.parametrize("nbytes", [1000, 300_000])
def test_interrupted_read_into_never_writes_later(interrupt, small_tasks, nbytes):
    """Before the fix the interrupted call raised while its coroutine kept
    running, and the coroutine wrote the response into the buffer after
    the call had returned (the canary was overwritten once the delay
    passed; in real code the buffer was freed and reused by then)."""
    data = os.urandom(nbytes)
    fs, src = _slow_source(data, delay=0.5)
    buf = bytearray([CANARY]) * nbytes
    with pytest.raises(interrupt(fs)):
        src.read_into(buf, 0)
    assert fs.completed == 0
    assert fs.cancelled == fs.calls > 0, "the call raised before its requests were cancelled"
    time.sleep(0.8)  # past the delay: a live coroutine would have written by now
    assert buf == bytearray([CANARY]) * nbytes
    assert fs.completed == 0
    src.close()


def test_reused_buffer_stays_intact(interrupt):
    """The buffer of an interrupted read_into, reused for the next read:
    before the fix the first read's coroutine overwrote the second read's
    bytes when its delay ended."""
    data = os.urandom(20_000)
    fs, src = _slow_source(data, delay=0.5)
    buf = bytearray(10_000)
    with pytest.raises(interrupt(fs)):
        src.read_into(buf, 0)
    fs.delay = 0
    assert src.read_into(buf, 10_000) == 10_000
    time.sleep(0.8)
    assert buf == data[10_000:]
    src.close()


@pytest.mark.parametrize("nbytes", [1000, 300_000])
def test_interrupted_read_cancels_its_requests(interrupt, small_tasks, nbytes):
    """read() into colio's own buffer: before the fix the requests ran on
    after the call raised (completed == calls once the delay passed) and,
    for a read in several parts, wrote into a freed bytearray."""
    data = os.urandom(nbytes)
    fs, src = _slow_source(data, delay=0.5)
    with pytest.raises(interrupt(fs)):
        src.read(0, nbytes)
    assert fs.cancelled == fs.calls > 0
    time.sleep(0.8)
    assert fs.completed == 0
    fs.delay = 0
    assert src.read(0, nbytes) == data
    src.close()


def test_interrupted_read_ranges_cancels_its_requests(interrupt):
    """Before the fix the coroutines of an interrupted read_ranges ran to
    completion after it raised."""
    data = os.urandom(50_000)
    fs, src = _slow_source(data, delay=0.5)
    ranges = [(i * 5000, 5000) for i in range(8)]
    with pytest.raises(interrupt(fs)):
        src.read_ranges(ranges)
    assert fs.cancelled == fs.calls > 0
    time.sleep(0.8)
    assert fs.completed == 0
    fs.delay = 0
    assert [bytes(p) for p in src.read_ranges(ranges)] == [data[o:o + n] for o, n in ranges]
    src.close()


def test_cancel_of_a_running_loop_read():
    """Future.cancel() of a running async-fsspec read cancels its request
    and nothing is written into the buffer afterwards. Before the fix
    cancel() returned False and the request wrote on."""
    data = os.urandom(4000)
    fs, src = _slow_source(data, delay=0.5)
    buf = bytearray([CANARY]) * 4000
    fut = src.read_async(buf, 0)
    assert fs.started.wait(10)
    assert fut.cancel()
    assert fut.cancelled()
    time.sleep(0.8)
    assert buf == bytearray([CANARY]) * 4000
    assert fs.completed == 0
    src.close()


# ---- close() with queued reads -------------------------------------------------

def test_close_fails_queued_reads():
    """close() fails the reads that have not started with ClosedError, at
    once; the running one may finish. Before the fix the 10 queued reads
    still succeeded, one after the other, after close() returned."""
    data = os.urandom(11 * 1000)
    fs, src = _slow_source(data, delay=0.3, max_in_flight=1)
    bufs = [bytearray(1000) for _ in range(11)]
    futs = [src.read_async(b, i * 1000) for i, b in enumerate(bufs)]
    assert fs.started.wait(10)
    src.close()
    for f in futs[1:]:
        with pytest.raises(colio.ClosedError):
            f.result(5)  # a watchdog, not a timing: they fail as soon as close() ran
    first = futs[0]
    try:
        assert first.result(10) == 1000 and bufs[0] == data[:1000]
    except colio.ClosedError:
        pass
    assert fs.calls == 1, "a queued read started after close()"
    with pytest.raises(colio.ClosedError):
        src.read_async(bytearray(10), 0)
