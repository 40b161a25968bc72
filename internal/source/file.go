package source

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/colio-dev/colio/internal/errs"
)

// File reads a local file with pread. It holds a file descriptor, not an
// *os.File, so that reads never go through the Go poller and a read is one
// system call.
type File struct {
	fd   int
	path string
}

// OpenFile opens path for reading.
func OpenFile(path string) (*File, error) {
	if path == "" {
		return nil, errs.New(errs.Invalid, "colio: empty path")
	}
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.IO, err, "colio: open %q", path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, errs.Wrap(errs.IO, err, "colio: stat %q", path)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		unix.Close(fd)
		return nil, errs.New(errs.Invalid, "colio: %q is a directory", path)
	}
	return &File{fd: fd, path: path}, nil
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

func (f *File) Size() (int64, error) {
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
