// Package readahead is a sequential reader over any colio source that keeps
// buffers filled ahead of the reader by colio's workers.
//
// The lessons of Spark's ReadAheadInputStream (SPARK-23366) shape it:
//
//   - The hot path takes no lock. A Stream has one reader, like
//     bufio.Reader; a Read that can be served from the bytes already known
//     to be in place is a slice copy and nothing else.
//   - Background fills produce whole buffers even over sources that return
//     short reads, because every fill is an engine read, and engine reads
//     loop until the range is full or the source ends.
//   - A waiting reader gets data as soon as some exists: each buffer is
//     filled as several pieces, each its own eager read, and the reader
//     waits for the next piece, not for the whole buffer.
//   - No lost wake-ups: the reader waits on the piece's future, which is
//     closed exactly once when the piece lands.
//   - Errors are sticky: the bytes before a failure are delivered, then the
//     error, on that read and every one after it.
//   - The end is where the source ends now, as with read(2): io.EOF is
//     not sticky, a read at the end asks the source's size again and reads
//     on if it grew. A source that shrinks under bytes already read ahead
//     is an error (checkShrink), not stale bytes.
package readahead

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
)

// Defaults, chosen from BenchmarkSlowConsumer and BenchmarkSmallReads (see
// README "Read-ahead"): 1 MiB buffers keep per-fill overhead negligible on
// local files; 4 buffers keep 4 MiB in flight, enough to hide 2 ms of
// latency at the throughput a decoder consumes; 256 KiB pieces give a
// waiting reader its first bytes after one piece, not one buffer.
const (
	DefaultBufferSize = 1 << 20
	DefaultDepth      = 4
	maxPieceSize      = 256 << 10
)

type slot struct {
	buf   []byte
	off   int64            // source offset of buf[0]
	futs  []*future.Future // one per piece
	n     int              // bytes issued (less than len(buf) at the end)
	plen  int              // piece length
	next  int              // next piece to hand to the reader
	limit int              // pieces issued
}

// Stream reads a source sequentially with read-ahead. It is not safe for
// concurrent use (one reader, like bufio.Reader), except that Close may be
// called from another goroutine while a Read waits.
type Stream struct {
	e     *engine.Engine
	src   *engine.Source
	ctx   context.Context
	slots []*slot
	cur   int // slot being consumed

	data []byte // bytes in place, starting at pos
	pos  int64  // offset of data[0]
	end  int64  // where the next slot fill starts

	err    error // sticky; delivered once data is drained
	closed chan struct{}
	// mu orders fills against a Close from another goroutine; the reader's
	// hot path never takes it.
	mu        sync.Mutex
	closeOnce sync.Once
}

// Open starts a stream at offset with depth buffers of bufSize bytes;
// zero values take the defaults. Reads start at once.
func Open(ctx context.Context, e *engine.Engine, src *engine.Source, offset int64, bufSize, depth int) (*Stream, error) {
	if bufSize == 0 {
		bufSize = DefaultBufferSize
	}
	if depth == 0 {
		depth = DefaultDepth
	}
	if bufSize < 1 || depth < 1 || depth > 1024 {
		return nil, errs.New(errs.Invalid, "colio: stream buffer size %d and depth %d: both must be positive (depth at most 1024)", bufSize, depth)
	}
	if offset < 0 {
		return nil, errs.New(errs.Invalid, "colio: negative stream offset %d", offset)
	}
	if err := checkMemory(bufSize, depth); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	plen := min(bufSize, maxPieceSize)
	s := &Stream{e: e, src: src, ctx: ctx, closed: make(chan struct{})}
	for i := 0; i < depth; i++ {
		s.slots = append(s.slots, &slot{buf: make([]byte, bufSize), plen: plen})
	}
	if err := s.restart(offset); err != nil {
		return nil, err
	}
	return s, nil
}

// restart drops everything buffered and refills from off.
func (s *Stream) restart(off int64) error {
	s.mu.Lock()
	for _, sl := range s.slots {
		if !sl.abandon(s.closed) {
			s.mu.Unlock()
			return errs.New(errs.Closed, "colio: stream is closed")
		}
	}
	s.mu.Unlock()
	s.data, s.pos, s.end, s.err, s.cur = nil, off, off, nil, 0
	for i := range s.slots {
		if err := s.fill(s.slots[i]); err != nil {
			return err
		}
	}
	return nil
}

