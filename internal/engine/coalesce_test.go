package engine

import (
	"bytes"
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/source"
)

// scatterSource is a SlowSource that also scatters, recording what it was
// handed: the bytes dropped as holes and every destination buffer.
type scatterSource struct {
	fakes.SlowSource
	skipped atomic.Int64
	mu      sync.Mutex
	bufs    [][]byte
}

func (s *scatterSource) ReadScatter(ctx context.Context, pieces []source.Piece, off int64) (int64, error) {
	s.Gauge.Enter()
	defer s.Gauge.Leave()
	var got int64
	for _, pc := range pieces {
		if pc.Buf == nil {
			s.skipped.Add(pc.Skip)
			got += pc.Skip
			continue
		}
		s.mu.Lock()
		s.bufs = append(s.bufs, pc.Buf)
		s.mu.Unlock()
		if off+got >= int64(len(s.Data)) {
			break
		}
		n := copy(pc.Buf, s.Data[off+got:])
		got += int64(n)
		if n < len(pc.Buf) {
			break
		}
	}
	return got, nil
}

// randomBatch makes ranges of every awkward kind within (and at) size.
func randomBatch(rng *rand.Rand, size int) []ReadRange {
	n := 1 + rng.Intn(40)
	out := make([]ReadRange, 0, n)
	for len(out) < n {
		var off, ln int
		switch rng.Intn(6) {
		case 0: // duplicate of an earlier one
			if len(out) > 0 {
				r := out[rng.Intn(len(out))]
				off, ln = int(r.Off), len(r.Buf)
				break
			}
			fallthrough
		case 1: // adjacent to an earlier one
			if len(out) > 0 {
				r := out[rng.Intn(len(out))]
				off, ln = min(int(r.Off)+len(r.Buf), size), rng.Intn(300)
				break
			}
			fallthrough
		case 2: // empty
			off, ln = rng.Intn(size+1), 0
		case 3: // past the end
			off, ln = size-rng.Intn(50), 100+rng.Intn(100)
			off = max(off, 0)
		default:
			off, ln = rng.Intn(size+1), rng.Intn(2000)
		}
		out = append(out, ReadRange{Off: int64(off), Buf: make([]byte, ln)})
	}
	return out
}

