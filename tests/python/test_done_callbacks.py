"""Done-callbacks (Future.add_done_callback) that wait on other colio futures
(issue 12, item 9).

A done-callback runs on colio's notifier thread, the thread that delivers
every completion. Before the fix, a done-callback that called result() on
another colio future waited for a completion only that same blocked thread
could deliver: the notifier, and with it every future in the process, hung.
Each inner wait here has a timeout, so that the unfixed code fails the test
(TimeoutError recorded) instead of hanging the rest of the suite; the outer
waits are generous watchdogs, not timings.
"""

from __future__ import annotations

import threading

import colio

from conftest import pread

WATCHDOG = 60.0   # a hang, not a speed limit
INNER = 10.0      # the inner wait: times out on the unfixed code


def _callable_source(ref):
    """A source that calls back into Python (never inlined)."""
    def read_into(buf, off):
        n = min(len(buf), len(ref) - off)
        buf[:n] = ref[off:off + n]
        return n
    return colio.from_callable(read_into, len(ref))


def test_done_callback_waits_on_a_read_it_submits(data_file, ref):
    out = {}
    done = threading.Event()
    with colio.source(data_file) as fsrc, _callable_source(ref) as csrc:
        def cb(f):
            try:
                out["first"] = f.result()
                # Above the inline threshold: completed by the notifier.
                gb, hb = bytearray(1 << 20), bytearray(5000)
                g = fsrc.read_async(gb, 4096)
                h = csrc.read_async(hb, 777)
                out["g"] = g.result(timeout=INNER)
                out["h"] = h.result(timeout=INNER)
                out["gb"], out["hb"] = bytes(gb), bytes(hb)
            except BaseException as e:  # noqa: BLE001 - reported below
                out["error"] = e
            finally:
                done.set()

        f = csrc.read_async(bytearray(100), 0)
        f.add_done_callback(cb)
        assert done.wait(WATCHDOG), "the done-callback never finished"
        assert "error" not in out, repr(out.get("error"))
        assert out["first"] == 100
        assert out["g"] == 1 << 20 and out["h"] == 5000
        assert out["gb"] == pread(data_file, 4096, 1 << 20) and out["hb"] == ref[777:5777]


def test_done_callback_bytes_match_reference(data_file, ref):
    """The bytes a done-callback gets from the inner read are the file's."""
    out = {}
    done = threading.Event()
    with colio.source(data_file) as fsrc, _callable_source(ref) as csrc:
        def cb(_f):
            try:
                g = fsrc.read_ranges_async([(10, 300_000), (1 << 20, 200_000)])
                out["ranges"] = [bytes(x.result(timeout=INNER)) for x in g]
                buf = bytearray(70_000)
                out["n"] = csrc.read_async(buf, 123_456).result(timeout=INNER)
                out["buf"] = bytes(buf)
            except BaseException as e:  # noqa: BLE001
                out["error"] = e
            finally:
                done.set()

        csrc.read_async(bytearray(10), 0).add_done_callback(cb)
        assert done.wait(WATCHDOG), "the done-callback never finished"
    assert "error" not in out, repr(out.get("error"))
    assert out["ranges"] == [pread(data_file, 10, 300_000), pread(data_file, 1 << 20, 200_000)]
    assert out["n"] == 70_000 and out["buf"] == ref[123_456:123_456 + 70_000]


def test_chain_of_three_done_callbacks(ref):
    """f1's done-callback submits f2 and waits on it; f2's submits f3 and
    waits on it; f3's records its bytes."""
    got = {}
    done = threading.Event()
    with _callable_source(ref) as s:
        def level(k):
            def cb(f):
                # Done when the last level has its bytes, not when level 1
                # returns: f2 may be completed, and its callback run, on
                # another thread than the one level 1 waits on, so level 3
                # could still be running then (KeyError: 3 in a full run).
                try:
                    got[k] = bytes(f.result())
                    if k == 3:
                        done.set()
                        return
                    nxt = s.read_ranges_async([(k * 1000, 1000)])[0]
                    nxt.add_done_callback(level(k + 1))
                    nxt.result(timeout=INNER)
                except BaseException as e:  # noqa: BLE001
                    got.setdefault("error", e)
                    done.set()
            return cb

        s.read_ranges_async([(0, 1000)])[0].add_done_callback(level(1))
        assert done.wait(WATCHDOG), "the chain never finished"
    assert "error" not in got, repr(got.get("error"))
    assert got[1] == ref[0:1000] and got[2] == ref[1000:2000] and got[3] == ref[2000:3000]


def test_other_futures_complete_while_a_done_callback_waits(ref):
    """While a done-callback waits on a slow read, an unrelated future still
    completes and its result is right: result() does not need the notifier,
    which is blocked inside the callback."""
    gate = threading.Event()
    started = threading.Event()

    def slow(buf, off):
        started.set()
        gate.wait(WATCHDOG)
        buf[:] = ref[off:off + len(buf)]
        return len(buf)

    with colio.from_callable(slow, len(ref)) as slow_src, _callable_source(ref) as fast:
        inner = {}
        finished = threading.Event()

        def cb(_f):
            try:
                inner["v"] = bytes(slow_src.read_ranges_async([(50, 64)])[0].result(timeout=INNER + 20))
            except BaseException as e:  # noqa: BLE001
                inner["error"] = e
            finally:
                finished.set()

        # Held until the callback is registered, so that it runs on the
        # notifier: a read done before add_done_callback would run cb here,
        # on this thread, which must set the gate (light futures complete
        # soon enough for that to happen).
        go = threading.Event()

        def held(buf, off):
            go.wait(WATCHDOG)
            buf[:] = ref[off:off + len(buf)]
            return len(buf)

        first = colio.from_callable(held, len(ref))
        first.read_async(bytearray(8), 0).add_done_callback(cb)
        go.set()
        assert started.wait(WATCHDOG)
        # The notifier thread is inside cb now; a future made meanwhile
        # must still be completed (here by the thread that waits on it).
        other = fast.read_ranges_async([(5000, 300)])[0]
        assert bytes(other.result(timeout=WATCHDOG)) == ref[5000:5300]
        gate.set()
        assert finished.wait(WATCHDOG)
        first.close()
    assert "error" not in inner, repr(inner.get("error"))
    assert inner["v"] == ref[50:114]
