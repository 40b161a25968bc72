package workq

import (
	"testing"
	"time"
)

// A wake-up channel goes back to the pool empty. A taker that was
// signalled but woke by the broadcast (or its deadline) left the signal in
// its channel; parked again on it, the next signal, sent under q.mu, would
// block on the full channel and hang the queue.
func TestForgetEmptiesSignalledChannel(t *testing.T) {
	q := New(func() int { return 1 })
	for _, leaving := range []bool{false, true} {
		mine := make(chan struct{}, 1)
		q.mu.Lock()
		q.waiters = append(q.waiters, mine)
		q.signalLocked() // the signal the taker did not receive
		q.changedLocked()
		q.mu.Unlock()
		q.forget(mine, leaving)
		if len(mine) != 0 {
			t.Fatalf("leaving %v: the forgotten channel still holds its signal", leaving)
		}
	}
	// Not signalled: forget takes it off the waiters.
	mine := make(chan struct{}, 1)
	q.mu.Lock()
	q.waiters = append(q.waiters, mine)
	q.mu.Unlock()
	q.forget(mine, false)
	if len(q.waiters) != 0 || len(mine) != 0 {
		t.Fatalf("forget of an unsignalled taker: %d waiters, %d in its channel", len(q.waiters), len(mine))
	}
}

// BenchmarkParkWake: a worker waits on an empty queue (colio_work_wait),
// is woken by a push, takes the job and hands it back; the submitter waits
// for the hand-back before the next push, so every round parks once.
//
//	go test -run '^$' -bench ParkWake -benchmem ./internal/workq/
func BenchmarkParkWake(b *testing.B) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	back := make(chan struct{}, 1)
	j := &Job{Buf: make([]byte, 1), Part: &PartFuncs{
		OnBegin:  func() bool { return true },
		OnFinish: func(int, error) { back <- struct{}{} },
		OnFail:   func(error) { back <- struct{}{} },
	}}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if q.Wait(time.Minute) != nil {
				continue
			}
			if w, _, err := q.Step(0, nil); err == nil && w.Token != 0 {
				q.Done(w.Token, 1, nil)
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.Push(j)
		<-back
	}
	b.StopTimer()
	close(stop)
	o.Push(j) // wakes the worker to see stop
	<-back
}
