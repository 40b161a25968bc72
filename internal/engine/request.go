package engine

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// Append, as a write offset, asks the sink for the next append offset.
const Append int64 = -1

// ioFunc moves bytes between p and a source or sink at off.
type ioFunc func(ctx context.Context, p []byte, off int64) (int, error)

// request is one read or write being run.
type request struct {
	io       ioFunc
	p        []byte
	off      int64
	f        *future.Future
	users    *users
	isRead   bool
	end      int64 // reads: the source's size when the read was planned
	onClosed bool  // fail parts that start after Close
	sink     *Sink
	serial   *serial          // non-nil for sources and sinks that take one call at a time
	net      *pool.Pool       // non-nil for sources with latency: runs the parts instead of e.pool
	durable  sink.Durable     // non-nil for sinks whose writes become durable later (durable.go)
	ext      source.Offloader // non-nil for sources whose parts outside workers run (offload.go)
	one      *offloaded       // non-nil: f and the one part, made with r (newQueuedRead)
}

func checkRange(off int64, n int, what string) error {
	if off < 0 {
		return errs.New(errs.Invalid, "colio: negative %s offset %d", what, off)
	}
	if int64(n) > math.MaxInt64-off {
		return errs.New(errs.Invalid, "colio: %s of %d bytes at offset %d overflows a 64-bit offset", what, n, off)
	}
	return nil
}

// split returns how many parts a request of n bytes becomes: one when it
// runs inline, else one per task_size bytes.
func split(n, taskSize int64, inline bool) int64 {
	if inline || n == 0 {
		return 1
	}
	return (n + taskSize - 1) / taskSize
}

// submit runs r inline or queues its parts, and returns its future. The
// caller has already acquired one use of the handle per part.
func (e *Engine) submit(ctx context.Context, r *request, inline bool, ts int64) *future.Future {
	e.c.opsSubmitted.Add(1)
	n := int64(len(r.p))
	if inline {
		e.c.opsInline.Add(1)
		r.f = e.future(r, 1)
		r.f.SetOffset(r.off)
		e.runPart(ctx, r, 0, n)
		return r.f
	}
	parts := int(split(n, ts, false))
	r.f = e.future(r, parts)
	r.f.SetOffset(r.off)
	e.c.tasks.Add(int64(parts))
	if e.startAtWait.Load() {
		r.f.SetDeferredStart(func() { e.startParts(ctx, r, parts, ts) })
	} else {
		e.startParts(ctx, r, parts, ts)
	}
	return r.f
}

// future makes r's future, or readies the one made with r.
func (e *Engine) future(r *request, parts int) *future.Future {
	if r.f == nil {
		return future.New(e.notifier, parts)
	}
	r.f.Init(e.notifier, parts)
	return r.f
}

// startParts queues r's parts where its source's parts run. The task
// closures are made only for the engine's own pools: a queued source's
// parts are objects of their own (offload.go).
func (e *Engine) startParts(ctx context.Context, r *request, parts int, ts int64) {
	if r.ext != nil {
		e.offload(ctx, r, parts, ts)
		return
	}
	n := int64(len(r.p))
	for i := 0; i < parts; i++ {
		a := int64(i) * ts
		b := min(a+ts, n)
		task := func(wctx context.Context) { e.runPart(wctx, r, a, b) }
		var err error
		switch {
		case r.net != nil:
			// Level 0 of the source's own pool whatever the
			// caller's level: remote parts never re-enter colio,
			// so nothing queued there can wait on what is behind
			// it.
			err = r.net.Submit(context.Background(), task)
		case r.serial != nil:
			err = r.serial.submit(e.pool, ctx, task)
		default:
			err = e.pool.Submit(ctx, task)
		}
		if err != nil {
			// Too deep a nesting: fail the part here.
			r.users.release()
			r.f.Begin()
			r.f.PartDoneAt(0, errs.New(errs.Invalid, "%v", err), r.off+a)
		}
	}
}

// runPart moves bytes [a, b) of r. It never blocks on other parts: the part
// that reports last completes the future.
func (e *Engine) runPart(ctx context.Context, r *request, a, b int64) {
	defer r.users.release()
	if r.durable != nil {
		e.runDurable(ctx, r, a, b)
		return
	}
	at := r.off + a
	if !r.f.Begin() {
		r.f.PartDoneAt(0, errs.New(errs.Cancelled, "colio: operation cancelled before this part started"), at)
		return
	}
	if r.onClosed && r.users.closed.Load() {
		r.f.PartDoneAt(0, errs.New(errs.Closed, "colio: source closed before this part started"), at)
		return
	}
	e.c.enter()
	n, err := e.safeIO(ctx, r, a, b)
	e.c.leave()
	if r.isRead {
		e.c.bytesRead.Add(int64(n))
		// A read was cut to the source's size when it was planned, so
		// every part is owed all its bytes: fewer is the source ending
		// early, in whichever part, and never a silent short read.
		if err == nil && int64(n) < b-a {
			err = shortRead(r.off, int64(len(r.p)), at+int64(n), r.end)
		}
	} else {
		e.c.bytesWritten.Add(int64(n))
	}
	if err != nil {
		if errs.KindOf(err) != errs.Cancelled {
			e.c.errors.Add(1)
		}
		if r.sink != nil {
			r.sink.setErr(err)
		}
	}
	r.f.PartDoneAt(int64(n), err, at)
}

// shortRead is the error of a read of n bytes at off whose source stopped
// at stop, before its size end. It names the whole request, so the message
// is the same however the read was split (the part at the lowest offset
// reports it: see future.PartDoneAt).
func shortRead(off, n, stop, end int64) error {
	return errs.New(errs.IO, "colio: read of %d bytes at offset %d got %d: the source stopped at offset %d, before its end at %d "+
		"(fewer bytes than asked are allowed only at the end of the source; did it shrink during the read?)",
		n, off, stop-off, stop, end)
}

// safeIO turns a panic in a source, sink or callback into the part's error,
// so a bug fails only the request it belongs to.
func (e *Engine) safeIO(ctx context.Context, r *request, a, b int64) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, &errs.Error{Kind: errs.Internal,
				Msg: fmt.Sprintf("colio: panic during I/O at offset %d: %v\n%s", r.off+a, p, debug.Stack())}
		}
	}()
	return r.io(ctx, r.p[a:b], r.off+a)
}

// levelCtx makes a nil ctx usable.
func levelCtx(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
