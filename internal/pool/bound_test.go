package pool

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockAt submits n tasks at level lvl that block until gate closes; it
// returns once they are all running.
func blockAt(t *testing.T, p *Pool, lvl, n int, gate chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	var started sync.WaitGroup
	started.Add(n)
	wg.Add(n)
	for i := 0; i < n; i++ {
		err := p.Submit(WithLevel(context.Background(), lvl), func(context.Context) {
			started.Done()
			<-gate
			wg.Done()
		})
		if err != nil {
			t.Fatalf("submit at level %d: %v", lvl, err)
		}
	}
	started.Wait()
}

// Before the bound, every level allowed limit tasks up to MaxLevels, so
// 4096 threads with 3 levels of blocking callbacks pinned 12,288 OS
// threads and Go aborted the process; here the product is bounded.
func TestDepthFollowsLimit(t *testing.T) {
	for _, c := range []struct{ limit, depth int }{
		{1, MaxLevels}, {8, MaxLevels}, {256, MaxLevels}, {257, 63}, {1024, 16}, {4096, 4},
	} {
		p := New(c.limit)
		if got := p.Depth(); got != c.depth {
			t.Errorf("limit %d: depth %d, want %d", c.limit, got, c.depth)
		}
		if c.limit*p.Depth() > MaxWorkers {
			t.Errorf("limit %d x depth %d exceeds %d", c.limit, p.Depth(), MaxWorkers)
		}
	}
	p := New(4096)
	ran := make(chan struct{})
	if err := p.Submit(WithLevel(context.Background(), 3), func(context.Context) { close(ran) }); err != nil {
		t.Fatalf("level 3 at limit 4096: %v", err)
	}
	<-ran
	err := p.Submit(WithLevel(context.Background(), 4), func(context.Context) { t.Error("ran past the bound") })
	if err == nil || !strings.Contains(err.Error(), "16384") || !strings.Contains(err.Error(), "threads=4096") {
		t.Fatalf("level 4 at limit 4096: %v, want a refusal naming the bound", err)
	}
}

func TestRaiseRefusedWhileDeepLevelsInUse(t *testing.T) {
	p := New(2048) // 8 levels
	gate := make(chan struct{})
	var wg sync.WaitGroup
	blockAt(t, p, 4, 1, gate, &wg) // levels 0 to 4 may be in use
	err := p.SetLimit(4096)
	if err == nil || !strings.Contains(err.Error(), "5 levels") {
		t.Fatalf("SetLimit(4096) with level 4 in use: %v, want a refusal", err)
	}
	if p.Limit() != 2048 {
		t.Fatalf("limit %d after a refused SetLimit, want 2048", p.Limit())
	}
	if err := p.SetLimit(3276); err != nil { // 5 x 3276 <= 16384
		t.Fatalf("SetLimit(3276): %v", err)
	}
	close(gate)
	wg.Wait()
	waitIdle(t, p)
	if err := p.SetLimit(4096); err != nil {
		t.Fatalf("SetLimit(4096) once idle: %v", err)
	}
}

// Lowering the limit does not let deeper levels fill while workers from
// the higher limit still run: the total stays within MaxWorkers.
func TestLowerKeepsBoundUntilOldWorkersEnd(t *testing.T) {
	p := New(4096)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	blockAt(t, p, 0, 4096, gate, &wg)
	if err := p.SetLimit(8); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(WithLevel(context.Background(), 4), func(context.Context) {}); err == nil {
		t.Fatal("level 4 accepted while 4096 workers of the old limit run")
	}
	close(gate)
	wg.Wait()
	waitIdle(t, p)
	ran := make(chan struct{})
	if err := p.Submit(WithLevel(context.Background(), 40), func(context.Context) { close(ran) }); err != nil {
		t.Fatalf("level 40 at limit 8 once the old workers ended: %v", err)
	}
	<-ran
}

// waitIdle waits (with a hang guard) until no level has a running task.
func waitIdle(t *testing.T, p *Pool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		busy := 0
		p.mu.Lock()
		for _, l := range p.levels {
			l.mu.Lock()
			busy += l.running
			l.mu.Unlock()
		}
		p.mu.Unlock()
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks still running after 60 s", busy)
		}
		time.Sleep(time.Millisecond)
	}
}
