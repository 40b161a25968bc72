package source

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestFileReadAtEnd(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := []byte("hello, world")
	os.WriteFile(p, data, 0o644)
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	n, err := f.ReadAt(context.Background(), buf, 7)
	if err != nil || n != 5 || !bytes.Equal(buf[:n], data[7:]) {
		t.Fatalf("crossing read: %d %v", n, err)
	}
	if n, err := f.ReadAt(context.Background(), buf, 12); n != 0 || err != nil {
		t.Fatalf("read at end: %d %v", n, err)
	}
	if s, _ := f.Size(); s != 12 {
		t.Fatal(s)
	}
}

func TestCallbackRejectsBadCounts(t *testing.T) {
	c, _ := FromCallbacks(CallbackOptions{
		Read: func(_ context.Context, p []byte, _ int64) (int, error) { return len(p) + 1, nil },
		Size: func() (int64, error) { return 10, nil },
	})
	if _, err := c.ReadAt(context.Background(), make([]byte, 4), 0); err == nil {
		t.Fatal("a callback claiming more bytes than asked was accepted")
	}
}
