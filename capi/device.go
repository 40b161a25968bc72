package main

/*
#include "colioi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/colio-dev/colio/gpu"
)

//export colioGoHasCUDA
func colioGoHasCUDA() C.int {
	if gpu.HasCUDA() {
		return 1
	}
	return 0
}

//export colioGoReadDeviceAsync
func colioGoReadDeviceAsync(src C.uintptr_t, dptr C.uintptr_t, size, off C.int64_t, stream C.uintptr_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_read_device_async"
	defer recoverInto(name, &rc)
	m, err := gpu.Default() // COLIO_ENOTSUP in the CPU build
	if err != nil {
		return fail(name, err)
	}
	_, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	f, err := m.ReadSource(ctxAt(int(level)), s, uintptr(dptr), int64(size), int64(off), gpu.Options{After: gpu.Stream(stream)})
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, unsafe.Slice(out, 1), f)
}

//export colioGoWriteDeviceAsync
func colioGoWriteDeviceAsync(snk C.uintptr_t, dptr C.uintptr_t, size, off C.int64_t, stream C.uintptr_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_write_device_async"
	defer recoverInto(name, &rc)
	m, err := gpu.Default()
	if err != nil {
		return fail(name, err)
	}
	_, k, rc := sinkOf(name, snk)
	if rc != C.COLIO_OK {
		return rc
	}
	f, err := m.WriteSink(ctxAt(int(level)), k, uintptr(dptr), int64(size), int64(off), gpu.Options{After: gpu.Stream(stream)})
	if err != nil {
		return fail(name, err)
	}
	return putFutures(name, unsafe.Slice(out, 1), f)
}
