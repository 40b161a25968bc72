package readahead

import (
	"errors"
	"syscall"
	"testing"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
)

// A stream asks for bufSize x depth bytes up front, and both come from
// callers (colio.open's buffer_size and depth). Before the bound,
// Open(1 GiB, 1024) made Go's allocator abort the whole process with
// "fatal error: runtime: out of memory", which no recover catches.
func TestOpenRefusesMoreMemoryThanTheMachineHas(t *testing.T) {
	e := newEngine()
	src := engine.NewSource(&fakes.SlowSource{Data: fakes.Pattern(1<<20, 9)})
	_, err := Open(nil, e, src, 0, 1<<30, 1024)
	var ce *errs.Error
	if !errors.As(err, &ce) || ce.Kind != errs.NoSpace || ce.Errno != syscall.ENOMEM {
		t.Fatalf("Open(1 GiB x 1024) = %v; want a NoSpace error with ENOMEM", err)
	}
	// what fits still opens
	s, err := Open(nil, e, src, 0, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
