// Package fakedev is a fake CUDA device for testing the device pipeline on
// machines without a GPU. It keeps "device memory" as Go byte slices,
// queues copies on streams and runs them lazily (only when something waits
// for them, unless QueryCompletes is set), logs every call, and records a
// problem whenever the caller breaks a rule the real driver would punish:
//
//   - a copy whose host side is not inside memory from HostAlloc (pageable);
//   - a call that needs a current context made on an OS thread without one,
//     or with another context than the handle's (a goroutine that was not
//     locked to its thread, or a missing push);
//   - pinned memory freed while a queued copy still uses it;
//   - a device range outside any allocation, or destroyed handles in use.
//
// Because copies run late, a pipeline that refills a bounce buffer before
// its previous copy ran would put the wrong bytes on the device, and one
// that skips ordering after a producer stream would copy stale bytes:
// byte comparisons catch both.
package fakedev

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"unsafe"

	"github.com/colio-dev/colio/gpu"
)

// Log operations.
const (
	OpPtrInfo       = "ptr-info"
	OpPush          = "push"
	OpPop           = "pop"
	OpHostAlloc     = "host-alloc"
	OpHostFree      = "host-free"
	OpStreamCreate  = "stream-create"
	OpStreamDestroy = "stream-destroy"
	OpStreamSync    = "stream-sync"
	OpStreamWait    = "stream-wait-event"
	OpEventCreate   = "event-create"
	OpEventDestroy  = "event-destroy"
	OpRecord        = "record"
	OpEventSync     = "event-sync"
	OpEventQuery    = "event-query"
	OpHtoD          = "h2d" // queued
	OpDtoH          = "d2h" // queued
	OpExecHtoD      = "exec-h2d"
	OpExecDtoH      = "exec-d2h"
	OpExecKernel    = "exec-kernel"
	OpKernel        = "kernel" // queued by a test as producer work
)

// Entry is one logged call or execution.
type Entry struct {
	Seq    int
	Op     string
	Tid    int         // OS thread of the call (0 for executions)
	Ctx    gpu.Context // current context of the calling thread
	Stream gpu.Stream
	Event  gpu.Event
	Dev    uintptr // device address
	Host   uintptr // host address
	N      int
	Off    int64 // for notes
}

func (e Entry) String() string {
	return fmt.Sprintf("#%d %s tid=%d ctx=%d s=%d ev=%d dev=%#x host=%#x n=%d off=%d",
		e.Seq, e.Op, e.Tid, e.Ctx, e.Stream, e.Event, e.Dev, e.Host, e.N, e.Off)
}

// ErrInjected is what Fail hooks usually return.
var ErrInjected = errors.New("fakedev: injected device failure")

type region struct {
	base uintptr
	data []byte
	ctx  gpu.Context
}

type opKind int

const (
	kH2D opKind = iota
	kD2H
	kRecord
	kWait
	kKernel
)

type op struct {
	kind opKind
	dev  uintptr
	host []byte
	ev   *event
	ws   *stream // wait: stream and op index to run first
	widx int
	fill []byte // kernel: bytes written at dev
}

type stream struct {
	id        gpu.Stream
	ctx       gpu.Context // 0 for the default streams
	ops       []op
	done      int // ops executed
	destroyed bool
}

type event struct {
	id        gpu.Event
	ctx       gpu.Context
	s         *stream
	idx       int
	recorded  bool
	destroyed bool
}

// Device is the fake. The zero value is not usable: call New.
type Device struct {
	// Fail, if set, is called (with the device locked: it must not call
	// the device) before each call with the entry about to be logged; a
	// non-nil result fails the call, which then does nothing.
	Fail func(Entry) error
	// QueryCompletes makes EventQuery run queued work up to the event, as
	// if time had passed. Without it, queued work runs only when a
	// synchronisation (or a query after one) needs it.
	QueryCompletes bool

	mu       sync.Mutex
	seq      int
	log      []Entry
	handles  uintptr
	nextAddr uintptr
	regions  []*region
	pinned   map[uintptr]int
	streams  map[gpu.Stream]*stream
	events   map[gpu.Event]*event
	threads  map[int][]gpu.Context
	ctxs     map[gpu.Context]bool
	problems []string
}

// New returns a fake device with no contexts.
func New() *Device {
	d := &Device{
		handles:  16,
		nextAddr: 0x7000_0000_0000,
		pinned:   map[uintptr]int{},
		streams:  map[gpu.Stream]*stream{},
		events:   map[gpu.Event]*event{},
		threads:  map[int][]gpu.Context{},
		ctxs:     map[gpu.Context]bool{},
	}
	for _, id := range []gpu.Stream{gpu.LegacyStream, gpu.PerThreadStream} {
		d.streams[id] = &stream{id: id}
	}
	return d
}

