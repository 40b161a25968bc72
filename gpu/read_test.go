package gpu_test

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/gpu/fakedev"
	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
)

func waitOK(t *testing.T, f *future.Future) int64 {
	t.Helper()
	n, err := f.WaitTimeout(20 * time.Second)
	if err != nil {
		t.Fatalf("request failed: %v", err)
	}
	return n
}

// Reads land byte-exact at every size and offset, including sizes that are
// not multiples of the chunk or the task, multi-task requests, and a read
// that crosses the end of the source. Each request synchronises its stream
// exactly once.
func TestReadByteExact(t *testing.T) {
	r := newRig(t, nil)
	data := pattern(1<<20+777, 1)
	src := r.source(data, false, nil)
	cases := []struct{ off, size int64 }{
		{0, 1}, {5, 100}, {0, testBounce}, {3, testBounce + 1}, {0, testTask},
		{1, testTask + testBounce/2}, {12345, 5*testTask + 999}, {0, int64(len(data))},
		{int64(len(data)) - 1000, 5000}, // crosses the end: 1000 bytes
	}
	for i, c := range cases {
		before := r.m.Stats()
		dptr := r.dev.Alloc(r.ctx, int(c.size))
		f, err := r.m.ReadSource(nil, src, dptr, c.size, c.off, gpu.Options{})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		n := waitOK(t, f)
		want := data[c.off:min(c.off+c.size, int64(len(data)))]
		if n != int64(len(want)) {
			t.Fatalf("case %d: read %d bytes, want %d", i, n, len(want))
		}
		mustEqual(t, fmt.Sprintf("case %d (off %d size %d)", i, c.off, c.size), r.dev.Bytes(dptr, len(want)), want)
		after := r.m.Stats()
		if d := after.StreamSyncs - before.StreamSyncs; d != 1 {
			t.Errorf("case %d: %d stream synchronisations, want exactly 1", i, d)
		}
	}
	st := r.m.Stats()
	if st.Requests != int64(len(cases)) || st.StreamSyncs != st.Requests || st.Errors != 0 {
		t.Errorf("stats %+v: want %d requests, as many syncs, no errors", st, len(cases))
	}
	if r.dev.Count(fakedev.OpStreamSync) != len(cases) {
		t.Errorf("device saw %d stream synchronisations for %d requests", r.dev.Count(fakedev.OpStreamSync), len(cases))
	}
	// Reading at the end gives 0 bytes; past it is an error.
	d := r.dev.Alloc(r.ctx, 10)
	f, err := r.m.ReadSource(nil, src, d, 10, int64(len(data)), gpu.Options{})
	if err != nil || waitOK(t, f) != 0 {
		t.Errorf("read at the end: %v, want 0 bytes", err)
	}
	if _, err := r.m.ReadSource(nil, src, d, 10, int64(len(data))+1, gpu.Options{}); !kindIs(err, errs.Invalid) {
		t.Errorf("read past the end: %v, want Invalid", err)
	}
}

