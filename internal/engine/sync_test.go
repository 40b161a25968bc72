package engine

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

func TestReadAtSyncPaths(t *testing.T) {
	e := newEngine(t, nil)
	data := fakes.Pattern(100000, 21)
	for name, src := range map[string]*Source{
		"file":   openFile(t, writeFile(t, data)),
		"memory": NewSource(source.FromMemory(data)),
		"slow":   NewSource(&fakes.SlowSource{Data: data}),
	} {
		t.Run(name, func(t *testing.T) {
			for _, size := range []int{0, 100, 4096, 1 << 20} { // inline and not
				buf := make([]byte, size)
				n, err := e.ReadAt(context.Background(), src, buf, 500)
				want := data[500:min(500+size, len(data))]
				if err != nil || n != int64(len(want)) || !bytes.Equal(buf[:n], want) {
					t.Fatalf("size %d: %d %v", size, n, err)
				}
			}
			buf := make([]byte, 100)
			if n, err := e.ReadAt(context.Background(), src, buf, 99950); err != nil || n != 50 {
				t.Fatalf("crossing the end: %d %v", n, err)
			}
			if n, err := e.ReadAt(context.Background(), src, buf, 100000); err != nil || n != 0 {
				t.Fatalf("at the end: %d %v", n, err)
			}
			for _, size := range []int{0, 100} {
				if _, err := e.ReadAt(context.Background(), src, make([]byte, size), 100001); !errors.Is(err, errs.ErrInvalid) {
					t.Fatalf("past the end (%d bytes): %v", size, err)
				}
			}
			if _, err := e.ReadAt(context.Background(), src, buf, -1); !errors.Is(err, errs.ErrInvalid) {
				t.Fatalf("negative offset: %v", err)
			}
			src.Close()
			if _, err := e.ReadAt(context.Background(), src, buf, 0); !errors.Is(err, errs.ErrClosed) {
				t.Fatalf("closed: %v", err)
			}
		})
	}
}

func TestWriteAtSyncPaths(t *testing.T) {
	e := newEngine(t, nil)
	path := filepath.Join(t.TempDir(), "w.bin")
	fs, err := sink.OpenFile(path, sink.Create|sink.Truncate, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := NewSink(fs)
	a, b := fakes.Pattern(100, 1), fakes.Pattern(1<<20, 2)
	if n, err := e.WriteAt(context.Background(), k, a, Append); err != nil || n != 100 {
		t.Fatal(n, err)
	}
	if n, err := e.WriteAt(context.Background(), k, b, Append); err != nil || n != 1<<20 {
		t.Fatal(n, err)
	}
	if k.NextAppend() != 100+1<<20 {
		t.Fatal("append offsets")
	}
	fixed := NewSink(sink.IntoMemory(make([]byte, 10)))
	if _, err := e.WriteAt(context.Background(), fixed, a, 0); errs.KindOf(err) != errs.NoSpace {
		t.Fatalf("sync write past a fixed sink: %v", err)
	}
	if errs.KindOf(fixed.Close()) != errs.NoSpace {
		t.Fatal("sync write error not sticky")
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	got := mustReadFile(t, path)
	if !bytes.Equal(got, append(append([]byte{}, a...), b...)) {
		t.Fatal("file differs")
	}
}
