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
// the small ranges are read in a few groups, each one pool task (one runs
// on the caller), with no future, channel or task per range: a 4 KiB read
// from the page cache costs less than a future's bookkeeping, and the
// groups read on several cores at once. Every other range takes ReadV's
// path (or ReadVCoalesced's) and reports when its future completes.

// BatchDone receives range i's result, once, on the goroutine that read it.
type BatchDone func(i int, n int64, err error)

// Batch is a running batch: per-range waits and cancels.
type Batch struct {
	futs   []*future.Future // nil for ranges read in a group
	group  []int32          // range -> group, -1 if none
	groups []chan struct{}  // closed when the group has reported every range
	res    []batchRes       // grouped ranges' results, set before their group closes
}

type batchRes struct {
	n   int64
	err error
}

// minPerGroup keeps a group's task worth its hand-off.
const minPerGroup = 32

// ReadVBatch validates every range as ReadV does (a bad one fails the call
// and nothing starts), then starts them all; done is called once per range.
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
	b := &Batch{futs: make([]*future.Future, len(ranges)), group: make([]int32, len(ranges))}
	// group[i] is -2 for a small range until its group is chosen, so that
	// the report below tells the empty ranges apart without a search.
	const smallMark = -2
	var other []int
	small := make([]int, 0, len(ranges))
	for i, r := range ranges {
		b.group[i] = -1
		n := min(int64(len(r.Buf)), size-r.Off)
		switch {
		case n == 0:
		case src.traits.Fast && n <= cfg.SmallReadThreshold:
			small = append(small, i)
			b.group[i] = smallMark
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
	g := 0
	if len(small) > 0 {
		g = min(max(cfg.Threads, 1), (len(small)+minPerGroup-1)/minPerGroup)
		if err := src.users.acquire(int64(g), "source"); err != nil {
			if len(other) == 0 {
				return nil, err
			}
			for _, i := range small { // closed midway, as ReadV does
				b.futs[i] = future.Completed(e.notifier, 0, err)
				b.group[i] = -1
			}
			small, g = nil, 0
		}
	}
	// Report what is settled now: empty ranges, and the futures' hooks
	// (many have completed already: inline reads).
	for i := range ranges {
		if f := b.futs[i]; f != nil {
			f.OnCompleteInline(func(f *future.Future) { done(i, f.N(), f.Err()) })
		} else if b.group[i] != smallMark {
			e.c.opsSubmitted.Add(1)
			done(i, 0, nil)
		}
	}
	if g == 0 {
		return b, nil
	}
	e.c.opsSubmitted.Add(int64(len(small)))
	b.groups = make([]chan struct{}, g)
	b.res = make([]batchRes, len(ranges))
	per := (len(small) + g - 1) / g
	var mine []int
	for k := 0; k < g; k++ {
		idx := small[min(k*per, len(small)):min((k+1)*per, len(small))]
		ch := make(chan struct{})
		b.groups[k] = ch
		for _, i := range idx {
			b.group[i] = int32(k)
		}
		if k == 0 {
			mine = idx
			continue
		}
		e.c.tasks.Add(1)
		task := func(wctx context.Context) { e.runGroup(wctx, src, ranges, idx, size, b, ch, done) }
		if err := e.pool.Submit(ctx, task); err != nil { // too deep a nesting
			e.c.tasks.Add(-1)
			e.failGroup(src, idx, b, ch, done, errs.New(errs.Invalid, "%v", err))
		}
	}
	e.c.opsInline.Add(int64(len(mine)))
	e.runGroup(ctx, src, ranges, mine, size, b, b.groups[0], done)
	return b, nil
}

func (e *Engine) failGroup(src *Source, idx []int, b *Batch, ch chan struct{}, done BatchDone, err error) {
	defer src.users.release()
	defer close(ch)
	for _, i := range idx {
		b.res[i] = batchRes{0, err}
		done(i, 0, err)
	}
}

// runGroup reads a group's ranges one after another, with runPart's checks
// and counters for each.
//
// The engine's counters are shared by every core: updated per range, the
// groups running at once on two cores bounced their cache lines at each
// 4 KiB read (issue 15.1). A group reads one range at a time, so it is in
// flight once for its whole run, and its bytes are added before it reports
// its last range.
func (e *Engine) runGroup(ctx context.Context, src *Source, ranges []ReadRange, idx []int, size int64, b *Batch, ch chan struct{}, done BatchDone) {
	defer src.users.release()
	defer close(ch)
	var bytes int64
	e.c.enter()
	settled := false
	settle := func() { // before the last report: the batch may end with it
		if !settled {
			settled = true
			e.c.leave()
			e.c.bytesRead.Add(bytes)
		}
	}
	defer settle() // a panicking done
	for k, i := range idx {
		r := ranges[i]
		n := min(int64(len(r.Buf)), size-r.Off)
		var got int
		var err error
		if src.users.closed.Load() {
			err = errs.New(errs.Closed, "colio: source closed before this part started")
		} else {
			got, err = safeRead(ctx, src, r.Buf[:n], r.Off)
			bytes += int64(got)
			if err == nil && int64(got) < n {
				err = shortRead(r.Off, n, r.Off+int64(got), size)
			}
			if err != nil && errs.KindOf(err) != errs.Cancelled {
				e.c.errors.Add(1)
			}
		}
		b.res[i] = batchRes{int64(got), err}
		if k == len(idx)-1 {
			settle()
		}
		done(i, int64(got), err)
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
func (b *Batch) Len() int { return len(b.group) }

// Wait waits up to d (d < 0: forever) for range i; done is false on a
// timeout. A grouped range is waited for with its group (microseconds).
func (b *Batch) Wait(i int, d time.Duration) (done bool, n int64, err error) {
	if f := b.futs[i]; f != nil {
		f.WaitTimeout(d)
		return f.Done(), f.N(), f.Err()
	}
	k := b.group[i]
	if k < 0 {
		return true, 0, nil // empty
	}
	ch := b.groups[k]
	select {
	case <-ch:
	default:
		if d == 0 {
			return false, 0, nil
		}
		if d < 0 {
			<-ch
		} else {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ch:
			case <-t.C:
				return false, 0, nil
			}
		}
	}
	return true, b.res[i].n, b.res[i].err
}

// Cancel cancels range i if it has not started; grouped ranges are taken
// as started (their group runs them back to back in microseconds).
func (b *Batch) Cancel(i int) bool {
	if f := b.futs[i]; f != nil {
		return f.Cancel()
	}
	return false
}
