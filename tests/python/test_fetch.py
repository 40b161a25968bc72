"""colio._fetch: whole remote objects fetched by the library
(colio_fetch_urls) and ended as asyncio futures, what colio.zarr.Store
reads chunks with. Bytes are compared with what the loopback server
serves (the test's own bytes)."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest

from colio import _fetch, _remote
from colio._errors import InvalidArgumentError


def _serve(server, n, seed, sizes=None):
    rng = random.Random(seed)
    names = []
    for i in range(n):
        size = sizes[i % len(sizes)] if sizes else rng.randrange(1, 5000)
        name = f"/fetch{seed}/o{i}"
        server.files[name] = rng.randbytes(size)
        names.append(name)
    return names


def _run(coro, timeout=60):
    async def guarded():  # a hang watchdog, not a timing
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(guarded())


def test_fetches_whole_objects_of_every_size(server):
    """One byte, inside the prefetch, and larger than it (the rest in
    parallel parts); a missing object fails alone, as FileNotFoundError.
    (An empty object is tests/c/test_remote.c's: this server answers a
    range of one with a malformed Content-Range.)"""
    names = _serve(server, 4, 1, sizes=[1, 4096, 65536, 3 * (1 << 20) + 17])
    urls = [server.url + n for n in names] + [server.url + "/fetch1/missing"]
    f = _fetch.Fetcher(urls[0], {"prefetch": 65536, "request_size": 262144})

    async def main():
        return await asyncio.gather(*f.fetch(urls), return_exceptions=True)
    got = _run(main())
    for name, b in zip(names, got[:4]):
        assert type(b) is bytes and b == server.files[name], name
    assert isinstance(got[4], FileNotFoundError), got[4]
    assert "missing" in str(got[4])
    assert server.heads == 0  # each open is the prefetch GET


def test_many_objects_in_one_call_without_a_thread_each(server):
    """200 objects at 20 ms each: all started by one call, many in flight
    at the server, and no Python thread made but the one queue thread."""
    names = _serve(server, 200, 2)
    urls = [server.url + n for n in names]
    f = _fetch.Fetcher(urls[0], {"prefetch": 1 << 20})
    server.delay = 0.02

    async def main():
        futs = f.fetch(urls)
        await asyncio.sleep(0)
        threads = {t.name for t in threading.enumerate()}
        return await asyncio.gather(*futs), threads
    before = {t.name for t in threading.enumerate()}
    got, during = _run(main())
    assert got == [server.files[n] for n in names]
    made = {n for n in during - before if "process_request_thread" not in n}  # not the server's
    assert made <= {"colio-fetches"}, made
    assert server.peak_in_flight >= 16, server.peak_in_flight


def test_two_loops_at_once(server):
    """Each loop gets its own objects' ends (one queue thread for both)."""
    names = {k: _serve(server, 50, 10 + k) for k in range(2)}
    out = {}

    def worker(k):
        urls = [server.url + n for n in names[k]]
        f = _fetch.Fetcher(urls[0], {"prefetch": 1 << 20})

        async def main():
            return await asyncio.gather(*f.fetch(urls))
        out[k] = _run(main())

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    for k in range(2):
        assert out[k] == [server.files[n] for n in names[k]]


def test_a_cancelled_future_leaves_the_others(server):
    names = _serve(server, 20, 3)
    urls = [server.url + n for n in names]
    f = _fetch.Fetcher(urls[0], {})
    server.delay = 0.05

    async def main():
        futs = f.fetch(urls)
        futs[5].cancel()
        got = await asyncio.gather(*futs, return_exceptions=True)
        return got, len(_fetch._live)
    got, live = _run(main())
    assert isinstance(got[5], asyncio.CancelledError)
    assert [g for i, g in enumerate(got) if i != 5] == \
        [server.files[n] for i, n in enumerate(names) if i != 5]
    assert live == 0  # every fetch was freed once its objects were delivered


def test_options_are_checked_before_anything_starts(server):
    url = server.url + "/ref.bin"
    with pytest.raises(_remote.NotUnderstood):
        _fetch.Fetcher(url, {"bogus": 1})
    with pytest.raises(InvalidArgumentError):
        _fetch.Fetcher(url, {"retries": "many"})
    f = _fetch.Fetcher(url, {})

    async def main():
        return f.fetch([url + "\x00x"])
    with pytest.raises(InvalidArgumentError, match="null byte"):
        _run(main())
    assert _run(_empty(f)) == []


async def _empty(f):
    return f.fetch([])