// abandon cancels a slot's pending pieces and waits for those already
// running, so the buffer can be filled again. Cancelled pieces complete at
// once; running ones within one source call, or never (a stuck callback):
// a Close (closed) ends the wait, and abandon reports false, the slot left
// to the garbage collector with the pieces still writing into it.
func (sl *slot) abandon(closed <-chan struct{}) bool {
	for i := sl.next; i < sl.limit; i++ {
		sl.futs[i].Cancel()
	}
	for i := sl.next; i < sl.limit; i++ {
		select {
		case <-sl.futs[i].Chan():
		case <-closed:
			return false
		}
	}
	sl.next, sl.limit = 0, 0
	return true
}

// fill issues the reads for the slot's next region, s.end onwards.
func (s *Stream) fill(sl *slot) error {
	size, err := s.src.Size()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl.off, sl.next, sl.limit, sl.n = s.end, 0, 0, 0
	if s.end >= size {
		return nil // past the end: nothing to issue; the reader sees EOF
	}
	n := min(int64(len(sl.buf)), size-s.end)
	var ranges []engine.ReadRange
	for a := int64(0); a < n; a += int64(sl.plen) {
		ranges = append(ranges, engine.ReadRange{Off: s.end + a, Buf: sl.buf[a:min(a+int64(sl.plen), n)]})
	}
	futs, err := s.e.ReadV(s.ctx, s.src, ranges)
	if err != nil {
		return err
	}
	sl.futs, sl.limit, sl.n = futs, len(futs), int(n)
	s.end += n
	return nil
}

// Read reads up to len(p) bytes. It returns as soon as some bytes are in
// place, and io.EOF at the end of the source.
func (s *Stream) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		s.pos += int64(n)
		return n, nil
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.advance(); err != nil {
		return 0, err
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	s.pos += int64(n)
	return n, nil
}

// ReadAvailable waits for at least one byte like Read, then goes on
// filling p from every piece that has already landed, without waiting
// again. It serves callers that pay per call (C, ctypes), who want as many
// bytes as possible from each one without giving up the early first byte.
func (s *Stream) ReadAvailable(p []byte) (int, error) {
	n, err := s.Read(p)
	for err == nil && n < len(p) && s.ready() {
		var m int
		m, err = s.Read(p[n:])
		n += m
	}
	if n > 0 {
		return n, nil // an error is sticky: the next call returns it
	}
	return n, err
}

// ready reports whether a Read would return without waiting for I/O.
func (s *Stream) ready() bool {
	if len(s.data) > 0 || s.err != nil {
		return true
	}
	sl := s.slots[s.cur]
	if sl.next < sl.limit {
		return sl.futs[sl.next].Done()
	}
	return false // a slot boundary: a refill is due, which is not free
}

// ReadByte reads one byte (io.ByteReader), for decoders that want it.
func (s *Stream) ReadByte() (byte, error) {
	if len(s.data) == 0 {
		if err := s.advance(); err != nil {
			return 0, err
		}
	}
	b := s.data[0]
	s.data = s.data[1:]
	s.pos++
	return b, nil
}

// advance makes s.data non-empty, waiting for the next piece, or returns
// the sticky error or io.EOF.
func (s *Stream) advance() error {
	for len(s.data) == 0 {
		if s.err != nil {
			return s.err
		}
		select {
		case <-s.closed:
			s.err = errs.New(errs.Closed, "colio: stream is closed")
			continue
		default:
		}
		sl := s.slots[s.cur]
		if sl.next >= sl.limit {
			if sl.limit == 0 {
				// The fill found nothing left to read. Look again, as
				// read(2) does at the end of a file: one that grew since
				// is read on (from here, so the slots stay in order).
				size, err := s.src.Size()
				if err != nil {
					s.err = err
					continue
				}
				if size <= s.pos {
					return io.EOF // not sticky: the next read looks again
				}
				if err := s.restart(s.pos); err != nil {
					s.err = err
				}
				continue
			}
			// Slot drained: refill it behind the others and move on.
			if err := s.fill(sl); err != nil {
				s.err = err
				continue
			}
			s.cur = (s.cur + 1) % len(s.slots)
			continue
		}
		f := sl.futs[sl.next]
		if !f.Done() {
			select {
			case <-f.Chan():
			case <-s.closed:
				continue
			}
		}
		start := sl.next * sl.plen
		want := min(sl.plen, sl.n-start)
		sl.next++
		n := int(f.N())
		if err := f.Err(); err != nil {
			s.data, s.err = sl.buf[start:start+n], err
			continue
		}
		s.data = sl.buf[start : start+n]
		s.err = s.checkShrink(sl.off+int64(start), n, want)
		if s.err != nil && int64(len(s.data)) > 0 {
			if size, err := s.src.Size(); err == nil {
				keep := max(min(int64(n), size-(sl.off+int64(start))), 0)
				s.data = s.data[:keep] // the bytes the file still has, then the error
			}
		}
	}
	return nil
}

