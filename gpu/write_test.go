package gpu_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/gpu/fakedev"
	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
)

// A write of device memory produced by work still queued on the caller's
// stream (the fake runs it only when something waits for it) lands
// byte-exact at its offset when ordered after that stream, and the call
// log shows the order: an event recorded on the producer's stream, colio's
// stream made to wait for it, before colio's first device-to-host copy.
// Without the order the same write copies stale memory: the test can tell.
func TestWriteOrdersAfterProducerStream(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			r := newRig(t, nil)
			size := 3*testTask + 17
			data := pattern(size, 7)
			dptr := r.dev.Alloc(r.ctx, size)
			p := r.dev.ProducerStream(r.ctx)
			r.dev.Kernel(p, dptr, data) // the producer's work, not run yet
			snk, ms := r.sink(size+1000, nil)
			opt := gpu.Options{}
			if ordered {
				opt.After = p
			}
			f, err := r.m.WriteSink(nil, snk, dptr, int64(size), 1000, opt)
			if err != nil {
				t.Fatal(err)
			}
			n := waitOK(t, f)
			got := ms.bytes()[1000:]
			if !ordered {
				if string(got) == string(data) {
					t.Fatal("unordered write saw the producer's bytes: the fake does not model the race")
				}
				return
			}
			if n != int64(size) || f.Offset() != 1000 {
				t.Errorf("wrote %d bytes at %d, want %d at 1000", n, f.Offset(), size)
			}
			mustEqual(t, "sink", got, data)
			log := r.dev.Log()
			rec, wait, first := 0, 0, 0
			for _, e := range log {
				switch {
				case e.Op == fakedev.OpRecord && e.Stream == p && rec == 0:
					rec = e.Seq
				case e.Op == fakedev.OpStreamWait && wait == 0:
					wait = e.Seq
				case e.Op == fakedev.OpDtoH && first == 0:
					first = e.Seq
				}
			}
			if !(rec > 0 && rec < wait && wait < first) {
				t.Errorf("record on producer #%d, stream wait #%d, first d2h #%d: not in order", rec, wait, first)
			}
			if st := r.m.Stats(); st.ProducerWaits != 1 || st.StreamSyncs != 1 {
				t.Errorf("stats %+v: want 1 producer wait, 1 sync", st)
			}
		})
	}
}

// The write pipeline's log: the copy of chunk k+1 is queued before chunk k
// is written to the sink; each chunk's write follows a wait on the event
// recorded after its copy, and the copy ran before the write; sink offsets
// and sizes are exact; one stream sync at the end.
func TestWritePipelineLog(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.Threads = 1 })
	size := testTask
	data := pattern(size, 8)
	dptr := r.dev.Alloc(r.ctx, size)
	r.dev.Set(dptr, data)
	snk, ms := r.sink(size+5, nil)
	f, err := r.m.WriteSink(nil, snk, dptr, int64(size), 5, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	mustEqual(t, "sink", ms.bytes()[5:], data)
	log := r.dev.Log()
	var queued, runs, writes, waits []fakedev.Entry
	for _, e := range log {
		switch e.Op {
		case fakedev.OpDtoH:
			queued = append(queued, e)
		case fakedev.OpExecDtoH:
			runs = append(runs, e)
		case "write":
			writes = append(writes, e)
		case fakedev.OpEventSync:
			waits = append(waits, e)
		}
	}
	const chunks = testTask / testBounce
	if len(queued) != chunks || len(writes) != chunks || len(runs) != chunks || len(waits) != chunks {
		t.Fatalf("%d copies queued, %d run, %d writes, %d event waits; want %d each", len(queued), len(runs), len(writes), len(waits), chunks)
	}
	for k := range chunks {
		w := writes[k]
		if w.Off != int64(5+k*testBounce) || w.N != testBounce || w.Host != queued[k].Host || queued[k].Dev != dptr+uintptr(k*testBounce) {
			t.Errorf("chunk %d: copy %#x -> %#x, write of %d bytes from %#x at %d", k, queued[k].Dev, queued[k].Host, w.N, w.Host, w.Off)
		}
		if !(runs[k].Seq < w.Seq && waits[k].Seq < w.Seq) {
			t.Errorf("chunk %d written (#%d) before its copy ran (#%d) or was waited for (#%d)", k, w.Seq, runs[k].Seq, waits[k].Seq)
		}
		if k+1 < chunks && queued[k+1].Seq > w.Seq {
			t.Errorf("copy of chunk %d queued after chunk %d was written: no overlap", k+1, k)
		}
	}
	if got := r.dev.Count(fakedev.OpStreamSync); got != 1 {
		t.Errorf("%d stream syncs, want 1", got)
	}
}

