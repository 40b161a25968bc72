package gpu

import (
	"sync"
)

// bounce is one pinned bounce buffer and the event recorded after the last
// copy that used it. While pending, that copy may still be running: the
// buffer must not be refilled (reads) or read (writes) before the event
// completes.
type bounce struct {
	b       []byte
	ev      Event
	pending bool
	broken  bool // a copy was issued but its event could not be recorded
}

// ctxState holds what colio keeps per CUDA context: the pool of pinned
// bounce buffers, idle streams and idle events. Every method that calls the
// device must run with the context current (pushed) on the calling thread.
//
// The pool never blocks a task for want of a buffer while buffers are held
// by running tasks: it allocates instead, so tasks cannot deadlock on it.
// Its size is bounded all the same, because at most (pool limit x levels)
// tasks run at once and each holds at most ringDepth buffers. A buffer that
// comes back with its last copy still in flight is "fenced" by its event;
// the next get reuses it once cuEventQuery says the copy is done, and only
// waits on it (counted as an event wait) when the pool is at its soft cap.
type ctxState struct {
	m   *Mover
	ctx Context

	mu      sync.Mutex
	size    int       // size of the buffers handed out now (the bounce size)
	free    []*bounce // ready for use
	fenced  []*bounce // oldest first; their last copy may still run
	total   int       // buffers alive: free + fenced + held by tasks
	streams []Stream  // idle streams
	events  []Event   // idle events (for ordering after a caller's stream)
}

const (
	maxIdleStreams = 64
	maxIdleEvents  = 64
)

// getBuffer returns a buffer of size bytes that no copy uses.
func (cs *ctxState) getBuffer(size int) (*bounce, error) {
	dev, c := cs.m.dev, &cs.m.c
	var drop []*bounce
	defer func() { cs.destroy(drop) }()

	cs.mu.Lock()
	if size != cs.size {
		cs.size = size // buffers of other sizes are freed as they are met
	}
	for len(cs.free) > 0 {
		b := cs.free[len(cs.free)-1]
		cs.free[len(cs.free)-1] = nil
		cs.free = cs.free[:len(cs.free)-1]
		c.pinnedIdle.Add(-1)
		if len(b.b) != size {
			drop = append(drop, b)
			continue
		}
		cs.mu.Unlock()
		return b, nil
	}
	// Reclaim a fenced buffer whose last copy has finished.
	var got *bounce
	kept := cs.fenced[:0]
	for _, b := range cs.fenced {
		if got != nil {
			kept = append(kept, b)
			continue
		}
		done, err := dev.EventQuery(b.ev)
		switch {
		case err != nil:
			c.pinnedIdle.Add(-1)
			drop = append(drop, b)
		case !done:
			kept = append(kept, b)
		case len(b.b) != size:
			c.pinnedIdle.Add(-1)
			b.pending = false
			drop = append(drop, b)
		default:
			c.pinnedIdle.Add(-1)
			b.pending = false
			got = b
		}
	}
	clear(cs.fenced[len(kept):])
	cs.fenced = kept
	if got != nil {
		cs.mu.Unlock()
		return got, nil
	}
	if cs.total-len(drop) >= cs.m.softCap() && len(cs.fenced) > 0 {
		// At the cap: wait for the oldest fenced buffer instead of growing.
		b := cs.fenced[0]
		cs.fenced[0] = nil
		cs.fenced = cs.fenced[1:]
		c.pinnedIdle.Add(-1)
		cs.mu.Unlock()
		c.eventWaits.Add(1)
		err := dev.EventSynchronize(b.ev)
		b.pending, b.broken = false, err != nil
		if err == nil && len(b.b) == size {
			return b, nil
		}
		drop = append(drop, b)
		cs.mu.Lock()
	}
	cs.total++ // reserve, allocate outside the lock (cuMemHostAlloc is slow)
	cs.mu.Unlock()
	b, err := cs.alloc(size)
	if err != nil {
		cs.mu.Lock()
		cs.total--
		cs.mu.Unlock()
		return nil, err
	}
	return b, nil
}

