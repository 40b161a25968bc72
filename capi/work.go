package main

/*
#include "colioi.h"

int colioi_callbacks_stopped(void);

// colio_work_note as Go writes it: the future as the integer token it is,
// so that no Go pointer holds a value that is not one.
typedef struct {
  uint64_t tag;
  uintptr_t future;
  int64_t nbytes;
  int status;
} colioi_work_note;
_Static_assert(sizeof(colioi_work_note) == sizeof(colio_work_note), "colio_work_note layout");
_Static_assert(offsetof(colioi_work_note, future) == offsetof(colio_work_note, future), "colio_work_note layout");
_Static_assert(offsetof(colioi_work_note, status) == offsetof(colio_work_note, status), "colio_work_note layout");
*/
import "C"

import (
	"syscall"
	"time"
	"unsafe"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
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
	d, rc := waitTimeout(name, timeoutNs)
	if rc != C.COLIO_OK {
		return rc
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

//export colioGoReadAsyncTagged
func colioGoReadAsyncTagged(src C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t, tag C.uint64_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_read_async_tagged"
	defer recoverInto(name, &rc)
	e, s, p, rc := readArgs(name, src, buf, size)
	if rc != C.COLIO_OK {
		return rc
	}
	// Only the workers of queued sources collect notes: for any other
	// source the future's end would reach nobody.
	if _, ok := s.Underlying().(source.Offloader); !ok {
		return invalid(name, "the source is not a queued source (colio_source_from_queue); use colio_read_async")
	}
	f, err := e.Read(ctxAt(int(level)), s, p, int64(off))
	if err != nil {
		return fail(name, err)
	}
	// The note's fields and the handle are one object, and it is the
	// future's hook itself: a closure per read was one more allocation.
	wn := &workNote{futureObj: futureObj{f: f}, tag: uint64(tag)}
	h, err := handles.put(kindFuture, &wn.futureObj)
	if err != nil {
		f.WaitTimeout(-1) // the buffer is the caller's again only once no part uses it
		return invalid(name, "%v", err)
	}
	wn.handle = uintptr(h)
	*out = C.uintptr_t(h)
	// On the goroutine that ends the future: usually the worker handing
	// back its last part, which collects the note in the same call.
	f.OnCompleteHook(wn)
	return C.COLIO_OK
}

// workNote is a tagged read's future handle with what its note says.
type workNote struct {
	futureObj
	tag    uint64
	handle uintptr
}

func (wn *workNote) FutureDone(f *future.Future) {
	workQueue.Post(workq.Note{Tag: wn.tag, Handle: wn.handle, N: f.N(), Err: f.Err()})
}

// maxNotes bounds the notes one step hands out (and the Go buffer for them).
const maxNotes = 16

//export colioGoWorkStep
func colioGoWorkStep(back, result C.int64_t, handed *C.int, timeoutNs C.int64_t, notes unsafe.Pointer, max C.int64_t, nnotes *C.int64_t,
	ctx *C.uintptr_t, buf *unsafe.Pointer, size, off, tok, taken *C.int64_t, level *C.int) (rc C.int) {
	const name = "colio_work_step"
	defer recoverInto(name, &rc)
	d, rc := waitTimeout(name, timeoutNs)
	if rc != C.COLIO_OK {
		return rc
	}
	// On the stack: a buffer per call on the heap, with its error
	// interfaces, made the poll of an empty queue 8 us of GC work (1 us
	// without).
	var stack [maxNotes]workq.Note
	got := stack[:min(int64(max), maxNotes)]
	var w workq.Work
	var k int
	var err error
	if back != 0 {
		n := int64(result)
		var perr error
		if n < 0 {
			// Only a failure needs the part's offset: a lookup of every
			// part was one more lock of the queue per part.
			j, ok := workQueue.Lookup(uint64(back))
			if !ok {
				return invalid(name, "token %d is not a part that was taken and not yet handed back", int64(back))
			}
			perr = workError(n, j.Off)
			n = 0
		}
		var handedBack bool
		w, k, handedBack, err = workQueue.StepAfter(uint64(back), int(n), perr, d, got)
		if !handedBack {
			return invalid(name, "token %d is not a part that was taken and not yet handed back", int64(back))
		}
		*handed = 1
	} else {
		w, k, err = workQueue.Step(d, got)
	}
	for err == nil && w.Token != 0 && C.colioi_callbacks_stopped() != 0 {
		workQueue.Done(w.Token, 0, callbackError("read", -int64(syscall.ECANCELED), w.Off))
		var more int
		w, more, err = workQueue.Step(0, got[k:])
		k += more
		if err == workq.ErrTimeout && k > 0 {
			err = nil
		}
	}
	if k > 0 {
		deliverNotes(got[:k], unsafe.Slice((*C.colioi_work_note)(notes), k))
		*nnotes = C.int64_t(k)
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
	if w.Token == 0 {
		return C.COLIO_OK
	}
	*ctx = C.uintptr_t(w.Ctx)
	*buf = unsafe.Pointer(&w.Buf[0])
	*size = C.int64_t(len(w.Buf))
	*off = C.int64_t(w.Off)
	*tok = C.int64_t(w.Token)
	*taken = C.int64_t(w.Out)
	*level = C.int(w.Level)
	return C.COLIO_OK
}

// deliverNotes writes the notes out and frees the futures that ended
// without an error message to ask for (done or cancelled): the binding
// completes its own future from the note and would otherwise pay one more
// call per read to free the C one. A failed one stays valid for
// colio_future_error; the binding frees it.
func deliverNotes(notes []workq.Note, out []C.colioi_work_note) {
	for i, n := range notes {
		code := codeOf(n.Err)
		out[i] = C.colioi_work_note{tag: C.uint64_t(n.Tag), future: C.uintptr_t(n.Handle),
			nbytes: C.int64_t(n.N), status: code}
		if code == C.COLIO_OK || code == C.COLIO_ECANCELLED {
			colioGoFutureFree(C.uintptr_t(n.Handle), 0)
		}
	}
}

//export colioGoWorkWait
func colioGoWorkWait(timeoutNs C.int64_t) (rc C.int) {
	const name = "colio_work_wait"
	defer recoverInto(name, &rc)
	d, rc := waitTimeout(name, timeoutNs)
	if rc != C.COLIO_OK {
		return rc
	}
	switch err := workQueue.Wait(d); err {
	case nil:
		return C.COLIO_OK
	case workq.ErrTimeout:
		return setError(C.COLIO_ETIMEDOUT, 0, name+": nothing came within the timeout")
	case workq.ErrNoSources:
		return setError(C.COLIO_ECLOSED, 0, name+": no queued source is open")
	default:
		return fail(name, err)
	}
}

// waitTimeout is a work call's timeout_ns as the queue takes it: a
// duration, or -1 for COLIO_WAIT_FOREVER; another negative is invalid.
func waitTimeout(name string, timeoutNs C.int64_t) (time.Duration, C.int) {
	if timeoutNs == C.COLIO_WAIT_FOREVER {
		return -1, C.COLIO_OK
	}
	if timeoutNs < 0 {
		return 0, invalid(name, "timeout_ns %d is negative (use COLIO_WAIT_FOREVER to wait without a limit)", int64(timeoutNs))
	}
	return time.Duration(timeoutNs), C.COLIO_OK
}
