package sink

import "context"

// Durable is a sink whose bytes become durable after WriteAt would return:
// an object store's multipart upload, where a write is buffered into a part
// and is safe only once that part is acknowledged. The engine copies with
// WriteAtDurable on an I/O slot and completes the write's future from done,
// so no slot waits on the network or on the writes that fill a part.
type Durable interface {
	Sink
	// WriteAtDurable takes all of p at off (copying it; p may be reused
	// once it returns) and calls done exactly once, from any goroutine,
	// when those bytes are durable or cannot become so. An error returned
	// here means done is not called.
	WriteAtDurable(ctx context.Context, p []byte, off int64, done func(error)) (int, error)
	// Abort gives the writes up: none of them becomes visible, and those
	// not yet durable fail with why. It returns what undoing cost, if it
	// failed (an upload the store may still hold).
	Abort(why error) error
}
