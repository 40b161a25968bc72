package main

/*
#include "colioi.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
)

// cbytes wraps size bytes of C memory at p as a slice, after checking what
// a C caller can get wrong: a negative size, a NULL buffer with a non-zero
// size, and a range that wraps the address space (which unsafe.Slice would
// turn into a panic). The memory stays the caller's: colio never frees it
// and never keeps it past the operation's future.
func cbytes(name, what string, p unsafe.Pointer, size C.int64_t) ([]byte, C.int) {
	switch {
	case size < 0:
		return nil, invalid(name, "%s size %d is negative", what, int64(size))
	case size == 0:
		return []byte{}, C.COLIO_OK
	case p == nil:
		return nil, invalid(name, "%s is NULL but its size is %d", what, int64(size))
	case uint64(size) > math.MaxUint64-uint64(uintptr(p)):
		return nil, invalid(name, "%s of %d bytes at %p runs past the end of the address space", what, int64(size), p)
	}
	return unsafe.Slice((*byte)(p), int(size)), C.COLIO_OK
}

// maxRanges bounds one fan-out call. It is far above any real use and
// keeps n * sizeof(colio_range) well inside the address space.
const maxRanges = 1 << 31

// cranges wraps the caller's array of n ranges and its array of n future
// slots, after checking n and the pointers. ok is false when an error was
// recorded; n == 0 gives empty slices.
func cranges(name string, ranges unsafe.Pointer, n C.int64_t, outs unsafe.Pointer) (rs []C.colio_range, fs []C.uintptr_t, rc C.int) {
	switch {
	case n < 0:
		return nil, nil, invalid(name, "n %d is negative", int64(n))
	case n == 0:
		return nil, nil, C.COLIO_OK
	case n > maxRanges:
		return nil, nil, invalid(name, "n %d is more ranges than one call takes (%d)", int64(n), maxRanges)
	case ranges == nil:
		return nil, nil, invalid(name, "ranges is NULL but n is %d", int64(n))
	case outs == nil:
		return nil, nil, invalid(name, "futures_out is NULL but n is %d", int64(n))
	}
	return unsafe.Slice((*C.colio_range)(ranges), int(n)), unsafe.Slice((*C.uintptr_t)(outs), int(n)), C.COLIO_OK
}

// readRanges turns C ranges into engine ranges over the callers' buffers,
// checking each offset and buffer (the argument check every fan-out entry
// point shares).
func readRanges(name string, rs []C.colio_range) ([]engine.ReadRange, C.int) {
	rr := make([]engine.ReadRange, len(rs))
	for i := range rs {
		if rs[i].offset < 0 {
			return nil, invalid(name, "range %d: negative offset %d", i, int64(rs[i].offset))
		}
		// The common case without cbytes: naming the range costs two
		// string allocations per range, measurable in a batch of 4 KiB
		// reads (issue 15.1); cbytes runs only to report what is wrong.
		buf, size := rs[i].buf, rs[i].size
		if size <= 0 || buf == nil || uint64(size) > math.MaxUint64-uint64(uintptr(buf)) {
			p, rc := cbytes(name, "range "+itoa(i)+": buf", buf, size)
			if rc != C.COLIO_OK {
				return nil, rc
			}
			rr[i] = engine.ReadRange{Off: int64(rs[i].offset), Buf: p}
			continue
		}
		rr[i] = engine.ReadRange{Off: int64(rs[i].offset), Buf: unsafe.Slice((*byte)(buf), int(size))}
	}
	return rr, C.COLIO_OK
}
