package engine

import (
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/errs"
)

// users counts the parts that still use a source or sink, so that Close can
// wait for them and the descriptor is never closed under a running pread
// (or, worse, reused by another open while one is queued).
type users struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int64
	closed atomic.Bool
}

func (u *users) acquire(k int64, what string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed.Load() {
		return errs.New(errs.Closed, "colio: %s is closed", what)
	}
	u.n += k
	return nil
}

// join adds k users without checking for Close. Only a caller that already
// holds a use may join: Close is then still waiting, so the handle is open.
func (u *users) join(k int64) {
	u.mu.Lock()
	u.n += k
	u.mu.Unlock()
}

func (u *users) release() {
	u.mu.Lock()
	u.n--
	wake := u.n == 0 && u.cond != nil
	u.mu.Unlock()
	if wake {
		u.cond.Broadcast()
	}
}

// waitIdle blocks until no part uses the handle. With close it also
// refuses new users first; it returns false if the handle was already
// closed.
func (u *users) waitIdle(close bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if close {
		if u.closed.Load() {
			return false
		}
		u.closed.Store(true)
	}
	if u.cond == nil {
		u.cond = sync.NewCond(&u.mu)
	}
	for u.n > 0 {
		u.cond.Wait()
	}
	return true
}
