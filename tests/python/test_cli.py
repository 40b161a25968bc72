"""python -m colio: cp never damages or truncates what it copies onto, and
every failure is one clear line on stderr with a non-zero exit (issue 12
items 1 and 2, issue 13 item 6).

Each command runs in a subprocess, as a user runs it. Data is compared
with bytes written or served by the test itself, never read through colio.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import ROOT

PY = sys.executable
OLD = random.Random(99).randbytes(1_000_003)  # what the destination held before
WATCHDOG = 120  # a hang guard, not a timing assertion


def cli(*args, env=None, timeout=WATCHDOG):
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    e.update(env or {})
    return subprocess.run([PY, "-m", "colio", *map(str, args)], capture_output=True,
                          text=True, env=e, timeout=timeout)


def one_line(r) -> str:
    """The failure report: exactly one line on stderr, no traceback."""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def existing(tmp_path, name="dst.bin", mode=0o640):
    p = tmp_path / name
    p.write_bytes(OLD)
    os.chmod(p, mode)
    return p


# ---- a local HTTP server (127.0.0.1 only) that misbehaves on request --------

class BadServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up on a failed copy resets its connections

    def __init__(self, body: bytes):
        super().__init__(("127.0.0.1", 0), _BadHandler)
        self.body = body
        self.mode = "ok"
        self.ok_ranges = 0  # "fail": how many ranges succeed before every GET gets 500
        self.delay = 0.0
        self.lock = threading.Lock()
        self.gets = 0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/data.bin"

    def size(self) -> int:
        """What HEAD reports: "grow" reports more once a GET was served,
        "shrink" more than the body from the start."""
        n = len(self.body)
        if self.mode == "shrink" or (self.mode == "grow" and self.gets):
            n += 1000
        return n


class _BadHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(self.server.size()))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        srv = self.server
        with srv.lock:
            srv.gets += 1
            n = srv.gets
        if srv.delay:
            time.sleep(srv.delay)
        data = srv.body
        if srv.mode == "fail" and n > srv.ok_ranges:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        rng = self.headers.get("Range")
        if rng and srv.mode != "norange":
            a, _, b = rng.partition("=")[2].partition("-")
            start, end = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
            body = data[start:end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{srv.size()}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def bad_server(ref):
    srv = BadServer(ref)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


# ---- 12.1: copying a file onto itself ----------------------------------------

SAME = {
    "same path": lambda d: (d / "a.bin", d / "a.bin"),
    "symlink": lambda d: (d / "a.bin", d / "link.bin"),
    "symlink first": lambda d: (d / "link.bin", d / "a.bin"),
    "hard link": lambda d: (d / "a.bin", d / "hard.bin"),
    "two spellings": lambda d: (d / "a.bin", f"{d}/sub/../././a.bin"),
    "file URL": lambda d: (f"file://{d}/a.bin", d / "a.bin"),
    "file URL as destination": lambda d: (d / "a.bin", f"file://{d}/a.bin"),
    "memory URLs": lambda d: ("memory://x", "memory:///x"),
}


@pytest.mark.parametrize("case", list(SAME))
def test_cp_onto_itself_is_refused_and_touches_nothing(tmp_path, case):
    """Before the fix `cp X X` (and each alias here) truncated X to 0 bytes,
    printed "copied 0 B" and exited 0."""
    (tmp_path / "sub").mkdir()
    a = existing(tmp_path, "a.bin")
    os.symlink(a, tmp_path / "link.bin")
    os.link(a, tmp_path / "hard.bin")
    before = sorted(os.listdir(tmp_path))
    st = os.stat(a)
    src, dst = SAME[case](tmp_path)
    r = cli("cp", src, dst, "-q")
    assert r.returncode != 0
    assert "same file" in one_line(r)
    assert a.read_bytes() == OLD
    assert os.stat(a).st_mtime_ns == st.st_mtime_ns
    assert sorted(os.listdir(tmp_path)) == before


# ---- 12.2: a failed cp leaves the destination as it was ------------------------

def assert_untouched(tmp_path, dst, mode=0o640):
    assert dst.read_bytes() == OLD
    assert os.stat(dst).st_mode & 0o7777 == mode
    assert sorted(os.listdir(tmp_path)) == [dst.name], "a temporary file was left behind"


def test_cp_http_500_part_way_keeps_destination(tmp_path, bad_server):
    """Before the fix a 500 after some ranges had succeeded left the
    destination truncated and holed (bytes of the new file mixed with zeros)."""
    bad_server.mode, bad_server.ok_ranges = "fail", 3
    dst = existing(tmp_path)
    r = cli("cp", bad_server.url, dst, "-q", "--chunk-size", 1 << 18, "--window", 2)
    assert r.returncode != 0
    line = one_line(r)
    assert "500" in line and bad_server.url in line, line
    assert bad_server.gets > 3  # some ranges did succeed first
    assert_untouched(tmp_path, dst)


def test_cp_server_ignoring_range_keeps_destination(tmp_path, bad_server, ref):
    """Before the fix a server that answers 200 with the whole body left the
    destination empty. If colio refuses the body, the old file stays; if it
    ever copes, the copy must be exact."""
    bad_server.mode = "norange"
    dst = existing(tmp_path)
    r = cli("cp", bad_server.url, dst, "-q", "--chunk-size", 1 << 18)
    if r.returncode == 0:
        assert dst.read_bytes() == ref
        assert sorted(os.listdir(tmp_path)) == [dst.name]
    else:
        one_line(r)
        assert_untouched(tmp_path, dst)


@pytest.mark.parametrize("mode", ["grow", "shrink"])
def test_cp_source_changing_size_is_an_error(tmp_path, bad_server, mode):
    """A source whose size changes during the copy is an error. Before the
    fix a source that grew was copied short and reported as a success."""
    bad_server.mode = mode
    dst = existing(tmp_path)
    r = cli("cp", bad_server.url, dst, "-q", "--chunk-size", 1 << 18)
    assert r.returncode != 0
    line = one_line(r)  # the native HTTP source (issue 14) finds it in the next response
    assert ("while copying" in line or "short" in r.stderr or "changed since open" in line
            or "Content-Range" in line), line
    assert_untouched(tmp_path, dst)


def test_cp_local_source_growing_is_an_error(tmp_path):
    """A local file appended to during the copy: stopped part-way (SIGSTOP),
    the test appends, and the copy must fail instead of ending short.
    Before the fix it succeeded, copying the old size (and wrote no
    temporary file for the test to wait for). A copy that finishes before
    it can be stopped is tried again (never seen: 8,192 reads of 4 KiB one
    at a time), and the test fails if no try was caught part-way."""
    for attempt in range(5):
        d = tmp_path / f"try{attempt}"
        d.mkdir()
        caught, code, err, dst = _grow_during_copy(d)
        if caught:
            break
    else:
        pytest.fail("every copy finished before it could be stopped: nothing was tested")
    assert code != 0, err
    assert "while copying" in err, err
    assert dst.read_bytes() == OLD
    assert sorted(os.listdir(d)) == ["dst.bin", "src.bin"]


def _grow_during_copy(d):
    src = d / "src.bin"
    data = random.Random(5).randbytes(32 << 20)
    src.write_bytes(data)
    dst = existing(d)
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.Popen([PY, "-m", "colio", "cp", str(src), str(dst), "-q", "--chunk-size",
                          "4096", "--window", "1"], stderr=subprocess.PIPE, text=True, env=e)
    try:
        deadline = time.monotonic() + WATCHDOG
        while not [n for n in os.listdir(d) if n not in ("src.bin", "dst.bin")]:
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.001)
        p.send_signal(signal.SIGSTOP)
        copying = dst.read_bytes() == OLD
        with open(src, "ab") as f:
            f.write(b"more")
        p.send_signal(signal.SIGCONT)
        _, err = p.communicate(timeout=WATCHDOG)
    finally:
        p.kill()
        p.wait()
    return copying, p.returncode, err, dst


def test_cp_interrupted_keeps_destination(tmp_path, bad_server):
    """Ctrl-C during a copy: before the fix the destination was already
    truncated; now it keeps its bytes and the temporary file is removed."""
    bad_server.delay = 0.5
    dst = existing(tmp_path)
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.Popen([PY, "-m", "colio", "cp", bad_server.url, str(dst), "-q",
                          "--chunk-size", str(1 << 18)], stderr=subprocess.PIPE, text=True, env=e)
    try:
        deadline = time.monotonic() + WATCHDOG
        while not bad_server.gets:
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=WATCHDOG)
    finally:
        p.kill()
        p.wait()
    assert p.returncode != 0
    assert "interrupted" in err and "Traceback" not in err, err
    assert_untouched(tmp_path, dst)


def test_cp_success_replaces_and_keeps_permission_bits(tmp_path, data_file, ref):
    """The new bytes, the destination's old permission bits (as cp keeps
    them), and no temporary file left."""
    dst = existing(tmp_path, mode=0o604)
    r = cli("cp", data_file, dst, "-q")
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == ref
    assert os.stat(dst).st_mode & 0o7777 == 0o604
    assert sorted(os.listdir(tmp_path)) == [dst.name]


def test_cp_new_destination_gets_source_mode_less_umask(tmp_path, data_file, ref):
    """A new destination is made like cp makes it: the source's permission
    bits less the umask (not the 0600 of a temporary file)."""
    src = tmp_path / "tool.bin"
    src.write_bytes(ref)
    os.chmod(src, 0o755)
    dst = tmp_path / "new.bin"
    r = cli("cp", src, dst, "-q")
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == ref
    assert os.stat(dst).st_mode & 0o7777 == 0o755 & ~umask()


def test_cp_through_a_symlinked_destination_writes_its_target(tmp_path, data_file, ref):
    """Like cp: a destination that is a symlink is followed, the link kept."""
    target = existing(tmp_path, "target.bin")
    link = tmp_path / "link.bin"
    os.symlink(target, link)
    r = cli("cp", data_file, link, "-q")
    assert r.returncode == 0, r.stderr
    assert os.path.islink(link)
    assert target.read_bytes() == ref
    assert sorted(os.listdir(tmp_path)) == ["link.bin", "target.bin"]


def test_cp_into_a_directory(tmp_path, data_file, ref):
    """Like cp: a directory destination receives the source's name."""
    r = cli("cp", data_file, tmp_path, "-q")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / os.path.basename(data_file)).read_bytes() == ref


