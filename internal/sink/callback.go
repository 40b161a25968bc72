package sink

import (
	"context"
	"sync"

	"github.com/colio-dev/colio/internal/errs"
)

// WriteFunc is a user write callback. It may write fewer bytes than given;
// colio calls it again for the rest. Writing 0 bytes without an error is
// treated as a failure, since retrying would loop forever.
type WriteFunc func(ctx context.Context, p []byte, off int64) (int, error)

// CallbackOptions describe a callback sink.
type CallbackOptions struct {
	Write WriteFunc
	// Flush, if set, runs on Flush.
	Flush func(ctx context.Context, fsync bool) error
	// Release, if set, runs once when the sink is closed.
	Release func()
	// Start is the offset the first append goes to.
	Start      int64
	Concurrent bool
	Fast       bool
}

// Callback is a sink backed by user functions.
type Callback struct {
	opt CallbackOptions
	mu  sync.Mutex // serialises Write when !Concurrent
}

// FromCallbacks returns a callback sink.
func FromCallbacks(opt CallbackOptions) (*Callback, error) {
	if opt.Write == nil {
		return nil, errs.New(errs.Invalid, "colio: a callback sink needs a write function")
	}
	if opt.Start < 0 {
		return nil, errs.New(errs.Invalid, "colio: negative append start %d", opt.Start)
	}
	return &Callback{opt: opt}, nil
}

func callbackErr(err error, format string, args ...any) error {
	if errs.KindOf(err) == errs.Internal {
		return errs.Wrap(errs.CallbackFailed, err, format, args...)
	}
	return err
}

func (c *Callback) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if !c.opt.Concurrent {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	done := 0
	for done < len(p) {
		n, err := c.opt.Write(ctx, p[done:], off+int64(done))
		if err != nil {
			return done, callbackErr(err, "colio: write callback failed at offset %d", off+int64(done))
		}
		if n <= 0 || n > len(p)-done {
			return done, errs.New(errs.CallbackFailed,
				"colio: write callback returned %d for a request of %d bytes", n, len(p)-done)
		}
		done += n
	}
	return done, nil
}

func (c *Callback) Flush(ctx context.Context, fsync bool) error {
	if c.opt.Flush == nil {
		return nil
	}
	if !c.opt.Concurrent {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	if err := c.opt.Flush(ctx, fsync); err != nil {
		return callbackErr(err, "colio: flush callback failed")
	}
	return nil
}

func (c *Callback) AppendStart() int64 { return c.opt.Start }
func (c *Callback) Traits() Traits     { return Traits{Fast: c.opt.Fast, Concurrent: c.opt.Concurrent} }

func (c *Callback) Close() error {
	if c.opt.Release != nil {
		c.opt.Release()
	}
	return nil
}
