#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU, CuPy and numpy (no Go
# needed). It takes the CUDA build made on the development machine
# (./build.sh there, with scripts/fetch-cuda-headers.sh) and, through the C
# ABI with ctypes:
#   1. reads a 1 GiB file into a CuPy device array and writes it back to a
#      file, byte-exact;
#   2. runs 1, 4 and 16 concurrent device reads (and writes), byte-exact;
#   3. times them against numpy.fromfile + cupy.asarray (warm page cache) and
#      prints stream synchronisations and event waits per request;
#   4. runs the Python package on the same library (COLIO_LIBRARY): reads
#      into and writes from CuPy arrays and PyTorch tensors through
#      __cuda_array_interface__, a write ordered after a producer's
#      non-blocking stream, device appends, non-contiguous arrays refused;
#   5. reads a remote object (HTTP on 127.0.0.1: build/bench/colio-testserver
#      when it was carried, else a Python server) into a CuPy array through
#      colio's native HTTP source, byte-exact, one synchronisation per
#      request, timed beside KvikIO's RemoteFile where KvikIO is installed.
# Exit status: 0 all checks passed, 1 a check failed, 2 cannot run here.
#
#   tests/gpu/run.sh [LIB]     LIB defaults to build/lib/libcolio_cuda.so
#   COLIO_GPU_TEST_SIZE=256M   smaller file (default 1G)
#   COLIO_GPU_TEST_DIR=/path   where the test files go (default: a temp dir)
#   COLIO_GPU_TEST_TIMEOUT=540 seconds before the whole run is stopped
# COLIO_* engine settings (COLIO_NTHREADS, COLIO_BOUNCE_BUFFER_SIZE, ...)
# apply as usual.
set -uo pipefail
cd "$(dirname "$0")/../.."
lib=${1:-${COLIO_LIBRARY:-build/lib/libcolio_cuda.so}}
if [[ ! -f "$lib" ]]; then
  echo "run.sh: $lib not found: build it with ./build.sh on a machine with the CUDA headers" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
timeout --kill-after=10 "${COLIO_GPU_TEST_TIMEOUT:-540}" python3 -u - "$lib" <<'PY'
import ctypes, os, sys, tempfile, time, shutil

lib_path = os.path.abspath(sys.argv[1])
FAILED = []

def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)

def size_arg(s):
    s = s.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:], 1)
    return int(s[:-1] if mult > 1 else s) * mult

# 1. Probe the driver with ctypes first: the CUDA build exits the process at
#    load time when cuInit fails (gorgonia.org/cu's package init).
try:
    cuda = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int(0)
    rc = cuda.cuInit(0)
    rc2 = cuda.cuDeviceGetCount(ctypes.byref(n)) if rc == 0 else rc
    if rc != 0 or rc2 != 0 or n.value < 1:
        print(f"cannot run: cuInit={rc} cuDeviceGetCount={rc2} devices={n.value}")
        sys.exit(2)
    ver = ctypes.c_int(0); cuda.cuDriverGetVersion(ctypes.byref(ver))
    print(f"driver API {ver.value}, {n.value} device(s)")
except OSError as e:
    print(f"cannot run: libcuda.so.1 does not load: {e}")
    sys.exit(2)
import numpy as np
import cupy as cp

L = ctypes.CDLL(lib_path)
vp, i64, c_int = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
P = ctypes.POINTER
for name, args, res in [
    ("colio_version", [], ctypes.c_char_p),
    ("colio_last_error", [], ctypes.c_char_p),
    ("colio_has_cuda", [], c_int),
    ("colio_source_open_file", [ctypes.c_char_p, P(vp)], c_int),
    ("colio_source_free", [vp], c_int),
    ("colio_sink_open_file", [ctypes.c_char_p, c_int, P(vp)], c_int),
    ("colio_sink_free", [vp], c_int),
    ("colio_read_device_async", [vp, ctypes.c_void_p, i64, i64, P(vp)], c_int),
    ("colio_write_device_async", [vp, ctypes.c_void_p, i64, i64, P(vp)], c_int),
    ("colio_future_wait", [vp, i64, P(i64)], c_int),
    ("colio_future_free", [vp], c_int),
    ("colio_stats", [vp], c_int),
]:
    if not hasattr(L, name):
        print(f"cannot run: {lib_path} does not export {name}")
        sys.exit(2)
    f = getattr(L, name); f.argtypes = args; f.restype = res

