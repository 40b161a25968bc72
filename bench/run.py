#!/usr/bin/env python3
"""colio against its peers, in one run (`make bench`; `--quick` for a smoke run).

Nine workloads (see BENCHMARKS.md for what each measures and why):

1. large local read, 1 GiB into a preallocated buffer, warm and cold
2. fan-out reads with injected latency (0, 100 us, 500 us, 2 ms)
3. writes: 228 chunks of ~1 MiB (243 MB) and 228 chunks of 4 KiB, to a
   local file and to a sink with 2 ms latency per write
4. small reads: 4 KiB random reads from C and from Python; the inline-vs-pool
   crossover
5. first call: `import colio` to the first completed read
6. remote reads: native HTTP and S3 sources against fsspec, s3fs, obstore,
   requests and KvikIO, on a loopback server with 0, 5 and 20 ms latency
   (bench/remote.py)
7. colio:: URLs: Dask read_parquet/read_csv and a zarr array over a loopback
   HTTP server with 5 and 20 ms latency, against the plain URLs
   (bench/fsspec_fs.py)
8. Parquet: colio.parquet.read_table of a 20 x 30 file, 3 columns and all,
   local and on a loopback server with 0, 5 and 20 ms latency, against
   pyarrow over fsspec, fsspec.parquet, polars and obstore (bench/parquet.py)
9. S3 writes: 1 GiB as 228 chunks to a loopback S3 server with 0, 5 and
   20 ms latency: colio's S3 sink against s3fs (open 'wb', pipe),
   obstore.put and boto3 upload_fileobj (bench/s3_write.py)

Every number is the median of repeated runs, with its spread; every
comparison is a ratio of two sides measured in the same run, their runs
interleaved (round r runs every side once, in an order rotated each round),
and the ratio is the median of the per-round ratios.

Writes bench/results/<name>.json (the raw samples and the summaries) and PNG
plots beside it; prints the tables. `--publish` also rewrites the generated
part of BENCHMARKS.md and copies the plots to docs/bench/.

    python bench/run.py [--quick] [--only 1,3] [--publish] [--brief]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
TOOLS = os.path.join(ROOT, "build", "bench")
RESULTS = os.path.join(HERE, "results")

# numpy's OpenBLAS threads would spin beside the measurements; nothing here needs them.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import colio  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


QUIET = False


def log(msg: str) -> None:
    if not QUIET:
        print(msg, file=sys.stderr, flush=True)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleave(methods: dict, rounds: int, before=None) -> dict:
    """Runs every method once per round, in an order rotated each round, and
    returns {name: [sample per round]}. A method returns its own elapsed
    time (so setup it does, and `before`, are not counted)."""
    names = list(methods)
    samples = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            if before is not None:
                before(n)
            samples[n].append(methods[n]())
    return samples


def case(workload, title, name, colio_method, peers, samples, unit="s", nbytes=None,
         ideal=None, errors=None, note=None):
    """One row of a table: colio_method against each peer (column label ->
    method name) on the same interleaved samples."""
    group = title.split(", ", 1)[1].split(" (")[0] if workload == 2 else None
    return {"workload": workload, "title": title, "group": group, "case": name,
            "colio": colio_method,
            "peers": peers, "samples": {m: samples[m] for m in [colio_method, *peers.values()]
                                        if m in samples},
            "unit": unit, "bytes": nbytes, "ideal": ideal, "errors": errors or {},
            "note": note}


# ---------------------------------------------------------------------------
# the machine


def _cpu_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    return busy, idle + iowait, steal


def _own_cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


class Machine:
    """What the run ran on, and how busy the machine was meanwhile: the load
    average before and during the run, and the CPU time that other
    processes (other engineers' builds) used while it ran."""

    def __init__(self):
        self.loads = []
        self._stop = threading.Event()
        self.load_before = os.getloadavg()
        self._t0 = time.time()
        self._ticks0 = _cpu_ticks()
        self._own0 = _own_cpu()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(2.0):
            self.loads.append(os.getloadavg()[0])

    def finish(self) -> dict:
        self._stop.set()
        busy1, idle1, steal1 = _cpu_ticks()
        busy0, idle0, steal0 = self._ticks0
        hz = os.sysconf("SC_CLK_TCK")
        wall = time.time() - self._t0
        ncpu = os.cpu_count() or 1
        busy = (busy1 - busy0) / hz
        own = _own_cpu() - self._own0
        others = max(busy - own, 0.0)
        info = {
            "nproc": ncpu,
            "cpu_model": _cpu_model(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GiB, 1),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "colio": colio.__version__,
            "library": colio.library_path(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "load_before": [round(x, 2) for x in self.load_before],
            "load_during_max": round(max(self.loads), 2) if self.loads else None,
            "load_during_mean": round(statistics.mean(self.loads), 2) if self.loads else None,
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "wall_s": round(wall, 1),
            "cpu_busy_pct": round(100 * busy / (wall * ncpu), 1),
            "cpu_others_pct": round(100 * others / (wall * ncpu), 1),
            "cpu_steal_pct": round(100 * (steal1 - steal0) / hz / (wall * ncpu), 1),
        }
        return info


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ---------------------------------------------------------------------------
# 1. large local read


def _write_file(path, size, seed=1):
    block = np.random.default_rng(seed).integers(0, 256, size=min(size, 64 * MiB),
                                                 dtype=np.uint8)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, block.nbytes)
            f.write(block[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())  # clean pages, so POSIX_FADV_DONTNEED can drop them


def _kvikio_reader(path, dest):
    """KvikIO's host-memory read in compatibility mode, or the exact error
    that stops it on this machine."""
    os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")
    try:
        import kvikio
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        return None, f"import kvikio failed: {type(e).__name__}: {e}"
    try:
        with kvikio.CuFile(path, "r") as f:
            n = f.pread(dest[:4096]).get()
        if n != 4096:
            return None, f"kvikio.CuFile.pread returned {n} bytes, not 4096"
    except Exception as e:  # noqa: BLE001
        return None, (f"kvikio {getattr(kvikio, '__version__', '?')} imports, but "
                      f"kvikio.CuFile(path, 'r').pread(numpy_buffer) with "
                      f"KVIKIO_COMPAT_MODE={os.environ.get('KVIKIO_COMPAT_MODE')} raised "
                      f"{type(e).__name__}: {str(e).strip()}")

    def read():
        with kvikio.CuFile(path, "r") as f:
            t0 = time.perf_counter()
            n = f.pread(dest).get()
            el = time.perf_counter() - t0
        assert n == dest.nbytes
        return el
    return read, None


def wl_large_read(cfg, tmp):
    import pyarrow as pa

    size = cfg.large_size
    path = os.path.join(tmp, "large.bin")
    log(f"[1] large read: writing {size >> 20} MiB")
    _write_file(path, size)
    dest = np.zeros(size, dtype=np.uint8)  # preallocated and faulted in
    addr = dest.ctypes.data
    lib = ctypes.CDLL(os.path.join(TOOLS, "libpread_loop.so"))
    lib.pread_loop_run.restype = ctypes.c_double
    lib.pread_loop_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
                                   ctypes.c_int64]
    fd = os.open(path, os.O_RDONLY)
    src = colio.source(path)
    default_threads = colio.get_config()["threads"]
    task = colio.get_config()["task_size"]
    want = np.fromfile(path, dtype=np.uint8, count=1 << 20, offset=size - (1 << 20))

    def check():
        assert np.array_equal(dest[-(1 << 20):], want), "the last MiB differs"
        dest[-(1 << 20):] = 0

    methods, errors = {}, {}
    threads = cfg.large_threads

    def colio_read(n):
        def run():
            colio.set_config(threads=n)
            t0 = time.perf_counter()
            got = src.read_into(dest)
            el = time.perf_counter() - t0
            assert got == size
            check()
            return el
        return run

    def c_loop(n):
        def run():
            el = lib.pread_loop_run(fd, addr, size, n, task)
            assert el >= 0, "pread loop failed"
            check()
            return el
        return run

    def py_readinto():
        with open(path, "rb", buffering=0) as f:
            t0 = time.perf_counter()
            got = f.readinto(dest)
            el = time.perf_counter() - t0
        assert got == size
        check()
        return el

    def np_fromfile():
        t0 = time.perf_counter()
        a = np.fromfile(path, dtype=np.uint8)
        el = time.perf_counter() - t0
        assert a.nbytes == size and np.array_equal(a[-(1 << 20):], want)
        return el

    def pa_read_at():
        with pa.OSFile(path, "r") as f:
            t0 = time.perf_counter()
            b = f.read_at(size, 0)
            el = time.perf_counter() - t0
        assert len(b) == size
        return el

    def pa_mmap():
        t0 = time.perf_counter()
        with pa.memory_map(path, "r") as m:
            np.copyto(dest, np.frombuffer(m.read_at(size, 0), dtype=np.uint8))
        el = time.perf_counter() - t0
        check()
        return el

    for n in threads:
        methods[f"colio ({n} threads)"] = colio_read(n)
        methods[f"C pread loop ({n} threads)"] = c_loop(n)
    methods["Python readinto"] = py_readinto
    methods["numpy.fromfile"] = np_fromfile
    methods["pyarrow OSFile.read_at"] = pa_read_at
    methods["pyarrow memory_map + copy"] = pa_mmap
    kv, err = _kvikio_reader(path, dest)
    if kv is None:
        errors["kvikio CuFile.pread"] = err
        log(f"[1] kvikio: {err}")
    else:
        methods["kvikio CuFile.pread"] = lambda: (kv(), check())[0]

    def evict(_name):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)

    out = []
    title = f"Large local read, {_size(size)} into a preallocated buffer"
    single = {"C pread loop": "C pread loop (1 threads)", "Python readinto": "Python readinto",
              "numpy.fromfile": "numpy.fromfile", "pyarrow read_at": "pyarrow OSFile.read_at",
              "pyarrow memory_map": "pyarrow memory_map + copy",
              "kvikio pread": "kvikio CuFile.pread"}
    for temp, rounds, before in (("warm", cfg.large_warm_rounds, None),
                                 ("cold", cfg.large_cold_rounds, evict)):
        log(f"[1] {temp}: {len(methods)} methods x {rounds} rounds")
        interleave(methods, 1, before)  # warm-up round, not kept
        s = interleave(methods, rounds, before)
        for n in threads:
            peers = single if n == 1 else {"C pread loop": f"C pread loop ({n} threads)"}
            peers = {k: v for k, v in peers.items() if v in s or v in errors}
            out.append(case(1, title, f"{temp}, {n} thread{'s' if n > 1 else ''}",
                            f"colio ({n} threads)", peers, s, nbytes=size,
                            errors={k: v for k, v in errors.items()
                                    if k in peers.values()} if n == 1 else None))
    colio.set_config(threads=default_threads)
    src.close()
    os.close(fd)
    os.unlink(path)
    return out


