"""colio.dask.read_parquet (issue 16) on a distributed.LocalCluster with
worker processes: the same frame as dask.dataframe.read_parquet of the same
files (assert_eq), for a directory, a glob, a single file and an HTTP URL,
with column selection; partitions are row groups (or files)."""

from __future__ import annotations

import logging

import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
from dask.dataframe.utils import assert_eq  # noqa: E402

import colio.dask  # noqa: E402

T = 60


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    c = distributed.Client(cluster, timeout=T)
    try:
        c.wait_for_workers(2, timeout=T)
        yield c
    finally:
        c.close(timeout=T)
        cluster.close(timeout=T)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("pqds")
    for i in range(3):
        n = 400 + 50 * i
        t = pa.table({
            "id": pa.array(range(i * 1000, i * 1000 + n), pa.int64()),
            "name": pa.array([f"n{j % 17}" if j % 5 else None for j in range(n)]),
            "val": pa.array([j * 0.25 for j in range(n)]),
            "tags": pa.array([[j, j + 1] if j % 4 else None for j in range(n)], pa.list_(pa.int64())),
        })
        pq.write_table(t, str(d / f"part.{i}.parquet"), row_group_size=120)
    (d / "_SUCCESS").write_bytes(b"")
    return d


def check(got, want, client, **kw):
    assert_eq(got.compute(scheduler=client.get), want.compute(scheduler=client.get), **kw)


@pytest.mark.parametrize("columns", [None, ["id"], ["name", "val"]])
def test_directory_equals_dask(client, dataset, columns):
    got = colio.dask.read_parquet(str(dataset), columns=columns)
    want = dd.read_parquet(str(dataset), columns=columns)
    assert got.npartitions == sum(pq.read_metadata(str(p)).num_row_groups
                                  for p in sorted(dataset.glob("*.parquet")))
    # Row-group partitions number their rows from 0 each; Dask's per file.
    check(got, want, client, check_index=False)


def test_per_file_partitions_equal_dask_with_index(client, dataset):
    got = colio.dask.read_parquet(str(dataset / "*.parquet"), columns=["id", "tags"],
                                  split_row_groups=False)
    want = dd.read_parquet(str(dataset / "*.parquet"), columns=["id", "tags"])
    assert got.npartitions == 3
    check(got, want, client)


def test_single_file_and_list(client, dataset):
    one = str(dataset / "part.1.parquet")
    check(colio.dask.read_parquet(one), dd.read_parquet(one), client, check_index=False)
    both = [str(dataset / "part.0.parquet"), one]
    check(colio.dask.read_parquet(both, columns=["val"]), dd.read_parquet(both, columns=["val"]),
          client, check_index=False)


def test_http_url(client, dataset, http_server):
    pytest.importorskip("aiohttp")
    p = dataset / "part.2.parquet"
    http_server.files["/part.2.parquet"] = p.read_bytes()
    url = http_server.url + "/part.2.parquet"
    check(colio.dask.read_parquet(url, columns=["id", "name"]),
          dd.read_parquet(str(p), columns=["id", "name"]), client, check_index=False)


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        colio.dask.read_parquet(str(tmp_path / "*.parquet"))
    with pytest.raises(TypeError, match="list of names"):
        colio.dask.read_parquet(str(tmp_path), columns="id")
