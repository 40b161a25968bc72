package gpu

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/pool"
)

// ringDepth is the number of bounce buffers each task cycles through. Two
// are enough to overlap the source read of one chunk with the copy of the
// previous one; the write pipeline relies on there being at least two.
const ringDepth = 2

var _ [ringDepth - 2]struct{} // compile-time check: ringDepth >= 2

// Options qualify one device request.
type Options struct {
	// After orders the request after the work queued on this stream before
	// the call (the "stream" of __cuda_array_interface__): colio records
	// an event on it and makes its own stream wait for that event, on the
	// GPU, before its first copy; the host does not wait. NoStream (0)
	// asks for no ordering; LegacyStream (1) and PerThreadStream (2) are
	// the default streams.
	After Stream
}

// Mover moves bytes between colio sources and sinks and device memory. It
// is safe for concurrent use. Most programs use Default.
type Mover struct {
	dev  Device
	eng  *engine.Engine
	pool *pool.Pool

	mu   sync.Mutex
	ctxs map[Context]*ctxState

	c counters
}

// New returns a mover that runs on dev and takes its settings (threads,
// task size, thresholds, bounce buffer size) and its notifier from e.
func New(dev Device, e *engine.Engine) *Mover {
	return &Mover{dev: dev, eng: e, pool: pool.New(e.Config().Threads), ctxs: map[Context]*ctxState{}}
}

// Engine returns the engine whose settings the mover follows.
func (m *Mover) Engine() *engine.Engine { return m.eng }

// softCap is the number of pinned buffers per context past which the pool
// waits for a fenced buffer instead of allocating.
func (m *Mover) softCap() int { return max(8, 2*ringDepth*m.pool.Limit()) }

func (m *Mover) state(c Context) *ctxState {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.ctxs[c]
	if cs == nil {
		cs = &ctxState{m: m, ctx: c}
		m.ctxs[c] = cs
	}
	return cs
}

// ReleaseIdle frees the pinned buffers, streams and events that no request
// holds, after the copies still using them end. Requests started later
// allocate again.
func (m *Mover) ReleaseIdle() error {
	m.mu.Lock()
	var cs []*ctxState
	for _, s := range m.ctxs {
		cs = append(cs, s)
	}
	m.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, s := range cs {
		if err := m.dev.PushContext(s.ctx); err != nil {
			return deviceErr(err, "making a context current (cuCtxPushCurrent)")
		}
		s.releaseIdle()
		_ = m.dev.PopContext()
	}
	return nil
}

// ReadSource reads size bytes of src at off into device memory at dptr:
// colio_read_device_async. A read that crosses the end of the source
// reads the bytes that exist (the future's N says how many); one that
// starts past it is an error. Requests at or under small_read_threshold on
// fast sources run on the caller and return a completed future.
func (m *Mover) ReadSource(ctx context.Context, src *engine.Source, dptr uintptr, size, off int64, opt Options) (*future.Future, error) {
	if src == nil {
		return nil, errs.New(errs.Invalid, "colio: nil source")
	}
	return m.Read(ctx, EngineSource(m.eng, src), dptr, size, off, opt)
}

// WriteSink writes size bytes of device memory at dptr to snk at off:
// colio_write_device_async. With opt.After it first orders itself after
// the producer's stream.
func (m *Mover) WriteSink(ctx context.Context, snk *engine.Sink, dptr uintptr, size, off int64, opt Options) (*future.Future, error) {
	if snk == nil {
		return nil, errs.New(errs.Invalid, "colio: nil sink")
	}
	return m.Write(ctx, EngineSink(m.eng, snk), dptr, size, off, opt)
}