# ---- 13.6: every failure is one clear line --------------------------------------

@pytest.mark.parametrize("cmd", [["info"], ["bench", "--quick"], ["cp", "a", "b"]])
def test_bad_nthreads_is_one_line(cmd, tmp_path):
    """Before the fix info and bench printed a traceback."""
    r = cli(*cmd, env={"COLIO_NTHREADS": "lots"})
    assert r.returncode != 0
    line = one_line(r)
    assert "COLIO_NTHREADS" in line and "lots" in line, line


def test_cp_404_names_status_and_url(tmp_path, server):
    """Before the fix the line was only the URL."""
    url = server.url + "/missing.bin"
    r = cli("cp", url, tmp_path / "out.bin", "-q")
    assert r.returncode != 0
    line = one_line(r)
    assert url in line and ("404" in line or "not found" in line.lower()), line
    assert os.listdir(tmp_path) == []


def test_cp_refused_connection_says_so(tmp_path):
    """Before the fix the line was only the URL."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x.bin"
    r = cli("cp", url, tmp_path / "out.bin", "-q")
    assert r.returncode != 0
    line = one_line(r)
    assert url in line and "refused" in line.lower(), line
    assert os.listdir(tmp_path) == []


def test_cp_missing_local_source(tmp_path):
    r = cli("cp", tmp_path / "nope.bin", tmp_path / "out.bin", "-q")
    assert r.returncode != 0
    assert "nope.bin" in one_line(r)
    assert os.listdir(tmp_path) == []


def test_cp_unwritable_destination_directory(tmp_path, data_file):
    r = cli("cp", data_file, tmp_path / "no" / "such" / "dir.bin", "-q")
    assert r.returncode != 0
    line = one_line(r)
    assert "dir.bin" in line or str(tmp_path / "no") in line, line


def test_no_subcommand_prints_the_help():
    """Before the fix: a usage line and "the following arguments are
    required: cmd"."""
    r = cli()
    assert r.returncode != 0
    out = r.stdout + r.stderr
    for word in ("usage", "cp", "bench", "info", "copy"):
        assert word in out, out


