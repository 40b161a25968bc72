"""The layout of a batch of small ranges (issue 15): one bytes object holds
every range's bytes end to end, and the library computes each range's
place in it (``colio_readv_packed``), so no per-range address is made in
Python. Laying out the colio_range table (an address per range, packed in
a second pass) cost as much as the C call's own overhead per 4 KiB range.

Results are read-only memoryview slices of the one bytes object: one
allocation per batch instead of one per range, memory the allocator reuses
from batch to batch.
"""

from __future__ import annotations

from array import array
from ctypes import c_int, c_int64
from itertools import accumulate

from ._buffers import EMPTY_ADDR, new_bytes


class Packed:
    """Where each range's bytes go, the C arrays of the call, and the
    results. pairs is the (offset, size) pairs packed as int64 values in a
    bytearray; sizes a sequence of the sizes."""

    __slots__ = ("n", "sizes", "total", "shared", "base", "c_pairs", "nread", "status",
                 "c_nread", "c_status", "starts")

    def __init__(self, pairs: bytearray, sizes):
        n = self.n = len(sizes)
        self.sizes = sizes
        # where each range starts, as the library lays them out (the last
        # entry is the total)
        self.starts = starts = list(accumulate(sizes, initial=0))
        self.total = total = starts[-1]
        b, base = new_bytes(total)
        self.shared, self.base = memoryview(b), base if total else EMPTY_ADDR
        self.c_pairs = (c_int64 * (2 * n)).from_buffer(pairs)
        self.nread = array("q", bytes(8 * n))
        self.status = array("i", bytes(4 * n))
        self.c_nread = (c_int64 * n).from_buffer(self.nread)
        self.c_status = (c_int * n).from_buffer(self.status)

    def submit(self, L, handle, flags: int, cq, ctx: int, out) -> int:
        """The C call: colio_readv_packed (out None: it blocks)."""
        return L.colio_readv_packed(handle, self.c_pairs, self.n, flags, self.base, self.total,
                                    self.c_nread, self.c_status, cq, ctx, out)

    def addr(self, i: int) -> int:
        """Range i's address (callback sources key their errors by it)."""
        return self.base + self.starts[i] if self.sizes[i] else EMPTY_ADDR

    def results(self) -> list:
        mv, starts, nr = self.shared, self.starts, self.nread
        if nr == self.sizes:  # every range read whole: the next start is the end
            return [mv[p:q] for p, q in zip(starts, starts[1:])]
        return [mv[p:p + k] for p, k in zip(starts, nr)]

    def result(self, i: int, k: int):
        p = self.starts[i]
        return self.shared[p:p + k]
