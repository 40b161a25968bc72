package gpu_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/gpu/fakedev"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/remote"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// Device reads from a remote source (issue 14) take the same path as
// from a file: bytes fetched by ranged GETs into pinned bounce buffers,
// copied to the device, one stream synchronisation per request, and the
// bytes on the device equal to the object's. The source is colio's HTTP
// source against a loopback server with 2 ms of latency per answer.
func TestReadFromRemoteSource(t *testing.T) {
	r := newRig(t, nil)
	data := pattern(3*testTask+12345, 7)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bkt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bkt", "obj"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := remotetest.Start(remotetest.Options{Dir: dir, Latency: 2 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	opt, err := remote.ParseOptions(nil, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	rs, err := remote.Open(context.Background(), srv.URL+"/bkt/obj", opt)
	if err != nil {
		t.Fatal(err)
	}
	src := engine.NewSource(rs)
	defer src.Close()
	cases := []struct{ off, size int64 }{
		{0, 1}, {7, testBounce + 3}, {0, testTask}, {100, 2*testTask + testBounce/2},
		{0, int64(len(data))}, {int64(len(data)) - 500, 4000}, // crosses the end: 500 bytes
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
		if d := r.m.Stats().StreamSyncs - before.StreamSyncs; d != 1 {
			t.Errorf("case %d: %d stream synchronisations, want exactly 1", i, d)
		}
	}
	if st := srv.Stats(); st.Requests < int64(len(cases)) {
		t.Errorf("the server saw %d requests for %d reads", st.Requests, len(cases))
	}
	if r.dev.Count(fakedev.OpStreamSync) != len(cases) {
		t.Errorf("device saw %d stream synchronisations for %d requests", r.dev.Count(fakedev.OpStreamSync), len(cases))
	}
}