# ---------------------------------------------------------------------------
# 2. fan-out with latency


def _latency_fs_class():
    from fsspec.spec import AbstractBufferedFile

    from colio.testing import LatencyFileSystem

    class LatencyFile(AbstractBufferedFile):
        """An fsspec file whose every fetch pays the file system's latency."""

        def _fetch_range(self, start, end):
            return self.fs.cat_file(self.path, start=start, end=end)

    class BenchLatencyFileSystem(LatencyFileSystem):
        def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
                  **kwargs):
            return LatencyFile(self, path, mode=mode, block_size=block_size or "default",
                               cache_type=kwargs.get("cache_type", "none"),
                               size=self.info(path)["size"])

    return BenchLatencyFileSystem


class HTTPServer:
    def __init__(self, path):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "httpserver.py"), path,
                                      "--lifetime", "1200"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def url(self, latency):
        return f"http://127.0.0.1:{self.port}/lat/{round(latency * 1e6)}/data"

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


def _lat(s):
    return "0" if s == 0 else (f"{s * 1e3:g} ms" if s >= 1e-3 else f"{s * 1e6:g} us")


def wl_fanout(cfg, tmp):
    import fsspec
    import pyarrow as pa

    LatFS = _latency_fs_class()
    shapes = cfg.fanout_shapes
    top = max(n * (size + 4099) for n, size in shapes)
    payload = np.random.default_rng(2).integers(0, 256, size=top, dtype=np.uint8).tobytes()
    ppath = os.path.join(tmp, "fanout.bin")
    with open(ppath, "wb") as f:
        f.write(payload)
    server = HTTPServer(ppath)
    threads = colio.get_config()["threads"]
    pool = cf.ThreadPoolExecutor(8)
    out = []
    try:
        for n, size in shapes:
            ranges = [(i * size + (i * 4099) % 4096, size) for i in range(n)]
            want = [payload[o:o + k] for o, k in ranges]
            shape = f"{n} x {_size(size)}"
            title = (f"Fan-out reads with injected latency per read, {shape} "
                     f"(colio threads={threads})")
            for lat in cfg.latencies:
                log(f"[2] fan-out {shape}, latency {_lat(lat)}")
                fs = LatFS(latency=lat)
                fs.pipe_file("/data", payload)
                src = colio.from_fsspec(fs, "/data")
                hfs = fsspec.filesystem("http", skip_instance_cache=True)
                url = server.url(lat)
                hsrc = colio.from_fsspec(hfs, url)
                starts = [o for o, _ in ranges]
                ends = [o + k for o, k in ranges]

                def m_colio(src=src):
                    return [f.result() for f in src.read_ranges_async(ranges)]

                def m_threads(fs=fs):
                    return list(pool.map(lambda r: fs.cat_file("/data", start=r[0],
                                                               end=r[0] + r[1]), ranges))

                def m_cat(fs=fs):
                    return fs.cat_ranges(["/data"] * n, starts, ends)

                def m_pyarrow(fs=fs, path="/data"):
                    with fs.open(path, "rb", cache_type="none") as raw:
                        f = pa.PythonFile(raw, mode="r")
                        return [f.read_at(k, o) for o, k in ranges]

                def m_hcat(hfs=hfs, url=url):
                    return hfs.cat_ranges([url] * n, starts, ends)

                def m_hpyarrow(hfs=hfs, url=url):
                    with hfs.open(url, "rb", cache_type="none") as raw:
                        f = pa.PythonFile(raw, mode="r")
                        return [f.read_at(k, o) for o, k in ranges]

                funcs = {"colio": m_colio, "ThreadPoolExecutor(8)": m_threads,
                         "fsspec cat_ranges": m_cat, "pyarrow via fsspec file": m_pyarrow,
                         "colio (HTTP)": lambda: m_colio(hsrc),
                         "fsspec cat_ranges (HTTP)": m_hcat,
                         "pyarrow via fsspec file (HTTP)": m_hpyarrow}
                for name, fn in funcs.items():  # checks the bytes; warms every path up
                    got = [bytes(x) for x in fn()]
                    assert got == want, f"{name} read the wrong bytes"
                fs.reset()
                m_colio()
                peak = fs.peak_in_flight
                s = interleave({k: (lambda fn=fn: timed(fn)) for k, fn in funcs.items()},
                               cfg.fanout_rounds)
                # The floor of every method here: making the bytes objects
                # that fsspec hands back (allocation and copy).
                copy_t = statistics.median(timed(lambda: [payload[o:o + k] for o, k in ranges])
                                           for _ in range(5))
                ideal = math.ceil(n / threads) * lat + copy_t
                out.append(case(2, title, f"{_lat(lat)}, sync fs", "colio",
                                {"ThreadPoolExecutor(8)": "ThreadPoolExecutor(8)",
                                 "fsspec cat_ranges": "fsspec cat_ranges",
                                 "pyarrow via fsspec file": "pyarrow via fsspec file"},
                                s, nbytes=n * size, ideal=ideal,
                                note=f"peak in flight {peak}"))
                out.append(case(2, title, f"{_lat(lat)}, HTTP", "colio (HTTP)",
                                {"fsspec cat_ranges": "fsspec cat_ranges (HTTP)",
                                 "pyarrow via fsspec file": "pyarrow via fsspec file (HTTP)"},
                                s, nbytes=n * size, ideal=ideal))
                src.close()
                hsrc.close()
            # The same engine, eager and start-at-wait, from Go.
            log(f"[2] fan-out {shape}: engine eager vs start-at-wait (Go)")
            lats = ",".join(f"{round(x * 1e6)}us" for x in cfg.latencies)
            res = _run_json([os.path.join(TOOLS, "gobench"), "fanout", "-n", str(n), "-size",
                             str(size), "-threads", str(threads), "-latency", lats,
                             "-repeat", str(cfg.go_fanout_repeat)])
            for c in res["cases"]:
                s = {"engine eager (Go)": c["eager"], "engine start-at-wait (Go)": c["deferred"]}
                ideal = math.ceil(n / threads) * c["latency"] + statistics.median(c["copy"])
                out.append(case(2, title, f"{_lat(c['latency'])}, Go engine",
                                "engine eager (Go)",
                                {"start-at-wait engine": "engine start-at-wait (Go)"}, s,
                                nbytes=n * size, ideal=ideal,
                                note=f"peak in flight {c['peak_in_flight_eager']}"))
    finally:
        pool.shutdown()
        server.close()
        os.unlink(ppath)
    import callable_fanout  # bench/callable_fanout.py: from_callable vs a thread pool (issue 15)
    out.extend(callable_fanout.rows(cfg, sys.modules[__name__]))
    return out


