package source

import (
	"context"
	"time"
)

// Piece is one part of a scattered read: Buf receives the next len(Buf)
// bytes, or, when Buf is nil, Skip bytes are read and dropped (the hole
// between two coalesced ranges).
type Piece struct {
	Buf  []byte
	Skip int64
}

// Scatterer is a source that reads one contiguous range into several
// buffers in one request: a remote source streams one response body
// through the pieces, so the bytes of a coalesced read land straight in
// the callers' buffers and those of its holes are dropped, never copied.
// Sources without it get a scratch buffer and a copy (engine/coalesce.go).
type Scatterer interface {
	// ReadScatter fills pieces in order from off and returns the bytes
	// it consumed, holes included; fewer than asked only where the source
	// ends, as for ReadAt.
	ReadScatter(ctx context.Context, pieces []Piece, off int64) (int64, error)
}

// Measurer is a source that measures its own latency, better than the
// engine can from outside (a remote source sees the time to the first
// byte of each response apart from the transfer). ok is false until it
// has measured anything.
type Measurer interface {
	Measured() (firstByte time.Duration, bytesPerSecond float64, ok bool)
}