// The call log of one task of four chunks proves the pipeline: a ring of
// two pinned buffers used alternately; the source read of chunk k+1 starts
// after the copy of chunk k was queued and before that copy ran; a buffer
// is refilled only after an event wait that ran its previous copy; one
// stream synchronisation, after the last copy was queued.
func TestReadPipelineLog(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.Threads = 1 })
	data := pattern(testTask, 2)
	src := r.source(data, false, nil)
	dptr := r.dev.Alloc(r.ctx, testTask)
	f, err := r.m.ReadSource(nil, src, dptr, testTask, 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	mustEqual(t, "device memory", r.dev.Bytes(dptr, testTask), data)

	log := r.dev.Log()
	var reads, queued, runs, syncs []fakedev.Entry
	recordAfter := map[int]fakedev.Entry{} // h2d index -> the record that follows it
	for i, e := range log {
		switch e.Op {
		case "read":
			reads = append(reads, e)
		case fakedev.OpHtoD:
			queued = append(queued, e)
			for _, x := range log[i+1:] {
				if x.Op == fakedev.OpRecord && x.Stream == e.Stream {
					recordAfter[len(queued)-1] = x
					break
				}
			}
		case fakedev.OpExecHtoD:
			runs = append(runs, e)
		case fakedev.OpStreamSync:
			syncs = append(syncs, e)
		}
	}
	const chunks = testTask / testBounce
	if len(reads) != chunks || len(queued) != chunks || len(runs) != chunks {
		t.Fatalf("%d reads, %d copies queued, %d run; want %d each\n%v", len(reads), len(queued), len(runs), chunks, log)
	}
	// Ring: two distinct buffers, alternating.
	if queued[0].Host == queued[1].Host {
		t.Errorf("chunks 0 and 1 share a bounce buffer")
	}
	for k := 2; k < chunks; k++ {
		if queued[k].Host != queued[k-2].Host {
			t.Errorf("chunk %d uses buffer %#x, want the ring's %#x", k, queued[k].Host, queued[k-2].Host)
		}
	}
	for k := 0; k < chunks; k++ {
		if reads[k].Host != queued[k].Host || queued[k].Dev != dptr+uintptr(k*testBounce) || queued[k].N != testBounce {
			t.Errorf("chunk %d: read into %#x, copied from %#x to %#x (%d bytes)", k, reads[k].Host, queued[k].Host, queued[k].Dev, queued[k].N)
		}
		if !r.dev.IsPinned(reads[k].Host, testBounce) {
			t.Errorf("chunk %d read into pageable memory", k)
		}
	}
	// Overlap: read k+1 after copy k was queued, before it ran.
	for k := 0; k+1 < chunks; k++ {
		if !(queued[k].Seq < reads[k+1].Seq && reads[k+1].Seq < runs[k].Seq) {
			t.Errorf("chunk %d: copy queued #%d, ran #%d; read of chunk %d at #%d: not overlapped",
				k, queued[k].Seq, runs[k].Seq, k+1, reads[k+1].Seq)
		}
	}
	// Reuse: before chunk k (k >= 2) is read into its buffer, an event wait
	// on the event recorded after copy k-2 ran that copy.
	for k := 2; k < chunks; k++ {
		rec := recordAfter[k-2]
		found := false
		for _, e := range log {
			if e.Op == fakedev.OpEventSync && e.Event == rec.Event && e.Seq > rec.Seq && e.Seq < reads[k].Seq {
				found = true
			}
		}
		if !found {
			t.Errorf("chunk %d refilled buffer %#x without waiting on event %d", k, queued[k].Host, rec.Event)
		}
		if runs[k-2].Seq > reads[k].Seq {
			t.Errorf("chunk %d read into its buffer before the previous copy from it ran", k)
		}
	}
	if len(syncs) != 1 || syncs[0].Seq < queued[chunks-1].Seq || syncs[0].Stream != queued[0].Stream {
		t.Errorf("stream syncs %v, want one on the request's stream after its last copy", syncs)
	}
	st := r.m.Stats()
	if st.EventWaits != chunks-2 || st.StreamSyncs != 1 || st.Chunks != chunks || st.PinnedBuffers != 2 {
		t.Errorf("stats %+v: want %d event waits, 1 sync, %d chunks, 2 pinned buffers", st, chunks-2, chunks)
	}
}

// A request split into many tasks on several workers still synchronises
// once, after every task queued its copies, on the one stream they share.
func TestReadMultiTaskSyncsOnce(t *testing.T) {
	for _, qc := range []bool{false, true} {
		t.Run(fmt.Sprintf("queryCompletes=%v", qc), func(t *testing.T) {
			r := newRig(t, nil)
			r.dev.QueryCompletes = qc
			size := 10*testTask + 123
			data := pattern(size, 3)
			src := r.source(data, false, nil)
			dptr := r.dev.Alloc(r.ctx, size)
			f, err := r.m.ReadSource(nil, src, dptr, int64(size), 0, gpu.Options{})
			if err != nil {
				t.Fatal(err)
			}
			waitOK(t, f)
			mustEqual(t, "device memory", r.dev.Bytes(dptr, size), data)
			log := r.dev.Log()
			var syncs []fakedev.Entry
			lastCopy, tids := 0, map[int]bool{}
			for _, e := range log {
				switch e.Op {
				case fakedev.OpStreamSync:
					syncs = append(syncs, e)
				case fakedev.OpHtoD:
					lastCopy = e.Seq
					tids[e.Tid] = true
				}
			}
			if len(syncs) != 1 || syncs[0].Seq < lastCopy {
				t.Fatalf("%d stream syncs (want 1, after the last copy #%d): %v", len(syncs), lastCopy, syncs)
			}
			st := r.m.Stats()
			if st.Tasks != 11 || st.StreamSyncs != 1 {
				t.Errorf("stats %+v: want 11 tasks, 1 sync", st)
			}
			t.Logf("copies queued from %d OS threads; %d pinned buffers; %d event waits", len(tids), st.PinnedBuffers, st.EventWaits)
		})
	}
}

