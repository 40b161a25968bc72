package source

import (
	"golang.org/x/sys/unix"

	"github.com/colio-dev/colio/internal/errs"
)

// pseudoFS names the file systems whose regular files are generated when
// read: st_size is 0 (/proc) or a page (/sys) whatever the content, and
// pread at an offset is not a slice of a fixed file. A random-access
// source over one would read as empty or come back short, so they are
// refused like FIFOs.
var pseudoFS = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.PSTOREFS_MAGIC:      "pstore",
	unix.BPF_FS_MAGIC:        "bpf",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	unix.SELINUX_MAGIC:       "selinuxfs",
	unix.SMACK_MAGIC:         "smackfs",
}

// refuseMsg ends every refusal with what to use instead.
const refuseMsg = "colio: %q is %s: a random-access source needs a regular file or a block device " +
	"(read it as a stream with colio.open or open())"

// checkRandomAccess refuses what a random-access source cannot read: a
// directory (EISDIR, as open() reports it), and anything but a regular
// file or a block device, or a regular file on a pseudo file system
// (ESPIPE, "illegal seek": offsets mean nothing there). fd < 0 means the
// file is not open yet and the file system is checked from the path.
func checkRandomAccess(path string, st *unix.Stat_t, fd int) error {
	var what string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		var fs unix.Statfs_t
		var err error
		if fd >= 0 {
			err = unix.Fstatfs(fd, &fs)
		} else {
			err = unix.Statfs(path, &fs)
		}
		if err != nil {
			return nil // no verdict: read it as a regular file
		}
		name, ok := pseudoFS[int64(fs.Type)]
		if !ok {
			return nil
		}
		what = "a file of the " + name + " pseudo file system (its size is not its content)"
	case unix.S_IFBLK:
		return nil
	case unix.S_IFDIR:
		e := errs.New(errs.Invalid, "colio: %q is a directory", path)
		e.Errno = unix.EISDIR
		return e
	case unix.S_IFIFO:
		what = "a FIFO"
	case unix.S_IFCHR:
		what = "a character device"
	case unix.S_IFSOCK:
		what = "a socket"
	default:
		what = "not a regular file"
	}
	e := errs.New(errs.NotSupported, refuseMsg, path, what)
	e.Errno = unix.ESPIPE
	return e
}
