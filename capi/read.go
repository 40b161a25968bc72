package main

/*
#include "colioi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
)

// readArgs resolves a single-buffer read's source and wraps its buffer.
func readArgs(name string, src C.uintptr_t, buf unsafe.Pointer, size C.int64_t) (*engine.Engine, *engine.Source, []byte, C.int) {
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return nil, nil, nil, rc
	}
	p, rc := cbytes(name, "buf", buf, size)
	return e, s, p, rc
}

//export colioGoRead
func colioGoRead(src C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t, nread *C.int64_t, level C.int) (rc C.int) {
	const name = "colio_read"
	defer recoverInto(name, &rc)
	e, s, p, rc := readArgs(name, src, buf, size)
	if rc != C.COLIO_OK {
		return rc
	}
	n, err := e.ReadAt(ctxAt(int(level)), s, p, int64(off))
	*nread = C.int64_t(n)
	if err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoReadAsync
func colioGoReadAsync(src C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_read_async"
	defer recoverInto(name, &rc)
	e, s, p, rc := readArgs(name, src, buf, size)
	if rc != C.COLIO_OK {
		return rc
	}
	f, err := e.Read(ctxAt(int(level)), s, p, int64(off))
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, unsafe.Slice(out, 1), f)
}

//export colioGoReadvAsync
func colioGoReadvAsync(src C.uintptr_t, ranges unsafe.Pointer, n C.int64_t, outs unsafe.Pointer, level C.int) (rc C.int) {
	const name = "colio_readv_async"
	defer recoverInto(name, &rc)
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	rs, fs, rc := cranges(name, ranges, n, outs)
	if rc != C.COLIO_OK || len(rs) == 0 {
		return rc
	}
	clear(fs) // no future is made if the call fails
	rr, rc := readRanges(name, rs)
	if rc != C.COLIO_OK {
		return rc
	}
	futs, err := e.ReadV(ctxAt(int(level)), s, rr)
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, fs, futs...)
}
