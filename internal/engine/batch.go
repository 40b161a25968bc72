package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
)

// Batches (issue 15): a fan-out read that reports each range through a
// function instead of a future. For a fast source (a local file, memory)
// the small ranges are inline work, as a small read is (DESIGN.md's inline
// rule), shared with a few pool workers: they are cut into chunks (share.go),
// and the caller and its helpers each take the next chunk until none is
// left, with no future, channel or task per range. A 4 KiB read from the
// page cache costs less than a future's bookkeeping, and the chunks read on
// several cores at once. Every other range takes ReadV's path (or
// ReadVCoalesced's) and reports when its future completes.

// BatchDone receives range i's result, once, on the goroutine that read it.
type BatchDone func(i int, n int64, err error)

// Batch is a running batch: per-range waits and cancels.
type Batch struct {
	futs  []*future.Future // nil for ranges read inline (shared) or empty
	inl   []bool           // range i is read by the share
	share *share           // nil if no range is
}

// ReadVBatch validates every range as ReadV does (a bad one fails the call
// and nothing starts), then starts them all; done is called once per range.
// The small ranges of a fast source have all been read when it returns
// (by the caller, or by a helper that had taken them); the others may
// still be running.
func (e *Engine) ReadVBatch(ctx context.Context, src *Source, ranges []ReadRange, coalesce bool, done BatchDone) (*Batch, error) {
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
	b := &Batch{futs: make([]*future.Future, len(ranges)), inl: make([]bool, len(ranges))}
	var other []int
	small := make([]int, 0, len(ranges))
	empty := 0
	for i, r := range ranges {
		n := min(int64(len(r.Buf)), size-r.Off)
		switch {
		case n == 0:
			empty++
		case src.traits.Fast && n <= cfg.SmallReadThreshold:
			small = append(small, i)
			b.inl[i] = true
		default:
			other = append(other, i)
		}
	}
	if len(other) > 0 {
		sub := make([]ReadRange, len(other))
		for k, i := range other {
			sub[k] = ranges[i]
		}
		read := e.ReadV
		if coalesce {
			read = e.ReadVCoalesced
		}
		fs, err := read(ctx, src, sub)
		if err != nil {
			return nil, err
		}
		for k, i := range other {
			b.futs[i] = fs[k]
		}
	}
	var sh *share
	if len(small) > 0 {
		sh = newShare(ranges, small, size, cfg.Threads)
		if err := src.users.acquire(int64(1+sh.helpers), "source"); err != nil {
			if len(other) == 0 {
				return nil, err
			}
			for _, i := range small { // closed midway, as ReadV does
				b.futs[i] = future.Completed(e.notifier, 0, err)
				b.inl[i] = false
			}
			small, sh = nil, nil
		}
	}
	b.share = sh
	// Report what is settled now: empty ranges, and the futures' hooks
	// (many have completed already: inline reads).
	e.c.opsSubmitted.Add(int64(empty))
	for i := range ranges {
		if f := b.futs[i]; f != nil {
			f.OnCompleteInline(func(f *future.Future) { done(i, f.N(), f.Err()) })
		} else if !b.inl[i] {
			done(i, 0, nil)
		}
	}
	if sh == nil {
		return b, nil
	}
	e.c.opsSubmitted.Add(int64(len(small)))
	e.c.opsInline.Add(int64(len(small)))
	for k := 0; k < sh.helpers; k++ {
		e.c.tasks.Add(1)
		task := func(wctx context.Context) { e.runShare(wctx, src, sh, done) }
		if err := e.pool.Submit(ctx, task); err != nil { // too deep a nesting: the caller reads its chunks
			e.c.tasks.Add(-1)
			src.users.release()
		}
	}
	e.runShare(ctx, src, sh, done)
	sh.wait() // the chunks that helpers took: microseconds
	return b, nil
}

// runShare takes and reads chunks of sh until none is left.
//
// The engine's counters are shared by every core: updated per range, the
// readers running at once on two cores bounced their cache lines at each
// 4 KiB read (issue 15.1). They are updated once per chunk, settled before
// the chunk's first report, so a caller that sees the batch's last range
// reported sees every byte counted and nothing in flight.
func (e *Engine) runShare(ctx context.Context, src *Source, sh *share, done BatchDone) {
	defer src.users.release()
	for {
		idx := sh.take()
		if idx == nil {
			return
		}
		e.c.enter()
		var bytes, failed int64
		for _, i := range idx {
			r := sh.ranges[i]
			n := min(int64(len(r.Buf)), sh.size-r.Off)
			var got int
			var err error
			if src.users.closed.Load() {
				err = errs.New(errs.Closed, "colio: source closed before this part started")
			} else {
				got, err = safeRead(ctx, src, r.Buf[:n], r.Off)
				bytes += int64(got)
				if err == nil && int64(got) < n {
					err = shortRead(r.Off, n, r.Off+int64(got), sh.size)
				}
				if err != nil && errs.KindOf(err) != errs.Cancelled {
					failed++
				}
			}
			sh.res[i] = batchRes{int64(got), err}
		}
		e.c.leave()
		e.c.bytesRead.Add(bytes)
		if failed > 0 {
			e.c.errors.Add(failed)
		}
		sh.report(idx, done)
	}
}

func safeRead(ctx context.Context, src *Source, p []byte, off int64) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, &errs.Error{Kind: errs.Internal,
				Msg: fmt.Sprintf("colio: panic during I/O at offset %d: %v\n%s", off, r, debug.Stack())}
		}
	}()
	return src.readAt(ctx, p, off)
}

// Len is the number of ranges.
func (b *Batch) Len() int { return len(b.inl) }

// Wait waits up to d (d < 0: forever) for range i; done is false on a
// timeout. A range read inline is done when ReadVBatch returns.
func (b *Batch) Wait(i int, d time.Duration) (done bool, n int64, err error) {
	if f := b.futs[i]; f != nil {
		f.WaitTimeout(d)
		return f.Done(), f.N(), f.Err()
	}
	if !b.inl[i] {
		return true, 0, nil // empty
	}
	r := b.share.res[i]
	return true, r.n, r.err
}

// Cancel cancels range i if it has not started; ranges read inline have
// ended when ReadVBatch returns.
func (b *Batch) Cancel(i int) bool {
	if f := b.futs[i]; f != nil {
		return f.Cancel()
	}
	return false
}
