package sink

import (
	"context"
	"sync/atomic"
)

// Void discards what it is given and counts it: a sink for measuring the
// engine without a device in the way.
type Void struct {
	n atomic.Int64
}

func (v *Void) WriteAt(_ context.Context, p []byte, _ int64) (int, error) {
	v.n.Add(int64(len(p)))
	return len(p), nil
}

// Written returns the bytes discarded so far.
func (v *Void) Written() int64 { return v.n.Load() }

func (v *Void) Flush(context.Context, bool) error { return nil }
func (v *Void) AppendStart() int64                { return 0 }
func (v *Void) Traits() Traits                    { return Traits{Fast: true, Concurrent: true} }
func (v *Void) Close() error                      { return nil }
