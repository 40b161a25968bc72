package main

/*
#include <stdlib.h>
#include "colioi.h"
*/
import "C"

import (
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/colio-dev/colio/internal/future"
)

// futureObj is what a colio_future* token stands for.
type futureObj struct {
	f     *future.Future
	batch *batchObj // the ranges of a colio_readv_batch future, else nil
	fetch *fetchObj // the objects of a colio_fetch_urls future, else nil

	mu     sync.Mutex
	msg    *C.char       // C copy of the error message, made on first ask
	cbDone chan struct{} // set when a completion callback is registered; closed after it ran
	cbRun  func()        // the registered callback's call into C
	cbStep int           // where that callback is: cbPending, cbRunning, cbFinished
	freed  bool
}

const (
	cbPending = iota + 1
	cbRunning
	cbFinished
)

// runCallback runs the completion callback unless it has already started:
// the notifier's queued call and a free on the notifier (which runs it
// ahead of its turn, see colioGoFutureFree) race for it, and the first one
// runs it.
func (fo *futureObj) runCallback() {
	fo.mu.Lock()
	if fo.cbStep != cbPending {
		fo.mu.Unlock()
		return
	}
	fo.cbStep = cbRunning
	run, done := fo.cbRun, fo.cbDone
	fo.mu.Unlock()
	defer func() {
		fo.mu.Lock()
		fo.cbStep = cbFinished
		fo.cbRun = nil
		fo.mu.Unlock()
		close(done)
	}()
	run()
}

func itoa(i int) string { return strconv.Itoa(i) }

// putFutures registers futs and writes their tokens to outs. If the table
// fills up midway (hundreds of millions of live handles), the futures that
// got no token are still running on the caller's buffers: wait for all of
// them, so that no buffer is written after the call fails, and free the
// tokens already handed out.
func putFutures(name string, outs []C.uintptr_t, futs ...*future.Future) C.int {
	for i, f := range futs {
		tok, err := handles.put(kindFuture, &futureObj{f: f})
		if err != nil {
			for j := range futs {
				futs[j].WaitTimeout(-1)
			}
			for j := 0; j < i; j++ {
				handles.take(token(outs[j]), kindFuture)
				outs[j] = 0
			}
			return invalid(name, "%v", err)
		}
		outs[i] = C.uintptr_t(tok)
	}
	return C.COLIO_OK
}

func futureOf(name string, tok C.uintptr_t) (*futureObj, C.int) {
	obj, err := handles.get(token(tok), kindFuture)
	if err != nil {
		return nil, fail(name, err)
	}
	return obj.(*futureObj), C.COLIO_OK
}

// result is a completed future's status code and byte count.
func result(f *future.Future) (C.int, C.int64_t) {
	return codeOf(f.Err()), C.int64_t(f.N())
}

