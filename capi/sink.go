package main

/*
#include <stdlib.h>
#include "colioi.h"
*/
import "C"

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/sink"
)

// sizedSink records the highest end written successfully, for
// colio_sink_size. It starts at the sink's append start: the length of a
// file opened with COLIO_SINK_APPEND, or a callback sink's append_start.
type sizedSink struct {
	sink.Sink
	end    *atomic.Int64 // endOwn, or the fast path's shared memory
	endOwn atomic.Int64
	shared unsafe.Pointer // a file sink's fastShared, freed with the sink
}

func newSizedSink(s sink.Sink) *sizedSink {
	z := &sizedSink{Sink: s}
	z.end = &z.endOwn
	z.end.Store(s.AppendStart())
	return z
}

// fastShared is what a file sink's two writers share (fastpath.c): the
// append reservation and the highest end written, in C memory so that C
// may keep pointers to them; Go updates them through the same atomics.
type fastShared struct {
	next, end atomic.Int64
}

func (z *sizedSink) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := z.Sink.WriteAt(ctx, p, off)
	if n > 0 {
		end := off + int64(n)
		for {
			cur := z.end.Load()
			if end <= cur || z.end.CompareAndSwap(cur, end) {
				break
			}
		}
	}
	return n, err
}

// putSink registers s and writes its token to *out.
func putSink(name string, s sink.Sink, out *C.uintptr_t) C.int {
	es := engine.NewSink(newSizedSink(s))
	tok, err := handles.put(kindSink, es)
	if err != nil {
		es.Close()
		return invalid(name, "%v", err)
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

// closeSink ends a sink whose handle was taken: the fast path's writers
// leave before the descriptor can close (fastpath.c), then end (Close or
// Abort) runs, then the memory they shared is freed (nothing can reach it
// once the handle is gone and the sink closed).
func closeSink(tok C.uintptr_t, es *engine.Sink, end func(*engine.Sink) error) error {
	C.colioi_fast_unregister(C.uint64_t(tok))
	err := end(es)
	if z, ok := es.Underlying().(*sizedSink); ok && z.shared != nil {
		C.free(z.shared)
		z.shared = nil
	}
	return err
}

// putFileSink is putSink for a local file, whose small synchronous writes
// colio_write and colio_write_ex then serve in C (fastpath.c).
func putFileSink(name string, f *sink.File, out *C.uintptr_t) C.int {
	z := newSizedSink(f)
	es := engine.NewSink(z)
	mem := C.calloc(1, C.size_t(unsafe.Sizeof(fastShared{})))
	if mem != nil {
		sh := (*fastShared)(mem)
		es.ShareNext(&sh.next)
		sh.end.Store(z.end.Load())
		z.end, z.shared = &sh.end, mem
	}
	tok, err := handles.put(kindSink, es)
	if err != nil {
		es.Close()
		C.free(mem)
		return invalid(name, "%v", err)
	}
	if mem != nil {
		sh := (*fastShared)(mem)
		C.colioi_fast_register_sink(C.uint64_t(tok), C.int(f.Fd()),
			(*C.int64_t)(unsafe.Pointer(&sh.next)), (*C.int64_t)(unsafe.Pointer(&sh.end)))
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

func sinkOf(name string, tok C.uintptr_t) (*engine.Engine, *engine.Sink, C.int) {
	e, err := eng()
	if err != nil {
		return nil, nil, fail(name, err)
	}
	obj, err := handles.get(token(tok), kindSink)
	if err != nil {
		return nil, nil, fail(name, err)
	}
	return e, obj.(*engine.Sink), C.COLIO_OK
}

//export colioGoSinkOpenFile
func colioGoSinkOpenFile(path *C.char, flags C.int, out *C.uintptr_t) (rc C.int) {
	const name = "colio_sink_open_file"
	defer recoverInto(name, &rc)
	if path == nil {
		return invalid(name, "path is NULL")
	}
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	if flags&^(C.COLIO_SINK_CREATE|C.COLIO_SINK_TRUNCATE|C.COLIO_SINK_APPEND) != 0 {
		return invalid(name, "unknown flags %#x (known: COLIO_SINK_CREATE, COLIO_SINK_TRUNCATE, COLIO_SINK_APPEND)", int(flags))
	}
	var fl sink.Flags
	if flags&C.COLIO_SINK_CREATE != 0 {
		fl |= sink.Create
	}
	if flags&C.COLIO_SINK_TRUNCATE != 0 {
		fl |= sink.Truncate
	}
	if flags&C.COLIO_SINK_APPEND != 0 {
		fl |= sink.Append
	}
	f, err := sink.OpenFile(C.GoString(path), fl, 0o644)
	if err != nil {
		return fail(name, err)
	}
	return putFileSink(name, f, out)
}

//export colioGoSinkFromMemory
func colioGoSinkFromMemory(buf unsafe.Pointer, capacity C.int64_t, out *C.uintptr_t) (rc C.int) {
	const name = "colio_sink_from_memory"
	defer recoverInto(name, &rc)
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	b, rc := cbytes(name, "buf", buf, capacity)
	if rc != C.COLIO_OK {
		return rc
	}
	return putSink(name, sink.IntoMemory(b), out)
}

//export colioGoSinkVoid
func colioGoSinkVoid(out *C.uintptr_t) (rc C.int) {
	const name = "colio_sink_void"
	defer recoverInto(name, &rc)
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	return putSink(name, &sink.Void{}, out)
}

// colioGoSinkFromCallbacks takes colio's copy of the caller's struct, as
// colioGoSourceFromCallbacks does.
//
//export colioGoSinkFromCallbacks
func colioGoSinkFromCallbacks(cb *C.colio_sink_callbacks, out *C.uintptr_t) (rc C.int) {
	const name = "colio_sink_from_callbacks"
	defer recoverInto(name, &rc)
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	s, rc := newCallbackSink(name, cb)
	if rc != C.COLIO_OK {
		return rc
	}
	return putSink(name, s, out)
}

//export colioGoSinkFlush
func colioGoSinkFlush(snk C.uintptr_t, fsync C.int, level C.int) (rc C.int) {
	const name = "colio_sink_flush"
	defer recoverInto(name, &rc)
	_, s, rc := sinkOf(name, snk)
	if rc != C.COLIO_OK {
		return rc
	}
	if err := s.Flush(ctxAt(int(level)), fsync != 0); err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoSinkSize
func colioGoSinkSize(snk C.uintptr_t, out *C.int64_t) (rc C.int) {
	const name = "colio_sink_size"
	defer recoverInto(name, &rc)
	_, s, rc := sinkOf(name, snk)
	if rc != C.COLIO_OK {
		return rc
	}
	*out = C.int64_t(sizedOf(s.Underlying()).end.Load())
	return C.COLIO_OK
}

// colioGoSinkFree removes the handle, then lets every accepted write
// finish, flushes and closes, and returns the sticky write error.
//
//export colioGoSinkFree
func colioGoSinkFree(snk C.uintptr_t) (rc C.int) {
	const name = "colio_sink_free"
	defer recoverInto(name, &rc)
	obj, err := handles.take(token(snk), kindSink)
	if err != nil {
		return fail(name, err)
	}
	if err := closeSink(snk, obj.(*engine.Sink), (*engine.Sink).Close); err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}
