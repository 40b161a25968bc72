package errs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestWrapRefinesKindFromErrno(t *testing.T) {
	for errno, kind := range map[syscall.Errno]Kind{
		syscall.ENOENT: NotFound, syscall.ENOSPC: NoSpace, syscall.EIO: IO, syscall.EISDIR: Invalid,
	} {
		e := Wrap(IO, fmt.Errorf("op: %w", errno), "colio: x")
		if e.Kind != kind || ErrnoOf(e) != errno {
			t.Errorf("%v: kind %v errno %v", errno, e.Kind, ErrnoOf(e))
		}
	}
}

func TestIsMatchesKind(t *testing.T) {
	err := fmt.Errorf("ctx: %w", New(Cancelled, "colio: gone"))
	if !errors.Is(err, ErrCancelled) || errors.Is(err, ErrClosed) {
		t.Fatal("errors.Is by kind")
	}
	if KindOf(errors.New("plain")) != Internal {
		t.Fatal("plain error kind")
	}
}
