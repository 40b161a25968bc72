package main

/*
#include <stdlib.h>
#include "colioi.h"
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/future"
)

// A batch (issue 15) is one fan-out read with one colio_future for all of
// its ranges. A binding pays one call to start it and one to wait, instead
// of a handle, a wait and a completion callback per range; each range's
// result lands in the caller's nread/status arrays, and, with a completion
// queue, as one entry among many that a single wait collects.

// batchObj is what a batch future holds beside its aggregate future.
type batchObj struct {
	b *engine.Batch // nil for an empty batch

	mu   sync.Mutex
	msgs map[int]*C.char // C copies of parts' messages (colio_future_error_part)
}

// cancel cancels every range not started; true if any was.
func (b *batchObj) cancel() bool {
	hit := false
	for i := 0; b.b != nil && i < b.b.Len(); i++ {
		if b.b.Cancel(i) {
			hit = true
		}
	}
	return hit
}

func (b *batchObj) len() int {
	if b.b == nil {
		return 0
	}
	return b.b.Len()
}

// cRanges is startBatch's conv for a colio_range array.
func cRanges(name string, ranges unsafe.Pointer) func(int) ([]engine.ReadRange, C.int) {
	return func(n int) ([]engine.ReadRange, C.int) {
		if ranges == nil {
			return nil, invalid(name, "ranges is NULL but n is %d", n)
		}
		return readRanges(name, unsafe.Slice((*C.colio_range)(ranges), n))
	}
}

// startBatch validates and starts the ranges. The returned future
// completes after every range has written its nread/status slot and
// posted its entry to q; its error is the failure of the lowest-index
// range that failed.
// conv checks and converts the n ranges (n > 0) once n itself is known good.
func startBatch(name string, src C.uintptr_t, n C.int64_t, conv func(n int) ([]engine.ReadRange, C.int), flags C.uint32_t,
	nread *C.int64_t, status *C.int, q *cqObj, ctx C.uint64_t, level C.int) (*future.Future, *batchObj, C.int) {
	if flags&^readvFlags != 0 {
		return nil, nil, invalid(name, "unknown flags 0x%x", uint32(flags&^readvFlags))
	}
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return nil, nil, rc
	}
	switch {
	case n < 0:
		return nil, nil, invalid(name, "n %d is negative", int64(n))
	case n == 0:
		return future.Completed(e.Notifier(), 0, nil), &batchObj{}, C.COLIO_OK
	case n > maxRanges:
		return nil, nil, invalid(name, "n %d is more ranges than one call takes (%d)", int64(n), maxRanges)
	}
	rr, rc := conv(int(n))
	if rc != C.COLIO_OK {
		return nil, nil, rc
	}
	var nr []C.int64_t
	var st []C.int
	if nread != nil {
		nr = unsafe.Slice(nread, len(rr))
	}
	if status != nil {
		st = unsafe.Slice(status, len(rr))
	}
	agg := future.New(e.Notifier(), len(rr))
	// On the goroutine that read the range (often this one: small reads
	// of fast sources run here), never the notifier.
	done := func(i int, nb int64, err error) {
		code := codeOf(err)
		if nr != nil {
			nr[i] = C.int64_t(nb)
		}
		if st != nil {
			st[i] = code
		}
		if q != nil {
			q.push(C.uint64_t(uint64(ctx)+uint64(i)), C.int64_t(nb), code)
		}
		agg.PartDoneAt(nb, err, int64(i))
	}
	b, err := e.ReadVBatch(ctxAt(int(level)), s, rr, flags&C.COLIO_READV_COALESCE != 0, done)
	if err != nil {
		return nil, nil, fail(name, err)
	}
	return agg, &batchObj{b: b}, C.COLIO_OK
}

//export colioGoReadvBatch
func colioGoReadvBatch(src C.uintptr_t, ranges unsafe.Pointer, n C.int64_t, flags C.uint32_t,
	nread *C.int64_t, status *C.int, cq C.uintptr_t, ctx C.uint64_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_readv_batch"
	defer recoverInto(name, &rc)
	return readvStart(name, src, n, cRanges(name, ranges), flags, nread, status, cq, ctx, out, level)
}

//export colioGoReadv
func colioGoReadv(src C.uintptr_t, ranges unsafe.Pointer, n C.int64_t, flags C.uint32_t,
	nread *C.int64_t, status *C.int, level C.int) (rc C.int) {
	const name = "colio_readv"
	defer recoverInto(name, &rc)
	return readvWait(name, src, n, cRanges(name, ranges), flags, nread, status, level)
}

// readvStart starts a batch and hands out its future (colio_readv_batch).
func readvStart(name string, src C.uintptr_t, n C.int64_t, conv func(int) ([]engine.ReadRange, C.int), flags C.uint32_t,
	nread *C.int64_t, status *C.int, cq C.uintptr_t, ctx C.uint64_t, out *C.uintptr_t, level C.int) C.int {
	var q *cqObj
	if cq != 0 {
		var rc C.int
		if q, rc = cqOf(name, cq); rc != C.COLIO_OK {
			return rc
		}
	}
	agg, b, rc := startBatch(name, src, n, conv, flags, nread, status, q, ctx, level)
	if rc != C.COLIO_OK {
		return rc
	}
	tok, err := handles.put(kindFuture, &futureObj{f: agg, batch: b})
	if err != nil {
		agg.WaitTimeout(-1) // the ranges run on the caller's buffers
		return invalid(name, "%v", err)
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

// readvWait runs a batch to its end (colio_readv).
func readvWait(name string, src C.uintptr_t, n C.int64_t, conv func(int) ([]engine.ReadRange, C.int), flags C.uint32_t,
	nread *C.int64_t, status *C.int, level C.int) C.int {
	agg, _, rc := startBatch(name, src, n, conv, flags, nread, status, nil, 0, level)
	if rc != C.COLIO_OK {
		return rc
	}
	if _, err := agg.WaitTimeout(-1); err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}

// partOf finds batch future fut and checks index i.
func partOf(name string, fut C.uintptr_t, i C.int64_t) (*futureObj, C.int) {
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return nil, rc
	}
	if fo.batch == nil {
		return nil, invalid(name, "the future is not a batch (made by colio_readv_batch)")
	}
	if i < 0 || int64(i) >= int64(fo.batch.len()) {
		return nil, invalid(name, "index %d is out of range for a batch of %d", int64(i), fo.batch.len())
	}
	return fo, C.COLIO_OK
}

//export colioGoFutureWaitPart
func colioGoFutureWaitPart(fut C.uintptr_t, i C.int64_t, timeoutNs C.int64_t, nbytes *C.int64_t) (rc C.int) {
	const name = "colio_future_wait_part"
	defer recoverInto(name, &rc)
	if timeoutNs < 0 && timeoutNs != C.COLIO_WAIT_FOREVER {
		return invalid(name, "timeout_ns %d is negative (use COLIO_WAIT_FOREVER to wait without a limit)", int64(timeoutNs))
	}
	fo, rc := partOf(name, fut, i)
	if rc != C.COLIO_OK {
		return rc
	}
	d := time.Duration(timeoutNs)
	if timeoutNs == C.COLIO_WAIT_FOREVER {
		d = -1
	}
	done, n, err := fo.batch.b.Wait(int(i), d)
	*nbytes = C.int64_t(n)
	if !done {
		return setError(C.COLIO_ETIMEDOUT, 0, name+": the range did not complete within "+
			d.String()+"; it goes on and the future stays valid")
	}
	if err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoFutureCancelPart
func colioGoFutureCancelPart(fut C.uintptr_t, i C.int64_t, cancelled *C.int) (rc C.int) {
	const name = "colio_future_cancel_part"
	defer recoverInto(name, &rc)
	fo, rc := partOf(name, fut, i)
	if rc != C.COLIO_OK {
		return rc
	}
	*cancelled = 0
	if fo.batch.b.Cancel(int(i)) {
		*cancelled = 1
	}
	return C.COLIO_OK
}

//export colioGoFutureErrorPart
func colioGoFutureErrorPart(fut C.uintptr_t, i C.int64_t, message **C.char, errnum *C.int) (rc C.int) {
	const name = "colio_future_error_part"
	defer recoverInto(name, &rc)
	fo, rc := partOf(name, fut, i)
	if rc != C.COLIO_OK {
		return rc
	}
	done, _, err := fo.batch.b.Wait(int(i), 0)
	if !done {
		return C.COLIO_ETIMEDOUT
	}
	if err == nil {
		return C.COLIO_OK
	}
	b := fo.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	fo.mu.Lock()
	freed := fo.freed
	fo.mu.Unlock()
	if freed {
		return invalid(name, "the future was freed during the call")
	}
	if b.msgs == nil {
		b.msgs = make(map[int]*C.char)
	}
	m := b.msgs[int(i)]
	if m == nil {
		m = C.CString(err.Error())
		b.msgs[int(i)] = m
	}
	*message = m
	*errnum = C.int(errnoOf(err))
	return codeOf(err)
}

// freeMsgs releases the parts' message copies (colio_future_free).
func (b *batchObj) freeMsgs() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, m := range b.msgs {
		C.free(unsafe.Pointer(m))
		delete(b.msgs, k)
	}
}
