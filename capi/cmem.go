package main

/*
#include <errno.h>
#include <stdlib.h>

// posix_memalign reports failure instead of aborting, unlike cgo's
// C.malloc (a NULL there is a Go runtime fatal error, which no recover
// catches). 64-byte alignment is what Arrow recommends for its buffers.
// Never size 0: a NULL would read as a failure.
static void *colioi_cmem_alloc(size_t n, int *err) {
  void *p = NULL;
  *err = posix_memalign(&p, 64, n ? n : 1);
  return *err == 0 ? p : NULL;
}
*/
import "C"

import (
	"fmt"
	"math"
	"syscall"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/colio-dev/colio/internal/errs"
)

// C memory for buffers that C keeps (Arrow exports: cgo forbids C to hold
// Go memory, arrow-go issue 70). Every size here can come from a caller
// (a whole 64 GiB file read as one Arrow buffer), so a failed allocation is
// an ordinary COLIO_ENOSPC error naming the size, with errno ENOMEM, never
// a process abort: arrow-go's mallocator falls back to cgo's C.malloc,
// which aborts on NULL.

// cFree is the memory.Allocator of buffers made by newCBuffer: such a
// buffer is never allocated or grown through it, only freed.
type cFree struct{}

func (cFree) Allocate(int) []byte { panic("colio: cFree does not allocate") }

func (cFree) Reallocate(int, []byte) []byte { panic("colio: cFree does not reallocate") }

// Free gets the slice newCBuffer made, whose capacity is at least 1, so
// its data pointer is the allocation's even for an empty buffer.
func (cFree) Free(b []byte) { C.free(unsafe.Pointer(unsafe.SliceData(b))) }

// newCBuffer allocates n bytes of uninitialised C memory as an arrow
// buffer with one reference; releasing the last reference frees it. The
// callers write every byte they export.
func newCBuffer(n int64) (*memory.Buffer, error) {
	if n < 0 || uint64(n) > math.MaxUint64/2 {
		return nil, errs.New(errs.Invalid, "colio: cannot allocate %d bytes", n)
	}
	var e C.int
	p := C.colioi_cmem_alloc(C.size_t(n), &e)
	if p == nil {
		return nil, &errs.Error{
			Kind:  errs.NoSpace,
			Msg:   "colio: cannot allocate " + sizeText(n) + " for the Arrow buffer: out of memory",
			Errno: syscall.ENOMEM,
		}
	}
	b := unsafe.Slice((*byte)(p), max(n, 1))[:n]
	return memory.NewBufferWithAllocator(b, cFree{}), nil
}

// sizeText says n in bytes, and in GiB or MiB when that is easier to read.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d bytes (%.1f GiB)", n, float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
