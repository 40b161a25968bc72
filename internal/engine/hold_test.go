package engine

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// A caller that holds a source (Acquire) keeps reading with ReadHeld after
// Close has begun; Close waits for the holder, and a plain read is refused
// meanwhile. After Release, Close finishes and Acquire is refused.
func TestSourceHoldLetsStepsFinish(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	e := newEngine(t, nil)
	data := fakes.Pattern(1<<20, 11)
	var closed atomic.Bool
	cb, err := source.FromCallbacks(source.CallbackOptions{
		Read: func(_ context.Context, p []byte, off int64) (int, error) {
			if closed.Load() {
				t.Error("read after the source was closed")
			}
			return copy(p, data[off:]), nil
		},
		Size:       func() (int64, error) { return int64(len(data)), nil },
		Release:    func() { closed.Store(true) },
		Concurrent: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	src := NewSource(cb)
	if err := src.Acquire(); err != nil {
		t.Fatal(err)
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- src.Close() }()
	// Wait until Close has begun (it refuses new users).
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := e.Read(context.Background(), src, make([]byte, 10), 0); errs.KindOf(err) == errs.Closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not begin")
		}
		time.Sleep(time.Millisecond)
	}
	// Held steps still run, in full, through the pool (not inline).
	for off := int64(0); off < int64(len(data)); off += 256 << 10 {
		buf := make([]byte, 256<<10)
		f, err := e.ReadHeld(context.Background(), src, buf, off)
		if err != nil {
			t.Fatalf("held read at %d: %v", off, err)
		}
		if n := mustWait(t, f); n != int64(len(buf)) || !bytes.Equal(buf, data[off:off+n]) {
			t.Fatalf("held read at %d: %d bytes, or wrong bytes", off, n)
		}
	}
	select {
	case err := <-closeDone:
		t.Fatalf("Close returned (%v) while the source was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	src.Release()
	if err := <-closeDone; err != nil {
		t.Fatal(err)
	}
	if !closed.Load() {
		t.Error("source not released by Close")
	}
	if err := src.Acquire(); errs.KindOf(err) != errs.Closed {
		t.Errorf("Acquire after Close: %v, want Closed", err)
	}
}

// A held sink accepts WriteHeld after Close has begun, Close waits for
// those writes and for the holder, and Flush waits for the holder too.
// ReserveAppend hands out offsets in call order, shared with appends.
func TestSinkHoldAndReserveAppend(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	e := newEngine(t, nil)
	mem := sink.NewMemory()
	k := NewSink(mem)
	f, err := e.Write(context.Background(), k, []byte("abc"), Append)
	if err != nil {
		t.Fatal(err)
	}
	mustWait(t, f)
	if off := k.ReserveAppend(4); off != 3 {
		t.Fatalf("ReserveAppend gave %d, want 3", off)
	}
	f, err = e.Write(context.Background(), k, []byte("xy"), Append)
	if err != nil {
		t.Fatal(err)
	}
	mustWait(t, f)
	if f.Offset() != 7 {
		t.Fatalf("append after a reservation went to %d, want 7", f.Offset())
	}
	if err := k.Acquire(); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- k.Flush(context.Background(), false) }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) while the sink was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- k.Close() }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := k.Acquire(); errs.KindOf(err) == errs.Closed {
			break
		}
		k.Release()
		if time.Now().After(deadline) {
			t.Fatal("Close did not begin")
		}
		time.Sleep(time.Millisecond)
	}
	f, err = e.WriteHeld(context.Background(), k, []byte("DEVI"), 3)
	if err != nil {
		t.Fatalf("held write: %v", err)
	}
	k.Release()
	if err := <-closeDone; err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if n := mustWait(t, f); n != 4 {
		t.Fatalf("held write wrote %d", n)
	}
	if got := string(mem.Bytes()); got != "abcDEVIxy" {
		t.Errorf("sink holds %q, want %q", got, "abcDEVIxy")
	}
	if err := k.Acquire(); errs.KindOf(err) != errs.Closed {
		t.Errorf("Acquire after Close: %v, want Closed", err)
	}
}