// Read is ReadSource for any HostReader.
func (m *Mover) Read(ctx context.Context, src HostReader, dptr uintptr, size, off int64, opt Options) (*future.Future, error) {
	if src == nil {
		return nil, errs.New(errs.Invalid, "colio: nil source")
	}
	if err := checkArgs("read", dptr, size, off); err != nil {
		return nil, err
	}
	total, err := src.Size()
	if err != nil {
		return nil, err
	}
	if off > total {
		return nil, errs.New(errs.Invalid, "colio: device read at offset %d starts past the end of the source (%d bytes)", off, total)
	}
	n := min(size, total-off)
	if n == 0 {
		return future.Completed(m.eng.Notifier(), 0, nil), nil
	}
	cfg := m.eng.Config()
	r := &request{m: m, ctx: levelCtx(ctx), read: true, src: src, dptr: dptr, n: n, off: off}
	return m.start(r, src.Fast() && n <= cfg.SmallReadThreshold, cfg, opt)
}

// Write is WriteSink for any HostWriter.
func (m *Mover) Write(ctx context.Context, snk HostWriter, dptr uintptr, size, off int64, opt Options) (*future.Future, error) {
	if snk == nil {
		return nil, errs.New(errs.Invalid, "colio: nil sink")
	}
	var app appender
	if off == engine.Append {
		a, ok := snk.(appender)
		if !ok {
			return nil, errs.New(errs.Invalid, "colio: this sink hands out no append offsets; give the device write an explicit offset")
		}
		app = a
		off = 0 // checked once reserved
	}
	if err := checkArgs("write", dptr, size, off); err != nil {
		return nil, err
	}
	h, held := snk.(holder)
	if held {
		// Held from submission to the end of the request: closing the
		// sink waits for every accepted device write, as for host writes.
		if err := h.hold(); err != nil {
			return nil, err
		}
	}
	if size == 0 {
		if app != nil {
			off = app.nextAppend()
		}
		if held {
			h.unhold()
		}
		f := future.Completed(m.eng.Notifier(), 0, nil)
		f.SetOffset(off)
		return f, nil
	}
	cfg := m.eng.Config()
	r := &request{m: m, ctx: levelCtx(ctx), snk: snk, dptr: dptr, n: size, off: off, app: app, held: held}
	f, err := m.start(r, snk.Fast() && size <= cfg.SmallWriteThreshold, cfg, opt)
	if err != nil && held {
		h.unhold()
	}
	return f, err
}

func checkArgs(what string, dptr uintptr, size, off int64) error {
	switch {
	case size < 0:
		return errs.New(errs.Invalid, "colio: negative device %s size %d", what, size)
	case off < 0:
		return errs.New(errs.Invalid, "colio: negative device %s offset %d", what, off)
	case size > math.MaxInt64-off:
		return errs.New(errs.Invalid, "colio: device %s of %d bytes at offset %d overflows a 64-bit offset", what, size, off)
	case size > 0 && dptr == 0:
		return errs.New(errs.Invalid, "colio: NULL device pointer for a device %s of %d bytes", what, size)
	case uint64(size) > uint64(^uintptr(0)-dptr):
		return errs.New(errs.Invalid, "colio: device buffer at %#x of %d bytes wraps around the address space", dptr, size)
	}
	return nil
}

