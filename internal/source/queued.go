package source

import (
	"context"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/workq"
)

// Offloader is a source whose parts the engine does not run itself: it
// hands each one to Offload, and workers outside the engine run it.
type Offloader interface {
	Offload(j *workq.Job)
}

// Queued is a source whose reads are run by outside workers that take them
// from a work queue (Python threads running a Python callable). The engine
// offloads its parts; ReadAt, for the paths that call the source directly
// (coalesced spans), queues the read and waits for it.
type Queued struct {
	owner *workq.Owner
	size  int64
}

// NewQueued joins q with ctx, the value handed to the workers with each
// job. serial makes the queue give out one job of this source at a time.
func NewQueued(q *workq.Queue, ctx uintptr, size int64, serial bool) *Queued {
	return &Queued{owner: q.Join(ctx, serial), size: size}
}

func (s *Queued) Offload(j *workq.Job) { s.owner.Push(j) }

func (s *Queued) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	type result struct {
		n   int
		err error
	}
	ch := make(chan result, 1)
	s.owner.Push(&workq.Job{
		Buf: p, Off: off, Level: pool.LevelOf(ctx),
		Part: &workq.PartFuncs{
			OnBegin:  func() bool { return true },
			OnFinish: func(n int, err error) { ch <- result{n, err} },
			OnFail:   func(err error) { ch <- result{0, err} },
		},
	})
	r := <-ch
	if r.err == nil && (r.n < 0 || r.n > len(p)) {
		return 0, errs.New(errs.CallbackFailed, "colio: read callback returned %d for a request of %d bytes", r.n, len(p))
	}
	return r.n, r.err
}

func (s *Queued) Size() (int64, error) { return s.size, nil }

// Traits: never fast (a Python callable has latency), concurrent as far as
// the engine knows (the queue serialises a serial source's jobs).
func (s *Queued) Traits() Traits { return Traits{Concurrent: true} }

// Abort fails the jobs no worker has taken (the engine calls it first on
// Close, then waits for the taken ones).
func (s *Queued) Abort() { s.owner.Abort() }

func (s *Queued) Close() error {
	s.owner.Leave()
	return nil
}
