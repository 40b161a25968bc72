package sink

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/colio-dev/colio/internal/errs"
)

// Flags choose how a file sink opens its file.
type Flags int

const (
	// Create makes the file if it does not exist.
	Create Flags = 1 << iota
	// Truncate empties an existing file.
	Truncate
	// Append starts appends at the current end of the file instead of 0.
	// The file is never opened with O_APPEND: Linux pwrite ignores the
	// offset there, and colio reserves offsets itself.
	Append
)

// File writes a local file with pwrite at explicit offsets.
type File struct {
	fd    int
	path  string
	start int64
}

// OpenFile opens path for writing.
func OpenFile(path string, flags Flags, perm uint32) (*File, error) {
	if path == "" {
		return nil, errs.New(errs.Invalid, "colio: empty path")
	}
	if flags&^(Create|Truncate|Append) != 0 {
		return nil, errs.New(errs.Invalid, "colio: unknown sink flags %#x", int(flags))
	}
	if flags&Truncate != 0 && flags&Append != 0 {
		return nil, errs.New(errs.Invalid, "colio: truncate and append together make no sense")
	}
	mode := unix.O_WRONLY | unix.O_CLOEXEC
	if flags&Create != 0 {
		mode |= unix.O_CREAT
	}
	if flags&Truncate != 0 {
		mode |= unix.O_TRUNC
	}
	if perm == 0 {
		perm = 0o644
	}
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, mode, perm)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.IO, err, "colio: open %q for writing", path)
	}
	f := &File{fd: fd, path: path}
	if flags&Append != 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, errs.Wrap(errs.IO, err, "colio: stat %q", path)
		}
		f.start = st.Size
	}
	return f, nil
}

func (f *File) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pwrite(f.fd, p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, errs.Wrap(errs.IO, err, "colio: write %q at offset %d", f.path, off+int64(done))
		}
		if n == 0 {
			return done, errs.New(errs.IO, "colio: write %q at offset %d made no progress", f.path, off+int64(done))
		}
		done += n
	}
	return done, nil
}

func (f *File) Flush(_ context.Context, fsync bool) error {
	if !fsync {
		return nil // pwrite already handed the bytes to the kernel
	}
	for {
		err := unix.Fsync(f.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return errs.Wrap(errs.IO, err, "colio: fsync %q", f.path)
		}
		return nil
	}
}

func (f *File) AppendStart() int64 { return f.start }
func (f *File) Traits() Traits     { return Traits{Fast: true, Concurrent: true} }

// Fd is the file's descriptor, for the C API's fast path (capi/fastpath.c),
// which the engine unregisters before Close.
func (f *File) Fd() int { return f.fd }

func (f *File) Close() error {
	if err := unix.Close(f.fd); err != nil {
		return errs.Wrap(errs.IO, err, "colio: close %q", f.path)
	}
	return nil
}
