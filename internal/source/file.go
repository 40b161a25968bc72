package source

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/colio-dev/colio/internal/errs"
)

// File reads a local file with pread. It holds a file descriptor, not an
// *os.File, so that reads never go through the Go poller and a read is one
// system call.
//
// Only regular files and block devices are random-access sources: a FIFO,
// a character device or a socket has no offsets, and the files of /proc,
// /sys and their kin report a size that is not their content (see
// checkRandomAccess). Those are refused at open instead of reading as
// empty.
type File struct {
	fd    int
	path  string
	block bool // a block device: st_size is 0, the size comes from lseek
}

// OpenFile opens path for reading.
func OpenFile(path string) (*File, error) {
	if path == "" {
		return nil, errs.New(errs.Invalid, "colio: empty path")
	}
	// Look before opening: opening a FIFO blocks until a writer comes, and
	// opening some character devices has side effects (a tape rewinds).
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err == nil {
		if err := checkRandomAccess(path, &st, -1); err != nil {
			return nil, err
		}
	}
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.IO, err, "colio: open %q", path)
	}
	// The path may have changed between the look and the open: check what
	// was opened, then drop O_NONBLOCK (it was only there for that window).
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, errs.Wrap(errs.IO, err, "colio: stat %q", path)
	}
	if err := checkRandomAccess(path, &st, fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return nil, errs.Wrap(errs.IO, err, "colio: fcntl %q", path)
	}
	return &File{fd: fd, path: path, block: st.Mode&unix.S_IFMT == unix.S_IFBLK}, nil
}

// Fd returns the descriptor, for the C API's fast path. It stays valid
// until Close.
func (f *File) Fd() int { return f.fd }

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

func (f *File) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pread(f.fd, p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, errs.Wrap(errs.IO, err, "colio: read %q at offset %d", f.path, off+int64(done))
		}
		if n == 0 {
			break // end of file
		}
		done += n
	}
	return done, nil
}

// Size is the file's current size: a file that grows or shrinks after the
// open is seen as it is now, at every request.
func (f *File) Size() (int64, error) {
	if f.block {
		// lseek moves the descriptor's offset, which pread never uses.
		n, err := unix.Seek(f.fd, 0, unix.SEEK_END)
		if err != nil {
			return 0, errs.Wrap(errs.IO, err, "colio: size of block device %q", f.path)
		}
		return n, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return 0, errs.Wrap(errs.IO, err, "colio: stat %q", f.path)
	}
	return st.Size, nil
}

func (f *File) Traits() Traits { return Traits{Fast: true, Concurrent: true} }

func (f *File) Close() error {
	if err := unix.Close(f.fd); err != nil {
		return errs.Wrap(errs.IO, err, "colio: close %q", f.path)
	}
	return nil
}
