package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
)

// The engine reads COLIO_* through the C library's getenv, so that a
// variable a C program sets with setenv after loading libcolio, but before
// its first colio call, is honoured (Go's os.Getenv only knows the
// environment copied when the runtime started, at load time).
func init() {
	engine.SetEnvLookup(func(key string) (string, bool) {
		ck := C.CString(key)
		defer C.free(unsafe.Pointer(ck))
		v := C.getenv(ck)
		if v == nil {
			return "", false
		}
		return C.GoString(v), true
	})
}
