package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/sink"
)

// Sink is a sink opened through the engine. It hands out append offsets,
// keeps the first write error (sticky: every later Flush and Close returns
// it), and makes Close safe while writes run.
//
// Close refuses new writes and lets every accepted one finish, queued ones
// included, like closing a buffered file writes out its buffer.
type Sink struct {
	snk    sink.Sink
	traits sink.Traits
	users  users
	serial *serial
	// next is the append reservation: nextOwn, or memory shared with C
	// (ShareNext), where the C API's fast path reserves appends too.
	next    *atomic.Int64
	nextOwn atomic.Int64

	errMu sync.Mutex
	err   error
}

// NewSink wraps s. The engine owns it from now on and closes it.
func NewSink(s sink.Sink) *Sink {
	k := &Sink{snk: s, traits: s.Traits()}
	k.next = &k.nextOwn
	k.next.Store(s.AppendStart())
	if !k.traits.Concurrent {
		k.serial = &serial{}
	}
	return k
}

// ShareNext moves the append reservation to p (memory outside Go's heap
// that another writer updates atomically too), carrying over where it
// stands. It must be called before the sink is shared.
func (k *Sink) ShareNext(p *atomic.Int64) {
	p.Store(k.next.Load())
	k.next = p
}

// Underlying returns the wrapped sink.
func (k *Sink) Underlying() sink.Sink { return k.snk }

// Traits returns the sink's traits.
func (k *Sink) Traits() sink.Traits { return k.traits }

// NextAppend is the offset the next append will get.
func (k *Sink) NextAppend() int64 { return k.next.Load() }

// ReserveAppend hands out the next n bytes of the append position and
// returns their offset, as an append write does at submission: appends
// from any mix of callers land in call order.
func (k *Sink) ReserveAppend(n int64) int64 { return k.next.Add(n) - n }

// Acquire registers a use of the sink that Flush and Close wait for, as an
// accepted write does: a caller that writes in several steps (the device
// pipeline writes a request chunk by chunk) holds the sink across them
// with WriteHeld, so Close lets every step finish. It returns a Closed
// error once Close has begun. Every successful Acquire needs one Release.
func (k *Sink) Acquire() error { return k.users.acquire(1, "sink") }

// Release ends a use registered by Acquire.
func (k *Sink) Release() { k.users.release() }

func (k *Sink) setErr(err error) {
	if err == nil || errs.KindOf(err) == errs.Cancelled {
		return
	}
	k.errMu.Lock()
	if k.err == nil {
		k.err = err
	}
	k.errMu.Unlock()
}

// Err returns the sticky write error, if any.
func (k *Sink) Err() error {
	k.errMu.Lock()
	defer k.errMu.Unlock()
	return k.err
}

// Flush waits for the writes in flight, then flushes the sink (fsync if
// asked). It returns the sticky write error first, if there is one.
func (k *Sink) Flush(ctx context.Context, fsync bool) error {
	if err := k.users.acquire(1, "sink"); err != nil {
		return err
	}
	k.users.release()
	k.users.waitIdle(false)
	if err := k.Err(); err != nil {
		return err
	}
	err := k.snk.Flush(ctx, fsync)
	k.setErr(err)
	return err
}

// Close waits for every accepted write, flushes, and closes the sink. It
// returns the sticky write error if there is one. Closing twice returns
// the sticky error again, or nil.
func (k *Sink) Close() error {
	if !k.users.waitIdle(true) {
		return k.Err()
	}
	if err := k.snk.Flush(context.Background(), false); err != nil {
		k.setErr(err)
	}
	cerr := k.snk.Close()
	if err := k.Err(); err != nil {
		return err
	}
	return cerr
}
