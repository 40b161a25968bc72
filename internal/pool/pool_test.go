package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBoundPerLevel(t *testing.T) {
	p := New(3)
	var now, peak atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		p.Submit(context.Background(), func(ctx context.Context) {
			defer wg.Done()
			if LevelOf(ctx) != 1 {
				t.Error("task at level 0 not handed a level-1 context")
			}
			v := now.Add(1)
			for {
				o := peak.Load()
				if v <= o || peak.CompareAndSwap(o, v) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			now.Add(-1)
		})
	}
	wg.Wait()
	if peak.Load() != 3 {
		t.Fatalf("peak %d, want 3", peak.Load())
	}
}

// Every task waits for a task it submitted; with one slot per level this
// finishes only because nested work goes to the next level.
func TestNestedWaitsOneSlot(t *testing.T) {
	p := New(1)
	done := make(chan struct{})
	var rec func(ctx context.Context, depth int) chan struct{}
	rec = func(ctx context.Context, depth int) chan struct{} {
		ch := make(chan struct{})
		p.Submit(ctx, func(wctx context.Context) {
			if depth < 5 {
				<-rec(wctx, depth+1)
				<-rec(wctx, depth+1)
			}
			close(ch)
		})
		return ch
	}
	go func() {
		a, b := rec(context.Background(), 0), rec(context.Background(), 0)
		<-a
		<-b
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("nested waits deadlocked")
	}
}

func TestSetLimitStartsQueued(t *testing.T) {
	p := New(1)
	gate := make(chan struct{})
	var started atomic.Int64
	for i := 0; i < 4; i++ {
		p.Submit(context.Background(), func(context.Context) { started.Add(1); <-gate })
	}
	time.Sleep(10 * time.Millisecond)
	if started.Load() != 1 || p.Queued() != 3 {
		t.Fatalf("started %d queued %d", started.Load(), p.Queued())
	}
	p.SetLimit(4)
	deadline := time.Now().Add(5 * time.Second)
	for started.Load() != 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	if started.Load() != 4 {
		t.Fatal("raising the limit did not start queued tasks")
	}
}

func TestTooDeep(t *testing.T) {
	p := New(1)
	if err := p.Submit(WithLevel(context.Background(), MaxLevels), func(context.Context) {}); err == nil {
		t.Fatal("unbounded nesting accepted")
	}
}

func TestPanicKeepsWorker(t *testing.T) {
	p := New(1)
	p.Submit(context.Background(), func(context.Context) { panic("boom") })
	ch := make(chan struct{})
	p.Submit(context.Background(), func(context.Context) { close(ch) })
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("pool stuck after a panicking task")
	}
}
