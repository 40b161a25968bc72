package remote

import (
	"bytes"
	"context"
	"math/rand"
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
	before := freshParts.Load()
	kb, err := f.openSink(t, "", "bkt/pool-b", "anon=1", "part_size="+itoa(minPart), "max_in_flight=1")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, minPart)
	rand.New(rand.NewSource(22)).Read(head)
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
	if n := freshParts.Load() - before; n != 0 {
		t.Errorf("the second sink made %d new part buffers; the first one's were free", n)
	}
	want := append(append(append([]byte{}, head...), make([]byte, 1000)...), tail...)
	if got, _ := f.stored(t, "bkt/pool-b"); !bytes.Equal(got, want) {
		t.Fatalf("stored %d bytes, not the %d written with a zero hole", len(got), len(want))
	}
	if got, _ := f.stored(t, "bkt/pool-a"); !bytes.Equal(got, first) {
		t.Fatal("the first object changed")
	}
}
