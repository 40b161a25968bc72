package remote

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// The S3 sink against remotetest's multipart endpoints. Every check of
// data reads the object the server stored (a file in its directory), not
// through colio, and every failure case also checks that no multipart
// upload was left open.

const minPart = 5 << 20

func (f *fixture) openSink(t *testing.T, endpoint, key string, kvs ...string) (*engine.Sink, error) {
	t.Helper()
	o, err := ParseOptions(append([]string{"endpoint_url=" + f.srv.URL + endpoint}, kvs...),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSink(context.Background(), "s3://"+key, o)
	if err != nil {
		return nil, err
	}
	return engine.NewSink(s), nil
}

func (f *fixture) stored(t *testing.T, key string) ([]byte, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.srv.Dir(), filepath.FromSlash(key)))
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func noUploads(t *testing.T, f *fixture) {
	t.Helper()
	if open := f.srv.OpenUploads(); len(open) != 0 {
		t.Fatalf("multipart uploads left open: %v", open)
	}
}

// writeShuffled writes data as random chunks: the first third appended in
// order, the rest at their offsets in a random order, all at once.
func writeShuffled(t *testing.T, e *engine.Engine, ks *engine.Sink, data []byte, seed int64) []*future.Future {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	var ranges []engine.WriteRange
	for off := 0; off < len(data); {
		n := min(1+rng.Intn(3<<20), len(data)-off)
		ranges = append(ranges, engine.WriteRange{Off: int64(off), Buf: data[off : off+n]})
		off += n
	}
	nAppend := len(ranges) / 3
	for i := range ranges[:nAppend] {
		ranges[i].Off = engine.Append
	}
	rest := ranges[nAppend:]
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	fs, err := e.WriteV(context.Background(), ks, ranges)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestS3SinkRandomChunksByteExact(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, 2*time.Minute)()
	f := start(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t", RequireAuth: true, Latency: time.Millisecond})
	e := newEngine(2)
	for i, size := range []int{0, 1, 1000, minPart - 1, minPart, minPart + 1, 4*minPart + 12345} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(i))).Read(data)
		key := "bkt/out/" + string(rune('a'+i))
		ks, err := f.openSink(t, "", key, "key=AKIDTEST", "secret=s3cr3t", "part_size="+itoa(minPart), "max_in_flight=3")
		if err != nil {
			t.Fatal(err)
		}
		fs := writeShuffled(t, e, ks, data, int64(i))
		if err := ks.Close(); err != nil {
			t.Fatalf("size %d: close: %v", size, err)
		}
		for j, fu := range fs {
			if _, err := fu.WaitTimeout(-1); err != nil {
				t.Fatalf("size %d: write %d: %v", size, j, err)
			}
		}
		got, ok := f.stored(t, key)
		if !ok || !bytes.Equal(got, data) {
			t.Fatalf("size %d: stored %d bytes (exists %v), not the %d written", size, len(got), ok, size)
		}
	}
	noUploads(t, f)
}

