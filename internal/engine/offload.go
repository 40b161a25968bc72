package engine

import (
	"context"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/workq"
)

// offloaded is part [a, b) of r as a job for an Offloader's outside
// workers: runPart cut in two, the start when a worker takes it (so a part
// no worker has taken is still cancellable, and one taken after Close
// fails with Closed) and the end when the worker hands the result back.
// The part holds no pool slot while it is queued or running. It is its
// own workq.Part, and a request's parts are one allocation: a callback
// source's small reads made four (the job and three closures) per part.
type offloaded struct {
	job workq.Job // its Off and Buf are the part's place in r
	e   *Engine
	r   *request
}

// queuedRead is a read of one part of a queued source (a callback
// source's usual read) in one allocation: its request, future and part.
type queuedRead struct {
	r    request
	f    future.Future
	part offloaded
}

// newRequest returns a zero request for a read of src in parts parts,
// with its future and part made with it when it is one queued part.
func newRequest(src *Source, parts int64) *request {
	if src.ext == nil || parts != 1 {
		return &request{}
	}
	q := &queuedRead{}
	q.r.f, q.r.one = &q.f, &q.part
	return &q.r
}

// offload queues r's parts, split at ts, with r's source.
func (e *Engine) offload(ctx context.Context, r *request, parts int, ts int64) {
	level := pool.LevelOf(ctx)
	if r.one != nil && parts == 1 {
		e.queue(r, r.one, 0, ts, level)
		return
	}
	ps := make([]offloaded, parts)
	for i := range ps {
		e.queue(r, &ps[i], int64(i)*ts, ts, level)
	}
}

// queue fills in p as the part of r at a and hands it to r's source.
func (e *Engine) queue(r *request, p *offloaded, a, ts int64, level int) {
	p.e, p.r = e, r
	p.job.Buf, p.job.Off, p.job.Level, p.job.Part = r.p[a:min(a+ts, int64(len(r.p)))], r.off+a, level, p
	r.ext.Offload(&p.job)
}

func (p *offloaded) Begin() bool {
	r, at := p.r, p.job.Off
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
	p.e.c.enter()
	return true
}

func (p *offloaded) Finish(n int, err error) {
	e, r, at, want := p.e, p.r, p.job.Off, int64(len(p.job.Buf))
	defer r.users.release()
	e.c.leave()
	if err == nil && (n < 0 || int64(n) > want) {
		err = errs.New(errs.CallbackFailed, "colio: read callback returned %d for a request of %d bytes at offset %d", n, want, at)
		n = 0
	}
	e.c.bytesRead.Add(int64(n))
	if err == nil && int64(n) < want {
		err = shortRead(r.off, int64(len(r.p)), at+int64(n), r.end)
	}
	if err != nil && errs.KindOf(err) != errs.Cancelled {
		e.c.errors.Add(1)
	}
	r.f.PartDoneAt(int64(n), err, at)
}

func (p *offloaded) Fail(err error) {
	r := p.r
	defer r.users.release()
	r.f.Begin()
	r.f.PartDoneAt(0, err, p.job.Off)
}
