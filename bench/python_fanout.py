#!/usr/bin/env python3
"""Python benchmarks for colio (not a test: prints a table of ratios).

1. Fan-out of 20 x 2 MiB reads from an fsspec source with 2 ms latency per
   request: colio vs a serial Python loop vs ThreadPoolExecutor(8) vs
   fs.cat_ranges (fsspec's own batch call).
2. The same over HTTP against a local server with 2 ms latency (fsspec's
   async HTTP file system): colio (requests on the fs's event loop) vs the
   serial loop vs fs.cat_ranges (asyncio.gather).
3. A 4 KiB read of a warm local file from Python: Source.read_into vs
   os.preadv into the same buffer (median of many).
4. Time from `import colio` to the first completed read, in fresh
   interpreters (median of several).

Run: make bench-python   (or .venv/bin/python bench/python_fanout.py)
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import colio  # noqa: E402
from colio.testing import LatencyFileSystem  # noqa: E402

N, SIZE, LATENCY = 20, 2 << 20, 0.002
REPEAT = 7


def median_time(fn, repeat=REPEAT):
    fn()  # warm up
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def table(title, rows, base):
    print(f"\n{title}")
    print(f"  {'method':<32} {'median ms':>10} {'MiB/s':>9} {'vs serial':>10} {'colio is':>10}")
    total = N * SIZE / (1 << 20)
    t_colio = rows["colio"]
    for name, t in rows.items():
        print(f"  {name:<32} {t * 1e3:10.1f} {total / t:9.0f} {base / t:9.1f}x "
              f"{t / t_colio:9.2f}x")


def fanout_latency_fs(payload, ranges):
    fs = LatencyFileSystem(latency=LATENCY)
    fs.pipe_file("/data", payload)
    src = colio.from_fsspec(fs, "/data")
    starts = [o for o, _ in ranges]
    ends = [o + n for o, n in ranges]

    def serial():
        return [fs.cat_file("/data", start=o, end=o + n) for o, n in ranges]

    pool = cf.ThreadPoolExecutor(8)

    def threads():
        return list(pool.map(lambda r: fs.cat_file("/data", start=r[0], end=r[0] + r[1]), ranges))

    def cat_ranges():
        return fs.cat_ranges(["/data"] * len(ranges), starts, ends)

    def with_colio():
        return [f.result() for f in src.read_ranges_async(ranges)]

    want = [payload[o:o + n] for o, n in ranges]
    for fn in (serial, threads, cat_ranges, with_colio):
        assert [bytes(x) for x in fn()] == want, fn.__name__
    fs.reset()
    with_colio()
    peak = fs.peak_in_flight
    rows = {"serial loop of fs.cat_file": median_time(serial),
            "ThreadPoolExecutor(8)": median_time(threads),
            "fs.cat_ranges": median_time(cat_ranges),
            "colio": median_time(with_colio)}
    pool.shutdown()
    src.close()
    table(f"1. {N} x {SIZE >> 20} MiB from an fsspec source with {LATENCY * 1e3:g} ms latency "
          f"(colio threads={colio.get_config()['threads']}, peak in flight {peak})",
          rows, rows["serial loop of fs.cat_file"])
    return rows


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.payload)))
        self.end_headers()

    def do_GET(self):
        time.sleep(self.server.latency)
        data = self.server.payload
        a, _, b = self.headers["Range"].split("=")[1].partition("-")
        body = data[int(a):int(b) + 1]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {a}-{b}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def fanout_http(payload, ranges):
    import fsspec
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.payload, srv.latency = payload, LATENCY
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/data"
    fs = fsspec.filesystem("http", skip_instance_cache=True)
    src = colio.from_fsspec(fs, url)

    def serial():
        return [fs.cat_file(url, start=o, end=o + n) for o, n in ranges]

    def cat_ranges():
        return fs.cat_ranges([url] * len(ranges), [o for o, _ in ranges], [o + n for o, n in ranges])

    def with_colio():
        return [f.result() for f in src.read_ranges_async(ranges)]

    want = [payload[o:o + n] for o, n in ranges]
    for fn in (serial, cat_ranges, with_colio):
        assert [bytes(x) for x in fn()] == want, fn.__name__
    rows = {"serial loop of fs.cat_file": median_time(serial),
            "fs.cat_ranges (asyncio.gather)": median_time(cat_ranges),
            "colio": median_time(with_colio)}
    src.close()
    srv.shutdown()
    table(f"2. the same over HTTP (local server, {LATENCY * 1e3:g} ms latency per request, "
          "fsspec's async HTTP file system)", rows, rows["serial loop of fs.cat_file"])
    return rows


def small_read(path):
    src = colio.source(path)
    fd = os.open(path, os.O_RDONLY)
    buf = bytearray(4096)
    size = os.path.getsize(path)
    offs = [(i * 1_048_573) % (size - 4096) for i in range(256)]
    inner = 200

    def per_call(fn):
        samples = []
        for _ in range(60):
            t0 = time.perf_counter_ns()
            for o in offs[:inner]:
                fn(o)
            samples.append((time.perf_counter_ns() - t0) / inner)
        return statistics.median(samples)

    def c(o):
        src.read_into(buf, o)

    def p(o):
        os.preadv(fd, [buf], o)

    def a(o):
        src.read_async(buf, o).result()

    for o in offs:  # warm the page cache and both paths
        c(o)
        p(o)
    t_colio, t_pread, t_async = per_call(c), per_call(p), per_call(a)
    os.close(fd)
    src.close()
    print("\n3. one 4 KiB read of a warm local file from Python (median ns per call)")
    print(f"  os.preadv(fd, [buf], off)          {t_pread:8.0f} ns")
    print(f"  Source.read_into(buf, off)         {t_colio:8.0f} ns   {t_colio / t_pread:.2f}x os.preadv")
    print(f"  Source.read_async(buf, off).result() {t_async:6.0f} ns   {t_async / t_pread:.2f}x os.preadv")
    return t_colio / t_pread


def first_read(path):
    code = """
