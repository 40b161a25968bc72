package engine

import (
	"sync/atomic"

	"github.com/colio-dev/colio/internal/atomicx"
)

// Stats is a snapshot of the engine counters.
type Stats struct {
	OpsSubmitted int64 // requests accepted (reads and writes)
	OpsInline    int64 // requests run on the caller's goroutine
	Tasks        int64 // parts handed to the pool
	BytesRead    int64
	BytesWritten int64
	InFlight     int64 // source or sink calls running now
	PeakInFlight int64 // most that ever ran at once
	Errors       int64 // parts that failed (cancellations excluded)
	Queued       int64 // tasks waiting for a pool slot now
}

type counters struct {
	opsSubmitted atomic.Int64
	opsInline    atomic.Int64
	tasks        atomic.Int64
	bytesRead    atomic.Int64
	bytesWritten atomic.Int64
	inFlight     atomic.Int64
	peak         atomic.Int64
	errors       atomic.Int64
}

func (c *counters) enter() {
	atomicx.StoreMax(&c.peak, c.inFlight.Add(1))
}

func (c *counters) leave() { c.inFlight.Add(-1) }

// Stats returns the counters now.
func (e *Engine) Stats() Stats {
	c := &e.c
	return Stats{
		OpsSubmitted: c.opsSubmitted.Load(),
		OpsInline:    c.opsInline.Load(),
		Tasks:        c.tasks.Load(),
		BytesRead:    c.bytesRead.Load(),
		BytesWritten: c.bytesWritten.Load(),
		InFlight:     c.inFlight.Load(),
		PeakInFlight: c.peak.Load(),
		Errors:       c.errors.Load(),
		Queued:       int64(e.pool.Queued()),
	}
}

// ResetPeak sets the peak in flight to the current in-flight count, so a
// benchmark or test can measure the peak of one phase.
func (e *Engine) ResetPeak() { e.c.peak.Store(e.c.inFlight.Load()) }
