// Package sink defines what colio writes to: local files, host memory, a
// void sink and user callbacks.
package sink

import "context"

// Traits tell the engine how to schedule writes; see source.Traits.
type Traits struct {
	Fast       bool
	Concurrent bool
}

// Sink is a random-access byte sink, safe for use from many goroutines.
type Sink interface {
	// WriteAt writes all of p at off, or returns an error.
	WriteAt(ctx context.Context, p []byte, off int64) (int, error)
	// Flush pushes written data to its destination; with fsync, to stable
	// storage where that means something.
	Flush(ctx context.Context, fsync bool) error
	// AppendStart is the offset the first append goes to.
	AppendStart() int64
	Traits() Traits
	// Close releases the sink, once, after every operation on it ended.
	Close() error
}
