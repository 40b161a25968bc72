// Package source defines what colio reads from: local files, host memory
// and user callbacks.
package source

import "context"

// Traits tell the engine how to schedule requests to a source.
type Traits struct {
	// Fast sources answer in microseconds (a local file in the page cache,
	// memory). Only they may run small requests inline on the caller;
	// inlining a read with latency would serialise a fan-out.
	Fast bool
	// Concurrent sources accept ReadAt from many goroutines at once.
	// Others are called one at a time (the source serialises itself).
	Concurrent bool
	// InFlight > 0 marks a source whose requests wait on a network, not
	// on a disk or a CPU (HTTP, S3): the engine runs its parts on
	// goroutines of its own, at most InFlight at once for the source,
	// instead of on the COLIO_NTHREADS pool slots, which latency would
	// otherwise hold idle. Its ReadAt must not re-enter colio.
	InFlight int
	// PartSize > 0 replaces task_size for this source: the size of the
	// parts a large read is split into (for remote sources, one request
	// each).
	PartSize int64
}

// Source is a random-access byte source. Every implementation is safe for
// use from many goroutines.
type Source interface {
	// ReadAt fills p from offset off. It returns len(p) unless the source
	// ends first, in which case it returns the bytes that exist and a nil
	// error (the engine asks only for bytes below Size, so it fails a read
	// that ends before them). ctx carries the pool level for callbacks that
	// re-enter colio.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	// Size is the current size in bytes.
	Size() (int64, error)
	Traits() Traits
	// Close releases the source. The engine calls it once, after every
	// operation on the source has finished.
	Close() error
}
