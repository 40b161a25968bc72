package readahead

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/colio-dev/colio/internal/errs"
)

// A stream's buffers are allocated at open, bufSize x depth bytes, and
// both numbers come from callers. Go cannot report a failed allocation: it
// aborts the process, and with overcommit the abort comes later still, when
// the read-ahead fills the pages. So a stream whose buffers would take more
// than half of the machine's memory is refused at open with an ordinary
// error, the way a failed C allocation is reported (ENOSPC, errno ENOMEM).
var memoryLimit = sync.OnceValue(func() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 1 << 62 // unknown: no bound beyond the caller's own checks
	}
	return int64(si.Totalram) * int64(si.Unit) / 2
})

func checkMemory(bufSize, depth int) error {
	total := int64(bufSize) * int64(depth)
	if limit := memoryLimit(); total > limit {
		return &errs.Error{
			Kind: errs.NoSpace,
			Msg: fmt.Sprintf("colio: a stream of %d buffers of %d bytes needs %s, more than half of "+
				"this machine's memory (%s): use a smaller buffer_size or depth",
				depth, bufSize, gib(total), gib(2*limit)),
			Errno: syscall.ENOMEM,
		}
	}
	return nil
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
