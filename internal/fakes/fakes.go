// Package fakes has sources and sinks for tests and benchmarks: latency
// injection (to model NFS at 500 us and object stores at 2 ms), peak
// concurrency counted inside the source, latches and failure injection.
// Counting inside the source, not in the engine, is what proves a claim
// about the engine from outside it.
package fakes

import (
	"github.com/colio-dev/colio/internal/atomicx"

	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// Gauge counts calls in flight and remembers the peak.
type Gauge struct {
	now, peak, calls atomic.Int64
}

// Enter records a call starting.
func (g *Gauge) Enter() {
	g.calls.Add(1)
	atomicx.StoreMax(&g.peak, g.now.Add(1))
}

// Leave records a call ending.
func (g *Gauge) Leave() { g.now.Add(-1) }

// Peak is the most calls ever in flight at once.
func (g *Gauge) Peak() int64 { return g.peak.Load() }

// Now is the number of calls in flight.
func (g *Gauge) Now() int64 { return g.now.Load() }

// Calls is the number of calls started.
func (g *Gauge) Calls() int64 { return g.calls.Load() }

// Sleep blocks the calling thread for d, like a blocking network read.
// time.Sleep rounds sub-millisecond waits up to about 1 ms (measured: a
// 100 us sleep took 1.08 ms), which would make the 100 us and 500 us
// latency models meaningless; nanosleep overshoots by ~70 us and, unlike
// spinning, leaves the two cores to the code being measured.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	for {
		var rem unix.Timespec
		if err := unix.Nanosleep(&ts, &rem); err != unix.EINTR {
			return
		}
		ts = rem
	}
}

// SlowSource serves Data with Latency added to every read, like a remote
// object store. It is not Fast, so the engine never inlines it.
type SlowSource struct {
	Data    []byte
	Latency time.Duration
	Gauge   Gauge
	// Gate, if set, is waited on (received from) before each read returns
	// data: a latch for tests that hold a read in progress.
	Gate chan struct{}
	// Hook, if set, runs inside each read with its context.
	Hook func(ctx context.Context, off int64)
	// FastTraits makes the source declare itself fast.
	FastTraits bool
}

func (s *SlowSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	s.Gauge.Enter()
	defer s.Gauge.Leave()
	Sleep(s.Latency)
	if s.Gate != nil {
		<-s.Gate
	}
	if s.Hook != nil {
		s.Hook(ctx, off)
	}
	if off >= int64(len(s.Data)) {
		return 0, nil
	}
	return copy(p, s.Data[off:]), nil
}

func (s *SlowSource) Size() (int64, error) { return int64(len(s.Data)), nil }
func (s *SlowSource) Traits() source.Traits {
	return source.Traits{Fast: s.FastTraits, Concurrent: true}
}
func (s *SlowSource) Close() error { return nil }

// SlowSink wraps a sink with latency per write and a gauge.
type SlowSink struct {
	sink.Sink
	Latency time.Duration
	Gauge   Gauge
	mu      sync.Mutex
	starts  []time.Time
}

func (s *SlowSink) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	s.Gauge.Enter()
	defer s.Gauge.Leave()
	s.mu.Lock()
	s.starts = append(s.starts, time.Now())
	s.mu.Unlock()
	Sleep(s.Latency)
	return s.Sink.WriteAt(ctx, p, off)
}

// Starts returns when each write began.
func (s *SlowSink) Starts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.starts...)
}

func (s *SlowSink) Traits() sink.Traits { return sink.Traits{Concurrent: true} }

// Pattern returns n deterministic, position-dependent bytes, so that a
// byte landing at the wrong offset is caught.
func Pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 24)
	}
	return b
}