print(f"colio {L.colio_version().decode()} from {lib_path}")
if L.colio_has_cuda() != 1:
    print("cannot run: colio_has_cuda() is not 1: this is not the CUDA build")
    sys.exit(2)

def ok(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: {rc} {L.colio_last_error().decode()}")

# colio_counters as include/colio.h declares it (the device fields last).
# The library fills what it knows up to struct_size; fields an older
# library does not know keep -1 and are reported as n/a.
BASE = ["ops_submitted", "ops_inline", "tasks", "bytes_read", "bytes_written",
        "in_flight", "peak_in_flight", "errors", "queued"]
DEV = ["device_requests", "device_stream_syncs", "device_event_waits",
       "device_bytes_to_device", "device_bytes_from_device", "device_pinned_bytes"]
class Counters(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [(f, i64) for f in BASE + DEV]
def stats():
    c = Counters(); c.struct_size = ctypes.sizeof(Counters)
    for f in BASE + DEV: setattr(c, f, -1)
    ok(L.colio_stats(ctypes.byref(c)), "colio_stats")
    return {f: getattr(c, f) for f in BASE + DEV}

WAIT_NS = 120 * 10**9
def wait(fut, what):
    nb = i64(0)
    rc = L.colio_future_wait(fut, WAIT_NS, ctypes.byref(nb))
    msg = L.colio_last_error().decode() if rc else ""
    L.colio_future_free(fut)
    if rc != 0:
        raise RuntimeError(f"{what}: status {rc} {msg}")
    return nb.value

def read_dev(src, arr, off, size):
    """arr: a CuPy array or a raw device address."""
    ptr = arr if isinstance(arr, int) else arr.data.ptr
    fut = vp()
    ok(L.colio_read_device_async(src, ptr, size, off, ctypes.byref(fut)), "colio_read_device_async")
    return fut

def write_dev(snk, arr, off, size):
    fut = vp()
    ok(L.colio_write_device_async(snk, arr.data.ptr, size, off, ctypes.byref(fut)), "colio_write_device_async")
    return fut

SIZE = size_arg(os.environ.get("COLIO_GPU_TEST_SIZE", "1G"))
tmp = tempfile.mkdtemp(prefix="colio-gpu-", dir=os.environ.get("COLIO_GPU_TEST_DIR"))
try:
    path, out = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
    t = time.perf_counter()
    ref = np.frombuffer(np.random.default_rng(7).bytes(SIZE), dtype=np.uint8)
    ref.tofile(path)
    print(f"wrote {SIZE >> 20} MiB test file in {time.perf_counter() - t:.1f}s ({path})")
    ref_dev = cp.asarray(ref)

    src = vp(); ok(L.colio_source_open_file(path.encode(), ctypes.byref(src)), "open source")
    dev = cp.empty(SIZE, dtype=cp.uint8)

    # ---- correctness: whole file in, whole array out ------------------
    dev.fill(0); cp.cuda.Device().synchronize()
    n = wait(read_dev(src, dev, 0, SIZE), "read 1 GiB")
    check(n == SIZE and bool((dev == ref_dev).all()), f"read {SIZE >> 20} MiB into a CuPy array byte-exact ({n} bytes)")
    snk = vp(); ok(L.colio_sink_open_file(out.encode(), 1 | 2, ctypes.byref(snk)), "open sink")
    dev2 = dev.copy()  # produced by work queued on the default stream, not waited for
    n = wait(write_dev(snk, dev2, 0, SIZE), "write 1 GiB")
    ok(L.colio_sink_free(snk), "close sink")
    back = np.fromfile(out, dtype=np.uint8)
    check(n == SIZE and back.size == SIZE and np.array_equal(back, ref), f"wrote the array back to a file byte-exact ({n} bytes)")
    del dev2, back

    # Offsets that are not chunk-aligned, a read that crosses the end.
    odd = [(0, 1), (12345, 3 << 20), (SIZE - 5000, 5000), ((7 << 20) + 3, (9 << 20) + 11)]
    good = True
    for off, sz in odd:
        d = cp.zeros(sz, dtype=cp.uint8)
        got = wait(read_dev(src, d, off, sz), "odd read")
        good &= got == sz and bool((d == ref_dev[off:off + sz]).all())
    d = cp.zeros(10000, dtype=cp.uint8)
    got = wait(read_dev(src, d, SIZE - 4000, 10000), "read across the end")
    good &= got == 4000 and bool((d[:4000] == ref_dev[SIZE - 4000:]).all())
    check(good, "unaligned offsets and sizes, and a read across the end, byte-exact")

    # A host pointer is refused clearly.
    host = np.zeros(4096, dtype=np.uint8); fut = vp()
    rc = L.colio_read_device_async(src, host.ctypes.data, 4096, 0, ctypes.byref(fut))
    check(rc != 0, f"a host pointer is refused: {rc} {L.colio_last_error().decode()[:120]}")

    # PyTorch tensors go through the same path (its caching allocator).
    try:
        import torch
        tt = torch.zeros(64 << 20, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        got = wait(read_dev(src, tt.data_ptr(), 1 << 20, 64 << 20), "torch read")
        check(got == 64 << 20 and bool((tt.cpu().numpy() == ref[1 << 20:(65 << 20)]).all()), "read into a PyTorch tensor byte-exact")
        del tt
    except ImportError:
        print("(PyTorch not installed: skipped)")

    # ---- throughput: baseline, then 1, 4, 16 concurrent requests -------
    def best(fn, reps=3):
        ts = []
        for _ in range(reps):
            cp.cuda.Device().synchronize()
            t = time.perf_counter(); fn(); cp.cuda.Device().synchronize()
            ts.append(time.perf_counter() - t)
        return min(ts)

    def baseline():
        a = np.fromfile(path, dtype=np.uint8)
        b = cp.asarray(a)
        return b
    tb = best(baseline)
    gbs = lambda t: SIZE / t / 1e9
    print(f"\nbaseline numpy.fromfile + cupy.asarray: {gbs(tb):6.2f} GB/s")
    print(f"{'requests':>8} {'read GB/s':>10} {'x base':>7} {'write GB/s':>11} {'syncs/req':>10} {'evwaits/req':>12} {'byte-exact':>10}")
    sink_void = os.path.join(tmp, "out2.bin")
    ratios = {}
    for nreq in (1, 4, 16):
        part = SIZE // nreq
        def run_reads():
            futs = [read_dev(src, dev[i * part:(i + 1) * part], i * part, part) for i in range(nreq)]
            for f in futs: wait(f, "read")
        s0 = stats(); dev.fill(0)
        tr = best(run_reads)
        s1 = stats()
        exact = bool((dev == ref_dev).all())
        snk = vp(); ok(L.colio_sink_open_file(sink_void.encode(), 1 | 2, ctypes.byref(snk)), "open sink")
        def run_writes():
            futs = [write_dev(snk, dev[i * part:(i + 1) * part], i * part, part) for i in range(nreq)]
            for f in futs: wait(f, "write")
        tw = best(run_writes)
        ok(L.colio_sink_free(snk), "close sink")
        s2 = stats()
        exact &= np.array_equal(np.fromfile(sink_void, dtype=np.uint8), ref)
        reqs = s2["device_requests"] - s0["device_requests"] if s0["device_requests"] >= 0 else -1
        if reqs > 0:
            syncs = (s2["device_stream_syncs"] - s0["device_stream_syncs"]) / reqs
            waits = (s2["device_event_waits"] - s0["device_event_waits"]) / reqs
            check(reqs == 6 * nreq and syncs == 1.0, f"{nreq} concurrent: one stream synchronisation per request ({reqs} requests, {syncs:.2f} syncs each)")
            sy, ew = f"{syncs:.2f}", f"{waits:.1f}"
        else:
            sy = ew = "n/a"
        ratios[nreq] = gbs(tr) / gbs(tb)
        print(f"{nreq:>8} {gbs(tr):>10.2f} {ratios[nreq]:>7.2f} {gbs(tw):>11.2f} {sy:>10} {ew:>12} {str(exact):>10}")
        check(exact, f"{nreq} concurrent requests byte-exact (reads and writes)")
    best_ratio = max(ratios.values())
    print(f"\nbest read speed-up over numpy+cupy: {best_ratio:.2f}x (target 1.5x): {'met' if best_ratio >= 1.5 else 'NOT met'}")
    print("stats:", stats())
    L.colio_source_free(src)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("\nFAILED: " + "; ".join(FAILED) if FAILED else "\nall GPU checks passed")
sys.exit(1 if FAILED else 0)
PY
rc=$?
[[ $rc -eq 124 || $rc -eq 137 ]] && echo "run.sh: timed out after ${COLIO_GPU_TEST_TIMEOUT:-540}s"
[[ $rc -eq 2 ]] && exit 2

# 4. The Python package on the CUDA build.
echo
echo "Python package (colio on $lib):"
COLIO_LIBRARY=$(realpath "$lib") PYTHONPATH=$PWD/python \
  timeout --kill-after=10 "${COLIO_GPU_PY_TIMEOUT:-180}" python3 -u - <<'PY'
import os, sys, tempfile, shutil, time
import numpy as np
import cupy as cp
import colio

FAILED = []
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)

print("library:", colio.library_path())
tmp = tempfile.mkdtemp(prefix="colio-gpu-py-")
try:
    n = 96 << 20
    ref = np.frombuffer(np.random.default_rng(3).bytes(n), dtype=np.uint8)
    path = os.path.join(tmp, "in.bin"); ref.tofile(path)
    src = colio.source(path)
    # CuPy, 2-D float32 (size from shape x itemsize), read then written back.
    a = cp.zeros((n // 4 // 1024, 1024), dtype=cp.float32)
    got = src.read_async(a, 0).result()
    check(got == n and np.array_equal(cp.asnumpy(a).view(np.uint8).ravel(), ref),
          f"src.read_async(cupy float32 {a.shape}) byte-exact ({got} bytes)")
    out = os.path.join(tmp, "out.bin")
    with colio.sink(out) as snk:
        f1 = snk.write_async(a)                 # appended at 0
        snk.write(b"--host--")                  # then the host bytes
        f3 = snk.write_async(a[:1])             # then one more row, appended
        r1, r3 = f1.result(), f3.result()
        check((f1.offset, f3.offset) == (0, n + 8), f"device appends in call order (offsets {f1.offset}, {f3.offset})")
    back = np.fromfile(out, dtype=np.uint8)
    check(r1 == n and np.array_equal(back[:n], ref) and bytes(back[n:n + 8]) == b"--host--"
          and np.array_equal(back[n + 8:], ref[:4096]), "sink.write_async(cupy) and appends byte-exact")
    # Non-contiguous and read-only destinations are refused.
    try:
        src.read_async(a[:, ::2]); check(False, "non-contiguous refused")
    except colio.InvalidArgumentError as e:
        check("not C-contiguous" in str(e), "a non-contiguous CuPy view is refused clearly")
    # A write ordered after the producer's non-blocking stream: the stream
    # is held up by a host callback, then fills the array; colio's copies
    # must wait for the fill (the array's __cuda_array_interface__ names
    # the stream).
    s = cp.cuda.Stream(non_blocking=True)
    b = cp.zeros(16 << 20, dtype=cp.uint8); cp.cuda.Device().synchronize()
    with s:
        s.launch_host_func(lambda _: time.sleep(0.5), None)
        b.fill(7)
        cai_stream = b.__cuda_array_interface__.get("stream")
        out2 = os.path.join(tmp, "out2.bin")
        with colio.sink(out2) as snk:
            t = time.perf_counter()
            fut = snk.write_async(b, 0)
            t_submit = time.perf_counter() - t
            fut.result()
    w = np.fromfile(out2, dtype=np.uint8)
    check(cai_stream == s.ptr and bool((w == 7).all()) and t_submit < 0.25,
          f"write ordered after the producer's stream {cai_stream:#x} (submit {t_submit*1e3:.1f} ms, no host wait; all bytes written after the fill)")
    # PyTorch tensors (CAI v2: the legacy default stream).
    try:
        import torch
        tt = torch.empty(n // 2, dtype=torch.int16, device="cuda")
        got = src.read_async(tt, 0).result()
        check(got == n and np.array_equal(tt.cpu().numpy().view(np.uint8), ref), "src.read_async(torch int16 tensor) byte-exact")
        tt2 = tt.view(-1, 2)[:, 0]
        try:
            src.read_async(tt2); check(False, "strided tensor refused")
        except colio.InvalidArgumentError:
            check(True, "a strided PyTorch view is refused")
    except ImportError:
        print("(PyTorch not installed: skipped)")
    st = colio.stats()
    check(st["device_stream_syncs"] == st["device_requests"] > 0,
          f"one stream synchronisation per device request ({st['device_requests']} requests)")
    src.close()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("\nFAILED (Python): " + "; ".join(FAILED) if FAILED else "\nall Python GPU checks passed")
sys.exit(1 if FAILED else 0)
PY
prc=$?
[[ $prc -eq 124 || $prc -eq 137 ]] && echo "run.sh: the Python checks timed out"

# 5. Remote -> device (issue 14): colio's HTTP source into CuPy, beside KvikIO.
echo
echo "Remote to device (colio on $lib):"
COLIO_LIBRARY=$(realpath "$lib") PYTHONPATH=$PWD/python \
  timeout --kill-after=10 "${COLIO_GPU_REMOTE_TIMEOUT:-180}" python3 -u - <<'PY'
import os, shutil, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import numpy as np
import cupy as cp
import colio

FAILED = []
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
    def do_GET(self):
        d = self.server.data
        a, _, b = self.headers.get("Range", "bytes=0-").split("=", 1)[1].partition("-")
        if a == "":
            a, b = len(d) - int(b), len(d) - 1
        a, b = int(a), min(int(b) if b else len(d) - 1, len(d) - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {a}-{b}/{len(d)}")
        self.send_header("Content-Length", str(b - a + 1))
        self.end_headers()
        self.wfile.write(d[a:b + 1])

n = 256 << 20
ref = np.frombuffer(np.random.default_rng(14).bytes(n), dtype=np.uint8)
tmp = tempfile.mkdtemp(prefix="colio-gpu-remote-")
proc = srv = None
try:
    os.makedirs(os.path.join(tmp, "bkt"))
    ref.tofile(os.path.join(tmp, "bkt", "obj"))
    exe = os.path.join(os.getcwd(), "build", "bench", "colio-testserver")
    if os.access(exe, os.X_OK):
        proc = subprocess.Popen([exe, "-dir", tmp, "-stdin"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        url = proc.stdout.readline().split()[-1] + "/bkt/obj"
        server = "colio-testserver (Go)"
    else:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        srv.data = memoryview(ref.tobytes())
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{srv.server_address[1]}/bkt/obj"
        server = "Python http.server"
    print(f"server: {server}, object {n >> 20} MiB")
    before = colio.stats()
    src = colio.source(url)
    check(src.backend == "native", f"colio.source(url).backend == 'native' ({src.backend})")
    a = cp.zeros(n, dtype=cp.uint8)
    best = None
    for _ in range(3):
        a.fill(0); cp.cuda.Device().synchronize()
        t = time.perf_counter()
        got = src.read_async(a, 0).result()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    check(got == n and np.array_equal(cp.asnumpy(a), ref), f"remote -> device byte-exact ({got} bytes)")
    part = cp.zeros(5 << 20, dtype=cp.uint8)
    got = src.read_async(part, 12345).result()
    check(got == part.size and np.array_equal(cp.asnumpy(part), ref[12345:12345 + part.size]),
          "a remote range at an odd offset byte-exact")
    st = colio.stats()
    reqs = st["device_requests"] - before["device_requests"]
    syncs = st["device_stream_syncs"] - before["device_stream_syncs"]
    check(reqs == 4 and syncs == reqs, f"one stream synchronisation per remote device request ({syncs} for {reqs})")
    print(f"colio:  {n / best / 1e9:.2f} GB/s ({best * 1e3:.0f} ms, best of 3)")
    src.close()
    try:
        import kvikio
        f = kvikio.RemoteFile.open_http(url)
        b = cp.zeros(n, dtype=cp.uint8)
        kbest = None
        for _ in range(3):
            b.fill(0); cp.cuda.Device().synchronize()
            t = time.perf_counter()
            k = f.read(b)
            dt = time.perf_counter() - t
            kbest = dt if kbest is None else min(kbest, dt)
        ok = k == n and np.array_equal(cp.asnumpy(b), ref)
        print(f"kvikio: {n / kbest / 1e9:.2f} GB/s ({kbest * 1e3:.0f} ms, best of 3), "
              f"{'byte-exact' if ok else 'WRONG BYTES'}; kvikio time / colio time = {kbest / best:.2f}")
    except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not failed
        print(f"kvikio RemoteFile: {type(e).__name__}: {str(e)[:300]}")
finally:
    if proc is not None:
        proc.stdin.close(); proc.wait(10)
    if srv is not None:
        srv.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
print("\nFAILED (remote): " + "; ".join(FAILED) if FAILED else "\nall remote GPU checks passed")
sys.exit(1 if FAILED else 0)
PY
rrc=$?
[[ $rrc -eq 124 || $rrc -eq 137 ]] && echo "run.sh: the remote checks timed out"
[[ $rc -ne 0 ]] && exit $rc
[[ $prc -ne 0 ]] && exit $prc
exit $rrc
