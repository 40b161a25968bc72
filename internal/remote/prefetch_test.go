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

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

const pre = 64 << 10 // the prefetch of these tests

// prefetchSizes are objects below, at and above the prefetch, and empty.
var prefetchSizes = []int{0, 1, pre - 1, pre, pre + 1, 3*pre + 17}

// startObjects serves bkt/o<size> for each size (random bytes, kept as
// the reference).
func startObjects(t *testing.T, opt remotetest.Options) (*fixture, map[int][]byte) {
	t.Helper()
	dir := t.TempDir()
	objs := map[int][]byte{}
	rng := rand.New(rand.NewSource(7))
	if err := os.MkdirAll(filepath.Join(dir, "bkt"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range prefetchSizes {
		b := make([]byte, n)
		rng.Read(b)
		objs[n] = b
		if err := os.WriteFile(filepath.Join(dir, "bkt", "o"+strconv.Itoa(n)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opt.Dir = dir
	s, err := remotetest.Start(opt, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fixture{srv: s}
	return f, objs
}

// readEngine reads [off, off+n) through the engine (the parts run on the
// source's own goroutines, or inline where the object is in memory).
func readEngine(t *testing.T, e *engine.Engine, es *engine.Source, off int64, n int) ([]byte, error) {
	t.Helper()
	buf := make([]byte, n)
	fs, err := e.ReadV(context.Background(), es, []engine.ReadRange{{Off: off, Buf: buf}})
	if err != nil {
		return nil, err
	}
	got, err := fs[0].WaitTimeout(-1)
	return buf[:got], err
}

// The open is one GET that keeps the first bytes: an object no larger
// than the prefetch costs that one request in all; a larger one is read
// from memory inside it and with ranged GETs for the rest only.
func TestPrefetchByteExact(t *testing.T) {
	for _, s3 := range []bool{false, true} {
		isolateAWS(t)
		f, objs := startObjects(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t", RequireAuth: s3})
		e := newEngine(2)
		for _, n := range prefetchSizes {
			want := objs[n]
			f.srv.ResetStats()
			var src *Source
			var err error
			if s3 {
				src, err = f.openS3(t, "bkt/o"+strconv.Itoa(n), "prefetch="+strconv.Itoa(pre), "region=us-east-1",
					"key=AKIDTEST", "secret=s3cr3t")
			} else {
				src, err = f.open(t, "/bkt/o"+strconv.Itoa(n), "prefetch="+strconv.Itoa(pre))
			}
			if err != nil {
				t.Fatalf("s3=%v size %d: open: %v", s3, n, err)
			}
			if st := settled(t, f.srv); st.Requests != 1 {
				t.Fatalf("s3=%v size %d: %d requests at open, want 1 GET", s3, n, st.Requests)
			}
			if sz, _ := src.Size(); sz != int64(n) {
				t.Fatalf("s3=%v size %d: Size %d", s3, n, sz)
			}
			es := engine.NewSource(src)
			if got := es.Traits().Fast; got != (n <= pre) {
				t.Fatalf("size %d: Fast %v; only a whole object in memory is", n, got)
			}
			// Inside the kept bytes: no request.
			in := min(n, pre)
			got, err := readEngine(t, e, es, 0, in)
			if err != nil || !bytes.Equal(got, want[:in]) {
				t.Fatalf("s3=%v size %d: the kept bytes: %v", s3, n, err)
			}
			if st := settled(t, f.srv); st.Requests != 1 {
				t.Fatalf("s3=%v size %d: %d requests after a read inside the prefetch", s3, n, st.Requests)
			}
			// The whole object, and ranges across the end of the kept bytes.
			for _, r := range [][2]int{{0, n}, {max(0, pre-10), 30}, {pre / 2, n}, {n - 1, 5}} {
				off, ln := r[0], r[1]
				if off < 0 || off > n {
					continue
				}
				got, err := readEngine(t, e, es, int64(off), ln)
				end := min(off+ln, n)
				if err != nil || !bytes.Equal(got, want[off:end]) {
					t.Fatalf("s3=%v size %d: [%d, +%d): %d bytes, %v", s3, n, off, ln, len(got), err)
				}
			}
			st := settled(t, f.srv)
			if n <= pre && st.Requests != 1 {
				t.Fatalf("s3=%v size %d: %d requests; the object is in memory", s3, n, st.Requests)
			}
			if n > pre && st.Requests == 1 {
				t.Fatalf("s3=%v size %d: no request for the bytes past the prefetch", s3, n)
			}
			// Coalesced fan-outs scatter from the kept bytes too.
			ranges := []engine.ReadRange{{Off: 0, Buf: make([]byte, min(n, 7))},
				{Off: int64(n / 2), Buf: make([]byte, n-n/2)}}
			fs, err := e.ReadVCoalesced(context.Background(), es, ranges)
			if err != nil {
				t.Fatal(err)
			}
			for i, fu := range fs {
				k, err := fu.WaitTimeout(-1)
				r := ranges[i]
				if err != nil || !bytes.Equal(r.Buf[:k], want[min(int(r.Off), n):min(int(r.Off)+len(r.Buf), n)]) {
					t.Fatalf("s3=%v size %d: coalesced range %d: %v", s3, n, i, err)
				}
			}
			es.Close()
		}
	}
}

// A server that ignores Range answers the open's GET with the whole
// object: kept when it fits; larger, the read past the kept bytes meets
// the ignored Range as any read does.
func TestPrefetchRangeIgnored(t *testing.T) {
	f, objs := startObjects(t, remotetest.Options{})
	for _, n := range []int{0, pre - 1, pre, 3*pre + 17} {
		f.srv.ResetStats()
		src, err := f.open(t, "/_fault/norange/bkt/o"+strconv.Itoa(n), "prefetch="+strconv.Itoa(pre))
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if sz, _ := src.Size(); sz != int64(n) {
			t.Fatalf("size %d: Size %d", n, sz)
		}
		got, err := readAll(t, src, 0, min(n, pre))
		if err != nil || !bytes.Equal(got, objs[n][:min(n, pre)]) {
			t.Fatalf("size %d: kept bytes: %v", n, err)
		}
		if n > pre {
			_, err = readAll(t, src, pre, 10)
			wantErr(t, err, errs.IO, syscall.EPROTO, "ignored the Range header")
		} else if st := settled(t, f.srv); st.Requests != 1 {
			t.Fatalf("size %d: %d requests", n, st.Requests)
		}
	}
}

// Reads inside the kept bytes are the version the open saw; a read past
// them of an object changed since fails, as any read of it does.
func TestPrefetchETagChangedSinceOpen(t *testing.T) {
	f, objs := startObjects(t, remotetest.Options{})
	n := 3*pre + 17
	for _, fault := range []string{"etag", "etag,noifmatch"} {
		src, err := f.open(t, "/_fault/"+fault+"/bkt/o"+strconv.Itoa(n), "prefetch="+strconv.Itoa(pre))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := readAll(t, src, 100, 1000); err != nil || !bytes.Equal(got, objs[n][100:1100]) {
			t.Fatalf("%s: inside: %v", fault, err)
		}
		got, err := readAll(t, src, pre-10, 20)
		wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open")
		if len(got) != 10 || !bytes.Equal(got, objs[n][pre-10:pre]) {
			t.Fatalf("%s: %d bytes handed out; want only the 10 kept ones", fault, len(got))
		}
	}
}

// The open fails as a HEAD's would: a missing object is NotFound, a 503
// is retried, the broken answers are protocol errors.
func TestPrefetchOpenErrors(t *testing.T) {
	f, objs := startObjects(t, remotetest.Options{})
	_, err := f.open(t, "/bkt/missing", "prefetch=100")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "GET", "bytes=0-99")
	isolateAWS(t)
	_, err = f.openS3(t, "bkt/missing", "prefetch=100", "region=us-east-1", "anon=1")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "NoSuchKey")
	for fault, want := range map[string]string{
		"badrange": "the server sent Content-Range bytes 1-",
		"short":    "a body of 99 bytes for bytes=0-99",
	} {
		_, err = f.open(t, "/_fault/"+fault+"/bkt/o"+strconv.Itoa(pre), "prefetch=100", "retries=1")
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Fatalf("%s: %v; want %q", fault, err, want)
		}
	}
	f.srv.ResetStats()
	src, err := f.open(t, "/_fault/503=2/bkt/o"+strconv.Itoa(pre), "prefetch=100")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, src, 0, 100); err != nil || !bytes.Equal(got, objs[pre][:100]) {
		t.Fatalf("after 503s: %v", err)
	}
	if st := settled(t, f.srv); st.Requests != 3 {
		t.Fatalf("%d requests; want 2 refused and 1 kept", st.Requests)
	}
}
