package source

import (
	"context"
	"sync"

	"github.com/colio-dev/colio/internal/errs"
)

// ReadFunc is a user read callback. Like read(2) it may return fewer bytes
// than asked; 0 bytes with a nil error means the source has ended.
type ReadFunc func(ctx context.Context, p []byte, off int64) (int, error)

// CallbackOptions describe a callback source.
type CallbackOptions struct {
	Read ReadFunc
	// Size returns the source size. Required.
	Size func() (int64, error)
	// Release, if set, runs once when the source is closed.
	Release func()
	// Concurrent says Read may run on many goroutines at once.
	Concurrent bool
	// Fast declares that Read answers in microseconds, so small requests
	// may run inline. Leave it false for anything with latency.
	Fast bool
}

// Callback is a source backed by user functions (C function pointers in
// the C API, Python callables, fsspec file systems).
type Callback struct {
	opt CallbackOptions
	mu  sync.Mutex // serialises Read when !Concurrent
}

// FromCallbacks returns a callback source.
func FromCallbacks(opt CallbackOptions) (*Callback, error) {
	if opt.Read == nil || opt.Size == nil {
		return nil, errs.New(errs.Invalid, "colio: a callback source needs read and size functions")
	}
	return &Callback{opt: opt}, nil
}

// ReadAt calls the user function until p is full or it reports the end, so
// a callback that returns short reads still fills whole requests.
func (c *Callback) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if !c.opt.Concurrent {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	done := 0
	for done < len(p) {
		n, err := c.opt.Read(ctx, p[done:], off+int64(done))
		if err != nil {
			if errs.KindOf(err) == errs.Internal {
				err = errs.Wrap(errs.CallbackFailed, err, "colio: read callback failed at offset %d", off+int64(done))
			}
			return done, err
		}
		if n < 0 || n > len(p)-done {
			return done, errs.New(errs.CallbackFailed,
				"colio: read callback returned %d for a request of %d bytes", n, len(p)-done)
		}
		if n == 0 {
			break
		}
		done += n
	}
	return done, nil
}

func (c *Callback) Size() (int64, error) {
	n, err := c.opt.Size()
	if err != nil {
		return 0, errs.Wrap(errs.CallbackFailed, err, "colio: size callback failed")
	}
	if n < 0 {
		return 0, errs.New(errs.CallbackFailed, "colio: size callback returned %d", n)
	}
	return n, nil
}

func (c *Callback) Traits() Traits {
	return Traits{Fast: c.opt.Fast, Concurrent: c.opt.Concurrent}
}

func (c *Callback) Close() error {
	if c.opt.Release != nil {
		c.opt.Release()
	}
	return nil
}
