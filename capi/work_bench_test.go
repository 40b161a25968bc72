//go:build colio_cgo_bench

package main

import (
	"testing"

	"github.com/colio-dev/colio/internal/fakes"
)

// BenchmarkWorkRoundTrip: see workRoundTrips (work_bench.go).
func BenchmarkWorkRoundTrip(b *testing.B) { workRoundTrips(b, fakes.Pattern(4<<16, 9)) }
