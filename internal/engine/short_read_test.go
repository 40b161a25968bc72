package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/source"
)

// Issue 13.1: a source may return fewer bytes than asked only at its end.
// Before the fix, a source that stopped early (a callback returning 0 in
// the middle, a file truncated under the reader) made a read that fit in
// one task succeed short, while the same read split into several tasks
// failed with an I/O error; only the parts before the last were checked.

// endsEarly declares size bytes but serves only the first stop of them:
// past stop it answers 0 bytes, as a callback that gave up would.
type endsEarly struct {
	data []byte
	stop int64
	fast bool
}

func (s *endsEarly) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= s.stop {
		return 0, nil
	}
	return copy(p, s.data[off:s.stop]), nil
}
func (s *endsEarly) Size() (int64, error)  { return int64(len(s.data)), nil }
func (s *endsEarly) Traits() source.Traits { return source.Traits{Fast: s.fast, Concurrent: true} }
func (s *endsEarly) Close() error          { return nil }

// wantShort checks err is the short-read error, naming where the source
// stopped and what was asked and got: the same message however the read
// was split or run.
func wantShort(t *testing.T, how string, err error, asked, off, stop, size int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: a read that stopped at %d of a %d-byte source succeeded", how, stop, size)
	}
	if !errors.Is(err, errs.ErrIO) {
		t.Fatalf("%s: kind %v, want an I/O error: %v", how, errs.KindOf(err), err)
	}
	want := fmt.Sprintf("read of %d bytes at offset %d got %d: the source stopped at offset %d, before its end at %d",
		asked, off, stop-off, stop, size)
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: message %q does not say %q", how, err.Error(), want)
	}
}

func TestShortReadBeforeEndFailsAlike(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	const size, stop, ts = 1 << 20, 300_000, 64 << 10
	data := fakes.Pattern(size, 31)
	e := newEngine(t, func(c *config.Config) { c.TaskSize = ts })
	for _, fast := range []bool{false, true} {
		src := NewSource(&endsEarly{data: data, stop: stop, fast: fast})
		for _, c := range []struct {
			name      string
			off, n    int64
			wantTasks string
		}{
			{"one task", stop - 1000, 40_000, "1"},
			{"several tasks", 0, 700_000, "11"},
			{"inline size", stop - 100, 4096, "1"},
			{"to the end", 200_000, size, "13"},
		} {
			how := fmt.Sprintf("%s (fast=%v, %s tasks)", c.name, fast, c.wantTasks)
			buf := make([]byte, c.n)
			asked := min(c.n, size-c.off)
			f, err := e.Read(context.Background(), src, buf, c.off)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WaitTimeout(30 * time.Second)
			wantShort(t, how+" async", err, asked, c.off, stop, size)
			_, err = e.ReadAt(context.Background(), src, buf, c.off)
			wantShort(t, how+" sync", err, asked, c.off, stop, size)
			fs, err := e.ReadV(context.Background(), src, []ReadRange{{Off: 0, Buf: make([]byte, 10)}, {Off: c.off, Buf: buf}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fs[0].WaitTimeout(30 * time.Second); err != nil {
				t.Fatalf("%s: the good range failed: %v", how, err)
			}
			_, err = fs[1].WaitTimeout(30 * time.Second)
			wantShort(t, how+" readv", err, asked, c.off, stop, size)
		}
		// Before the stop the source is fine, and a read ending there is too.
		buf := make([]byte, stop)
		f, err := e.Read(context.Background(), src, buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := mustWait(t, f); n != stop || !bytes.Equal(buf, data[:stop]) {
			t.Fatalf("fast=%v: read up to the stop: %d bytes", fast, n)
		}
		src.Close()
	}
}

// A callback that returns 0 before the declared size, through the
// callback source (the C and Python callbacks' path).
func TestCallbackZeroBeforeSizeFails(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := fakes.Pattern(100_000, 32)
	const stop = 60_000
	cb, err := source.FromCallbacks(source.CallbackOptions{
		Read: func(_ context.Context, p []byte, off int64) (int, error) {
			if off >= stop {
				return 0, nil
			}
			// Short answers before the stop are fine: colio asks again.
			return copy(p[:min(len(p), 777)], data[off:stop]), nil
		},
		Size:       func() (int64, error) { return int64(len(data)), nil },
		Concurrent: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{1 << 20, 16 << 10} {
		e := newEngine(t, func(c *config.Config) { c.TaskSize = ts })
		src := NewSource(cb)
		buf := make([]byte, 80_000)
		_, err := e.ReadAt(context.Background(), src, buf, 10_000)
		wantShort(t, fmt.Sprintf("task size %d", ts), err, 80_000, 10_000, stop, 100_000)
		// Crossing the declared end is still fine where the data exists.
		n, err := e.ReadAt(context.Background(), src, buf[:100], stop-100)
		if err != nil || n != 100 || !bytes.Equal(buf[:100], data[stop-100:stop]) {
			t.Fatalf("task size %d: read before the stop: %d, %v", ts, n, err)
		}
	}
}

// truncating is a local file that is cut to cut bytes by the first read,
// after the engine took its size: a file truncated under a reader.
type truncating struct {
	*source.File
	path string
	cut  int64
	done bool
}

func (s *truncating) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if !s.done {
		s.done = true
		if err := os.Truncate(s.path, s.cut); err != nil {
			return 0, err
		}
	}
	return s.File.ReadAt(ctx, p, off)
}

func TestFileTruncatedUnderReaderFails(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	const size, cut = 500_000, 123_456
	data := fakes.Pattern(size, 33)
	for _, ts := range []int64{4 << 20, 64 << 10} {
		path := writeFile(t, data)
		f, err := source.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// One part at a time, so the truncation comes before every part.
		e := newEngine(t, func(c *config.Config) { c.TaskSize = ts; c.Threads = 1 })
		src := NewSource(&truncating{File: f, path: path, cut: cut})
		src.traits.Fast = false // through the pool, where the size comes first
		buf := make([]byte, size)
		fut, err := e.Read(context.Background(), src, buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fut.WaitTimeout(30 * time.Second)
		wantShort(t, fmt.Sprintf("task size %d", ts), err, size, 0, cut, size)
		src.Close()
	}
}

// The synchronous inline path reads before it asks the size: a file that
// grew between the two is read to its new end, not failed.
type growing struct {
	*source.File
	path  string
	extra []byte
	done  bool
}

func (s *growing) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := s.File.ReadAt(ctx, p, off)
	if !s.done {
		s.done = true
		fh, ferr := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
		if ferr != nil {
			return n, ferr
		}
		defer fh.Close()
		if _, ferr := fh.Write(s.extra); ferr != nil {
			return n, ferr
		}
	}
	return n, err
}

func TestInlineReadOfGrowingFile(t *testing.T) {
	data := fakes.Pattern(10_000, 34)
	extra := fakes.Pattern(3000, 35)
	path := writeFile(t, data)
	f, err := source.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, nil)
	src := NewSource(&growing{File: f, path: path, extra: extra})
	buf := make([]byte, 4096)
	n, err := e.ReadAt(context.Background(), src, buf, 9000)
	if err != nil {
		t.Fatalf("read across the old end of a growing file: %v", err)
	}
	want := append(append([]byte{}, data[9000:]...), extra...) // to the new end
	if n != int64(len(want)) || !bytes.Equal(buf[:n], want) {
		t.Fatalf("read %d bytes; want the %d bytes from the old end to the new one", n, len(want))
	}
	src.Close()
}
