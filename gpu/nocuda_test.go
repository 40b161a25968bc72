//go:build !cuda

package gpu_test

import (
	"strings"
	"testing"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/internal/errs"
)

// The default build has no CUDA: device calls fail with NotSupported and a
// message that says how to get the CUDA build.
func TestNoCUDABuild(t *testing.T) {
	if gpu.HasCUDA() {
		t.Fatal("HasCUDA() in a build without the cuda tag")
	}
	m, err := gpu.Default()
	if m != nil || !kindIs(err, errs.NotSupported) {
		t.Fatalf("Default() = %v, %v; want a NotSupported error", m, err)
	}
	for _, want := range []string{"without CUDA", "libcolio_cuda.so", "scripts/fetch-cuda-headers.sh", "build.sh", "README"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}
	if (gpu.Stats() != gpu.Counters{}) {
		t.Errorf("Stats() = %+v in a build without CUDA", gpu.Stats())
	}
}
