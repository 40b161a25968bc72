"""The copy behind ``python -m colio cp``.

Reads and writes are eager and parallel, and the destination is never
damaged: the bytes go to a temporary file beside it (the same file system),
which is fsynced and renamed over it only when the whole copy succeeded,
and removed on any failure, Ctrl-C included. So the destination is either
the old file or the complete new one. A copy onto itself is refused before
anything is opened, and a source whose size changes while it is copied is
an error.

Like cp: a directory destination receives the source's name, a symlink
destination is followed (the link stays), an existing destination keeps its
permission bits and a new one gets the source's less the umask. Unlike cp
(the price of the rename): the new file has a new inode, so other hard
links to the old destination keep the old bytes.
"""

from __future__ import annotations

import os
import posixpath
import tempfile

from ._cli_errors import CopyError, about
from ._cli_progress import progress


def _local_path(arg: str) -> str | None:
    """The local path an argument names (a path, or a file:// or local://
    URL, as colio.source reads them); None for any other URL."""
    if "::" in arg:
        return None
    if "://" not in arg:
        return arg
    scheme, rest = arg.split("://", 1)
    return rest if scheme in ("file", "local") else None


def _url_key(url: str, storage_options: dict):
    """A URL after fsspec's normalisation: memory://x and memory:///x are
    one object."""
    import fsspec.core

    fs, path = fsspec.core.url_to_fs(url, **storage_options)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol, fs._strip_protocol(path)


def _same(src: str, dst: str, storage_options: dict) -> bool:
    sp, dp = _local_path(src), _local_path(dst)
    try:
        if sp is not None and dp is not None:
            a, b = os.stat(sp), os.stat(dp)
            return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
        if sp is None and dp is None:
            return _url_key(src, storage_options) == _url_key(dst, {})
    except (OSError, ValueError, ImportError):
        pass  # one side is missing or unknown: opening it says why
    return False


def _destination(src: str, dst: str) -> str:
    """Where the bytes land: a directory gets the source's name, a symlink
    is followed to its target."""
    if os.path.isdir(dst):
        name = posixpath.basename(src.split("://", 1)[-1].split("?", 1)[0].rstrip("/"))
        dst = os.path.join(dst, name)
    if os.path.islink(dst):
        dst = os.path.realpath(dst)
    return dst


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # no /proc: ask the only portable way
    os.umask(old)
    return old


def _mode(dst: str, src_local: str | None) -> int:
    try:
        return os.stat(dst).st_mode & 0o7777
    except FileNotFoundError:
        pass
    base = 0o666
    if src_local is not None:
        try:
            base = os.stat(src_local).st_mode & 0o777
        except OSError:
            pass
    return base & ~_umask()


def _size_now(src_url: str, local: str | None, fd: int | None, storage_options: dict):
    """The source's size at the end of the copy (None: unknown)."""
    if fd is not None:
        return os.fstat(fd).st_size
    if local is not None:
        return None
    import fsspec.core

    fs, path = fsspec.core.url_to_fs(src_url, **storage_options)
    return fs.size(path)


def copy(src_url: str, dst: str, *, chunk: int | None = None, window: int | None = None,
         progress_bar: bool = True, dst_options: dict | None = None, **storage_options) -> int:
    """Copies src_url (a local path or fsspec URL) to the local file dst or
    an s3:// object (dst_options: its storage options; else AWS's
    environment and configuration, AWS_ENDPOINT_URL included); up to
    ``window`` chunks are read or written at once, each chunk written as
    soon as it arrives. Returns the bytes copied; raises CopyError with the
    line to print."""
    import colio

    src_url, shown = os.fsdecode(src_url), os.fsdecode(dst)
    if _same(src_url, shown, storage_options):
        raise CopyError(f"{src_url} and {shown} are the same file; nothing copied")
    local_dst = _local_path(shown)
    if local_dst is None and shown[:5].lower() == "s3://":
        return _copy_to_s3(colio, src_url, shown, chunk, window, progress_bar,
                           storage_options, dst_options or {})
    if local_dst is None:
        raise CopyError(f"the destination must be a local file or an s3:// URL, not {shown}")
    dst = _destination(src_url, local_dst)
    if _same(src_url, dst, storage_options):
        raise CopyError(f"{src_url} and {dst} are the same file; nothing copied")

    cfg = colio.get_config()  # a bad setting is no fault of the source
    try:
        src = colio.source(src_url, **storage_options)
    except Exception as e:
        raise CopyError(about(src_url, e)) from e
    with src:
        local_src = _local_path(src_url) if src.kind == "file" else None
        fd = None
        if local_src is not None:
            try:  # our own descriptor: the size at the end of the copy, even if renamed
                fd = os.open(local_src, os.O_RDONLY)
            except OSError:
                pass
        try:
            return _copy_into(colio, src, src_url, dst, local_src, fd, storage_options,
                              chunk or cfg["task_size"], window or max(2 * cfg["threads"], 4),
                              progress_bar)
        finally:
            if fd is not None:
                os.close(fd)


