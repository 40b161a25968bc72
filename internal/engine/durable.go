package engine

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/colio-dev/colio/internal/errs"
)

// runDurable is runPart for a sink.Durable: the part is copied into the
// sink here, on the I/O slot, and the future's part completes when the sink
// says the bytes are durable, so a slot never waits for an upload or for
// the writes that complete its part. A part cancelled before it ran leaves
// a hole the object must not be published with, so it aborts the sink.
func (e *Engine) runDurable(ctx context.Context, r *request, a, b int64) {
	at := r.off + a
	if !r.f.Begin() {
		err := errs.New(errs.Cancelled, "colio: operation cancelled before this part started")
		r.durable.Abort(errs.New(errs.Cancelled, "colio: a write was cancelled before it ran, so the upload was aborted"))
		r.f.PartDoneAt(0, err, at)
		return
	}
	fail := func(err error) {
		if errs.KindOf(err) != errs.Cancelled {
			e.c.errors.Add(1)
		}
		r.sink.setErr(err)
	}
	e.c.enter()
	n, err := e.safeDurable(ctx, r, a, b, func(err error) {
		if err != nil {
			fail(err)
			r.f.PartDoneAt(0, err, at)
			return
		}
		r.f.PartDoneAt(b-a, nil, at)
	})
	e.c.leave()
	e.c.bytesWritten.Add(int64(n))
	if err != nil {
		fail(err)
		r.f.PartDoneAt(int64(n), err, at)
	}
}

func (e *Engine) safeDurable(ctx context.Context, r *request, a, b int64, done func(error)) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, &errs.Error{Kind: errs.Internal,
				Msg: fmt.Sprintf("colio: panic during I/O at offset %d: %v\n%s", r.off+a, p, debug.Stack())}
			r.durable.Abort(err)
		}
	}()
	return r.durable.WriteAtDurable(ctx, r.p[a:b], r.off+a, done)
}
