package readahead

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/source"
)

// BenchmarkSmallReads: 4-byte reads over a 256 MiB file, through the stream
// and through bufio.Reader over *os.File, interleaved in each iteration.
//
//	go test -run '^$' -bench SmallReads -benchtime 3x ./internal/readahead/
func BenchmarkSmallReads(b *testing.B) {
	const size = 256 << 20
	p := filepath.Join(b.TempDir(), "f.bin")
	if err := os.WriteFile(p, fakes.Pattern(size, 1), 0o644); err != nil {
		b.Fatal(err)
	}
	e := newEngine()
	var tStream, tBufio time.Duration
	var allocs float64
	buf := make([]byte, 4)
	for i := 0; i < b.N; i++ {
		f, err := source.OpenFile(p)
		if err != nil {
			b.Fatal(err)
		}
		src := engine.NewSource(f)
		s, err := Open(context.Background(), e, src, 0, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				break
			}
		}
		tStream += time.Since(start)
		s.Close()
		src.Close()
		// Allocations per read on the hot path, measured on a fresh stream.
		f2, _ := source.OpenFile(p)
		src2 := engine.NewSource(f2)
		s2, _ := Open(context.Background(), e, src2, 0, 0, 0)
		allocs = testing.AllocsPerRun(100000, func() { io.ReadFull(s2, buf) })
		s2.Close()
		src2.Close()

		osf, _ := os.Open(p)
		r := bufio.NewReaderSize(osf, DefaultBufferSize)
		start = time.Now()
		for {
			if _, err := io.ReadFull(r, buf); err != nil {
				break
			}
		}
		tBufio += time.Since(start)
		osf.Close()
	}
	b.ReportMetric(float64(tStream)/float64(b.N)/1e6, "stream-ms")
	b.ReportMetric(float64(tBufio)/float64(b.N)/1e6, "bufio-ms")
	b.ReportMetric(float64(tStream)/float64(tBufio), "stream/bufio")
	b.ReportMetric(allocs, "allocs/read")
}

// BenchmarkSlowConsumer: a consumer that spends a fixed time per MiB reads
// 32 MiB from a source with 2 ms latency per read. With read-ahead, the
// total approaches max(I/O time, compute time) instead of their sum.
//
//	go test -run '^$' -bench SlowConsumer -benchtime 3x ./internal/readahead/
func BenchmarkSlowConsumer(b *testing.B) {
	const size = 32 << 20
	const perMiB = 2 * time.Millisecond
	data := fakes.Pattern(size, 2)
	e := newEngine()
	var tTotal, tIO, tCompute time.Duration
	buf := make([]byte, 64<<10)
	// The consumer decodes: it spins on the CPU (a sleep would oversleep by
	// tens of microseconds per call and measure the scheduler instead).
	work := func(n int) {
		end := time.Now().Add(perMiB * time.Duration(n) / (1 << 20))
		for time.Now().Before(end) {
		}
	}
	for i := 0; i < b.N; i++ {
		// Compute alone, in chunks of the same size.
		start := time.Now()
		for done := 0; done < size; done += len(buf) {
			work(len(buf))
		}
		tCompute += time.Since(start)
		// I/O alone: the stream drained with no compute.
		src := engine.NewSource(&fakes.SlowSource{Data: data, Latency: 2 * time.Millisecond})
		s, _ := Open(context.Background(), e, src, 0, 0, 0)
		start = time.Now()
		io.Copy(io.Discard, s)
		tIO += time.Since(start)
		s.Close()
		// I/O and compute together.
		s, _ = Open(context.Background(), e, src, 0, 0, 0)
		start = time.Now()
		var got int
		for {
			n, err := io.ReadFull(s, buf)
			got += n
			work(n)
			if err != nil {
				break
			}
		}
		tTotal += time.Since(start)
		s.Close()
	}
	compute := tCompute / time.Duration(b.N)
	ioT := tIO / time.Duration(b.N)
	total := tTotal / time.Duration(b.N)
	b.ReportMetric(float64(ioT)/1e6, "io-ms")
	b.ReportMetric(float64(compute)/1e6, "compute-ms")
	b.ReportMetric(float64(total)/1e6, "total-ms")
	b.ReportMetric(float64(total)/float64(max(ioT, compute)), "total/max")
	b.ReportMetric(float64(total)/float64(ioT+compute), "total/sum")
}

// BenchmarkDefaults sweeps buffer size and depth for the two workloads the
// defaults must serve: 4-byte reads of a local file (per-fill overhead) and
// a decoder over a 2 ms-latency source (latency hiding).
//
//	go test -run '^$' -bench Defaults -benchtime 3x ./internal/readahead/
func BenchmarkDefaults(b *testing.B) {
	const size = 64 << 20
	data := fakes.Pattern(size, 3)
	p := filepath.Join(b.TempDir(), "f.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	// Engines are made inside each sub-benchmark: the testing package
	// resets GOMAXPROCS before each, and the engine raises it (see
	// engine/procs.go).
	for _, bs := range []int{64 << 10, 256 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("local-4B/buffer=%dKiB", bs>>10), func(b *testing.B) {
			buf := make([]byte, 4)
			e := newEngine()
			for i := 0; i < b.N; i++ {
				f, _ := source.OpenFile(p)
				src := engine.NewSource(f)
				s, _ := Open(context.Background(), e, src, 0, bs, DefaultDepth)
				for {
					if _, err := io.ReadFull(s, buf); err != nil {
						break
					}
				}
				s.Close()
				src.Close()
			}
			b.SetBytes(size)
		})
	}
	slow := engine.NewSource(&fakes.SlowSource{Data: data[:16<<20], Latency: 2 * time.Millisecond})
	for _, depth := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("latency-2ms/buffer=1MiB/depth=%d", depth), func(b *testing.B) {
			e := newEngine()
			for i := 0; i < b.N; i++ {
				s, _ := Open(context.Background(), e, slow, 0, DefaultBufferSize, depth)
				io.Copy(io.Discard, s)
				s.Close()
			}
			b.SetBytes(16 << 20)
		})
	}
}
