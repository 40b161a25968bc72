package main

/*
#include "colioi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/cdata"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/colio-dev/colio/internal/engine"
)

// Arrow export (colio_read_ranges_arrow, colio_read_arrow_buffer).
//
// The buffers Arrow sees are C memory from newCBuffer (cmem.go), never Go
// memory, which cgo forbids C to keep (arrow-go issue 70); a failed
// allocation is COLIO_ENOSPC. The engine reads straight into them (a Go
// slice over C memory, as for any caller buffer), and
// cdata.ExportArrowArray hands their addresses to C without copying: the
// exported struct's buffers point at those very bytes. cdata keeps the
// array alive through a cgo.Handle until its release callback, which drops
// the last reference and frees the memory with C's free. The C side
// (api_arrow.c) wraps that callback in a reference count and a fork guard.

// arrowRange is one range to read into the export's data buffer: want
// bytes (already clamped to the source's size) at off, placed at pos.
type arrowRange struct {
	off, want, pos int64
}

// readArrow reads rs into one new C buffer of total bytes, eagerly and in
// parallel, and returns it with each range's byte count. On failure every
// read has ended and the buffer is freed.
func readArrow(name string, e *engine.Engine, s *engine.Source, rs []arrowRange, total int64, level C.int) (*memory.Buffer, []int64, C.int) {
	data, err := newCBuffer(total)
	if err != nil {
		return nil, nil, fail(name, err)
	}
	buf := data.Bytes()
	rr := make([]engine.ReadRange, len(rs))
	for i, r := range rs {
		rr[i] = engine.ReadRange{Off: r.off, Buf: buf[r.pos : r.pos+r.want : r.pos+r.want]}
	}
	futs, err := e.ReadV(ctxAt(int(level)), s, rr)
	if err != nil {
		data.Release()
		return nil, nil, fail(name, err)
	}
	// Wait for every read, even after a failure: none may still be
	// writing when the buffer is freed.
	got := make([]int64, len(rs))
	var first error
	firstAt := 0
	for i, f := range futs {
		n, err := f.WaitTimeout(-1)
		got[i] = n
		if err != nil && first == nil {
			first, firstAt = err, i
		}
	}
	if first != nil {
		data.Release()
		if len(rs) > 1 {
			first = fmt.Errorf("%w (range %d of %d)", first, firstAt, len(rs))
		}
		return nil, nil, fail(name, first)
	}
	return data, got, C.COLIO_OK
}

// export hands arr to C; the caller then drops Go's references, so the
// exported struct holds the only one. The schema is not cdata's: the C side
// fills a static one (its format is all it needs), so that a schema's
// release never enters Go.
func export(arr arrow.Array, out *C.struct_ArrowArray) {
	cdata.ExportArrowArray(arr, (*cdata.CArrowArray)(unsafe.Pointer(out)), nil)
}

//export colioGoReadRangesArrow
func colioGoReadRangesArrow(src C.uintptr_t, ranges unsafe.Pointer, n C.int64_t, out *C.struct_ArrowArray, level C.int) (rc C.int) {
	const name = "colio_read_ranges_arrow"
	defer recoverInto(name, &rc)
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	switch {
	case n < 0:
		return invalid(name, "n %d is negative", int64(n))
	case n > maxRanges:
		return invalid(name, "n %d is more ranges than one call takes (%d)", int64(n), maxRanges)
	case n > 0 && ranges == nil:
		return invalid(name, "ranges is NULL but n is %d", int64(n))
	}
	var cr []C.colio_range
	if n > 0 {
		cr = unsafe.Slice((*C.colio_range)(ranges), int(n))
	}
	size, err := s.Size()
	if err != nil {
		return fail(name, err)
	}
	// Check every range and lay the elements out back to back, each
	// clamped to the bytes the source has now.
	rs := make([]arrowRange, len(cr))
	var total int64
	for i, r := range cr {
		off, want := int64(r.offset), int64(r.size)
		switch {
		case off < 0:
			return invalid(name, "range %d: negative offset %d", i, off)
		case want < 0:
			return invalid(name, "range %d: negative size %d", i, want)
		case want > math.MaxInt64-off:
			return invalid(name, "range %d: %d bytes at offset %d overflows a 64-bit offset", i, want, off)
		case off > size:
			return invalid(name, "range %d: offset %d starts past the end of the source (%d bytes)", i, off, size)
		}
		want = min(want, size-off)
		if want > math.MaxInt64-total {
			return invalid(name, "the ranges add up to more than 2^63 bytes")
		}
		rs[i] = arrowRange{off: off, want: want, pos: total}
		total += want
	}
	offsets, err := newCBuffer(8 * (int64(len(rs)) + 1))
	if err != nil {
		return fail(name, err)
	}
	defer offsets.Release()
	data, got, rc := readArrow(name, e, s, rs, total, level)
	if rc != C.COLIO_OK {
		return rc
	}
	defer data.Release()
	// The elements are where the reads put them. Only if the source shrank
	// during the read (a read came back shorter than the size checked
	// above) are the later elements moved down to close the gap: large
	// binary values must be contiguous.
	offs := arrow.Int64Traits.CastFromBytes(offsets.Bytes())
	bytes := data.Bytes()
	var pos int64
	for i, r := range rs {
		if pos != r.pos {
			copy(bytes[pos:pos+got[i]], bytes[r.pos:r.pos+got[i]])
		}
		offs[i] = pos
		pos += got[i]
	}
	offs[len(rs)] = pos
	ad := array.NewData(arrow.BinaryTypes.LargeBinary, len(rs), []*memory.Buffer{nil, offsets, data}, nil, 0, 0)
	defer ad.Release()
	arr := array.NewLargeBinaryData(ad)
	defer arr.Release()
	export(arr, out)
	return C.COLIO_OK
}

//export colioGoReadArrowBuffer
func colioGoReadArrowBuffer(src C.uintptr_t, off, size C.int64_t, out *C.struct_ArrowArray, level C.int) (rc C.int) {
	const name = "colio_read_arrow_buffer"
	defer recoverInto(name, &rc)
	e, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	o, want := int64(off), int64(size)
	switch {
	case o < 0:
		return invalid(name, "negative offset %d", o)
	case want < 0:
		return invalid(name, "negative size %d", want)
	case want > math.MaxInt64-o:
		return invalid(name, "%d bytes at offset %d overflows a 64-bit offset", want, o)
	}
	srcSize, err := s.Size()
	if err != nil {
		return fail(name, err)
	}
	if o > srcSize {
		return invalid(name, "offset %d starts past the end of the source (%d bytes)", o, srcSize)
	}
	want = min(want, srcSize-o)
	data, got, rc := readArrow(name, e, s, []arrowRange{{off: o, want: want}}, want, level)
	if rc != C.COLIO_OK {
		return rc
	}
	defer data.Release()
	ad := array.NewData(arrow.PrimitiveTypes.Uint8, int(got[0]), []*memory.Buffer{nil, data}, nil, 0, 0)
	defer ad.Release()
	arr := array.NewUint8Data(ad)
	defer arr.Release()
	export(arr, out)
	return C.COLIO_OK
}