def _run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------
# 3. writes


def _latency_sink(write_fn):
    """A colio sink over callbacks (the C ABI's colio_sink_from_callbacks):
    every write calls write_fn(addr, size, offset) on colio's workers."""
    from colio import _lib
    from colio._sink import Sink

    L = _lib.load()

    @_lib.WRITE_FN
    def write(ctx, buf, size, offset):
        return write_fn(buf, size, offset)

    cb = _lib.SinkCallbacks()
    cb.struct_size = ctypes.sizeof(cb)
    cb.write = write
    cb.flags = _lib.CALLBACK_CONCURRENT
    h = ctypes.c_void_p()
    rc = L.colio_sink_from_callbacks(ctypes.byref(cb), ctypes.byref(h))
    if rc:
        raise RuntimeError(f"colio_sink_from_callbacks: {rc}")
    return Sink(h.value, "callback", None, keep=(write, cb), name="latency sink")


def wl_writes(cfg, tmp):
    out = []
    pool = cf.ThreadPoolExecutor(8)
    path = os.path.join(tmp, "write.bin")
    lat = 0.002
    try:
        for total, count, label in cfg.write_shapes:
            per = total // count
            data = np.random.default_rng(3).integers(0, 256, size=per * count, dtype=np.uint8)
            chunks = [data[i * per:(i + 1) * per] for i in range(count)]
            offs = [i * per for i in range(count)]
            title = "Writes fanned out, then waited in order"
            shape = f"{count} x {label}"

            def m_colio():
                t0 = time.perf_counter()
                s = colio.sink(path, "w")
                futs = [s.write_async(c) for c in chunks]
                for f in futs:
                    f.result()
                s.close()
                return time.perf_counter() - t0

            def m_serial():
                t0 = time.perf_counter()
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                for c, o in zip(chunks, offs):
                    os.pwrite(fd, c, o)
                os.close(fd)
                return time.perf_counter() - t0

            def m_threads():
                t0 = time.perf_counter()
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                futs = [pool.submit(os.pwrite, fd, c, o) for c, o in zip(chunks, offs)]
                for f in futs:
                    f.result()
                os.close(fd)
                return time.perf_counter() - t0

            def fresh(_name):
                # A new file each run: rewriting a truncated one makes ext4
                # flush on close (auto_da_alloc), which is not what we measure.
                if os.path.exists(path):
                    os.unlink(path)

            funcs = {"colio": m_colio, "serial pwrite": m_serial,
                     "Python threads (8)": m_threads}
            for name, fn in funcs.items():
                fresh(name)
                fn()
                got = np.fromfile(path, dtype=np.uint8)
                assert np.array_equal(got, data), f"{name} wrote the wrong bytes"
            log(f"[3] writes {shape} to a local file")
            s = interleave(funcs, cfg.write_rounds, fresh)
            fresh("")
            out.append(case(3, title, f"{shape}, local file", "colio",
                            {"serial pwrite": "serial pwrite",
                             "Python threads (8)": "Python threads (8)"}, s, nbytes=per * count))

            def slow_write(addr, size, offset):
                time.sleep(lat)
                return size

            snk = _latency_sink(slow_write)
            addrs = [c.ctypes.data for c in chunks]

            def l_colio():
                t0 = time.perf_counter()
                futs = [snk.write_async(c, o) for c, o in zip(chunks, offs)]
                for f in futs:
                    f.result()
                return time.perf_counter() - t0

            def l_serial():
                t0 = time.perf_counter()
                for a, o in zip(addrs, offs):
                    slow_write(a, per, o)
                return time.perf_counter() - t0

            def l_threads():
                t0 = time.perf_counter()
                futs = [pool.submit(slow_write, a, per, o) for a, o in zip(addrs, offs)]
                for f in futs:
                    f.result()
                return time.perf_counter() - t0

            log(f"[3] writes {shape} to a sink with 2 ms latency per write")
            lf = {"colio": l_colio, "serial writes": l_serial, "Python threads (8)": l_threads}
            interleave(lf, 1)
            s = interleave(lf, cfg.write_lat_rounds)
            snk.close()
            threads = colio.get_config()["threads"]
            out.append(case(3, title, f"{shape}, 2 ms sink", "colio",
                            {"serial pwrite": "serial writes",
                             "Python threads (8)": "Python threads (8)"}, s, nbytes=per * count,
                            ideal=math.ceil(count / threads) * lat))
    finally:
        pool.shutdown()
        if os.path.exists(path):
            os.unlink(path)
    return out


