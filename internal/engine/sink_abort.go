package engine

import (
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/sink"
)

// Abort closes the sink without publishing what was written: for a
// sink.Durable (an S3 upload) the upload is aborted, the object keeps its
// old content or stays absent, and writes not yet durable fail; other
// sinks are just closed (their bytes are already where they were written).
// Writes accepted before Abort end before it returns. It returns an error
// only when undoing failed; aborting a closed sink does nothing.
func (k *Sink) Abort() error {
	d, ok := k.snk.(sink.Durable)
	if !ok {
		k.Close() // the sticky error says nothing to a caller giving up
		return nil
	}
	aerr := d.Abort(errs.New(errs.Cancelled, "colio: the sink was aborted"))
	if !k.users.waitIdle(true) {
		return nil
	}
	k.snk.Close()
	return aerr
}
