package main

/*
#include <string.h>
#include "colioi.h"
*/
import "C"

import (
	"context"
	"sync"
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/remote"
)

// Whole-object fetches (colio_fetch_urls, issue 17). A zarr array is
// thousands of small objects each read whole: through sources, every one
// costs its caller an open (which waits on the network), a read and a
// free, three calls from a thread the binding had to park there. A fetch
// is one call for many URLs: the opens, the reads and the frees all run
// here, on goroutines, and each object's end is one completion-queue
// entry, so a binding collects many with one wait and holds no thread per
// object. The bytes wait in Go memory until colio_fetch_copy hands them
// over (its caller learnt the size from the entry), so no C allocation
// crosses the ABI.

// fetchObj is what a fetch future holds beside its aggregate future.
type fetchObj struct {
	mu   sync.Mutex
	data [][]byte // object i's bytes until copied; nil after
	errs []error  // object i's failure
	done []bool   // object i has ended
	took []bool   // object i's bytes were handed over
}

// run fetches object i: open, read whole, close. A slot bounds the opens
// in flight per call as max_in_flight bounds one source's requests.
func (fx *fetchObj) run(e *engine.Engine, lctx context.Context, i int, url string, o remote.Options,
	agg *future.Future, slots chan struct{}, q *cqObj, tag uint64) {
	slots <- struct{}{}
	var data []byte
	var err error
	if agg.Begin() {
		data, err = fetchWhole(e, lctx, url, o)
	} else {
		err = errs.New(errs.Cancelled, "colio: fetch of %s cancelled before it started", url)
	}
	<-slots
	fx.mu.Lock()
	fx.data[i], fx.errs[i], fx.done[i] = data, err, true
	fx.mu.Unlock()
	// The future before the entry: a binding that frees the future once it
	// has seen every entry then never waits.
	agg.PartDoneAt(int64(len(data)), err, int64(i))
	if q != nil {
		q.push(C.uint64_t(tag+uint64(i)), C.int64_t(len(data)), codeOf(err))
	}
}

// fetchWhole opens url, reads every byte and closes it. An object inside
// the open's prefetch is a copy from the bytes the open kept; a larger one
// is an engine read, split into parallel requests as any other.
func fetchWhole(e *engine.Engine, lctx context.Context, url string, o remote.Options) ([]byte, error) {
	s, err := remote.Open(context.Background(), url, o)
	if err != nil {
		return nil, err
	}
	es := engine.NewSource(s)
	defer es.Close()
	size, err := es.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if size == 0 {
		return buf, nil
	}
	f, err := e.Read(lctx, es, buf, 0)
	if err != nil {
		return nil, err
	}
	n, err := f.WaitTimeout(-1)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

//export colioGoFetchURLs
func colioGoFetchURLs(urls **C.char, n C.int64_t, options **C.char, cq C.uintptr_t, ctx C.uint64_t,
	out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_fetch_urls"
	defer recoverInto(name, &rc)
	e, err := eng()
	if err != nil {
		return fail(name, err)
	}
	switch {
	case n < 0:
		return invalid(name, "n %d is negative", int64(n))
	case n > maxRanges:
		return invalid(name, "n %d is more URLs than one call takes (%d)", int64(n), maxRanges)
	case n > 0 && urls == nil:
		return invalid(name, "urls is NULL but n is %d", int64(n))
	}
	var q *cqObj
	if cq != 0 {
		if q, rc = cqOf(name, cq); rc != C.COLIO_OK {
			return rc
		}
	}
	o, rc := urlOptions(name, options)
	if rc != C.COLIO_OK {
		return rc
	}
	var list []*C.char
	if n > 0 {
		list = unsafe.Slice(urls, int(n))
	}
	us := make([]string, len(list))
	for i, u := range list {
		if u == nil {
			return invalid(name, "urls[%d] is NULL", i)
		}
		us[i] = C.GoString(u)
	}
	syncAWSEnv()
	k := len(us)
	fx := &fetchObj{data: make([][]byte, k), errs: make([]error, k), done: make([]bool, k),
		took: make([]bool, k)}
	agg := future.New(e.Notifier(), k)
	tok, err := handles.put(kindFuture, &futureObj{f: agg, fetch: fx})
	if err != nil {
		return invalid(name, "%v", err)
	}
	slots := make(chan struct{}, o.MaxInFlight)
	lctx := ctxAt(int(level))
	for i, u := range us {
		go fx.run(e, lctx, i, u, o, agg, slots, q, uint64(ctx))
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

//export colioGoFetchCopy
func colioGoFetchCopy(fut C.uintptr_t, i C.int64_t, buf unsafe.Pointer, size C.int64_t, copied *C.int64_t) (rc C.int) {
	const name = "colio_fetch_copy"
	defer recoverInto(name, &rc)
	*copied = 0
	fo, rc := futureOf(name, fut)
	if rc != C.COLIO_OK {
		return rc
	}
	fx := fo.fetch
	switch {
	case fx == nil:
		return invalid(name, "the future is not a fetch (made by colio_fetch_urls)")
	case i < 0 || int64(i) >= int64(len(fx.data)):
		return invalid(name, "index %d is out of range for a fetch of %d", int64(i), len(fx.data))
	case size < 0:
		return invalid(name, "size %d is negative", int64(size))
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	switch {
	case !fx.done[i]:
		return invalid(name, "object %d has not been fetched yet (wait for its entry or the future)", int64(i))
	case fx.errs[i] != nil:
		return fail(name, fx.errs[i])
	case fx.took[i]:
		return invalid(name, "object %d was already copied out", int64(i))
	case int64(len(fx.data[i])) > int64(size):
		return invalid(name, "object %d has %d bytes, more than the buffer's %d", int64(i), len(fx.data[i]), int64(size))
	case len(fx.data[i]) > 0 && buf == nil:
		return invalid(name, "buf is NULL")
	}
	d := fx.data[i]
	if len(d) > 0 {
		C.memcpy(buf, unsafe.Pointer(unsafe.SliceData(d)), C.size_t(len(d)))
	}
	fx.data[i], fx.took[i] = nil, true
	*copied = C.int64_t(len(d))
	return C.COLIO_OK
}
