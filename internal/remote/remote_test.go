package remote

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// The tests run against remotetest servers on 127.0.0.1 that they start
// and stop; faults are chosen by the /_fault/ path prefix.

const objSize = 1 << 20

type fixture struct {
	srv  *remotetest.Server
	data []byte // the object's bytes, written by the test (the reference)
	dir  string // what the server serves
}

func start(t *testing.T, opt remotetest.Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, objSize)
	rand.New(rand.NewSource(1)).Read(data)
	if err := os.MkdirAll(filepath.Join(dir, "bkt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bkt", "obj"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	opt.Dir = dir
	s, err := remotetest.Start(opt, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{srv: s, data: data, dir: dir}
}

// open opens path on the fixture's server with kvs.
func (f *fixture) open(t *testing.T, path string, kvs ...string) (*Source, error) {
	t.Helper()
	o, err := ParseOptions(kvs, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return Open(context.Background(), f.srv.URL+path, o)
}

func watchdog(t *testing.T, d time.Duration) func() {
	t.Helper()
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(d):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			panic("watchdog: test hung for " + d.String() + "\n" + string(buf[:n]))
		}
	}()
	return func() { close(done) }
}

func newEngine(threads int) *engine.Engine {
	c := config.Default()
	c.Threads = threads
	return engine.New(c)
}

// wantErr checks err's kind, errno and that its message holds each of subs.
func wantErr(t *testing.T, err error, k errs.Kind, errno syscall.Errno, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", k)
	}
	if errs.KindOf(err) != k || errs.ErrnoOf(err) != errno {
		t.Fatalf("error %q: kind %v errno %v; want %v %v", err, errs.KindOf(err), errs.ErrnoOf(err), k, errno)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not say %q", err, s)
		}
	}
}

func TestReadsMatchTheObject(t *testing.T) {
	f := start(t, remotetest.Options{})
	// request_size 64 KiB: the 300 KiB range is five parallel requests.
	src, err := f.open(t, "/bkt/obj", "request_size=65536", "max_in_flight=8")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(2)
	es := engine.NewSource(src)
	defer es.Close()
	if n, _ := es.Size(); n != objSize {
		t.Fatalf("size %d, want %d", n, objSize)
	}
	ranges := []engine.ReadRange{
		{Off: 0, Buf: make([]byte, 1)}, {Off: 12345, Buf: make([]byte, 300<<10)},
		{Off: objSize - 10, Buf: make([]byte, 100)}, {Off: objSize, Buf: make([]byte, 5)},
	}
	fs, err := e.ReadV(context.Background(), es, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, fu := range fs {
		n, err := fu.WaitTimeout(-1)
		if err != nil {
			t.Fatalf("range %d: %v", i, err)
		}
		want := f.data[min(ranges[i].Off, objSize):min(ranges[i].Off+int64(len(ranges[i].Buf)), objSize)]
		if int(n) != len(want) || !bytes.Equal(ranges[i].Buf[:n], want) {
			t.Fatalf("range %d: %d bytes, not the object's %d", i, n, len(want))
		}
	}
	// 1 HEAD + 1 + 5 + 1 GETs: the big range was split at request_size.
	if st := f.srv.Stats(); st.Requests != 8 {
		t.Fatalf("%d requests, want 8", st.Requests)
	}
}

func readAll(t *testing.T, src *Source, off int64, n int) ([]byte, error) {
	t.Helper()
	p := make([]byte, n)
	m, err := src.ReadAt(context.Background(), p, off)
	return p[:m], err
}

// A connection cut mid-body is retried, asking only for what is missing.
func TestDropMidBodyRetried(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	src, err := f.open(t, "/_fault/drop=2/bkt/obj", "size=1048576")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, src, 1000, 200000)
	if err != nil || !bytes.Equal(got, f.data[1000:201000]) {
		t.Fatalf("read after two drops: %d bytes, %v", len(got), err)
	}
	// Every attempt cut: a clear error after `retries` attempts.
	src, err = f.open(t, "/_fault/drop/bkt/obj", "size=1048576", "retries=3")
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(t, src, 0, 100000)
	wantErr(t, err, errs.IO, syscall.ECONNRESET, "closed before the whole body", "after 3 attempts", "/bkt/obj")
}

