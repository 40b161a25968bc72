//go:build !cuda

package gpu

import "github.com/colio-dev/colio/internal/errs"

// NoCUDAMessage is the error message of every device call in a build
// without CUDA.
const NoCUDAMessage = "colio: this library was built without CUDA, so it cannot read into or write from device memory; " +
	"use the CUDA build, libcolio_cuda.so: run scripts/fetch-cuda-headers.sh (or install the CUDA toolkit) " +
	"and ./build.sh, which builds it beside libcolio.so when it finds cuda.h (README, \"GPU\"); " +
	"the Python package loads it by itself where a GPU is usable"

// HasCUDA reports whether this build has the CUDA device path.
func HasCUDA() bool { return false }

func cudaDevice() (Device, error) { return nil, errs.New(errs.NotSupported, NoCUDAMessage) }
