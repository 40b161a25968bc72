"""cmd/colio-testserver for the benchmarks: a Go server on 127.0.0.1 that
serves a directory over HTTP and path-style S3 with a fixed latency before
every answer, fast enough not to be what is measured, and counts what it
serves (GET /_stats). ``make bench`` builds it into build/bench."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "bench")


class GoServer:
    def __init__(self, directory, latency, extra=()):
        exe = os.path.join(TOOLS, "colio-testserver")
        if not os.path.exists(exe):
            raise RuntimeError(f"bench: {exe} is missing; run `make bench` (it builds it)")
        self.proc = subprocess.Popen([exe, "-dir", directory, "-latency", f"{latency * 1e3:g}ms",
                                      *extra, "-stdin"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"bench: colio-testserver said {line!r}")
        self.endpoint = line.split()[-1]
        self.dir = directory

    def stats(self, reset=False) -> dict:
        """requests, peak_in_flight, bytes_sent... since the last reset."""
        with urllib.request.urlopen(self.endpoint + "/_stats" + ("?reset=1" if reset else "")) as r:
            return json.load(r)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except Exception:  # noqa: BLE001 - only a benchmark server
            self.proc.kill()