// 1, 4 and 16 concurrent requests (reads, then writes of what was read):
// byte-exact, one synchronisation per request, buffers back in the pool.
func TestConcurrentRequests(t *testing.T) {
	for _, n := range []int{1, 4, 16} {
		for _, qc := range []bool{false, true} {
			t.Run(fmt.Sprintf("n=%d/queryCompletes=%v", n, qc), func(t *testing.T) {
				r := newRig(t, nil)
				r.dev.QueryCompletes = qc
				per := 3*testTask + 4321
				data := pattern(n*per, uint64(n))
				src := r.source(data, false, nil)
				snk, ms := r.sink(n*per, nil)
				ptrs := make([]uintptr, n)
				futs := make([]*future.Future, n)
				var wg sync.WaitGroup
				for i := range n {
					ptrs[i] = r.dev.Alloc(r.ctx, per)
					wg.Add(1)
					go func() { // submit from many goroutines at once
						defer wg.Done()
						f, err := r.m.ReadSource(nil, src, ptrs[i], int64(per), int64(i*per), gpu.Options{})
						if err != nil {
							t.Error(err)
							return
						}
						futs[i] = f
					}()
				}
				wg.Wait()
				for i, f := range futs {
					if f == nil {
						t.FailNow()
					}
					waitOK(t, f)
					mustEqual(t, fmt.Sprintf("request %d", i), r.dev.Bytes(ptrs[i], per), data[i*per:(i+1)*per])
				}
				for i := range n {
					f, err := r.m.WriteSink(nil, snk, ptrs[i], int64(per), int64(i*per), gpu.Options{})
					if err != nil {
						t.Fatal(err)
					}
					futs[i] = f
				}
				for _, f := range futs {
					waitOK(t, f)
				}
				mustEqual(t, "sink", ms.bytes(), data)
				st := r.m.Stats()
				if st.Requests != int64(2*n) || st.StreamSyncs != st.Requests {
					t.Errorf("stats %+v: want %d requests and one sync each", st, 2*n)
				}
				if got := r.dev.Count(fakedev.OpStreamSync); got != 2*n {
					t.Errorf("device saw %d stream syncs for %d requests", got, 2*n)
				}
				t.Logf("n=%d: %.2f event waits per request, %d pinned buffers", n, float64(st.EventWaits)/float64(st.Requests), st.PinnedBuffers)
			})
		}
	}
}

