package engine

import (
	"sync/atomic"

	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/source"
)

// Source is a source opened through the engine: it tracks the operations
// that use it so that closing it is safe while they run.
//
// Close refuses new requests, fails the parts that have not started with a
// Closed error (a reader that closes has lost interest), lets running parts
// finish, and then closes the underlying source.
type Source struct {
	src    source.Source
	traits source.Traits
	users  users
	serial *serial
	// net runs the parts of a source with latency (Traits.InFlight): a
	// pool of its own, so that its requests do not hold the engine's
	// COLIO_NTHREADS slots while they wait on the network.
	net *pool.Pool
	// ext takes the parts of a source that outside workers run (offload.go).
	ext source.Offloader
	// readFn is readAt as the requests' ioFunc, made once: the method
	// value made per read was an allocation of every read.
	readFn ioFunc

	meter    meter                            // latency seen, for the coalescing hole
	coalesce atomic.Pointer[coalesceSettings] // per-source override (SetCoalesce)
}

// NewSource wraps s. The engine owns it from now on and closes it.
func NewSource(s source.Source) *Source {
	src := &Source{src: s, traits: s.Traits()}
	src.readFn = src.readAt
	if o, ok := s.(source.Offloader); ok {
		src.ext = o
	}
	switch {
	case src.traits.InFlight > 0:
		src.net = pool.New(src.traits.InFlight)
	case !src.traits.Concurrent:
		src.serial = &serial{}
	}
	return src
}

// Underlying returns the wrapped source.
func (s *Source) Underlying() source.Source { return s.src }

// Size returns the current size of the source.
func (s *Source) Size() (int64, error) {
	if err := s.users.acquire(1, "source"); err != nil {
		return 0, err
	}
	defer s.users.release()
	return s.src.Size()
}

// Traits returns the source's traits.
func (s *Source) Traits() source.Traits { return s.traits }

// Close waits for running operations and closes the source. Closing twice
// is harmless and returns nil.
func (s *Source) Close() error {
	// A source with latency fails its requests in flight instead (with a
	// Closed error), so that closing does not wait out a silent server's
	// timeouts.
	if a, ok := s.src.(interface{ Abort() }); ok && !s.users.closed.Load() {
		a.Abort()
	}
	if !s.users.waitIdle(true) {
		return nil
	}
	return s.src.Close()
}

// Acquire registers a use of the source that Close waits for, as a
// running read does: a caller that reads in several steps (the device
// pipeline reads a task chunk by chunk) holds the source across them with
// ReadHeld, so that closing it lets the running steps finish instead of
// failing them halfway. It returns a Closed error once Close has begun.
// Every successful Acquire needs one Release.
func (s *Source) Acquire() error { return s.users.acquire(1, "source") }

// Release ends a use registered by Acquire.
func (s *Source) Release() { s.users.release() }
