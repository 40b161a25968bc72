package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/plan"
	"github.com/colio-dev/colio/internal/source"
)

// Coalesced fan-out reads (issue 16).
//
// ReadVCoalesced plans the ranges with internal/plan and reads each merged
// request ("span") as parts of at most task_size bytes, like any request.
// Each caller still gets one future per range: it completes when every
// part that touches its bytes has reported. A part reads its slice of the
// span straight into the callers' buffers: the bytes of each position go
// to the first range (by offset) that holds them, and ranges that overlap
// an earlier one copy those bytes from it after the part's read, inside
// the same part, so no byte moves between workers. Hole bytes are dropped
// by a Scatterer source (a remote body), skipped by a Fast one (a pread
// per piece costs less than the hole's bytes), and read into a scratch
// buffer by the others (a callback has no way to skip).

// coalesceSettings is a per-source override; -1 in a field defers to the
// engine's setting.
type coalesceSettings struct{ hole, max int64 }

// Defaults of the derived hole (autoHole).
const (
	// unmeasuredHole is the hole of a source with latency before it has
	// answered anything: object_store's 1 MiB, a middle ground between
	// Arrow's 8 KiB and whole-object reads.
	unmeasuredHole = 1 << 20
	// maxRateBps is the fastest a request is believed to stream. Past it
	// a rate is not a network's (an S3 connection gives about 100 MB/s, a
	// 10 GbE link 1.25 GB/s for all of them) but a host-local server's
	// memory copy, whose value follows the CPU load: six fresh sources on
	// loopback at 20 ms measured 1.1 to 4.4 GB/s, and the hole, which
	// followed, merged one fan-out into 28 to 41 requests.
	maxRateBps = 1e9
	// assumedBps stands in for a rate not yet measured (latency only:
	// the open, small reads). It is the ceiling, so a fast source's hole
	// is the same from its first fan-out on; a slower rate, once
	// measured, lowers it. (100 MB/s before: the first fan-out of every
	// source was planned with a tenth of the hole of the next ones.)
	assumedBps = maxRateBps
)

// SetCoalesce fixes src's hole size and cap; -1 for either returns it to
// the engine's setting (coalesce_hole, coalesce_max).
func (s *Source) SetCoalesce(hole, max int64) error {
	if hole < -1 {
		return errs.New(errs.Invalid, "colio: coalescing hole %d must be -1 (the engine's setting), 0 or a size in bytes", hole)
	}
	if max < -1 || max == 0 {
		return errs.New(errs.Invalid, "colio: coalescing cap %d must be -1 (the engine's setting) or at least 1 byte", max)
	}
	if hole == -1 && max == -1 {
		s.coalesce.Store(nil)
		return nil
	}
	s.coalesce.Store(&coalesceSettings{hole: hole, max: max})
	return nil
}

// Coalescing returns the hole and cap that a coalesced read of src uses now.
func (e *Engine) Coalescing(src *Source) (hole, max int64) {
	return coalescing(src, e.cfg.Load())
}

func coalescing(src *Source, cfg *config.Config) (hole, max int64) {
	hole, max = cfg.CoalesceHole, cfg.CoalesceMax
	if o := src.coalesce.Load(); o != nil {
		if o.hole >= 0 {
			hole = o.hole
		}
		if o.max >= 1 {
			max = o.max
		}
	}
	if hole < 0 {
		hole = autoHole(src, cfg.Threads)
	}
	return min(hole, max), max
}

// autoHole is the hole worth reading instead of making another request:
// a request costs its latency L, and the bytes of a hole cost 1/B each,
// so Arrow's "network metrics" idea gives L x B. colio runs P requests
// at once (the source's own in-flight bound, else threads), so one more
// request costs about L/P of the fan-out's time, and the hole is
// L x B / P (20 ms at 400 MB/s with 8 at once: 1 MB). Local files and
// memory answer at once: 0. B is believed up to maxRateBps (see there):
// beyond, the hole would follow a machine's load rather than its network.
func autoHole(src *Source, threads int) int64 {
	if src.traits.InFlight > 0 {
		threads = src.traits.InFlight
	}
	if src.traits.Fast {
		return 0
	}
	lat, bps, ok := src.meter.estimate()
	if m, isM := src.src.(source.Measurer); isM {
		if l, b, mok := m.Measured(); mok {
			lat, bps, ok = l, b, true
		}
	}
	if !ok {
		return unmeasuredHole
	}
	if bps <= 0 {
		bps = assumedBps
	}
	bps = min(bps, maxRateBps)
	return int64(lat.Seconds() * bps / float64(max(threads, 1)))
}

// member is one caller's range inside a span.
type member struct {
	i      int   // index in the caller's ranges
	at, n  int64 // where its bytes lie in the span
	off    int64 // its source offset
	buf    []byte
	dupEnd int64 // [at, dupEnd) of the span is held by earlier members
	f      *future.Future
}

// seg is a piece of a span's layout: n bytes at `at` go to buf, or are a
// hole when buf is nil.
type seg struct {
	at, n int64
	buf   []byte
}

