package workq

import (
	"errors"
	"testing"
	"time"
)

func TestStepHandsOutNotesWithoutWaiting(t *testing.T) {
	q := New(func() int { return 2 })
	o := q.Join(1, false)
	q.Post(Note{Tag: 7, N: 3})
	notes := make([]Note, 4)
	start := time.Now()
	w, k, err := q.Step(watchdog, notes)
	if err != nil || k != 1 || notes[0].Tag != 7 || notes[0].N != 3 || w.Token != 0 {
		t.Fatalf("step: %+v %d %v", w, k, err)
	}
	if time.Since(start) > watchdog/2 {
		t.Fatal("a step with a note waited for a job")
	}
	// A note and a job come back together.
	var r rec
	o.Push(job(&r, 0))
	q.Post(Note{Tag: 8})
	w, k, err = q.Step(watchdog, notes)
	if err != nil || k != 1 || notes[0].Tag != 8 || w.Token == 0 || w.Off != 0 {
		t.Fatalf("step with a job and a note: %+v %d %v", w, k, err)
	}
	q.Done(w.Token, 4, nil)
	// Nothing left: a poll times out.
	if _, k, err := q.Step(0, notes); err != ErrTimeout || k != 0 {
		t.Fatalf("empty poll: %d %v", k, err)
	}
	o.Abort()
	o.Leave()
}

func TestStepCapsNotesAndKeepsTheRest(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	for i := 1; i <= 5; i++ {
		q.Post(Note{Tag: uint64(i)})
	}
	notes := make([]Note, 2)
	var tags []uint64
	for len(tags) < 5 {
		_, k, err := q.Step(0, notes)
		if err != nil {
			t.Fatalf("step after %v: %v", tags, err)
		}
		for _, n := range notes[:k] {
			tags = append(tags, n.Tag)
		}
	}
	for i, tag := range tags {
		if tag != uint64(i+1) {
			t.Fatalf("notes out of order or lost: %v", tags)
		}
	}
	o.Leave()
}

func TestWorkersRetireOnlyWithoutNotes(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	o.Leave()
	// Posted after the last source left (a read its close failed): the
	// worker must still collect it before it is told to retire.
	q.Post(Note{Tag: 9, Err: errors.New("closed")})
	notes := make([]Note, 4)
	_, k, err := q.Step(watchdog, notes)
	if err != nil || k != 1 || notes[0].Tag != 9 {
		t.Fatalf("step: %d %v", k, err)
	}
	if _, _, err := q.Step(watchdog, notes); err != ErrNoSources {
		t.Fatalf("step with nothing left: %v", err)
	}
}

func TestNoteWakesAWaitingStep(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	got := make(chan uint64, 1)
	go func() {
		notes := make([]Note, 1)
		_, k, err := q.Step(watchdog, notes)
		if err != nil || k != 1 {
			got <- 0
			return
		}
		got <- notes[0].Tag
	}()
	time.Sleep(10 * time.Millisecond) // let it wait (the test holds either way)
	q.Post(Note{Tag: 11})
	select {
	case tag := <-got:
		if tag != 11 {
			t.Fatalf("woken step got tag %d", tag)
		}
	case <-time.After(watchdog):
		t.Fatal("a waiting step was not woken by a note")
	}
	o.Leave()
}

func TestStepDropsCancelledJobsAndCollectsTheirNotes(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	var r rec
	j := job(&r, 0)
	// Begin fails (cancelled), and ending the part posts its note, as the
	// engine's hook does.
	j.Part.(*PartFuncs).OnBegin = func() bool { q.Post(Note{Tag: 12}); return false }
	o.Push(j)
	notes := make([]Note, 2)
	w, k, err := q.Step(watchdog, notes)
	if err != nil || k != 1 || notes[0].Tag != 12 || w.Token != 0 {
		t.Fatalf("step: %+v %d %v", w, k, err)
	}
	o.Leave()
}

