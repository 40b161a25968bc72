//go:build cuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

// What gorgonia.org/cu v0.9.6 lacks: pinned host allocation, and
// cuPointerGetAttribute with a real output pointer.
static CUresult colio_mem_host_alloc(void **p, size_t n) {
	return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE);
}

// colio_pointer_info fills what colio needs to know about a device
// pointer. ctx is NULL where the driver reports no context (memory mapped
// with the virtual memory API); ordinal then names the device.
static CUresult colio_pointer_info(CUdeviceptr p, CUcontext *ctx, int *ordinal,
                                   CUdeviceptr *base, size_t *size) {
	unsigned int memtype = 0;
	CUresult r = cuPointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
	if (r != CUDA_SUCCESS) return r;
	*ctx = NULL;
	if (cuPointerGetAttribute(ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p) != CUDA_SUCCESS) *ctx = NULL;
	r = cuPointerGetAttribute(ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
	if (r != CUDA_SUCCESS) return r;
	r = cuPointerGetAttribute(base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
	if (r != CUDA_SUCCESS) return r;
	return cuPointerGetAttribute(size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
}

static const char *colio_cu_error_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == NULL) return "CUDA_ERROR_UNKNOWN";
	return s;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// HasCUDA reports whether this build has the CUDA device path. A process
// that loaded it has already passed cuInit: gorgonia.org/cu calls it at
// package initialisation and exits the process if it fails.
func HasCUDA() bool { return true }

// DriverVersion returns the CUDA driver's version (e.g. 12040), or -1.
func DriverVersion() int { return cu.Version() }

func cudaDevice() (Device, error) { return &cudaDev{primary: map[int]Context{}}, nil }

// gorgonia.org/cu keeps each handle as a struct holding one C pointer;
// colio keeps the same pointer as a uintptr. These fail to compile if the
// layouts ever differ.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(cu.CUContext{})-unsafe.Sizeof(uintptr(0))]
	_ = [1]struct{}{}[unsafe.Sizeof(cu.Stream{})-unsafe.Sizeof(uintptr(0))]
	_ = [1]struct{}{}[unsafe.Sizeof(cu.Event{})-unsafe.Sizeof(uintptr(0))]
)

func cuCtx(c Context) cu.CUContext { return *(*cu.CUContext)(unsafe.Pointer(&c)) }
func cuStream(s Stream) cu.Stream  { return *(*cu.Stream)(unsafe.Pointer(&s)) }
func cuEvent(e Event) cu.Event     { return *(*cu.Event)(unsafe.Pointer(&e)) }

type cudaDev struct {
	mu      sync.Mutex
	primary map[int]Context // retained primary contexts, by device ordinal
}

func cuErr(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s (%d)", C.GoString(C.colio_cu_error_name(r)), int(r))
}

func (d *cudaDev) PointerInfo(ptr uintptr) (PointerInfo, error) {
	var (
		ctx     C.CUcontext
		ordinal C.int
		base    C.CUdeviceptr
		size    C.size_t
	)
	if err := cuErr(C.colio_pointer_info(C.CUdeviceptr(ptr), &ctx, &ordinal, &base, &size)); err != nil {
		return PointerInfo{}, err
	}
	info := PointerInfo{Base: uintptr(base), Size: int64(size)}
	if ctx != nil {
		info.Ctx = Context(uintptr(unsafe.Pointer(ctx)))
		return info, nil
	}
	// No context attribute: use the device's primary context, as CuPy and
	// PyTorch do. It is retained once and kept for the process.
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.primary[int(ordinal)]; ok {
		info.Ctx = c
		return info, nil
	}
	pc, err := cu.Device(ordinal).RetainPrimaryCtx()
	if err != nil {
		return PointerInfo{}, fmt.Errorf("retaining the primary context of device %d: %w", int(ordinal), err)
	}
	c := *(*Context)(unsafe.Pointer(&pc))
	d.primary[int(ordinal)] = c
	info.Ctx = c
	return info, nil
}

func (d *cudaDev) PushContext(c Context) error { return cu.PushCurrentCtx(cuCtx(c)) }

func (d *cudaDev) PopContext() error {
	_, err := cu.PopCurrentCtx()
	return err
}

func (d *cudaDev) HostAlloc(size int) ([]byte, error) {
	var p unsafe.Pointer
	if err := cuErr(C.colio_mem_host_alloc(&p, C.size_t(size))); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), size), nil
}

func (d *cudaDev) HostFree(p []byte) error {
	return cu.MemFreeHost(unsafe.Pointer(unsafe.SliceData(p)))
}

func (d *cudaDev) StreamCreate() (Stream, error) {
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return 0, err
	}
	return *(*Stream)(unsafe.Pointer(&s)), nil
}

func (d *cudaDev) StreamDestroy(s Stream) error {
	cs := cuStream(s)
	return cs.Destroy()
}

func (d *cudaDev) StreamSynchronize(s Stream) error { return cuStream(s).Synchronize() }

func (d *cudaDev) StreamWaitEvent(s Stream, e Event) error { return cuStream(s).Wait(cuEvent(e), 0) }

func (d *cudaDev) EventCreate() (Event, error) {
	e, err := cu.MakeEvent(cu.DisableTiming)
	if err != nil {
		return 0, err
	}
	return *(*Event)(unsafe.Pointer(&e)), nil
}

func (d *cudaDev) EventDestroy(e Event) error {
	ce := cuEvent(e)
	return cu.DestroyEvent(&ce)
}

func (d *cudaDev) EventRecord(e Event, s Stream) error { return cuEvent(e).Record(cuStream(s)) }

func (d *cudaDev) EventSynchronize(e Event) error { return cuEvent(e).Synchronize() }

func (d *cudaDev) EventQuery(e Event) (bool, error) {
	err := cuEvent(e).Query()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, cu.NotReady):
		return false, nil
	}
	return false, err
}

func (d *cudaDev) CopyHtoDAsync(dst uintptr, src []byte, s Stream) error {
	return cu.MemcpyHtoDAsync(cu.DevicePtr(dst), unsafe.Pointer(unsafe.SliceData(src)), int64(len(src)), cuStream(s))
}

func (d *cudaDev) CopyDtoHAsync(dst []byte, src uintptr, s Stream) error {
	return cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(dst)), cu.DevicePtr(src), int64(len(dst)), cuStream(s))
}
