// Package future is colio's completion handle for one request.
//
// A request is split into parts (tasks). Each part reports its own result;
// the future completes when the last part does, on whichever goroutine ran
// that part, so no worker ever blocks waiting for its siblings. Futures are
// eager: the engine submits the parts before it returns the future, and
// Wait only waits. The one exception is the deferred mode used as a
// benchmark baseline, where the start function runs on the first Wait.
package future

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/notify"
)

// Future is the result of one read or write.
//
// A future costs one allocation: a callback source's small reads make one
// per part, and each allocation more made Go's collector run sooner. So
// the done channel is made only when a waiter needs one (most futures are
// collected done, their owner told by a note or a hook), the inline hook
// is a field under mu instead of an atomic pointer to a closure, and the
// benchmark-only deferred start sits behind a pointer.
type Future struct {
	notifier *notify.Notifier

	pending atomic.Int64 // parts that have not reported
	n       atomic.Int64 // bytes moved so far
	offset  int64        // where a write was placed (appends reserve it)

	mu        sync.Mutex
	done      chan struct{} // made on first need (Chan, a blocking wait), closed on completion
	err       error
	errAt     int64     // offset of the part that reported err
	unstarted int64     // parts not yet begun, guarded by mu
	callbacks *callback // OnDone's, in the order registered
	hook      Hook      // see OnCompleteInline; fired and cleared by complete
	deferred  *started  // deferred mode only
	isDone    atomic.Bool
	cancelled bool
}

// Hook is run by the goroutine that completes a future (OnCompleteInline).
// An owner that already has an object per future implements it, so that
// registering costs no closure.
type Hook interface{ FutureDone(f *Future) }

// HookFunc is a function as a Hook.
type HookFunc func(*Future)

func (h HookFunc) FutureDone(f *Future) { h(f) }

// callback is one OnDone callback: a list, not a slice, keeps the future
// 16 bytes smaller (one size class down) and costs the one allocation per
// callback that a slice's first append did.
type callback struct {
	cb   func(*Future)
	next *callback
}

// started is the deferred mode's start, run by the first Wait.
type started struct {
	once  sync.Once
	start func()
}

// closed is the channel Chan returns for a future that completed before
// anyone asked for its channel.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// New returns a future that completes after parts calls to PartDone. A
// future with zero parts is complete at once.
func New(n *notify.Notifier, parts int) *Future {
	f := &Future{}
	f.Init(n, parts)
	return f
}

// Init is New for a zero Future that is part of a larger object (the
// engine's queued reads), so that it costs no allocation of its own. It is
// called once, before the future is shared.
func (f *Future) Init(n *notify.Notifier, parts int) {
	f.notifier, f.unstarted = n, int64(parts)
	f.pending.Store(int64(parts))
	if parts == 0 {
		f.complete()
	}
}

// Completed returns a future that is already done with the given result.
func Completed(n *notify.Notifier, bytes int64, err error) *Future {
	f := &Future{notifier: n}
	f.n.Store(bytes)
	f.err = err
	f.complete()
	return f
}

// SetDeferredStart makes the future start its work only on the first Wait.
// It exists for the start-at-wait baseline in benchmarks.
func (f *Future) SetDeferredStart(start func()) { f.deferred = &started{start: start} }

// SetOffset records where a write was placed.
func (f *Future) SetOffset(off int64) { f.offset = off }

// Offset returns the offset recorded by SetOffset (a write's position).
func (f *Future) Offset() int64 { return f.offset }

// Begin is called by a part before it touches any data. It returns false
// if the future was cancelled; the part must then report ErrCancelled.
func (f *Future) Begin() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancelled {
		return false
	}
	f.unstarted--
	return true
}

// PartDone reports one part's result. Errors other than cancellation take
// precedence, and the first such error wins.
func (f *Future) PartDone(n int64, err error) { f.PartDoneAt(n, err, math.MaxInt64) }

// PartDoneAt is PartDone for the part that starts at offset at: of two
// errors that rank alike, the one at the lower offset wins, so a request
// split into parallel parts fails as a serial one would, with its first
// failure, whichever part happened to report first.
func (f *Future) PartDoneAt(n int64, err error, at int64) {
	if n > 0 {
		f.n.Add(n)
	}
	if err != nil {
		f.mu.Lock()
		if f.err == nil || outranks(err, at, f.err, f.errAt) {
			f.err, f.errAt = err, at
		}
		f.mu.Unlock()
	}
	if f.pending.Add(-1) == 0 {
		f.complete()
	}
}

