"""Decoding a Parquet file's row groups while later ones are still arriving
(colio.parquet.read_table; issue 16).

Prefetching everything and then handing pyarrow a Python file object made
the time of a large read fetch + decode, with every read pyarrow made going
through the GIL; polars was ahead because its reader decodes while it
fetches. Here:

- the bytes land in one buffer the size of the file, each range at its own
  offset, so pyarrow reads them through a ``BufferReader``: no Python file
  object, no copy between colio's buffers and pyarrow; pages where nothing
  is fetched are never touched (``_buffer`` says where the memory comes
  from);
- every selected row group's ranges are submitted at once, row group by row
  group in reading order, as ``read_async`` reads into the buffer, merged
  per row group with the source's own coalescing rule (a row group's bytes
  then complete together, which a merge across row groups would delay);
- row group k is decoded (``ParquetFile.read_row_groups``, which releases
  the GIL and decodes columns on pyarrow's threads) as soon as its reads
  are done, together with any later ones already done, while the rest are
  in flight, on several threads at once (colio._parquet_decode: one call
  decodes a row group's columns in parallel but the rest of the call runs
  on its thread, which left a core idle with 3 of 30 columns); the tables
  are concatenated in order at the end.

pyarrow reads nothing here but the column chunks of the row groups and
columns it is asked for (``read_row_groups`` with ``columns`` of top-level
names, pre_buffer off, no page index), and each is fetched whole: from its
dictionary page (or first data page) for total_compressed_size bytes, plus
up to PAD bytes after it, which pyarrow reads past a chunk of files from
parquet-mr before 1.2.9 (PARQUET-816). Dotted column names go through
colio.parquet.open instead, whose file object falls through to the source
for anything not prefetched.
"""

from __future__ import annotations

import mmap
import os
from builtins import open as builtins_open
import threading
import time

from ._parquet_decode import Ordered as _Ordered
from ._parquet_ranges import chunk as _chunk
from ._parquet_ranges import merge as _merge
from ._parquet_ranges import selected as _selected

PAD = 100  # pyarrow's kMaxDictHeaderSize: its read past a chunk for old writers
WINDOW = 1099511627776


def plan(md, leaves, row_groups, limit, hole, cap):
    """{row group: [(offset, size), ...]}: the merged reads of each row
    group's chunks of the leaf columns ``leaves``, none reaching ``limit``
    (where the tail that was read already begins)."""
    out = {}
    for r in row_groups:
        if r in out:
            continue
        rg = md.row_group(r)
        rs = []
        for c in leaves:
            off, n = _chunk(rg.column(c))
            end = min(off + n + PAD, limit)
            if end > off:
                rs.append((off, end - off))
        out[r] = _merge(rs, hole, cap)
    return out


_cache = None          # the mapping of the last read, for the next one
_cache_lock = threading.Lock()
_cache_cv = threading.Condition(_cache_lock)
CACHE_MAX = 1 << 30    # larger mappings are not kept


def _buffer(size, fetched):
    """(mapping, buffer): an anonymous private mapping of at least size
    bytes, and a pyarrow buffer of its first size bytes, of which
    ``fetched`` will be written.

    Fresh pages cost the kernel's zeroing on first touch, measured here at
    more than the transfer (150 ms of CPU for 200 MB in 4 KiB pages, 50-120
    in huge pages; pyarrow's pool reuses a freed block only while no other
    allocation took it). So the last read's mapping is kept (``_release``)
    and taken again when it is large enough and nothing refers to it any
    more: pyarrow holds a buffer export for as long as any of its objects
    refers to the memory, and ``resize`` refuses while one exists. A mostly
    written mapping takes huge pages; a sparse one (3 of 30 columns) 4 KiB
    pages, whose cost follows the bytes written rather than 2 MiB per chunk.
    Nothing is reserved: a file larger than memory is fine when what is
    fetched of it fits."""
    import pyarrow as pa
    global _cache
    n = max(size, 1)
    with _cache_lock:
        m, _cache = _cache, None
    if m is not None and (len(m) < n or not _unused(m)):
        m = None
    if m is None:
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
                      | getattr(mmap, "MAP_NORESERVE", 0))
    advice = "MADV_HUGEPAGE" if fetched * 2 >= size else "MADV_NOHUGEPAGE"
    if hasattr(mmap, advice):
        m.madvise(getattr(mmap, advice))
    return m, pa.py_buffer(m).slice(0, size)


def _unused(m) -> bool:
    try:
        m.resize(len(m))  # the same size: refused while a buffer is exported
        return True
    except (BufferError, OSError, ValueError, SystemError):
        return False


