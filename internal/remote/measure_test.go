package remote

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// The derived hole is the same from a source's first fan-out on, and for
// every fresh source of the same server: a repeated fan-out of 60 ranges
// (64 KiB, with gaps of 32 KiB, 200 KiB and 1 MiB between them) at 20 ms
// makes the same number of requests each time. Before, the first fan-out
// of a source was planned with the hole of an unmeasured (1 MiB) or an
// unrated source (latency x 100 MB/s: 7.8 KiB) and the next ones with the
// best body rate seen, a memory copy's on loopback (90 to 350 KiB), so
// the 32 KiB gaps were merged only after the first and the 200 KiB ones
// on some runs.
func TestDerivedHoleIsStable(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bkt"), 0o755); err != nil {
		t.Fatal(err)
	}
	gaps := []int64{32 << 10, 200 << 10, 1 << 20}
	rng := rand.New(rand.NewSource(5))
	var offs []int64
	var pos int64
	groups := 1 // requests when 32 KiB gaps merge and the others do not
	for i := 0; i < 60; i++ {
		if i > 0 {
			g := gaps[rng.Intn(len(gaps))]
			if g > 32<<10 {
				groups++
			}
			pos += g
		}
		offs = append(offs, pos)
		pos += 64 << 10
	}
	data := make([]byte, pos)
	rng.Read(data)
	if err := os.WriteFile(filepath.Join(dir, "bkt", "cols"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := remotetest.Start(remotetest.Options{Dir: dir, Latency: 20 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := &fixture{srv: srv}
	e := newEngine(2)
	for k := 0; k < 4; k++ {
		kvs := []string{}
		if k%2 == 1 {
			kvs = append(kvs, "prefetch=65536") // an open that brings a body too
		}
		src, err := f.open(t, "/bkt/cols", kvs...)
		if err != nil {
			t.Fatal(err)
		}
		es := engine.NewSource(src)
		for round := 0; round < 3; round++ {
			ranges := make([]engine.ReadRange, len(offs))
			for i, o := range offs {
				ranges[i] = engine.ReadRange{Off: o, Buf: make([]byte, 64<<10)}
			}
			hole, _ := e.Coalescing(es)
			srv.ResetStats()
			fs, err := e.ReadVCoalesced(context.Background(), es, ranges)
			if err != nil {
				t.Fatal(err)
			}
			for i, fu := range fs {
				if n, err := fu.WaitTimeout(-1); err != nil || !bytes.Equal(ranges[i].Buf[:n], data[offs[i]:offs[i]+64<<10]) {
					t.Fatalf("source %d, round %d, range %d: %d bytes, %v", k, round, i, n, err)
				}
			}
			st := settled(t, srv)
			lat, bps, _ := src.Measured()
			t.Logf("source %d, round %d: hole %d (latency %v, rate %.0f MB/s): %d requests",
				k, round, hole, lat, bps/1e6, st.Requests)
			if st.Requests != int64(groups) {
				t.Fatalf("source %d, round %d: %d requests with a hole of %d; want %d every time "+
					"(the 32 KiB gaps merged, the 200 KiB ones not)", k, round, st.Requests, hole, groups)
			}
		}
		es.Close()
	}
}
