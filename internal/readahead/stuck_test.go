package readahead

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/source"
)

// stuckSource answers reads below free at once and blocks every other
// read until release is closed: a user callback that never returns.
type stuckSource struct {
	size, free int64
	release    chan struct{}
}

func (s *stuckSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= s.free {
		<-s.release
	}
	for i := range p {
		p[i] = byte(off + int64(i))
	}
	return len(p), nil
}
func (s *stuckSource) Size() (int64, error)  { return s.size, nil }
func (s *stuckSource) Traits() source.Traits { return source.Traits{Concurrent: true} }
func (s *stuckSource) Close() error          { return nil }

// A seek drops the read-ahead and waits for its running pieces before it
// reuses their buffers. Before, it waited without looking at Close: with
// a piece stuck in a callback, the seek never returned, and so neither did
// colio_stream_free (which takes the stream's lock after Close), and a
// Python process exiting with such a stream open hung in its finaliser.
func TestCloseEndsASeekWaitingOnAStuckPiece(t *testing.T) {
	src := &stuckSource{size: 64 << 20, free: 1 << 20, release: make(chan struct{})}
	defer close(src.release)
	e := newEngine()
	s, err := Open(nil, e, engine.NewSource(src), 0, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := io.ReadFull(s, buf); err != nil || buf[5] != 5 {
		t.Fatalf("first read: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // the later slots' pieces are running, stuck
	done := make(chan error, 1)
	go func() {
		_, err := s.Seek(40<<20, io.SeekStart)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, errs.ErrClosed) && !isClosed(err) {
			t.Fatalf("seek after close: %v; want a Closed error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Seek still waits on a stuck piece 10 s after Close")
	}
}

func isClosed(err error) bool {
	var ce *errs.Error
	return errors.As(err, &ce) && ce.Kind == errs.Closed
}