def _release(m) -> None:
    """Keeps m for the next read, which takes it only if nothing refers to
    it by then (a read's pin can outlive the read until the notifier has
    seen its completion; a table that referred to the memory would keep
    it for good). Its pages stay backed while reads follow one another
    (a MADV_FREE after every read cost the next one 2-4 ms of faults for
    the 20 MB of 3 of 30 columns of the bench file); once it has been
    idle for IDLE_FREE seconds, _reaper gives them back (MADV_FREE), as
    jemalloc's decay does for pyarrow's own pool."""
    global _cache, _kept_at, _freed
    if len(m) > CACHE_MAX:
        return
    with _cache_cv:
        _cache, _kept_at, _freed = m, time.monotonic(), None
        _cache_cv.notify()
    _reaper_running()


IDLE_FREE = 1.0        # seconds a kept mapping stays backed after its last read
_kept_at = 0.0         # when _cache was last put back
_reaper_pid = None     # the process whose reaper thread runs


def _reaper_running() -> None:
    """Starts the reaper thread once per process (a forked child has none)."""
    global _reaper_pid
    if _reaper_pid == os.getpid() or not hasattr(mmap, "MADV_FREE"):
        return
    with _cache_lock:
        if _reaper_pid == os.getpid():
            return
        _reaper_pid = os.getpid()
    threading.Thread(target=_reap, name="colio-parquet-free", daemon=True).start()


def _reap() -> None:
    """Gives back the pages of a mapping kept and unused for IDLE_FREE
    seconds. The mapping is taken out of the cache while it is advised, so
    no read writes into it meanwhile; a read that found the cache empty
    then makes a mapping of its own."""
    global _cache, _freed
    while True:
        with _cache_cv:
            while _cache is None or _cache is _freed:
                _cache_cv.wait()
            idle = time.monotonic() - _kept_at
            if idle < IDLE_FREE:
                _cache_cv.wait(IDLE_FREE - idle)
                continue
            m, _cache = _cache, None
        if _unused(m):
            try:
                m.madvise(mmap.MADV_FREE)
            except OSError:
                pass
        with _cache_cv:
            if _cache is None:
                _cache = _freed = m


_freed = None          # the kept mapping whose pages were given back since its last read


def _after_fork() -> None:
    """A forked child has no reaper, and the cache's lock may have been held
    by a thread that does not exist there."""
    global _cache_lock, _cache_cv, _reaper_pid
    _cache_lock = threading.Lock()
    _cache_cv = threading.Condition(_cache_lock)
    _reaper_pid = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class Fetch:
    """The reads of the planned row groups, in their order, into one buffer
    of the file's size. Row groups are started in order while less than
    ``window`` bytes are in flight, and each completion starts the next
    ones: requests all in flight at once share the bandwidth and would all
    end together, at the end, leaving nothing to decode meanwhile.
    ``wait(r)`` waits for row group r's reads."""

    def __init__(self, src, size, tail_off, tail, reads, window):
        self.size = size
        self.map, self.mem = _buffer(size, sum(n for rs in reads.values() for _, n in rs))
        self._view = memoryview(self.map)[:size]  # pyarrow's buffer is read-only
        self._view[tail_off:size] = tail
        self._src, self._window = src, window
        self._order = list(reads.items())
        # Completions start later row groups only where the window holds
        # back some; otherwise no callback is needed.
        self._bounded = sum(n for rs in reads.values() for _, n in rs) > window
        self._next = 0            # the next row group of _order to start
        self._flight = 0          # bytes started and not yet done
        self._error = None        # a failed start (on a completion's thread)
        self._closed = False
        self.futures = {}
        self._cv = threading.Condition()
        self._pump()

    def _pump(self) -> None:
        """Starts the next row groups while the window allows (at least
        one when nothing is in flight)."""
        while True:
            with self._cv:
                if self._closed or self._next >= len(self._order) or (
                        self._flight and self._flight >= self._window):
                    return
                r, rs = self._order[self._next]
                self._next += 1
                self._flight += sum(n for _, n in rs)
            try:
                futs = [self._src.read_async(self._view[o:o + n], o) for o, n in rs]
            except BaseException as e:  # noqa: BLE001 - the waiter raises it
                with self._cv:
                    self._error = e
                    self.futures[r] = []
                    self._cv.notify_all()
                return
            with self._cv:
                self.futures[r] = futs
                self._cv.notify_all()
            if self._bounded:
                for f, (_, n) in zip(futs, rs):
                    f.add_done_callback(lambda f, n=n: self._done(n))

    def _done(self, n) -> None:
        with self._cv:
            self._flight -= n
        self._pump()

    def _started(self, r):
        with self._cv:
            while r not in self.futures and self._error is None:
                self._cv.wait(0.05)  # in slices: Ctrl-C interrupts it
            if self._error is not None:
                raise self._error
            return self.futures[r]

    def done(self, r) -> bool:
        futs = self.futures.get(r)
        return futs is not None and all(f.done() for f in futs)

    def wait(self, r) -> None:
        """Waits for row group r's reads; a failed one raises its error (the
        caller then cancels the rest with cancel())."""
        for f in self._started(r):
            f.result()

    def release(self) -> None:
        """Drops the futures, whose callbacks refer to self: without it the
        buffer lives until the garbage collector finds the cycle, and the
        next read's buffer is fresh memory instead of the pool's reused
        pages."""
        with self._cv:
            self._closed = True
            self.futures = {}
            self._order = []
            self._view = self.mem = None

    def cancel(self) -> None:
        """Starts nothing more, cancels what has not started and waits for
        what has (the buffer must outlive every write into it)."""
        with self._cv:
            self._closed = True
            futs = [f for fs in self.futures.values() for f in fs]
        for f in futs:
            f.cancel()
        for f in futs:
            try:
                f.exception()
            except BaseException:  # noqa: BLE001 - cancelled, or failed: either is over
                pass


