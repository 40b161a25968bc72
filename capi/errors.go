package main

/*
#include "colioi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
)

// codes maps the engine's error kinds to COLIO_E* codes, one to one.
var codes = [...]C.int{
	errs.Internal:       C.COLIO_EINTERNAL,
	errs.Invalid:        C.COLIO_EINVAL,
	errs.IO:             C.COLIO_EIO,
	errs.NotFound:       C.COLIO_ENOTFOUND,
	errs.Closed:         C.COLIO_ECLOSED,
	errs.Timeout:        C.COLIO_ETIMEDOUT,
	errs.Cancelled:      C.COLIO_ECANCELLED,
	errs.NotSupported:   C.COLIO_ENOTSUP,
	errs.CallbackFailed: C.COLIO_ECALLBACK,
	errs.NoSpace:        C.COLIO_ENOSPC,
	errs.Forked:         C.COLIO_EFORK,
}

// codeOf returns the status code for err (COLIO_OK for nil). Errors that
// are not the engine's own are classified here: a rejected setting and a
// bad handle are invalid arguments, anything else unknown is a bug.
func codeOf(err error) C.int {
	if err == nil {
		return C.COLIO_OK
	}
	var he *handleError
	var ce *config.Error
	if errors.As(err, &he) || errors.As(err, &ce) {
		return C.COLIO_EINVAL
	}
	k := errs.KindOf(err)
	if int(k) >= 0 && int(k) < len(codes) {
		return codes[k]
	}
	return C.COLIO_EINTERNAL
}

// message is err's text for C: prefixed with the entry point's name, with
// the engine's own "colio: " prefix dropped so it is not said twice.
func message(name string, err error) string {
	return name + ": " + strings.TrimPrefix(err.Error(), "colio: ")
}

// setError records code, errno and msg as the calling thread's last error
// and returns code. Go called from C runs on the caller's OS thread, so the
// C thread-local it writes is the caller's. msg is copied by C before the
// call returns, so passing its bytes does not hand C a Go pointer to keep.
func setError(code C.int, errno int, msg string) C.int {
	var p *C.char
	if len(msg) > 0 {
		p = (*C.char)(unsafe.Pointer(unsafe.StringData(msg)))
	}
	return C.colioi_set_error(code, C.int(errno), p, C.size_t(len(msg)))
}

// fail records err for the entry point name and returns its code.
func fail(name string, err error) C.int {
	return setError(codeOf(err), errnoOf(err), message(name, err))
}

// invalid records an invalid-argument error for name.
func invalid(name, format string, args ...any) C.int {
	return setError(C.COLIO_EINVAL, 0, name+": "+fmt.Sprintf(format, args...))
}

// recoverInto turns a panic in an export into COLIO_EINTERNAL. Every
// export defers it first: a panic must never unwind into C (that aborts
// the process), and a bug fails only the call it happened in.
func recoverInto(name string, rc *C.int) {
	if r := recover(); r != nil {
		*rc = setError(C.COLIO_EINTERNAL, 0,
			fmt.Sprintf("%s: internal error (a bug in colio; please report it with this message): panic: %v\n%s",
				name, r, debug.Stack()))
	}
}

// lastError reads the calling thread's last error (Go tests).
func lastError() (string, int) {
	return C.GoString(C.colio_last_error()), int(C.colio_last_errno())
}

// errnoOf is the OS errno err carries, or 0.
func errnoOf(err error) int { return int(errs.ErrnoOf(err)) }

// panicky and codeInternal let the Go tests check recoverInto the way
// every export uses it (test files cannot use cgo).
func panicky() (rc C.int) {
	defer recoverInto("colio_test_export", &rc)
	var m map[string]int
	m["x"]++ // a nil map write: a runtime panic
	return C.COLIO_OK
}

func codeInternal() C.int { return C.COLIO_EINTERNAL }
