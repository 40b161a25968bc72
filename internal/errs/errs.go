// Package errs is colio's error vocabulary. Every error the engine returns
// carries a Kind, so that the C API can map it to a status code and the
// Python package to an exception class, without parsing messages.
package errs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// Kind classifies an error. The values mirror the COLIO_E* codes.
type Kind int

const (
	Internal Kind = iota
	Invalid
	IO
	NotFound
	Closed
	Timeout
	Cancelled
	NotSupported
	CallbackFailed
	NoSpace
	Forked
)

var kindNames = [...]string{
	Internal:       "internal error",
	Invalid:        "invalid argument",
	IO:             "I/O error",
	NotFound:       "not found",
	Closed:         "closed",
	Timeout:        "timed out",
	Cancelled:      "cancelled",
	NotSupported:   "not supported",
	CallbackFailed: "callback failed",
	NoSpace:        "out of space",
	Forked:         "process forked",
}

func (k Kind) String() string {
	if int(k) >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is an error with a Kind, an optional OS errno and an optional cause.
type Error struct {
	Kind  Kind
	Msg   string
	Errno syscall.Errno // 0 when no OS error is involved
	Err   error         // cause, may be nil
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, errs.ErrCancelled) and friends match by kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Err == nil && t.Kind == e.Kind
}

// Sentinels for errors.Is; they match any *Error of their kind.
var (
	ErrInvalid      = &Error{Kind: Invalid}
	ErrIO           = &Error{Kind: IO}
	ErrNotFound     = &Error{Kind: NotFound}
	ErrClosed       = &Error{Kind: Closed}
	ErrTimeout      = &Error{Kind: Timeout}
	ErrCancelled    = &Error{Kind: Cancelled}
	ErrNotSupported = &Error{Kind: NotSupported}
	ErrCallback     = &Error{Kind: CallbackFailed}
	ErrNoSpace      = &Error{Kind: NoSpace}
	ErrInternal     = &Error{Kind: Internal}
)

// New makes an error of kind k.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Wrap makes an error of kind k with a cause. If the cause holds an errno it
// is kept, and the kind is refined from it (ENOENT is NotFound, ENOSPC is
// NoSpace) so callers can tell a missing file from a failing disk.
func Wrap(k Kind, cause error, format string, args ...any) *Error {
	e := &Error{Kind: k, Msg: fmt.Sprintf(format, args...), Err: cause}
	var errno syscall.Errno
	if errors.As(cause, &errno) {
		e.Errno = errno
		switch errno {
		case syscall.ENOENT:
			e.Kind = NotFound
		case syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG:
			e.Kind = NoSpace
		case syscall.EINVAL, syscall.EISDIR, syscall.EBADF:
			if k == IO {
				e.Kind = Invalid
			}
		}
	} else if errors.Is(cause, fs.ErrNotExist) {
		e.Kind = NotFound
	}
	return e
}

// KindOf returns the kind of err: the kind of the first *Error in its chain,
// Internal for anything else.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// ErrnoOf returns the OS errno carried by err, or 0.
func ErrnoOf(err error) syscall.Errno {
	var e *Error
	if errors.As(err, &e) && e.Errno != 0 {
		return e.Errno
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}