func Test503TwiceThenSuccess(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	// At open: the HEAD gets the two 503s.
	src, err := f.open(t, "/_fault/503=2/bkt/obj")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	got, err := readAll(t, src, 5, 1000)
	if err != nil || !bytes.Equal(got, f.data[5:1005]) {
		t.Fatalf("read: %v", err)
	}
	// On a read (size given, no HEAD).
	f.srv.ResetStats()
	src, err = f.open(t, "/_fault/503=2/bkt/obj", "size=1048576")
	if err != nil {
		t.Fatal(err)
	}
	got, err = readAll(t, src, 5, 1000)
	if err != nil || !bytes.Equal(got, f.data[5:1005]) {
		t.Fatalf("read: %v", err)
	}
	if st := f.srv.Stats(); st.Requests != 3 {
		t.Fatalf("%d requests, want 3 (two 503s and the answer)", st.Requests)
	}
	// Always 503: the status, after the attempts allowed.
	src, _ = f.open(t, "/_fault/503/bkt/obj", "size=1048576", "retries=2")
	_, err = readAll(t, src, 0, 10)
	wantErr(t, err, errs.IO, syscall.EIO, "HTTP 503", "SlowDown", "after 2 attempts")
}

func TestBrokenRangeAnswersAreErrors(t *testing.T) {
	f := start(t, remotetest.Options{})
	for fault, want := range map[string]string{
		"norange":  "ignored the Range header",
		"badrange": "the server sent Content-Range bytes 11-20/",
		"short":    "a body of 9 bytes for bytes=10-19",
	} {
		src, err := f.open(t, "/_fault/"+fault+"/bkt/obj")
		if err != nil {
			t.Fatalf("%s: open: %v", fault, err)
		}
		f.srv.ResetStats()
		got, err := readAll(t, src, 10, 10)
		wantErr(t, err, errs.IO, syscall.EPROTO, want)
		if len(got) != 0 {
			t.Fatalf("%s: %d bytes handed out", fault, len(got))
		}
		if st := f.srv.Stats(); st.Requests != 1 {
			t.Fatalf("%s: %d requests: a broken answer is not retried", fault, st.Requests)
		}
	}
}

// A server that sends a byte less often than idle_timeout fails the read
// with a timeout, in bounded time.
func TestTrickleSlowerThanIdleTimeout(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	src, err := f.open(t, "/_fault/trickle=1s/bkt/obj", "idle_timeout=0.2", "retries=2")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err = readAll(t, src, 0, 100)
	wantErr(t, err, errs.Timeout, syscall.ETIMEDOUT, "idle_timeout", "after 2 attempts")
	t.Logf("failed after %v", time.Since(t0))
}

func TestETagChangedSinceOpen(t *testing.T) {
	f := start(t, remotetest.Options{})
	// The server honours If-Match: 412.
	src, err := f.open(t, "/_fault/etag/bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(t, src, 0, 100)
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open")
	// The server ignores If-Match: the answer's ETag tells.
	src, err = f.open(t, "/_fault/etag,noifmatch/bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, src, 0, 100)
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open", "ETag")
	if len(got) != 0 {
		t.Fatalf("%d bytes of the new version handed out", len(got))
	}
}

// A server that accepts and never answers fails the open (HEAD) and a
// read in bounded time.
func TestSilentServerFailsInBoundedTime(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	_, err := f.open(t, "/_fault/hang/bkt/obj", "first_byte_timeout=0.2", "retries=2")
	wantErr(t, err, errs.Timeout, syscall.ETIMEDOUT, "HEAD", "first_byte_timeout")
	src, err := f.open(t, "/_fault/hang=get/bkt/obj", "first_byte_timeout=0.2", "retries=2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(t, src, 0, 10)
	wantErr(t, err, errs.Timeout, syscall.ETIMEDOUT, "GET", "first_byte_timeout")
	// request_timeout bounds an attempt whatever else happens.
	src, _ = f.open(t, "/_fault/trickle=50ms/bkt/obj", "request_timeout=0.3", "retries=1")
	_, err = readAll(t, src, 0, 100)
	wantErr(t, err, errs.Timeout, syscall.ETIMEDOUT, "request_timeout")
}

func TestS3ErrorBodies(t *testing.T) {
	f := start(t, remotetest.Options{})
	_, err := f.open(t, "/_fault/s3=NoSuchKey/bkt/obj")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "HTTP 404", "NoSuchKey", "/bkt/obj")
	_, err = f.open(t, "/bkt/missing")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "NoSuchKey")
	_, err = f.open(t, "/nobucket/obj")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "NoSuchBucket")
	_, err = f.open(t, "/_fault/s3=AccessDenied/bkt/obj")
	wantErr(t, err, errs.IO, syscall.EACCES, "HTTP 403", "AccessDenied")
	src, _ := f.open(t, "/_fault/s3=ExpiredToken/bkt/obj", "size=10")
	_, err = readAll(t, src, 0, 10)
	wantErr(t, err, errs.IO, syscall.EACCES, "ExpiredToken")
}

