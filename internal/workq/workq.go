// Package workq queues the parts of reads that workers outside the engine
// run: Python threads that take them through the C ABI (colio_work_take),
// run the user's Python callable and hand the result back
// (colio_work_done). Go never calls into Python for these, so there is no
// GIL convoy of Go threads entering the interpreter through ctypes.
//
// One queue serves the process. A job is given out only while fewer than
// Limit() jobs run, not counting those whose worker is blocked in a nested
// wait on colio (Blocked): a callback that reads through colio and waits
// frees its place, so another worker can run what it waits for and nesting
// never deadlocks, whatever the limit.
package workq

import (
	"sync"
	"time"

	"github.com/colio-dev/colio/internal/errs"
)

// Job is one part to run: fill Buf from Off.
type Job struct {
	Buf   []byte
	Off   int64
	Level int  // pool level for what the worker submits while running it
	Part  Part // the submitter's side of the job

	owner *Owner
	token uint64
}

// Part is what the submitter of a job does at its ends. An interface, not
// three closures: the engine's part is one object holding its job, so a
// queued part costs one allocation, not four.
type Part interface {
	// Begin is called when a worker takes the job; false means the part
	// has already ended (cancelled, source closed) and is dropped.
	Begin() bool
	// Finish reports the result of a job that began.
	Finish(n int, err error)
	// Fail ends a job that never began (its source was closed).
	Fail(err error)
}

// PartFuncs is a Part made of functions, for callers with no object of
// their own.
type PartFuncs struct {
	OnBegin  func() bool
	OnFinish func(n int, err error)
	OnFail   func(err error)
}

func (p *PartFuncs) Begin() bool             { return p.OnBegin() }
func (p *PartFuncs) Finish(n int, err error) { p.OnFinish(n, err) }
func (p *PartFuncs) Fail(err error)          { p.OnFail(err) }

// Owner is one source's membership of the queue. Jobs of a serial owner
// are given out one at a time, in order.
type Owner struct {
	q      *Queue
	Ctx    uintptr // the caller's value, handed to the worker with each job
	serial bool
	busy   bool
	closed bool
}

// Work is what a worker gets: the job's token and where to put the bytes.
type Work struct {
	Ctx   uintptr
	Buf   []byte
	Off   int64
	Level int
	Token uint64
	Out   int // jobs taken and not yet done, this one included
}

// Queue is the work queue.
type Queue struct {
	Limit func() int // jobs run at once, not counting blocked ones

	mu      sync.Mutex
	wake    chan struct{}   // closed and replaced on a change every taker must see
	waiters []chan struct{} // takers waiting for a job, woken one per job
	jobs    []*Job
	notes   []Note // ended operations for the workers' runtime (notes.go)
	taken   map[uint64]*Job
	next    uint64
	blocked int
	owners  int
	handing int // workers between handing a job back and their next Step (StepAfter)
	signals int // takers woken one by one, for tests
}

// New returns a queue that runs at most limit() jobs at once.
func New(limit func() int) *Queue {
	return &Queue{Limit: limit, wake: make(chan struct{}), taken: map[uint64]*Job{}}
}

func (q *Queue) changedLocked() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// signalLocked wakes one waiting taker: a new job needs one worker, and
// waking all of them (eight threads for each job on a 2-core machine)
// costs more than the job.
func (q *Queue) signalLocked() {
	if n := len(q.waiters); n > 0 {
		q.signals++
		w := q.waiters[n-1]
		q.waiters[n-1] = nil
		q.waiters = q.waiters[:n-1]
		w <- struct{}{} // never blocks: see park.go
	}
}

// Join registers a source. Workers may retire only while none is joined.
func (q *Queue) Join(ctx uintptr, serial bool) *Owner {
	q.mu.Lock()
	q.owners++
	q.changedLocked()
	q.mu.Unlock()
	return &Owner{q: q, Ctx: ctx, serial: serial}
}

// Owners is the number of sources joined.
func (q *Queue) Owners() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.owners
}

// Push queues j for o.
func (o *Owner) Push(j *Job) {
	q := o.q
	q.mu.Lock()
	if o.closed {
		q.mu.Unlock()
		j.Part.Fail(errs.New(errs.Closed, "colio: source closed before this part started"))
		return
	}
	j.owner = o
	q.jobs = append(q.jobs, j)
	// A taker woken while every place is taken finds nothing it may take
	// and sleeps again: 200 reads woke the spare threads 200 times. The
	// place's end signals instead (end).
	if q.roomLocked() {
		q.signalLocked()
	}
	q.mu.Unlock()
}

