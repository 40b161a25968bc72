package engine

import (
	"context"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/workq"
)

// job is part [a, b) of r as a job for an Offloader's outside workers:
// runPart cut in two, the start when a worker takes it (so a part no
// worker has taken is still cancellable, and one taken after Close fails
// with Closed) and the end when the worker hands the result back. The
// part holds no pool slot while it is queued or running.
func (e *Engine) job(ctx context.Context, r *request, a, b int64) *workq.Job {
	at := r.off + a
	return &workq.Job{
		Buf:   r.p[a:b],
		Off:   at,
		Level: pool.LevelOf(ctx),
		Begin: func() bool {
			if !r.f.Begin() {
				r.f.PartDoneAt(0, errs.New(errs.Cancelled, "colio: operation cancelled before this part started"), at)
				r.users.release()
				return false
			}
			if r.onClosed && r.users.closed.Load() {
				r.f.PartDoneAt(0, errs.New(errs.Closed, "colio: source closed before this part started"), at)
				r.users.release()
				return false
			}
			e.c.enter()
			return true
		},
		Finish: func(n int, err error) {
			defer r.users.release()
			e.c.leave()
			if err == nil && (n < 0 || int64(n) > b-a) {
				err = errs.New(errs.CallbackFailed, "colio: read callback returned %d for a request of %d bytes at offset %d", n, b-a, at)
				n = 0
			}
			e.c.bytesRead.Add(int64(n))
			if err == nil && int64(n) < b-a {
				err = shortRead(r.off, int64(len(r.p)), at+int64(n), r.end)
			}
			if err != nil && errs.KindOf(err) != errs.Cancelled {
				e.c.errors.Add(1)
			}
			r.f.PartDoneAt(int64(n), err, at)
		},
		Fail: func(err error) {
			defer r.users.release()
			r.f.Begin()
			r.f.PartDoneAt(0, err, at)
		},
	}
}
