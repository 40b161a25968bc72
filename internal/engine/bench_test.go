package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/sink"
)

func waitAll(b *testing.B, futs []*future.Future) {
	for _, f := range futs {
		if _, err := f.WaitTimeout(time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// fanOutOnce reads every range of src through e, waiting in order, and
// returns the wall time.
func fanOutOnce(b *testing.B, e *Engine, src *Source, ranges []ReadRange) time.Duration {
	start := time.Now()
	futs, err := e.ReadV(context.Background(), src, ranges)
	if err != nil {
		b.Fatal(err)
	}
	waitAll(b, futs)
	return time.Since(start)
}

// BenchmarkFanOut: 20 reads of 2 MiB from a source with injected latency,
// 8 threads, fanned out then waited in order. Each iteration runs the
// eager engine, the same engine in start-at-wait mode (the deferred bug of
// cuDF PR 23231) and measures the ideal's copy time, interleaved, so the
// ratios compare runs made under the same machine load.
//
//	go test -run '^$' -bench FanOut -benchtime 20x ./internal/engine/
func BenchmarkFanOut(b *testing.B) {
	const n, size, threads = 20, 2 << 20, 8
	data := fakes.Pattern(n*size, 1)
	for _, lat := range []time.Duration{0, 100 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", lat), func(b *testing.B) {
			cfg := config.Default()
			cfg.Threads = threads
			eager, deferred := New(cfg), New(cfg)
			deferred.SetStartAtWait(true)
			src := NewSource(&fakes.SlowSource{Data: data, Latency: lat})
			ranges := make([]ReadRange, n)
			for i := range ranges {
				ranges[i] = ReadRange{Off: int64(i * size), Buf: make([]byte, size)}
			}
			var tEager, tDeferred, tCopy time.Duration
			for i := 0; i < b.N; i++ {
				tEager += fanOutOnce(b, eager, src, ranges)
				tDeferred += fanOutOnce(b, deferred, src, ranges)
				start := time.Now()
				for _, r := range ranges {
					copy(r.Buf, data[r.Off:])
				}
				tCopy += time.Since(start)
			}
			waves := time.Duration((n + threads - 1) / threads)
			ideal := waves*lat + tCopy/time.Duration(b.N)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			eagerMs := ms(tEager / time.Duration(b.N))
			deferredMs := ms(tDeferred / time.Duration(b.N))
			b.ReportMetric(eagerMs, "eager-ms")
			b.ReportMetric(deferredMs, "deferred-ms")
			b.ReportMetric(ms(ideal), "ideal-ms")
			b.ReportMetric(eagerMs/ms(ideal), "eager/ideal")
			b.ReportMetric(deferredMs/eagerMs, "deferred/eager")
		})
	}
}

func benchFile(b *testing.B, size int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.bin")
	if err := os.WriteFile(p, fakes.Pattern(size, 2), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkLocalRead: one 256 MiB read of a warm local file, split into
// 4 MiB tasks, by thread count.
func BenchmarkLocalRead(b *testing.B) {
	const size = 256 << 20
	path := benchFile(b, size)
	buf := make([]byte, size)
	for _, threads := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			cfg := config.Default()
			cfg.Threads = threads
			e := New(cfg)
			src := openFile(b, path)
			defer src.Close()
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, err := e.Read(context.Background(), src, buf, 0)
				if err != nil {
					b.Fatal(err)
				}
				waitAll(b, []*future.Future{f})
			}
		})
	}
}

// BenchmarkCrossover compares running requests inline with handing them to
// the pool, by request size, on a warm local file. Two patterns:
//
//   - sync: one request, wait, next (a footer or index read); the pool
//     can only add its hand-off cost here.
//   - fanout: 64 requests submitted, then all waited; the pool overlaps
//     them on both cores while the caller keeps submitting.
//
// Each iteration runs the inline and the pool engine back to back.
// "pool/inline" below 1 means the pool wins at that size. The default
// thresholds are where the sync penalty of the pool has shrunk to a few
// percent and the fan-out gain of the pool has become large; see README.
//
//	go test -run '^$' -bench Crossover -benchtime 200x ./internal/engine/
func BenchmarkCrossover(b *testing.B) {
	const count = 64
	sizes := []int{4 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20}
	path := benchFile(b, count*(1<<20))
	for _, op := range []string{"read", "write"} {
		for _, pattern := range []string{"sync", "fanout"} {
			for _, size := range sizes {
				b.Run(fmt.Sprintf("%s/%s/size=%dKiB", op, pattern, size>>10), func(b *testing.B) {
					inlineCfg, poolCfg := config.Default(), config.Default()
					inlineCfg.SmallReadThreshold, inlineCfg.SmallWriteThreshold = 1<<40, 1<<40
					poolCfg.SmallReadThreshold, poolCfg.SmallWriteThreshold = 0, 0
					inline, pooled := New(inlineCfg), New(poolCfg)
					src := openFile(b, path)
					defer src.Close()
					fs, err := sink.OpenFile(filepath.Join(b.TempDir(), "w.bin"), sink.Create|sink.Truncate, 0)
					if err != nil {
						b.Fatal(err)
					}
					snk := NewSink(fs)
					defer snk.Close()
					bufs := make([][]byte, count)
					for i := range bufs {
						bufs[i] = make([]byte, size)
					}
					run := func(e *Engine) time.Duration {
						start := time.Now()
						var futs []*future.Future
						for i, buf := range bufs {
							var f *future.Future
							var err error
							if op == "read" {
								f, err = e.Read(context.Background(), src, buf, int64(i*size))
							} else {
								f, err = e.Write(context.Background(), snk, buf, int64(i*size))
							}
							if err != nil {
								b.Fatal(err)
							}
							if pattern == "sync" {
								waitAll(b, []*future.Future{f})
							} else {
								futs = append(futs, f)
							}
						}
						waitAll(b, futs)
						return time.Since(start)
					}
					var tInline, tPool time.Duration
					for i := 0; i < b.N; i++ {
						tInline += run(inline)
						tPool += run(pooled)
					}
					per := func(d time.Duration) float64 { return float64(d) / float64(b.N) / count / 1e3 }
					b.ReportMetric(per(tInline), "inline-us/op")
					b.ReportMetric(per(tPool), "pool-us/op")
					b.ReportMetric(float64(tPool)/float64(tInline), "pool/inline")
				})
			}
		}
	}
}
