// Package atomicx has the one atomic operation sync/atomic lacks.
package atomicx

import "sync/atomic"

// StoreMax raises a to v if v is larger, without a lock.
func StoreMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}