func TestRefusedFailsFast(t *testing.T) {
	f := start(t, remotetest.Options{})
	url := f.srv.URL
	f.srv.Close()
	o, _ := ParseOptions(nil, func(string) (string, bool) { return "", false })
	_, err := Open(context.Background(), url+"/bkt/obj", o)
	wantErr(t, err, errs.IO, syscall.ECONNREFUSED, "connection refused")
	// (A retry is possible only when a dead keep-alive connection of an
	// earlier server on the same port failed first.)
	if strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("refused connection retried: %v", err)
	}
	_, err = Open(context.Background(), "http://no-such-host.invalid/x", o)
	wantErr(t, err, errs.IO, syscall.EHOSTUNREACH, "no-such-host.invalid")
}

// Remote parts do not hold COLIO_NTHREADS slots: with threads=2, the
// server sees 64 requests at once (max_in_flight).
func TestInFlightAboveThreads(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	f := start(t, remotetest.Options{Latency: 100 * time.Millisecond})
	src, err := f.open(t, "/bkt/obj", "max_in_flight=64", "size=1048576")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(2)
	es := engine.NewSource(src)
	defer es.Close()
	var peak int64
	for try := 0; try < 3 && peak < 64; try++ {
		f.srv.ResetStats()
		ranges := make([]engine.ReadRange, 256)
		for i := range ranges {
			ranges[i] = engine.ReadRange{Off: int64(i) * 4096, Buf: make([]byte, 4096)}
		}
		fs, err := e.ReadV(context.Background(), es, ranges)
		if err != nil {
			t.Fatal(err)
		}
		for i, fu := range fs {
			if _, err := fu.WaitTimeout(-1); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ranges[i].Buf, f.data[i*4096:(i+1)*4096]) {
				t.Fatalf("range %d differs", i)
			}
		}
		peak = f.srv.Stats().PeakInFlight
	}
	t.Logf("peak in flight at the server: %d (threads=2)", peak)
	if peak != 64 {
		t.Fatalf("peak in flight %d, want 64 (max_in_flight) with threads=2", peak)
	}
}

// Closing the source fails its requests in flight at once with a Closed
// error, and parts not started too, instead of waiting out the timeouts.
func TestCloseAbortsRequestsInFlight(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	src, err := f.open(t, "/_fault/hang=get/bkt/obj", "max_in_flight=2")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(2)
	es := engine.NewSource(src)
	var fs []*future.Future
	for i := 0; i < 4; i++ {
		fu, err := e.Read(context.Background(), es, make([]byte, 10), int64(i)*10)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, fu)
	}
	for f.srv.Stats().InFlight < 2 { // two GETs held (max_in_flight), two queued
		time.Sleep(5 * time.Millisecond)
	}
	if fs[0].Done() {
		t.Fatal("a read of a silent server is done")
	}
	if err := es.Close(); err != nil {
		t.Fatal(err)
	}
	for i, fu := range fs {
		_, err := fu.WaitTimeout(-1)
		if errs.KindOf(err) != errs.Closed {
			t.Fatalf("read %d: %v, want a Closed error", i, err)
		}
	}
}

// Cancel works as for local sources: a part not started never runs, and
// the future completes with Cancelled when its turn comes (here when
// closing the source frees the slot the silent request held).
func TestCancelQueuedParts(t *testing.T) {
	defer watchdog(t, time.Minute)()
	f := start(t, remotetest.Options{})
	src, _ := f.open(t, "/_fault/hang=get/bkt/obj", "max_in_flight=1")
	e := newEngine(2)
	es := engine.NewSource(src)
	first, _ := e.Read(context.Background(), es, make([]byte, 10), 0)
	second, _ := e.Read(context.Background(), es, make([]byte, 10), 10)
	for f.srv.Stats().InFlight < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	if !second.Cancel() {
		t.Fatal("a queued remote read could not be cancelled")
	}
	if first.Done() || first.Cancel() {
		t.Fatal("the running read is done or cancellable")
	}
	es.Close()
	if _, err := second.WaitTimeout(-1); errs.KindOf(err) != errs.Cancelled {
		t.Fatalf("cancelled read: %v", err)
	}
	if _, err := first.WaitTimeout(-1); errs.KindOf(err) != errs.Closed {
		t.Fatalf("running read at close: %v", err)
	}
	if n := f.srv.Stats().Requests; n != 2 {
		t.Fatalf("%d requests: the cancelled read was sent", n)
	}
}

