package gpu

// Context, Stream and Event are opaque device handles (CUcontext, CUstream
// and CUevent in the CUDA build; small integers in the fake device).
type (
	Context uintptr
	Stream  uintptr
	Event   uintptr
)

// Special stream handles, with the values that __cuda_array_interface__
// (version 3) and the CUDA driver API give them.
const (
	// NoStream asks for no ordering.
	NoStream Stream = 0
	// LegacyStream is the legacy default stream (CU_STREAM_LEGACY).
	LegacyStream Stream = 1
	// PerThreadStream is the calling thread's default stream
	// (CU_STREAM_PER_THREAD).
	PerThreadStream Stream = 2
)

// PointerInfo describes the device allocation a pointer lies in.
type PointerInfo struct {
	Ctx  Context // the context it was allocated in (or the primary context of its device)
	Base uintptr // start of the allocation
	Size int64   // bytes in the allocation
}

// Device is the part of the CUDA driver API that the pipeline uses. The
// CUDA build implements it with gorgonia.org/cu plus a little cgo
// (cuda.go); tests implement it with a fake whose call log they check
// (gpu/fakedev).
//
// Calls marked "current" need the handle's context current on the calling
// OS thread: the pipeline pushes it (PushContext) on a goroutine locked to
// its thread (runtime.LockOSThread) and pops it before unlocking.
type Device interface {
	// PointerInfo finds the allocation and context of a device pointer
	// (cuPointerGetAttribute). It needs no current context.
	PointerInfo(ptr uintptr) (PointerInfo, error)
	// PushContext makes c current on the calling thread (cuCtxPushCurrent);
	// PopContext restores the previous one (cuCtxPopCurrent).
	PushContext(c Context) error
	PopContext() error

	// HostAlloc returns size bytes of pinned, portable host memory
	// (cuMemHostAlloc); HostFree frees it. Current.
	HostAlloc(size int) ([]byte, error)
	HostFree(p []byte) error

	// Streams. Current.
	StreamCreate() (Stream, error)
	StreamDestroy(s Stream) error
	StreamSynchronize(s Stream) error
	// StreamWaitEvent makes future work on s wait for e's last record.
	StreamWaitEvent(s Stream, e Event) error

	// Events (created without timing). Current.
	EventCreate() (Event, error)
	EventDestroy(e Event) error
	EventRecord(e Event, s Stream) error
	EventSynchronize(e Event) error
	// EventQuery reports whether e's last record has completed; it never
	// blocks.
	EventQuery(e Event) (bool, error)

	// Asynchronous copies on s. The host side must be pinned memory from
	// HostAlloc. Current.
	CopyHtoDAsync(dst uintptr, src []byte, s Stream) error
	CopyDtoHAsync(dst []byte, src uintptr, s Stream) error
}