func checkBatch(t *testing.T, data []byte, rs []ReadRange, e *Engine, src *Source) {
	t.Helper()
	fs, err := e.ReadVCoalesced(context.Background(), src, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fs {
		n, err := f.WaitTimeout(-1)
		if err != nil {
			t.Fatalf("range %d (%d+%d): %v", i, rs[i].Off, len(rs[i].Buf), err)
		}
		want := data[min(int(rs[i].Off), len(data)):min(int(rs[i].Off)+len(rs[i].Buf), len(data))]
		if int(n) != len(want) || !bytes.Equal(rs[i].Buf[:n], want) {
			t.Fatalf("range %d (%d+%d): got %d bytes, not the source's %d", i, rs[i].Off, len(rs[i].Buf), n, len(want))
		}
	}
}

// TestCoalescedRandomBatches checks byte-exact results of batches with
// overlapping, duplicate, adjacent, empty and past-the-end ranges, for
// every way a span is read (one buffer, per piece for fast sources, a
// scratch buffer for callbacks, a scatter), with parts split small.
func TestCoalescedRandomBatches(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	data := fakes.Pattern(20000, 7)
	path := writeFile(t, data)
	rng := rand.New(rand.NewSource(1))
	for _, ts := range []int64{97, 4096, 1 << 20} {
		for _, hole := range []int64{0, 50, 5000} {
			e := newEngine(t, func(c *config.Config) { c.TaskSize = ts; c.CoalesceHole = hole; c.SmallReadThreshold = 1024 })
			f, err := source.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			srcs := map[string]*Source{
				"memory":  NewSource(source.FromMemory(data)),
				"file":    NewSource(f),
				"slow":    NewSource(&fakes.SlowSource{Data: data}),
				"scatter": NewSource(&scatterSource{SlowSource: fakes.SlowSource{Data: data}}),
			}
			for name, src := range srcs {
				for k := 0; k < 30; k++ {
					t.Run("", func(t *testing.T) {
						_ = name
						checkBatch(t, data, randomBatch(rng, len(data)), e, src)
					})
				}
				src.Close()
			}
		}
	}
}

// TestCoalescedRequestCount proves the merge from inside the source: ten
// ranges 100 bytes apart under a 1000-byte hole are one call, and the
// scatter drops exactly the gaps' bytes into no buffer but the callers'.
func TestCoalescedRequestCount(t *testing.T) {
	data := fakes.Pattern(1<<16, 3)
	e := newEngine(t, func(c *config.Config) { c.CoalesceHole = 1000 })
	ss := &scatterSource{SlowSource: fakes.SlowSource{Data: data}}
	src := NewSource(ss)
	defer src.Close()
	var rs []ReadRange
	for i := 0; i < 10; i++ {
		rs = append(rs, ReadRange{Off: int64(i * 300), Buf: make([]byte, 200)})
	}
	checkBatch(t, data, rs, e, src)
	if c := ss.Gauge.Calls(); c != 1 {
		t.Fatalf("%d source calls, want 1", c)
	}
	if s := ss.skipped.Load(); s != 9*100 {
		t.Fatalf("%d hole bytes dropped, want 900", s)
	}
	for _, b := range ss.bufs { // zero copy: every piece is inside a caller's buffer
		p := uintptr(unsafe.Pointer(&b[0]))
		ok := false
		for _, r := range rs {
			q := uintptr(unsafe.Pointer(&r.Buf[0]))
			ok = ok || (p >= q && p+uintptr(len(b)) <= q+uintptr(len(r.Buf)))
		}
		if !ok {
			t.Fatal("a scattered piece is not inside a caller's buffer")
		}
	}
	// Without coalescing (hole 0 for this source) the gaps keep them apart.
	if err := src.SetCoalesce(0, -1); err != nil {
		t.Fatal(err)
	}
	checkBatch(t, data, rs, e, src)
	if c := ss.Gauge.Calls(); c != 1+10 {
		t.Fatalf("%d source calls, want 11", c)
	}
}

// TestAutoHole checks the derived hole from recorded samples (no timing):
// fast sources 0, unmeasured ones 1 MiB, measured ones L x B / threads,
// and the settings in their order: source over engine over derived.
func TestAutoHole(t *testing.T) {
	e := newEngine(t, func(c *config.Config) { c.Threads = 8 })
	mem := NewSource(source.FromMemory(make([]byte, 10)))
	if h, _ := e.Coalescing(mem); h != 0 {
		t.Fatalf("memory hole %d", h)
	}
	slow := NewSource(&fakes.SlowSource{Data: make([]byte, 10)})
	if h, _ := e.Coalescing(slow); h != unmeasuredHole {
		t.Fatalf("unmeasured hole %d", h)
	}
	slow.meter.record(64<<10, 20*time.Millisecond) // latency only: assumed rate
	if h, _ := e.Coalescing(slow); h != int64(0.020*assumedBps/8) {
		t.Fatalf("latency-only hole %d", h)
	}
	slow.meter.record(4<<20, 30*time.Millisecond) // 4 MiB in 10 ms past the latency
	if h, _ := e.Coalescing(slow); h != int64(0.020*(4<<20)/0.010/8) {
		t.Fatalf("measured hole %d", h)
	}
	// A source that runs its own requests (remote: Traits.InFlight)
	// divides by its bound, not by threads.
	wide := NewSource(&inflightSource{SlowSource: fakes.SlowSource{Data: make([]byte, 10)}})
	wide.meter.record(4<<20, 30*time.Millisecond)
	wide.meter.record(64<<10, 20*time.Millisecond)
	if h, _ := e.Coalescing(wide); h != int64(0.020*(4<<20)/0.010/64) {
		t.Fatalf("in-flight-bound hole %d", h)
	}
	if err := e.Set(config.KeyCoalesceHole, 123); err != nil {
		t.Fatal(err)
	}
	if h, m := e.Coalescing(slow); h != 123 || m != config.DefaultCoalesceMax {
		t.Fatalf("engine setting: %d %d", h, m)
	}
	if err := slow.SetCoalesce(7, 100); err != nil {
		t.Fatal(err)
	}
	if h, m := e.Coalescing(slow); h != 7 || m != 100 {
		t.Fatalf("source setting: %d %d", h, m)
	}
	if err := slow.SetCoalesce(500, 100); err != nil {
		t.Fatal(err)
	}
	if h, _ := e.Coalescing(slow); h != 100 {
		t.Fatalf("hole over the cap: %d", h)
	}
	for _, bad := range [][2]int64{{-2, -1}, {-1, 0}, {0, -5}} {
		if err := slow.SetCoalesce(bad[0], bad[1]); errs.KindOf(err) != errs.Invalid {
			t.Fatalf("SetCoalesce(%v) = %v", bad, err)
		}
	}
}

// TestCoalescedErrors: the same argument checks as ReadV, a source that
// stops early fails every range it owed, and a closed source refuses.
func TestCoalescedErrors(t *testing.T) {
	data := fakes.Pattern(1000, 1)
	e := newEngine(t, func(c *config.Config) { c.CoalesceHole = 100 })
	src := NewSource(&fakes.SlowSource{Data: data})
	if _, err := e.ReadVCoalesced(context.Background(), src, []ReadRange{{Off: 1001, Buf: make([]byte, 1)}}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := e.ReadVCoalesced(context.Background(), src, []ReadRange{{Off: -1, Buf: make([]byte, 1)}}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("negative: %v", err)
	}
	short := &fakes.SlowSource{Data: data}
	ssrc := NewSource(&shrunk{SlowSource: short, size: 2000})
	fs, err := e.ReadVCoalesced(context.Background(), ssrc, []ReadRange{{Off: 900, Buf: make([]byte, 50)}, {Off: 990, Buf: make([]byte, 50)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs[0].WaitTimeout(-1); err != nil {
		t.Fatalf("range within the data: %v", err)
	}
	if _, err := fs[1].WaitTimeout(-1); errs.KindOf(err) != errs.IO {
		t.Fatalf("range past where the source stopped: %v", err)
	}
	src.Close()
	if _, err := e.ReadVCoalesced(context.Background(), src, []ReadRange{{Off: 0, Buf: make([]byte, 1)}}); errs.KindOf(err) != errs.Closed {
		t.Fatalf("closed: %v", err)
	}
}

// shrunk claims a size larger than its data, as a file truncated under the
// reader does.
type shrunk struct {
	*fakes.SlowSource
	size int64
}

func (s *shrunk) Size() (int64, error) { return s.size, nil }

// inflightSource declares its own in-flight bound, as remote sources do.
type inflightSource struct{ fakes.SlowSource }

func (s *inflightSource) Traits() source.Traits {
	return source.Traits{Concurrent: true, InFlight: 64}
}