// span is one merged request.
type span struct {
	off, n  int64
	end     int64 // the source's size when the read was planned
	members []member
	segs    []seg
}

// layout gives each byte of the span its one destination.
func (sp *span) layout() {
	sort.SliceStable(sp.members, func(a, b int) bool { return sp.members[a].at < sp.members[b].at })
	var pos int64
	for k := range sp.members {
		m := &sp.members[k]
		end := m.at + m.n
		if m.at > pos {
			sp.segs = append(sp.segs, seg{at: pos, n: m.at - pos})
			pos = m.at
		}
		m.dupEnd = min(pos, end)
		if end > pos {
			sp.segs = append(sp.segs, seg{at: pos, n: end - pos, buf: m.buf[pos-m.at:]})
			pos = end
		}
	}
}

// pieces returns the layout of span bytes [a, b).
func (sp *span) pieces(a, b int64) []source.Piece {
	var out []source.Piece
	for k := sp.segAt(a); k < len(sp.segs) && sp.segs[k].at < b; k++ {
		s := sp.segs[k]
		lo, hi := max(a, s.at), min(b, s.at+s.n)
		if s.buf == nil {
			out = append(out, source.Piece{Skip: hi - lo})
		} else {
			out = append(out, source.Piece{Buf: s.buf[lo-s.at : hi-s.at]})
		}
	}
	return out
}

// segAt is the index of the segment holding span byte a.
func (sp *span) segAt(a int64) int {
	return sort.Search(len(sp.segs), func(k int) bool { return sp.segs[k].at+sp.segs[k].n > a })
}

// gather copies span bytes [at, at+len(dst)) from the buffers that hold them.
func (sp *span) gather(dst []byte, at int64) {
	for k := sp.segAt(at); len(dst) > 0; k++ {
		s := sp.segs[k]
		c := copy(dst, s.buf[at-s.at:])
		dst, at = dst[c:], at+int64(c)
	}
}

// ReadVCoalesced is ReadV with the ranges coalesced first (see above):
// the same checks, results and one future per range, in fewer requests.
func (e *Engine) ReadVCoalesced(ctx context.Context, src *Source, ranges []ReadRange) ([]*future.Future, error) {
	ctx = levelCtx(ctx)
	if src == nil {
		return nil, errs.New(errs.Invalid, "colio: nil source")
	}
	size, err := src.Size()
	if err != nil {
		return nil, err
	}
	if err := checkRanges(ranges, size); err != nil {
		return nil, err
	}
	cfg := e.cfg.Load()
	hole, max := coalescing(src, cfg)
	out := make([]*future.Future, len(ranges))
	in := make([]plan.Range, 0, len(ranges))
	idx := make([]int, 0, len(ranges))
	for i, r := range ranges {
		if n := min(int64(len(r.Buf)), size-r.Off); n > 0 {
			in = append(in, plan.Range{Off: r.Off, Len: n})
			idx = append(idx, i)
		}
	}
	p := plan.Plan(in, hole, max)
	spans := make([]*span, len(p.Merged))
	for j, m := range p.Merged {
		spans[j] = &span{off: m.Off, n: m.Len, end: size}
	}
	for k, pl := range p.Places {
		i := idx[k]
		spans[pl.Req].members = append(spans[pl.Req].members,
			member{i: i, at: pl.At, n: in[k].Len, off: ranges[i].Off, buf: ranges[i].Buf[:in[k].Len]})
	}
	var parts int64
	for _, sp := range spans {
		sp.layout()
		parts += split(sp.n, partSize(src, cfg), inlineSpan(src, sp, cfg))
	}
	if err := src.users.acquire(parts, "source"); err != nil {
		return nil, err
	}
	for i, r := range ranges {
		if int64(len(r.Buf)) == 0 || r.Off == size {
			out[i] = future.Completed(e.notifier, 0, nil)
		}
	}
	e.c.opsSubmitted.Add(int64(len(ranges)))
	var queued []func()
	for _, sp := range spans {
		inline := inlineSpan(src, sp, cfg)
		ts := partSize(src, cfg)
		if inline {
			ts = sp.n
		}
		for k := range sp.members {
			m := &sp.members[k]
			m.f = future.New(e.notifier, int((m.at+m.n-1)/ts-m.at/ts+1))
			m.f.SetOffset(m.off)
			out[m.i] = m.f
		}
		if inline {
			e.c.opsInline.Add(int64(len(sp.members)))
			e.runSpanPart(ctx, src, sp, 0, sp.n)
			continue
		}
		np := split(sp.n, ts, false)
		e.c.tasks.Add(np)
		for q := int64(0); q < np; q++ {
			a, b := q*ts, min((q+1)*ts, sp.n)
			queued = append(queued, func() { e.submitSpanPart(ctx, src, sp, a, b) })
		}
	}
	start := func() {
		for _, f := range queued {
			f()
		}
	}
	if e.startAtWait.Load() && len(queued) > 0 {
		once := sync.OnceFunc(start)
		for _, sp := range spans {
			for _, m := range sp.members {
				m.f.SetDeferredStart(once)
			}
		}
	} else {
		start()
	}
	return out, nil
}

