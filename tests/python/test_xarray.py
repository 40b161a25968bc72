"""xarray through colio:: URLs (issue 17): ``xr.open_dataset`` over a file
that ``fsspec.open("colio::...")`` opened, and ``xr.open_zarr`` over a
``colio::`` URL and over ``colio.zarr.Store``, give datasets identical to
those read through the plain URL, over a local file, memory:// and a
loopback HTTP server."""

from __future__ import annotations

import os

import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")
pytest.importorskip("h5py")
np = pytest.importorskip("numpy")
zarr = pytest.importorskip("zarr")
import fsspec  # noqa: E402

# xarray writes consolidated metadata (zarr.json) and reads it by default: an
# HTTP server has no listing to fall back on.
pytestmark = pytest.mark.filterwarnings("ignore:Consolidated metadata:UserWarning")

import colio.zarr  # noqa: E402


def _dataset():
    rng = np.random.default_rng(23)
    return xr.Dataset(
        {"t": (("time", "x"), rng.random((40, 300))),
         "n": (("x",), rng.integers(0, 1 << 30, 300, dtype="i8"))},
        coords={"time": np.arange(40), "x": np.linspace(0, 1, 300)},
        attrs={"title": "colio"})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("xr")
    ds = _dataset()
    nc = d / "d.nc"
    ds.to_netcdf(nc, engine="h5netcdf")
    ds.chunk({"time": 4}).to_zarr(d / "d.zarr", zarr_format=3)
    return d, ds


def _serve(server, d):
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                server.files["/xr/" + os.path.relpath(p, d)] = f.read()
    return server.url + "/xr"


def _targets(kind, d, server):
    if kind == "local":
        return f"file://{d}"
    if kind == "memory":
        m = fsspec.filesystem("memory")
        for root, _, names in os.walk(d):
            for n in names:
                p = os.path.join(root, n)
                with open(p, "rb") as f:
                    m.pipe_file(f"/colio-xr/{os.path.relpath(p, d)}", f.read())
        return "memory://colio-xr"
    return _serve(server, d)


@pytest.mark.parametrize("kind", ["local", "memory", "http"])
def test_open_dataset_netcdf_through_colio(kind, files, server):
    d, ds = files
    base = _targets(kind, d, server)
    with fsspec.open("colio::" + base + "/d.nc", "rb") as f:
        got = xr.open_dataset(f, engine="h5netcdf").load()
    with fsspec.open(base + "/d.nc", "rb") as f:
        plain = xr.open_dataset(f, engine="h5netcdf").load()
    xr.testing.assert_identical(got, plain)
    xr.testing.assert_identical(got, ds)


@pytest.mark.parametrize("kind", ["local", "memory", "http"])
def test_open_zarr_through_colio(kind, files, server):
    d, ds = files
    base = _targets(kind, d, server)
    plain = xr.open_zarr(base + "/d.zarr").load()
    via_url = xr.open_zarr("colio::" + base + "/d.zarr").load()
    via_store = xr.open_zarr(colio.zarr.Store(base + "/d.zarr", read_only=True)).load()
    xr.testing.assert_identical(via_url, plain)
    xr.testing.assert_identical(via_store, plain)
    xr.testing.assert_identical(plain, ds)
