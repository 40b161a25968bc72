package workq

import "time"

// Note tells the workers that an operation they serve has ended: a read of
// a queued source submitted with a tag (colio_read_async_tagged). The
// workers' runtime completes its own future for it, on the thread that
// already runs there, instead of colio's notifier thread calling into it
// (in Python: one more thread taking the GIL per read, which waited for
// the running worker's 5 ms switch interval).
type Note struct {
	Tag    uint64
	Handle uintptr // the C future; for the binding to free or ask for its error
	N      int64
	Err    error
}

// Post queues a note and wakes one taker. It may be called from any
// goroutine, with no lock of the queue held.
func (q *Queue) Post(n Note) {
	q.mu.Lock()
	q.notes = append(q.notes, n)
	// Usually posted by a worker handing back the read's last part, which
	// collects it in the same call: waking another taker for it would
	// wake a thread per read for nothing.
	if q.handing == 0 {
		q.signalLocked()
	}
	q.mu.Unlock()
}

// StepAfter hands back the job with token tok (as Done) and then steps:
// a worker's loop in one call. The next job is left for this worker (no
// other taker is woken for it or for the notes the hand-back posts).
// false if tok is not a taken job (nothing is done then).
func (q *Queue) StepAfter(tok uint64, n int, err error, timeout time.Duration, notes []Note) (Work, int, bool, error) {
	q.mu.Lock()
	j, ok := q.taken[tok]
	if !ok {
		q.mu.Unlock()
		return Work{}, 0, false, nil
	}
	q.endLocked(j, true)
	q.handing++
	q.mu.Unlock()
	j.Part.Finish(n, err)
	q.mu.Lock()
	q.handing--
	w, k, err := q.stepLocked(timeout, notes)
	return w, k, true, err
}

// takeNotesLocked moves up to len(into) notes into into.
func (q *Queue) takeNotesLocked(into []Note) int {
	k := copy(into, q.notes)
	if k == 0 {
		return 0
	}
	left := copy(q.notes, q.notes[k:])
	clear(q.notes[left:])
	q.notes = q.notes[:left]
	if left > 0 {
		q.signalLocked() // more for another taker
	}
	return k
}

// Step is a worker's turn in one call: it collects up to len(notes) notes
// and takes a job. With notes collected it does not wait for a job (their
// futures' owners are waiting); without, it waits as Take does. Work.Token
// is 0 when no job was taken. ErrNoSources only once no note is left
// either, so a worker that retires leaves no future uncompleted.
func (q *Queue) Step(timeout time.Duration, notes []Note) (Work, int, error) {
	q.mu.Lock()
	return q.stepLocked(timeout, notes)
}

// stepLocked is Step entered with q.mu held (StepAfter's hand-back and
// step share a lock); it returns with q.mu released.
func (q *Queue) stepLocked(timeout time.Duration, notes []Note) (Work, int, error) {
	var dl deadline
	defer dl.stop()
	got := 0
	for locked := true; ; locked = false {
		if !locked {
			q.mu.Lock()
		}
		got += q.takeNotesLocked(notes[got:])
		if j := q.popLocked(); j != nil {
			out := len(q.taken)
			q.mu.Unlock()
			if !j.Part.Begin() {
				q.end(j, false) // its cancelled future may have posted a note: loop
				continue
			}
			return Work{Ctx: j.owner.Ctx, Buf: j.Buf, Off: j.Off, Level: j.Level, Token: j.token, Out: out}, got, nil
		}
		if got > 0 {
			q.mu.Unlock()
			return Work{}, got, nil
		}
		if q.owners == 0 && len(q.taken) == 0 && len(q.notes) == 0 {
			q.mu.Unlock()
			return Work{}, 0, ErrNoSources
		}
		if timeout == 0 {
			q.mu.Unlock()
			return Work{}, 0, ErrTimeout
		}
		if q.park(timeout, &dl) {
			// A note that came with the timer is still collected.
			q.mu.Lock()
			got += q.takeNotesLocked(notes[got:])
			q.mu.Unlock()
			if got > 0 {
				return Work{}, got, nil
			}
			return Work{}, 0, ErrTimeout
		}
	}
}

// Wait waits up to timeout (negative: forever) until a job may be taken or
// a note collected, and takes nothing: a worker whose runtime has a global
// lock takes parts only once it holds that lock (a poll of Step). A part
// taken by a thread still waiting for the lock is pinned to it: while one
// Python worker ran 200 parts back to back, 7 more sat with the parts they
// had taken until it stopped, and each then cost a hand-off of the GIL.
// ErrNoSources as Step.
func (q *Queue) Wait(timeout time.Duration) error {
	var dl deadline
	defer dl.stop()
	for {
		q.mu.Lock()
		if len(q.notes) > 0 || q.eligibleLocked() {
			q.mu.Unlock()
			return nil
		}
		if q.owners == 0 && len(q.taken) == 0 {
			q.mu.Unlock()
			return ErrNoSources
		}
		if timeout == 0 {
			q.mu.Unlock()
			return ErrTimeout
		}
		if q.park(timeout, &dl) {
			return ErrTimeout
		}
	}
}
