package engine

import (
	"context"
	"strconv"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/sink"
)

// WriteRange is one write of a fan-out: Buf at Off, or appended when Off is
// Append.
type WriteRange struct {
	Off int64
	Buf []byte
}

// Write writes p to snk at off (or at the next append offset when off is
// Append) and returns its future at once. An append reserves its offset
// now, so eager parallel appends land where a serial writer would put them;
// Future.Offset says where.
func (e *Engine) Write(ctx context.Context, snk *Sink, p []byte, off int64) (*future.Future, error) {
	fs, err := e.WriteV(ctx, snk, []WriteRange{{Off: off, Buf: p}})
	if err != nil {
		return nil, err
	}
	return fs[0], nil
}

// WriteV starts every write at once, reserving append offsets in order,
// and returns one future per write. Ranges are checked before any starts.
func (e *Engine) WriteV(ctx context.Context, snk *Sink, ranges []WriteRange) ([]*future.Future, error) {
	return e.writeV(ctx, snk, ranges, false)
}

// WriteHeld is Write for a caller that holds snk (Sink.Acquire): the write
// is accepted even when Close has begun (Close waits for the holder, and
// then for this write). Without a hold, use Write.
func (e *Engine) WriteHeld(ctx context.Context, snk *Sink, p []byte, off int64) (*future.Future, error) {
	fs, err := e.writeV(ctx, snk, []WriteRange{{Off: off, Buf: p}}, true)
	if err != nil {
		return nil, err
	}
	return fs[0], nil
}

func (e *Engine) writeV(ctx context.Context, snk *Sink, ranges []WriteRange, held bool) ([]*future.Future, error) {
	ctx = levelCtx(ctx)
	if snk == nil {
		return nil, errs.New(errs.Invalid, "colio: nil sink")
	}
	for _, r := range ranges {
		if r.Off == Append {
			continue
		}
		if err := checkRange(r.Off, len(r.Buf), "write"); err != nil {
			return nil, err
		}
	}
	cfg := e.cfg.Load()
	fast := snk.traits.Fast
	out := make([]*future.Future, len(ranges))
	for i, r := range ranges {
		n := int64(len(r.Buf))
		inline := fast && n <= cfg.SmallWriteThreshold
		if held {
			snk.users.join(split(n, cfg.TaskSize, inline))
		} else if err := snk.users.acquire(split(n, cfg.TaskSize, inline), "sink"); err != nil {
			if i == 0 {
				return nil, err
			}
			for j := i; j < len(ranges); j++ {
				out[j] = future.Completed(e.notifier, 0, err)
			}
			return out, nil
		}
		off := r.Off
		if off == Append {
			off = snk.next.Add(n) - n
			if err := checkRange(off, int(n), "append"); err != nil {
				snk.users.release()
				out[i] = future.Completed(e.notifier, 0, err)
				continue
			}
		}
		if n == 0 {
			snk.users.release()
			e.c.opsSubmitted.Add(1)
			f := future.Completed(e.notifier, 0, nil)
			f.SetOffset(off)
			out[i] = f
			continue
		}
		req := &request{io: snk.snk.WriteAt, p: r.Buf, off: off, users: &snk.users, sink: snk, serial: snk.serial}
		req.durable, _ = snk.snk.(sink.Durable)
		out[i] = e.submit(ctx, req, inline, cfg.TaskSize)
	}
	return out, nil
}

func itoa(i int) string { return strconv.Itoa(i) }