//export colioGoFutureWait
func colioGoFutureWait(fut C.uintptr_t, timeoutNs C.int64_t, nbytes *C.int64_t) (rc C.int) {
	const name = "colio_future_wait"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	if timeoutNs < 0 && timeoutNs != C.COLIO_WAIT_FOREVER {
		return invalid(name, "timeout_ns %d is negative (use COLIO_WAIT_FOREVER to wait without a limit)", int64(timeoutNs))
	}
	f := fo.f
	var n int64
	var err error
	switch {
	case f.Done():
		n, err = f.N(), f.Err()
	case timeoutNs == 0:
		*nbytes = C.int64_t(f.N())
		return setError(C.COLIO_ETIMEDOUT, 0, name+": the operation has not completed yet (polled with timeout 0)")
	default:
		n, err = f.WaitTimeout(time.Duration(timeoutNs))
		if err != nil && !f.Done() {
			*nbytes = C.int64_t(n)
			return setError(C.COLIO_ETIMEDOUT, 0, name+": the operation did not complete within "+
				time.Duration(timeoutNs).String()+"; it goes on and the future stays valid")
		}
		n, err = f.N(), f.Err()
	}
	*nbytes = C.int64_t(n)
	if err != nil {
		// The failure belongs to the future; the thread's last error
		// repeats it so that a caller can print colio_last_error().
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoFutureDone
func colioGoFutureDone(fut C.uintptr_t) (rc C.int) {
	const name = "colio_future_done"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	if fo.f.Done() {
		return 1
	}
	return 0
}

//export colioGoFutureCancel
func colioGoFutureCancel(fut C.uintptr_t, cancelled *C.int) (rc C.int) {
	const name = "colio_future_cancel"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	*cancelled = 0
	if fo.batch != nil {
		if fo.batch.cancel() {
			*cancelled = 1
		}
	} else if fo.f.Cancel() {
		*cancelled = 1
	}
	return C.COLIO_OK
}

//export colioGoFutureOnDone
func colioGoFutureOnDone(fut C.uintptr_t, cb C.colio_future_callback, ctx C.uintptr_t) (rc C.int) {
	const name = "colio_future_on_done"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	if cb == nil {
		return invalid(name, "cb is NULL")
	}
	fo.mu.Lock()
	if fo.cbDone != nil {
		fo.mu.Unlock()
		return invalid(name, "the future already has a completion callback (one per future)")
	}
	fo.cbDone = make(chan struct{})
	fo.cbStep = cbPending
	// Runs on the notifier goroutine, never on an I/O worker or the
	// caller. ctx stays a C integer: it is the user's, opaque to colio.
	fo.cbRun = func() {
		st, n := result(fo.f)
		C.colioi_call_done(cb, ctx, fut, st, n)
	}
	fo.mu.Unlock()
	fo.f.OnDone(func(*future.Future) { fo.runCallback() })
	return C.COLIO_OK
}

//export colioGoFutureError
func colioGoFutureError(fut C.uintptr_t, message **C.char, errnum *C.int) (rc C.int) {
	const name = "colio_future_error"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	if !fo.f.Done() {
		return C.COLIO_ETIMEDOUT
	}
	err := fo.f.Err()
	if err == nil {
		return C.COLIO_OK
	}
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if fo.freed {
		return invalid(name, "the future was freed during the call")
	}
	if fo.msg == nil {
		fo.msg = C.CString(err.Error())
	}
	*message = fo.msg
	*errnum = C.int(errnoOf(err))
	return codeOf(err)
}

//export colioGoFutureOffset
func colioGoFutureOffset(fut C.uintptr_t, out *C.int64_t) (rc C.int) {
	const name = "colio_future_offset"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	*out = C.int64_t(fo.f.Offset())
	return C.COLIO_OK
}

// colioGoFutureFree waits for the operation, so that no buffer is written
// after free returns, and for its completion callback, so that the
// callback's ctx is not used after free returns; only then does it remove
// the handle, so the callback can still use the future while it runs.
//
// inDone is the future whose callback the calling thread is running (the
// notifier), or 0. On the notifier, waiting for a callback queued behind
// the running one would wait forever, and not waiting would let it run
// with a ctx its owner has let go ("free the batch from the first
// callback"): so free runs that callback here, now. A callback that is
// already running on the notifier is up this thread's stack (the caller's
// own, or the one whose free ran this callback): it cannot be waited for,
// and freeing under it is refused.
//
//export colioGoFutureFree
func colioGoFutureFree(fut C.uintptr_t, inDone C.uintptr_t) (rc C.int) {
	const name = "colio_future_free"
	defer recoverInto(name, &rc)
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	fo.f.WaitTimeout(-1)
	fo.mu.Lock()
	done, step := fo.cbDone, fo.cbStep
	fo.mu.Unlock()
	switch {
	case done == nil:
	case inDone == 0:
		<-done
	case step == cbRunning:
		return invalid(name, "the future's completion callback is still running on this thread "+
			"(a callback must not free its own future, or the one whose free ran it); free it after the callback returns")
	default:
		fo.runCallback()
	}
	if _, err := handles.take(token(fut), kindFuture); err != nil {
		return fail(name, err) // freed by another thread meanwhile
	}
	fo.mu.Lock()
	fo.freed = true
	if fo.msg != nil {
		C.free(unsafe.Pointer(fo.msg))
		fo.msg = nil
	}
	fo.mu.Unlock()
	if fo.batch != nil {
		fo.batch.freeMsgs()
	}
	return C.COLIO_OK
}
