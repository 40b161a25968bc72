package remote

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/remote/remotetest"
	"github.com/colio-dev/colio/internal/source"
)

// BenchmarkReadV times a fan-out of 1000 x 64 KiB over HTTP and over
// signed S3 against an in-process server without latency, so that what
// each request costs the client (and the server's SigV4 check) shows:
//
//	go test -run '^$' -bench ReadV -cpuprofile cpu.out ./internal/remote/
func BenchmarkReadV(b *testing.B) {
	const n, size = 1000, 64 << 10
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "bkt"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "bkt", "obj"), make([]byte, n*size), 0o644); err != nil {
		b.Fatal(err)
	}
	srv, err := remotetest.Start(remotetest.Options{Dir: dir, Key: "AKIDBENCH", Secret: "s3cr3t"},
		"127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	e := newEngine(8)
	buf := make([]byte, n*size)
	for _, c := range []struct{ name, url string }{
		{"HTTP", srv.URL + "/bkt/obj"},
		{"S3", "s3://bkt/obj"},
	} {
		b.Run(c.name, func(b *testing.B) {
			kvs := []string{"endpoint_url=" + srv.URL, "key=AKIDBENCH", "secret=s3cr3t", "region=us-east-1"}
			if c.name == "HTTP" {
				kvs = nil
			}
			o, err := ParseOptions(kvs, func(string) (string, bool) { return "", false })
			if err != nil {
				b.Fatal(err)
			}
			src, err := Open(context.Background(), c.url, o)
			if err != nil {
				b.Fatal(err)
			}
			es := engine.NewSource(src)
			defer es.Close()
			ranges := make([]engine.ReadRange, n)
			for i := range ranges {
				ranges[i] = engine.ReadRange{Off: int64(i) * size, Buf: buf[i*size : (i+1)*size]}
			}
			b.SetBytes(n * size)
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				fs, err := e.ReadV(context.Background(), es, ranges)
				if err != nil {
					b.Fatal(err)
				}
				for _, f := range fs {
					if _, err := f.WaitTimeout(-1); err != nil {
						b.Fatal(err)
					}
				}
			}
			// The process's CPU per fan-out (client and server together):
			// steadier than the time on a machine shared with other work.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// plainSource is a remote source seen without its Scatterer: the engine
// reads each merged request into a scratch buffer and copies the ranges
// out of it, as it did for remote sources before they scattered.
type plainSource struct{ s *Source }

func (p plainSource) ReadAt(ctx context.Context, b []byte, off int64) (int, error) {
	return p.s.ReadAt(ctx, b, off)
}
func (p plainSource) Size() (int64, error)  { return p.s.Size() }
func (p plainSource) Traits() source.Traits { return p.s.Traits() }
func (p plainSource) Close() error          { return p.s.Close() }

// BenchmarkCoalescedReadV reads 256 ranges of 64 KiB with 16 KiB gaps,
// coalesced into 8 MiB requests, through the source's ReadScatter and
// through the scratch buffer it replaces; B/op and allocs/op show the
// scratch buffer (and its copy) gone:
//
//	go test -run '^$' -bench CoalescedReadV -benchmem ./internal/remote/
func BenchmarkCoalescedReadV(b *testing.B) {
	const n, size, gap = 256, 64 << 10, 16 << 10
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "bkt"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "bkt", "obj"), make([]byte, n*(size+gap)), 0o644); err != nil {
		b.Fatal(err)
	}
	srv, err := remotetest.Start(remotetest.Options{Dir: dir}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	e := newEngine(8)
	buf := make([]byte, n*size)
	ranges := make([]engine.ReadRange, n)
	for i := range ranges {
		ranges[i] = engine.ReadRange{Off: int64(i) * (size + gap), Buf: buf[i*size : (i+1)*size]}
	}
	for _, scatter := range []bool{true, false} {
		name := "scatter"
		if !scatter {
			name = "scratch"
		}
		b.Run(name, func(b *testing.B) {
			o, err := ParseOptions(nil, func(string) (string, bool) { return "", false })
			if err != nil {
				b.Fatal(err)
			}
			src, err := Open(context.Background(), srv.URL+"/bkt/obj", o)
			if err != nil {
				b.Fatal(err)
			}
			var es *engine.Source
			if scatter {
				es = engine.NewSource(src)
			} else {
				es = engine.NewSource(plainSource{src})
			}
			defer es.Close()
			if err := es.SetCoalesce(gap, 8<<20); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(n * size)
			b.ReportAllocs()
			for b.Loop() {
				fs, err := e.ReadVCoalesced(context.Background(), es, ranges)
				if err != nil {
					b.Fatal(err)
				}
				for _, f := range fs {
					if _, err := f.WaitTimeout(-1); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