// checkShrink fails a piece read ahead from a source that has shrunk
// below it since: a fill that came back short (the source ended before the
// size it had when the fill was issued), or a piece that landed whole but
// lies past the source's end now (a file truncated while its bytes waited
// in a buffer). Handing those bytes out would return what the file no
// longer holds; open() would stop at the new end, so the reader gets an
// error that says where. One size check per piece (an fstat for a file,
// per 256 KiB by default) is what it costs.
func (s *Stream) checkShrink(off int64, n, want int) error {
	size, err := s.src.Size()
	if err != nil {
		return err
	}
	if n == want && off+int64(n) <= size {
		return nil
	}
	if n < want && off+int64(want) <= size {
		return errs.New(errs.IO, "colio: the source returned %d of the %d bytes at offset %d, before its end (%d bytes)",
			n, want, off, size)
	}
	return errs.New(errs.IO, "colio: the source shrank to %d bytes under the stream: the bytes read ahead from offset %d to %d are no longer in it",
		size, off, off+int64(want))
}

// Tell returns the offset of the next byte Read returns.
func (s *Stream) Tell() int64 { return s.pos }

// Seek moves the read position. A forward seek into bytes already read
// ahead consumes them without fetching them again; any other seek drops
// the buffers and refills from the new position.
func (s *Stream) Seek(offset int64, whence int) (int64, error) {
	var target int64
	switch whence {
	case io.SeekStart:
		target = offset
	case io.SeekCurrent:
		target = s.pos + offset
		if offset > 0 && target < 0 {
			return s.pos, errs.New(errs.Invalid, "colio: seek offset %d from position %d overflows a 64-bit offset", offset, s.pos)
		}
	case io.SeekEnd:
		size, err := s.src.Size()
		if err != nil {
			return s.pos, err
		}
		target = size + offset
		if offset > 0 && target < 0 {
			return s.pos, errs.New(errs.Invalid, "colio: seek offset %d from the end (%d bytes) overflows a 64-bit offset", offset, size)
		}
	default:
		return s.pos, errs.New(errs.Invalid, "colio: bad whence %d", whence)
	}
	if target < 0 {
		return s.pos, errs.New(errs.Invalid, "colio: seek to negative offset %d", target)
	}
	select {
	case <-s.closed:
		return s.pos, errs.New(errs.Closed, "colio: stream is closed")
	default:
	}
	if target >= s.pos && target < s.end && (s.err == nil || target-s.pos < int64(len(s.data))) {
		for target > s.pos {
			if len(s.data) == 0 {
				if err := s.advance(); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					return s.pos, err
				}
			}
			k := min(int64(len(s.data)), target-s.pos)
			s.data = s.data[k:]
			s.pos += k
		}
		if target == s.pos {
			return s.pos, nil
		}
	}
	if err := s.restart(target); err != nil {
		return s.pos, err
	}
	return target, nil
}

// Close stops the read-ahead. Fills in flight are cancelled where they have
// not started; running ones finish into buffers nobody reads any more (the
// garbage collector frees them once they do). Safe to call twice, and
// while another goroutine waits in Read.
func (s *Stream) Close() error {
	first := false
	s.closeOnce.Do(func() { close(s.closed); first = true })
	if !first {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		for i := 0; i < sl.limit; i++ {
			sl.futs[i].Cancel()
		}
	}
	return nil
}