def read(src, size, tail_off, tail, md, need, row_groups, filters, columns, hole, cap,
         window=None, validate=None):
    """The table of ``row_groups`` (None: all, in order) and ``need``
    (top-level names, or None: all) of the file, filtered by ``filters``
    (an expression, or None) and then cut down to ``columns``.
    ``validate(src, size)`` is called when there is nothing to fetch (the
    footer came from colio._parquet_footers and must be checked)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rgs = _row_groups(md, row_groups)
    if filters is not None and rgs:
        rgs = _prune(_footer_only(tail_off, tail, size), rgs, filters)
    leaves = [i for i in range(md.num_columns) if _selected(md.schema.column(i).path, need)]
    reads = plan(md, leaves, rgs, tail_off, hole, cap)
    if validate is not None and not any(reads.values()):
        validate(src, size)
    fetch = Fetch(src, size, tail_off, tail, reads, WINDOW if window is None else window)
    mem = fetch.mem
    try:
        return _decoded(lambda: pq.ParquetFile(pa.BufferReader(mem), metadata=md,
                                               pre_buffer=False),
                        _batches(fetch, rgs), need, filters, columns)
    except BaseException:
        fetch.cancel()
        raise
    finally:
        mem = None  # pyarrow's references to the mapping, before _release
        fetch.release()
        _release(fetch.map)


def _row_groups(md, row_groups):
    rgs = list(range(md.num_row_groups)) if row_groups is None else list(row_groups)
    for r in rgs:
        if not 0 <= r < md.num_row_groups:
            raise IndexError(f"colio.parquet: row group {r} out of range (the file has "
                             f"{md.num_row_groups})")
    return rgs


def _batches(fetch, rgs):
    """(run, last): rgs in runs, each run as soon as its first row group's
    reads are done, with every later one already done; last once nothing
    is left to fetch."""
    i = 0
    while i < len(rgs):
        fetch.wait(rgs[i])
        j = i + 1
        while j < len(rgs) and fetch.done(rgs[j]):
            fetch.wait(rgs[j])
            j += 1
        yield rgs[i:j], j == len(rgs)
        i = j


USE_THREADS = True  # each piece's columns on pyarrow's CPU pool too


def _decoded(opener, batches, need, filters, columns, n=None):
    """The table of the row groups of every (batch, last) of ``batches``,
    filtered and cut down to ``columns``: each batch, as it comes, in
    pieces decoded on several threads at once (colio._parquet_decode;
    ``opener()`` makes a ParquetFile over the read's memory, one per
    thread), the pieces' tables concatenated in order.

    While bytes are still arriving, half the threads decode (one of two
    here): the fetch needs CPU too (the socket copies, the remote source's
    goroutines). With no latency and 3 of 30 columns, two decode threads
    beside the fetch once took 1.2x the time of the earlier one-thread
    decode, one thread 1.03x (medians of 40 paired rounds); other runs
    on this shared machine were even within noise. The last batch, once
    everything is in, is cut for all of them."""
    import pyarrow as pa

    def decode(pf, rgs):
        t = pf.read_row_groups(rgs, columns=need, use_threads=USE_THREADS)
        if filters is not None:
            t = t.filter(filters)
            if columns is not None:
                t = t.select(list(columns))
        return t

    dec = _Ordered(opener, decode, n)
    batches = iter(batches)
    try:
        fetching = max(1, dec.parallel // 2)
        while True:
            # The next batch once a thread is free: it then holds every row
            # group that arrived while the threads were busy.
            dec.wait_free(fetching)
            item = next(batches, None)
            if item is None:
                break
            rgs, last = item
            for piece in _pieces(rgs, dec.parallel if last else fetching):
                dec.submit(piece)
        tables = dec.tables()
    finally:
        dec.close()
    if not tables:
        t = opener().read_row_groups([], columns=need)
        tables.append(t if columns is None else t.select(list(columns)))
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _pieces(rgs, n):
    """rgs cut into n runs for n threads (one row group each while there are
    fewer): each call's own cost (measured: 20 calls of one row group of 3
    columns took 23 ms of CPU where 2 calls of 10 took 19) is paid once
    per thread, and within a call pyarrow's pool still shares the columns."""
    k = max(1, -(-len(rgs) // n))
    return [rgs[i:i + k] for i in range(0, len(rgs), k)]


def _prune(reader, rgs, expr):
    """The row groups of rgs whose statistics do not rule out a row passing
    ``expr`` (what pyarrow's own read_table skips), in rgs's order; reader
    is a pyarrow file whose footer can be read (nothing else is)."""
    import pyarrow.dataset as ds
    frag = ds.ParquetFileFormat().make_fragment(reader)
    frag = frag.subset(row_group_ids=sorted(set(rgs)))
    keep = {g.id for g in frag.subset(filter=expr).row_groups}
    return [r for r in rgs if r in keep]


def _footer_only(tail_off, tail, size):
    """A pyarrow file of size bytes of which only the tail is there."""
    import pyarrow as pa
    buf = pa.allocate_buffer(max(size, 1))  # only the tail's pages are touched
    memoryview(buf).cast("B")[tail_off:size] = tail
    return pa.BufferReader(buf)


def read_local(path, need, row_groups, filters, columns):
    """read for a local file: nothing to fetch, so pyarrow decodes from a
    memory map of it (no copy at all; measured 161 ms for the 200 MB bench
    file against 359 ms through colio's reads and 380 ms for
    pq.read_table(path)). A file truncated while it is read raises SIGBUS
    there, as with pyarrow's own memory_map=True."""
    mapped, md = _mapped(path)
    rgs = _row_groups(md, row_groups)
    if filters is not None and rgs:
        rgs = _prune(_reader(mapped), rgs, filters)
    return _decoded(lambda: _pq().ParquetFile(_reader(mapped), metadata=md, pre_buffer=False),
                    [(rgs, True)], need, filters, columns)


def _pq():
    import pyarrow.parquet as pq
    return pq


_map = None            # (key, mapping, metadata) of the last local file read
_map_lock = threading.Lock()


def _mapped(path):
    """(memory map, footer) of the local file at path: the last file's again
    while it is the same file unchanged (device, inode, size, mtime and
    ctime, and the footer's bytes the same: a rewrite in place within one
    timestamp tick keeps the rest), else a new map. A fresh map faults the
    file's pages into the process again and the footer is parsed again:
    1.19x the time of a kept one for 3 of 30 columns of the bench file (30
    paired rounds), which brought it even with polars. Both are shared
    across threads (pyarrow's reads of a map are positional). Files over
    CACHE_MAX are not kept: their touched pages would stay in the
    process's RSS. A kept map holds its file open, as an open file would,
    until another local file is read (a deleted file's space is freed
    then)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
           st.st_ctime_ns)
    global _map
    with _map_lock:
        kept = _map
    if kept is not None and kept[0] == key and _footer(kept[1], st.st_size, kept[3]) == kept[3]:
        return kept[1], kept[2]
    mapped = _map_file(path)
    md = _pq().ParquetFile(_reader(mapped), pre_buffer=False).metadata
    if st.st_size <= CACHE_MAX:
        footer = _footer(mapped, st.st_size, None, md.serialized_size + 8)
        with _map_lock:
            _map = (key, mapped, md, footer)
    return mapped, md


def _map_file(path):
    """A pyarrow buffer over a read-only shared mapping of the file (Python's
    mmap), or, for an empty file, pyarrow's memory map (which then says what
    is wrong with it). pyarrow's own MemoryMappedFile advises the kernel
    (MADV_WILLNEED) on every read it serves, a page-cache walk each time:
    decoding through a BufferReader over the same pages took 3-7 % less
    CPU (3 of 30 and all 30 columns of the bench file, 22 rounds each)."""
    import pyarrow as pa
    with builtins_open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return pa.memory_map(path)
        return pa.py_buffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def _reader(mapped):
    import pyarrow as pa
    return mapped if isinstance(mapped, pa.NativeFile) else pa.BufferReader(mapped)


def _footer(mapped, size, like, n=None):
    """The last n (or len(like)) bytes of a mapped file, or None past its
    size (a map of the file as it was, truncated since)."""
    n = len(like) if n is None else n
    have = mapped.size() if callable(getattr(mapped, "size", None)) else mapped.size
    if n > size or have < size:
        return None
    if callable(getattr(mapped, "read_at", None)):
        return mapped.read_at(n, size - n)
    return mapped.slice(size - n, n).to_pybytes()