# ---------------------------------------------------------------------------
# 4. small reads


def wl_small(cfg, tmp):
    out = []
    path = os.path.join(tmp, "small.bin")
    _write_file(path, 64 * MiB, seed=4)
    title = "Small reads: 4 KiB at random offsets of a warm 64 MiB file, per read"
    log("[4] 4 KiB reads from C")
    r = _run_json([os.path.join(TOOLS, "small_reads"), path, "4096", str(cfg.small_c_batches),
                   "2000"])
    s = {f"C {k}": v for k, v in r.items() if isinstance(v, list)}
    out.append(case(4, title, "from C: colio_read", "C colio_read", {"pread": "C pread"}, s,
                    unit="ns"))
    out.append(case(4, title, "from C: colio_read_async + wait", "C colio_read_async+wait",
                    {"pread": "C pread"}, s, unit="ns"))

    log("[4] 4 KiB reads from Python")
    src = colio.source(path)
    fd = os.open(path, os.O_RDONLY)
    buf = bytearray(4096)
    slots = (64 * MiB - 4096) // 4096
    rng = np.random.default_rng(5)
    offs = [int(x) * 4096 for x in rng.integers(0, slots, size=1000)]

    def batch(fn):
        def run():
            t0 = time.perf_counter_ns()
            for o in offs:
                fn(o)
            return (time.perf_counter_ns() - t0) / len(offs)
        return run

    read_into, preadv = src.read_into, os.preadv

    def a(o):
        src.read_async(buf, o).result()

    funcs = {"Python read_into": batch(lambda o: read_into(buf, o)),
             "Python os.preadv": batch(lambda o: preadv(fd, [buf], o)),
             "Python read_async().result()": batch(a)}
    interleave(funcs, 2)
    s = interleave(funcs, cfg.small_py_rounds)
    out.append(case(4, title, "from Python: Source.read_into", "Python read_into",
                    {"pread": "Python os.preadv"}, s, unit="ns"))
    out.append(case(4, title, "from Python: read_async().result()",
                    "Python read_async().result()", {"pread": "Python os.preadv"}, s, unit="ns"))

    # Issue 15: a batch is one C call (read_ranges) or one submission with
    # completions delivered in batches (read_ranges_async), against a
    # Python loop of os.preadv over the same ranges.
    log("[4] 1000 x 4 KiB in one batch from Python")
    ranges = [(o, 4096) for o in offs]
    ref = [os.pread(fd, 4096, o) for o in offs]
    assert [bytes(m) for m in src.read_ranges(ranges)] == ref, "read_ranges: wrong bytes"
    assert [bytes(f.result()) for f in src.read_ranges_async(ranges)] == ref

    def per_range(fn):
        def run():
            t0 = time.perf_counter_ns()
            fn()
            return (time.perf_counter_ns() - t0) / len(ranges)
        return run

    def preadv_loop():
        for o in offs:
            preadv(fd, [buf], o)

    bfuncs = {"Python read_ranges": per_range(lambda: src.read_ranges(ranges)),
              "Python read_ranges_async+results":
                  per_range(lambda: [f.result() for f in src.read_ranges_async(ranges)]),
              "Python os.preadv loop": per_range(preadv_loop)}
    interleave(bfuncs, 2)
    s = interleave(bfuncs, cfg.small_py_rounds)
    btitle = "Batches: 1000 x 4 KiB at random offsets of a warm 64 MiB file, per range"
    out.append(case(4, btitle, "read_ranges (one C call)", "Python read_ranges",
                    {"os.preadv loop": "Python os.preadv loop"}, s, unit="ns"))
    out.append(case(4, btitle, "read_ranges_async + every result()",
                    "Python read_ranges_async+results",
                    {"os.preadv loop": "Python os.preadv loop"}, s, unit="ns"))
    src.close()
    os.close(fd)
    os.unlink(path)

    log("[4] inline-vs-pool crossover (Go)")
    cross = _run_json([os.path.join(TOOLS, "gobench"), "crossover", "-repeat",
                       str(cfg.cross_repeat), "-inner", str(cfg.cross_inner)])
    return out, _crossover_summary(cross)


