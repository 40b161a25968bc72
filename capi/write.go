package main

/*
#include "colioi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
)

// checkWriteOffset rejects negative offsets other than COLIO_APPEND here,
// so the message names the C constant.
func checkWriteOffset(name, what string, off C.int64_t) C.int {
	if off < 0 && off != C.COLIO_APPEND {
		return invalid(name, "%s %d is negative (only COLIO_APPEND, -1, is allowed)", what, int64(off))
	}
	return C.COLIO_OK
}

// writeArgs resolves a single-buffer write's sink, checks its offset and
// wraps its buffer.
func writeArgs(name string, snk C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t) (*engine.Engine, *engine.Sink, []byte, C.int) {
	e, s, rc := sinkOf(name, snk)
	if rc != C.COLIO_OK {
		return nil, nil, nil, rc
	}
	if rc := checkWriteOffset(name, "offset", off); rc != C.COLIO_OK {
		return nil, nil, nil, rc
	}
	p, rc := cbytes(name, "buf", buf, size)
	return e, s, p, rc
}

//export colioGoWrite
func colioGoWrite(snk C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t, nwritten *C.int64_t, level C.int) (rc C.int) {
	const name = "colio_write"
	defer recoverInto(name, &rc)
	e, s, p, rc := writeArgs(name, snk, buf, size, off)
	if rc != C.COLIO_OK {
		return rc
	}
	n, err := e.WriteAt(ctxAt(int(level)), s, p, int64(off))
	*nwritten = C.int64_t(n)
	if err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoWriteAsync
func colioGoWriteAsync(snk C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_write_async"
	defer recoverInto(name, &rc)
	e, s, p, rc := writeArgs(name, snk, buf, size, off)
	if rc != C.COLIO_OK {
		return rc
	}
	f, err := e.Write(ctxAt(int(level)), s, p, int64(off))
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, unsafe.Slice(out, 1), f)
}

//export colioGoWritevAsync
func colioGoWritevAsync(snk C.uintptr_t, ranges unsafe.Pointer, n C.int64_t, outs unsafe.Pointer, level C.int) (rc C.int) {
	const name = "colio_writev_async"
	defer recoverInto(name, &rc)
	e, s, rc := sinkOf(name, snk)
	if rc != C.COLIO_OK {
		return rc
	}
	rs, fs, rc := cranges(name, ranges, n, outs)
	if rc != C.COLIO_OK || len(rs) == 0 {
		return rc
	}
	clear(fs)
	wr := make([]engine.WriteRange, len(rs))
	for i := range rs {
		if rc := checkWriteOffset(name, "range "+itoa(i)+": offset", rs[i].offset); rc != C.COLIO_OK {
			return rc
		}
		p, rc := cbytes(name, "range "+itoa(i)+": buf", rs[i].buf, rs[i].size)
		if rc != C.COLIO_OK {
			return rc
		}
		wr[i] = engine.WriteRange{Off: int64(rs[i].offset), Buf: p}
	}
	futs, err := e.WriteV(ctxAt(int(level)), s, wr)
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, fs, futs...)
}
