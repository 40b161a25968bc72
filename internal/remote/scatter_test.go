package remote

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/remote/remotetest"
	"github.com/colio-dev/colio/internal/source"
)

// Coalesced reads against the test server: every range's bytes compared
// with the object the test wrote, whatever the layout of the merged
// requests (holes, overlaps, duplicates, parts that begin, end or lie in
// a hole).
func TestCoalescedReadsByteExact(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(4)
	rng := rand.New(rand.NewSource(16))
	for _, reqSize := range []int64{8 << 20, 4096, 333} { // parts of merged requests split anywhere
		src, err := f.open(t, "/bkt/obj", fmt.Sprint("request_size=", reqSize))
		if err != nil {
			t.Fatal(err)
		}
		es := engine.NewSource(src)
		if err := es.SetCoalesce(64<<10, 1<<20); err != nil {
			t.Fatal(err)
		}
		rounds := 30
		if reqSize < 8<<20 {
			rounds = 8 // many more requests each
		}
		for round := 0; round < rounds; round++ {
			f.srv.ResetStats()
			ranges := randomRanges(rng, f.data)
			fs, err := e.ReadVCoalesced(context.Background(), es, ranges)
			if err != nil {
				t.Fatal(err)
			}
			for i, fu := range fs {
				n, err := fu.WaitTimeout(-1)
				r := ranges[i]
				want := f.data[min(r.Off, objSize):min(r.Off+int64(len(r.Buf)), objSize)]
				if err != nil || n != int64(len(want)) || !bytes.Equal(r.Buf[:n], want) {
					t.Fatalf("request_size %d round %d range %d [%d, +%d): %d bytes, %v; want %d",
						reqSize, round, i, r.Off, len(r.Buf), n, err, len(want))
				}
			}
			if reqSize == 8<<20 && f.srv.Stats().Requests >= int64(len(ranges)) {
				t.Fatalf("round %d: %d requests for %d ranges: nothing was merged", round, f.srv.Stats().Requests, len(ranges))
			}
		}
		es.Close()
	}
}

// randomRanges picks up to 40 ranges in clusters, so that most gaps fall
// under the hole, with duplicates, overlaps, adjacent pairs, empty ranges,
// ranges at the end and ranges that run past it.
func randomRanges(rng *rand.Rand, data []byte) []engine.ReadRange {
	size := int64(len(data))
	var out []engine.ReadRange
	add := func(off, n int64) {
		off = min(off, size)
		out = append(out, engine.ReadRange{Off: off, Buf: make([]byte, n)})
	}
	cluster := rng.Int63n(size)
	for k := 1 + rng.Intn(40); k > 0; k-- {
		if rng.Intn(6) == 0 {
			cluster = rng.Int63n(size)
		}
		add(cluster+rng.Int63n(256<<10), rng.Int63n(100<<10))
		if rng.Intn(3) == 0 {
			prev := out[rng.Intn(len(out))]
			pl := int64(len(prev.Buf))
			switch rng.Intn(6) {
			case 0: // duplicate
				add(prev.Off, pl)
			case 1: // overlap
				add(prev.Off+pl/2, pl)
			case 2: // contained
				add(prev.Off+pl/4, pl/2)
			case 3: // adjacent
				add(prev.Off+pl, 1000)
			case 4: // empty
				add(prev.Off, 0)
			case 5: // past the end: the bytes that exist
				add(size-100, 5000)
			}
		}
	}
	return out
}

// scatterInto builds pieces over bufs and holes: a positive size is a
// buffer of that many bytes, a negative one a hole.
func scatterInto(sizes ...int64) ([]source.Piece, [][]byte) {
	var ps []source.Piece
	var bufs [][]byte
	for _, n := range sizes {
		if n < 0 {
			ps = append(ps, source.Piece{Skip: -n})
			continue
		}
		b := make([]byte, n)
		ps = append(ps, source.Piece{Buf: b})
		bufs = append(bufs, b)
	}
	return ps, bufs
}

// checkPieces compares each buffer with the object's bytes at its place.
func checkPieces(t *testing.T, data []byte, off int64, ps []source.Piece) {
	t.Helper()
	at := off
	for k, pc := range ps {
		if pc.Buf != nil {
			if !bytes.Equal(pc.Buf, data[at:at+int64(len(pc.Buf))]) {
				t.Fatalf("piece %d at %d: wrong bytes", k, at)
			}
		}
		at += pieceLen(pc)
	}
}

// A body cut short is retried for the bytes still missing only: cut in a
// hole, the retry starts at the next buffer (the rest of the hole is not
// asked for again); cut in a buffer, at the first byte missing. The
// server's byte count proves what was asked.
func TestScatterBodyCutShort(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	for _, c := range []struct {
		name    string
		sizes   []int64
		resent  int64 // bytes the retry must ask for
		inFirst bool
	}{
		// The server sends half the body (3500 bytes): in the hole.
		{"mid-hole", []int64{1000, -5000, 1000}, 1000, false},
		// Half of 8000 is 4000: inside the first buffer; the retry asks
		// for the rest of it, the hole and the last buffer.
		{"mid-buffer", []int64{6000, -1000, 1000}, 4000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := f.open(t, "/_fault/drop=1/bkt/obj", "retries=3")
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			f.srv.ResetStats()
			const off = 12345
			ps, _ := scatterInto(c.sizes...)
			n, err := src.ReadScatter(context.Background(), ps, off)
			if err != nil || n != sumPieces(ps) {
				t.Fatalf("ReadScatter: %d, %v", n, err)
			}
			checkPieces(t, f.data, off, ps)
			total := sumPieces(ps)
			if st := settled(t, f.srv); st.Requests != 2 || st.BytesSent != total/2+c.resent {
				t.Fatalf("%d requests, %d bytes sent; want 2 and %d (half of %d, then %d)",
					st.Requests, st.BytesSent, total/2+c.resent, total, c.resent)
			}
		})
	}
}

