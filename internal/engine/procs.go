package engine

import (
	"os"
	"runtime"
	"sync"
)

// Blocking source and sink calls (a pread on NFS, a cgo call into a C or
// Python callback that waits 2 ms on the network) hold their Go scheduler
// slot, a P, while they block. The runtime takes a P back from a blocked
// call only when its monitor thread next looks, which it does every 20 us
// to 10 ms depending on how idle it has been. With GOMAXPROCS at the core
// count (2 here), a fan-out to a 2 ms source therefore ran about 2 calls at
// a time instead of COLIO_NTHREADS: measured, 20 x 2 MiB at 2 ms took
// 10.0 ms with GOMAXPROCS=2 and 7.4 ms with GOMAXPROCS=10.
//
// So colio keeps GOMAXPROCS at least cores + threads: every I/O slot can
// block while every core still has a P for running Go code. Blocked Ps cost
// no CPU. A GOMAXPROCS set in the environment is the user's choice and is
// left alone; colio only ever raises the value.
var procsMu sync.Mutex

func ensureProcs(threads int) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	procsMu.Lock()
	defer procsMu.Unlock()
	want := runtime.NumCPU() + threads
	if runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}
