package sink

import (
	"github.com/colio-dev/colio/internal/atomicx"

	"context"
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/errs"
)

// Memory collects writes in host memory. A fixed sink writes into a buffer
// the caller owns and fails writes past its end with NoSpace; a growable
// one owns its buffer and grows it.
type Memory struct {
	growable bool
	mu       sync.RWMutex // writers copy under RLock; growth takes Lock
	buf      []byte
	size     atomic.Int64 // highest end written
}

// NewMemory returns a growable memory sink.
func NewMemory() *Memory { return &Memory{growable: true} }

// IntoMemory returns a sink that writes into buf, never past its end.
func IntoMemory(buf []byte) *Memory { return &Memory{buf: buf} }

func (m *Memory) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	for {
		m.mu.RLock()
		if end <= int64(len(m.buf)) {
			copy(m.buf[off:end], p)
			m.mu.RUnlock()
			break
		}
		m.mu.RUnlock()
		if !m.growable {
			return 0, errs.New(errs.NoSpace,
				"colio: write of %d bytes at offset %d does not fit a memory sink of %d bytes", len(p), off, len(m.buf))
		}
		m.grow(end)
	}
	atomicx.StoreMax(&m.size, end)
	return len(p), nil
}

func (m *Memory) grow(end int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end <= int64(len(m.buf)) {
		return
	}
	n := max(2*int64(len(m.buf)), end, 4096)
	nb := make([]byte, n)
	copy(nb, m.buf)
	m.buf = nb
}

// Bytes returns the bytes written so far (up to the highest end written).
// The slice aliases the sink's buffer until the next write grows it.
func (m *Memory) Bytes() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.buf[:m.size.Load()]
}

// Len is the highest end written.
func (m *Memory) Len() int64 { return m.size.Load() }

func (m *Memory) Flush(context.Context, bool) error { return nil }
func (m *Memory) AppendStart() int64                { return 0 }
func (m *Memory) Traits() Traits                    { return Traits{Fast: true, Concurrent: true} }
func (m *Memory) Close() error                      { return nil }
