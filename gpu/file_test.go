package gpu_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

// Through real local files (pread/pwrite straight into and out of the
// pinned buffers), and through a source that takes one call at a time
// (the engine's serial queue).
func TestFilesAndSerialSources(t *testing.T) {
	r := newRig(t, nil)
	size := 7*testTask + 4097
	data := pattern(size, 11)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := source.OpenFile(in)
	if err != nil {
		t.Fatal(err)
	}
	src := engine.NewSource(fs)
	defer src.Close()
	dptr := r.dev.Alloc(r.ctx, size)
	f, err := r.m.ReadSource(context.Background(), src, dptr, int64(size), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	mustEqual(t, "file -> device", r.dev.Bytes(dptr, size), data)

	fk, err := sink.OpenFile(out, sink.Create|sink.Truncate, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	snk := engine.NewSink(fk)
	f, err = r.m.WriteSink(context.Background(), snk, dptr, int64(size), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	if err := snk.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "device -> file", got, data)

	serial, err := source.FromCallbacks(source.CallbackOptions{
		Read: func(_ context.Context, p []byte, off int64) (int, error) { return copy(p, data[off:]), nil },
		Size: func() (int64, error) { return int64(len(data)), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ssrc := engine.NewSource(serial)
	defer ssrc.Close()
	d2 := r.dev.Alloc(r.ctx, size)
	f, err = r.m.ReadSource(context.Background(), ssrc, d2, int64(size), 0, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitOK(t, f)
	mustEqual(t, "serial source -> device", r.dev.Bytes(d2, size), data)
	if st := r.m.Stats(); st.StreamSyncs != 3 || st.Requests != 3 {
		t.Errorf("stats %+v: want 3 requests, 3 syncs", st)
	}
}
