package engine

import (
	"bytes"
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/pool"
	"github.com/colio-dev/colio/internal/source"
)

// levelSource is a fast in-memory source that records the pool level each
// read ran at (0: the caller, 1: a pool worker), from the ctx the engine
// hands it, not from the engine's own counters. hold, if set, runs before
// each read.
type levelSource struct {
	data   []byte
	hold   func(level int)
	mu     sync.Mutex
	levels map[int64]int // offset -> level
}

func (s *levelSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	l := pool.LevelOf(ctx)
	if s.hold != nil {
		s.hold(l)
	}
	s.mu.Lock()
	s.levels[off] = l
	s.mu.Unlock()
	return copy(p, s.data[off:]), nil
}

func (s *levelSource) Size() (int64, error)  { return int64(len(s.data)), nil }
func (s *levelSource) Traits() source.Traits { return source.Traits{Fast: true, Concurrent: true} }
func (s *levelSource) Close() error          { return nil }

func shareRanges(n int, size int64, rng *rand.Rand) []ReadRange {
	rr := make([]ReadRange, n)
	for i := range rr {
		// distinct offsets, so that levels[off] names one range
		rr[i] = ReadRange{Off: int64(i) * 5000 % (size - 4096), Buf: make([]byte, 1+rng.Intn(4096))}
	}
	return rr
}

func checkShared(t *testing.T, b *Batch, rr []ReadRange, data []byte, reported []int64) {
	t.Helper()
	for i, r := range rr {
		want := data[r.Off : r.Off+int64(len(r.Buf))]
		done, n, err := b.Wait(i, 0) // done when ReadVBatch returned, without waiting
		if !done || err != nil || n != int64(len(want)) || reported[i] != n || !bytes.Equal(r.Buf, want) {
			t.Fatalf("range %d (%d+%d): done %v, %d bytes, %v, reported %d", i, r.Off, len(r.Buf), done, n, err, reported[i])
		}
	}
}

// A batch of small ranges is split between the caller and pool workers:
// while the caller is held in its first read, a helper reads chunks, and
// every range is byte-exact and done when ReadVBatch returns.
func TestReadVBatchSharesChunksWithWorkers(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(16)).Read(data)
	helped := make(chan struct{})
	var once sync.Once
	var held atomic.Bool
	src := &levelSource{data: data, levels: map[int64]int{}, hold: func(l int) {
		if l > 0 {
			once.Do(func() { close(helped) })
		} else if held.CompareAndSwap(false, true) {
			<-helped // the caller's first read waits until a helper has read
		}
	}}
	e := newEngine(t, func(c *config.Config) { c.Threads = 4 })
	es := NewSource(src)
	rr := shareRanges(1000, int64(len(data)), rand.New(rand.NewSource(1)))
	reported := make([]int64, len(rr))
	var calls atomic.Int64
	b, err := e.ReadVBatch(context.Background(), es, rr, false, func(i int, n int64, err error) {
		reported[i] = n // each range once; ReadVBatch's return orders it before the checks
		calls.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls := calls.Load(); calls != int64(len(rr)) {
		t.Fatalf("%d reports before the return, want %d", calls, len(rr))
	}
	checkShared(t, b, rr, data, reported)
	by := map[int]int{}
	for _, l := range src.levels {
		by[l]++
	}
	if by[0] == 0 || by[1] == 0 || by[0]+by[1] != len(rr) {
		t.Fatalf("reads by level: %v (want some on the caller and some on workers)", by)
	}
	if err := es.Close(); err != nil {
		t.Fatal(err)
	}
}

// A helper that has not started takes nothing: with the pool's only slot
// busy, the caller reads every chunk itself and returns, and the helper
// that starts afterwards finds no work (Close still waits for it).
func TestReadVBatchCallerReadsWhatHelpersDoNotTake(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(17)).Read(data)
	src := &levelSource{data: data, levels: map[int64]int{}}
	e := newEngine(t, func(c *config.Config) { c.Threads = 2 }) // one helper
	block, started := make(chan struct{}), make(chan struct{}, 2)
	for k := 0; k < 2; k++ { // fill level 0's two slots
		if err := e.pool.Submit(context.Background(), func(context.Context) { started <- struct{}{}; <-block }); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	<-started
	es := NewSource(src)
	rr := shareRanges(500, int64(len(data)), rand.New(rand.NewSource(2)))
	reported := make([]int64, len(rr))
	b, err := e.ReadVBatch(context.Background(), es, rr, false, func(i int, n int64, err error) { reported[i] = n })
	if err != nil {
		t.Fatal(err)
	}
	checkShared(t, b, rr, data, reported)
	for off, l := range src.levels {
		if l != 0 {
			t.Fatalf("range at %d read at level %d with no free worker", off, l)
		}
	}
	closed := make(chan error)
	go func() { closed <- es.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the queued helper still held the source", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(block)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if len(src.levels) != len(rr) {
		t.Fatalf("%d ranges read, want %d", len(src.levels), len(rr))
	}
}

// Chunks: at most chunkRanges ranges or chunkBytes bytes, every range in
// exactly one, in order; one helper per chunk beyond the caller's, at most
// threads-1.
func TestShareChunks(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	for _, n := range []int{1, 15, 16, 17, 100, 1000} {
		for _, maxSize := range []int{1, 4096, 128 << 10} {
			rr := make([]ReadRange, n)
			idx := make([]int, n)
			for i := range rr {
				rr[i] = ReadRange{Off: 0, Buf: make([]byte, 1+rng.Intn(maxSize))}
				idx[i] = i
			}
			sh := newShare(rr, idx, 1<<40, 8)
			next := 0
			for c := 0; c+1 < len(sh.cut); c++ {
				part := sh.idx[sh.cut[c]:sh.cut[c+1]]
				var bytes int
				for k, i := range part {
					if i != next {
						t.Fatalf("n %d: chunk %d holds range %d, want %d", n, c, i, next)
					}
					next++
					if k < len(part)-1 {
						bytes += len(rr[i].Buf)
					}
				}
				if len(part) == 0 || len(part) > chunkRanges || bytes >= chunkBytes {
					t.Fatalf("n %d, max %d: chunk %d has %d ranges, %d bytes before its last", n, maxSize, c, len(part), bytes)
				}
			}
			if next != n || sh.helpers != min(8, len(sh.cut)-1)-1 {
				t.Fatalf("n %d: %d ranges in chunks, %d helpers for %d chunks", n, next, sh.helpers, len(sh.cut)-1)
			}
		}
	}
}
