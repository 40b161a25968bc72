package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/source"
	"github.com/colio-dev/colio/internal/workq"
)

// A queued source's parts go to the work queue, run by whoever takes them
// (here a goroutine standing in for a Python thread); the engine keeps
// splitting, short-read checks, cancel and close.
func TestOffloadedSource(t *testing.T) {
	e := newEngine(t, func(c *config.Config) { c.TaskSize = 1000 })
	ref := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	q := workq.New(func() int { return 1 })
	src := NewSource(source.NewQueued(q, 42, int64(len(ref)), false))

	hold := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		for {
			w, err := q.Take(10 * time.Millisecond)
			select {
			case <-stop:
				if err == nil {
					q.Done(w.Token, 0, errs.New(errs.IO, "stopped"))
				}
				return
			default:
			}
			if err != nil {
				continue
			}
			if w.Off == 0 && w.Ctx == 42 {
				<-hold
			}
			q.Done(w.Token, copy(w.Buf, ref[w.Off:]), nil)
		}
	}()
	defer close(stop)

	buf := make([]byte, 3500)
	f, err := e.Read(context.Background(), src, buf, 0) // 4 parts; the first is held
	if err != nil {
		t.Fatal(err)
	}
	other := make([]byte, 10)
	g, _ := e.Read(context.Background(), src, other, 5000)
	if !g.Cancel() {
		t.Fatal("a part no worker took could not be cancelled")
	}
	close(hold)
	if n, err := f.WaitTimeout(time.Minute); err != nil || n != 3500 || !bytes.Equal(buf, ref[:3500]) {
		t.Fatalf("read: %d %v", n, err)
	}
	if _, err := g.WaitTimeout(time.Minute); errs.KindOf(err) != errs.Cancelled {
		t.Fatalf("cancelled read: %v", err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if q.Owners() != 0 {
		t.Fatal("closed source still joined")
	}
}
