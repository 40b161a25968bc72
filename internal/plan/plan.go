// Package plan merges the byte ranges of a fan-out read into fewer, larger
// requests. It is pure: no I/O, no engine, so it can be fuzzed.
//
// Against storage with latency the number of requests, not the bytes, sets
// the time of a fan-out (a Parquet reader asks for dozens of column chunks
// of one file). Plan sorts the ranges by offset, merges ranges that are
// contained in, overlap or touch one another, and merges ranges separated
// by a gap of at most Hole bytes, as Arrow's ReadRangeCache and Rust's
// object_store do. The bytes of a gap are read and dropped, so Hole trades
// wasted transfer for saved round trips; the engine derives it per source
// (zero for local files and memory).
//
// The bound: a merged request never grows past Max bytes by merging. Only
// a single input range larger than Max (or ranges that overlap one such
// range) makes a larger request, because splitting a range is the engine's
// job (task_size), not the planner's: a request that is over Max is always
// one that no merge could have avoided. Overlaps are merged whatever Max
// says, so that every input byte is read exactly once.
//
// Every input range gets a Place: which merged request holds its bytes and
// where they start in it. Zero-length ranges get a place too (at their
// offset, inside or at the edge of a request that exists for them), so the
// caller can treat every range alike.
package plan

import (
	"cmp"
	"slices"
)

// Range is one requested byte range [Off, Off+Len). Len >= 0; Off + Len
// must not overflow (the engine checks both before planning).
type Range struct {
	Off, Len int64
}

// End is the offset one past the range.
func (r Range) End() int64 { return r.Off + r.Len }

// Place says where an input range's bytes are: in Merged[Req], starting
// At bytes after that request's offset.
type Place struct {
	Req int
	At  int64
}

// Result is a plan: the requests to make, in increasing offset order and
// disjoint, and one Place per input range, in input order.
type Result struct {
	Merged []Range
	Places []Place
}

// Plan merges ranges across gaps of at most hole bytes into requests of at
// most max bytes (max <= 0 means no cap). A negative hole is taken as 0:
// contained, overlapping and adjacent ranges are always merged.
func Plan(ranges []Range, hole, max int64) Result {
	hole = clampHole(hole)
	order := make([]int, len(ranges))
	for i := range order {
		order[i] = i
	}
	// Stable, with the length as a tie-break, so that the result does not
	// depend on the input order (the fuzz test checks it).
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := ranges[a], ranges[b]
		if c := cmp.Compare(ra.Off, rb.Off); c != 0 {
			return c
		}
		return cmp.Compare(ra.Len, rb.Len)
	})
	res := Result{Places: make([]Place, len(ranges))}
	var cur Range
	open := false
	for _, i := range order {
		r := ranges[i]
		if open && joins(cur, r, hole, max) {
			cur.Len = max64(cur.End(), r.End()) - cur.Off
		} else {
			if open {
				res.Merged = append(res.Merged, cur)
			}
			cur, open = r, true
		}
		res.Places[i] = Place{Req: len(res.Merged), At: r.Off - cur.Off}
	}
	if open {
		res.Merged = append(res.Merged, cur)
	}
	return res
}

// joins says whether r (which starts at or after cur) goes into cur.
func joins(cur, r Range, hole, max int64) bool {
	end := cur.End()
	if r.Off < end || (r.Off == end && r.Len == 0) {
		return true // overlaps (or is an empty range inside): bytes read once
	}
	if r.Off-end > hole {
		return false
	}
	if max <= 0 {
		return true
	}
	return r.End()-cur.Off <= max
}

func clampHole(h int64) int64 {
	if h < 0 {
		return 0
	}
	return h
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
