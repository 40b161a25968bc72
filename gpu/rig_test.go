package gpu_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/gpu/fakedev"
	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// Test sizes: 16 KiB bounce buffers and 64 KiB tasks, so every task
// pipelines four chunks through its ring of two buffers.
const (
	testBounce = 16 << 10
	testTask   = 64 << 10
)

type rig struct {
	t   *testing.T
	dev *fakedev.Device
	eng *engine.Engine
	m   *gpu.Mover
	ctx gpu.Context
}

func newRig(t *testing.T, mod func(*config.Config)) *rig {
	t.Helper()
	cfg := config.Default()
	cfg.Threads = 4
	cfg.TaskSize = testTask
	cfg.BounceBufferSize = testBounce
	cfg.SmallReadThreshold = 0
	cfg.SmallWriteThreshold = 0
	if mod != nil {
		mod(&cfg)
	}
	dev := fakedev.New()
	e := engine.New(cfg)
	r := &rig{t: t, dev: dev, eng: e, m: gpu.New(dev, e), ctx: dev.NewContext()}
	t.Cleanup(func() {
		e.DrainCallbacks()
		r.checkClean()
	})
	return r
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// source returns an engine source over data whose reads are noted in the
// device log ("read", buffer address, offset, length). fail, if set, may
// fail a read.
func (r *rig) source(data []byte, fast bool, fail func(off int64, n int) error) *engine.Source {
	src, err := source.FromCallbacks(source.CallbackOptions{
		Read: func(_ context.Context, p []byte, off int64) (int, error) {
			r.dev.Note("read", addr(p), off, len(p))
			if fail != nil {
				if err := fail(off, len(p)); err != nil {
					return 0, err
				}
			}
			return copy(p, data[off:]), nil
		},
		Size:       func() (int64, error) { return int64(len(data)), nil },
		Concurrent: true,
		Fast:       fast,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	s := engine.NewSource(src)
	r.t.Cleanup(func() { s.Close() })
	return s
}

// memSink is a sink into a byte slice whose writes are noted ("write").
type memSink struct {
	mu   sync.Mutex
	data []byte
}

func (r *rig) sink(size int, fail func(off int64, n int) error) (*engine.Sink, *memSink) {
	ms := &memSink{data: make([]byte, size)}
	snk, err := sink.FromCallbacks(sink.CallbackOptions{
		Write: func(_ context.Context, p []byte, off int64) (int, error) {
			r.dev.Note("write", addr(p), off, len(p))
			if fail != nil {
				if err := fail(off, len(p)); err != nil {
					return 0, err
				}
			}
			ms.mu.Lock()
			defer ms.mu.Unlock()
			return copy(ms.data[off:], p), nil
		},
		Concurrent: true,
		Fast:       true,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	s := engine.NewSink(snk)
	r.t.Cleanup(func() { s.Close() })
	return s, ms
}

func (ms *memSink) bytes() []byte {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]byte(nil), ms.data...)
}

// checkClean asserts the fake saw no rule broken and every pinned buffer
// is back in the pool, then frees them and checks nothing stays allocated.
func (r *rig) checkClean() {
	t := r.t
	t.Helper()
	for _, p := range r.dev.Problems() {
		t.Errorf("device rule broken: %s", p)
	}
	st := r.m.Stats()
	if st.PinnedIdle != st.PinnedBuffers {
		t.Errorf("pinned buffers: %d allocated, %d back in the pool (leak)", st.PinnedBuffers, st.PinnedIdle)
	}
	if err := r.m.ReleaseIdle(); err != nil {
		t.Errorf("ReleaseIdle: %v", err)
	}
	if n, b := r.dev.PinnedLive(); n != 0 {
		t.Errorf("%d pinned allocations (%d bytes) still live after ReleaseIdle", n, b)
	}
	for _, p := range r.dev.Problems() {
		t.Errorf("device rule broken while releasing: %s", p)
	}
}

func mustEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d bytes differ from the reference (first at byte %d of %d/%d)", what, countDiff(got, want), i, len(got), len(want))
	}
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

func pattern(n int, seed uint64) []byte { return fakes.Pattern(n, seed) }

func kindIs(err error, k errs.Kind) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Kind == k
}
