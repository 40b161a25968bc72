package workq

import (
	"sync"
	"time"
)

// A parked taker's wake-up channel and its timer are reused, not made per
// wait: Python workers that find the queue empty wait (colio_work_wait)
// again and again, and two allocations each made Go's collector run
// sooner for every caller of the library.
//
// A waiter channel has room for one signal. It is signalled at most once
// per park (signalLocked removes it from q.waiters under q.mu before
// sending), so the send never blocks; forget, under q.mu, finds it gone
// when it was signalled and drains what the taker did not receive, so a
// channel goes back to the pool empty.
var waiterPool = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// timerPool holds stopped timers with empty channels.
var timerPool sync.Pool

// deadline is a waiter's timeout, made at its first park and stopped when
// the waiting call returns.
type deadline struct {
	c <-chan time.Time
	t *time.Timer
}

func (d *deadline) start(timeout time.Duration) {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(timeout)
		d.t = t
	} else {
		d.t = time.NewTimer(timeout)
	}
	d.c = d.t.C
}

func (d *deadline) stop() {
	if d.t != nil {
		if !d.t.Stop() {
			// Go 1.23's timers keep no stale tick after Stop; the
			// older ones (GODEBUG=asynctimerchan=1) may.
			select {
			case <-d.t.C:
			default:
			}
		}
		timerPool.Put(d.t)
		d.t, d.c = nil, nil
	}
}

// park is one wait of a taker (Take, Step, Wait): entered with q.mu held,
// it registers the caller as a waiter, unlocks, and returns on a wake-up,
// the caller's own signal or the deadline (timeout > 0; negative: none),
// reporting whether the deadline passed. The caller looks again after it.
func (q *Queue) park(timeout time.Duration, d *deadline) (timedOut bool) {
	wake := q.wake
	mine := waiterPool.Get().(chan struct{})
	q.waiters = append(q.waiters, mine)
	q.mu.Unlock()
	if d.c == nil && timeout > 0 {
		d.start(timeout)
	}
	select {
	case <-wake:
	case <-mine:
	case <-d.c:
		q.forget(mine, true)
		return true
	}
	q.forget(mine, false)
	return false
}

// forget drops a taker's wake-up channel. One that was signalled and
// leaves (timed out) passes the signal on, so a job never waits for a
// taker that left. One that stays looks again itself: passing it on too
// woke the idle takers in a ring, each waking the next, for as long as a
// job waited for a place (thousands of wake-ups a second).
func (q *Queue) forget(mine chan struct{}, leaving bool) {
	q.mu.Lock()
	defer waiterPool.Put(mine)
	for i, w := range q.waiters {
		if w == mine {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			q.mu.Unlock()
			return
		}
	}
	// Signalled (the signal was sent under q.mu, so it is in the channel
	// unless the taker received it): empty the channel for its next use.
	select {
	case <-mine:
	default:
	}
	// If the job or note it was woken for is still there (taken by
	// nobody), wake another.
	if leaving && ((len(q.jobs) > 0 && q.roomLocked()) || len(q.notes) > 0) {
		q.signalLocked()
	}
	q.mu.Unlock()
}
