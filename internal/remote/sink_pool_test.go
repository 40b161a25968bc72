package remote

import (
	"bytes"
	"context"
	"math/rand"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// A sink after another of the same part size takes the first one's
// acknowledged buffers from the pool instead of faulting in new ones, and
// the bytes it never wrote are still zeros although those buffers held the
// first object's bytes.
func TestS3SinkBuffersReusedAcrossSinks(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a GC may empty a sync.Pool
	// A sync.Pool keeps one item per P where other Ps cannot take it: with
	// two Ps, the second sink's two Gets on one P found only one of the first
	// sink's two buffers (1 in ~30 clean-clone runs). One P makes every Put
	// visible to every Get; what is tested is that the buffers go back.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := start(t, remotetest.Options{})
	e := newEngine(2)
	first := make([]byte, 3*minPart)
	rand.New(rand.NewSource(21)).Read(first)
	ka, err := f.openSink(t, "", "bkt/pool-a", "anon=1", "part_size="+itoa(minPart), "max_in_flight=1")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := e.Write(context.Background(), ka, first, 0)
	if err := ka.Close(); err != nil {
		t.Fatal(err)
	}
	a.WaitTimeout(-1)
	// The race detector's sync.Pool drops a quarter of its Puts at random,
	// and go test -race is how the suite runs: a second sink finds all of
	// the first one's buffers only in most attempts, so the test asks that
	// one of up to 20 does (0.44^20 to fail by chance), and that every
	// attempt's object is byte-exact with its hole zero.
	reused := false
	for attempt := 0; attempt < 20 && !reused; attempt++ {
		before := freshParts.Load()
		key := "bkt/pool-b" + itoa(attempt)
		kb, err := f.openSink(t, "", key, "anon=1", "part_size="+itoa(minPart), "max_in_flight=1")
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, minPart)
		rand.New(rand.NewSource(22 + int64(attempt))).Read(head)
		tail := []byte("the end")
		h, _ := e.Write(context.Background(), kb, head, 0)
		if _, err := h.WaitTimeout(-1); err != nil {
			t.Fatal(err)
		}
		tl, _ := e.Write(context.Background(), kb, tail, minPart+1000)
		if err := kb.Close(); err != nil {
			t.Fatal(err)
		}
		tl.WaitTimeout(-1)
		reused = freshParts.Load() == before
		want := append(append(append([]byte{}, head...), make([]byte, 1000)...), tail...)
		if got, _ := f.stored(t, key); !bytes.Equal(got, want) {
			t.Fatalf("attempt %d: stored %d bytes, not the %d written with a zero hole",
				attempt, len(got), len(want))
		}
	}
	if !reused {
		t.Error("no second sink of 20 took the first sinks' free part buffers")
	}
	if got, _ := f.stored(t, "bkt/pool-a"); !bytes.Equal(got, first) {
		t.Fatal("the first object changed")
	}
}
