"""Dask through colio:: URLs (issue 17): read_csv, read_parquet and
to_parquet on a distributed.LocalCluster give the same frames as the plain
URLs, over local files and a loopback HTTP server (worker processes, each
with its own libcolio) and memory:// (an in-process cluster: memory://
lives in one process). Every result has a timeout, so nothing hangs."""

from __future__ import annotations

import logging
import random

import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
import fsspec  # noqa: E402

T = 60


def _cluster(processes):
    cl = distributed.LocalCluster(processes=processes, n_workers=2, threads_per_worker=2,
                                  dashboard_address=None, silence_logs=logging.ERROR)
    return cl, distributed.Client(cl, timeout=T)


@pytest.fixture(scope="module")
def client():
    cl, c = _cluster(True)
    try:
        c.wait_for_workers(2, timeout=T)
        yield c
    finally:
        c.close(timeout=T)
        cl.close(timeout=T)


def _frames(n=4):
    rng = random.Random(17)
    return [pd.DataFrame({"a": [rng.randrange(1 << 40) for _ in range(3000)],
                          "b": [rng.random() for _ in range(3000)],
                          "c": [f"k{rng.randrange(50)}" for _ in range(3000)]})
            for _ in range(n)]


def _publish(put):
    """Writes the CSV and Parquet parts (without colio); returns the frames."""
    frames = _frames()
    for i, f in enumerate(frames):
        put(f"p{i}.csv", f.to_csv(index=False).encode())
        put(f"p{i}.parquet", f.to_parquet(index=False, row_group_size=1000))
    return frames


def _same(got, frames):
    want = pd.concat(frames, ignore_index=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)


def _check(urls_csv, urls_pq, frames, colio_opts=None):
    for prefix in ("", "colio::"):
        opts = {"colio": colio_opts} if prefix and colio_opts else {}
        csv = dd.read_csv([prefix + u for u in urls_csv], storage_options=opts, blocksize=20_000)
        _same(csv.compute(timeout=T), frames)
        pq = dd.read_parquet([prefix + u for u in urls_pq], storage_options=opts)
        _same(pq.compute(timeout=T), frames)
        sub = dd.read_parquet([prefix + u for u in urls_pq], columns=["c", "a"],
                              storage_options=opts).compute(timeout=T)
        _same(sub, [f[["c", "a"]] for f in frames])


def test_dask_local_files(client, tmp_path):
    frames = _publish(lambda name, b: (tmp_path / name).write_bytes(b))
    base = f"file://{tmp_path}"
    _check([f"{base}/p{i}.csv" for i in range(4)], [f"{base}/p{i}.parquet" for i in range(4)],
           frames)
    # the glob is the target's
    _same(dd.read_csv(f"colio::{base}/p*.csv").compute(timeout=T), frames)


@pytest.mark.parametrize("backend", ["auto", "fsspec"])
def test_dask_http(client, server, backend):
    def put(name, b):
        server.files[f"/fsfs-dask/{name}"] = b
    frames = _publish(put)
    base = server.url + "/fsfs-dask"
    _check([f"{base}/p{i}.csv" for i in range(4)], [f"{base}/p{i}.parquet" for i in range(4)],
           frames, colio_opts={"backend": backend})


def test_dask_to_parquet_through_colio(client, tmp_path):
    frames = _frames()
    ddf = dd.from_pandas(pd.concat(frames, ignore_index=True), npartitions=4)
    ddf.to_parquet(f"colio::file://{tmp_path}/out", compute_kwargs={"timeout": T})
    ddf.to_parquet(f"file://{tmp_path}/plain", compute_kwargs={"timeout": T})
    got = dd.read_parquet(f"{tmp_path}/out").compute(timeout=T)
    ref = dd.read_parquet(f"{tmp_path}/plain").compute(timeout=T)
    pd.testing.assert_frame_equal(got, ref)
    _same(got, frames)


def test_dask_memory_in_process_cluster():
    m = fsspec.filesystem("memory")
    frames = _publish(lambda name, b: m.pipe_file(f"/fsfs-dask/{name}", b))
    cl, c = _cluster(False)
    try:
        base = "memory://fsfs-dask"
        _check([f"{base}/p{i}.csv" for i in range(4)],
               [f"{base}/p{i}.parquet" for i in range(4)], frames)
        ddf = dd.from_pandas(pd.concat(frames, ignore_index=True), npartitions=2)
        ddf.to_parquet("colio::memory://fsfs-dask/out", compute_kwargs={"timeout": T})
        _same(dd.read_parquet("memory://fsfs-dask/out").compute(timeout=T), frames)
    finally:
        c.close(timeout=T)
        cl.close(timeout=T)
        m.rm("/fsfs-dask", recursive=True)