func levelCtx(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

func deviceErr(err error, format string, args ...any) error {
	return errs.Wrap(errs.IO, err, "colio: CUDA error "+format, args...)
}

// request is one device read or write being run.
//
// One synchronisation per request: all tasks of a request queue their
// copies on the request's own stream (taken from the context's stream pool
// at submission). A task that finishes queuing does not wait for its
// copies; it counts itself out (remaining), and the task that counts out
// last, which runs after every copy of the request has been queued,
// synchronises the stream once and completes the future. A task that is
// not last returns its bounce buffers to the pool fenced by their events:
// they are reused once those events complete, without any thread waiting.
// The future cannot complete before that one synchronisation, since its
// last part is reported only after it.
type request struct {
	m    *Mover
	ctx  context.Context // the caller's: its pool level applies to host I/O
	read bool
	src  HostReader
	snk  HostWriter
	dptr uintptr
	n    int64 // bytes (clamped to the source for reads)
	off  int64
	app  appender // writes with COLIO_APPEND: reserve the offset at submission
	held bool     // writes: the sink is held (holder) until the last task ends

	cs     *ctxState
	stream Stream
	chunk  int64 // bounce buffer size for this request
	f      *future.Future

	remaining atomic.Int64 // tasks that have not finished
	failed    atomic.Bool
}

func (m *Mover) start(r *request, inline bool, cfg config.Config, opt Options) (*future.Future, error) {
	info, err := m.dev.PointerInfo(r.dptr)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "colio: %#x is not CUDA device memory (cuPointerGetAttribute)", r.dptr)
	}
	if r.dptr < info.Base || uint64(r.n) > uint64(info.Base+uintptr(info.Size)-r.dptr) {
		return nil, errs.New(errs.Invalid, "colio: device buffer at %#x is too small: its allocation (%d bytes at %#x) holds %d bytes from there, the %s needs %d",
			r.dptr, info.Size, info.Base, int64(info.Base+uintptr(info.Size)-min(r.dptr, info.Base+uintptr(info.Size))), r.what(), r.n)
	}
	if r.app != nil {
		// Reserved on the caller's thread, after the checks that can
		// refuse the request, so appends land in call order.
		r.off = r.app.reserveAppend(r.n)
		if err := checkArgs("append", r.dptr, r.n, r.off); err != nil {
			return nil, err
		}
	}
	r.cs = m.state(info.Ctx)
	r.chunk = cfg.BounceBufferSize
	if m.pool.Limit() != cfg.Threads {
		m.pool.SetLimit(cfg.Threads)
	}
	// On the caller's thread: take the stream and order it after the
	// caller's stream now, so the order covers exactly the work queued
	// before this call.
	if err := r.setup(opt.After); err != nil {
		return nil, err
	}
	m.c.requests.Add(1)
	if r.read {
		m.c.reads.Add(1)
	} else {
		m.c.writes.Add(1)
	}
	ts := cfg.TaskSize
	parts := int64(1)
	if !inline {
		parts = (r.n + ts - 1) / ts
	}
	r.f = future.New(m.eng.Notifier(), int(parts))
	r.f.SetOffset(r.off)
	r.remaining.Store(parts)
	if inline {
		m.c.inline.Add(1)
		r.task(0, r.n, nil)
		return r.f, nil
	}
	m.c.tasks.Add(parts)
	for i := int64(0); i < parts; i++ {
		a := i * ts
		b := min(a+ts, r.n)
		if err := m.pool.Submit(r.ctx, func(context.Context) { r.task(a, b, nil) }); err != nil {
			r.task(a, b, errs.New(errs.Invalid, "%v", err))
		}
	}
	return r.f, nil
}

func (r *request) what() string {
	if r.read {
		return "read"
	}
	return "write"
}

// setup runs on the caller: it takes the request's stream and, if asked,
// makes it wait for the work queued so far on the caller's stream.
func (r *request) setup(after Stream) (err error) {
	dev := r.m.dev
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := dev.PushContext(r.cs.ctx); err != nil {
		return deviceErr(err, "making the buffer's context current (cuCtxPushCurrent)")
	}
	defer func() { _ = dev.PopContext() }()
	s, err := r.cs.getStream()
	if err != nil {
		return err
	}
	if after != NoStream {
		ev, err := r.cs.getEvent()
		if err == nil {
			if err = dev.EventRecord(ev, after); err != nil {
				err = deviceErr(err, "recording an event on the caller's stream %#x (cuEventRecord)", uintptr(after))
			} else if err = dev.StreamWaitEvent(s, ev); err != nil {
				err = deviceErr(err, "ordering after the caller's stream %#x (cuStreamWaitEvent)", uintptr(after))
			}
			r.cs.putEvent(ev)
		}
		if err != nil {
			r.cs.putStream(s)
			return err
		}
		r.m.c.producerWaits.Add(1)
	}
	r.stream = s
	return nil
}

