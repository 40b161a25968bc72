package engine

import (
	"context"

	"github.com/colio-dev/colio/internal/errs"
)

// WriteAtPlaced is WriteAt that also says where the bytes went (an
// append's reserved offset), so that a binding can serve a small
// asynchronous append with one synchronous call (issue 15.3).
func (e *Engine) WriteAtPlaced(ctx context.Context, snk *Sink, p []byte, off int64) (n, at int64, err error) {
	ctx = levelCtx(ctx)
	if snk == nil {
		return 0, 0, errs.New(errs.Invalid, "colio: nil sink")
	}
	if off != Append {
		if err := checkRange(off, len(p), "write"); err != nil {
			return 0, 0, err
		}
	}
	if !snk.traits.Fast || int64(len(p)) > e.cfg.Load().SmallWriteThreshold || e.startAtWait.Load() || len(p) == 0 {
		f, err := e.Write(ctx, snk, p, off)
		if err != nil {
			return 0, 0, err
		}
		n, err := f.WaitTimeout(-1)
		return n, f.Offset(), err
	}
	if err := snk.users.acquire(1, "sink"); err != nil {
		return 0, 0, err
	}
	defer snk.users.release()
	if off == Append {
		k := int64(len(p))
		off = snk.next.Add(k) - k
		if err := checkRange(off, len(p), "append"); err != nil {
			return 0, 0, err
		}
	}
	got, err := e.inline(ctx, snk.snk.WriteAt, p, off)
	e.c.bytesWritten.Add(int64(got))
	snk.setErr(err)
	return int64(got), off, err
}