def _crossover_summary(cross):
    """pool/inline by size, and where the inline threshold should sit.

    A threshold T runs sizes <= T inline and larger ones on the pool. Its
    cost, measured here, is the fan-out time lost where it picks the slower
    side: sum over s <= T of max(0, 1 - fanout[s]) (the pool would have won)
    plus sum over s > T of max(0, fanout[s] - 1) (inline would have won).
    A synchronous request never gains from the pool (README), so only the
    fan-out pattern decides. The default follows the measurement when its
    cost is within 0.10 of the best threshold's."""
    by = {}
    for c in cross["cases"]:
        ratios = [p / i for p, i in zip(c["pool_us_per_op"], c["inline_us_per_op"])]
        by.setdefault(c["op"], {}).setdefault(c["pattern"], []).append({
            "size": c["size"], "pool_over_inline": statistics.median(ratios),
            "min": min(ratios), "max": max(ratios),
            "inline_us": statistics.median(c["inline_us_per_op"]),
            "pool_us": statistics.median(c["pool_us_per_op"])})
    verdict = {}
    for op, key in (("read", "default_small_read_threshold"),
                    ("write", "default_small_write_threshold")):
        thr = cross[key]
        fan = by[op]["fanout"]

        def cost(t):
            return sum(max(0.0, 1 - r["pool_over_inline"]) if r["size"] <= t
                       else max(0.0, r["pool_over_inline"] - 1) for r in fan)
        cands = [0] + [r["size"] for r in fan]
        best = min(cands, key=cost)
        verdict[op] = {"default_threshold": thr, "best_threshold": best,
                       "default_cost": round(cost(thr), 3), "best_cost": round(cost(best), 3),
                       "defaults_follow": cost(thr) <= cost(best) + 0.10}
    return {"ratios": by, "verdict": verdict, "count": cross["count"]}


