package main

/*
#include "colioi.h"
*/
import "C"

import "unsafe"

// readvFlags are the flags colio_readv_async_ex knows; others are refused,
// so that a program built against a newer header fails loudly here.
const readvFlags = C.COLIO_READV_COALESCE

//export colioGoReadvAsyncEx
func colioGoReadvAsyncEx(src C.uintptr_t, ranges unsafe.Pointer, n C.int64_t, flags C.uint32_t, outs unsafe.Pointer, level C.int) (rc C.int) {
	const name = "colio_readv_async_ex"
	defer recoverInto(name, &rc)
	if flags&^readvFlags != 0 {
		return invalid(name, "unknown flags 0x%x", uint32(flags&^readvFlags))
	}
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
	read := e.ReadV
	if flags&C.COLIO_READV_COALESCE != 0 {
		read = e.ReadVCoalesced
	}
	futs, err := read(ctxAt(int(level)), s, rr)
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, fs, futs...)
}

//export colioGoSourceSetCoalesce
func colioGoSourceSetCoalesce(src C.uintptr_t, hole, max C.int64_t) (rc C.int) {
	const name = "colio_source_set_coalesce"
	defer recoverInto(name, &rc)
	_, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	if err := s.SetCoalesce(int64(hole), int64(max)); err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoSourceGetCoalesce
func colioGoSourceGetCoalesce(src C.uintptr_t, hole, max *C.int64_t) (rc C.int) {
	const name = "colio_source_get_coalesce"
	defer recoverInto(name, &rc)
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	h, m := e.Coalescing(s)
	if hole != nil {
		*hole = C.int64_t(h)
	}
	if max != nil {
		*max = C.int64_t(m)
	}
	return C.COLIO_OK
}
