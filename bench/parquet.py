"""Workload 8 of bench/run.py: Parquet column reads over HTTP (issue 16).

A Parquet file of 20 row groups x 30 float64 columns (about 200 MB; 20 MB
with --quick), written by pyarrow, served by cmd/colio-testserver on
loopback with 0, 5 and 20 ms before every answer, and read as a local file.
Two selections: 3 of the 30 columns, and all of them. Methods:

- colio: ``colio.parquet.read_table(url, columns=...)``: a repeated read,
  as every method's timed reads are. The object's footer is kept from the
  first read (colio/_parquet_footers.py), so one round trip fetches every
  chunk at once (If-Match with the object's ETag), row groups decoded on
  several threads as they arrive (colio/_parquet_eager.py and
  _parquet_decode.py). The same read with the footer cleared first (the
  open's GET of the last 1 MiB with the footer, then the chunks: a first
  read) is timed too, and its median is in the note;
- pyarrow over an fsspec HTTP file: ``pq.read_table(fs.open(url))``, its
  default (``pre_buffer=True``: Arrow's ReadRangeCache, 8 KiB hole), and
  ``pq.ParquetFile(f).read`` with ``pre_buffer=False``;
- ``fsspec.parquet.open_parquet_file(url, columns=...)`` + pyarrow;
- ``polars.read_parquet(url, columns=...)`` (its own object-store reader);
- pyarrow over obstore's fsspec file system (``obstore.fsspec``), if
  installed.

Every method's table is checked once against pyarrow's read of the local
file (column by column, as numpy arrays) before it is timed; rounds are
interleaved as in the rest of bench/run.py (3 per latency, 15 for the local
file), and the methods under FAST (0.5 s) a read then get EXTRA (6; 25 for
the local file) more rounds among themselves, so that their medians are
not those of 3 samples. The server's request count for
one read of each method, and the median CPU time of this process per read
(steadier than wall time on a shared machine), are printed in the table's
note.

    python bench/run.py --only 8 [--quick]
"""

from __future__ import annotations

import os
import resource
import statistics

import numpy as np
from goserver import GoServer

MiB = 1 << 20
BUCKET, KEY = "bench", "data.parquet"
NCOLS, NRG = 30, 20
THREE = ["c00", "c11", "c22"]


class Server(GoServer):
    """One cmd/colio-testserver with a fixed latency, serving the file."""

    def __init__(self, directory, latency):
        super().__init__(directory, latency)
        self.url = f"{self.endpoint}/{BUCKET}/{KEY}"

    def requests(self, reset=False):
        return self.stats(reset)["requests"]