// Small requests of fast sources run on the caller's thread and are done
// when the call returns; slow sources never inline.
func TestInlineSmallRequests(t *testing.T) {
	r := newRig(t, func(c *config.Config) {
		c.SmallReadThreshold = 8 << 10
		c.SmallWriteThreshold = 8 << 10
	})
	data := pattern(64<<10, 4)
	fast := r.source(data, true, nil)
	slow := r.source(data, false, nil)
	dptr := r.dev.Alloc(r.ctx, 8<<10)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	f, err := r.m.ReadSource(nil, fast, dptr, 8<<10, 100, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Done() {
		t.Errorf("small read of a fast source not complete on return")
	}
	waitOK(t, f)
	mustEqual(t, "inline read", r.dev.Bytes(dptr, 8<<10), data[100:100+8<<10])
	for _, e := range r.dev.Log() {
		if (e.Op == "read" || e.Op == fakedev.OpHtoD || e.Op == fakedev.OpStreamSync) && e.Tid != tid {
			t.Errorf("inline request: %s ran on thread %d, caller is %d", e.Op, e.Tid, tid)
		}
	}
	if st := r.m.Stats(); st.InlineRequests != 1 || st.StreamSyncs != 1 {
		t.Errorf("stats %+v: want 1 inline request, 1 sync", st)
	}
	snk, ms := r.sink(8<<10, nil)
	f, err = r.m.WriteSink(nil, snk, dptr, 8<<10, 0, gpu.Options{})
	if err != nil || !f.Done() {
		t.Fatalf("small write to a fast sink: %v, done %v", err, f != nil && f.Done())
	}
	mustEqual(t, "inline write", ms.bytes(), data[100:100+8<<10])

	f, err = r.m.ReadSource(nil, slow, dptr, 4<<10, 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	if st := r.m.Stats(); st.InlineRequests != 2 || st.Tasks != 1 {
		t.Errorf("stats %+v: the slow source's small read must go to the pool", st)
	}
}

// Ordering for reads: work queued on the caller's stream (here a kernel
// that clears the destination) runs before colio's copies.
func TestReadOrdersAfterCallerStream(t *testing.T) {
	r := newRig(t, nil)
	size := 2*testTask + 5
	data := pattern(size, 5)
	src := r.source(data, false, nil)
	dptr := r.dev.Alloc(r.ctx, size)
	p := r.dev.ProducerStream(r.ctx)
	r.dev.Kernel(p, dptr, make([]byte, size)) // queued, not run
	f, err := r.m.ReadSource(nil, src, dptr, int64(size), 0, gpu.Options{After: p})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	mustEqual(t, "device memory", r.dev.Bytes(dptr, size), data)
	kernel, firstCopy := 0, 0
	for _, e := range r.dev.Log() {
		if e.Op == fakedev.OpExecKernel {
			kernel = e.Seq
		}
		if e.Op == fakedev.OpExecHtoD && firstCopy == 0 {
			firstCopy = e.Seq
		}
	}
	if kernel == 0 || kernel > firstCopy {
		t.Errorf("caller's kernel ran at #%d, colio's first copy at #%d", kernel, firstCopy)
	}
	if st := r.m.Stats(); st.ProducerWaits != 1 {
		t.Errorf("stats %+v: want 1 producer wait", st)
	}
}

func TestBadArguments(t *testing.T) {
	r := newRig(t, nil)
	data := pattern(1000, 6)
	src := r.source(data, false, nil)
	snk, _ := r.sink(1000, nil)
	dptr := r.dev.Alloc(r.ctx, 100)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"not device memory", func() error { _, err := r.m.ReadSource(nil, src, 0xdead0000, 10, 0, gpu.Options{}); return err }()},
		{"allocation too small", func() error { _, err := r.m.ReadSource(nil, src, dptr+50, 60, 0, gpu.Options{}); return err }()},
		{"NULL pointer", func() error { _, err := r.m.ReadSource(nil, src, 0, 10, 0, gpu.Options{}); return err }()},
		{"negative size", func() error { _, err := r.m.ReadSource(nil, src, dptr, -1, 0, gpu.Options{}); return err }()},
		{"negative offset", func() error { _, err := r.m.WriteSink(nil, snk, dptr, 10, -5, gpu.Options{}); return err }()},
		{"append too big", func() error { _, err := r.m.WriteSink(nil, snk, dptr, 101, -1, gpu.Options{}); return err }()},
		{"write too big", func() error { _, err := r.m.WriteSink(nil, snk, dptr, 101, 0, gpu.Options{}); return err }()},
		{"nil source", func() error { _, err := r.m.ReadSource(nil, nil, dptr, 10, 0, gpu.Options{}); return err }()},
	} {
		if !kindIs(c.err, errs.Invalid) {
			t.Errorf("%s: %v, want an Invalid error", c.name, c.err)
		} else {
			t.Logf("%s: %v", c.name, c.err)
		}
	}
	if st := r.m.Stats(); st.Requests != 0 || st.StreamSyncs != 0 {
		t.Errorf("rejected requests reached the device: %+v", st)
	}
	if n := snk.NextAppend(); n != 0 {
		t.Errorf("a refused append reserved %d bytes of the sink", n)
	}
}

// The fake's own checks catch a copy from pageable memory and a call
// without a current context, so a clean log means something.
func TestFakeCatchesPageableCopies(t *testing.T) {
	dev := fakedev.New()
	c := dev.NewContext()
	d := dev.Alloc(c, 64)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := dev.StreamCreate(); err != nil {
		t.Fatal(err)
	}
	if len(dev.Problems()) != 1 {
		t.Fatalf("stream creation without a context not caught: %v", dev.Problems())
	}
	_ = dev.PushContext(c)
	s, _ := dev.StreamCreate()
	_ = dev.CopyHtoDAsync(d, make([]byte, 64), s)
	if p := dev.Problems(); len(p) != 2 {
		t.Fatalf("pageable copy not caught: %v", p)
	}
	pinned, _ := dev.HostAlloc(64)
	_ = dev.CopyHtoDAsync(d, pinned, s)
	_ = dev.HostFree(pinned)
	if p := dev.Problems(); len(p) != 3 {
		t.Fatalf("freeing pinned memory under a queued copy not caught: %v", p)
	}
	_ = dev.PopContext()
}