var _ gpu.Device = (*Device)(nil)

// ---- test helpers (no context needed) -----------------------------------

// NewContext returns a new context handle.
func (d *Device) NewContext() gpu.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handles++
	c := gpu.Context(d.handles)
	d.ctxs[c] = true
	return c
}

// Alloc returns n bytes of zeroed device memory in ctx.
func (d *Device) Alloc(ctx gpu.Context, n int) uintptr {
	d.mu.Lock()
	defer d.mu.Unlock()
	base := d.nextAddr
	d.nextAddr += uintptr(n+4095)&^4095 + 1<<20 // a gap between allocations
	d.regions = append(d.regions, &region{base: base, data: make([]byte, n), ctx: ctx})
	return base
}

// Bytes returns a copy of n bytes of device memory at ptr, as it is now
// (queued copies that have not run are not in it).
func (d *Device) Bytes(ptr uintptr, n int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, off := d.find(ptr, n)
	if r == nil {
		panic(fmt.Sprintf("fakedev: Bytes(%#x, %d) outside device memory", ptr, n))
	}
	return append([]byte(nil), r.data[off:off+n]...)
}

// Set writes device memory at once (as a finished kernel would have).
func (d *Device) Set(ptr uintptr, b []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, off := d.find(ptr, len(b))
	if r == nil {
		panic(fmt.Sprintf("fakedev: Set(%#x, %d) outside device memory", ptr, len(b)))
	}
	copy(r.data[off:], b)
}

// ProducerStream returns a stream in ctx for a test's own "kernels".
func (d *Device) ProducerStream(ctx gpu.Context) gpu.Stream {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handles++
	s := &stream{id: gpu.Stream(d.handles), ctx: ctx}
	d.streams[s.id] = s
	return s.id
}

// Kernel queues, on stream s, work that writes b at ptr when it runs.
func (d *Device) Kernel(s gpu.Stream, ptr uintptr, b []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.streams[s]
	st.ops = append(st.ops, op{kind: kKernel, dev: ptr, fill: append([]byte(nil), b...)})
	d.add(Entry{Op: OpKernel, Stream: s, Dev: ptr, N: len(b)})
}

// Note logs a test's own event (a source read, a sink write) in sequence
// with the device calls. host is the buffer's address.
func (d *Device) Note(opName string, host uintptr, off int64, n int) {
	tid := syscall.Gettid()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.add(Entry{Op: opName, Tid: tid, Ctx: d.current(tid), Host: host, Off: off, N: n})
}

// Log returns the entries so far.
func (d *Device) Log() []Entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Entry(nil), d.log...)
}

// Count returns how many entries have op.
func (d *Device) Count(opName string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, e := range d.log {
		if e.Op == opName {
			n++
		}
	}
	return n
}

// Problems returns the rule violations seen.
func (d *Device) Problems() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.problems...)
}

// PinnedLive returns the pinned allocations not freed and their bytes.
func (d *Device) PinnedLive() (n, bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.pinned {
		n++
		bytes += l
	}
	return
}

// IsPinned reports whether [p, p+n) lies inside one pinned allocation.
func (d *Device) IsPinned(p uintptr, n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pinnedRange(p, n)
}

// ---- internals ----------------------------------------------------------

func (d *Device) add(e Entry) Entry {
	d.seq++
	e.Seq = d.seq
	d.log = append(d.log, e)
	return e
}