# ---------------------------------------------------------------------------
# 5. first call


FIRST_CALL = {
    "colio read_into": ("import colio\nsrc = colio.source(P)\nbuf = bytearray(4096)\n"
                        "assert src.read_into(buf, 0) == 4096"),
    "colio read_async().result()": ("import colio\nsrc = colio.source(P)\nbuf = bytearray(4096)\n"
                                    "assert src.read_async(buf, 0).result() == 4096"),
    "open + readinto": ("f = open(P, 'rb', buffering=0)\nbuf = bytearray(4096)\n"
                        "assert f.readinto(buf) == 4096"),
    "numpy.fromfile": ("import numpy\nassert numpy.fromfile(P, dtype=numpy.uint8, "
                       "count=4096).nbytes == 4096"),
    "pyarrow OSFile.read_at": ("import pyarrow\nassert len(pyarrow.OSFile(P).read_at(4096, 0)) "
                               "== 4096"),
}


def wl_first_call(cfg, tmp):
    path = os.path.join(tmp, "first.bin")
    _write_file(path, 1 * MiB, seed=6)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def fresh(stmt):
        code = ("import time\nt0 = time.perf_counter()\nP = %r\n%s\n"
                "print((time.perf_counter() - t0) * 1e3)\n" % (path, stmt))

        def run():
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env)
            if r.returncode:
                raise RuntimeError(f"first call failed: {r.stderr.strip()}")
            return float(r.stdout) / 1e3
        return run

    funcs = {k: fresh(v) for k, v in FIRST_CALL.items()}
    log(f"[5] first call: {len(funcs)} methods x {cfg.first_rounds} fresh interpreters")
    interleave(funcs, 1)
    s = interleave(funcs, cfg.first_rounds)
    os.unlink(path)
    title = "First call: fresh interpreter, `import` to the first completed 4 KiB read"
    peers = {"open + readinto": "open + readinto", "numpy.fromfile": "numpy.fromfile",
             "pyarrow read_at": "pyarrow OSFile.read_at"}
    return [case(5, title, "colio read_into", "colio read_into", peers, s,
                 note="target < 20 ms"),
            case(5, title, "colio read_async().result()", "colio read_async().result()", peers,
                 s, note="target < 20 ms")]


