package main

/*
#include "colioi.h"

int colioi_callbacks_stopped(void);
*/
import "C"

import (
	"syscall"
	"time"
	"unsafe"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/source"
	"github.com/colio-dev/colio/internal/workq"
)

// workQueue is the process's queue of parts for the callers' own workers
// (api_work.c). Its limit follows the python_workers setting.
var workQueue = workq.New(func() int {
	e, err := eng()
	if err != nil {
		return config.DefaultPythonWorkers
	}
	return e.Config().PythonWorkers
})

//export colioGoSourceFromQueue
func colioGoSourceFromQueue(size C.int64_t, flags C.uint32_t, ctx C.uintptr_t, out *C.uintptr_t) (rc C.int) {
	const name = "colio_source_from_queue"
	defer recoverInto(name, &rc)
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	if flags&^C.COLIO_CALLBACK_CONCURRENT != 0 {
		return invalid(name, "unknown flags %#x (known: COLIO_CALLBACK_CONCURRENT)", uint32(flags&^C.COLIO_CALLBACK_CONCURRENT))
	}
	if size < 0 {
		return invalid(name, "size %d is negative", int64(size))
	}
	s := source.NewQueued(workQueue, uintptr(ctx), int64(size), flags&C.COLIO_CALLBACK_CONCURRENT == 0)
	return putSource(name, s, out)
}

//export colioGoWorkTake
func colioGoWorkTake(timeoutNs C.int64_t, ctx *C.uintptr_t, buf *unsafe.Pointer, size, off, tok, taken *C.int64_t, level *C.int) (rc C.int) {
	const name = "colio_work_take"
	defer recoverInto(name, &rc)
	if timeoutNs < 0 && timeoutNs != C.COLIO_WAIT_FOREVER {
		return invalid(name, "timeout_ns %d is negative (use COLIO_WAIT_FOREVER to wait without a limit)", int64(timeoutNs))
	}
	d := time.Duration(timeoutNs)
	if timeoutNs == C.COLIO_WAIT_FOREVER {
		d = -1
	}
	w, err := workQueue.Take(d)
	// After colio_stop_callbacks (the interpreter is finalising) no part
	// reaches the caller's code: each fails as a stopped callback does.
	for err == nil && C.colioi_callbacks_stopped() != 0 {
		workQueue.Done(w.Token, 0, callbackError("read", -int64(syscall.ECANCELED), w.Off))
		w, err = workQueue.Take(0)
	}
	switch err {
	case nil:
	case workq.ErrTimeout:
		return setError(C.COLIO_ETIMEDOUT, 0, name+": no part came within the timeout")
	case workq.ErrNoSources:
		return setError(C.COLIO_ECLOSED, 0, name+": no queued source is open")
	default:
		return fail(name, err)
	}
	*ctx = C.uintptr_t(w.Ctx)
	// The buffer is the reader's C memory (never empty: the engine queues
	// no empty part).
	*buf = unsafe.Pointer(&w.Buf[0])
	*size = C.int64_t(len(w.Buf))
	*off = C.int64_t(w.Off)
	*tok = C.int64_t(w.Token)
	*taken = C.int64_t(w.Out)
	*level = C.int(w.Level)
	return C.COLIO_OK
}

//export colioGoWorkDone
func colioGoWorkDone(tok C.int64_t, result C.int64_t) (rc C.int) {
	const name = "colio_work_done"
	defer recoverInto(name, &rc)
	j, ok := workQueue.Lookup(uint64(tok))
	if !ok {
		return invalid(name, "token %d is not a part that was taken and not yet handed back", int64(tok))
	}
	var err error
	n := int64(result)
	if n < 0 {
		err = workError(n, j.Off)
		n = 0
	}
	workQueue.Done(uint64(tok), int(n), err)
	return C.COLIO_OK
}

// workError is the error of a part that a worker failed with result < 0
// (a negated errno, as for a read callback).
func workError(ret, off int64) error {
	e := &errs.Error{Kind: errs.CallbackFailed, Msg: "colio: read callback failed at offset " + itoa(int(off))}
	if ret >= -4095 {
		e.Errno = syscall.Errno(-ret)
		e.Msg += ": " + e.Errno.Error()
	}
	return e
}

//export colioGoWorkBlocked
func colioGoWorkBlocked(d C.int) { workQueue.Blocked(int(d)) }