func (d *Device) problem(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

func (d *Device) current(tid int) gpu.Context {
	st := d.threads[tid]
	if len(st) == 0 {
		return 0
	}
	return st[len(st)-1]
}

// call logs a call made with a current context required (need) and runs
// the Fail hook. It returns the entry and the injected error.
func (d *Device) call(e Entry, need bool) (Entry, error) {
	e.Tid = syscall.Gettid()
	e.Ctx = d.current(e.Tid)
	if need && e.Ctx == 0 {
		d.problem("%s on OS thread %d without a current context", e.Op, e.Tid)
	}
	e = d.add(e)
	if d.Fail != nil {
		if err := d.Fail(e); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (d *Device) find(ptr uintptr, n int) (*region, int) {
	for _, r := range d.regions {
		if ptr >= r.base && ptr < r.base+uintptr(len(r.data)) {
			off := int(ptr - r.base)
			if n < 0 || off+n > len(r.data) {
				return nil, 0
			}
			return r, off
		}
	}
	return nil, 0
}

func (d *Device) pinnedRange(p uintptr, n int) bool {
	for base, l := range d.pinned {
		if p >= base && p+uintptr(n) <= base+uintptr(l) {
			return true
		}
	}
	return false
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func (d *Device) stream(s gpu.Stream, e Entry) *stream {
	st := d.streams[s]
	switch {
	case st == nil:
		d.problem("%s: unknown stream %d", e.Op, s)
	case st.destroyed:
		d.problem("%s: destroyed stream %d", e.Op, s)
	case st.ctx != 0 && st.ctx != e.Ctx:
		d.problem("%s: stream %d belongs to context %d, current is %d (thread %d)", e.Op, s, st.ctx, e.Ctx, e.Tid)
	}
	return st
}

func (d *Device) event(ev gpu.Event, e Entry) *event {
	x := d.events[ev]
	switch {
	case x == nil:
		d.problem("%s: unknown event %d", e.Op, ev)
	case x.destroyed:
		d.problem("%s: destroyed event %d", e.Op, ev)
	case x.ctx != e.Ctx:
		d.problem("%s: event %d belongs to context %d, current is %d (thread %d)", e.Op, ev, x.ctx, e.Ctx, e.Tid)
	}
	return x
}

// run executes s's queued ops up to (not including) index upto.
func (d *Device) run(s *stream, upto int) {
	for s.done < upto && s.done < len(s.ops) {
		o := s.ops[s.done]
		s.done++
		switch o.kind {
		case kH2D:
			if r, off := d.find(o.dev, len(o.host)); r != nil {
				copy(r.data[off:], o.host)
			}
			d.add(Entry{Op: OpExecHtoD, Stream: s.id, Dev: o.dev, Host: addr(o.host), N: len(o.host)})
		case kD2H:
			if r, off := d.find(o.dev, len(o.host)); r != nil {
				copy(o.host, r.data[off:off+len(o.host)])
			}
			d.add(Entry{Op: OpExecDtoH, Stream: s.id, Dev: o.dev, Host: addr(o.host), N: len(o.host)})
		case kKernel:
			if r, off := d.find(o.dev, len(o.fill)); r != nil {
				copy(r.data[off:], o.fill)
			}
			d.add(Entry{Op: OpExecKernel, Stream: s.id, Dev: o.dev, N: len(o.fill)})
		case kWait:
			d.run(o.ws, o.widx+1)
		case kRecord:
		}
	}
}

func (x *event) done() bool { return !x.recorded || x.s.done > x.idx }

// ---- gpu.Device ---------------------------------------------------------

func (d *Device) PointerInfo(ptr uintptr) (gpu.PointerInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.call(Entry{Op: OpPtrInfo, Dev: ptr}, false); err != nil {
		return gpu.PointerInfo{}, err
	}
	r, _ := d.find(ptr, 0)
	if r == nil {
		return gpu.PointerInfo{}, errors.New("fakedev: CUDA_ERROR_INVALID_VALUE (not device memory)")
	}
	return gpu.PointerInfo{Ctx: r.ctx, Base: r.base, Size: int64(len(r.data))}, nil
}

func (d *Device) PushContext(c gpu.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpPush}, false)
	if err != nil {
		return err
	}
	if !d.ctxs[c] {
		d.problem("push of unknown context %d", c)
	}
	d.threads[e.Tid] = append(d.threads[e.Tid], c)
	return nil
}

func (d *Device) PopContext() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpPop}, true)
	if err != nil {
		return err
	}
	st := d.threads[e.Tid]
	if len(st) == 0 {
		return errors.New("fakedev: pop with no current context")
	}
	d.threads[e.Tid] = st[:len(st)-1]
	return nil
}

func (d *Device) HostAlloc(size int) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.call(Entry{Op: OpHostAlloc, N: size}, true); err != nil {
		return nil, err
	}
	b := make([]byte, size)
	d.pinned[addr(b)] = size
	return b, nil
}

func (d *Device) HostFree(p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	base := addr(p)
	if _, err := d.call(Entry{Op: OpHostFree, Host: base, N: len(p)}, true); err != nil {
		return err
	}
	l, ok := d.pinned[base]
	if !ok {
		d.problem("host-free of %#x, which is not a pinned allocation", base)
		return errors.New("fakedev: not pinned")
	}
	for _, s := range d.streams {
		for _, o := range s.ops[s.done:] {
			if (o.kind == kH2D || o.kind == kD2H) && addr(o.host) >= base && addr(o.host) < base+uintptr(l) {
				d.problem("host-free of %#x while a copy on stream %d still uses it", base, s.id)
			}
		}
	}
	delete(d.pinned, base)
	return nil
}

