// Command capi is libcolio.so: the C ABI of colio, built with
// -buildmode=c-shared (see build.sh).
//
// The exported C functions (colio_*) are written in C, in the api_*.c
// files: each checks the fork guard before it enters Go, then calls the Go
// function exported here under a colioGo* name. Only the colio_* functions
// of include/colio.h leave the library (colio.map); cgo's own exports stay
// internal.
//
// Rules this package keeps:
//   - No Go pointer crosses into C. Handles are integer tokens from a
//     table (handles.go); buffers are the caller's C memory, wrapped with
//     unsafe.Slice; strings handed to C are copied into C memory.
//   - Every export recovers panics into COLIO_EINTERNAL (errors.go).
//   - User C callbacks are called through C shims (callbacks.c), which
//     carry the pool level so that callbacks may re-enter colio.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -std=gnu11 -Wall -Wextra -Wno-unused-parameter
#cgo LDFLAGS: -lpthread
*/
import "C"

// main is required by -buildmode=c-shared and never runs.
func main() {}
