package engine

import (
	"context"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/source"
	"github.com/colio-dev/colio/internal/workq"
)

// Closing a queued source fails the reads no worker took with a Closed
// error, a one-part read (made in one allocation with its future) and a
// split one alike, and each future reports done only then.
func TestOffloadedCloseFailsQueued(t *testing.T) {
	e := newEngine(t, func(c *config.Config) { c.TaskSize = 1000 })
	q := workq.New(func() int { return 1 })
	src := NewSource(source.NewQueued(q, 1, 10000, false))
	one, err := e.Read(context.Background(), src, make([]byte, 500), 0)
	if err != nil {
		t.Fatal(err)
	}
	split, err := e.Read(context.Background(), src, make([]byte, 2500), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if one.Done() || split.Done() {
		t.Fatal("a queued read is done before any worker ran it")
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]interface {
		WaitTimeout(time.Duration) (int64, error)
		Done() bool
	}{"one part": one, "three parts": split} {
		if n, err := f.WaitTimeout(time.Minute); errs.KindOf(err) != errs.Closed || n != 0 || !f.Done() {
			t.Fatalf("%s after Close: %d %v", name, n, err)
		}
	}
	if _, err := q.Take(0); err != workq.ErrNoSources {
		t.Fatalf("take after Close: %v", err)
	}
}
