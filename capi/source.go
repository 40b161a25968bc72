package main

/*
#include "colioi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/source"
)

// putSource registers s and writes its token to *out. If the table is
// full, s is closed again (its release callback runs) and the call fails.
// File sources are also registered with the C fast path (fastpath.c) for
// small synchronous reads; memory sources register in their constructor,
// which has the caller's C pointer.
func putSource(name string, s source.Source, out *C.uintptr_t) C.int {
	es := engine.NewSource(s)
	tok, err := handles.put(kindSource, es)
	if err != nil {
		es.Close()
		return invalid(name, "%v", err)
	}
	if f, ok := s.(*source.File); ok {
		C.colioi_fast_register(C.uint64_t(tok), C.int(f.Fd()), nil, 0)
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

// sourceOf returns the engine and the source behind tok.
func sourceOf(name string, tok C.uintptr_t) (*engine.Engine, *engine.Source, C.int) {
	e, err := eng()
	if err != nil {
		return nil, nil, fail(name, err)
	}
	obj, err := handles.get(token(tok), kindSource)
	if err != nil {
		return nil, nil, fail(name, err)
	}
	return e, obj.(*engine.Source), C.COLIO_OK
}

//export colioGoSourceOpenFile
func colioGoSourceOpenFile(path *C.char, out *C.uintptr_t) (rc C.int) {
	const name = "colio_source_open_file"
	defer recoverInto(name, &rc)
	if path == nil {
		return invalid(name, "path is NULL")
	}
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	f, err := source.OpenFile(C.GoString(path))
	if err != nil {
		return fail(name, err)
	}
	return putSource(name, f, out)
}

//export colioGoSourceFromMemory
func colioGoSourceFromMemory(data unsafe.Pointer, size C.int64_t, out *C.uintptr_t) (rc C.int) {
	const name = "colio_source_from_memory"
	defer recoverInto(name, &rc)
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	b, rc := cbytes(name, "data", data, size)
	if rc != C.COLIO_OK {
		return rc
	}
	if rc := putSource(name, source.FromMemory(b), out); rc != C.COLIO_OK {
		return rc
	}
	if size > 0 {
		C.colioi_fast_register(C.uint64_t(*out), -1, data, size)
	}
	return C.COLIO_OK
}

// colioGoSourceFromCallbacks takes cb, colio's copy of the caller's
// struct. On success the source owns it (the release shim frees it); on
// failure the C side frees it and the user's release is not called.
//
//export colioGoSourceFromCallbacks
func colioGoSourceFromCallbacks(cb *C.colio_source_callbacks, size C.int64_t, out *C.uintptr_t) (rc C.int) {
	const name = "colio_source_from_callbacks"
	defer recoverInto(name, &rc)
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	s, rc := newCallbackSource(name, cb, size)
	if rc != C.COLIO_OK {
		return rc
	}
	return putSource(name, s, out)
}

//export colioGoSourceSize
func colioGoSourceSize(src C.uintptr_t, out *C.int64_t) (rc C.int) {
	const name = "colio_source_size"
	defer recoverInto(name, &rc)
	_, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	n, err := s.Size()
	if err != nil {
		return fail(name, err)
	}
	*out = C.int64_t(n)
	return C.COLIO_OK
}

// colioGoSourceFree removes the handle first, so that no new call can
// reach the source, then closes it: reads that have not started fail with
// COLIO_ECLOSED, running ones finish, then the release callback runs.
//
//export colioGoSourceFree
func colioGoSourceFree(src C.uintptr_t) (rc C.int) {
	const name = "colio_source_free"
	defer recoverInto(name, &rc)
	obj, err := handles.take(token(src), kindSource)
	if err != nil {
		return fail(name, err)
	}
	// No C fast-path read may touch the descriptor once Close runs.
	C.colioi_fast_unregister(C.uint64_t(src))
	if err := obj.(*engine.Source).Close(); err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}