func (d *Device) StreamCreate() (gpu.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpStreamCreate}, true)
	if err != nil {
		return 0, err
	}
	d.handles++
	s := &stream{id: gpu.Stream(d.handles), ctx: e.Ctx}
	d.streams[s.id] = s
	d.log[len(d.log)-1].Stream = s.id
	return s.id, nil
}

func (d *Device) StreamDestroy(s gpu.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpStreamDestroy, Stream: s}, true)
	if err != nil {
		return err
	}
	if st := d.stream(s, e); st != nil {
		d.run(st, len(st.ops)) // queued work still completes
		st.destroyed = true
	}
	return nil
}

func (d *Device) StreamSynchronize(s gpu.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpStreamSync, Stream: s}, true)
	if err != nil {
		return err
	}
	if st := d.stream(s, e); st != nil {
		d.run(st, len(st.ops))
	}
	return nil
}

func (d *Device) StreamWaitEvent(s gpu.Stream, ev gpu.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpStreamWait, Stream: s, Event: ev}, true)
	if err != nil {
		return err
	}
	st, x := d.stream(s, e), d.event(ev, e)
	if st == nil || x == nil {
		return errors.New("fakedev: bad handle")
	}
	if x.recorded {
		st.ops = append(st.ops, op{kind: kWait, ws: x.s, widx: x.idx})
	}
	return nil
}

func (d *Device) EventCreate() (gpu.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpEventCreate}, true)
	if err != nil {
		return 0, err
	}
	d.handles++
	x := &event{id: gpu.Event(d.handles), ctx: e.Ctx}
	d.events[x.id] = x
	d.log[len(d.log)-1].Event = x.id
	return x.id, nil
}

func (d *Device) EventDestroy(ev gpu.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpEventDestroy, Event: ev}, true)
	if err != nil {
		return err
	}
	if x := d.event(ev, e); x != nil {
		x.destroyed = true
	}
	return nil
}

func (d *Device) EventRecord(ev gpu.Event, s gpu.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpRecord, Event: ev, Stream: s}, true)
	if err != nil {
		return err
	}
	x, st := d.event(ev, e), d.stream(s, e)
	if x == nil || st == nil {
		return errors.New("fakedev: bad handle")
	}
	st.ops = append(st.ops, op{kind: kRecord, ev: x})
	x.s, x.idx, x.recorded = st, len(st.ops)-1, true
	return nil
}

func (d *Device) EventSynchronize(ev gpu.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpEventSync, Event: ev}, true)
	if err != nil {
		return err
	}
	x := d.event(ev, e)
	if x == nil {
		return errors.New("fakedev: bad handle")
	}
	if x.recorded {
		d.run(x.s, x.idx+1)
	}
	return nil
}

func (d *Device) EventQuery(ev gpu.Event) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: OpEventQuery, Event: ev}, true)
	if err != nil {
		return false, err
	}
	x := d.event(ev, e)
	if x == nil {
		return false, errors.New("fakedev: bad handle")
	}
	if d.QueryCompletes && x.recorded {
		d.run(x.s, x.idx+1)
	}
	return x.done(), nil
}

func (d *Device) copyCall(name string, kind opKind, devPtr uintptr, host []byte, s gpu.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.call(Entry{Op: name, Stream: s, Dev: devPtr, Host: addr(host), N: len(host)}, true)
	if err != nil {
		return err
	}
	if !d.pinnedRange(addr(host), len(host)) {
		d.problem("%s: host range %#x+%d is not pinned memory (pageable copy)", name, addr(host), len(host))
	}
	r, _ := d.find(devPtr, len(host))
	if r == nil {
		d.problem("%s: device range %#x+%d outside any allocation", name, devPtr, len(host))
		return errors.New("fakedev: CUDA_ERROR_INVALID_VALUE")
	}
	if r.ctx != e.Ctx {
		d.problem("%s: device memory of context %d copied with context %d current", name, r.ctx, e.Ctx)
	}
	st := d.stream(s, e)
	if st == nil {
		return errors.New("fakedev: bad stream")
	}
	st.ops = append(st.ops, op{kind: kind, dev: devPtr, host: host})
	return nil
}

func (d *Device) CopyHtoDAsync(dst uintptr, src []byte, s gpu.Stream) error {
	return d.copyCall(OpHtoD, kH2D, dst, src, s)
}

func (d *Device) CopyDtoHAsync(dst []byte, src uintptr, s gpu.Stream) error {
	return d.copyCall(OpDtoH, kD2H, src, dst, s)
}

// SortedByDev returns entries with op, ordered by device address.
func SortedByDev(log []Entry, opName string) []Entry {
	var out []Entry
	for _, e := range log {
		if e.Op == opName {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dev < out[j].Dev })
	return out
}
