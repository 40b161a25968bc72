package main

/*
#include "colioi.h"
*/
import "C"

import (
	"errors"
	"io"
	"sync"
	"unsafe"

	"github.com/colio-dev/colio/internal/readahead"
)

// streamObj serialises the calls on one stream: a readahead.Stream has one
// reader, and C may call from many threads. The lock is uncontended in the
// intended use (one thread reading), and the stream's own hot path takes
// none. Free closes the stream without the lock, which wakes a read that
// waits, then takes the lock so no call is inside the stream when free
// returns.
type streamObj struct {
	mu sync.Mutex
	s  *readahead.Stream
}

func streamOf(name string, tok C.uintptr_t) (*streamObj, C.int) {
	obj, err := handles.get(token(tok), kindStream)
	if err != nil {
		return nil, fail(name, err)
	}
	return obj.(*streamObj), C.COLIO_OK
}

//export colioGoStreamOpen
func colioGoStreamOpen(src C.uintptr_t, off, bufSize, depth C.int64_t, out *C.uintptr_t, level C.int) (rc C.int) {
	const name = "colio_stream_open"
	defer recoverInto(name, &rc)
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	if bufSize < 0 || bufSize > 1<<30 || depth < 0 || depth > 1024 {
		return invalid(name, "buffer_size %d must be 0 (default) to 1 GiB and depth %d 0 (default) to 1024",
			int64(bufSize), int64(depth))
	}
	st, err := readahead.Open(ctxAt(int(level)), e, s, int64(off), int(bufSize), int(depth))
	if err != nil {
		return fail(name, err)
	}
	tok, err := handles.put(kindStream, &streamObj{s: st})
	if err != nil {
		st.Close()
		return invalid(name, "%v", err)
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

//export colioGoStreamRead
func colioGoStreamRead(tok C.uintptr_t, buf unsafe.Pointer, size C.int64_t, nread *C.int64_t) (rc C.int) {
	const name = "colio_stream_read"
	defer recoverInto(name, &rc)
	so, rc := streamOf(name, tok)
	if rc != C.COLIO_OK {
		return rc
	}
	p, rc := cbytes(name, "buf", buf, size)
	if rc != C.COLIO_OK {
		return rc
	}
	so.mu.Lock()
	n, err := so.s.ReadAvailable(p)
	so.mu.Unlock()
	*nread = C.int64_t(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(name, err)
	}
	return C.COLIO_OK
}

//export colioGoStreamSeek
func colioGoStreamSeek(tok C.uintptr_t, off C.int64_t, whence C.int, pos *C.int64_t) (rc C.int) {
	const name = "colio_stream_seek"
	defer recoverInto(name, &rc)
	so, rc := streamOf(name, tok)
	if rc != C.COLIO_OK {
		return rc
	}
	if whence < 0 || whence > 2 {
		return invalid(name, "whence %d is not SEEK_SET, SEEK_CUR or SEEK_END", int(whence))
	}
	so.mu.Lock()
	p, err := so.s.Seek(int64(off), int(whence))
	so.mu.Unlock()
	if err != nil {
		return fail(name, err)
	}
	*pos = C.int64_t(p)
	return C.COLIO_OK
}

//export colioGoStreamTell
func colioGoStreamTell(tok C.uintptr_t, pos *C.int64_t) (rc C.int) {
	const name = "colio_stream_tell"
	defer recoverInto(name, &rc)
	so, rc := streamOf(name, tok)
	if rc != C.COLIO_OK {
		return rc
	}
	so.mu.Lock()
	*pos = C.int64_t(so.s.Tell())
	so.mu.Unlock()
	return C.COLIO_OK
}

//export colioGoStreamFree
func colioGoStreamFree(tok C.uintptr_t) (rc C.int) {
	const name = "colio_stream_free"
	defer recoverInto(name, &rc)
	obj, err := handles.take(token(tok), kindStream)
	if err != nil {
		return fail(name, err)
	}
	so := obj.(*streamObj)
	so.s.Close()
	so.mu.Lock() // wait out a call still inside the stream
	so.mu.Unlock()
	return C.COLIO_OK
}