// outranks says whether err (at offset at) should replace old (at oldAt).
func outranks(err error, at int64, old error, oldAt int64) bool {
	cancelled, oldCancelled := errs.KindOf(err) == errs.Cancelled, errs.KindOf(old) == errs.Cancelled
	if cancelled != oldCancelled {
		return oldCancelled
	}
	return at < oldAt
}

func (f *Future) complete() {
	f.mu.Lock()
	f.isDone.Store(true)
	cbs, hook, ch := f.callbacks, f.hook, f.done
	f.callbacks, f.hook = nil, nil
	f.mu.Unlock()
	if ch != nil {
		close(ch)
	}
	if hook != nil {
		hook.FutureDone(f)
	}
	for c := cbs; c != nil; c = c.next {
		f.post(c.cb)
	}
}

// OnCompleteInline registers cb to run once, on the goroutine that
// completes the future (a worker, or the caller for an inline read), or
// here if it already has. Unlike OnDone it skips the notifier: batched
// completions (capi's completion queues) must not wait behind a user's
// completion callback that blocks the notifier. cb must be short and must
// not block. One per future.
func (f *Future) OnCompleteInline(cb func(*Future)) { f.OnCompleteHook(HookFunc(cb)) }

// OnCompleteHook is OnCompleteInline for a Hook. complete and this both
// look at isDone under mu, so exactly one of them runs h.
func (f *Future) OnCompleteHook(h Hook) {
	f.mu.Lock()
	if !f.isDone.Load() {
		f.hook = h
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	h.FutureDone(f)
}

func (f *Future) post(cb func(*Future)) {
	if f.notifier == nil {
		cb(f)
		return
	}
	f.notifier.Post(func() { cb(f) })
}

// Cancel stops the parts that have not started. It returns true if at least
// one part will not run; the future then completes with ErrCancelled once
// the parts already running finish. Bytes of finished parts stay counted.
func (f *Future) Cancel() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isDone.Load() || f.unstarted <= 0 {
		return false
	}
	f.cancelled = true
	return true
}

// Done reports whether every part has finished. It never reports a deferred
// future that has not been waited on as done.
func (f *Future) Done() bool { return f.isDone.Load() }

// Chan returns a channel closed when the future completes. It does not
// start a deferred future.
func (f *Future) Chan() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == nil {
		if f.isDone.Load() {
			return closed
		}
		f.done = make(chan struct{})
	}
	return f.done
}

// Err returns the future's error, or nil if it succeeded or is not done.
func (f *Future) Err() error {
	if !f.isDone.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// N returns the bytes moved. It is final once the future is done.
func (f *Future) N() int64 { return f.n.Load() }

func (f *Future) kick() {
	if d := f.deferred; d != nil {
		d.once.Do(d.start)
	}
}

// Wait blocks until the future completes or ctx ends. A ctx that ends first
// returns ErrTimeout (deadline) or ErrCancelled (cancel) and leaves the
// future running.
func (f *Future) Wait(ctx context.Context) (int64, error) {
	f.kick()
	if f.isDone.Load() {
		return f.N(), f.Err()
	}
	select {
	case <-f.Chan():
		return f.N(), f.Err()
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return f.N(), errs.New(errs.Timeout, "colio: wait timed out before the operation completed")
		}
		return f.N(), errs.Wrap(errs.Cancelled, ctx.Err(), "colio: wait abandoned")
	}
}

// WaitTimeout waits at most d; d < 0 waits forever.
func (f *Future) WaitTimeout(d time.Duration) (int64, error) {
	f.kick()
	if f.isDone.Load() {
		return f.N(), f.Err()
	}
	if d < 0 {
		<-f.Chan()
		return f.N(), f.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.Chan():
		return f.N(), f.Err()
	case <-t.C:
		return f.N(), errs.New(errs.Timeout, "colio: wait timed out after %v before the operation completed", d)
	}
}

// OnDone registers cb to run once, on the notifier goroutine, after the
// future completes (at once if it already has).
func (f *Future) OnDone(cb func(*Future)) {
	f.mu.Lock()
	if !f.isDone.Load() {
		last := &f.callbacks
		for *last != nil {
			last = &(*last).next
		}
		*last = &callback{cb: cb}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.post(cb)
}
