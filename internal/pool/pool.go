// Package pool runs I/O tasks with a bound on how many run at once, and
// cannot deadlock on nested waits.
//
// The pool is leveled, after cuDF's hierarchical pool: tasks submitted from
// outside the pool run at level 0; a task running at level N that submits
// more work submits it to level N+1. Each level has its own bound of
// `limit` tasks running at once, so a task that waits on work it submitted
// waits on a different level, whose slots it does not hold. With limit 1
// and any nesting depth, the innermost level always has a free slot, so
// every wait eventually returns. The bound on I/O in flight therefore
// applies per level: limit x (levels in use), and plain unnested use has
// exactly one level. The levels allowed shrink as the limit grows, so that
// limit x levels stays within the OS threads colio may block (bound.go).
//
// The level travels in the context passed to each task. Code that runs
// inside a task (a user callback, a nested reader) must pass that context
// to its submissions; the C API carries it in a thread-local set around
// user callbacks.
//
// Workers are goroutines started on demand and retired when their level's
// queue is empty, so an idle pool holds no goroutines and a run-time change
// of the limit takes effect at the next task boundary.
package pool

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Task is one unit of work. ctx carries the level that the task's own
// submissions must go to.
type Task func(ctx context.Context)

type levelKey struct{}

// LevelOf returns the pool level a submission made with ctx goes to.
func LevelOf(ctx context.Context) int {
	if ctx == nil {
		return 0
	}
	if l, ok := ctx.Value(levelKey{}).(int); ok {
		return l
	}
	return 0
}

// WithLevel returns ctx marked so that submissions made with it go to level l.
func WithLevel(ctx context.Context, l int) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, levelKey{}, l)
}

// MaxLevels bounds nesting. Deeper nesting is almost certainly unbounded
// recursion in a user callback, reported instead of growing forever.
const MaxLevels = 64

// Pool is a leveled, bounded task runner.
type Pool struct {
	limit atomic.Int64

	mu     sync.Mutex // guards levels and span; taken before any level's mu
	levels []*level
	span   int // see bound.go
}

type level struct {
	pool    *Pool
	ctx     context.Context // handed to tasks: marks level+1
	mu      sync.Mutex
	running int
	queue   []Task
	head    int
}

// New returns a pool that runs at most limit tasks at once per level.
func New(limit int) *Pool {
	if limit < 1 {
		limit = 1
	}
	p := &Pool{span: limit}
	p.limit.Store(int64(limit))
	return p
}

// Limit returns the per-level bound.
func (p *Pool) Limit() int { return int(p.limit.Load()) }

// SetLimit changes the per-level bound. Raising it starts workers for
// queued tasks at once; lowering it retires workers as they finish tasks.
// A limit that the OS-thread bound does not allow with the levels in use
// now is refused (bound.go), and nothing changes.
func (p *Pool) SetLimit(limit int) error {
	if limit < 1 {
		limit = 1
	}
	p.mu.Lock()
	if limit > p.span {
		if err := p.checkRaiseLocked(limit); err != nil {
			p.mu.Unlock()
			return err
		}
		p.span = limit
	}
	p.limit.Store(int64(limit))
	lv := append([]*level(nil), p.levels...)
	p.mu.Unlock()
	for _, l := range lv {
		l.mu.Lock()
		var start []Task
		for l.running < limit && l.head < len(l.queue) {
			start = append(start, l.pop())
			l.running++
		}
		l.mu.Unlock()
		for _, t := range start {
			go l.work(t)
		}
	}
	return nil
}

// lockLevel returns level n, locked, after checking the bound. The check
// and the task's admission (running or queued, under l.mu) happen under
// p.mu, so SetLimit sees every level in use.
func (p *Pool) lockLevel(n int) (*level, error) {
	if n < 0 {
		return nil, fmt.Errorf("colio: negative pool level %d", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.allowLocked(n); err != nil {
		return nil, err
	}
	for len(p.levels) <= n {
		i := len(p.levels)
		p.levels = append(p.levels, &level{pool: p, ctx: WithLevel(context.Background(), i+1)})
	}
	l := p.levels[n]
	l.mu.Lock()
	return l, nil
}

// Submit queues t at the level ctx names. It never blocks on other tasks.
func (p *Pool) Submit(ctx context.Context, t Task) error {
	l, err := p.lockLevel(LevelOf(ctx))
	if err != nil {
		return err
	}
	if l.running < int(p.limit.Load()) {
		l.running++
		l.mu.Unlock()
		go l.work(t)
		return nil
	}
	l.queue = append(l.queue, t)
	l.mu.Unlock()
	return nil
}

// Queued returns the tasks waiting for a slot, over all levels.
func (p *Pool) Queued() int {
	p.mu.Lock()
	lv := append([]*level(nil), p.levels...)
	p.mu.Unlock()
	n := 0
	for _, l := range lv {
		l.mu.Lock()
		n += len(l.queue) - l.head
		l.mu.Unlock()
	}
	return n
}

func (l *level) pop() Task {
	t := l.queue[l.head]
	l.queue[l.head] = nil
	l.head++
	if l.head == len(l.queue) {
		l.queue, l.head = l.queue[:0], 0
	} else if l.head > 1024 && l.head*2 > len(l.queue) {
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:])
		l.queue, l.head = l.queue[:n], 0
	}
	return t
}

func (l *level) work(t Task) {
	for {
		l.runOne(t)
		l.mu.Lock()
		if l.head == len(l.queue) || l.running > int(l.pool.limit.Load()) {
			l.running--
			l.mu.Unlock()
			return
		}
		t = l.pop()
		l.mu.Unlock()
	}
}

// runOne keeps the worker alive through a task's panic. The engine wraps
// its tasks to fail their future on panic; this is the last line of
// defence for a task that does not.
func (l *level) runOne(t Task) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "colio: pool task panicked: %v\n%s", r, debug.Stack())
		}
	}()
	t(l.ctx)
}
