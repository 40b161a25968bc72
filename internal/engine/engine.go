// Package engine turns read and write requests into tasks on the pool.
//
// A request is submitted when it is made: it is split into parts of at
// most task_size bytes, each part is queued on the pool, and the future is
// returned. Small requests to fast sources and sinks run inline instead,
// on the caller, and return a completed future. Nothing here knows about C
// or Python.
package engine

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/notify"
	"github.com/colio-dev/colio/internal/pool"
)

// Engine is colio's request scheduler. One per process is usual (Default),
// but tests make their own.
type Engine struct {
	mu  sync.Mutex // guards cfg writes
	cfg atomic.Pointer[config.Config]

	pool     *pool.Pool
	notifier *notify.Notifier
	c        counters

	startAtWait atomic.Bool
}

// New returns an engine with the given configuration.
func New(cfg config.Config) *Engine {
	e := &Engine{pool: pool.New(cfg.Threads), notifier: notify.New()}
	e.cfg.Store(&cfg)
	ensureProcs(cfg.Threads)
	ensureThreads()
	return e
}

var (
	defaultOnce sync.Once
	defaultEng  *Engine
	defaultErr  error

	envLookup = os.LookupEnv
)

// SetEnvLookup replaces how Default reads COLIO_* variables. Inside a
// c-shared library Go's os package sees only the environment the process
// had when the library was loaded, so a C program's setenv before its first
// colio call would be silently ignored; the C API installs a lookup that
// asks the C library instead. Call it before the first Default.
func SetEnvLookup(f func(string) (string, bool)) { envLookup = f }

// Default returns the process engine, configured from COLIO_* environment
// variables on first use. An invalid variable is an error on every call,
// not a silent fallback.
func Default() (*Engine, error) {
	defaultOnce.Do(func() {
		cfg, err := config.FromEnv(envLookup)
		if err != nil {
			defaultErr = err
			return
		}
		defaultEng = New(cfg)
	})
	return defaultEng, defaultErr
}

// Config returns the current settings.
func (e *Engine) Config() config.Config { return *e.cfg.Load() }

// Set changes one setting at run time. Requests already submitted keep the
// split they were given; a new thread count applies from the next task.
func (e *Engine) Set(key config.Key, v int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := *e.cfg.Load()
	if err := c.Set(key, v); err != nil {
		return err
	}
	if key == config.KeyThreads {
		ensureProcs(c.Threads)
		ensureThreads()
		// Refused when nested calls in use now are deeper than the
		// OS-thread bound allows at the new count (pool/bound.go).
		if err := e.pool.SetLimit(c.Threads); err != nil {
			return &config.Error{Key: key, Value: strconv.FormatInt(v, 10), Reason: err.Error()}
		}
	}
	e.cfg.Store(&c)
	return nil
}

// SetStartAtWait switches the engine to deferred mode, where a request's
// pool work starts only when its future is first waited on. It reproduces
// the bug colio exists to fix (cuDF PR 23231) so that benchmarks can
// measure eagerness against it; nothing else should turn it on.
func (e *Engine) SetStartAtWait(on bool) { e.startAtWait.Store(on) }

// Notifier returns the goroutine that runs completion callbacks.
func (e *Engine) Notifier() *notify.Notifier { return e.notifier }

// DrainCallbacks waits until every completion callback posted so far ran.
func (e *Engine) DrainCallbacks() { e.notifier.Drain() }
