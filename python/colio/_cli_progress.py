"""The progress bar of ``python -m colio cp``: tqdm's when tqdm is
installed (the bar Python users know), else a simple one; tqdm is never a
dependency."""

from __future__ import annotations

import sys
import time


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


def progress(total: int, enabled: bool, stream=None):
    """A bar with update(done), finish(done) and close() (on failure: ends
    the line so that the error starts on its own)."""
    if not enabled:
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return Simple(total, stream)
    return _Tqdm(tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                      file=stream or sys.stderr))


class _Silent:
    def update(self, done: int) -> None:
        pass

    def finish(self, done: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Tqdm:
    """tqdm counts increments; cp reports the bytes done so far."""

    def __init__(self, bar):
        self.bar = bar
        self.shown = 0

    def update(self, done: int) -> None:
        if done > self.shown:
            self.bar.update(done - self.shown)
            self.shown = done

    def finish(self, done: int) -> None:
        self.update(done)
        self.bar.close()

    def close(self) -> None:
        self.bar.close()


class Simple:
    """A one-line bar on stderr, redrawn at most 10 times a second."""

    def __init__(self, total: int, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.last = 0.0
        self.drawn = False

    def update(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        frac = done / self.total if self.total else 1.0
        width = 30
        fill = int(frac * width)
        rate = done / max(now - self.start, 1e-9)
        self.stream.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {frac * 100:5.1f}% "
                          f"{human(done)} / {human(self.total)}  {human(rate)}/s ")
        self.stream.flush()
        self.drawn = True

    def finish(self, done: int) -> None:
        self.update(done, force=True)
        self.close()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
