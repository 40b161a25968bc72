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

// TestSweepPartSize measures an S3 sink's time for 512 MiB written as 228
// chunks at 0 and 20 ms per request against part_size: the sweep behind
// DefaultPartSize (sink_options.go, docs/remote.md). A measurement, not a
// check: it runs only with COLIO_S3_SWEEP=1 and prints its table.
func TestSweepPartSize(t *testing.T) {
	if os.Getenv("COLIO_S3_SWEEP") == "" {
		t.Skip("a measurement: set COLIO_S3_SWEEP=1")
	}
	const size, chunks = 512 << 20, 228
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	e := newEngine(8)
	fmt.Printf("latency  part_size  best of 3  parts  peak at server\n")
	for _, lat := range []time.Duration{0, 20 * time.Millisecond} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "bkt"), 0o755)
		srv, err := remotetest.Start(remotetest.Options{Dir: dir, Latency: lat}, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range []int{5 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20} {
			best := time.Duration(1 << 62)
			for r := 0; r < 3; r++ {
				o, _ := ParseOptions([]string{"anon=1", "endpoint_url=" + srv.URL, fmt.Sprint("part_size=", ps)}, nil)
				s, err := OpenSink(context.Background(), "s3://bkt/obj", o)
				if err != nil {
					t.Fatal(err)
				}
				ks := engine.NewSink(s)
				srv.ResetStats()
				t0 := time.Now()
				var ranges []engine.WriteRange
				for i := 0; i < chunks; i++ {
					ranges = append(ranges, engine.WriteRange{Off: engine.Append, Buf: data[size*i/chunks : size*(i+1)/chunks]})
				}
				if _, err := e.WriteV(context.Background(), ks, ranges); err != nil {
					t.Fatal(err)
				}
				if err := ks.Close(); err != nil {
					t.Fatal(err)
				}
				best = min(best, time.Since(t0))
			}
			fmt.Printf("%7v  %6d MiB  %8.0f ms  %5d  %d\n", lat, ps>>20, best.Seconds()*1e3, (size+ps-1)/ps, srv.Stats().PeakInFlight)
		}
		srv.Close()
	}
}
