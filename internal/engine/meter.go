package engine

import (
	"context"
	"sync"
	"time"
)

// meter is what the engine measures of a source with latency, to size its
// coalescing hole (coalesce.go): the shortest call seen stands for the
// time to the first byte (a small read is all latency), and the best rate
// seen past it for the throughput. It is cheap: one lock per call, taken
// only for sources that are not Fast.
type meter struct {
	mu      sync.Mutex
	calls   int64
	minTime time.Duration
	large   [16]sample // the latest reads large enough to show a rate
	nlarge  int
}

type sample struct {
	n int64
	d time.Duration
}

// minRateSample is the smallest read whose rate is believed: below it the
// latency swamps the transfer and the rate says nothing.
const minRateSample = 256 << 10

func (m *meter) record(n int64, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.calls == 1 || d < m.minTime {
		m.minTime = d
	}
	if n >= minRateSample {
		m.large[m.nlarge%len(m.large)] = sample{n, d}
		m.nlarge++
	}
}

// estimate returns the latency and throughput measured so far (bps 0 when
// no read was large enough to say); ok is false before the first call.
// The rate is taken past the latency known now, so the order in which
// small and large reads came does not matter.
func (m *meter) estimate() (lat time.Duration, bps float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.large[:min(m.nlarge, len(m.large))] {
		if t := (s.d - m.minTime).Seconds(); t > 0 {
			bps = max(bps, float64(s.n)/t)
		}
	}
	return m.minTime, bps, m.calls > 0
}

// readAt is the source's ReadAt, timed when the source has latency.
func (s *Source) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	if s.traits.Fast {
		return s.src.ReadAt(ctx, p, off)
	}
	t := time.Now()
	n, err := s.src.ReadAt(ctx, p, off)
	if err == nil {
		s.meter.record(int64(n), time.Since(t))
	}
	return n, err
}
