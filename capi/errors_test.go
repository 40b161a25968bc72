package main

import (
	"runtime"
	"strings"
	"testing"
)

// A panic in an export becomes COLIO_EINTERNAL with a message, on the
// calling thread, instead of unwinding into C.
func TestRecoverInto(t *testing.T) {
	// The last error is per OS thread: stay on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := panicky()
	if rc != codeInternal() {
		t.Fatalf("rc = %d", rc)
	}
	msg, _ := lastError()
	if !strings.Contains(msg, "colio_test_export: internal error") || !strings.Contains(msg, "nil map") {
		t.Fatalf("message %q", msg)
	}
}
