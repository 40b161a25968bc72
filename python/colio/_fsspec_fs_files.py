"""The file objects a ColioFileSystem opens.

Reading: colio's read-ahead stream (colio_stream_*: ``depth`` buffers
filled ahead of the reader by colio's workers) as an ``io.BufferedReader``,
with the attributes fsspec files have (``fs``, ``path``, ``size``,
``info()``), so pandas, pyarrow and Dask take it where they take an fsspec
file.

Writing (local targets): every full buffer is handed to a colio file sink
as one eager ``write_async`` at its reserved offset, so the disk writes of
one file overlap each other and the caller's next ``write``; close waits
for all of them and raises the first error any had.
"""

from __future__ import annotations

import io
from collections import deque

from . import _stream

# A write buffer: large enough that each write_async moves many bytes (the
# engine splits it into task_size pieces, written in parallel), small
# enough that a writer of many files does not hold much memory.
WRITE_CHUNK = 8 << 20
# Buffers in flight per file before write() waits for the oldest.
WRITE_DEPTH = 4


class ColioReadFile(io.BufferedReader):
    """A binary read-ahead file over a leased source of a ColioFileSystem."""

    def __init__(self, fs, path: str, entry, release, buffer_size=None, depth=None):
        raw = _stream.RawStream(entry.src, 0, buffer_size, depth, owns_source=False,
                                name=path)
        super().__init__(raw, buffer_size=_stream._PY_BUFFER)
        self.fs, self.path = fs, path
        self._entry, self._release = entry, release

    @property
    def size(self) -> int:
        return self._entry.src.size

    @property
    def loc(self) -> int:  # fsspec files call their position loc
        return self.tell()

    def info(self) -> dict:
        return self.fs.info(self.path)

    def close(self) -> None:
        try:
            super().close()
        finally:
            rel, self._release = self._release, None
            if rel is not None:
                rel(self._entry)

    def __reduce__(self):
        raise TypeError("an open colio file cannot be pickled; pickle the file system and "
                        "the path (fsspec.core.OpenFile) and open it where it is needed")

    def __repr__(self) -> str:
        return f"<colio.fsspec file {self.path!r} mode='rb'>"


class ColioWriteFile(io.BufferedIOBase):
    """A binary file that writes through a colio file sink (appends in call
    order: offsets are reserved when each buffer is submitted)."""

    def __init__(self, fs, path: str, sink, mode: str, on_close=None):
        super().__init__()
        self.fs, self.path, self.mode = fs, path, mode
        self._sink = sink
        self._buf = bytearray()
        self._inflight: deque = deque()
        self._pos = 0
        self._on_close = on_close

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        self._buf += mv  # a copy: the caller may reuse its buffer at once
        self._pos += n
        if len(self._buf) >= WRITE_CHUNK:
            self._submit()
        return n

    def _submit(self) -> None:
        if not self._buf:
            return
        chunk, self._buf = bytes(self._buf), bytearray()
        self._inflight.append(self._sink.write_async(chunk))
        while len(self._inflight) > WRITE_DEPTH:
            self._inflight.popleft().result()

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        if self.closed:
            return
        self._submit()
        while self._inflight:
            self._inflight.popleft().result()

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.flush()
        finally:
            try:
                self._sink.close()  # raises the sink's first write error
            finally:
                super().close()
                if self._on_close is not None:
                    self._on_close(self.path)

    def __repr__(self) -> str:
        return f"<colio.fsspec file {self.path!r} mode={self.mode!r}>"
