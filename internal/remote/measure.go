package remote

import (
	"sync"
	"time"

	"github.com/colio-dev/colio/internal/source"
)

// The engine sizes the hole it coalesces ranges across from a source's
// latency and throughput (engine/coalesce.go, autoHole). From outside it
// can only time whole calls; the source sees each answer's parts apart:
// the time to the response headers (the round trip and the server's
// latency) and the rate of the body after them.

var _ source.Measurer = (*Source)(nil)

// minRateBody is the smallest body whose rate is believed: below it the
// body arrives with the headers and its time says nothing.
const minRateBody = 256 << 10

// A body that took less time than its answer's time to first byte says
// only that the link is fast, not how fast: on loopback or in one data
// centre a 256 KiB body arrives in a fraction of a 20 ms latency, and its
// "rate" is the speed of a memory copy, which follows the CPU's load (28
// MB/s to 4.4 GB/s measured for the same server on this 2-core machine,
// the low ones with other work running). Believed, it swung the
// coalescing hole from one fan-out to the next (42 to 60 requests for the
// same ranges); ignored, the engine keeps its prior until a body takes as
// long as the round trip, as a real link's large bodies do (8 MiB at
// 100 MB/s: 80 ms).
const minBodyShare = 1

// meterWindow is how many answers a measurement stands for: the estimate
// is the best of the last one to two windows, so it follows a server that
// slows down or speeds up within a few hundred requests.
const meterWindow = 64

type meter struct {
	mu                 sync.Mutex
	n, nRate           int           // answers and rated bodies in the current window
	nFast              int           // large bodies in the window that beat their round trip
	ttfb, prevTTFB     time.Duration // the shortest time to first byte: now and last window
	rate, prevRate     float64       // the best body rate (bytes/s): now and last window
	haveTTFB, haveRate bool
}

// record is one answer: d to its headers, then n body bytes in body.
func (m *meter) record(d time.Duration, n int64, body time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 || d < m.ttfb {
		m.ttfb = d
	}
	m.n++
	if m.n == meterWindow {
		m.prevTTFB, m.n, m.haveTTFB = m.ttfb, 0, true
	}
	if n < minRateBody || body <= 0 {
		return
	}
	if body*minBodyShare < d {
		m.nFast++ // a vote for a fast link (see believed)
	} else {
		r := float64(n) / body.Seconds()
		if m.nRate == 0 || r > m.rate {
			m.rate = r
		}
		m.nRate++
	}
	if m.nRate+m.nFast == meterWindow/4 {
		m.prevRate, m.haveRate = m.believed(), true
		m.nRate, m.nFast = 0, 0
	}
}

// believed is the window's rate if most of its large bodies took as long
// as their round trip, else 0. A loaded machine stretches an odd body
// past its round trip (one 300 KiB body of 40 took 40 ms at 20 ms on this
// 2-core machine under two busy loops, a "rate" of 8 MB/s); on a slow
// link every large body does. The bodies that beat their round trip
// outvote the odd one.
func (m *meter) believed() float64 {
	if m.nRate > m.nFast {
		return m.rate
	}
	return 0
}

// Measured returns the time to first byte and the body rate seen over the
// recent answers (rate 0 until a body was large enough to tell); ok is
// false before the first answer.
func (s *Source) Measured() (firstByte time.Duration, bytesPerSecond float64, ok bool) {
	m := &s.meter
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.n > 0 && m.haveTTFB:
		firstByte = min(m.ttfb, m.prevTTFB)
	case m.n > 0:
		firstByte = m.ttfb
	case m.haveTTFB:
		firstByte = m.prevTTFB
	default:
		return 0, 0, false
	}
	bytesPerSecond = m.believed()
	if m.haveRate {
		bytesPerSecond = max(bytesPerSecond, m.prevRate)
	}
	return firstByte, bytesPerSecond, true
}
