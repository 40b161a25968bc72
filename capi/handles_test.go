package main

import (
	"strings"
	"sync"
	"testing"
)

func TestHandleLifecycle(t *testing.T) {
	var tb table
	a, err := tb.put(kindSource, "a")
	if err != nil || a == 0 {
		t.Fatalf("put: %v %#x", err, a)
	}
	if obj, err := tb.get(a, kindSource); err != nil || obj != "a" {
		t.Fatalf("get: %v %v", obj, err)
	}
	if _, err := tb.get(a, kindSink); err == nil || !strings.Contains(err.Error(), "colio_source* handle") {
		t.Fatalf("wrong kind accepted: %v", err)
	}
	if _, err := tb.take(a, kindSource); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(token, kind) (any, error){tb.get, tb.take} {
		if _, err := f(a, kindSource); err == nil || !strings.Contains(err.Error(), "already freed") {
			t.Fatalf("freed handle accepted: %v", err)
		}
	}
	// The slot is reused with a new generation: the old token stays dead.
	b, _ := tb.put(kindSource, "b")
	if b == a {
		t.Fatal("reused token")
	}
	if _, err := tb.get(a, kindSource); err == nil {
		t.Fatal("stale token accepted")
	}
	for _, forged := range []token{0, 1, 0x1234, ^token(0), b + 1, b ^ 1<<40} {
		if _, err := tb.get(forged, kindSource); err == nil {
			t.Fatalf("forged token %#x accepted", uint64(forged))
		}
	}
	if tb.live() != 1 {
		t.Fatalf("live = %d", tb.live())
	}
}

func TestHandleGenerationWraps(t *testing.T) {
	var tb table
	a, _ := tb.put(kindFuture, 1)
	tb.slots[0].gen = 1<<32 - 1
	tb.take(a, kindFuture) // must not crash; the token checked gen 1
	tb.slots[0].gen = 1<<32 - 1
	tb.slots[0].kind, tb.slots[0].obj = kindFuture, 2
	tb.free = nil
	tok := makeToken(kindFuture, 1<<32-1, 0)
	if _, err := tb.take(tok, kindFuture); err != nil {
		t.Fatal(err)
	}
	if tb.slots[0].gen != 1 {
		t.Fatalf("generation wrapped to %d, want 1 (0 is never valid)", tb.slots[0].gen)
	}
}

func TestHandlesConcurrent(t *testing.T) {
	var tb table
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				tok, err := tb.put(kindSink, i)
				if err != nil {
					t.Error(err)
					return
				}
				if obj, err := tb.get(tok, kindSink); err != nil || obj != i {
					t.Errorf("get: %v %v", obj, err)
					return
				}
				if _, err := tb.take(tok, kindSink); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if tb.live() != 0 || len(tb.slots) > 8 {
		t.Fatalf("live %d, slots %d", tb.live(), len(tb.slots))
	}
}
