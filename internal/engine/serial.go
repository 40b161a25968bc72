package engine

import (
	"context"
	"sync"

	"github.com/colio-dev/colio/internal/pool"
)

// serial runs the parts for a source or sink that cannot take concurrent
// calls, one at a time and in submission order, holding one pool slot.
//
// Without it, every part would take its own pool slot only to block on the
// source's lock: eight slots stuck behind one serial source while other
// sources starve, and parts served in whatever order the goroutines won the
// lock, so a sequential reader's first bytes could come last.
type serial struct {
	mu      sync.Mutex
	queue   []pool.Task
	running bool
}

func (s *serial) submit(p *pool.Pool, ctx context.Context, t pool.Task) error {
	s.mu.Lock()
	s.queue = append(s.queue, t)
	if s.running {
		s.mu.Unlock()
		return nil
	}
	s.running = true
	s.mu.Unlock()
	err := p.Submit(ctx, s.drain)
	if err != nil {
		s.mu.Lock()
		s.queue = s.queue[:len(s.queue)-1]
		s.running = false
		s.mu.Unlock()
	}
	return err
}

func (s *serial) drain(ctx context.Context) {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		t := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		t(ctx)
	}
}
