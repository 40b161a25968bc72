"""The long reliability run of colio's Python package (``make stress``).

16 threads repeat, for about a million operations, what the pytest suite
checks once: read_into/read/read_async/read_ranges(_async) of file, memory
and callable sources; write_async at offsets and appends through
colio.sink, verified with the built-in open(); sources closed under their
own in-flight reads and under other threads' submissions; callable reads
that raise on purpose (the exception must reach exactly that future);
cancel; colio.open with seeks; handle open/close cycles. Every byte is
compared with the generator's bytes or the built-in open's, never with
colio's own output.

A warm-up quarter runs first; descriptors, threads and RSS are sampled with
every worker parked after it and again after the main run, and growth
beyond a tolerance fails. Every wait has a timeout (a hang is counted, not
waited out) and a monitor exits the process if no round finishes for
HANG_S seconds. The last line is machine-readable for run.py.

Usage: python stress.py [scale]   (or STRESS_SCALE; 1.0 = 1.1 million ops)
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import errno
import faulthandler
import gc
import os
import random
import sys
import tempfile
import threading
import time
import traceback

import colio
from colio import _future as colio_future  # the registry of in-flight futures, for the leak check

NTHREADS = 16
BASE_OPS = 880_000             # after the warm-up quarter: 1.1 million in all
DATA_SIZE = (4 << 20) - 333   # odd: reads cross the end
BLOCK = 4096                  # fault injection granularity
WAIT_S = 60.0                 # one wait longer than this is a hang
HANG_S = 120                  # no round finished this long: exit as hung
# Growth tolerated between the samples (see stress.c). malloc'd bytes and
# live Python objects are the sharp leak checks (a leaked future, buffer or
# message per operation is far above them). RSS is looser: glibc keeps
# freed memory in its per-thread arenas (measured from /proc/self/smaps:
# 13 MiB of RSS growth over a full run, nearly all in those arenas, with
# malloc'd bytes flat and Go's heap +1.4 MiB).
TOL_FDS, TOL_THREADS, TOL_RSS, TOL_HEAP, TOL_OBJECTS = 2, 8, 32 << 20, 4 << 20, 5000

DATA = random.Random(8).randbytes(DATA_SIZE)
LOCK = threading.Lock()
C = dict(ops=0, mismatches=0, hangs=0, faults=0, closed=0, cancelled=0, refused=0)
PROGRESS = [0]


def add(key: str, n: int = 1) -> None:
    with LOCK:
        C[key] += n


def mismatch(what: str, detail: str = "") -> None:
    with LOCK:
        C["mismatches"] += 1
        first = C["mismatches"] <= 20
    if first:
        print(f"MISMATCH {what}: {detail}", file=sys.stderr, flush=True)


class Hang(Exception):
    pass


def result(fut):
    """fut.result() with a hang limit: a hang is counted and raised."""
    try:
        return fut.result(timeout=WAIT_S)
    except cf.TimeoutError:
        add("hangs")
        print(f"HANG: a future did not complete in {WAIT_S:.0f} s: {fut!r}", file=sys.stderr)
        raise Hang() from None


def expect(off: int, size: int) -> bytes:
    return DATA[off:off + size]


def poisoned(off: int) -> bool:
    return ((off // BLOCK) * 0x9E3779B97F4A7C15 % (1 << 64) >> 60) % 5 == 0


def cb_read(buf, off):
    n = min(len(buf), DATA_SIZE - off)
    buf[:n] = DATA[off:off + n]
    return n


def fault_read(buf, off):
    if poisoned(off):
        raise OSError(errno.EIO, f"stress: poisoned block {off // BLOCK}")
    return cb_read(buf, off)


def slow_read(buf, off):
    time.sleep(0.0003)
    return cb_read(buf, off)


class Worker:
    def __init__(self, i: int, ctx):
        self.i = i
        self.r = random.Random(1000 + i)
        self.ctx = ctx
        self.ops = 0
        self.wpath = os.path.join(ctx.dir, f"sink-{i}.bin")
        self.callbacks_added = self.callbacks_run = 0  # done-callbacks: each runs once

    # -- helpers -----------------------------------------------------------

    def count(self, n: int = 1) -> None:
        self.ops += n
        add("ops", n)

    def size(self, cap: int) -> int:
        k = self.r.randrange(100)
        if k < 65:
            s = self.r.randint(0, 4096)
        elif k < 92:
            s = self.r.randint(4097, 160 << 10)
        else:
            s = self.r.randint(160 << 10, 512 << 10)
        return min(s, cap)

    def off(self) -> int:
        k = self.r.randrange(100)
        if k < 3:
            return DATA_SIZE
        if k < 10:
            return DATA_SIZE - self.r.randint(1, 8192)
        return self.r.randrange(DATA_SIZE)

    def pick(self):
        c = self.ctx
        return self.r.choice((c.file, c.mem, c.file, c.mem, c.cb))

    def check(self, what, got, off, size):
        want = expect(off, size)
        if bytes(got) != want:
            mismatch(what, f"offset {off} size {size}: {len(got)} bytes, want {len(want)}")
        self.count()

    # -- rounds ----------------------------------------------------------------

    def round_sync(self):
        for _ in range(6):
            src, off, size = self.pick(), self.off(), self.size(1 << 20)
            if self.r.randrange(2):
                buf = bytearray(size)
                n = src.read_into(buf, off)
                self.check("read_into", memoryview(buf)[:n], off, size)
            else:
                self.check("read", src.read(off, size), off, size)

    def round_async(self):
        items = []
        for _ in range(12):
            src, off, size = self.pick(), self.off(), self.size(256 << 10)
            buf = bytearray(size)
            fut = src.read_async(buf, off)
            fut.add_done_callback(self.on_done)
            self.callbacks_added += 1
            items.append((fut, buf, off, size))
        for fut, buf, off, size in reversed(items):
            n = result(fut)
            self.check("read_async", memoryview(buf)[:n], off, size)

    def on_done(self, fut):
        with LOCK:
            self.callbacks_run += 1

    def round_ranges(self):
        src = self.pick()
        k = 64
        rs = [(self.off(), self.size(32 << 10)) for _ in range(k)]
        if self.r.randrange(3) == 0:
            for (off, size), mv in zip(rs, src.read_ranges(rs)):
                self.check("read_ranges", mv, off, size)
            return
        futs = src.read_ranges_async(rs)
        if self.r.randrange(2):  # the standard library's waiting, as users do
            where = {f: i for i, f in enumerate(futs)}
            try:
                for f in cf.as_completed(futs, timeout=WAIT_S):
                    self.check("read_ranges_async (as_completed)", f.result(), *rs[where[f]])
            except cf.TimeoutError:
                add("hangs")
                raise Hang() from None
            return
        order = list(range(k))
        self.r.shuffle(order)
        for i in order:
            self.check("read_ranges_async", result(futs[i]), *rs[i])

    def round_fault(self):
        """Ranges in distinct blocks of a source whose read raises in
        poisoned blocks: exactly those futures carry the exception that was
        raised for their own block."""
        rs = []
        for _ in range(16):
            b, inb = self.r.randrange(DATA_SIZE // BLOCK), self.r.randrange(BLOCK)
            rs.append((b * BLOCK + inb, self.r.randint(1, BLOCK - inb)))
        futs = self.ctx.fault.read_ranges_async(rs)
        for (off, size), fut in zip(rs, futs):
            try:
                mv = result(fut)
            except Hang:
                raise
            except OSError as e:
                want = f"poisoned block {off // BLOCK}"
                if not poisoned(off) or e.errno != errno.EIO or want not in str(e):
                    mismatch("fault: an error reached the wrong future", f"offset {off}: {e!r}")
                else:
                    add("faults")
                self.count()
                continue
            if poisoned(off):
                mismatch("fault: a poisoned read succeeded", f"offset {off}")
                self.count()
            else:
                self.check("fault: a healthy range", mv, off, size)

    def round_close(self):
        """A source closed with its own reads in flight: each completes with
        the right bytes or raises ClosedError; none hangs."""
        if self.r.randrange(2):
            src, lo, hi = colio.source(self.ctx.path), 129 << 10, 200 << 10
        else:
            src, lo, hi = colio.from_callable(slow_read, DATA_SIZE), 1, 32 << 10
        items = []
        for _ in range(12):
            off, size = self.r.randrange(DATA_SIZE), self.r.randint(lo, hi)
            buf = bytearray(size)
            items.append((src.read_async(buf, off), buf, off, size))
        src.close()
        for fut, buf, off, size in items:
            try:
                n = result(fut)
            except colio.ClosedError:
                add("closed")
                self.count()
                continue
            self.check("close race", memoryview(buf)[:n], off, size)

    def round_slot(self):
        """A memory source that any thread may replace (closing the old one)
        while others submit to it: a submission to the closed source raises
        ClosedError, an accepted read completes right or with ClosedError."""
        c = self.ctx
        if self.r.randrange(4) == 0:
            fresh = colio.from_buffer(DATA)
            with c.slot_lock:
                old, c.slot = c.slot, fresh
            old.close()
            return
        src = c.slot
        rs = [(self.r.randrange(DATA_SIZE), self.r.randint(1, 200 << 10)) for _ in range(8)]
        try:
            futs = src.read_ranges_async(rs)
        except colio.ClosedError:
            add("refused")
            self.count()
            return
        except colio.InvalidArgumentError as e:
            # A submission that races close() must say the source is
            # closed, as every other call on a closed source does.
            mismatch("slot: a read racing close() raised InvalidArgumentError, not "
                     "ClosedError", str(e))
            self.count()
            return
        for (off, size), fut in zip(rs, futs):
            try:
                mv = result(fut)
            except colio.ClosedError:
                add("closed")
                self.count()
                continue
            self.check("slot read", mv, off, size)

    def round_cancel(self):
        """Reads queued behind a slow serial callable, most cancelled: a
        cancel that returns True ends the future cancelled and leaves its
        buffer alone; one that returns False ends it with the right bytes."""
        src = colio.from_callable(slow_read, DATA_SIZE, concurrent=False)
        items = []
        for i in range(12):
            off = self.r.randrange(DATA_SIZE - 1024)
            buf = bytearray(b"\x5a" * 1024)
            fut = src.read_async(buf, off)
            items.append((fut, buf, off, i >= 3 and fut.cancel()))
        for fut, buf, off, cancelled in items:
            if cancelled:
                try:
                    result(fut)
                    mismatch("cancelled future has a result", f"offset {off}")
                except cf.CancelledError:
                    add("cancelled")
                self.count()
            else:
                n = result(fut)
                self.check("read that cancel found started", memoryview(buf)[:n], off, 1024)
        src.close()  # running reads end first: no buffer is written after this
        for fut, buf, off, cancelled in items:
            if cancelled and buf != b"\x5a" * 1024:
                mismatch("a cancelled read wrote its buffer", f"offset {off}")

    def round_write(self):
        """write_async at shuffled offsets (and some write()), then appends
        through a sink opened "a": offsets in call order; the file, read
        with the built-in open, is the image."""
        sizes = [self.r.randint(1, 48 << 10) for _ in range(24)]
        at = [sum(sizes[:i]) for i in range(len(sizes))]
        total = sum(sizes)
        img = self.r.randbytes(total)
        half = 12
        order = list(range(half))
        self.r.shuffle(order)
        with colio.sink(self.wpath, "w") as k:
            futs = []
            for j, c in enumerate(order):
                chunk = memoryview(img)[at[c]:at[c] + sizes[c]]
                if j % 4 == 0:
                    if k.write(chunk, at[c]) != sizes[c]:
                        mismatch("write", f"offset {at[c]}")
                    self.count()
                else:
                    futs.append((k.write_async(chunk, at[c]), sizes[c]))
            for j, (fut, size) in enumerate(futs):
                if j % 2 == 0 and result(fut) != size:  # the rest: close waits for them
                    mismatch("write_async", f"{fut.nbytes} of {size}")
                self.count()
        with colio.sink(self.wpath, "a") as k:
            futs = [k.write_async(memoryview(img)[at[c]:at[c] + sizes[c]]) for c in range(half, 24)]
            for c, fut in zip(range(half, 24), futs):
                if fut.offset != at[c] or result(fut) != sizes[c]:
                    mismatch("append", f"offset {fut.offset}, want {at[c]}")
                self.count()
        with open(self.wpath, "rb") as f:
            if f.read() != img:
                mismatch("write: the file on disk is not the image", f"{total} bytes")

    def round_open(self):
        """colio.open: seeks of every whence, read/read1/readinto/peek,
        against the same calls on the built-in open."""
        with colio.open(self.ctx.path, "rb") as f, open(self.ctx.path, "rb") as g:
            for _ in range(12):
                k = self.r.randrange(6)
                if k == 0:
                    off = self.r.randrange(DATA_SIZE + 10)
                    a, b = f.seek(off), g.seek(off)
                elif k == 1:
                    d = self.r.randint(-5000, 5000)
                    d = max(d, -g.tell())
                    a, b = f.seek(d, os.SEEK_CUR), g.seek(d, os.SEEK_CUR)
                elif k == 2:
                    d = -self.r.randrange(10000)
                    a, b = f.seek(d, os.SEEK_END), g.seek(d, os.SEEK_END)
                elif k == 3:
                    n = self.r.randint(0, 300000)
                    a, b = f.read(n), g.read(n)
                elif k == 4:
                    n = self.r.randint(0, 100000)
                    a = f.read1(n)
                    b = g.read(len(a))
                    if not a and n and g.read(1):  # read1 returns b"" only at the end
                        mismatch("colio.open read1 returned nothing before the end")
                else:
                    ba, bb = bytearray(self.r.randint(0, 70000)), bytearray(0)
                    na = f.readinto(ba)
                    bb = g.read(na)
                    a, b = bytes(ba[:na]), bb
                if a != b or f.tell() != g.tell():
                    mismatch("colio.open differs from open", f"op {k}: tell {f.tell()} vs {g.tell()}")
                self.count()

    def round_cycle(self):
        off, size = self.r.randrange(DATA_SIZE), self.r.randint(1, 8192)
        with colio.source(self.ctx.path) as s:
            self.check("cycle: file", s.read(off, size), off, size)
        with colio.from_buffer(DATA) as s:
            buf = bytearray(size)
            n = result(s.read_async(buf, off))
            self.check("cycle: memory", memoryview(buf)[:n], off, size)
        out = bytearray(size)
        with colio.sink(out) as k:
            k.write(memoryview(DATA)[off:off + size], 0)
        if out != expect(off, size).ljust(size, b"\0"):
            mismatch("cycle: memory sink", f"offset {off}")
        self.count()
        with colio.sink(None) as k:
            if result(k.write_async(b"x" * size)) != size:
                mismatch("cycle: void sink")
        self.count()

    ROUNDS = (("round_sync", 14), ("round_async", 14), ("round_ranges", 30), ("round_fault", 7),
              ("round_close", 6), ("round_slot", 9), ("round_cancel", 3), ("round_write", 5),
              ("round_open", 5), ("round_cycle", 7))

    def run(self, quota: int) -> None:
        names = [n for n, _ in self.ROUNDS]
        weights = [w for _, w in self.ROUNDS]
        end = self.ops + quota
        while self.ops < end:
            name = self.r.choices(names, weights)[0]
            try:
                getattr(self, name)()
            except Hang:
                pass
            except Exception:  # any exception a round does not expect is a failure
                mismatch(name, traceback.format_exc())
                self.ops += 1  # a broken round must not spin for ever
            PROGRESS[0] += 1


# ---- what the process holds ----------------------------------------------------

_libc = ctypes.CDLL(None)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]


_libc.mallinfo2.restype = _Mallinfo2


def heap_bytes() -> int:
    """Bytes malloc has handed out and not had back (as harness.h's)."""
    mi = _libc.mallinfo2()
    return mi.uordblks + mi.hblkhd


def sample():
    time.sleep(0.3)
    gc.collect()
    _libc.malloc_trim(0)
    fds = len(os.listdir("/proc/self/fd")) - 1  # listdir's own
    with open("/proc/self/status") as f:
        threads = next(int(l.split()[1]) for l in f if l.startswith("Threads:"))
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return dict(fds=fds, threads=threads, rss=rss, objects=len(gc.get_objects()),
                heap=heap_bytes())


def figures(s0, s1, ok):
    g = lambda s, k: s[k] if s else -1  # noqa: E731
    return (f"STRESS-FIGURES lang=python ops={C['ops']} mismatches={C['mismatches']} "
            f"hangs={C['hangs']} fds0={g(s0, 'fds')} fds1={g(s1, 'fds')} "
            f"threads0={g(s0, 'threads')} threads1={g(s1, 'threads')} "
            f"rss0={g(s0, 'rss')} rss1={g(s1, 'rss')} ok={int(ok)}")


def monitor(state):
    last, still = -1, 0
    while True:
        time.sleep(1)
        p = PROGRESS[0]
        still = still + 1 if p == last else 0
        last = p
        if still >= HANG_S:
            print(f"HANG: no round finished for {HANG_S} s; stacks:", file=sys.stderr)
            faulthandler.dump_traceback(all_threads=True)
            C["hangs"] += 1
            print(figures(state.get("s0"), None, False), flush=True)
            os._exit(3)


class Ctx:
    pass


def main() -> int:
    scale = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("STRESS_SCALE") or 1.0)
    total = int(BASE_OPS * scale)
    tmp = tempfile.TemporaryDirectory(prefix="colio-stress-py-")
    c = Ctx()
    c.dir = tmp.name
    c.path = os.path.join(tmp.name, "data.bin")
    with open(c.path, "wb") as f:
        f.write(DATA)
    colio.set_config(task_size=64 << 10)  # larger reads split into several tasks
    c.file = colio.source(c.path)
    c.mem = colio.from_buffer(DATA)
    c.cb = colio.from_callable(cb_read, DATA_SIZE)
    c.fault = colio.from_callable(fault_read, DATA_SIZE)
    c.slot = colio.from_buffer(DATA)
    c.slot_lock = threading.Lock()

    state = {}
    threading.Thread(target=monitor, args=(state,), daemon=True).start()
    barrier = threading.Barrier(NTHREADS + 1)
    workers = [Worker(i, c) for i in range(NTHREADS)]
    quota = total // NTHREADS

    def body(w):
        w.run(quota // 4)    # warm-up: pools, caches, heaps and malloc arenas reach their size
        barrier.wait()
        barrier.wait()       # the main thread samples between these two
        w.run(quota)
        barrier.wait()
        barrier.wait()

    threads = [threading.Thread(target=body, args=(w,), name=f"stress-{w.i}") for w in workers]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    barrier.wait()
    warm = C["ops"]
    s0 = state["s0"] = sample()
    barrier.wait()
    t1 = time.monotonic()
    barrier.wait()
    t2 = time.monotonic()
    s1 = sample()
    pending = len(colio_future._pending)  # futures whose completion never came
    barrier.wait()
    for t in threads:
        t.join()
    for s in (c.file, c.mem, c.cb, c.fault, c.slot):
        s.close()
    tmp.cleanup()
    if pending:
        mismatch("futures still registered after every wait", str(pending))
    for w in workers:
        if w.callbacks_run != w.callbacks_added:
            mismatch("done-callbacks run != added", f"{w.callbacks_run} of {w.callbacks_added}")

    grow_ok = (s1["fds"] - s0["fds"] <= TOL_FDS and s1["threads"] - s0["threads"] <= TOL_THREADS
               and s1["rss"] - s0["rss"] <= TOL_RSS
               and s1["heap"] - s0["heap"] <= TOL_HEAP
               and s1["objects"] - s0["objects"] <= TOL_OBJECTS)
    ok = C["mismatches"] == 0 and C["hangs"] == 0 and grow_ok
    measured = C["ops"] - warm
    mib = 1 << 20
    print(f"stress python: {C['ops']} operations from {NTHREADS} threads in {t2 - t0:.1f} s "
          f"({measured} after warm-up, {measured / (t2 - t1):.0f}/s)")
    print(f"stress python: mismatches {C['mismatches']}, hangs {C['hangs']}; faults delivered "
          f"{C['faults']}, closed {C['closed']}, cancelled {C['cancelled']}, refused after "
          f"replace {C['refused']}")
    print(f"stress python: fds {s0['fds']} -> {s1['fds']} (tolerance +{TOL_FDS}), threads "
          f"{s0['threads']} -> {s1['threads']} (+{TOL_THREADS}), RSS {s0['rss'] / mib:.1f} -> "
          f"{s1['rss'] / mib:.1f} MiB ({(s1['rss'] - s0['rss']) / mib:+.1f}, +{TOL_RSS // mib}), "
          f"malloc'd {(s1['heap'] - s0['heap']) / mib:+.2f} MiB (+{TOL_HEAP // mib}), Python objects {s0['objects']} -> {s1['objects']} (+{TOL_OBJECTS}); "
          f"left in registries: callback errors {len(c.fault._errors)}, handles to free "
          f"{len(colio_future._to_free)}")
    print(figures(s0, s1, ok), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