# ---------------------------------------------------------------------------


def _size(n):
    for unit, v in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= v and n % v == 0:
            return f"{n // v} {unit}"
    if n >= 1e6:
        return f"{n / 1e6:.0f} MB"
    return f"{n} B"


class Config:
    def __init__(self, quick):
        self.quick = quick
        if quick:
            self.large_size = 64 * MiB
            self.large_threads = (1, 2, 4)
            self.large_warm_rounds, self.large_cold_rounds = 3, 2
            self.fanout_shapes = [(20, 2 * MiB), (200, 64 * KiB)]
            self.latencies = [0, 0.0005]
            self.fanout_rounds, self.go_fanout_repeat = 2, 3
            self.write_shapes = [(24_300_000, 228, "~107 KB"), (228 * 4096, 228, "4 KiB")]
            self.write_rounds, self.write_lat_rounds = 2, 1
            self.small_c_batches, self.small_py_rounds = 5, 5
            self.cross_repeat, self.cross_inner = 3, 1
            self.first_rounds = 2
        else:
            self.large_size = 1 * GiB
            self.large_threads = (1, 2, 4)
            self.large_warm_rounds, self.large_cold_rounds = 7, 5
            self.fanout_shapes = [(20, 2 * MiB), (200, 64 * KiB)]
            self.latencies = [0, 0.0001, 0.0005, 0.002]
            self.fanout_rounds, self.go_fanout_repeat = 15, 31
            self.write_shapes = [(243_000_000, 228, "~1.07 MB"), (228 * 4096, 228, "4 KiB")]
            self.write_rounds, self.write_lat_rounds = 11, 7
            self.small_c_batches, self.small_py_rounds = 60, 60
            self.cross_repeat, self.cross_inner = 31, 5
            self.first_rounds = 15


def wl_remote(cfg, tmp):
    import remote  # bench/remote.py (issue 14)
    return remote.run(cfg, tmp, sys.modules[__name__])


def wl_fsspec_fs(cfg, tmp):
    import fsspec_fs  # bench/fsspec_fs.py (issue 17)
    return fsspec_fs.run(cfg, tmp, sys.modules[__name__])


