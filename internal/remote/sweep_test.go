package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// TestSweepInFlight measures how the time of 1000 reads of 64 KiB at 20 ms
// per request falls with max_in_flight: the sweep behind
// DefaultMaxInFlight (doc.go, docs/remote.md). A measurement, not a check:
// it runs only with COLIO_REMOTE_SWEEP=1 and prints its table.
func TestSweepInFlight(t *testing.T) {
	if os.Getenv("COLIO_REMOTE_SWEEP") == "" {
		t.Skip("a measurement: set COLIO_REMOTE_SWEEP=1")
	}
	const n, size = 1000, 64 << 10
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "bkt"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "bkt", "obj"), make([]byte, n*size), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := remotetest.Start(remotetest.Options{Dir: dir, Latency: 20 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := newEngine(8)
	buf := make([]byte, n*size)
	fmt.Printf("max_in_flight  best of 3   peak at server\n")
	for _, inflight := range []int{16, 32, 64, 128, 192, 256, 384, 512} {
		o, _ := ParseOptions([]string{fmt.Sprint("max_in_flight=", inflight), fmt.Sprint("size=", n*size)}, nil)
		src, err := Open(context.Background(), srv.URL+"/bkt/obj", o)
		if err != nil {
			t.Fatal(err)
		}
		es := engine.NewSource(src)
		best := time.Hour
		var peak int64
		for rep := 0; rep < 3; rep++ {
			srv.ResetStats()
			ranges := make([]engine.ReadRange, n)
			for i := range ranges {
				ranges[i] = engine.ReadRange{Off: int64(i) * size, Buf: buf[i*size : (i+1)*size]}
			}
			t0 := time.Now()
			fs, err := e.ReadV(context.Background(), es, ranges)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if _, err := f.WaitTimeout(-1); err != nil {
					t.Fatal(err)
				}
			}
			best = min(best, time.Since(t0))
			peak = max(peak, srv.Stats().PeakInFlight)
		}
		es.Close()
		fmt.Printf("%13d  %7.1f ms  %d\n", inflight, float64(best.Microseconds())/1000, peak)
	}
}
