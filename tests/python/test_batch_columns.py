"""read_ranges and read_ranges_async turn the ranges into the C call's
table column by column (issue 15.1: struct-packed offsets and sizes laid
into the colio_range array by strided stores, and the packed columns kept
from the argument check for the call). These shapes exercise every way in
to that path: each result is compared with os.pread, and each bad range
still gets the error that names it."""

from __future__ import annotations

import random

import pytest

import colio

from conftest import SIZE, pread


def _same(data_file, ranges, got):
    assert len(got) == len(ranges)
    for (o, s), mv in zip(ranges, got):
        assert isinstance(mv, memoryview) and mv.readonly
        assert bytes(mv) == pread(data_file, int(o), int(s)), (o, s)


def _both(s, ranges):
    yield s.read_ranges(ranges)
    yield [f.result(30) for f in s.read_ranges_async(ranges)]


def test_shapes_of_the_argument(data_file, ref):
    rng = random.Random(151)
    pairs = [(rng.randrange(SIZE), rng.randrange(1, 5000)) for _ in range(300)]
    pairs += [(SIZE, 3), (SIZE - 7, 100), (0, 0), pairs[0], pairs[0]]  # end, across, empty, duplicates
    shapes = {
        "list of tuples": pairs,
        "tuple of lists": tuple([o, s] for o, s in pairs),
        "generator": (p for p in pairs),
        "bools and ints": [(1, True), (2, False)] + pairs[:5],
    }
    with colio.source(data_file) as s, colio.from_buffer(ref) as m:
        for name, shape in shapes.items():
            ranges = list(shape) if name != "generator" else pairs
            for src in (s, m):
                if name == "generator":
                    _same(data_file, ranges, src.read_ranges(p for p in pairs))
                    _same(data_file, ranges, [f.result(30) for f in
                                              src.read_ranges_async(p for p in pairs)])
                    continue
                for got in _both(src, shape):
                    _same(data_file, ranges, got)


def test_numpy_integers_in_bulk(data_file):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(152)
    offs = rng.integers(0, SIZE + 1, size=2000, dtype=np.int64)
    sizes = rng.integers(0, 9000, size=2000).astype(np.int32)
    ranges = list(zip(offs, sizes))
    with colio.source(data_file) as s:
        for got in _both(s, ranges):
            _same(data_file, ranges, got)


def test_large_sizes_are_clamped_with_their_columns(data_file):
    # Sizes over 64 KiB are clamped to what exists before allocating; the
    # packed columns of the check must not be reused for the clamped sizes.
    ranges = [(SIZE - 100, 1 << 20), (5, 70_000), (SIZE, 1 << 17), (1000, 10)]
    with colio.source(data_file) as s:
        for got in _both(s, ranges):
            _same(data_file, ranges, got)
            assert [len(m) for m in got] == [100, 70_000, 0, 10]


def test_bad_ranges_deep_in_a_batch_are_named(src):
    good = [(i * 10, 5) for i in range(999)]
    with pytest.raises(TypeError, match="range 999"):
        src.read_ranges(good + [(1, 2, 3)])
    with pytest.raises(TypeError, match="range 999"):
        src.read_ranges(good + [(1,)])
    with pytest.raises(TypeError, match="integer"):
        src.read_ranges(good + [(1, 2.0)])
    with pytest.raises(colio.InvalidArgumentError, match="range 999 offset"):
        src.read_ranges_async(good + [(1 << 63, 1)])
    with pytest.raises(colio.InvalidArgumentError, match="range 999 size"):
        src.read_ranges(good + [(0, 1 << 64)])
    with pytest.raises(colio.InvalidArgumentError, match="range 999 size"):
        src.read_ranges(good + [(0, -1)])
