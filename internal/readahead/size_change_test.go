package readahead

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/source"
)

func openPath(t *testing.T, p string) *engine.Source {
	t.Helper()
	f, err := source.OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := engine.NewSource(f)
	t.Cleanup(func() { s.Close() })
	return s
}

// readAll reads to io.EOF, returning what came before the first error.
func readAll(s *Stream) ([]byte, error) {
	var out []byte
	buf := make([]byte, 7000)
	for {
		n, err := s.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// Before issue 13.9 io.EOF was sticky: a file that grew after the stream
// reached its end gave no new bytes. Now EOF looks at the size again, as
// read(2) does, including across slots whose fill found nothing.
func TestGrowingFileIsReadOn(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	p := filepath.Join(t.TempDir(), "grow.bin")
	data := fakes.Pattern(3<<20+123, 9)
	cut := []int{1000, 1001, 300_000, 2<<20 + 5, len(data)}
	os.WriteFile(p, data[:cut[0]], 0o644)
	s, err := Open(nil, newEngine(), openPath(t, p), 0, 64<<10, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []byte
	for i := range cut {
		if i > 0 {
			h, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			h.Write(data[cut[i-1]:cut[i]])
			h.Close()
		}
		b, err := readAll(s)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got = append(got, b...)
		if !bytes.Equal(got, data[:cut[i]]) {
			t.Fatalf("step %d: %d bytes, want the first %d", i, len(got), cut[i])
		}
	}
}

// Before issue 13.9 a stream whose file was truncated under it went on
// handing out the bytes it had read ahead (and a fill cut short by the
// truncation ended the stream quietly): stale bytes of a file that no
// longer has them. Now the read that reaches them fails, naming the file's
// new size; what came before is the file's true prefix.
func TestTruncatedFileIsAnError(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	data := fakes.Pattern(8<<20, 4)
	const keep = 300_000
	for _, depth := range []int{1, 4} {
		p := filepath.Join(t.TempDir(), "trunc.bin")
		os.WriteFile(p, data, 0o644)
		s, err := Open(nil, newEngine(), openPath(t, p), 0, 1<<20, depth)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 10)
		if _, err := io.ReadFull(s, first); err != nil {
			t.Fatal(err)
		}
		for _, sl := range s.slots { // let the read-ahead land: stale bytes in place
			for i := 0; i < sl.limit; i++ {
				<-sl.futs[i].Chan()
			}
		}
		if err := os.Truncate(p, keep); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(s)
		got = append(first, got...)
		if err == nil {
			t.Fatalf("depth %d: read %d bytes of a file truncated to %d without an error", depth, len(got), keep)
		}
		if errs.KindOf(err) != errs.IO || !bytes.Contains([]byte(err.Error()), []byte("300000")) {
			t.Fatalf("depth %d: %v (kind %v)", depth, err, errs.KindOf(err))
		}
		if len(got) > keep || !bytes.Equal(got, data[:len(got)]) {
			t.Fatalf("depth %d: %d bytes before the error, not a prefix of the %d left", depth, len(got), keep)
		}
		s.Close()
	}
}

// Before the fix a 64-bit overflow of SEEK_CUR/SEEK_END said "seek to
// negative offset -9223372036854775808"; it is now its own error.
func TestSeekOverflow(t *testing.T) {
	data := fakes.Pattern(1000, 2)
	s, err := Open(nil, newEngine(), fileSource(t, data), 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Seek(math.MaxInt64-10, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off    int64
		whence int
	}{{100, io.SeekCurrent}, {math.MaxInt64, io.SeekEnd}} {
		_, err := s.Seek(c.off, c.whence)
		if err == nil || errs.KindOf(err) != errs.Invalid || bytes.Contains([]byte(err.Error()), []byte("negative")) ||
			!bytes.Contains([]byte(err.Error()), []byte("overflow")) {
			t.Fatalf("seek(%d, %d): %v", c.off, c.whence, err)
		}
	}
	if _, err := s.Seek(-5, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	b, err := readAll(s)
	if err != nil || !bytes.Equal(b, data[995:]) {
		t.Fatalf("after the refused seeks: %q %v", b, err)
	}
	if _, err := s.Seek(-1, io.SeekStart); err == nil || !errors.Is(err, errs.ErrInvalid) {
		t.Fatalf("seek(-1): %v", err)
	}
}
