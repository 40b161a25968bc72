package engine

import (
	"bytes"
	"context"
	"testing"

	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/source"
	"github.com/colio-dev/colio/internal/workq"
)

// BenchmarkQueuedRoundTrip is the Go side of one part of a callback
// (queued) source, as colio_read_async_tagged and colio_work_step run it:
// submit a 64 KiB read, a worker takes the part, hands the result back,
// the future completes and posts its note, and the worker collects the
// note. One goroutine plays caller and worker, so allocs/op and ns/op are
// the engine's and the queue's cost per part, without scheduling noise.
// The worker copies the bytes only in the last round, which is checked:
// the copy is the worker's cost (Python's, in colio), and 64 KiB of it
// each round hid the Go side's. The hook closure stands for the handle
// object capi makes per read.
//
//	go test -run '^$' -bench QueuedRoundTrip -benchmem ./internal/engine/
func BenchmarkQueuedRoundTrip(b *testing.B) {
	const size = 64 << 10
	e := newEngine(b, nil)
	ref := fakes.Pattern(size*4, 3)
	q := workq.New(func() int { return 8 })
	src := NewSource(source.NewQueued(q, 7, int64(len(ref)), false))
	defer src.Close()
	buf := make([]byte, size)
	var notes [4]workq.Note
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(i%4) * size
		f, err := e.Read(ctx, src, buf, off)
		if err != nil {
			b.Fatal(err)
		}
		tag := uint64(i)
		f.OnCompleteInline(func(f *future.Future) {
			q.Post(workq.Note{Tag: tag, N: f.N(), Err: f.Err()})
		})
		w, k, err := q.Step(0, notes[:])
		if err != nil || w.Token == 0 || k != 0 {
			b.Fatalf("step: %+v %d %v", w, k, err)
		}
		n := len(w.Buf)
		if i == b.N-1 {
			n = copy(w.Buf, ref[w.Off:])
		}
		w, k, ok, err := q.StepAfter(w.Token, n, nil, 0, notes[:])
		if !ok || err != nil || w.Token != 0 || k != 1 || notes[0].Tag != tag || notes[0].N != size || notes[0].Err != nil {
			b.Fatalf("hand back: %+v %d %v %v %+v", w, k, ok, err, notes[0])
		}
		if !f.Done() {
			b.Fatal("future not done after its note")
		}
	}
	b.StopTimer()
	if !bytes.Equal(buf, ref[int64((b.N-1)%4)*size:][:size]) {
		b.Fatal("bytes differ from the reference")
	}
}