def write_file(path, quick):
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = (16 if quick else 160) * MiB // (NCOLS * 8)  # ~200 MB on disk (page overhead)
    rows -= rows % NRG
    rng = np.random.default_rng(16)
    t = pa.table({f"c{i:02d}": rng.random(rows) for i in range(NCOLS)})
    pq.write_table(t, path, row_group_size=rows // NRG, compression="snappy")
    return t


# ---- the methods: maker(url) -> fn(columns) -> pyarrow.Table, or a reason -------------

def _colio(url):
    import colio.parquet
    return lambda cols: colio.parquet.read_table(url, columns=cols)


FIRST = "colio.parquet.read_table, first read"


def _colio_first(url):
    """colio's read with no footer kept from an earlier one (a process's
    first read of the object: two round trips, not one)."""
    import colio._parquet_footers
    import colio.parquet

    def read(cols):
        colio._parquet_footers.clear()
        return colio.parquet.read_table(url, columns=cols)
    return read


def _fsspec_default(url):
    import fsspec
    import pyarrow.parquet as pq

    def read(cols):
        fs = fsspec.filesystem("http", skip_instance_cache=True)
        with fs.open(url, "rb") as f:
            return pq.read_table(f, columns=cols)
    return read


def _fsspec_no_prebuffer(url):
    import fsspec
    import pyarrow.parquet as pq

    def read(cols):
        fs = fsspec.filesystem("http", skip_instance_cache=True)
        with fs.open(url, "rb") as f:
            return pq.ParquetFile(f, pre_buffer=False).read(columns=cols)
    return read


def _fsspec_parquet(url):
    import fsspec.parquet
    import pyarrow.parquet as pq

    def read(cols):
        with fsspec.parquet.open_parquet_file(url, columns=cols, engine="pyarrow") as f:
            return pq.read_table(f, columns=cols)
    return read


def _polars(url):
    import polars as pl
    return lambda cols: pl.read_parquet(url, columns=cols).to_arrow()


def _obstore(url):
    try:
        from obstore.fsspec import FsspecStore
    except ImportError as e:
        return f"obstore.fsspec: {e}"
    import pyarrow.parquet as pq

    def read(cols):
        fs = FsspecStore("http", client_options={"allow_http": True}, skip_instance_cache=True)
        with fs.open(url, "rb") as f:
            return pq.read_table(f, columns=cols)
    return read


PEERS = {"pyarrow + fsspec (default)": _fsspec_default,
         "pyarrow + fsspec, pre_buffer=False": _fsspec_no_prebuffer,
         "fsspec.parquet + pyarrow": _fsspec_parquet,
         "polars.read_parquet(url)": _polars,
         "pyarrow + obstore.fsspec": _obstore}
LOCAL_PEERS = {"pyarrow.parquet.read_table": lambda p: (
    lambda cols: __import__("pyarrow.parquet").parquet.read_table(p, columns=cols)),
    "polars.read_parquet": _polars}


def _same(got, want, cols):
    names = cols or want.column_names
    if got.num_rows != want.num_rows or sorted(got.column_names) != sorted(names):
        return False
    return all(np.array_equal(got.column(c).to_numpy(), want.column(c).to_numpy()) for c in names)


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(bench, fn, cpu):
    """bench.timed(fn), and the CPU time this process spent in it into cpu."""
    c0 = _cpu()
    t = bench.timed(fn)
    cpu.append(_cpu() - c0)
    return t


def _lat(s):
    return "0" if s == 0 else f"{s * 1e3:g} ms"


def run(cfg, tmp, bench):
    """The workload; ``bench`` is bench/run.py (its case/interleave/log)."""
    quick = cfg.quick
    d = os.path.join(tmp, "parquet")
    os.makedirs(os.path.join(d, BUCKET), exist_ok=True)
    path = os.path.join(d, BUCKET, KEY)
    want = write_file(path, quick)
    size = os.path.getsize(path)
    rounds = 2 if quick else 3
    latencies = [0, 0.020] if quick else [0, 0.005, 0.020]
    bench.log(f"[8] parquet: {size / MiB:.0f} MB, {NRG} row groups x {NCOLS} columns")
    # A local read takes 10-130 ms: more rounds cost little, and 3 let one
    # slow round (22 ms among 11 ms ones) set the median.
    out = [*_cells(bench, None, path, want, 2 if quick else 15, size, extra=0 if quick else 25)]
    for lat in latencies:
        srv = Server(d, lat)
        try:
            out += _cells(bench, srv, path, want, rounds, size, lat, extra=0 if quick else EXTRA)
        finally:
            srv.close()
    return out


FAST = 0.5         # seconds: methods faster than this get EXTRA more rounds
EXTRA = 6


def _first_note(s):
    """The first-read variant's median, and polars' against it: the table's
    colio column is a repeated read, whose footer is kept."""
    if FIRST not in s or not s[FIRST]:
        return ""
    first = statistics.median(s[FIRST])
    note = f"{FIRST} (no kept footer) {first * 1e3:.1f} ms"
    pol = s.get("polars.read_parquet(url)")
    if pol:
        note += f", polars.read_parquet(url) / it {statistics.median(pol) / first:.2f}"
    return note


def _cells(bench, srv, path, want, rounds, size, lat=None, extra=EXTRA):
    where = srv.url if srv else path
    makers = {"colio.parquet.read_table": _colio, **({FIRST: _colio_first} if srv else {}),
              **(PEERS if srv else LOCAL_PEERS)}
    out = []
    for label, cols in (("3 of 30 columns", THREE), ("all 30 columns", None)):
        fns, errors, counts = {}, {}, {}
        for name, maker in makers.items():
            try:
                fn = maker(where)
                if isinstance(fn, str):
                    raise RuntimeError(fn)
                if srv:
                    if name == "colio.parquet.read_table":
                        fn(cols)  # its timed reads find the footer kept: count one of those
                    srv.requests(reset=True)
                ok = _same(fn(cols), want, cols)
                if srv:
                    counts[name] = srv.requests()
                if not ok:
                    raise AssertionError("read a different table")
                fns[name] = fn
            except Exception as e:  # noqa: BLE001 - a failing peer is reported
                if name.startswith("colio"):
                    raise
                errors[name] = f"{type(e).__name__}: {str(e).strip()[:300]}"
                bench.log(f"[8] {name}: {errors[name]}")
        at = f"HTTP, {_lat(lat)}" if srv else "local file"
        bench.log(f"[8] {label}, {at}: {len(fns)} methods x {rounds} rounds, "
                  f"then up to {extra} more for those under {FAST:g} s")
        cpu = {k: [] for k in fns}
        timed = {k: (lambda fn=fn, k=k: _timed(bench, lambda: fn(cols), cpu[k]))
                 for k, fn in fns.items()}
        s = bench.interleave(timed, rounds)
        # More rounds for the methods that take under FAST s a read: a
        # median of 3 moves by 10-30 % on this machine, and the slow peers
        # (seconds a read) would make more rounds of everything cost minutes.
        fast = {k: f for k, f in timed.items() if statistics.median(s[k]) < FAST}
        if len(fast) > 1 and extra:
            for k, v in bench.interleave(fast, extra).items():
                s[k].extend(v)
        note = "; ".join(x for x in (
            "server requests per read: " + ", ".join(f"{k} {v}" for k, v in counts.items())
            if counts else "",
            # CPU time of this process per timed read (every method runs in
            # it, polars and the fsspec loop included): steadier than wall
            # time on a machine shared with other work.
            "CPU per read (median): " + ", ".join(
                f"{k} {statistics.median(v) * 1e3:.0f} ms" for k, v in cpu.items() if v)
            if fns else "",
            _first_note(s)) if x) or None
        if note:
            bench.log(f"[8] {label}, {at}: {note}")
        peers = {k: k for k in makers if not k.startswith("colio")}
        nbytes = size if cols is None else size * len(cols) // NCOLS
        out.append(bench.case(8, "Parquet: read_table of a 20 x 30 file", f"{label}, {at}",
                              "colio.parquet.read_table", peers, s, nbytes=nbytes,
                              errors=errors, note=note))
    return out
