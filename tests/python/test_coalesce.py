"""Coalesced read_ranges (issue 16): random batches of overlapping,
duplicate, adjacent, empty and past-the-end ranges, with coalescing forced
on through a hole size, are byte-exact against os.pread; the per-source
settings and their checks."""

import os
import random

import pytest

import colio

SIZE = 300_000


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("coalesce") / "data.bin"
    p.write_bytes(random.Random(16).randbytes(SIZE))
    return str(p)


def batch(rng):
    out = []
    for _ in range(rng.randrange(1, 60)):
        kind = rng.randrange(6)
        if kind == 0 and out:                       # duplicate
            out.append(rng.choice(out))
        elif kind == 1 and out:                     # adjacent
            o, n = rng.choice(out)
            out.append((min(o + n, SIZE), rng.randrange(5000)))
        elif kind == 2:                             # empty
            out.append((rng.randrange(SIZE + 1), 0))
        elif kind == 3:                             # past the end
            out.append((SIZE - rng.randrange(100), 100 + rng.randrange(1000)))
        else:                                       # anywhere, overlapping others
            out.append((rng.randrange(SIZE), rng.randrange(40_000)))
    return out


def expected(fd, ranges):
    return [os.pread(fd, n, o) for o, n in ranges]


@pytest.mark.parametrize("hole", [0, 100, 20_000, 1 << 20])
@pytest.mark.parametrize("kind", ["file", "memory"])
def test_random_batches_match_pread(path, kind, hole):
    data = open(path, "rb").read()
    src = colio.source(path) if kind == "file" else colio.from_buffer(data)
    src.set_coalesce(hole, 64 << 10)
    assert src.coalescing == (min(hole, 64 << 10), 64 << 10)
    rng = random.Random(hole)
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(40):
            rs = batch(rng)
            got = src.read_ranges(rs)
            assert [bytes(g) for g in got] == expected(fd, rs), rs
            futs = src.read_ranges_async(rs)
            assert [bytes(f.result()) for f in futs] == expected(fd, rs), rs
    finally:
        os.close(fd)
        src.close()


def test_callable_sources_still_exact(path):
    """Python callbacks are read range by range (their errors are keyed by
    the caller's buffer), and still byte-exact."""
    fd = os.open(path, os.O_RDONLY)
    def read_into(mv, offset):
        b = os.pread(fd, len(mv), offset)
        mv[:len(b)] = b
        return len(b)
    src = colio.from_callable(read_into, SIZE)
    src.set_coalesce(1 << 20)
    try:
        rs = batch(random.Random(5))
        assert [bytes(g) for g in src.read_ranges(rs)] == expected(fd, rs)
    finally:
        src.close()
        os.close(fd)


def test_settings(path):
    with colio.source(path) as src:
        assert src.coalescing == (0, 32 << 20)  # local files: touching ranges only
        src.set_coalesce(4096)
        assert src.coalescing == (4096, 32 << 20)
        src.set_coalesce(None, 1000)
        assert src.coalescing == (0, 1000)
        src.set_coalesce()
        assert src.coalescing == (0, 32 << 20)
        with pytest.raises(colio.InvalidArgumentError, match="hole"):
            src.set_coalesce(-1)
        with pytest.raises(colio.InvalidArgumentError, match="max_size"):
            src.set_coalesce(None, 0)
        with pytest.raises(colio.InvalidArgumentError, match="past the end"):
            src.read_ranges([(0, 1), (SIZE + 1, 1)])
