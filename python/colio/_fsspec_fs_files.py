"""The file objects a ColioFileSystem opens.

Reading: an ``io.BufferedReader`` with the attributes fsspec files have
(``fs``, ``path``, ``size``, ``info()``), so pandas, pyarrow and Dask take
it where they take an fsspec file. Under it, one of two raw files:

- a source with latency (remote, callbacks) no larger than
  ``prefetch_max`` is fetched whole by one eager fan-out started at open
  (the engine cuts it into parallel requests): readers that seek, as
  pyarrow does (the footer, then the column chunks), would otherwise pay
  a round trip per seek, since a read-ahead stream restarts at each one;
- anything else gets colio's read-ahead stream (colio_stream_*: ``depth``
  buffers filled ahead of the reader by colio's workers).

Writing (local and s3 targets): every full buffer is handed to a colio
sink as one eager ``write_async`` at its reserved offset, so the writes of
one file overlap each other and the caller's next ``write``; close waits
for all of them and raises the first error any had. An S3 sink's write
completes only when its part is uploaded, and a part fills only with later
writes, so for it neither ``write`` nor ``flush`` waits on a future (the
sink bounds its own memory) and an exception inside the ``with`` block
aborts the upload instead of publishing a partial object.
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
# The largest file with latency that open fetches whole (held in memory
# while the file is open): fsspec's own HTTP file reads 5 MiB blocks, and
# Parquet files written in one go by pandas or Dask are mostly smaller
# than this; a larger one streams.
PREFETCH_MAX = 16 << 20


class ColioReadFile(io.BufferedReader):
    """A binary read-ahead file over a leased source of a ColioFileSystem."""

    def __init__(self, fs, path: str, entry, release, buffer_size=None, depth=None,
                 prefetch_max=None):
        src = entry.src
        limit = PREFETCH_MAX if prefetch_max is None else prefetch_max
        if src._slow and 0 < src.size <= limit:
            raw = _WholeFile(src, path)
        else:
            raw = _stream.RawStream(src, 0, buffer_size, depth, owns_source=False, name=path)
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


class _WholeFile(io.RawIOBase):
    """A raw file over the whole of a source, read by one fan-out submitted
    here (at open) and waited for by the first read or seek to the end."""

    def __init__(self, src, name):
        super().__init__()
        self.name = name
        self._size = src.size
        self._fut = src.read_ranges_async([(0, self._size)])[0]
        self._mv = None
        self._pos = 0

    def _data(self) -> memoryview:
        if self._mv is None:
            self._mv = memoryview(self._fut.result()).cast("B")
            self._fut = None
        return self._mv

    mode = "rb"

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        data = self._data()
        n = max(0, min(len(b), self._size - self._pos))
        if n:
            memoryview(b).cast("B")[:n] = data[self._pos:self._pos + n]
            self._pos += n
        return n

    def readall(self) -> bytes:
        data = self._data()
        out = bytes(data[self._pos:])
        self._pos = self._size
        return out

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        base = {0: 0, 1: self._pos, 2: self._size}.get(whence)
        if base is None:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        pos = base + offset
        if pos < 0:
            raise OSError(22, f"negative seek position {pos}")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._mv = None
        fut, self._fut = self._fut, None
        if fut is not None:
            fut.cancel()
        super().close()


class ColioWriteFile(io.BufferedIOBase):
    """A binary file that writes through a colio file sink (appends in call
    order: offsets are reserved when each buffer is submitted)."""

    def __init__(self, fs, path: str, sink, mode: str, on_close=None):
        super().__init__()
        self.fs, self.path, self.mode = fs, path, mode
        self._sink = sink
        # An upload (S3): published by close, dropped by abort.
        self._upload = hasattr(sink, "abort")
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
        if self._upload:
            while self._inflight and self._inflight[0].done():
                self._inflight.popleft().result()
            return
        while len(self._inflight) > WRITE_DEPTH:
            self._inflight.popleft().result()

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        if self.closed:
            return
        if self._upload:  # bytes become durable as parts fill, and at close
            if len(self._buf) >= WRITE_CHUNK:
                self._submit()
            return
        self._submit()
        while self._inflight:
            self._inflight.popleft().result()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self._upload and not self.closed:
            try:
                self._sink.abort()
            finally:
                super().close()
            return None
        return super().__exit__(exc_type, exc, tb)

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._upload:
                self._submit()
            else:
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
