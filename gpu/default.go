package gpu

import (
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/engine"
)

var (
	defaultOnce  sync.Once
	defaultMover atomic.Pointer[Mover]
	defaultErr   error
)

// Default returns the process mover: the CUDA device with the process
// engine (engine.Default). In a build without the cuda tag it returns an
// errs.NotSupported error that says how to get the CUDA build.
func Default() (*Mover, error) {
	defaultOnce.Do(func() {
		dev, err := cudaDevice()
		if err != nil {
			defaultErr = err
			return
		}
		e, err := engine.Default()
		if err != nil {
			defaultErr = err
			return
		}
		defaultMover.Store(New(dev, e))
	})
	return defaultMover.Load(), defaultErr
}

// Stats returns the counters of the process mover (zero before its first
// use and in builds without CUDA). The C API adds them to colio_stats.
func Stats() Counters {
	if m := defaultMover.Load(); m != nil {
		return m.Stats()
	}
	return Counters{}
}
