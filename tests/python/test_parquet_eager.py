"""colio.parquet.read_table's decode-as-it-arrives path (colio._parquet_eager):
row groups in the order asked (duplicates too), a range that fails part-way
raises its error and leaves no read running, filters prune row groups by
their statistics before anything of them is fetched, the in-flight window
starts row groups in order, coalesce_hole / coalesce_max reach the source,
the kept mapping is reused only when nothing refers to it; local paths are
memory-mapped and give the same tables. Every table is compared with
pyarrow's read of the local file."""

import os
import threading

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")

import colio  # noqa: E402
import colio._parquet_eager as eager  # noqa: E402
import colio.parquet as cpq  # noqa: E402

N, RG = 4000, 500   # 8 row groups


@pytest.fixture(scope="module")
def pfile(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("eager") / "t.parquet")
    t = pa.table({"id": pa.array(range(N), pa.int64()),
                  "x": pa.array([i * 0.25 for i in range(N)]),
                  "s": pa.array([None if i % 7 == 0 else f"s{i % 13}" for i in range(N)]),
                  "l": pa.array([list(range(i % 3)) for i in range(N)], pa.list_(pa.int16()))})
    pq.write_table(t, p, row_group_size=RG)
    return p


@pytest.fixture(autouse=True)
def small_tail(monkeypatch):
    """A first tail read (and a native URL's open) of 512 bytes, so that the
    footer's read does not hold the row groups of this small file."""
    monkeypatch.setattr(cpq, "TAIL", 512)
    monkeypatch.setattr(cpq, "OPEN_TAIL", 512)  # and of a native URL's open


class Recorder:
    """A callable source over the file's bytes that records each read's
    (offset, size) and when it started and ended, and can fail one."""

    def __init__(self, path, fail_at=None):
        self.data = open(path, "rb").read()
        self.fail_at = fail_at
        self.lock = threading.Lock()
        self.events = []   # ("start"|"end", offset, size)

    def __call__(self, buf, offset):
        n = len(buf)
        with self.lock:
            self.events.append(("start", offset, n))
        try:
            if self.fail_at is not None and offset <= self.fail_at < offset + n:
                raise OSError(5, f"boom at {self.fail_at}")
            got = self.data[offset:offset + n]
            buf[:len(got)] = got
            return len(got)
        finally:
            with self.lock:
                self.events.append(("end", offset, n))

    def source(self):
        src = colio.from_callable(self, len(self.data))
        src.set_coalesce(0)  # the tail read is then TAIL, not the hole
        return src

    def reads(self):
        return [(o, n) for k, o, n in self.events if k == "start"]


def rg_bytes(md, r):
    """The [start, end) of row group r's column chunks."""
    spans = [cpq._chunk(md.row_group(r).column(c)) for c in range(md.num_columns)]
    return min(o for o, _ in spans), max(o + n for o, n in spans)


def test_row_groups_in_the_order_asked(pfile):
    ref = pq.ParquetFile(pfile)
    for rgs in ([7, 0, 3], [2, 2, 5, 2], [5], [], list(range(8))[::-1]):
        for cols in (None, ["s"], ["l", "id"]):
            want = ref.read_row_groups(rgs, columns=cols)
            with colio.source(pfile) as src:  # colio's reads; a path is memory-mapped
                for where in (pfile, src):
                    got = cpq.read_table(where, columns=cols, row_groups=rgs)
                    assert got.equals(want), (rgs, cols, where)
                    assert got.column_names == want.column_names


def test_each_row_group_is_fetched_once(pfile):
    rec = Recorder(pfile)
    with rec.source() as src:
        got = cpq.read_table(src, columns=["x"], row_groups=[4, 4, 1])
    assert got.equals(pq.ParquetFile(pfile).read_row_groups([4, 4, 1], columns=["x"]))
    md = pq.read_metadata(pfile)
    chunk_reads = [(o, n) for o, n in rec.reads() if o < rg_bytes(md, 7)[1]]
    assert sorted(chunk_reads) == sorted(set(chunk_reads))  # row group 4 once
    assert len(chunk_reads) == 2