// A write's future completes when its part is acknowledged, before Close:
// the whole first part written completes its write; a write into the
// unfinished second part waits for Close.
func TestS3SinkFutureCompletesAtPartAck(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(2)
	ks, err := f.openSink(t, "", "bkt/acked", "anon=1", "part_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, minPart+10)
	rand.New(rand.NewSource(3)).Read(data)
	a, _ := e.Write(context.Background(), ks, data[:minPart], engine.Append)
	b, _ := e.Write(context.Background(), ks, data[minPart:], engine.Append)
	if _, err := a.WaitTimeout(-1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // not a timing assertion: b must simply still wait
	if b.Done() {
		t.Fatal("a write into an unfinished part completed before Close")
	}
	if _, ok := f.stored(t, "bkt/acked"); ok {
		t.Fatal("the object exists before Close")
	}
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitTimeout(-1); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.stored(t, "bkt/acked"); !bytes.Equal(got, data) {
		t.Fatal("stored bytes differ")
	}
}

func TestS3SinkPartFailingOnceIsRetried(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(2)
	ks, err := f.openSink(t, "/_fault/failpart=2", "bkt/retried", "anon=1", "part_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3*minPart)
	rand.New(rand.NewSource(4)).Read(data)
	fs := writeShuffled(t, e, ks, data, 4)
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	for _, fu := range fs {
		if _, err := fu.WaitTimeout(-1); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := f.stored(t, "bkt/retried"); !bytes.Equal(got, data) {
		t.Fatal("stored bytes differ")
	}
	if st := f.srv.Stats(); st.Faults != 1 {
		t.Fatalf("%d injected faults, want the one failed part", st.Faults)
	}
	noUploads(t, f)
}

// A part the server refuses fails the upload: Close returns the error, the
// writes not yet durable fail, the old object is untouched and no upload is
// left open.
func TestS3SinkRejectedPartAborts(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(2)
	ks, err := f.openSink(t, "/_fault/rejectpart=2", "bkt/obj", "anon=1", "part_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3*minPart+7)
	fs := writeShuffled(t, e, ks, data, 5)
	err = ks.Close()
	wantErr(t, err, errs.IO, syscall.EIO, "UploadPart 2", "InvalidRequest")
	failed := 0
	for _, fu := range fs {
		if _, err := fu.WaitTimeout(-1); err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no write failed")
	}
	if got, _ := f.stored(t, "bkt/obj"); !bytes.Equal(got, f.data) {
		t.Fatal("the old object changed")
	}
	noUploads(t, f)
}

func TestS3SinkAbortLeavesNothing(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{Latency: 5 * time.Millisecond})
	e := newEngine(2)
	for _, key := range []string{"bkt/obj", "bkt/new"} {
		ks, err := f.openSink(t, "", key, "anon=1", "part_size="+itoa(minPart))
		if err != nil {
			t.Fatal(err)
		}
		fs := writeShuffled(t, e, ks, make([]byte, 3*minPart+1), 6)
		if err := ks.Abort(); err != nil {
			t.Fatal(err)
		}
		for _, fu := range fs {
			fu.WaitTimeout(-1)
		}
		got, ok := f.stored(t, key)
		if key == "bkt/obj" && !bytes.Equal(got, f.data) || key == "bkt/new" && ok {
			t.Fatalf("%s: the object changed after an abort", key)
		}
	}
	noUploads(t, f)
}

// A cancelled write leaves a hole: the upload must not be completed.
func TestS3SinkCancelledWriteAborts(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(1)
	e.SetStartAtWait(true) // parts start only when waited on, so one can be cancelled first
	ks, err := f.openSink(t, "", "bkt/cancelled", "anon=1", "part_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := e.Write(context.Background(), ks, make([]byte, 10), 0)
	b, _ := e.Write(context.Background(), ks, make([]byte, 10), 10)
	b.Cancel()
	b.WaitTimeout(-1) // starts b, which finds itself cancelled: the upload is aborted
	if _, err := a.WaitTimeout(-1); err == nil {
		t.Fatal("a write of an aborted upload succeeded")
	}
	if err := ks.Close(); err == nil {
		t.Fatal("close published an object with a cancelled write")
	}
	if _, ok := f.stored(t, "bkt/cancelled"); ok {
		t.Fatal("the object exists")
	}
	noUploads(t, f)
}

func TestS3SinkWrongCredentials(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t", RequireAuth: true})
	e := newEngine(2)
	for _, size := range []int{100, 2 * minPart} {
		ks, err := f.openSink(t, "", "bkt/denied", "key=AKIDTEST", "secret=wrong", "part_size="+itoa(minPart))
		if err != nil {
			t.Fatal(err)
		}
		fs := writeShuffled(t, e, ks, make([]byte, size), 7)
		wantErr(t, ks.Close(), errs.IO, syscall.EACCES, "SignatureDoesNotMatch")
		for _, fu := range fs {
			fu.WaitTimeout(-1)
		}
	}
	if _, ok := f.stored(t, "bkt/denied"); ok {
		t.Fatal("the object exists")
	}
	noUploads(t, f)
}

// Complete parts held are bounded by buffer_size: with room for one part,
// the server never sees more than two part uploads at once however far
// ahead the writer is.
func TestS3SinkBackpressure(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, 2*time.Minute)()
	f := start(t, remotetest.Options{Latency: 20 * time.Millisecond})
	e := newEngine(4)
	ks, err := f.openSink(t, "", "bkt/bounded", "anon=1", "part_size="+itoa(minPart), "buffer_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 8*minPart)
	rand.New(rand.NewSource(8)).Read(data)
	fs := writeShuffled(t, e, ks, data, 8)
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	for _, fu := range fs {
		if _, err := fu.WaitTimeout(-1); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := f.stored(t, "bkt/bounded"); !bytes.Equal(got, data) {
		t.Fatal("stored bytes differ")
	}
	// In flight at once: the one part upload the bound allows.
	if st := f.srv.Stats(); st.PeakInFlight > 1 {
		t.Fatalf("peak %d requests in flight, the bound allows 1", st.PeakInFlight)
	}
}

func TestS3SinkOverwriteOfSentPartFails(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(2)
	ks, err := f.openSink(t, "", "bkt/over", "anon=1", "part_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := e.Write(context.Background(), ks, make([]byte, minPart), 0)
	a.WaitTimeout(-1)
	b, _ := e.Write(context.Background(), ks, []byte("x"), 5)
	_, err = b.WaitTimeout(-1)
	wantErr(t, err, errs.NotSupported, 0, "already uploaded")
	if ks.Close() == nil {
		t.Fatal("close succeeded after a refused write")
	}
	if _, ok := f.stored(t, "bkt/over"); ok {
		t.Fatal("the object exists")
	}
	noUploads(t, f)
}

func itoa(n int) string { return strconv.Itoa(n) }

// Bytes never written read as zeros even in a part whose buffer was
// reused from an acknowledged part (it held that part's bytes): without
// zeroGaps at Close, the hole before the last write carried old data.
func TestS3SinkHolesAreZeroInReusedBuffers(t *testing.T) {
	isolateAWS(t)
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	e := newEngine(2)
	ks, err := f.openSink(t, "", "bkt/holes", "anon=1", "part_size="+itoa(minPart))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2*minPart)
	rand.New(rand.NewSource(9)).Read(data)
	a, _ := e.Write(context.Background(), ks, data, 0)
	if _, err := a.WaitTimeout(-1); err != nil { // both parts acknowledged: their buffers are free
		t.Fatal(err)
	}
	tail := []byte("0123456789")
	b, _ := e.Write(context.Background(), ks, tail, 2*minPart+100)
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	b.WaitTimeout(-1)
	want := append(append(append([]byte{}, data...), make([]byte, 100)...), tail...)
	if got, _ := f.stored(t, "bkt/holes"); !bytes.Equal(got, want) {
		t.Fatalf("stored %d bytes, not the %d written with a zero hole", len(got), len(want))
	}
}
