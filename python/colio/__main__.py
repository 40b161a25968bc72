"""python -m colio: a small command-line tool.

    python -m colio cp SRC DST      copy a local path or fsspec URL to a local file or s3:// object
    python -m colio bench           the demo: colio vs a plain Python loop
    python -m colio info            library path, version and settings

Every failure is one line on stderr and a non-zero exit (1; 2 for usage,
as argparse; 130 after Ctrl-C); a traceback means a bug in colio.
"""

from __future__ import annotations

import argparse
import sys
import time

from ._cli_copy import copy
from ._cli_errors import explain
from ._cli_progress import human

__all__ = ["copy", "main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m colio", description="colio command-line tool")
    sub = p.add_subparsers(dest="cmd", metavar="{cp,bench,info}")
    c = sub.add_parser("cp", help="copy a local path or fsspec URL to a local file or an s3:// object",
                       description="Copy SRC (a local path or fsspec URL) to the local file "
                       "DST. DST is replaced only when the copy is complete; a failed or "
                       "interrupted copy leaves it as it was.")
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
    return p


def _cp(a) -> int:
    t0 = time.perf_counter()
    n = copy(a.src, a.dst, chunk=a.chunk_size, window=a.window, progress_bar=not a.quiet)
    dt = time.perf_counter() - t0
    if not a.quiet:
        print(f"copied {human(n)} in {dt:.2f} s ({human(n / max(dt, 1e-9))}/s)", file=sys.stderr)
    return 0


def _bench(a) -> int:
    from ._bench import run
    return run(size_mib=a.size_mib, latency=a.latency_ms / 1000, quick=a.quick)


def _info(a) -> int:
    import colio
    print(f"colio {colio.__version__}, library {colio.library_version()} at {colio.library_path()}")
    for k, v in colio.get_config().items():
        print(f"  {k} = {v}")
    return 0


def main(argv=None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    if a.cmd is None:
        p.print_help(sys.stderr)
        return 2
    run = {"cp": _cp, "bench": _bench, "info": _info}[a.cmd]
    try:
        return run(a)
    except KeyboardInterrupt:
        left = f"; {a.dst} left as it was" if a.cmd == "cp" else ""
        print(f"colio {a.cmd}: interrupted{left}", file=sys.stderr)
        return 130
    except Exception as e:  # the user gets a line, not a traceback
        print(f"colio {a.cmd}: {explain(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