// Errors from the source, the sink or the device fail only their request;
// the others complete byte-exact, every request still synchronises once,
// and every bounce buffer returns to the pool (checked by the rig).
func TestErrorsFailOnlyTheirRequest(t *testing.T) {
	r := newRig(t, nil)
	per := 2*testTask + 100
	data := pattern(4*per, 9)
	srcErr := errors.New("disk on fire")
	src := r.source(data, false, func(off int64, n int) error {
		if off <= int64(per)+testTask && off+int64(n) > int64(per)+testTask { // inside request 1's second task
			return srcErr
		}
		return nil
	})
	ptrs := make([]uintptr, 4)
	for i := range ptrs {
		ptrs[i] = r.dev.Alloc(r.ctx, per)
	}
	bad := ptrs[2] + testBounce // request 2: one copy fails on the device
	r.dev.Fail = func(e fakedev.Entry) error {
		if e.Op == fakedev.OpHtoD && e.Dev == bad {
			return fakedev.ErrInjected
		}
		return nil
	}
	futs := make([]*future.Future, 4)
	for i := range futs {
		f, err := r.m.ReadSource(nil, src, ptrs[i], int64(per), int64(i*per), gpu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		futs[i] = f
	}
	for i, f := range futs {
		_, err := f.WaitTimeout(20 * time.Second)
		switch i {
		case 1:
			if !errors.Is(err, srcErr) {
				t.Errorf("request 1: %v, want the source's error", err)
			}
		case 2:
			if !errors.Is(err, fakedev.ErrInjected) || !kindIs(err, errs.IO) {
				t.Errorf("request 2: %v, want the device's error as an I/O error", err)
			}
		default:
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				continue
			}
			mustEqual(t, fmt.Sprintf("request %d", i), r.dev.Bytes(ptrs[i], per), data[i*per:(i+1)*per])
		}
	}
	// A sink error fails its write only; the device fails a stream sync of
	// another write.
	sinkErr := errors.New("sink full")
	snk, ms := r.sink(2*per, func(off int64, n int) error {
		if off < int64(per) && off+int64(n) > testTask {
			return sinkErr
		}
		return nil
	})
	f0, err := r.m.WriteSink(nil, snk, ptrs[0], int64(per), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f0.WaitTimeout(20 * time.Second); !errors.Is(err, sinkErr) {
		t.Errorf("write 0: %v, want the sink's error", err)
	}
	syncs := 0
	r.dev.Fail = func(e fakedev.Entry) error {
		if e.Op == fakedev.OpStreamSync {
			syncs++
			if syncs == 1 {
				return fakedev.ErrInjected
			}
		}
		return nil
	}
	snk2, ms2 := r.sink(2*per, nil)
	f1, _ := r.m.WriteSink(nil, snk2, ptrs[3], int64(per), 0, gpu.Options{})
	if _, err := f1.WaitTimeout(20 * time.Second); !errors.Is(err, fakedev.ErrInjected) {
		t.Errorf("write with a failing sync: %v, want the device's error", err)
	}
	f2, _ := r.m.WriteSink(nil, snk2, ptrs[3], int64(per), int64(per), gpu.Options{})
	waitOK(t, f2)
	mustEqual(t, "write after a failed one", ms2.bytes()[per:], data[3*per:4*per])
	_ = ms
	st := r.m.Stats()
	if st.Errors != 4 || st.StreamSyncs != st.Requests {
		t.Errorf("stats %+v: want 4 failed requests and one sync per request", st)
	}
}

// A cancelled request stops its unstarted tasks, still synchronises once,
// and returns its buffers.
func TestCancel(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.Threads = 1 })
	release := make(chan struct{})
	size := 8 * testTask
	data := pattern(size, 10)
	first := true
	src := r.source(data, false, func(off int64, n int) error {
		if first {
			first = false
			<-release
		}
		return nil
	})
	dptr := r.dev.Alloc(r.ctx, size)
	f, err := r.m.ReadSource(nil, src, dptr, int64(size), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Cancel() {
		t.Fatal("nothing to cancel")
	}
	close(release)
	if _, err := f.WaitTimeout(20 * time.Second); !kindIs(err, errs.Cancelled) {
		t.Errorf("cancelled request: %v", err)
	}
	if st := r.m.Stats(); st.StreamSyncs != 1 {
		t.Errorf("stats %+v: want 1 sync", st)
	}
}
