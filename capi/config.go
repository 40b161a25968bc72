package main

/*
#include "colioi.h"
*/
import "C"

import (
	"errors"
	"strings"

	"github.com/colio-dev/colio/gpu"
	"github.com/colio-dev/colio/internal/config"
)

// knownKey reports whether k names a setting, and lists them all.
func knownKey(k config.Key) (bool, string) {
	names := make([]string, len(config.Keys))
	found := false
	for i, kk := range config.Keys {
		names[i] = string(kk.Key)
		found = found || kk.Key == k
	}
	return found, strings.Join(names, ", ")
}

// setMessage says a rejected run-time setting as "key=value: reason", the
// way the caller wrote it (config.Error's own text, made for the
// environment, repeats the key: `invalid value 0 for "threads"`).
func setMessage(name string, err error) C.int {
	var ce *config.Error
	if errors.As(err, &ce) && ce.Source == "" {
		return invalid(name, "%s=%s: %s", ce.Key, ce.Value, ce.Reason)
	}
	return fail(name, err)
}

//export colioGoConfigSet
func colioGoConfigSet(key *C.char, value C.int64_t) (rc C.int) {
	const name = "colio_config_set_int"
	defer recoverInto(name, &rc)
	if key == nil {
		return invalid(name, "key is NULL")
	}
	k := config.Key(C.GoString(key))
	if ok, known := knownKey(k); !ok {
		return invalid(name, "unknown setting %q; known: %s", k, known)
	}
	e, err := eng()
	if err != nil {
		return fail(name, err)
	}
	if err := e.Set(k, int64(value)); err != nil {
		return setMessage(name, err)
	}
	setFastThresholds(e)
	return C.COLIO_OK
}

//export colioGoConfigGet
func colioGoConfigGet(key *C.char, out *C.int64_t) (rc C.int) {
	const name = "colio_config_get_int"
	defer recoverInto(name, &rc)
	if key == nil {
		return invalid(name, "key is NULL")
	}
	k := config.Key(C.GoString(key))
	if ok, known := knownKey(k); !ok {
		return invalid(name, "unknown setting %q; known: %s", k, known)
	}
	e, err := eng()
	if err != nil {
		return fail(name, err)
	}
	v, err := e.Config().Get(k)
	if err != nil {
		return fail(name, err)
	}
	*out = C.int64_t(v)
	return C.COLIO_OK
}

// colioGoStats fills every field of a full colio_counters owned by the C
// side, which copies as much as the caller's struct_size allows.
//
//export colioGoStats
func colioGoStats(out *C.colio_counters) (rc C.int) {
	const name = "colio_stats"
	defer recoverInto(name, &rc)
	e, err := eng()
	if err != nil {
		return fail(name, err)
	}
	s := e.Stats()
	out.ops_submitted = C.int64_t(s.OpsSubmitted)
	out.ops_inline = C.int64_t(s.OpsInline)
	out.tasks = C.int64_t(s.Tasks)
	out.bytes_read = C.int64_t(s.BytesRead)
	out.bytes_written = C.int64_t(s.BytesWritten)
	out.in_flight = C.int64_t(s.InFlight)
	out.peak_in_flight = C.int64_t(s.PeakInFlight)
	out.errors = C.int64_t(s.Errors)
	out.queued = C.int64_t(s.Queued)
	d := gpu.Stats()
	out.device_requests = C.int64_t(d.Requests)
	out.device_stream_syncs = C.int64_t(d.StreamSyncs)
	out.device_event_waits = C.int64_t(d.EventWaits)
	out.device_bytes_to_device = C.int64_t(d.BytesToDevice)
	out.device_bytes_from_device = C.int64_t(d.BytesFromDevice)
	out.device_pinned_bytes = C.int64_t(d.PinnedBytes)
	return C.COLIO_OK
}
