//go:build colio_cgo_bench

package main

// The round trip of one part of a queued source through the exports the
// C ABI calls, as a Go benchmark: test files cannot use cgo, so the body
// is here, built only with the tag (never into libcolio.so).
//
//	go test -tags colio_cgo_bench -run '^$' -bench WorkRoundTrip -benchmem ./capi/

/*
#include <stdlib.h>
#include <string.h>
#include "colioi.h"
*/
import "C"

import (
	"bytes"
	"testing"
	"unsafe"
)

// workRoundTrips runs b.N parts: colio_read_async_tagged of 64 KiB, a
// colio_work_step that takes the part, and one that hands it back and
// collects the read's note (which frees the future). The worker fills the
// buffer only in the last round, which is checked against the reference:
// the copy is the worker's cost, not the library's.
func workRoundTrips(b *testing.B, ref []byte) {
	const size = 64 << 10
	var src C.uintptr_t
	if rc := colioGoSourceFromQueue(C.int64_t(len(ref)), C.COLIO_CALLBACK_CONCURRENT, 5, &src); rc != C.COLIO_OK {
		b.Fatal("colio_source_from_queue", rc)
	}
	defer colioGoSourceFree(src)
	buf := C.malloc(size)
	defer C.free(buf)
	var notes [16]C.colio_work_note
	var out, ctx C.uintptr_t
	var wbuf unsafe.Pointer
	var wsize, woff, tok, taken, nn C.int64_t
	var level, handed C.int
	step := func(back, result C.int64_t) C.int {
		return colioGoWorkStep(back, result, &handed, 0, unsafe.Pointer(&notes[0]), 16, &nn,
			&ctx, &wbuf, &wsize, &woff, &tok, &taken, &level)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := C.int64_t(i%(len(ref)/size)) * size
		if rc := colioGoReadAsyncTagged(src, buf, size, off, C.uint64_t(i), &out, 0); rc != C.COLIO_OK {
			b.Fatal("colio_read_async_tagged", rc)
		}
		if rc := step(0, 0); rc != C.COLIO_OK || tok == 0 || woff != off {
			b.Fatal("take", rc, tok, woff)
		}
		if i == b.N-1 {
			C.memcpy(wbuf, unsafe.Pointer(&ref[woff]), C.size_t(wsize))
		}
		if rc := step(tok, wsize); rc != C.COLIO_OK || nn != 1 || notes[0].tag != C.uint64_t(i) ||
			notes[0].nbytes != size || notes[0].status != C.COLIO_OK {
			b.Fatal("hand back", rc, nn)
		}
	}
	b.StopTimer()
	last := int64(b.N-1) % int64(len(ref)/size) * size
	if !bytes.Equal(C.GoBytes(buf, size), ref[last:last+size]) {
		b.Fatal("bytes differ from the reference")
	}
}
