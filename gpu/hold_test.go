package gpu_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// Device appends (COLIO_APPEND) reserve their offset at submission, so a
// mix of host and device appends lands in call order, byte-exact.
func TestDeviceAppend(t *testing.T) {
	r := newRig(t, nil)
	snk, ms := r.sink(1<<20, nil)
	head, tail := pattern(1000, 1), pattern(10, 2)
	dev := pattern(3*testTask+5, 3)
	dptr := r.dev.Alloc(r.ctx, len(dev))
	r.dev.Set(dptr, dev)
	f1, err := r.eng.Write(nil, snk, head, engine.Append)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := r.m.WriteSink(nil, snk, dptr, int64(len(dev)), engine.Append, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f3, err := r.eng.Write(nil, snk, tail, engine.Append)
	if err != nil {
		t.Fatal(err)
	}
	f4, err := r.m.WriteSink(nil, snk, dptr, 0, engine.Append, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f1)
	if n := waitOK(t, f2); n != int64(len(dev)) {
		t.Fatalf("device append wrote %d bytes", n)
	}
	waitOK(t, f3)
	waitOK(t, f4)
	if f2.Offset() != 1000 || f3.Offset() != int64(1000+len(dev)) || f4.Offset() != int64(1010+len(dev)) {
		t.Errorf("offsets %d %d %d, want 1000 %d %d", f2.Offset(), f3.Offset(), f4.Offset(), 1000+len(dev), 1010+len(dev))
	}
	got := ms.bytes()
	mustEqual(t, "head", got[:1000], head)
	mustEqual(t, "device part", got[1000:1000+len(dev)], dev)
	mustEqual(t, "tail", got[1000+len(dev):1010+len(dev)], tail)
}

// Closing a source while a device read runs: the running task finishes all
// its chunks (the source is closed only after), the tasks that had not
// started fail with a Closed error, and nothing hangs or leaks.
func TestCloseSourceDuringDeviceRead(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.Threads = 1 })
	size := 4 * testTask
	data := pattern(size, 4)
	gate := make(chan struct{})
	var first atomic.Bool
	var closed, readAfterClose atomic.Bool
	cb, err := source.FromCallbacks(source.CallbackOptions{
		Read: func(_ context.Context, p []byte, off int64) (int, error) {
			if closed.Load() {
				readAfterClose.Store(true)
			}
			if first.CompareAndSwap(false, true) {
				<-gate
			}
			return copy(p, data[off:]), nil
		},
		Size:       func() (int64, error) { return int64(size), nil },
		Release:    func() { closed.Store(true) },
		Concurrent: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	src := engine.NewSource(cb)
	dptr := r.dev.Alloc(r.ctx, size)
	f, err := r.m.ReadSource(nil, src, dptr, int64(size), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for !first.Load() {
		time.Sleep(time.Millisecond)
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- src.Close() }()
	for src.Acquire() == nil { // until Close has begun
		src.Release()
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-closeDone:
		t.Fatalf("Close returned (%v) under a running device task", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	if err := <-closeDone; err != nil {
		t.Fatal(err)
	}
	n, err := f.WaitTimeout(20 * time.Second)
	if !kindIs(err, errs.Closed) {
		t.Fatalf("read of a source closed midway: %v, want Closed", err)
	}
	if n != testTask {
		t.Errorf("moved %d bytes, want the running task's %d", n, testTask)
	}
	mustEqual(t, "the running task's bytes", r.dev.Bytes(dptr, testTask), data[:testTask])
	if readAfterClose.Load() {
		t.Error("the source was read after it was closed")
	}
	if st := r.m.Stats(); st.StreamSyncs != 1 || st.Errors != 1 {
		t.Errorf("stats %+v: want 1 sync, 1 failed request", st)
	}
}

// Closing a sink while a device write runs waits for every accepted
// write, queued tasks included (as for host writes): the future succeeds,
// the bytes are all there, and Close returns only then.
func TestCloseSinkDuringDeviceWrite(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.Threads = 1 })
	size := 4*testTask + 3
	data := pattern(size, 5)
	out := make([]byte, size)
	gate := make(chan struct{})
	var first, closed, writeAfterClose atomic.Bool
	cb, err := sink.FromCallbacks(sink.CallbackOptions{
		Write: func(_ context.Context, p []byte, off int64) (int, error) {
			if closed.Load() {
				writeAfterClose.Store(true)
			}
			if first.CompareAndSwap(false, true) {
				<-gate
			}
			return copy(out[off:], p), nil
		},
		Release:    func() { closed.Store(true) },
		Concurrent: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	snk := engine.NewSink(cb)
	dptr := r.dev.Alloc(r.ctx, size)
	r.dev.Set(dptr, data)
	f, err := r.m.WriteSink(nil, snk, dptr, int64(size), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for !first.Load() {
		time.Sleep(time.Millisecond)
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- snk.Close() }()
	for snk.Acquire() == nil {
		snk.Release()
		time.Sleep(time.Millisecond)
	}
	if _, err := r.m.WriteSink(nil, snk, dptr, 10, 0, gpu.Options{}); !kindIs(err, errs.Closed) {
		t.Errorf("device write to a closing sink: %v, want Closed", err)
	}
	select {
	case err := <-closeDone:
		t.Fatalf("Close returned (%v) under an accepted device write", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	if err := <-closeDone; err != nil {
		t.Fatal(err)
	}
	if !f.Done() {
		t.Error("Close returned before the device write completed")
	}
	if n := waitOK(t, f); n != int64(size) {
		t.Errorf("wrote %d bytes, want %d", n, size)
	}
	mustEqual(t, "sink", out, data)
	if writeAfterClose.Load() {
		t.Error("the sink was written after it was closed")
	}
}
