package main

/*
#include "colioi.h"
*/
import "C"

import (
	"context"
	"sync"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/pool"
)

// eng returns the process engine. An invalid COLIO_* environment variable
// makes it fail, and with it every call, with a message naming the
// variable: running with a silent default would hide the typo.
func eng() (*engine.Engine, error) {
	e, err := engine.Default()
	if err == nil {
		fastInit.Do(func() { setFastThresholds(e) })
	}
	return e, err
}

// fastInit hands the C fast path its thresholds once the engine exists;
// colio_config_set_int keeps them current.
var fastInit sync.Once

func setFastThresholds(e *engine.Engine) {
	cfg := e.Config()
	C.colioi_fast_set_threshold(C.int64_t(cfg.SmallReadThreshold))
	C.colioi_fast_set_write_threshold(C.int64_t(cfg.SmallWriteThreshold))
}

// levelCtxs holds one context per pool level, made once, so that entry
// points do not allocate one per call.
var levelCtxs = func() (c [pool.MaxLevels + 1]context.Context) {
	for i := range c {
		c[i] = pool.WithLevel(context.Background(), i)
	}
	return c
}()

// ctxAt returns the context for submissions at level l, which the C entry
// point read from its thread-local (0 outside user callbacks). A level past
// the pool's limit is kept past it, so that the pool reports the runaway
// nesting instead of it being silently folded into a shallower level.
func ctxAt(l int) context.Context {
	if l < 0 {
		l = 0
	}
	if l > pool.MaxLevels {
		l = pool.MaxLevels
	}
	return levelCtxs[l]
}
