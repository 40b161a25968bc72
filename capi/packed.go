package main

/*
#include "colioi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
)

// Packed batches (colio_readv_packed): the ranges as (offset, size) pairs
// and their buffers end to end in one. A binding that reads many small
// ranges into one allocation then builds no per-range address: in Python,
// laying out the colio_range table (an address per range, packed) cost as
// much as the reads' own C overhead (issue 15.1).

// packedRanges checks n pairs and lays their buffers end to end in buf.
func packedRanges(name string, pairs *C.int64_t, n int, buf unsafe.Pointer, bufSize C.int64_t) ([]engine.ReadRange, C.int) {
	if pairs == nil {
		return nil, invalid(name, "pairs is NULL but n is %d", n)
	}
	if bufSize < 0 {
		return nil, invalid(name, "buf_size %d is negative", int64(bufSize))
	}
	ps := unsafe.Slice((*int64)(unsafe.Pointer(pairs)), 2*n)
	var total int64
	for i := 0; i < n; i++ {
		off, size := ps[2*i], ps[2*i+1]
		switch {
		case off < 0:
			return nil, invalid(name, "range %d: negative offset %d", i, off)
		case size < 0:
			return nil, invalid(name, "range %d: negative size %d", i, size)
		case size > int64(bufSize)-total:
			return nil, invalid(name, "range %d: the sizes up to it (%d bytes) run past buf_size %d",
				i, total+size, int64(bufSize))
		}
		total += size
	}
	p, rc := cbytes(name, "buf", buf, C.int64_t(total))
	if rc != C.COLIO_OK {
		return nil, rc
	}
	rr := make([]engine.ReadRange, n)
	var pos int64
	for i := range rr {
		size := ps[2*i+1]
		rr[i] = engine.ReadRange{Off: ps[2*i], Buf: p[pos : pos+size : pos+size]}
		pos += size
	}
	return rr, C.COLIO_OK
}

//export colioGoReadvPacked
func colioGoReadvPacked(src C.uintptr_t, pairs *C.int64_t, n C.int64_t, flags C.uint32_t, buf unsafe.Pointer, bufSize C.int64_t,
	nread *C.int64_t, status *C.int, cq C.uintptr_t, ctx C.uint64_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_readv_packed"
	defer recoverInto(name, &rc)
	conv := func(n int) ([]engine.ReadRange, C.int) { return packedRanges(name, pairs, n, buf, bufSize) }
	if out == nil {
		if cq != 0 {
			return invalid(name, "cq is set but out is NULL (a blocking call posts no entries)")
		}
		return readvWait(name, src, n, conv, flags, nread, status, level)
	}
	return readvStart(name, src, n, conv, flags, nread, status, cq, ctx, out, level)
}
