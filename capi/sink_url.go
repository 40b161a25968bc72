package main

/*
#include "colioi.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/remote"
	"github.com/colio-dev/colio/internal/sink"
)

// durableSized is sizedSink for a sink.Durable: the engine must see the
// Durable methods through the wrapper (an embedded *sizedSink would hide
// them), and colio_sink_size counts a write once it is durable.
type durableSized struct {
	*sizedSink
	d sink.Durable
}

func (z durableSized) WriteAtDurable(ctx context.Context, p []byte, off int64, done func(error)) (int, error) {
	end := off + int64(len(p))
	return z.d.WriteAtDurable(ctx, p, off, func(err error) {
		if err == nil {
			for {
				cur := z.end.Load()
				if end <= cur || z.end.CompareAndSwap(cur, end) {
					break
				}
			}
		}
		done(err)
	})
}

func (z durableSized) Abort(why error) error { return z.d.Abort(why) }

// sizedOf finds the size tracker behind a sink handle.
func sizedOf(s sink.Sink) *sizedSink {
	if z, ok := s.(durableSized); ok {
		return z.sizedSink
	}
	return s.(*sizedSink)
}

//export colioGoSinkOpenURL
func colioGoSinkOpenURL(url *C.char, options **C.char, flags C.int, out *C.uintptr_t) (rc C.int) {
	const name = "colio_sink_open_url"
	defer recoverInto(name, &rc)
	if url == nil {
		return invalid(name, "url is NULL")
	}
	if flags != 0 {
		return invalid(name, "unknown flags %#x (none are defined yet: pass 0)", int(flags))
	}
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	var kvs []string
	if options != nil {
		list := unsafe.Slice(options, maxURLOptions+1)
		for i := 0; list[i] != nil; i++ {
			if i == maxURLOptions {
				return invalid(name, "options has more than %d entries (is it NULL-terminated?)", maxURLOptions)
			}
			kvs = append(kvs, C.GoString(list[i]))
		}
	}
	o, err := remote.ParseOptions(kvs, cGetenv)
	if err != nil {
		return fail(name, err)
	}
	syncAWSEnv()
	s, err := remote.OpenSink(context.Background(), C.GoString(url), o)
	if err != nil {
		return fail(name, err)
	}
	es := engine.NewSink(durableSized{newSizedSink(s), s})
	tok, err := handles.put(kindSink, es)
	if err != nil {
		es.Abort()
		return invalid(name, "%v", err)
	}
	*out = C.uintptr_t(tok)
	return C.COLIO_OK
}

// colioGoSinkAbort removes the handle and aborts: nothing written becomes
// visible (an S3 upload is aborted), writes not yet durable fail.
//
//export colioGoSinkAbort
func colioGoSinkAbort(snk C.uintptr_t) (rc C.int) {
	const name = "colio_sink_abort"
	defer recoverInto(name, &rc)
	obj, err := handles.take(token(snk), kindSink)
	if err != nil {
		return fail(name, err)
	}
	if err := closeSink(snk, obj.(*engine.Sink), (*engine.Sink).Abort); err != nil {
		return fail(name, err)
	}
	return C.COLIO_OK
}
