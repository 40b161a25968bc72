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
	j.Begin = func() bool { q.Post(Note{Tag: 12}); return false }
	o.Push(j)
	notes := make([]Note, 2)
	w, k, err := q.Step(watchdog, notes)
	if err != nil || k != 1 || notes[0].Tag != 12 || w.Token != 0 {
		t.Fatalf("step: %+v %d %v", w, k, err)
	}
	o.Leave()
}
