package source

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/colio-dev/colio/internal/errs"
)

// Before issue 13.8 every one of these opened, reported size 0 and read as
// empty (and the FIFO blocked the open until a writer came): a random-access
// source now refuses them with NotSupported and ESPIPE, naming what the path is.
func TestOpenFileRefusesWhatHasNoOffsets(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"/proc/self/status": "proc",
		"/proc/version":     "proc",
		"/dev/zero":         "character device",
		"/dev/null":         "character device",
		fifo:                "FIFO",
	}
	if _, err := os.Stat("/sys/kernel/mm"); err == nil {
		cases["/sys/kernel/mm/transparent_hugepage/enabled"] = "sysfs"
	}
	for path, what := range cases {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		done := make(chan error, 1)
		go func() {
			f, err := OpenFile(path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second): // a hang watchdog, not a timing check
			t.Fatalf("%s: OpenFile hangs", path)
		}
		if err == nil {
			t.Errorf("%s: opened as a random-access source", path)
			continue
		}
		if errs.KindOf(err) != errs.NotSupported || errs.ErrnoOf(err) != syscall.ESPIPE {
			t.Errorf("%s: kind %v errno %v: %v", path, errs.KindOf(err), errs.ErrnoOf(err), err)
		}
		if !bytes.Contains([]byte(err.Error()), []byte(what)) || !bytes.Contains([]byte(err.Error()), []byte("regular file")) {
			t.Errorf("%s: message does not say what it is (%s): %v", path, what, err)
		}
	}
}

// Before issue 13.10 a directory was Invalid with no errno, so Python could
// not raise IsADirectoryError; the kind stays Invalid (COLIO_EINVAL in C),
// the errno is now EISDIR.
func TestOpenFileDirectoryCarriesEISDIR(t *testing.T) {
	_, err := OpenFile(t.TempDir())
	if err == nil || errs.KindOf(err) != errs.Invalid || errs.ErrnoOf(err) != syscall.EISDIR {
		t.Fatalf("directory: kind %v errno %v: %v", errs.KindOf(err), errs.ErrnoOf(err), err)
	}
}

// An empty regular file is still a source (of 0 bytes), and regular files
// read as before.
func TestOpenFileRegularStillOpens(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	f, err := OpenFile(empty)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Size(); n != 0 {
		t.Fatal(n)
	}
	f.Close()
}

// A block device reports st_size 0; its size must come from the device.
// Compared with a plain read of the device, made without colio.
func TestOpenFileBlockDeviceSize(t *testing.T) {
	dev, want := loopDevice(t)
	f, err := OpenFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.Size(); err != nil || n != want {
		t.Fatalf("%s: size %d %v, want %d", dev, n, err, want)
	}
	ref := make([]byte, 4096)
	h, _ := os.Open(dev)
	defer h.Close()
	if _, err := h.ReadAt(ref, 0); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	got := make([]byte, 4096)
	if n, err := f.ReadAt(context.Background(), got, 0); err != nil || n != 4096 || !bytes.Equal(got, ref) {
		t.Fatalf("%s: read %d %v, bytes equal %v", dev, n, err, bytes.Equal(got, ref))
	}
}

// loopDevice attaches a loop device over a new 8 MiB image of random bytes
// (root can, as the CI runs; detached at the end), else falls back to a
// readable block device of the machine. It skips only where neither exists.
func loopDevice(t *testing.T) (string, int64) {
	img := filepath.Join(t.TempDir(), "blk.img")
	data := make([]byte, 8<<20)
	rand.New(rand.NewSource(7)).Read(data)
	if err := os.WriteFile(img, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("losetup", "-f", "--show", img).Output(); err == nil {
		dev := strings.TrimSpace(string(out))
		t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
		return dev, int64(len(data))
	}
	for _, p := range []string{"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/zram0", "/dev/loop0"} {
		h, err := os.Open(p)
		if err != nil {
			continue
		}
		n, err := h.Seek(0, 2)
		h.Close()
		if err == nil && n > 0 {
			return p, n
		}
	}
	t.Skip("no loop device could be attached (losetup needs root) and no readable block device has a size")
	return "", 0
}
