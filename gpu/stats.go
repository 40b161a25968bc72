package gpu

import "sync/atomic"

// Counters count device transfers. StreamSyncs and EventWaits are host-side
// blocking waits, counted separately: a healthy run has StreamSyncs ==
// Requests (one synchronisation per request, at its end) and EventWaits
// close to the bounce-buffer reuses (reads) or chunks (writes).
type Counters struct {
	Requests        int64 // device requests that moved bytes (reads and writes)
	Reads           int64 // of those, reads into device memory
	Writes          int64 // of those, writes from device memory
	InlineRequests  int64 // requests run on the caller's thread
	Tasks           int64 // tasks handed to the pool
	Chunks          int64 // bounce-buffer copies issued
	BytesToDevice   int64
	BytesFromDevice int64
	StreamSyncs     int64 // cuStreamSynchronize calls
	EventWaits      int64 // cuEventSynchronize calls
	ProducerWaits   int64 // cuStreamWaitEvent on a caller's stream (device side, no host wait)
	PinnedBuffers   int64 // pinned bounce buffers allocated now
	PinnedIdle      int64 // of those, back in the pool (free or waiting on their last copy)
	PinnedBytes     int64 // bytes of pinned memory allocated now
	Errors          int64 // failed requests
}

// Add returns the sum of two snapshots.
func (s Counters) Add(o Counters) Counters {
	return Counters{
		Requests:        s.Requests + o.Requests,
		Reads:           s.Reads + o.Reads,
		Writes:          s.Writes + o.Writes,
		InlineRequests:  s.InlineRequests + o.InlineRequests,
		Tasks:           s.Tasks + o.Tasks,
		Chunks:          s.Chunks + o.Chunks,
		BytesToDevice:   s.BytesToDevice + o.BytesToDevice,
		BytesFromDevice: s.BytesFromDevice + o.BytesFromDevice,
		StreamSyncs:     s.StreamSyncs + o.StreamSyncs,
		EventWaits:      s.EventWaits + o.EventWaits,
		ProducerWaits:   s.ProducerWaits + o.ProducerWaits,
		PinnedBuffers:   s.PinnedBuffers + o.PinnedBuffers,
		PinnedIdle:      s.PinnedIdle + o.PinnedIdle,
		PinnedBytes:     s.PinnedBytes + o.PinnedBytes,
		Errors:          s.Errors + o.Errors,
	}
}

type counters struct {
	requests, reads, writes, inline, tasks, chunks atomic.Int64
	toDevice, fromDevice                           atomic.Int64
	streamSyncs, eventWaits, producerWaits         atomic.Int64
	pinned, pinnedIdle, pinnedBytes                atomic.Int64
	errors                                         atomic.Int64
}

// Stats returns the counters now.
func (m *Mover) Stats() Counters {
	c := &m.c
	return Counters{
		Requests:        c.requests.Load(),
		Reads:           c.reads.Load(),
		Writes:          c.writes.Load(),
		InlineRequests:  c.inline.Load(),
		Tasks:           c.tasks.Load(),
		Chunks:          c.chunks.Load(),
		BytesToDevice:   c.toDevice.Load(),
		BytesFromDevice: c.fromDevice.Load(),
		StreamSyncs:     c.streamSyncs.Load(),
		EventWaits:      c.eventWaits.Load(),
		ProducerWaits:   c.producerWaits.Load(),
		PinnedBuffers:   c.pinned.Load(),
		PinnedIdle:      c.pinnedIdle.Load(),
		PinnedBytes:     c.pinnedBytes.Load(),
		Errors:          c.errors.Load(),
	}
}
