package remote

import (
	"context"
	"io"
	"sync"

	"github.com/colio-dev/colio/internal/source"
)

// Coalesced reads (issue 16): the engine merges nearby ranges into one
// request and hands the source the layout of its body, the callers'
// buffers with the holes between them. One GET streams the body through
// that layout: the callers' bytes land straight in their buffers, and a
// hole's bytes are read into a small shared discard buffer and dropped,
// so no byte is copied twice and no buffer the size of the request is
// allocated.

var _ source.Scatterer = (*Source)(nil)

// ReadScatter reads the bytes of pieces, in order from off, with one
// ranged GET retried as ReadAt is (a retry asks only for what is still
// missing, and never again for a hole's bytes before it). A hole at
// either end is not requested at all: it is counted as consumed.
func (s *Source) ReadScatter(ctx context.Context, pieces []source.Piece, off int64) (int64, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var total int64
	for _, pc := range pieces {
		total += pieceLen(pc)
	}
	total = max(0, min(total, s.size-off))
	done := s.scatterPrefetch(pieces, off, total)
	for attempt := 1; ; attempt++ {
		rest, lead, want := owed(pieces, done, total)
		if want == 0 {
			return total, nil
		}
		n, err := s.get(ctx, rest, off+done+lead, want, false)
		if n > 0 {
			done += lead + n
		}
		if err == nil {
			return total, nil
		}
		if attempt >= s.opt.Retries || !retryable(err) || !s.backoff(ctx, attempt, err) {
			return done, classify("GET "+s.shown+" "+rangeHeader(off, total), attempt, err)
		}
	}
}

func pieceLen(pc source.Piece) int64 {
	if pc.Buf != nil {
		return int64(len(pc.Buf))
	}
	return pc.Skip
}

// owed is what is left to request of the first total bytes of pieces once
// done of them arrived: the pieces from the first byte still owed to a
// buffer up to the last one, the hole bytes skipped before them (lead),
// and how many bytes that request is (want, 0 when only holes are left).
// A retry after a cut rebuilds its first piece; the first attempt shares
// the caller's slice.
func owed(pieces []source.Piece, done, total int64) (rest []source.Piece, lead, want int64) {
	var at int64 // offset of pieces[k] within the layout
	k := 0
	for ; k < len(pieces); k++ {
		l := pieceLen(pieces[k])
		if at+l > done && pieces[k].Buf != nil {
			break
		}
		at += l
	}
	if k == len(pieces) || at >= total {
		return nil, 0, 0
	}
	start := max(at, done) // the first byte requested
	last := k              // the last piece with bytes for a buffer
	end := at              // one past its last byte, within total
	for j, pos := k, at; j < len(pieces) && pos < total; j++ {
		l := pieceLen(pieces[j])
		if pieces[j].Buf != nil {
			last, end = j, min(pos+l, total)
		}
		pos += l
	}
	rest = pieces[k : last+1]
	if skip := start - at; skip > 0 {
		rest = append([]source.Piece{{Buf: pieces[k].Buf[skip:]}}, rest[1:]...)
	}
	return rest, start - done, end - start
}

// discardBufs are the buffers hole bytes are read into and dropped: small,
// so that a hole costs reads, never an allocation of its size.
var discardBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// discard reads and drops n bytes of r.
func discard(r io.Reader, n int64) (int64, error) {
	bp := discardBufs.Get().(*[]byte)
	defer discardBufs.Put(bp)
	buf := *bp
	var got int64
	for got < n {
		k, err := r.Read(buf[:min(int64(len(buf)), n-got)])
		got += int64(k)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return got, err
		}
	}
	return got, nil
}