// Failed before: with every place taken, a queued job woke an idle taker,
// which found nothing it could take and passed the wake-up on to the next
// idle one, in a ring, for as long as the job waited (tens of thousands of
// wake-ups a second; 9 Python threads switched 7,000 times a second each).
func TestNoWakeUpsWhileEveryPlaceIsTaken(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	var r rec
	o.Push(job(&r, 0))
	w, _, err := q.Step(watchdog, nil)
	if err != nil || w.Token == 0 {
		t.Fatalf("first take: %+v %v", w, err)
	}
	got := make(chan Work, 3)
	for i := 0; i < 3; i++ {
		go func() {
			w, _, _ := q.Step(watchdog, nil)
			got <- w
		}()
	}
	waiting := func() int { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiters) }
	for deadline := time.Now().Add(watchdog); waiting() < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the takers never waited")
		}
		time.Sleep(time.Millisecond)
	}
	q.mu.Lock()
	before := q.signals
	q.mu.Unlock()
	o.Push(job(&r, 4))
	time.Sleep(20 * time.Millisecond) // a ring would go round thousands of times meanwhile
	q.mu.Lock()
	woken := q.signals - before
	q.mu.Unlock()
	if woken != 0 {
		t.Fatalf("%d wake-ups for a job no taker could take", woken)
	}
	// Its place comes free: one taker gets it.
	q.Done(w.Token, 4, nil)
	select {
	case w2 := <-got:
		if w2.Off != 4 {
			t.Fatalf("the woken taker got %+v", w2)
		}
		q.Done(w2.Token, 4, nil)
	case <-time.After(watchdog):
		t.Fatal("no taker got the job once its place was free")
	}
	o.Abort()
	o.Leave()
	for i := 0; i < 2; i++ {
		select {
		case <-got:
		case <-time.After(watchdog):
			t.Fatal("the idle takers were not told to retire")
		}
	}
}

func TestStepAfterKeepsTheNextJobForItsWorker(t *testing.T) {
	q := New(func() int { return 1 })
	o := q.Join(1, false)
	var r rec
	o.Push(job(&r, 0))
	w, _, err := q.Step(watchdog, nil)
	if err != nil || w.Token == 0 {
		t.Fatalf("first take: %+v %v", w, err)
	}
	idle := make(chan Work, 1)
	go func() { w, _, _ := q.Step(watchdog, nil); idle <- w }()
	for deadline := time.Now().Add(watchdog); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		n := len(q.waiters)
		q.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle taker never waited")
		}
	}
	o.Push(job(&r, 4))
	q.mu.Lock()
	before := q.signals
	q.mu.Unlock()
	notes := make([]Note, 2)
	w2, _, ok, err := q.StepAfter(w.Token, 4, nil, 0, notes)
	if !ok || err != nil || w2.Off != 4 {
		t.Fatalf("step after: %+v %v %v", w2, ok, err)
	}
	q.mu.Lock()
	woken := q.signals - before
	q.mu.Unlock()
	if woken != 0 || r.finished.Load() != 1 {
		t.Fatalf("woken %d, finished %d", woken, r.finished.Load())
	}
	if _, _, ok, _ := q.StepAfter(w.Token, 4, nil, 0, notes); ok {
		t.Fatal("a token was handed back twice")
	}
	q.Done(w2.Token, 4, nil)
	o.Abort()
	o.Leave()
	select {
	case <-idle:
	case <-time.After(watchdog):
		t.Fatal("the idle taker was not told to retire")
	}
}

func TestWaitTakesNothing(t *testing.T) {
	q := New(func() int { return 2 })
	o := q.Join(1, true) // serial: one job out at a time
	if err := q.Wait(0); err != ErrTimeout {
		t.Fatalf("wait on an empty queue: %v", err)
	}
	var r rec
	o.Push(job(&r, 0))
	o.Push(job(&r, 4))
	if err := q.Wait(watchdog); err != nil {
		t.Fatalf("wait with a job queued: %v", err)
	}
	if r.began.Load() != 0 {
		t.Fatal("wait began a job")
	}
	w, _, err := q.Step(0, nil)
	if err != nil || w.Off != 0 {
		t.Fatalf("poll after the wait: %+v %v", w, err)
	}
	// The other job is its serial source's next: not takeable until the
	// first ends, so a wait does not return for it (no busy loop).
	if err := q.Wait(0); err != ErrTimeout {
		t.Fatalf("wait with only a serial source's next job: %v", err)
	}
	q.Post(Note{Tag: 1})
	if err := q.Wait(0); err != nil {
		t.Fatalf("wait with a note: %v", err)
	}
	notes := make([]Note, 1)
	w2, k, ok, err := q.StepAfter(w.Token, 4, nil, 0, notes)
	if !ok || err != nil || k != 1 || w2.Off != 4 {
		t.Fatalf("step after: %+v %d %v %v", w2, k, ok, err)
	}
	q.Done(w2.Token, 4, nil)
	o.Leave()
	if err := q.Wait(watchdog); err != ErrNoSources {
		t.Fatalf("wait with no source: %v", err)
	}
}
