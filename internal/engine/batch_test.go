package engine

import (
	"bytes"
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
)

// ReadVBatch (issue 15): every range reported once, with ReadV's bytes,
// counts and errors, for grouped small ranges and the rest alike.
func TestReadVBatchRandom(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := make([]byte, 1<<20)
	rand.New(rand.NewSource(15)).Read(data)
	src := openFile(t, writeFile(t, data))
	for _, threads := range []int{1, 3, 8} {
		e := newEngine(t, func(c *config.Config) { c.Threads = threads; c.SmallReadThreshold = 8192 })
		rng := rand.New(rand.NewSource(int64(threads)))
		for _, n := range []int{1, 5, 33, 500, 3000} {
			rr := make([]ReadRange, n)
			for i := range rr {
				off := rng.Int63n(int64(len(data)) + 1)
				size := rng.Intn(20000)
				if i%7 == 0 {
					off = int64(len(data)) - rng.Int63n(50)
				}
				rr[i] = ReadRange{Off: off, Buf: make([]byte, size)}
			}
			var mu sync.Mutex
			got := make([]int, n)
			ns := make([]int64, n)
			var wg sync.WaitGroup
			wg.Add(n)
			b, err := e.ReadVBatch(context.Background(), src, rr, n%2 == 0, func(i int, nb int64, err error) {
				if err != nil {
					t.Errorf("range %d: %v", i, err)
				}
				mu.Lock()
				got[i]++
				ns[i] = nb
				mu.Unlock()
				wg.Done()
			})
			if err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for i, r := range rr {
				want := data[min(r.Off, int64(len(data))):min(r.Off+int64(len(r.Buf)), int64(len(data)))]
				done, n2, err := b.Wait(i, 0)
				if got[i] != 1 || ns[i] != int64(len(want)) || !done || n2 != ns[i] || err != nil ||
					!bytes.Equal(r.Buf[:ns[i]], want) {
					t.Fatalf("threads %d, range %d (%d+%d): reported %d times, %d bytes, done %v %d %v",
						threads, i, r.Off, len(r.Buf), got[i], ns[i], done, n2, err)
				}
			}
		}
	}
}

func TestReadVBatchChecksFirst(t *testing.T) {
	e := newEngine(t, nil)
	src := openFile(t, writeFile(t, make([]byte, 100)))
	called := false
	_, err := e.ReadVBatch(context.Background(), src, []ReadRange{{Off: 0, Buf: make([]byte, 5)}, {Off: 101, Buf: make([]byte, 1)}},
		false, func(int, int64, error) { called = true })
	if errs.KindOf(err) != errs.Invalid || called {
		t.Fatalf("got %v, called %v", err, called)
	}
	src.Close()
	_, err = e.ReadVBatch(context.Background(), src, []ReadRange{{Off: 0, Buf: make([]byte, 5)}}, false, func(int, int64, error) { called = true })
	if errs.KindOf(err) != errs.Closed || called {
		t.Fatalf("closed: got %v, called %v", err, called)
	}
}

// The grouped ranges update the engine's counters once per group (issue
// 15.1), yet a caller that sees the batch's last range reported must see
// them settled: every byte counted and nothing left in flight, as when
// each range counted itself.
func TestReadVBatchCountersSettledAtLastReport(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := make([]byte, 1<<20)
	rand.New(rand.NewSource(151)).Read(data)
	src := openFile(t, writeFile(t, data))
	for _, threads := range []int{1, 2, 8} {
		e := newEngine(t, func(c *config.Config) { c.Threads = threads; c.SmallReadThreshold = 8192 })
		for round := 0; round < 20; round++ {
			n := 64 + round*37
			rr := make([]ReadRange, n)
			var want int64
			for i := range rr {
				off := int64(i*4096) % int64(len(data))
				size := 1 + (i*131)%4096
				if i%11 == 0 {
					size = 0
				}
				rr[i] = ReadRange{Off: off, Buf: make([]byte, size)}
				want += int64(min(size, len(data)-int(off)))
			}
			before := e.Stats().BytesRead
			var mu sync.Mutex
			left := n
			var seen Stats
			lastDone := make(chan struct{})
			_, err := e.ReadVBatch(context.Background(), src, rr, false, func(i int, nb int64, err error) {
				mu.Lock()
				defer mu.Unlock()
				if left--; left == 0 {
					seen = e.Stats()
					close(lastDone)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			<-lastDone
			if seen.BytesRead-before != want || seen.InFlight != 0 {
				t.Fatalf("threads %d, round %d: at the last report %d bytes counted (want %d), %d in flight",
					threads, round, seen.BytesRead-before, want, seen.InFlight)
			}
			for i, r := range rr {
				if !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))]) {
					t.Fatalf("threads %d, round %d, range %d: wrong bytes", threads, round, i)
				}
			}
		}
	}
}
