package gpu

import (
	"context"

	"github.com/colio-dev/colio/internal/engine"
)

// HostReader is the host side of a device read: where the bytes come from.
// ReadAt blocks until p is full, the source ends, or it fails.
type HostReader interface {
	Size() (int64, error)
	// Fast sources may run small requests inline (source.Traits.Fast).
	Fast() bool
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// HostWriter is the host side of a device write: where the bytes go.
type HostWriter interface {
	Fast() bool
	WriteAt(ctx context.Context, p []byte, off int64) (int, error)
}

// EngineSource reads through the engine, so a device read gets everything a
// host read gets: the source's close safety (colio_source_free waits for
// the read), its serial queue if it takes one call at a time, its
// end-of-source rules, and the engine's byte counters. Each bounce-buffer
// chunk is one engine read. Small chunks of fast sources run inline on the
// device worker; larger ones are one hop to an engine worker, which preads
// straight into the pinned bounce buffer (no extra copy).
func EngineSource(e *engine.Engine, s *engine.Source) HostReader { return engineSource{e, s} }

type engineSource struct {
	e *engine.Engine
	s *engine.Source
}

// holder is a host side whose Close must wait for the device tasks using
// it. The pipeline holds an engine source for each running task (closing
// the source lets running tasks finish their chunks and fails tasks that
// have not started, as the engine does with its own parts) and an engine
// sink for a whole request from its submission (closing the sink lets
// every accepted write finish).
type holder interface {
	hold() error
	unhold()
}

// appender is a host sink that hands out append offsets (COLIO_APPEND).
type appender interface {
	reserveAppend(n int64) int64
	nextAppend() int64
}

func (h engineSource) Size() (int64, error) { return h.s.Size() }
func (h engineSource) Fast() bool           { return h.s.Traits().Fast }
func (h engineSource) hold() error          { return h.s.Acquire() }
func (h engineSource) unhold()              { h.s.Release() }

// ReadAt runs only inside a held task (see holder).
func (h engineSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	f, err := h.e.ReadHeld(ctx, h.s, p, off)
	if err != nil {
		return 0, err
	}
	// Wait without a deadline whatever ctx says: p is a pinned bounce
	// buffer that goes back to the pool after this returns, so the read
	// must have ended.
	n, err := f.WaitTimeout(-1)
	return int(n), err
}

// EngineSink writes through the engine: the sink's close safety, serial
// queue, sticky write errors and counters apply to device writes too.
func EngineSink(e *engine.Engine, s *engine.Sink) HostWriter { return engineSink{e, s} }

type engineSink struct {
	e *engine.Engine
	s *engine.Sink
}

func (h engineSink) Fast() bool                  { return h.s.Traits().Fast }
func (h engineSink) hold() error                 { return h.s.Acquire() }
func (h engineSink) unhold()                     { h.s.Release() }
func (h engineSink) reserveAppend(n int64) int64 { return h.s.ReserveAppend(n) }
func (h engineSink) nextAppend() int64           { return h.s.NextAppend() }

// WriteAt runs only inside a held request (see holder).
func (h engineSink) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	f, err := h.e.WriteHeld(ctx, h.s, p, off)
	if err != nil {
		return 0, err
	}
	n, err := f.WaitTimeout(-1)
	return int(n), err
}
