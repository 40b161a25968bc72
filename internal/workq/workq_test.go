package workq

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/errs"
)

const watchdog = 10 * time.Second

type rec struct {
	began, finished, failed atomic.Int32
	err                     atomic.Value
}

func job(r *rec, off int64) *Job {
	return &Job{
		Buf: make([]byte, 4), Off: off,
		Part: &PartFuncs{
			OnBegin:  func() bool { r.began.Add(1); return true },
			OnFinish: func(int, error) { r.finished.Add(1) },
			OnFail:   func(err error) { r.failed.Add(1); r.err.Store(err) },
		},
	}
}

func TestLimitAndBlocked(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(7, false)
	var r rec
	o.Push(job(&r, 0))
	o.Push(job(&r, 4))
	w, err := q.Take(watchdog)
	if err != nil || w.Ctx != 7 || w.Off != 0 {
		t.Fatalf("take: %+v %v", w, err)
	}
	// The limit is 1 and one job is out: the next waits.
	if _, err := q.Take(0); err != ErrTimeout {
		t.Fatalf("second take with one out: %v", err)
	}
	// Its worker blocks in a nested wait: another may take.
	q.Blocked(1)
	w2, err := q.Take(watchdog)
	if err != nil || w2.Off != 4 {
		t.Fatalf("take while blocked: %+v %v", w2, err)
	}
	q.Blocked(-1)
	q.Done(w2.Token, 4, nil)
	q.Done(w.Token, 4, nil)
	if r.finished.Load() != 2 {
		t.Fatal("not finished")
	}
	if q.Done(w.Token, 4, nil) {
		t.Fatal("a token was done twice")
	}
	o.Abort()
	o.Leave()
	if _, err := q.Take(watchdog); err != ErrNoSources {
		t.Fatalf("take with no sources: %v", err)
	}
}

func TestAbortFailsUntakenJobs(t *testing.T) {
	q := New(func() int { return 4 })
	a, b := q.Join(1, false), q.Join(2, false)
	var ra, rb rec
	a.Push(job(&ra, 0))
	a.Push(job(&ra, 4))
	b.Push(job(&rb, 0))
	a.Abort()
	if ra.failed.Load() != 2 || errs.KindOf(ra.err.Load().(error)) != errs.Closed {
		t.Fatalf("aborted jobs: %d failed", ra.failed.Load())
	}
	a.Push(job(&ra, 8)) // after Abort: failed at once
	if ra.failed.Load() != 3 {
		t.Fatal("a push after Abort was queued")
	}
	w, err := q.Take(watchdog)
	if err != nil || w.Ctx != 2 {
		t.Fatalf("the other source's job: %+v %v", w, err)
	}
	q.Done(w.Token, 4, nil)
}

func TestSerialOwnerOneAtATimeInOrder(t *testing.T) {
	q := New(func() int { return 8 })
	o := q.Join(1, true)
	var r rec
	for i := 0; i < 3; i++ {
		o.Push(job(&r, int64(i)))
	}
	for i := 0; i < 3; i++ {
		w, err := q.Take(watchdog)
		if err != nil || w.Off != int64(i) {
			t.Fatalf("take %d: %+v %v", i, w, err)
		}
		if _, err := q.Take(0); err != ErrTimeout {
			t.Fatalf("a serial source gave out two jobs at once: %v", err)
		}
		q.Done(w.Token, 4, nil)
	}
}

func TestTakeWakesOnPush(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	got := make(chan Work, 1)
	go func() {
		w, _ := q.Take(-1)
		got <- w
	}()
	time.Sleep(time.Millisecond)
	var r rec
	o.Push(job(&r, 12))
	select {
	case w := <-got:
		if w.Off != 12 {
			t.Fatalf("got %+v", w)
		}
		q.Done(w.Token, 4, nil)
	case <-time.After(watchdog):
		t.Fatal("Take was not woken by Push")
	}
}

func TestCancelledJobIsSkipped(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	var r rec
	j := job(&r, 0)
	j.Part.(*PartFuncs).OnBegin = func() bool { return false } // the engine ended it (cancelled)
	o.Push(j)
	o.Push(job(&r, 4))
	w, err := q.Take(watchdog)
	if err != nil || w.Off != 4 {
		t.Fatalf("take: %+v %v", w, err)
	}
	q.Done(w.Token, 4, nil)
}
