package readahead

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/source"
)

func newEngine() *engine.Engine { return engine.New(config.Default()) }

func fileSource(t testing.TB, data []byte) *engine.Source {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := source.OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := engine.NewSource(f)
	t.Cleanup(func() { s.Close() })
	return s
}

func watchdog(t *testing.T, d time.Duration) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(d):
			buf := make([]byte, 1<<20)
			panic("watchdog: hung\n" + string(buf[:runtime.Stack(buf, true)]))
		}
	}()
	return func() { close(done) }
}

// shortSource serves at most max bytes a call, with optional latency and
// an error at a chosen offset.
func shortSource(data []byte, max int, lat time.Duration, failAt int64, concurrent bool) *engine.Source {
	cb, _ := source.FromCallbacks(source.CallbackOptions{
		Read: func(_ context.Context, p []byte, off int64) (int, error) {
			fakes.Sleep(lat)
			if failAt >= 0 && off >= failAt {
				return 0, errors.New("injected failure")
			}
			n := min(len(p), max)
			if failAt >= 0 && off+int64(n) > failAt {
				n = int(failAt - off)
			}
			return copy(p[:n], data[off:]), nil
		},
		Size:       func() (int64, error) { return int64(len(data)), nil },
		Concurrent: concurrent,
	})
	return engine.NewSource(cb)
}

func TestRandomSizedReads(t *testing.T) {
	data := fakes.Pattern(5<<20+777, 1)
	for name, src := range map[string]*engine.Source{
		"file":  fileSource(t, data),
		"short": shortSource(data, 1000, 0, -1, true),
		"slow":  engine.NewSource(&fakes.SlowSource{Data: data, Latency: 100 * time.Microsecond}),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Open(context.Background(), newEngine(), src, 0, 256<<10, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewSource(2))
			var got bytes.Buffer
			for {
				p := make([]byte, 1+rng.Intn(900<<10))
				n, err := io.ReadFull(s, p)
				got.Write(p[:n])
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("stream bytes differ (%d vs %d)", got.Len(), len(data))
			}
			for i := 0; i < 2; i++ {
				if n, err := s.Read(make([]byte, 10)); n != 0 || err != io.EOF {
					t.Fatalf("read after EOF: %d %v", n, err)
				}
			}
		})
	}
}

func TestSeek(t *testing.T) {
	data := fakes.Pattern(3<<20, 3)
	slow := &fakes.SlowSource{Data: data}
	var mu sync.Mutex
	fetched := map[int64]int{}
	slow.Hook = func(_ context.Context, off int64) { mu.Lock(); fetched[off]++; mu.Unlock() }
	refetched := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range fetched {
			n += c - 1
		}
		return n
	}
	s, err := Open(context.Background(), newEngine(), engine.NewSource(slow), 0, 128<<10, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, 1000)
	check := func(at int64) {
		t.Helper()
		n, err := io.ReadFull(s, buf)
		if err != nil || n != 1000 || !bytes.Equal(buf, data[at:at+1000]) {
			t.Fatalf("read at %d: %d %v", at, n, err)
		}
	}
	check(0)
	waitLanded(t, s)
	if pos, _ := s.Seek(300<<10, io.SeekStart); pos != 300<<10 { // forward, within read-ahead
		t.Fatal(pos)
	}
	check(300 << 10)
	if n := refetched(); n != 0 {
		t.Fatalf("forward seek within buffered data fetched %d pieces again", n)
	}
	if pos, _ := s.Seek(-5000, io.SeekCurrent); pos != 300<<10+1000-5000 { // backward
		t.Fatal(pos)
	}
	check(300<<10 + 1000 - 5000)
	if pos, _ := s.Seek(-1000, io.SeekEnd); pos != 3<<20-1000 {
		t.Fatal(pos)
	}
	check(3<<20 - 1000)
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("at end: %d %v", n, err)
	}
	if pos, _ := s.Seek(10, io.SeekStart); pos != 10 { // back from EOF
		t.Fatal(pos)
	}
	check(10)
	if pos, _ := s.Seek(5<<20, io.SeekStart); pos != 5<<20 { // past the end, like a file
		t.Fatal(pos)
	}
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("past end: %d %v", n, err)
	}
	if _, err := s.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("negative seek accepted")
	}
	if s.Tell() != 5<<20 {
		t.Fatal("failed seek moved the position")
	}
}

