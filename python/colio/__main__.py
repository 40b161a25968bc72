"""python -m colio: a small command-line tool.

    python -m colio cp SRC DST      copy a local path or fsspec URL to a local file
    python -m colio bench           the demo: colio vs a plain Python loop
    python -m colio info            library path, version and settings
"""

from __future__ import annotations

import argparse
import sys
import time


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


class Progress:
    """A one-line progress bar on stderr, redrawn at most 10 times a second."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.total = total
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.last = 0.0

    def update(self, done: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        frac = done / self.total if self.total else 1.0
        width = 30
        fill = int(frac * width)
        rate = done / max(now - self.start, 1e-9)
        self.stream.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {frac * 100:5.1f}% "
                          f"{_human(done)} / {_human(self.total)}  {_human(rate)}/s ")
        self.stream.flush()

    def finish(self, done: int) -> None:
        if self.enabled:
            self.update(done, force=True)
            self.stream.write("\n")
            self.stream.flush()


def copy(src_url: str, dst: str, *, chunk: int | None = None, window: int | None = None,
         progress: bool = True, **storage_options) -> int:
    """Copies src_url (a local path or fsspec URL) to the local file dst with
    eager parallel reads and writes: up to ``window`` chunks are being read
    or written at once, and each chunk is written as soon as it arrives.
    Returns the bytes copied."""
    import concurrent.futures as cf

    import colio

    cfg = colio.get_config()
    chunk = chunk or cfg["task_size"]
    window = window or max(2 * cfg["threads"], 4)
    with colio.source(src_url, **storage_options) as src, colio.sink(dst, "w") as out:
        total = src.size
        bar = Progress(total, progress)
        offsets = iter(range(0, total, chunk))
        reads, writes = {}, {}
        done = 0

        def submit_read():
            off = next(offsets, None)
            if off is None:
                return False
            buf = bytearray(min(chunk, total - off))
            reads[src.read_async(buf, off)] = (off, buf)
            return True

        while len(reads) < window and submit_read():
            pass
        while reads or writes:
            finished, _ = cf.wait(list(reads) + list(writes), timeout=0.1,
                                  return_when=cf.FIRST_COMPLETED)
            for f in finished:
                if f in reads:
                    off, buf = reads.pop(f)
                    n = f.result()
                    if n != len(buf):
                        raise colio.ColioIOError(f"colio cp: {src_url} shrank while copying")
                    writes[out.write_async(buf, off)] = n
                else:
                    done += writes.pop(f)
                    f.result()
                    submit_read()
            bar.update(done)
        out.flush()
        bar.finish(done)
    return done


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m colio", description="colio command-line tool")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cp", help="copy a local path or fsspec URL to a local file")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--chunk-size", type=int, default=None, help="bytes per read (default: task_size)")
    c.add_argument("--window", type=int, default=None, help="chunks in flight (default: 2 x threads)")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    b = sub.add_parser("bench", help="the demo: colio vs a plain Python loop on generated data")
    b.add_argument("--size-mib", type=int, default=256, help="generated file size (default 256)")
    b.add_argument("--latency-ms", type=float, default=2.0, help="injected fsspec latency")
    b.add_argument("--quick", action="store_true", help="small sizes, for tests")
    sub.add_parser("info", help="library path, version and settings")
    a = p.parse_args(argv)

    if a.cmd == "cp":
        import colio
        try:
            t0 = time.perf_counter()
            n = copy(a.src, a.dst, chunk=a.chunk_size, window=a.window,
                     progress=not a.quiet)
            dt = time.perf_counter() - t0
            if not a.quiet:
                print(f"copied {_human(n)} in {dt:.2f} s ({_human(n / max(dt, 1e-9))}/s)",
                      file=sys.stderr)
        except (colio.ColioError, OSError, ValueError) as e:
            print(f"colio cp: {e}", file=sys.stderr)
            return 1
        return 0
    if a.cmd == "bench":
        from ._bench import run
        return run(size_mib=a.size_mib, latency=a.latency_ms / 1000, quick=a.quick)
    if a.cmd == "info":
        import colio
        print(f"colio {colio.__version__}, library {colio.library_version()} at {colio.library_path()}")
        for k, v in colio.get_config().items():
            print(f"  {k} = {v}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