// settled is the server's counters once no request is in flight: a
// handler counts the bytes it sent after the client may have read them.
func settled(t *testing.T, srv *remotetest.Server) remotetest.Stats {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st := srv.Stats(); st.InFlight == 0 {
			return st
		}
	}
	t.Fatal("the server still has requests in flight after 10 s")
	return remotetest.Stats{}
}

func sumPieces(ps []source.Piece) int64 {
	var n int64
	for _, pc := range ps {
		n += pieceLen(pc)
	}
	return n
}

// Holes at either end are never requested, and pieces that are all hole
// make no request at all; the bytes are counted as consumed either way.
func TestScatterEdgeHoles(t *testing.T) {
	f := start(t, remotetest.Options{})
	src, err := f.open(t, "/bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f.srv.ResetStats()
	ps, _ := scatterInto(-100, 10, -3, 20, -50)
	if n, err := src.ReadScatter(context.Background(), ps, 1000); err != nil || n != 183 {
		t.Fatalf("ReadScatter: %d, %v; want 183", n, err)
	}
	checkPieces(t, f.data, 1000, ps)
	if st := settled(t, f.srv); st.Requests != 1 || st.BytesSent != 33 {
		t.Fatalf("%d requests, %d bytes; want 1 of 33 (10 + hole 3 + 20)", st.Requests, st.BytesSent)
	}
	f.srv.ResetStats()
	ps, _ = scatterInto(-4096, -4096)
	if n, err := src.ReadScatter(context.Background(), ps, 0); err != nil || n != 8192 {
		t.Fatalf("all holes: %d, %v", n, err)
	}
	if st := f.srv.Stats(); st.Requests != 0 {
		t.Fatalf("all holes: %d requests; want none", st.Requests)
	}
	// At the end of the object: the bytes that exist, counted.
	ps, _ = scatterInto(50, -10, 100)
	if n, err := src.ReadScatter(context.Background(), ps, objSize-100); err != nil || n != 100 {
		t.Fatalf("at the end: %d, %v; want 100", n, err)
	}
	if !bytes.Equal(ps[0].Buf, f.data[objSize-100:objSize-50]) || !bytes.Equal(ps[2].Buf[:40], f.data[objSize-40:]) {
		t.Fatal("at the end: wrong bytes")
	}
}

// The checks of a plain read hold for a scattered one: a short body, a
// wrong Content-Range, an ignored Range and a changed object are errors,
// and a body cut on every attempt fails with what arrived counted.
func TestScatterFaults(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	for _, c := range []struct {
		fault, says string
	}{
		{"short", "bytes"},
		{"badrange", "Content-Range"},
		{"norange", "ignored the Range"},
		{"drop", ""},
	} {
		src, err := f.open(t, "/_fault/"+c.fault+"/bkt/obj", "retries=2", fmt.Sprint("size=", objSize))
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := scatterInto(3000, -2000, 3000)
		n, err := src.ReadScatter(context.Background(), ps, 100)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.says)) {
			t.Fatalf("%s: %d, %v; want an error saying %q", c.fault, n, err, c.says)
		}
		if n > 0 {
			checkPieces(t, f.data[:100+min(n, 3000)], 100, []source.Piece{{Buf: ps[0].Buf[:min(n, 3000)]}})
		}
		src.Close()
	}
	// An object replaced since open.
	src, err := f.open(t, "/_fault/etag,noifmatch/bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ps, _ := scatterInto(10, -10, 10)
	if _, err := src.ReadScatter(context.Background(), ps, 0); err == nil || !bytes.Contains([]byte(err.Error()), []byte("ETag")) {
		t.Fatalf("changed ETag: %v", err)
	}
}

// The source measures its answers (time to the headers, the body's rate)
// and the engine's hole comes from them: latency x rate / requests in flight.
func TestMeasuredDerivesTheHole(t *testing.T) {
	f := start(t, remotetest.Options{Latency: 5 * time.Millisecond})
	// A link of 10 MB/s: a 1 MiB body takes 105 ms, longer than the
	// round trip (5 ms, up to 44 ms seen on a loaded machine), so its
	// rate is believed (measure.go, minBodyShare).
	src, err := f.open(t, "/_fault/rate=10000000/bkt/obj", "max_in_flight=4")
	if err != nil {
		t.Fatal(err)
	}
	es := engine.NewSource(src)
	defer es.Close()
	e := newEngine(2)
	// The open's HEAD is measured: a latency, no rate yet.
	if lat, bps, ok := src.Measured(); !ok || lat < 5*time.Millisecond || bps != 0 {
		t.Fatalf("after open: %v, %.0f B/s, %v; want the HEAD's latency and no rate", lat, bps, ok)
	}
	buf := make([]byte, objSize)
	if _, err := e.ReadAt(context.Background(), es, buf, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, f.data[:len(buf)]) {
		t.Fatal("wrong bytes")
	}
	lat, bps, ok := src.Measured()
	if !ok || lat < 5*time.Millisecond || bps < 5e6 || bps > 30e6 {
		t.Fatalf("Measured: %v, %.0f B/s, %v; want at least the server's 5 ms and the link's 10 MB/s",
			lat, bps, ok)
	}
	hole, max := e.Coalescing(es)
	// The engine believes rates up to 1 GB/s (engine/coalesce.go,
	// maxRateBps).
	if want := min(int64(lat.Seconds()*min(bps, 1e9)/4), max); hole != want {
		t.Fatalf("hole %d; want %d (%v x %.0f B/s / 4)", hole, want, lat, bps)
	}
}