func (cs *ctxState) alloc(size int) (*bounce, error) {
	dev := cs.m.dev
	p, err := dev.HostAlloc(size)
	if err != nil {
		return nil, deviceErr(err, "allocating a %d-byte pinned bounce buffer (cuMemHostAlloc)", size)
	}
	ev, err := dev.EventCreate()
	if err != nil {
		_ = dev.HostFree(p)
		return nil, deviceErr(err, "creating an event (cuEventCreate)")
	}
	cs.m.c.pinned.Add(1)
	cs.m.c.pinnedBytes.Add(int64(size))
	return &bounce{b: p, ev: ev}, nil
}

// putBuffer returns b to the pool. synced says the request's stream was
// synchronised after b's last copy, so b is idle; otherwise a pending b is
// fenced by its event.
func (cs *ctxState) putBuffer(b *bounce, synced bool) {
	if synced {
		b.pending, b.broken = false, false
	}
	cs.mu.Lock()
	switch {
	case b.broken || len(b.b) != cs.size:
		cs.mu.Unlock()
		cs.destroy([]*bounce{b})
		return
	case b.pending:
		cs.fenced = append(cs.fenced, b)
	default:
		cs.free = append(cs.free, b)
	}
	cs.m.c.pinnedIdle.Add(1)
	cs.mu.Unlock()
}

// destroy frees buffers that are no longer in any list.
func (cs *ctxState) destroy(bs []*bounce) {
	if len(bs) == 0 {
		return
	}
	dev, c := cs.m.dev, &cs.m.c
	for _, b := range bs {
		if b.pending && !b.broken {
			c.eventWaits.Add(1)
			_ = dev.EventSynchronize(b.ev)
		}
		_ = dev.EventDestroy(b.ev)
		_ = dev.HostFree(b.b)
		c.pinned.Add(-1)
		c.pinnedBytes.Add(-int64(len(b.b)))
	}
	cs.mu.Lock()
	cs.total -= len(bs)
	cs.mu.Unlock()
}

func (cs *ctxState) getStream() (Stream, error) {
	cs.mu.Lock()
	if n := len(cs.streams); n > 0 {
		s := cs.streams[n-1]
		cs.streams = cs.streams[:n-1]
		cs.mu.Unlock()
		return s, nil
	}
	cs.mu.Unlock()
	s, err := cs.m.dev.StreamCreate()
	if err != nil {
		return 0, deviceErr(err, "creating a stream (cuStreamCreate)")
	}
	return s, nil
}

// putStream takes back an idle stream (synchronised, no work queued).
func (cs *ctxState) putStream(s Stream) {
	cs.mu.Lock()
	if len(cs.streams) < maxIdleStreams {
		cs.streams = append(cs.streams, s)
		cs.mu.Unlock()
		return
	}
	cs.mu.Unlock()
	_ = cs.m.dev.StreamDestroy(s)
}

func (cs *ctxState) getEvent() (Event, error) {
	cs.mu.Lock()
	if n := len(cs.events); n > 0 {
		e := cs.events[n-1]
		cs.events = cs.events[:n-1]
		cs.mu.Unlock()
		return e, nil
	}
	cs.mu.Unlock()
	e, err := cs.m.dev.EventCreate()
	if err != nil {
		return 0, deviceErr(err, "creating an event (cuEventCreate)")
	}
	return e, nil
}

// putEvent takes back an event. An event whose record a stream waits on can
// be recorded again at once: cuStreamWaitEvent uses the record made before
// it was called.
func (cs *ctxState) putEvent(e Event) {
	cs.mu.Lock()
	if len(cs.events) < maxIdleEvents {
		cs.events = append(cs.events, e)
		cs.mu.Unlock()
		return
	}
	cs.mu.Unlock()
	_ = cs.m.dev.EventDestroy(e)
}

// releaseIdle frees every idle buffer (waiting for fenced ones), stream and
// event. Buffers held by running requests are not touched.
func (cs *ctxState) releaseIdle() {
	cs.mu.Lock()
	bs := append(cs.free, cs.fenced...)
	cs.m.c.pinnedIdle.Add(-int64(len(bs)))
	cs.free, cs.fenced = nil, nil
	ss, es := cs.streams, cs.events
	cs.streams, cs.events = nil, nil
	cs.mu.Unlock()
	cs.destroy(bs)
	for _, s := range ss {
		_ = cs.m.dev.StreamDestroy(s)
	}
	for _, e := range es {
		_ = cs.m.dev.EventDestroy(e)
	}
}
