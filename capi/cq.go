package main

/*
#include "colioi.h"
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

// cqObj is a completion queue: batches post one entry per finished range,
// and one colio_cq_wait collects many. A binding wakes once for a batch of
// completions instead of taking a callback (and, in Python, the GIL) per
// range.
type cqObj struct {
	mu     sync.Mutex
	items  []C.colio_cq_entry
	wake   chan struct{} // one token: "entries may be there"
	closed chan struct{} // closed by colio_cq_free
	gone   bool
}

func (q *cqObj) push(ctx C.uint64_t, nbytes C.int64_t, status C.int) {
	q.mu.Lock()
	if !q.gone { // entries for a freed queue have nobody to read them
		q.items = append(q.items, C.colio_cq_entry{ctx: ctx, nbytes: nbytes, status: status})
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func cqOf(name string, tok C.uintptr_t) (*cqObj, C.int) {
	obj, err := handles.get(token(tok), kindCQ)
	if err != nil {
		return nil, fail(name, err)
	}
	return obj.(*cqObj), C.COLIO_OK
}

//export colioGoCqNew
func colioGoCqNew(out *C.uintptr_t) (rc C.int) {
	const name = "colio_cq_new"
	defer recoverInto(name, &rc)
	q := &cqObj{wake: make(chan struct{}, 1), closed: make(chan struct{})}
	tok, err := handles.put(kindCQ, q)
	if err != nil {
		return invalid(name, "%v", err)
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

//export colioGoCqWait
func colioGoCqWait(cq C.uintptr_t, entries unsafe.Pointer, max C.int64_t, timeoutNs C.int64_t, count *C.int64_t) (rc C.int) {
	const name = "colio_cq_wait"
	defer recoverInto(name, &rc)
	*count = 0
	switch {
	case max <= 0:
		return invalid(name, "max %d must be at least 1", int64(max))
	case entries == nil:
		return invalid(name, "entries is NULL")
	case timeoutNs < 0 && timeoutNs != C.COLIO_WAIT_FOREVER:
		return invalid(name, "timeout_ns %d is negative (use COLIO_WAIT_FOREVER to wait without a limit)", int64(timeoutNs))
	case int64(max) > maxRanges:
		max = maxRanges
	}
	q, rc := cqOf(name, cq)
	if rc != C.COLIO_OK {
		return rc
	}
	out := unsafe.Slice((*C.colio_cq_entry)(entries), int(max))
	var timeout <-chan time.Time
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			k := copy(out, q.items)
			left := copy(q.items, q.items[k:])
			q.items = q.items[:left]
			q.mu.Unlock()
			if left > 0 { // pass the token on to another waiter
				select {
				case q.wake <- struct{}{}:
				default:
				}
			}
			*count = C.int64_t(k)
			return C.COLIO_OK
		}
		gone := q.gone
		q.mu.Unlock()
		if gone {
			return setError(C.COLIO_ECLOSED, 0, name+": the completion queue was freed")
		}
		if timeoutNs == 0 {
			return setError(C.COLIO_ETIMEDOUT, 0, name+": no completion yet (polled with timeout 0)")
		}
		if timeout == nil && timeoutNs != C.COLIO_WAIT_FOREVER {
			t := time.NewTimer(time.Duration(timeoutNs))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-q.wake:
		case <-q.closed:
		case <-timeout:
			return setError(C.COLIO_ETIMEDOUT, 0, name+": no completion within "+time.Duration(timeoutNs).String())
		}
	}
}

//export colioGoCqFree
func colioGoCqFree(cq C.uintptr_t) (rc C.int) {
	const name = "colio_cq_free"
	defer recoverInto(name, &rc)
	obj, err := handles.take(token(cq), kindCQ)
	if err != nil {
		return fail(name, err)
	}
	q := obj.(*cqObj)
	q.mu.Lock()
	q.gone = true
	q.items = nil
	q.mu.Unlock()
	close(q.closed)
	return C.COLIO_OK
}