// ring is the bounce buffers one task cycles through.
type ring [ringDepth]*bounce

// slot returns the buffer for chunk k, waiting for the copy that last used
// it (an event wait) if that copy may still run.
func (r *request) slot(rg *ring, k int) (*bounce, error) {
	i := k % ringDepth
	if b := rg[i]; b != nil {
		if b.pending {
			r.m.c.eventWaits.Add(1)
			if err := r.m.dev.EventSynchronize(b.ev); err != nil {
				b.broken = true
				return nil, deviceErr(err, "waiting for a bounce buffer's copy (cuEventSynchronize)")
			}
			b.pending = false
		}
		return b, nil
	}
	b, err := r.cs.getBuffer(int(r.chunk))
	if err != nil {
		return nil, err
	}
	rg[i] = b
	return b, nil
}

func (rg *ring) release(cs *ctxState, synced bool) {
	for i, b := range rg {
		if b != nil {
			cs.putBuffer(b, synced)
			rg[i] = nil
		}
	}
}

// task moves bytes [a, b) of the request. It runs on a pool worker (or on
// the caller, inline), locked to its OS thread while the context is
// current.
func (r *request) task(a, b int64, pre error) {
	dev := r.m.dev
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := pre
	if !r.f.Begin() && err == nil {
		err = errs.New(errs.Cancelled, "colio: operation cancelled before this part started")
	}
	var rg ring
	var moved int64
	pushed := false
	if perr := dev.PushContext(r.cs.ctx); perr != nil {
		if err == nil {
			err = deviceErr(perr, "making the buffer's context current (cuCtxPushCurrent)")
		}
	} else {
		pushed = true
	}
	if err == nil && r.read {
		// A running task holds the source, so that closing it lets this
		// task's chunks finish; a task that starts after Close fails.
		if h, ok := r.src.(holder); ok {
			if herr := h.hold(); herr != nil {
				err = errs.Wrap(errs.Closed, herr, "colio: source closed before this part of the device read started")
			} else {
				defer h.unhold() // after PartDone, as the engine releases its parts
			}
		}
	}
	if err == nil {
		moved, err = r.run(a, b, &rg)
	}
	if err != nil {
		r.failed.Store(true)
	}
	if r.remaining.Add(-1) != 0 {
		// Not last: leave the copies running; the buffers come back fenced.
		rg.release(r.cs, false)
		if pushed {
			_ = dev.PopContext()
		}
		r.f.PartDone(moved, err)
		return
	}
	// Last: every copy of the request is queued. Synchronise once.
	synced := false
	if pushed {
		r.m.c.streamSyncs.Add(1)
		if serr := dev.StreamSynchronize(r.stream); serr != nil {
			r.failed.Store(true)
			if err == nil {
				err = deviceErr(serr, "synchronising the stream (cuStreamSynchronize)")
			}
		} else {
			synced = true
		}
	}
	rg.release(r.cs, synced)
	if synced {
		r.cs.putStream(r.stream)
	} else if pushed {
		_ = dev.StreamDestroy(r.stream)
	}
	if r.failed.Load() {
		r.m.c.errors.Add(1)
	}
	if pushed {
		_ = dev.PopContext()
	}
	r.f.PartDone(moved, err)
	if r.held {
		// Every write of the request has ended and its future completed:
		// a Flush or Close waiting for the sink goes on.
		r.snk.(holder).unhold()
	}
}

// run turns a panic into the request's error, so a bug fails only the
// request it belongs to.
func (r *request) run(a, b int64, rg *ring) (moved int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &errs.Error{Kind: errs.Internal,
				Msg: fmt.Sprintf("colio: panic during a device %s at offset %d: %v\n%s", r.what(), r.off+a, p, debug.Stack())}
		}
	}()
	if r.read {
		return r.readRange(a, b, rg)
	}
	return r.writeRange(a, b, rg)
}

