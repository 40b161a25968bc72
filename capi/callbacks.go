package main

/*
#include "colioi.h"

int colioi_callbacks_stopped(void);
*/
import "C"

import (
	"context"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// User callback structs arrive here as colio's own copy in C memory (the C
// entry point copies the caller's struct, whatever its struct_size, into a
// zero-filled struct of this version). Go keeps only that C pointer: the
// user's ctx is an opaque C value and never sits in a Go variable, where a
// stray integer could look like a Go pointer to the collector. The copy is
// freed by the release shim, after the user's release.

const knownCallbackFlags = C.COLIO_CALLBACK_CONCURRENT | C.COLIO_CALLBACK_FAST

func checkCallbackFlags(name string, flags C.uint32_t) C.int {
	if flags&^knownCallbackFlags != 0 {
		return invalid(name, "unknown callback flags %#x (known: COLIO_CALLBACK_CONCURRENT, COLIO_CALLBACK_FAST)",
			uint32(flags&^knownCallbackFlags))
	}
	return C.COLIO_OK
}

// callbackError is the error of a callback that returned ret < 0. A value
// in errno's range is taken as a negated errno, as the header asks.
func callbackError(what string, ret int64, off int64) error {
	e := &errs.Error{Kind: errs.CallbackFailed}
	if C.colioi_callbacks_stopped() != 0 {
		// The shim refused to call it (see callbacks.c); say why, not "-125".
		e.Msg = "colio: " + what + " callback not called: callbacks were stopped by colio_stop_callbacks (the program is exiting)"
		e.Errno = syscall.ECANCELED
		return e
	}
	if off >= 0 {
		e.Msg = fmt.Sprintf("colio: %s callback failed at offset %d (returned %d)", what, off, ret)
	} else {
		e.Msg = fmt.Sprintf("colio: %s callback failed (returned %d)", what, ret)
	}
	if ret < 0 && ret >= -4095 {
		e.Errno = syscall.Errno(-ret)
		e.Msg += ": " + e.Errno.Error()
	}
	return e
}

// level is the pool level to hand a callback: the running task's ctx says
// where its own submissions go.
func level(ctx context.Context) C.int { return C.int(pool.LevelOf(ctx)) }

func newCallbackSource(name string, cb *C.colio_source_callbacks, size C.int64_t) (source.Source, C.int) {
	if cb.read == nil {
		return nil, invalid(name, "cb->read is NULL")
	}
	if rc := checkCallbackFlags(name, cb.flags); rc != C.COLIO_OK {
		return nil, rc
	}
	if size < 0 {
		return nil, invalid(name, "size %d is negative", int64(size))
	}
	n := int64(size)
	s, err := source.FromCallbacks(source.CallbackOptions{
		Read: func(ctx context.Context, p []byte, off int64) (int, error) {
			// p is never empty here, and is C memory (the caller's buffer).
			r := int64(C.colioi_call_source_read(cb, unsafe.Pointer(&p[0]), C.int64_t(len(p)), C.int64_t(off), level(ctx)))
			if r < 0 {
				return 0, callbackError("read", r, off)
			}
			if r > int64(len(p)) {
				return 0, errs.New(errs.CallbackFailed, "colio: read callback returned %d for a request of %d bytes at offset %d", r, len(p), off)
			}
			return int(r), nil
		},
		Size:       func() (int64, error) { return n, nil },
		Release:    func() { C.colioi_call_source_release(cb) },
		Concurrent: cb.flags&C.COLIO_CALLBACK_CONCURRENT != 0,
		Fast:       cb.flags&C.COLIO_CALLBACK_FAST != 0,
	})
	if err != nil {
		return nil, fail(name, err)
	}
	return s, C.COLIO_OK
}

func newCallbackSink(name string, cb *C.colio_sink_callbacks) (sink.Sink, C.int) {
	if cb.write == nil {
		return nil, invalid(name, "cb->write is NULL")
	}
	if rc := checkCallbackFlags(name, cb.flags); rc != C.COLIO_OK {
		return nil, rc
	}
	if cb.append_start < 0 {
		return nil, invalid(name, "cb->append_start %d is negative", int64(cb.append_start))
	}
	opt := sink.CallbackOptions{
		Write: func(ctx context.Context, p []byte, off int64) (int, error) {
			r := int64(C.colioi_call_sink_write(cb, unsafe.Pointer(&p[0]), C.int64_t(len(p)), C.int64_t(off), level(ctx)))
			if r < 0 {
				return 0, callbackError("write", r, off)
			}
			if r > int64(len(p)) {
				return 0, errs.New(errs.CallbackFailed, "colio: write callback returned %d for a request of %d bytes at offset %d", r, len(p), off)
			}
			return int(r), nil
		},
		Release:    func() { C.colioi_call_sink_release(cb) },
		Start:      int64(cb.append_start),
		Concurrent: cb.flags&C.COLIO_CALLBACK_CONCURRENT != 0,
		Fast:       cb.flags&C.COLIO_CALLBACK_FAST != 0,
	}
	if cb.flush != nil {
		opt.Flush = func(ctx context.Context, fsync bool) error {
			f := C.int(0)
			if fsync {
				f = 1
			}
			if r := C.colioi_call_sink_flush(cb, f, level(ctx)); r < 0 {
				return callbackError("flush", int64(r), -1)
			}
			return nil
		}
	}
	s, err := sink.FromCallbacks(opt)
	if err != nil {
		return nil, fail(name, err)
	}
	return s, C.COLIO_OK
}
