package engine

import "sync/atomic"

// A share is the small ranges of a batch (batch.go), cut into chunks that
// the caller and a few helpers take in turn. Taking chunks instead of a
// fixed group each keeps the caller busy until no work is left: a helper
// that a loaded machine has not yet scheduled takes nothing, and the
// caller reads its share, instead of waiting for a group that has not
// started (on 2 busy cores a static split of 8 groups was no faster than
// one thread). The caller waits only for chunks a helper holds.
type share struct {
	ranges  []ReadRange
	size    int64      // the source's size when the batch was planned
	idx     []int      // the ranges in the share, in order
	cut     []int32    // chunk c is idx[cut[c]:cut[c+1]]
	res     []batchRes // by range index, set before the range is reported
	helpers int        // pool tasks beside the caller

	next atomic.Int32  // the next chunk to take
	left atomic.Int64  // ranges not yet reported
	done chan struct{} // closed when left reaches 0
}

type batchRes struct {
	n   int64
	err error
}

// A chunk is at most this many ranges or this many bytes (at least one
// range): small enough that the caller's wait for the chunks helpers hold
// is microseconds, large enough that taking one (an atomic add, the
// counters once) costs nothing beside its reads.
const (
	chunkRanges = 16
	chunkBytes  = 256 << 10
)

// newShare cuts idx (ranges of at least one byte before size) into chunks
// and picks the helpers: one per chunk beyond the caller's, at most
// threads-1.
func newShare(ranges []ReadRange, idx []int, size int64, threads int) *share {
	sh := &share{ranges: ranges, size: size, idx: idx, res: make([]batchRes, len(ranges)),
		done: make(chan struct{})}
	sh.cut = append(make([]int32, 0, len(idx)/chunkRanges+2), 0)
	var k, bytes int64
	for j, i := range idx {
		r := ranges[i]
		bytes += min(int64(len(r.Buf)), size-r.Off)
		k++
		if k == chunkRanges || bytes >= chunkBytes || j == len(idx)-1 {
			sh.cut = append(sh.cut, int32(j+1))
			k, bytes = 0, 0
		}
	}
	sh.left.Store(int64(len(idx)))
	sh.helpers = min(max(threads, 1), len(sh.cut)-1) - 1
	return sh
}

// take returns the next chunk's ranges, or nil when every chunk is taken.
func (sh *share) take() []int {
	c := int(sh.next.Add(1)) - 1
	if c >= len(sh.cut)-1 {
		return nil
	}
	return sh.idx[sh.cut[c]:sh.cut[c+1]]
}

// report hands a chunk's results to done, and ends the share after its
// last range.
func (sh *share) report(idx []int, done BatchDone) {
	defer func() { // a panicking done still ends the chunk
		if sh.left.Add(-int64(len(idx))) == 0 {
			close(sh.done)
		}
	}()
	for _, i := range idx {
		done(i, sh.res[i].n, sh.res[i].err)
	}
}

// wait waits until every range has been reported.
func (sh *share) wait() { <-sh.done }
