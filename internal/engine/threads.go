package engine

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/colio-dev/colio/internal/pool"
)

// Go aborts the process ("fatal error: thread exhaustion") when it would
// need more OS threads than its limit, 10,000 by default. colio's pool can
// block at most pool.MaxWorkers threads at once over all its levels
// (pool/bound.go); on top of those the runtime needs one thread per P
// running Go code (GOMAXPROCS, which ensureProcs raises with the thread
// count) and a few of its own (sysmon, the template thread, the notifier
// blocked in a completion callback, idle spinning threads). The margin
// covers those with room to spare. Threads that C or Python created and
// that call into colio are not counted by Go. colio only ever raises the
// limit: a higher one set by the program stays.
const threadMargin = 1024

var threadsMu sync.Mutex

func ensureThreads() {
	threadsMu.Lock()
	defer threadsMu.Unlock()
	want := pool.MaxWorkers + runtime.GOMAXPROCS(0) + threadMargin
	if old := debug.SetMaxThreads(want); old > want {
		debug.SetMaxThreads(old)
	}
}
