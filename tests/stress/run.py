"""Runs the reliability programs (stress.c's binary, then stress.py) as
child processes and prints their figures last. A child that dies by a
signal, or exits without its figures, is a crash; one that outlives
LIMIT_S is killed and counted as a hang (the programs' own monitors
normally catch a hang first). Exit status 0 only if every figure is clean.

Usage: run.py --c BINARY --python PYTHON   (STRESS_SCALE scales both)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT_S = 560      # per program, a backstop: their own monitors catch a stall first
MIN_OPS = 10 ** 6  # each program's floor at STRESS_SCALE=1


def run(name, argv):
    print(f"--- {name}: {' '.join(argv)}", flush=True)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    fig, hung = None, False
    try:
        out, _ = p.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        hung = True
    for line in out.splitlines():
        print(line)
        if line.startswith("STRESS-FIGURES "):
            fig = dict(kv.split("=", 1) for kv in line.split()[1:])
    secs = time.monotonic() - t0
    crashed = not hung and (p.returncode < 0 or fig is None)
    if crashed:
        print(f"CRASH: {name} exited with status {p.returncode} "
              f"{'(signal %d)' % -p.returncode if p.returncode < 0 else 'without its figures'}",
              file=sys.stderr)
    if hung:
        print(f"HANG: {name} still ran after {LIMIT_S} s; killed", file=sys.stderr)
    fig = fig or {}
    return dict(name=name, fig=fig, crashes=int(crashed), hangs=int(hung) + int(fig.get("hangs", 0)),
                ok=fig.get("ok") == "1" and not crashed and not hung, secs=secs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True, help="the built stress.c binary")
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    scale = float(os.environ.get("STRESS_SCALE") or 1.0)
    results = [run("C", [a.c]), run("Python", [a.python, os.path.join(HERE, "stress.py")])]

    def g(r, k):
        return r["fig"].get(k, "?")

    def mib(r, k):
        v = r["fig"].get(k)
        return f"{int(v) / 1048576:.1f}" if v not in (None, "-1") else "?"

    print()
    print(f"make stress (STRESS_SCALE={scale:g}): 16 threads per program; growth measured "
          "after a warm-up quarter")
    print(f"{'':8}{'operations':>12}{'mismatches':>12}{'crashes':>9}{'hangs':>7}"
          f"{'fds start/end':>15}{'threads start/end':>19}{'RSS MiB start/end':>19}{'secs':>7}")
    for r in results:
        print(f"{r['name']:8}{g(r, 'ops'):>12}{g(r, 'mismatches'):>12}{r['crashes']:>9}"
              f"{r['hangs']:>7}{g(r, 'fds0') + '/' + g(r, 'fds1'):>15}"
              f"{g(r, 'threads0') + '/' + g(r, 'threads1'):>19}"
              f"{mib(r, 'rss0') + '/' + mib(r, 'rss1'):>19}{r['secs']:>7.0f}")
    ok = all(r["ok"] for r in results)
    if scale >= 1:
        short = [r["name"] for r in results if int(r["fig"].get("ops", 0)) < MIN_OPS]
        if short:
            print(f"fewer than {MIN_OPS} operations: {', '.join(short)}")
            ok = False
    print(f"make stress: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
