package future

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/errs"
)

// The done channel is made on first need: one asked for before completion
// is closed by it, one asked for after is closed already, and waits with
// and without a limit see the result either way.
func TestChanMadeOnDemand(t *testing.T) {
	f := New(nil, 2)
	before := f.Chan()
	select {
	case <-before:
		t.Fatal("channel closed before the parts reported")
	default:
	}
	if _, err := f.WaitTimeout(time.Millisecond); errs.KindOf(err) != errs.Timeout {
		t.Fatalf("wait of an unfinished future: %v", err)
	}
	f.Begin()
	f.PartDone(3, nil)
	f.Begin()
	go f.PartDone(4, nil)
	select {
	case <-before:
	case <-time.After(time.Minute):
		t.Fatal("channel asked for before completion was not closed by it")
	}
	if f.Chan() != before {
		t.Fatal("a second Chan returned another channel")
	}
	if n, err := f.Wait(context.Background()); n != 7 || err != nil {
		t.Fatalf("wait: %d %v", n, err)
	}

	g := New(nil, 1)
	g.Begin()
	g.PartDone(5, nil)
	select {
	case <-g.Chan():
	default:
		t.Fatal("channel asked for after completion is not closed")
	}
	if n, err := g.WaitTimeout(-1); n != 5 || err != nil {
		t.Fatalf("wait forever on a done future: %d %v", n, err)
	}
	if c := Completed(nil, 1, nil); !c.Done() {
		t.Fatal("Completed is not done")
	}
}

// A blocking wait that starts before completion (no channel made yet) is
// woken by it.
func TestWaitBeforeCompletion(t *testing.T) {
	for _, forever := range []bool{true, false} {
		f := New(nil, 1)
		got := make(chan int64, 1)
		go func() {
			var n int64
			if forever {
				n, _ = f.WaitTimeout(-1)
			} else {
				n, _ = f.Wait(context.Background())
			}
			got <- n
		}()
		time.Sleep(time.Millisecond)
		f.Begin()
		f.PartDone(9, nil)
		select {
		case n := <-got:
			if n != 9 {
				t.Fatalf("waited %d bytes", n)
			}
		case <-time.After(time.Minute):
			t.Fatal("wait not woken by completion")
		}
	}
}

type countHook struct {
	n    atomic.Int32
	done atomic.Bool
}

func (h *countHook) FutureDone(f *Future) {
	h.n.Add(1)
	h.done.Store(f.Done())
}

// The inline hook runs exactly once and sees the future done, whether it
// is registered before completion, after it, or racing with it.
func TestHookRunsOnce(t *testing.T) {
	for i := 0; i < 2000; i++ {
		f := New(nil, 1)
		h := &countHook{}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.Begin()
			f.PartDone(1, nil)
		}()
		if i%2 == 0 {
			f.OnCompleteHook(h)
		} else {
			f.OnCompleteInline(h.FutureDone)
		}
		wg.Wait()
		if h.n.Load() != 1 || !h.done.Load() {
			t.Fatalf("round %d: hook ran %d times, saw done %v", i, h.n.Load(), h.done.Load())
		}
	}
	f := Completed(nil, 0, nil)
	h := &countHook{}
	f.OnCompleteHook(h)
	if h.n.Load() != 1 {
		t.Fatal("hook registered on a done future did not run")
	}
}

// A deferred future starts on its first wait only.
func TestDeferredStartsOnWait(t *testing.T) {
	f := New(nil, 1)
	var starts atomic.Int32
	f.SetDeferredStart(func() {
		starts.Add(1)
		go func() { f.Begin(); f.PartDone(2, nil) }()
	})
	if starts.Load() != 0 || f.Done() {
		t.Fatal("deferred future started before a wait")
	}
	if n, err := f.WaitTimeout(time.Minute); n != 2 || err != nil {
		t.Fatalf("wait: %d %v", n, err)
	}
	f.WaitTimeout(-1)
	if starts.Load() != 1 {
		t.Fatalf("started %d times", starts.Load())
	}
}

// OnDone callbacks run once each, in the order registered, whether
// registered before completion or after.
func TestOnDoneOrder(t *testing.T) {
	f := New(nil, 1)
	var got []int
	for i := 0; i < 3; i++ {
		f.OnDone(func(*Future) { got = append(got, i) })
	}
	f.Begin()
	f.PartDone(1, nil)
	f.OnDone(func(*Future) { got = append(got, 3) })
	if len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Fatalf("callbacks ran as %v", got)
	}
}
