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

func (h engineSource) Size() (int64, error) { return h.s.Size() }
func (h engineSource) Fast() bool           { return h.s.Traits().Fast }

func (h engineSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	f, err := h.e.Read(ctx, h.s, p, off)
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

func (h engineSink) Fast() bool { return h.s.Traits().Fast }

func (h engineSink) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	f, err := h.e.Write(ctx, h.s, p, off)
	if err != nil {
		return 0, err
	}
	n, err := f.WaitTimeout(-1)
	return int(n), err
}