func TestShortReadsFillWholeBuffers(t *testing.T) {
	data := fakes.Pattern(1<<20, 4)
	s, err := Open(context.Background(), newEngine(), shortSource(data, 100, 0, -1, true), 0, 256<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, _ := s.ReadByte()
	if b != data[0] {
		t.Fatal("first byte")
	}
	// After one byte the whole first piece is in place, though the source
	// never returned more than 100 bytes a call.
	if got := len(s.data) + 1; got != maxPieceSize {
		t.Fatalf("first piece holds %d bytes, want %d", got, maxPieceSize)
	}
}

func TestTimeToFirstByte(t *testing.T) {
	const lat = 50 * time.Millisecond
	data := fakes.Pattern(1<<20, 5)
	// A serial source: the buffer's four pieces arrive one after another.
	src := shortSource(data, 1<<30, lat, -1, false)
	start := time.Now()
	s, err := Open(context.Background(), newEngine(), src, 0, 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ReadByte(); err != nil {
		t.Fatal(err)
	}
	ttfb := time.Since(start)
	if _, err := io.ReadFull(s, make([]byte, 1<<20-1)); err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	t.Logf("time to first byte %v, to the full buffer %v", ttfb, full)
	if ttfb > full/2 || full < 4*lat {
		t.Fatalf("the first byte waited for the whole buffer: %v vs %v", ttfb, full)
	}
}

func TestStickyError(t *testing.T) {
	data := fakes.Pattern(2<<20, 6)
	const failAt = 1<<20 + 12345
	s, err := Open(context.Background(), newEngine(), shortSource(data, 1<<30, 0, failAt, true), 0, 512<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := io.ReadAll(s)
	if err == nil || errs.KindOf(err) != errs.CallbackFailed {
		t.Fatalf("error: %v", err)
	}
	if !bytes.Equal(got, data[:failAt]) {
		t.Fatalf("bytes before the failure: %d, want %d", len(got), failAt)
	}
	for i := 0; i < 3; i++ {
		if _, err2 := s.Read(make([]byte, 1)); err2 == nil {
			t.Fatal("error not sticky")
		}
	}
}

func TestCloseDuringFill(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	gate := make(chan struct{})
	slow := &fakes.SlowSource{Data: fakes.Pattern(1<<20, 7), Gate: gate}
	s, err := Open(context.Background(), newEngine(), engine.NewSource(slow), 0, 256<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { _, err := s.Read(make([]byte, 10)); errc <- err }()
	time.Sleep(10 * time.Millisecond)
	s.Close()
	if err := <-errc; errs.KindOf(err) != errs.Closed {
		t.Fatalf("read blocked across close: %v", err)
	}
	close(gate)
	s.Close()
	if _, err := s.Read(make([]byte, 1)); errs.KindOf(err) != errs.Closed {
		t.Fatalf("read after close: %v", err)
	}
}

func TestStress(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := fakes.Pattern(4<<20, 8)
	e := newEngine()
	rng := rand.New(rand.NewSource(9))
	var reads atomic.Int64
	for round := 0; round < 30; round++ {
		src := engine.NewSource(&fakes.SlowSource{Data: data, Latency: time.Duration(rng.Intn(200)) * time.Microsecond})
		s, err := Open(context.Background(), e, src, rng.Int63n(int64(len(data))), 1+rng.Intn(300<<10), 1+rng.Intn(5))
		if err != nil {
			t.Fatal(err)
		}
		for op := 0; op < 200; op++ {
			switch rng.Intn(10) {
			case 0:
				off := rng.Int63n(int64(len(data)) + 10)
				pos, err := s.Seek(off, io.SeekStart)
				if errs.KindOf(err) == errs.Closed {
					break
				}
				if err != nil || pos != off {
					t.Fatalf("seek: %d %v", pos, err)
				}
			case 1:
				if round%3 == 0 {
					go s.Close()
				}
			default:
				at := s.Tell()
				p := make([]byte, rng.Intn(100<<10))
				n, err := io.ReadFull(s, p)
				if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
					if errs.KindOf(err) == errs.Closed {
						break
					}
					t.Fatal(err)
				}
				if at < int64(len(data)) && !bytes.Equal(p[:n], data[at:at+int64(n)]) {
					t.Fatalf("bytes at %d differ", at)
				}
				reads.Add(1)
			}
		}
		s.Close()
	}
	t.Logf("%d reads", reads.Load())
}

// waitLanded waits until every piece issued for s's buffers has ended. A
// fixed 50 ms sleep was not enough on a loaded machine (a clean clone's
// make test beside other work: 256 KiB had landed, not 1 MiB).
func waitLanded(t *testing.T, s *Stream) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		landed := true
		for _, sl := range s.slots {
			for _, f := range sl.futs[:sl.limit] {
				landed = landed && f.Done()
			}
		}
		if landed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("pieces still running after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReadAvailable(t *testing.T) {
	data := fakes.Pattern(3<<20, 10)
	gate := make(chan struct{})
	slow := &fakes.SlowSource{Data: data, Gate: gate}
	s, err := Open(context.Background(), newEngine(), engine.NewSource(slow), 0, 1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	close(gate)
	waitLanded(t, s) // every piece of both buffers
	p := make([]byte, 3<<20)
	n, err := s.ReadAvailable(p)
	if err != nil || n != 1<<20 || !bytes.Equal(p[:n], data[:n]) {
		t.Fatalf("landed bytes in one call: %d %v (want the first buffer, 1 MiB)", n, err)
	}
	var got []byte
	got = append(got, p[:n]...)
	for {
		n, err := s.ReadAvailable(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("bytes differ")
	}
}