def _temporary(dst: str, mode: int) -> str:
    d, name = os.path.split(dst)
    try:
        fd, tmp = tempfile.mkstemp(dir=d or ".", prefix=f".{name}.", suffix=".colio-cp")
    except OSError as e:
        raise CopyError(f"cannot create {dst}: {e.strerror or e}") from e
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return tmp


def _copy_into(colio, src, src_url, dst, local_src, fd, storage_options, chunk, window,
               progress_bar) -> int:
    import concurrent.futures as cf

    total = src.size
    if fd is not None and os.fstat(fd).st_size != total:
        raise CopyError(f"{src_url} changed size while copying")
    tmp = _temporary(dst, _mode(dst, local_src))
    bar = progress(total, progress_bar)
    try:
        try:
            out = colio.sink(tmp, "r+")
        except Exception as e:
            raise CopyError(about(dst, e).replace(tmp, dst)) from e
        with out:
            done = _pump(src, out, src_url, dst, tmp, total, chunk, window, bar, cf)
            try:
                out.flush(fsync=True)
            except Exception as e:
                raise CopyError(about(dst, e).replace(tmp, dst)) from e
        now = _size_now(src_url, local_src, fd, storage_options)
        if now is not None and now != total:
            raise CopyError(f"{src_url} changed size while copying ({human_change(total, now)})")
        os.replace(tmp, dst)
        _fsync_dir(os.path.dirname(dst) or ".")
        bar.finish(done)
        return done
    except BaseException:
        bar.close()
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def human_change(before: int, after: int) -> str:
    return f"{'grew' if after > before else 'shrank'} from {before} to {after} bytes"


def _pump(src, out, src_url, dst, tmp, total, chunk, window, bar, cf) -> int:
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

    def result(f, name):
        try:
            return f.result()
        except Exception as e:
            raise CopyError(about(name, e).replace(tmp, dst)) from e

    while len(reads) < window and submit_read():
        pass
    while reads or writes:
        finished, _ = cf.wait(list(reads) + list(writes), timeout=0.1,
                              return_when=cf.FIRST_COMPLETED)
        for f in finished:
            if f in reads:
                off, buf = reads.pop(f)
                n = result(f, src_url)
                if n != len(buf):
                    raise CopyError(f"{src_url} shrank while copying (short read at offset {off})")
                writes[out.write_async(buf, off)] = n
            else:
                done += writes.pop(f)
                result(f, dst)
                submit_read()
        bar.update(done)
    return done


def _fsync_dir(d: str) -> None:
    """Makes the rename durable; some file systems cannot, which is no
    reason to fail a copy that is complete."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _copy_to_s3(colio, src_url, dst, chunk, window, progress_bar, storage_options,
                dst_options) -> int:
    """The copy to an s3:// object: the object is the sink's multipart
    upload, published by close() only when every byte was read and written
    (so the destination is the old object or the complete new one); any
    failure or Ctrl-C aborts the upload.

    Reads are bounded by window, and so are the bytes whose writes are not
    durable yet (4 parts, or window chunks if more): a write completes
    when its part is uploaded, so the bound must hold a part being filled
    and the next, or the copy would wait on itself."""
    import concurrent.futures as cf

    cfg = colio.get_config()
    chunk, window = chunk or cfg["task_size"], window or max(2 * cfg["threads"], 4)
    try:
        src = colio.source(src_url, **storage_options)
    except Exception as e:
        raise CopyError(about(src_url, e)) from e
    with src:
        total = src.size
        try:
            out = colio.sink(dst, **dst_options)
        except Exception as e:
            raise CopyError(about(dst, e)) from e
        part = int(dst_options.get("part_size") or os.environ.get("COLIO_S3_PART_SIZE") or 8 << 20)
        cap = max(4 * part, window * chunk)
        bar = progress(total, progress_bar)
        offsets = iter(range(0, total, chunk))
        reads, writes, done, pending = {}, {}, 0, 0

        def result(f, name):
            try:
                return f.result()
            except Exception as e:
                raise CopyError(about(name, e)) from e

        try:
            with out:
                while True:
                    while len(reads) < window and pending + chunk <= cap:
                        off = next(offsets, None)
                        if off is None:
                            break
                        buf = bytearray(min(chunk, total - off))
                        reads[src.read_async(buf, off)] = (off, buf)
                        pending += len(buf)
                    if not reads:
                        break  # every chunk read and handed to the sink
                    finished, _ = cf.wait(list(reads) + list(writes), timeout=0.1,
                                          return_when=cf.FIRST_COMPLETED)
                    for f in finished:
                        if f in reads:
                            off, buf = reads.pop(f)
                            n = result(f, src_url)
                            if n != len(buf):
                                raise CopyError(f"{src_url} shrank while copying (short read "
                                                f"at offset {off})")
                            writes[out.write_async(buf, off)] = n
                        else:
                            n = writes.pop(f)
                            result(f, dst)
                            done += n
                            pending -= n
                    bar.update(done)
            # close() published the object: the writes left are durable.
            for f, n in writes.items():
                result(f, dst)
                done += n
            bar.finish(done)
            return done
        except colio.ColioError as e:  # close() failed: the upload was aborted
            bar.close()
            raise CopyError(about(dst, e)) from e
        except BaseException:
            bar.close()
            raise
