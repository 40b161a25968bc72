// Package notify runs completion callbacks on one dedicated goroutine.
//
// Callbacks never run on an I/O worker: a slow callback would otherwise hold
// an I/O slot and stall unrelated requests (DESIGN.md, problem 5). The queue
// is unbounded so that posting never blocks the worker that completes a
// future; callbacks run in the order their futures completed.
package notify

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// Notifier owns the callback goroutine.
type Notifier struct {
	mu    sync.Mutex
	cond  *sync.Cond
	queue []func()
	// busy counts callbacks posted and not yet finished; Drain
	// waits for it to reach zero.
	busy int
}

// New starts a notifier.
func New() *Notifier {
	n := &Notifier{}
	n.cond = sync.NewCond(&n.mu)
	go n.loop()
	return n
}

// Post queues fn to run on the notifier goroutine.
func (n *Notifier) Post(fn func()) {
	n.mu.Lock()
	n.queue = append(n.queue, fn)
	n.busy++
	n.mu.Unlock()
	n.cond.Broadcast()
}

// Drain blocks until every callback posted before the call has run. It must
// not be called from a callback.
func (n *Notifier) Drain() {
	n.mu.Lock()
	for n.busy > 0 {
		n.cond.Wait()
	}
	n.mu.Unlock()
}

func (n *Notifier) loop() {
	// Callbacks run on one OS thread for the life of the process, so a C
	// callback can rely on its thread-locals and a test can tell the
	// notifier's thread from an I/O worker's.
	runtime.LockOSThread()
	for {
		n.mu.Lock()
		for len(n.queue) == 0 {
			n.cond.Wait()
		}
		batch := n.queue
		n.queue = nil
		n.mu.Unlock()
		for _, fn := range batch {
			run(fn)
		}
		n.mu.Lock()
		n.busy -= len(batch)
		n.mu.Unlock()
		n.cond.Broadcast()
	}
}

// run calls fn and survives its panic: a broken user callback must not take
// the process, or the other futures' callbacks, down with it.
func run(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "colio: completion callback panicked: %v\n%s", r, debug.Stack())
		}
	}()
	fn()
}