def test_progress_bar_without_tqdm(tmp_path, data_file, ref):
    """The simple bar when tqdm is not importable (a stub that raises
    ImportError shadows any installed one)."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "tqdm.py").write_text("raise ImportError('no tqdm here')\n")
    dst = tmp_path / "out.bin"
    r = cli("cp", data_file, dst,
            env={"PYTHONPATH": os.pathsep.join([str(stub), os.path.join(ROOT, "python")])})
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == ref
    assert "100.0%" in r.stderr and "copied" in r.stderr


def test_progress_bar_uses_tqdm_when_installed(tmp_path, data_file, ref):
    """With tqdm importable (a stand-in that records its calls), the bar is
    tqdm's, counted in bytes up to the size."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "tqdm.py").write_text(
        "import sys\n"
        "class tqdm:\n"
        "    def __init__(self, total=None, unit=None, **kw):\n"
        "        self.total, self.n = total, 0\n"
        "        print('TQDM start', total, unit, file=sys.stderr)\n"
        "    def update(self, n):\n"
        "        self.n += n\n"
        "    def close(self):\n"
        "        print('TQDM end', self.n, file=sys.stderr)\n")
    dst = tmp_path / "out.bin"
    r = cli("cp", data_file, dst,
            env={"PYTHONPATH": os.pathsep.join([str(stub), os.path.join(ROOT, "python")])})
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == ref
    assert f"TQDM start {len(ref)} B" in r.stderr
    assert f"TQDM end {len(ref)}" in r.stderr