func TestOptions(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	_, err := ParseOptions([]string{"max_inflight=3"}, none)
	wantErr(t, err, errs.Invalid, 0, `"max_inflight"`)
	_, err = ParseOptions([]string{"max_in_flight=lots"}, none)
	wantErr(t, err, errs.Invalid, 0, "max_in_flight", "not an integer")
	_, err = ParseOptions([]string{"secret"}, none)
	wantErr(t, err, errs.Invalid, 0, "key=value")
	_, err = ParseOptions([]string{"idle_timeout=-1"}, none)
	wantErr(t, err, errs.Invalid, 0, "idle_timeout")
	_, err = ParseOptions(nil, func(k string) (string, bool) { return "x", k == "COLIO_REMOTE_RETRIES" })
	wantErr(t, err, errs.Invalid, 0, "COLIO_REMOTE_RETRIES")
	o, err := ParseOptions([]string{"header.X-Test=1", "connect_timeout=0.5"},
		func(k string) (string, bool) { return "7", k == "COLIO_REMOTE_MAX_IN_FLIGHT" })
	if err != nil || o.MaxInFlight != 7 || o.ConnectTimeout != 500*time.Millisecond || o.Header.Get("X-Test") != "1" {
		t.Fatalf("%+v, %v", o, err)
	}
	o, _ = ParseOptions([]string{"key=AKIA", "secret=hush"}, none)
	_, err = Open(context.Background(), "http://127.0.0.1:1/x", o)
	wantErr(t, err, errs.Invalid, 0, "only to s3://")
	if strings.Contains(err.Error(), "hush") {
		t.Fatalf("secret in message: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	got := redactURL("https://user:pw@h.example/a/b?X-Amz-Signature=abc&X-Amz-Credential=AK%2Fx&versionId=3")
	for _, bad := range []string{"pw", "abc", "AK"} {
		if strings.Contains(got, bad) {
			t.Fatalf("%q shows %q", got, bad)
		}
	}
	if !strings.Contains(got, "versionId=3") || !strings.Contains(got, "h.example/a/b") {
		t.Fatalf("%q lost the object's name", got)
	}
}

// etag= with size= opens without a request and reads only the version
// whose ETag it names: a rewritten object fails with ESTALE, never with
// the new bytes. Without size= the open checks the ETag itself.
func TestExpectedETag(t *testing.T) {
	f := start(t, remotetest.Options{})
	first, err := f.open(t, "/bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	etag := first.ETag()
	if etag == "" || strings.HasPrefix(etag, "W/") {
		t.Fatalf("ETag %q at open, want the server's strong one", etag)
	}
	// Stable only when the object was last modified a second or more
	// before the answer: the server's ETag is of size and mtime.
	obj := filepath.Join(f.dir, "bkt", "obj")
	for _, c := range []struct {
		mtime  time.Time
		stable bool
	}{{time.Now().Add(-time.Hour), true}, {time.Now().Add(10 * time.Second), false}} {
		if err := os.Chtimes(obj, c.mtime, c.mtime); err != nil {
			t.Fatal(err)
		}
		s, err := f.open(t, "/bkt/obj")
		if err != nil {
			t.Fatal(err)
		}
		if s.StableETag() != c.stable {
			t.Fatalf("modified at %v: StableETag %v, want %v", c.mtime, s.StableETag(), c.stable)
		}
	}
	first, err = f.open(t, "/bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	etag = first.ETag()
	before := f.srv.Stats().Requests
	src, err := f.open(t, "/bkt/obj", "size="+strconv.Itoa(objSize), "etag="+etag)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.srv.Stats().Requests - before; n != 0 {
		t.Fatalf("%d requests at open with size= and etag=, want 0", n)
	}
	got, err := readAll(t, src, 4096, 1000)
	if err != nil || !bytes.Equal(got, f.data[4096:5096]) {
		t.Fatalf("read with the expected ETag: %d bytes, %v", len(got), err)
	}
	if src.ETag() != etag {
		t.Fatalf("ETag %q after the read, want %q", src.ETag(), etag)
	}
	// Another ETag than the object's: If-Match refuses the GET.
	stale, err := f.open(t, "/bkt/obj", "size="+strconv.Itoa(objSize), `etag="other"`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(t, stale, 0, 100)
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open")
	// The open checks it when it asks the server (HEAD, prefetch_tail).
	_, err = f.open(t, "/bkt/obj", `etag="other"`)
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open", `"other"`)
	_, err = f.open(t, "/bkt/obj", `etag="other"`, "prefetch_tail=4096")
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open")
	// The object rewritten (another size, so another ETag): the source
	// opened with the old ETag reads nothing of the new version.
	if err := os.WriteFile(filepath.Join(f.dir, "bkt", "obj"), f.data[:objSize/2], 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = readAll(t, src, 0, 100)
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open")
	if len(got) != 0 {
		t.Fatalf("%d bytes of the rewritten object handed out", len(got))
	}
	if _, err := ParseOptions([]string{"etag="}, func(string) (string, bool) { return "", false }); err == nil {
		t.Fatal("etag= with no value was accepted")
	}
}
