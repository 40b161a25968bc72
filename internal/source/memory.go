package source

import "context"

// Memory reads from a byte slice the caller keeps alive and unchanged.
type Memory struct {
	b []byte
}

// FromMemory returns a source over b. b is not copied.
func FromMemory(b []byte) *Memory { return &Memory{b: b} }

func (m *Memory) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, nil
	}
	return copy(p, m.b[off:]), nil
}

func (m *Memory) Size() (int64, error) { return int64(len(m.b)), nil }
func (m *Memory) Traits() Traits       { return Traits{Fast: true, Concurrent: true} }
func (m *Memory) Close() error         { return nil }