// partSize is the size of the parts a span is split into: the source's
// own (a remote source's request_size) or task_size.
func partSize(src *Source, cfg *config.Config) int64 {
	if src.traits.PartSize > 0 {
		return src.traits.PartSize
	}
	return cfg.TaskSize
}

func inlineSpan(src *Source, sp *span, cfg *config.Config) bool {
	return src.traits.Fast && sp.n <= cfg.SmallReadThreshold
}

func (e *Engine) submitSpanPart(ctx context.Context, src *Source, sp *span, a, b int64) {
	task := func(wctx context.Context) { e.runSpanPart(wctx, src, sp, a, b) }
	var err error
	switch {
	case src.net != nil: // see submit
		err = src.net.Submit(context.Background(), task)
	case src.serial != nil:
		err = src.serial.submit(e.pool, ctx, task)
	default:
		err = e.pool.Submit(ctx, task)
	}
	if err != nil { // too deep a nesting: fail the part here
		src.users.release()
		for _, m := range sp.overlapping(a, b) {
			m.f.Begin()
			m.f.PartDoneAt(0, errs.New(errs.Invalid, "%v", err), m.off+max(a-m.at, 0))
		}
	}
}

// overlapping returns the members with bytes in [a, b).
func (sp *span) overlapping(a, b int64) []*member {
	var out []*member
	for k := range sp.members {
		m := &sp.members[k]
		if m.at < b && m.at+m.n > a {
			out = append(out, m)
		}
	}
	return out
}

// runSpanPart reads span bytes [a, b) and reports to every range with
// bytes there.
func (e *Engine) runSpanPart(ctx context.Context, src *Source, sp *span, a, b int64) {
	defer src.users.release()
	ms := sp.overlapping(a, b)
	began := make([]bool, len(ms))
	any := false
	for k, m := range ms {
		began[k] = m.f.Begin()
		any = any || began[k]
	}
	var err error
	var got int64
	switch {
	case !any:
		err = errs.New(errs.Cancelled, "colio: operation cancelled before this part started")
	case src.users.closed.Load():
		err = errs.New(errs.Closed, "colio: source closed before this part started")
	default:
		e.c.enter()
		got, err = e.scatter(ctx, src, sp, a, b)
		e.c.leave()
		e.c.bytesRead.Add(got)
		if err != nil && errs.KindOf(err) != errs.Cancelled {
			e.c.errors.Add(1)
		}
		for _, m := range ms { // bytes that an earlier range holds
			if lo, hi := max(a, m.at), min(b, m.dupEnd, a+got); lo < hi {
				sp.gather(m.buf[lo-m.at:hi-m.at], lo)
			}
		}
	}
	for k, m := range ms {
		lo, hi := max(a, m.at), min(b, m.at+m.n)
		at := m.off + lo - m.at
		switch {
		case !began[k]:
			m.f.PartDoneAt(0, errs.New(errs.Cancelled, "colio: operation cancelled before this part started"), at)
		case err != nil:
			m.f.PartDoneAt(max(0, min(hi, a+got)-lo), err, at)
		case a+got < hi:
			// Planned within the source's size, so every byte is owed.
			m.f.PartDoneAt(max(0, a+got-lo), shortRead(m.off, m.n, sp.off+a+got, sp.end), at)
		default:
			m.f.PartDoneAt(hi-lo, nil, at)
		}
	}
}

// scatter reads span bytes [a, b) into their destinations and returns how
// many it read (holes included). A panic fails only this part.
func (e *Engine) scatter(ctx context.Context, src *Source, sp *span, a, b int64) (got int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			got, err = 0, &errs.Error{Kind: errs.Internal,
				Msg: fmt.Sprintf("colio: panic during I/O at offset %d: %v\n%s", sp.off+a, p, debug.Stack())}
		}
	}()
	off := sp.off + a
	pieces := sp.pieces(a, b)
	if len(pieces) == 1 && pieces[0].Buf != nil {
		n, err := src.readAt(ctx, pieces[0].Buf, off)
		return int64(n), err
	}
	if sc, ok := src.src.(source.Scatterer); ok {
		return sc.ReadScatter(ctx, pieces, off)
	}
	if src.traits.Fast {
		for _, pc := range pieces {
			if pc.Buf == nil {
				got += pc.Skip
				continue
			}
			n, err := src.readAt(ctx, pc.Buf, off+got)
			got += int64(n)
			if err != nil || n < len(pc.Buf) {
				return got, err
			}
		}
		return got, nil
	}
	scratch := make([]byte, b-a)
	n, err := src.readAt(ctx, scratch, off)
	rest := scratch[:n]
	for _, pc := range pieces {
		if len(rest) == 0 {
			break
		}
		if pc.Buf == nil {
			rest = rest[min(int64(len(rest)), pc.Skip):]
			continue
		}
		rest = rest[copy(pc.Buf, rest):]
	}
	return int64(n), err
}