import time
t0 = time.perf_counter()
import colio
src = colio.source(%r)
buf = bytearray(4096)
%s
print((time.perf_counter() - t0) * 1e3)
"""
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(HERE), "python"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = {}
    for name, stmt in (("read_into", "src.read_into(buf, 0)"),
                       ("read_async().result()", "src.read_async(buf, 0).result()")):
        ts = []
        for _ in range(9):
            r = subprocess.run([sys.executable, "-c", code % (path, stmt)], capture_output=True,
                               text=True, env=env, check=True)
            ts.append(float(r.stdout))
        out[name] = statistics.median(ts)
    print("\n4. fresh interpreter: `import colio` -> first completed 4 KiB read (median of 9)")
    for name, ms in out.items():
        print(f"  {name:<24} {ms:6.1f} ms")
    return out


def main():
    print(f"colio {colio.__version__}, {colio.library_path()}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")
    payload = os.urandom(1 << 20) * (N * 2 + 1)
    ranges = [(i * SIZE + (i * 4099) % 65536, SIZE) for i in range(N)]
    r1 = fanout_latency_fs(payload, ranges)
    r2 = fanout_http(payload, ranges)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.bin")
        with open(path, "wb") as f:
            f.write(payload[:64 << 20])
        ratio = small_read(path)
        fr = first_read(path)
    print("\nsummary")
    print(f"  fsspec 2 ms: colio {r1['serial loop of fs.cat_file'] / r1['colio']:.1f}x the serial loop "
          f"(target >= 4x), {r1['ThreadPoolExecutor(8)'] / r1['colio']:.2f}x ThreadPoolExecutor(8) "
          f"(target >= 1), {r1['fs.cat_ranges'] / r1['colio']:.1f}x fs.cat_ranges")
    print(f"  HTTP 2 ms:   colio {r2['serial loop of fs.cat_file'] / r2['colio']:.1f}x the serial loop, "
          f"{r2['fs.cat_ranges (asyncio.gather)'] / r2['colio']:.2f}x fs.cat_ranges")
    print(f"  4 KiB read:  {ratio:.2f}x os.preadv (target <= 1.5x)")
    print(f"  import -> first read: {fr['read_into']:.1f} ms sync, "
          f"{fr['read_async().result()']:.1f} ms async (target < 20 ms)")


if __name__ == "__main__":
    main()