// Abort fails o's jobs that no worker has taken with a Closed error; the
// taken ones run to their end.
func (o *Owner) Abort() {
	q := o.q
	q.mu.Lock()
	o.closed = true
	var drop []*Job
	keep := q.jobs[:0]
	for _, j := range q.jobs {
		if j.owner == o {
			drop = append(drop, j)
		} else {
			keep = append(keep, j)
		}
	}
	for i := len(keep); i < len(q.jobs); i++ {
		q.jobs[i] = nil
	}
	q.jobs = keep
	q.mu.Unlock()
	for _, j := range drop {
		j.Part.Fail(errs.New(errs.Closed, "colio: source closed before this part started"))
	}
}

// Leave ends o's membership (after Abort and after its jobs have ended).
func (o *Owner) Leave() {
	q := o.q
	q.mu.Lock()
	o.closed = true
	q.owners--
	q.changedLocked()
	q.mu.Unlock()
}

// ErrNoSources is Take's answer when no source is joined: the worker may
// retire.
var ErrNoSources = errs.New(errs.Closed, "colio: no source has work for the workers")

// ErrTimeout is Take's answer when nothing came within the timeout.
var ErrTimeout = errs.New(errs.Timeout, "colio: no work within the timeout")

// Take waits up to timeout (negative: forever) for a job, begins it and
// returns it.
func (q *Queue) Take(timeout time.Duration) (Work, error) {
	var dl deadline
	defer dl.stop()
	for {
		q.mu.Lock()
		if j := q.popLocked(); j != nil {
			out := len(q.taken)
			q.mu.Unlock()
			if !j.Part.Begin() {
				q.end(j, false)
				continue
			}
			return Work{Ctx: j.owner.Ctx, Buf: j.Buf, Off: j.Off, Level: j.Level, Token: j.token, Out: out}, nil
		}
		if q.owners == 0 && len(q.taken) == 0 {
			q.mu.Unlock()
			return Work{}, ErrNoSources
		}
		if timeout == 0 {
			q.mu.Unlock()
			return Work{}, ErrTimeout
		}
		if q.park(timeout, &dl) {
			return Work{}, ErrTimeout
		}
	}
}

// roomLocked says whether a job may be given out now.
func (q *Queue) roomLocked() bool { return len(q.taken)-q.blocked < max(q.Limit(), 1) }

// eligibleLocked says whether popLocked would give out a job now.
func (q *Queue) eligibleLocked() bool {
	if !q.roomLocked() {
		return false
	}
	for _, j := range q.jobs {
		if !j.owner.serial || !j.owner.busy {
			return true
		}
	}
	return false
}

// popLocked removes the first job that may run now and marks it taken.
func (q *Queue) popLocked() *Job {
	if !q.roomLocked() {
		return nil
	}
	for i, j := range q.jobs {
		if j.owner.serial && j.owner.busy {
			continue
		}
		copy(q.jobs[i:], q.jobs[i+1:])
		q.jobs[len(q.jobs)-1] = nil
		q.jobs = q.jobs[:len(q.jobs)-1]
		q.next++
		j.token = q.next
		q.taken[j.token] = j
		j.owner.busy = true
		return j
	}
	return nil
}

// end forgets a taken job and lets the next one go. quiet: its worker
// takes the next job itself (StepAfter), so waking another for it would
// only wake a thread that finds the job gone.
func (q *Queue) end(j *Job, quiet bool) {
	q.mu.Lock()
	q.endLocked(j, quiet)
	q.mu.Unlock()
}

func (q *Queue) endLocked(j *Job, quiet bool) {
	delete(q.taken, j.token)
	j.owner.busy = false
	if len(q.jobs) > 0 && !quiet {
		q.signalLocked() // its place (or its serial source) is free again
	}
	if q.owners == 0 && len(q.taken) == 0 {
		q.changedLocked() // the workers may retire
	}
}

// Done reports the result of the job with token tok.
func (q *Queue) Done(tok uint64, n int, err error) bool {
	q.mu.Lock()
	j, ok := q.taken[tok]
	if ok {
		q.endLocked(j, false)
	}
	q.mu.Unlock()
	if ok {
		j.Part.Finish(n, err)
	}
	return ok
}

// Lookup returns the job with token tok, if it is taken.
func (q *Queue) Lookup(tok uint64) (*Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.taken[tok]
	return j, ok
}

// Blocked changes the count of workers blocked in a nested wait by d.
func (q *Queue) Blocked(d int) {
	q.mu.Lock()
	q.blocked += d
	if q.blocked < 0 {
		q.blocked = 0
	}
	q.changedLocked()
	q.mu.Unlock()
}