def test_a_failed_range_part_way_raises(pfile):
    md = pq.read_metadata(pfile)
    lo, hi = rg_bytes(md, 5)
    rec = Recorder(pfile, fail_at=(lo + hi) // 2)
    with rec.source() as src:
        with pytest.raises(OSError, match="boom"):
            cpq.read_table(src)
        # Nothing of that read still runs once it raised: every read that
        # started has ended (the buffer is not written after the raise).
        with rec.lock:
            starts = sum(1 for e in rec.events if e[0] == "start")
            ends = sum(1 for e in rec.events if e[0] == "end")
        assert starts == ends
        rec.fail_at = None  # the source is still usable, and right
        assert cpq.read_table(src).equals(pq.read_table(pfile))


def test_filters_prune_row_groups_before_fetching(pfile):
    md = pq.read_metadata(pfile)
    cases = [([("id", ">=", 3600)], ["x"]),                       # row groups 7 only
             ([("id", "<", 600), ("s", "!=", "s3")], None),        # 0 and 1
             (pc.field("id") >= 3999, ["s", "id"]),                # expression: 7
             ([("id", ">", 10 ** 9)], ["x"])]                      # none
    for flt, cols in cases:
        want = pq.read_table(pfile, columns=cols, filters=flt)
        rec = Recorder(pfile)
        with rec.source() as src:
            got = cpq.read_table(src, columns=cols, filters=flt)
        assert got.equals(want), flt
        assert got.column_names == want.column_names
        first = min(o for o, _ in rec.reads() if o < rg_bytes(md, 7)[1]) if len(want) else None
        lowest_kept = min((r for r in range(8) if _matches_rg(pfile, r, flt)), default=None)
        if lowest_kept is None:
            assert all(o >= rg_bytes(md, 7)[1] for o, _ in rec.reads())  # only the tail
        else:
            assert first >= rg_bytes(md, lowest_kept)[0]
        assert cpq.read_table(pfile, columns=cols, filters=flt).equals(want), flt  # mapped
    # With row groups named as well: the filter applies within them.
    flt = [("id", ">=", 1234)]
    want = pq.ParquetFile(pfile).read_row_groups([3, 1]).filter(pq.filters_to_expression(flt))
    assert cpq.read_table(pfile, filters=flt, row_groups=[3, 1]).equals(want)
    with colio.source(pfile) as src:
        assert cpq.read_table(src, filters=flt, row_groups=[3, 1]).equals(want)


def _matches_rg(path, r, flt):
    t = pq.ParquetFile(path).read_row_group(r)
    expr = pq.filters_to_expression(flt) if isinstance(flt, list) else flt
    return len(t.filter(expr)) > 0


def test_the_window_starts_row_groups_in_order(pfile, monkeypatch):
    """With a window of one byte, row group k+1's reads start only after
    row group k's have ended; the table is the same."""
    monkeypatch.setattr(eager, "WINDOW", 1)
    md = pq.read_metadata(pfile)
    rec = Recorder(pfile)
    with rec.source() as src:
        got = cpq.read_table(src, columns=["id", "s"])
    assert got.equals(pq.read_table(pfile, columns=["id", "s"]))
    bounds = [rg_bytes(md, r) for r in range(8)]

    def rg_of(o):
        return next((r for r, (lo, hi) in enumerate(bounds) if lo <= o < hi), None)
    seen_end, order = set(), []
    for kind, o, _ in rec.events:
        r = rg_of(o)
        if r is None:
            continue
        if kind == "start":
            assert r == 0 or r - 1 in seen_end, f"row group {r} started before {r - 1} ended"
            if not order or order[-1] != r:
                order.append(r)
        else:
            seen_end.add(r)
    assert order == list(range(8))


def test_coalesce_options_reach_the_source(pfile, server):
    """coalesce_hole merges a row group's chunks of ["id", "l"] across the
    columns between them; coalesce_hole=0 leaves one request per chunk."""
    data = open(pfile, "rb").read()
    server.files["/e.parquet"] = data
    url = server.url + "/e.parquet"
    want = pq.read_table(pfile, columns=["id", "l"])
    counts = {}
    for hole in (0, 1 << 20):
        server.reset()
        got = cpq.read_table(url, columns=["id", "l"], coalesce_hole=hole, coalesce_max=64 << 20)
        assert got.equals(want)
        counts[hole] = server.range_requests
    assert counts[1 << 20] < counts[0]
    with colio.source(pfile) as src, pytest.raises(TypeError, match="coalesce"):
        cpq.read_table(src, coalesce_hole=0)


def test_plan_pads_and_stops_at_the_tail(pfile):
    md = pq.read_metadata(pfile)
    last = rg_bytes(md, 7)[1]
    reads = eager.plan(md, range(md.num_columns), range(8), last, 0, 1 << 30)
    for r, rs in reads.items():
        lo, hi = rg_bytes(md, r)
        assert rs[0][0] == lo and rs[-1][0] + rs[-1][1] == min(hi + eager.PAD, last)


def test_the_kept_mapping_is_reused_only_when_nothing_refers_to_it(pfile, tmp_path):
    """The last read's mapping is taken again (its pages are backed), but
    never while a buffer export of it is alive, and stale bytes of another
    file in it are never read."""
    other = str(tmp_path / "other.parquet")
    pq.write_table(pa.table({"id": pa.array(range(N, 0, -1), pa.int64()),
                             "x": pa.array([-1.5] * N)}), other, row_group_size=RG)
    def read(path, cols=None):  # through colio's reads (a path is memory-mapped)
        with colio.source(path) as src:
            return cpq.read_table(src, columns=cols)
    read(pfile)                             # fills a mapping with pfile's bytes
    m = eager._cache
    assert m is not None
    held = pa.py_buffer(m)                  # as a table referring to it would
    before = bytes(held)
    got = read(other, ["x"])
    assert got.equals(pq.read_table(other, columns=["x"]))
    assert bytes(held) == before            # not written: another mapping was used
    assert eager._cache is not m
    del held
    mine = eager._cache
    for cols in (None, ["id"], ["x"]):      # the same mapping, over pfile's stale bytes
        assert read(other, cols).equals(pq.read_table(other, columns=cols))
        assert eager._cache is mine


def test_a_local_file_read_again_keeps_its_map_until_it_changes(tmp_path, monkeypatch):
    """The second read of an unchanged local file maps nothing again; a file
    rewritten in place or replaced by another is mapped afresh and read as
    it is now (each table compared with pyarrow's read of the file)."""
    p = str(tmp_path / "m.parquet")

    def write(k):
        pq.write_table(pa.table({"id": pa.array(range(k, k + N), pa.int64()),
                                 "x": pa.array([i * 0.5 for i in range(N)])}), p,
                       row_group_size=RG)

    write(0)
    maps = []
    real = eager._map_file
    monkeypatch.setattr(eager, "_map_file", lambda path: maps.append(path) or real(path))
    for _ in range(3):
        assert cpq.read_table(p, columns=["id"]).equals(pq.read_table(p, columns=["id"]))
    assert len(maps) == 1
    write(7)  # in place: the same inode, a new mtime
    assert cpq.read_table(p).equals(pq.read_table(p))
    assert len(maps) == 2
    q = str(tmp_path / "n.parquet")
    pq.write_table(pa.table({"id": pa.array([5, 6, 7], pa.int64())}), q)
    os.replace(q, p)  # another file under the same name
    assert cpq.read_table(p).equals(pq.read_table(p))
    assert cpq.read_table(p).column("id").to_pylist() == [5, 6, 7]
    assert len(maps) == 3


def _lazyfree_kb(m) -> int:
    """LazyFree of mapping m in /proc/self/smaps: its pages given back
    with MADV_FREE and not written since."""
    import ctypes
    c = ctypes.c_char.from_buffer(m)
    addr = ctypes.addressof(c)
    del c
    inside, kb = False, 0
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and all(ch in "0123456789abcdef-" for ch in head):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "LazyFree:":
                kb += int(line.split()[1])
    return kb


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc/self/smaps")
def test_the_kept_mapping_stays_backed_between_reads_and_is_freed_when_idle(tmp_path,
                                                                           monkeypatch):
    """Reads in a row find the kept mapping's pages as they left them (a
    MADV_FREE after each read made the next one fault them in again); once
    idle for IDLE_FREE they are given back, and the next read takes the
    mapping again and reads right. (A file of some MB: the kernel gives
    back only pages on its LRU lists, which a few just-touched ones are
    not yet.)"""
    import mmap
    if not hasattr(mmap, "MADV_FREE"):
        pytest.skip("no MADV_FREE")
    monkeypatch.setattr(eager, "IDLE_FREE", 0.3)
    path = str(tmp_path / "big.parquet")
    pq.write_table(pa.table({"a": pa.array([(i * 7919) % 1000003 * 0.5 for i in range(300000)]),
                             "b": pa.array(range(300000), pa.int64())}), path,
                   row_group_size=50000, compression="none")
    want = pq.read_table(path)

    def read():
        with colio.source(path) as src:
            assert cpq.read_table(src).equals(want)
        return eager._cache

    m = read()
    assert m is not None and _lazyfree_kb(m) == 0
    assert read() is m and _lazyfree_kb(m) == 0   # taken again, nothing given back
    for _ in range(100):
        if eager._freed is m:
            break
        import time
        time.sleep(0.02)
    assert eager._freed is m and eager._cache is m
    assert _lazyfree_kb(m) > 0
    assert read() is m and eager._freed is None
