package main

/*
#include "colioi.h"
*/
import "C"

import "unsafe"

//export colioGoWriteEx
func colioGoWriteEx(snk C.uintptr_t, buf unsafe.Pointer, size, off C.int64_t, nwritten, placed *C.int64_t, level C.int) (rc C.int) {
	const name = "colio_write_ex"
	defer recoverInto(name, &rc)
	e, s, p, rc := writeArgs(name, snk, buf, size, off)
	if rc != C.COLIO_OK {
		return rc
	}
	n, at, err := e.WriteAtPlaced(ctxAt(int(level)), s, p, int64(off))
	*nwritten, *placed = C.int64_t(n), C.int64_t(at)
	if err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}
