package engine

import (
	"context"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
)

// ReadRange is one range of a fan-out read: fill Buf from Off.
type ReadRange struct {
	Off int64
	Buf []byte
}

// Read fills p from src at off and returns its future at once. A read that
// crosses the end of the source reads the bytes that exist (N says how
// many); one that starts at the end reads 0 bytes; one that starts past it
// is an error. Bad arguments are returned as an error without a future.
func (e *Engine) Read(ctx context.Context, src *Source, p []byte, off int64) (*future.Future, error) {
	return e.readOne(ctx, src, p, off, false)
}

// ReadV starts every range at once and returns one future per range. The
// ranges are checked before any starts, so a bad one fails the whole call.
func (e *Engine) ReadV(ctx context.Context, src *Source, ranges []ReadRange) ([]*future.Future, error) {
	return e.readV(ctx, src, ranges, false)
}

// ReadHeld is Read for a caller that holds src (Source.Acquire): the read
// is accepted and runs to its end even when Close has begun (Close waits
// for the holder anyway). Without a hold, use Read.
func (e *Engine) ReadHeld(ctx context.Context, src *Source, p []byte, off int64) (*future.Future, error) {
	return e.readOne(ctx, src, p, off, true)
}

// readOne is readV of one range with its range and its future on the
// stack: a callback source's small reads paid two slices per read.
func (e *Engine) readOne(ctx context.Context, src *Source, p []byte, off int64, held bool) (*future.Future, error) {
	ranges := [1]ReadRange{{Off: off, Buf: p}}
	var out [1]*future.Future
	if err := e.readInto(ctx, src, ranges[:], out[:], held); err != nil {
		return nil, err
	}
	return out[0], nil
}

func (e *Engine) readV(ctx context.Context, src *Source, ranges []ReadRange, held bool) ([]*future.Future, error) {
	out := make([]*future.Future, len(ranges))
	if err := e.readInto(ctx, src, ranges, out, held); err != nil {
		return nil, err
	}
	return out, nil
}

// readInto starts ranges and puts their futures in out (as long). An
// error is returned only when none started.
func (e *Engine) readInto(ctx context.Context, src *Source, ranges []ReadRange, out []*future.Future, held bool) error {
	ctx = levelCtx(ctx)
	if src == nil {
		return errs.New(errs.Invalid, "colio: nil source")
	}
	var size int64
	var err error
	if held {
		size, err = src.src.Size()
	} else {
		size, err = src.Size()
	}
	if err != nil {
		return err
	}
	if err := checkRanges(ranges, size); err != nil {
		return err
	}
	cfg := e.cfg.Load()
	fast := src.traits.Fast
	ts := partSize(src, cfg)
	for i, r := range ranges {
		n := min(int64(len(r.Buf)), size-r.Off)
		if n == 0 {
			e.c.opsSubmitted.Add(1)
			out[i] = future.Completed(e.notifier, 0, nil)
			continue
		}
		inline := fast && n <= cfg.SmallReadThreshold
		req := newRequest(src, split(n, ts, inline))
		req.io, req.p, req.off, req.users, req.isRead, req.end, req.onClosed = src.readFn, r.Buf[:n], r.Off, &src.users, true, size, !held
		req.serial, req.net, req.ext = src.serial, src.net, src.ext
		if held {
			src.users.join(split(n, ts, inline))
			out[i] = e.submit(ctx, req, inline, ts)
			continue
		}
		if err := src.users.acquire(split(n, ts, inline), "source"); err != nil {
			if i == 0 {
				return err
			}
			// Closed midway: fail this and the remaining ranges alike.
			for j := i; j < len(ranges); j++ {
				out[j] = future.Completed(e.notifier, 0, err)
			}
			return nil
		}
		out[i] = e.submit(ctx, req, inline, ts)
	}
	return nil
}

func rangeNote(i, n int) string {
	if n <= 1 {
		return ""
	}
	return " (range " + itoa(i) + " of " + itoa(n) + ")"
}

// checkRanges is the argument check of every fan-out (ReadV, its
// coalesced and batched forms): a bad range fails the whole call before
// any of it starts.
func checkRanges(ranges []ReadRange, size int64) error {
	for i, r := range ranges {
		if err := checkRange(r.Off, len(r.Buf), "read"); err != nil {
			return err
		}
		if r.Off > size {
			return errs.New(errs.Invalid, "colio: read at offset %d starts past the end of the source (%d bytes)%s",
				r.Off, size, rangeNote(i, len(ranges)))
		}
	}
	return nil
}
