"""zarr v3 reads through colio (issue 17): colio.zarr.Store and zarr's own
FsspecStore over colio:: URLs give the same arrays as the plain URLs and
the NumPy array written, over local files, memory:// and a loopback HTTP
server; sharded arrays (partial reads: byte ranges of a shard) included."""

from __future__ import annotations

import os

import pytest

zarr = pytest.importorskip("zarr")
np = pytest.importorskip("numpy")
import fsspec  # noqa: E402

import colio.zarr  # noqa: E402


def _write(url_or_path, **kw):
    """Writes the reference arrays with zarr's own store (no colio); returns
    them by name."""
    rng = np.random.default_rng(17)
    want = {"dense": rng.integers(0, 1 << 30, size=(120, 90), dtype="i4"),
            "sharded": rng.random((64, 64))}
    g = zarr.open_group(url_or_path, mode="w", **kw)
    a = g.create_array("dense", shape=(120, 90), chunks=(10, 9), dtype="i4")
    a[:] = want["dense"]
    b = g.create_array("sharded", shape=(64, 64), chunks=(8, 8), shards=(32, 32), dtype="f8")
    b[:] = want["sharded"]
    return want


def _check(url, want, **kw):
    for name, ref in want.items():
        plain = zarr.open_array(url + "/" + name, mode="r", **kw)
        via_fsspec = zarr.open_array("colio::" + url + "/" + name, mode="r", **kw)
        store = colio.zarr.Store(url + "/" + name, read_only=True,
                                 storage_options=kw.get("storage_options"))
        via_store = zarr.open_array(store, mode="r")
        for arr in (plain, via_fsspec, via_store):
            np.testing.assert_array_equal(arr[:], ref)
            np.testing.assert_array_equal(arr[3:37, 5:29], ref[3:37, 5:29])
        assert isinstance(via_fsspec.store.fs.sync_fs, colio.fsspec.ColioFileSystem)


def test_zarr_local(tmp_path):
    want = _write(str(tmp_path / "g.zarr"))
    _check(f"file://{tmp_path}/g.zarr", want)


def test_zarr_memory():
    want = _write("memory://colio-zarr/g.zarr")
    try:
        _check("memory://colio-zarr/g.zarr", want)
    finally:
        fsspec.filesystem("memory").rm("/colio-zarr", recursive=True)


def test_zarr_http(tmp_path, server):
    root = tmp_path / "g.zarr"
    want = _write(str(root))
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                server.files["/zarr/" + os.path.relpath(p, tmp_path)] = fh.read()
    # dense only: a shard's index is a suffix range (bytes=-N), which the
    # test server (conftest.py) does not serve
    _check(server.url + "/zarr/g.zarr", {"dense": want["dense"]})


def test_store_writes_go_to_the_target(tmp_path):
    """Writes stay FsspecStore's (through the target); reads are colio's
    and see them."""
    # the target's own option, under its name (fsspec's rule for chains)
    store = colio.zarr.Store(f"file://{tmp_path}/w.zarr",
                             storage_options={"file": {"auto_mkdir": True}})
    a = zarr.create_array(store, shape=(30,), chunks=(7,), dtype="i8")
    a[:] = np.arange(30)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "w.zarr"), mode="r")[:],
                                  np.arange(30))
    a[5:9] = -1
    got = zarr.open_array(colio.zarr.Store(f"file://{tmp_path}/w.zarr", read_only=True))[:]
    want = np.arange(30)
    want[5:9] = -1
    np.testing.assert_array_equal(got, want)


def test_store_opens_chunks_as_concurrently_as_zarr_asks(tmp_path, server):
    """Each chunk is its own object, so each get opens a source (a blocking
    call, run off the event loop). Before, the opens ran on asyncio's
    default executor, min(32, cores + 4) threads: 6 here, so a read with
    async.concurrency=32 had at most 6 requests in flight."""
    root = tmp_path / "c.zarr"
    rng = np.random.default_rng(3)
    want = rng.random((64, 16))
    a = zarr.create_array(str(root), shape=(64, 16), chunks=(1, 16), dtype="f8")
    a[:] = want
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                server.files["/zc/" + os.path.relpath(p, tmp_path)] = fh.read()
    server.reset()
    server.delay = server.head_delay = 0.05
    with zarr.config.set({"async.concurrency": 32}):
        got = zarr.open_array(colio.zarr.Store(server.url + "/zc/c.zarr", read_only=True),
                              mode="r")[:]
    np.testing.assert_array_equal(got, want)
    assert server.peak_heads_in_flight >= 16, server.peak_heads_in_flight
    assert server.peak_in_flight >= 16, server.peak_in_flight
