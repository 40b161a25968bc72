package pool

import "fmt"

// The OS-thread bound.
//
// A task that blocks in a system call or a cgo call (a pread on NFS, a C
// or Python callback that waits) pins one OS thread while it blocks. Every
// level runs up to `limit` tasks, so colio can pin limit x (levels in use)
// threads: at the documented maximum of 4096 threads, three levels of
// nested blocking callbacks need 12,288, past Go's default of 10,000 at
// which the runtime aborts the process ("fatal error: thread exhaustion").
//
// So the pool bounds the product: limit x levels <= MaxWorkers. A
// submission at a level the bound does not allow fails (it would block a
// thread the bound has no room for), and raising the limit while deeper
// levels are in use than the new limit allows is refused. MaxWorkers is
// chosen so that the documented maximum allows four levels; the engine
// raises Go's thread limit above it (engine/threads.go). Queuing instead
// of failing would deadlock: the tasks holding the threads may be the ones
// waiting for the queued work.
//
// After the limit is lowered, workers started under the old limit may
// still be running, so the depth rule uses the pool's span: the largest
// number of tasks any level may still have running (the limit, or more
// until the old workers have ended). Only submissions that the span
// refuses look at the levels again, to see whether the span has shrunk.
const MaxWorkers = 16384

// maxDepth is the number of levels a per-level count of span allows.
func maxDepth(span int) int {
	return min(MaxLevels, MaxWorkers/max(span, 1))
}

// Depth returns the number of nesting levels the current limit allows:
// submissions from tasks at level Depth()-1 fail.
func (p *Pool) Depth() int { return maxDepth(p.Limit()) }

// depthError is the error of a submission at level n that the bound
// refuses: d levels are allowed at threads=limit.
func depthError(n, limit, d int) error {
	if d == MaxLevels {
		return fmt.Errorf("colio: nesting deeper than %d levels (a callback that re-enters colio without end?)", MaxLevels)
	}
	return fmt.Errorf("colio: nested call refused: it would be nesting level %d, and with threads=%d colio allows %d "+
		"(threads x levels may not exceed %d, the OS threads colio may block); lower threads or nest less",
		n+1, limit, d, MaxWorkers)
}

// allowLocked reports whether a submission at level n is within the
// bound, shrinking the span first if workers from a higher limit have
// ended. p.mu is held.
func (p *Pool) allowLocked(n int) error {
	if n < maxDepth(p.span) {
		return nil
	}
	limit := p.Limit()
	if p.span > limit {
		span := limit
		for _, l := range p.levels {
			l.mu.Lock()
			span = max(span, l.running)
			l.mu.Unlock()
		}
		p.span = span
		if n < maxDepth(span) {
			return nil
		}
	}
	return depthError(n, limit, maxDepth(p.span))
}

// checkRaiseLocked refuses a new limit whose depth would leave levels in
// use (running or queued tasks) outside the bound. p.mu is held.
func (p *Pool) checkRaiseLocked(limit int) error {
	d := maxDepth(limit)
	deepest := -1
	for i := d; i < len(p.levels); i++ {
		l := p.levels[i]
		l.mu.Lock()
		if l.running > 0 || l.head < len(l.queue) {
			deepest = i
		}
		l.mu.Unlock()
	}
	if deepest < 0 {
		return nil
	}
	return fmt.Errorf("%d levels of nested calls are in use, and %d x %d is more than %d "+
		"(the OS threads colio may block: threads x nesting levels); allowed now: up to %d",
		deepest+1, limit, deepest+1, MaxWorkers, MaxWorkers/(deepest+1))
}
