package source

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue 15 goal 1: does one io_uring_enter per chunk of small reads cost
// less per read than a pread each? 1000 x 4 KiB at random offsets of a
// warm 64 MiB file, on one goroutine; ns/op is per 1000 reads.
func BenchmarkWarmSmallReads(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f")
	data := make([]byte, 64<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	const count, size = 1000, 4 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	offs := make([]int64, count)
	bufs := make([][]byte, count)
	for i := range offs {
		offs[i] = rng.Int64N(int64(len(data) - size))
		bufs[i] = make([]byte, size)
	}
	b.Run("pread", func(b *testing.B) {
		for b.Loop() {
			for i, o := range offs {
				if n, err := unix.Pread(fd, bufs[i], o); n != size || err != nil {
					b.Fatal(n, err)
				}
			}
		}
	})
	// The floor: the 4 KiB copies alone, from memory.
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			for i, o := range offs {
				copy(bufs[i], data[o:o+size])
			}
		}
	})
	variants := []struct {
		name  string
		flags uint32
		lock  bool // SINGLE_ISSUER needs one thread: an upper bound, not usable from a pool
	}{{"", 0, false}, {"coop", ringSetupCoopTaskrun | ringSetupSubmitAll, false},
		{"single", ringSetupSingleIssuer | ringSetupDeferTaskrun, true}}
	for _, v := range variants {
		for _, chunk := range []int{16, 32, 64} {
			b.Run(fmt.Sprintf("uring%s%d", v.name, chunk), func(b *testing.B) {
				if v.lock {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				benchRing(b, uint32(chunk), v.flags, fd, bufs, offs, data)
			})
		}
	}
}

// benchRing reads the ranges in chunks of chunk through one ring, checks
// the bytes once against the file's, then times them.
func benchRing(b *testing.B, chunk, flags uint32, fd int, bufs [][]byte, offs []int64, want []byte) {
	r, err := newRingFlags(chunk, flags)
	if err != nil {
		b.Skip("io_uring unavailable:", err)
	}
	defer r.close()
	readAll := func() {
		for s := 0; s < len(bufs); s += int(chunk) {
			e := min(s+int(chunk), len(bufs))
			res, err := r.readAll(fd, bufs[s:e], offs[s:e])
			if err != nil {
				b.Fatal(err)
			}
			for k, n := range res {
				if int(n) != len(bufs[s+k]) {
					b.Fatalf("read %d: %d bytes", s+k, n)
				}
			}
		}
	}
	for i := range bufs {
		clear(bufs[i])
	}
	readAll()
	for i, o := range offs {
		if !bytes.Equal(bufs[i], want[o:o+int64(len(bufs[i]))]) {
			b.Fatalf("read %d at %d: wrong bytes", i, o)
		}
	}
	for b.Loop() {
		readAll()
	}
}
