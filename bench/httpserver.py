#!/usr/bin/env python3
"""A local HTTP server for the fan-out benchmark: serves one file from
memory, honours ``Range: bytes=A-B`` (206 with Content-Range) and sleeps the
latency given in the path before answering: ``GET /lat/<microseconds>/data``.

It runs in its own process (bench/run.py starts it), so its threads do not
take the benchmark's GIL. It listens on 127.0.0.1 only, prints its port on
the first line of stdout, and exits when stdin closes or after --lifetime
seconds, whichever comes first.

    python bench/httpserver.py FILE [--lifetime 900]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _latency(self):
        parts = self.path.split("/")
        if len(parts) != 4 or parts[1] != "lat" or parts[3] != "data":
            self.send_error(404)
            return None
        return int(parts[2]) / 1e6

    def do_HEAD(self):
        if self._latency() is None:
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.payload)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        lat = self._latency()
        if lat is None:
            return
        if lat:
            time.sleep(lat)
        data = self.server.payload
        rng = self.headers.get("Range")
        if rng is None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        a, _, b = rng.split("=", 1)[1].partition("-")
        a = int(a)
        b = min(int(b) if b else len(data) - 1, len(data) - 1)
        body = data[a:b + 1]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {a}-{b}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # a fan-out of hundreds connects at once

    def handle_error(self, request, client_address):
        # A client that hangs up (a peer's pool closing its connections at
        # the end of a run) is not an error of the benchmark: socketserver
        # would print a traceback for each.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--lifetime", type=float, default=900.0)
    a = ap.parse_args()
    with open(a.file, "rb") as f:
        payload = memoryview(f.read())
    srv = Server(("127.0.0.1", 0), Handler)
    srv.payload = payload
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(srv.server_address[1], flush=True)

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    time.sleep(a.lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
