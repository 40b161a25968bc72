package remote

import (
	"bytes"
	"context"
	"strconv"
	"syscall"
	"testing"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// With prefetch_tail=N the open is a GET of the last N bytes (bytes=-N):
// its Content-Range says the size, its body is kept, and a read inside
// it (a Parquet footer, a zip's central directory) makes no request. A
// read before it is a ranged GET as always.
func TestPrefetchTailByteExact(t *testing.T) {
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
				src, err = f.openS3(t, "bkt/o"+strconv.Itoa(n), "prefetch_tail="+strconv.Itoa(pre),
					"region=us-east-1", "key=AKIDTEST", "secret=s3cr3t")
			} else {
				src, err = f.open(t, "/bkt/o"+strconv.Itoa(n), "prefetch_tail="+strconv.Itoa(pre))
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
			// The tail: no request.
			start := max(0, n-pre)
			got, err := readEngine(t, e, es, int64(start), n-start)
			if err != nil || !bytes.Equal(got, want[start:]) {
				t.Fatalf("s3=%v size %d: the kept tail: %v", s3, n, err)
			}
			if n > 8 {
				got, err = readEngine(t, e, es, int64(n-8), 8)
				if err != nil || !bytes.Equal(got, want[n-8:]) {
					t.Fatalf("s3=%v size %d: the last 8 bytes: %v", s3, n, err)
				}
			}
			if st := settled(t, f.srv); st.Requests != 1 {
				t.Fatalf("s3=%v size %d: %d requests after reads inside the tail", s3, n, st.Requests)
			}
			// Before the tail and across its start: byte-exact, with requests.
			for _, r := range [][2]int{{0, n}, {max(0, start-10), 30}, {0, 7}, {n / 3, n}} {
				off, ln := r[0], r[1]
				if off > n {
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
				t.Fatalf("s3=%v size %d: no request for the bytes before the tail", s3, n)
			}
			// Coalesced fan-outs scatter from the kept tail too.
			ranges := []engine.ReadRange{{Off: 0, Buf: make([]byte, min(n, 7))},
				{Off: int64(start), Buf: make([]byte, n-start)}}
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

// prefetch and prefetch_tail keep different ends of an object: one open
// takes one of them.
func TestPrefetchAndTailTogetherRefused(t *testing.T) {
	f, _ := startObjects(t, remotetest.Options{})
	if _, err := f.open(t, "/bkt/o1", "prefetch=10", "prefetch_tail=10"); err == nil {
		t.Fatal("prefetch with prefetch_tail: no error")
	}
}

// A server that ignores Range answers the tail's GET with the whole
// object: kept when it fits; a larger object opens (its size is the
// answer's length) and a read of it meets the ignored Range as any does.
func TestPrefetchTailRangeIgnored(t *testing.T) {
	f, objs := startObjects(t, remotetest.Options{})
	for _, n := range []int{0, pre - 1, pre, 3*pre + 17} {
		f.srv.ResetStats()
		src, err := f.open(t, "/_fault/norange/bkt/o"+strconv.Itoa(n), "prefetch_tail="+strconv.Itoa(pre))
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if sz, _ := src.Size(); sz != int64(n) {
			t.Fatalf("size %d: Size %d", n, sz)
		}
		if n <= pre {
			got, err := readAll(t, src, 0, n)
			if err != nil || !bytes.Equal(got, objs[n]) {
				t.Fatalf("size %d: kept bytes: %v", n, err)
			}
			if st := settled(t, f.srv); st.Requests != 1 {
				t.Fatalf("size %d: %d requests", n, st.Requests)
			}
			continue
		}
		_, err = readAll(t, src, int64(n-10), 10)
		wantErr(t, err, errs.IO, syscall.EPROTO, "ignored the Range header")
	}
}

// The tail is the version the open saw: a read before it of an object
// changed since fails, as any read of it does.
func TestPrefetchTailETagChangedSinceOpen(t *testing.T) {
	f, objs := startObjects(t, remotetest.Options{})
	n := 3*pre + 17
	src, err := f.open(t, "/_fault/etag/bkt/o"+strconv.Itoa(n), "prefetch_tail="+strconv.Itoa(pre))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, src, int64(n-100), 100); err != nil || !bytes.Equal(got, objs[n][n-100:]) {
		t.Fatalf("inside the tail: %v", err)
	}
	_, err = readAll(t, src, 0, 20)
	wantErr(t, err, errs.IO, syscall.ESTALE, "changed since open")
}
