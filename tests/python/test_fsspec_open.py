"""open(path, "rb") through colio:: on a target read natively: a file that
fits the prefetch is one GET (its open), no HEAD; a larger one is read
right too; a kept source of the path is used instead. Bytes are compared
with the server's (the test's own reference bytes)."""

from __future__ import annotations

import fsspec
import pytest

import colio.fsspec  # noqa: F401
from colio import _fsspec_open


def _fs():
    return fsspec.filesystem("colio", target_protocol="http", skip_instance_cache=True)


def test_a_small_file_is_one_get(server, ref):
    server.files["/small.bin"] = ref[:100_000]
    fs = _fs()
    with fs.open(server.url + "/small.bin", "rb") as f:
        assert f.size == 100_000
        assert f.read() == ref[:100_000]
        f.seek(1234)
        assert f.read(10) == ref[1234:1244]
    assert server.heads == 0
    assert server.range_requests + server.full_requests == 1


def test_larger_than_the_prefetch(server, ref):
    fs = _fs()
    with fs.open(server.url + "/ref.bin", "rb", prefetch_max=65536) as f:
        assert f.size == len(ref)
        assert f.read() == ref
    assert server.heads == 0


def test_a_kept_source_is_used(server, ref):
    fs = _fs()
    url = server.url + "/ref.bin"
    assert fs.cat_file(url, 10, 20) == ref[10:20]  # opens and keeps a source
    server.reset()
    with fs.open(url, "rb") as f:
        assert f.read(100) == ref[:100]
    assert server.heads == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_missing_and_switched_off(server, ref, monkeypatch, enabled):
    monkeypatch.setattr(_fsspec_open, "ENABLED", enabled)
    fs = _fs()
    with pytest.raises(FileNotFoundError):
        fs.open(server.url + "/nothing.bin", "rb")
    server.files["/s2.bin"] = ref[:5000]
    server.reset()
    with fs.open(server.url + "/s2.bin", "rb") as f:
        assert f.read() == ref[:5000]
    assert server.heads == (0 if enabled else 1)


def test_cat_file_of_a_whole_small_file_is_one_get(server, ref):
    """zarr's FsspecStore reads each chunk with cat_file(key): one GET, as
    an open of the same file, not a HEAD (a source) and then a GET."""
    for i in range(5):
        server.files[f"/k{i}"] = ref[i * 1000:i * 1000 + 700 + i]
    fs = _fs()
    server.reset()
    for i in range(5):
        assert fs.cat_file(server.url + f"/k{i}") == ref[i * 1000:i * 1000 + 700 + i]
    assert server.heads == 0
    assert server.range_requests + server.full_requests == 5
    server.files["/empty"] = b""
    assert fs.cat_file(server.url + "/empty") == b""
    with pytest.raises(FileNotFoundError):
        fs.cat_file(server.url + "/nothing.bin")
    # ranges and larger files as before: exact bytes
    assert fs.cat_file(server.url + "/ref.bin", 5, 50) == ref[5:50]
    assert fs.cat_file(server.url + "/ref.bin") == ref
    assert fs.cat_file(server.url + "/k3", 0) == ref[3000:3703]