def wl_parquet(cfg, tmp):
    import parquet  # bench/parquet.py (issue 16)
    return parquet.run(cfg, tmp, sys.modules[__name__])


def wl_s3_write(cfg, tmp):
    import s3_write  # bench/s3_write.py (issue 18)
    return s3_write.run(cfg, tmp, sys.modules[__name__])


WORKLOADS = {1: wl_large_read, 2: wl_fanout, 3: wl_writes, 4: wl_small, 5: wl_first_call,
             6: wl_remote, 7: wl_fsspec_fs, 8: wl_parquet, 9: wl_s3_write}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds (< 1 minute)")
    ap.add_argument("--only", default="1,2,3,4,5,6,7,8,9", help="workloads to run, e.g. 1,4")
    ap.add_argument("--publish", action="store_true",
                    help="rewrite BENCHMARKS.md's tables and docs/bench/*.png from this run")
    ap.add_argument("--brief", action="store_true", help="print a summary, not the tables")
    ap.add_argument("--name", default=None, help="results file name (default: latest / quick)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--merge", default=None, metavar="A.json,B.json",
                    help="run nothing: join results files of runs of different workloads "
                         "(each run's machine line kept) and report or publish them as one")
    a = ap.parse_args(argv)
    import report

    if a.merge:
        return _merge(a, report)

    global QUIET
    QUIET = a.brief

    for tool in ("libpread_loop.so", "small_reads", "gobench"):
        if not os.path.exists(os.path.join(TOOLS, tool)):
            sys.exit(f"bench: {TOOLS}/{tool} is missing; run `make bench` (it builds it)")
    cfg = Config(a.quick)
    only = sorted({int(x) for x in a.only.split(",") if x})
    machine = Machine()
    t_start = time.perf_counter()
    cases, crossover, timings = [], None, {}
    tmp = tempfile.mkdtemp(prefix="colio-bench-")
    try:
        for w in only:
            t0 = time.perf_counter()
            res = WORKLOADS[w](cfg, tmp)
            if w == 4:
                res, crossover = res
            cases.extend(res)
            timings[w] = round(time.perf_counter() - t0, 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info = machine.finish()
    results = report.summarize({"quick": a.quick, "machine": info, "timings_s": timings,
                                "wall_s": round(time.perf_counter() - t_start, 1),
                                "cases": cases, "crossover": crossover})
    name = a.name or ("quick" if a.quick else "latest")
    os.makedirs(RESULTS, exist_ok=True)
    jpath = os.path.join(RESULTS, f"{name}.json")
    with open(jpath, "w") as f:
        json.dump(results, f, indent=1)
    if not a.quick:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        shutil.copy(jpath, os.path.join(RESULTS, f"bench-{stamp}.json"))
    plots = [] if a.no_plots else report.plot(results, os.path.join(RESULTS, f"{name}-plots"))
    if a.brief:
        print(report.brief(results, jpath))
    else:
        print(report.text(results))
        print(f"\nfull results: {os.path.relpath(jpath)}"
              + (f"; plots: {os.path.relpath(os.path.dirname(plots[0]))}/" if plots else ""))
    if a.publish:
        report.publish(results, plots, ROOT)
        print("BENCHMARKS.md and docs/bench/ updated")
    return 0


def _merge(a, report):
    """Results of several runs as one: when the machine is shared, each
    workload can be run when it is quiet and the tables published together;
    ratios are only ever taken inside one run."""
    runs = []
    for path in a.merge.split(","):
        with open(path) as f:
            runs.append(json.load(f))
    seen = {}
    for r in runs:
        for c in r["cases"]:
            seen.setdefault(c["workload"], r)
    cases = [c for w in sorted(seen) for c in seen[w]["cases"] if c["workload"] == w]
    first = runs[0]
    results = report.summarize({
        "quick": any(r.get("quick") for r in runs), "machine": first["machine"],
        "runs": [{"workloads": sorted({c["workload"] for c in r["cases"]}),
                  "machine": r["machine"]} for r in runs],
        "timings_s": {k: v for r in runs for k, v in r["timings_s"].items()},
        "wall_s": round(sum(r["wall_s"] for r in runs), 1), "cases": cases,
        "crossover": next((r["crossover"] for r in runs if r.get("crossover")), None)})
    name = a.name or "merged"
    jpath = os.path.join(RESULTS, f"{name}.json")
    with open(jpath, "w") as f:
        json.dump(results, f, indent=1)
    plots = [] if a.no_plots else report.plot(results, os.path.join(RESULTS, f"{name}-plots"))
    print(report.brief(results, jpath) if a.brief else report.text(results))
    if a.publish:
        report.publish(results, plots, ROOT)
        print("BENCHMARKS.md and docs/bench/ updated")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