// readRange pipelines [a, b) through the ring: the source read of chunk k+1
// runs while the copy of chunk k goes to the device; a buffer is refilled
// only after the event recorded behind its previous copy completed.
func (r *request) readRange(a, b int64, rg *ring) (int64, error) {
	dev, c := r.m.dev, &r.m.c
	var moved int64
	for k, pos := 0, a; pos < b; k++ {
		n := min(r.chunk, b-pos)
		buf, err := r.slot(rg, k)
		if err != nil {
			return moved, err
		}
		p := buf.b[:n]
		got, err := r.src.ReadAt(r.ctx, p, r.off+pos)
		if err != nil {
			return moved, err
		}
		short := int64(got) < n
		if short && pos+n < r.n {
			return moved, errs.New(errs.IO, "colio: source ended at offset %d, inside the requested range (did it shrink during the read?)",
				r.off+pos+int64(got))
		}
		if got > 0 {
			if err := dev.CopyHtoDAsync(r.dptr+uintptr(pos), p[:got], r.stream); err != nil {
				return moved, deviceErr(err, "copying %d bytes to device address %#x (cuMemcpyHtoDAsync)", got, r.dptr+uintptr(pos))
			}
			buf.pending = true
			if err := dev.EventRecord(buf.ev, r.stream); err != nil {
				buf.broken = true
				return moved, deviceErr(err, "recording an event (cuEventRecord)")
			}
			c.chunks.Add(1)
			c.toDevice.Add(int64(got))
			moved += int64(got)
		}
		if short {
			break // the source ended inside the last chunk
		}
		pos += n
	}
	return moved, nil
}

// writeRange pipelines [a, b) through the ring: the device-to-host copy of
// chunk k+1 runs while chunk k is written to the sink. Each chunk waits on
// its own event before its write.
func (r *request) writeRange(a, b int64, rg *ring) (int64, error) {
	dev, c := r.m.dev, &r.m.c
	chunks := int((b - a + r.chunk - 1) / r.chunk)
	span := func(k int) (int64, int64) {
		pos := a + int64(k)*r.chunk
		return pos, min(r.chunk, b-pos)
	}
	issue := func(k int) error {
		pos, n := span(k)
		buf, err := r.slot(rg, k)
		if err != nil {
			return err
		}
		if err := dev.CopyDtoHAsync(buf.b[:n], r.dptr+uintptr(pos), r.stream); err != nil {
			return deviceErr(err, "copying %d bytes from device address %#x (cuMemcpyDtoHAsync)", n, r.dptr+uintptr(pos))
		}
		buf.pending = true
		if err := dev.EventRecord(buf.ev, r.stream); err != nil {
			buf.broken = true
			return deviceErr(err, "recording an event (cuEventRecord)")
		}
		c.chunks.Add(1)
		return nil
	}
	if err := issue(0); err != nil {
		return 0, err
	}
	var moved int64
	for k := 0; k < chunks; k++ {
		if k+1 < chunks {
			if err := issue(k + 1); err != nil {
				return moved, err
			}
		}
		buf := rg[k%ringDepth]
		c.eventWaits.Add(1)
		if err := dev.EventSynchronize(buf.ev); err != nil {
			buf.broken = true
			return moved, deviceErr(err, "waiting for a device-to-host copy (cuEventSynchronize)")
		}
		buf.pending = false
		pos, n := span(k)
		got, err := r.snk.WriteAt(r.ctx, buf.b[:n], r.off+pos)
		moved += int64(got)
		c.fromDevice.Add(int64(got))
		if err != nil {
			return moved, err
		}
		if int64(got) < n {
			return moved, errs.New(errs.IO, "colio: sink wrote %d of %d bytes at offset %d", got, n, r.off+pos)
		}
	}
	return moved, nil
}
