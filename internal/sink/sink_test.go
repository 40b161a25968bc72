package sink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestMemoryConcurrentGrowth(t *testing.T) {
	m := NewMemory()
	var wg sync.WaitGroup
	want := make([]byte, 64*1000)
	for i := 0; i < 64; i++ {
		chunk := bytes.Repeat([]byte{byte(i)}, 1000)
		copy(want[i*1000:], chunk)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m.WriteAt(context.Background(), chunk, int64(i*1000))
		}(i)
	}
	wg.Wait()
	if !bytes.Equal(m.Bytes(), want) {
		t.Fatal("concurrent writes with growth lost bytes")
	}
}

func TestFileModes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if _, err := OpenFile(p, 0, 0); err == nil {
		t.Fatal("opened a missing file without Create")
	}
	f, err := OpenFile(p, Create|Truncate, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(context.Background(), []byte("0123456789"), 0)
	f.Close()
	f, _ = OpenFile(p, Append, 0)
	if f.AppendStart() != 10 {
		t.Fatalf("append start %d", f.AppendStart())
	}
	f.WriteAt(context.Background(), []byte("ab"), 10)
	f.Close()
	f, _ = OpenFile(p, 0, 0) // r+: no truncation
	f.WriteAt(context.Background(), []byte("X"), 3)
	f.Flush(context.Background(), true)
	f.Close()
	got, _ := os.ReadFile(p)
	if string(got) != "012X456789ab" {
		t.Fatalf("file: %q", got)
	}
}
