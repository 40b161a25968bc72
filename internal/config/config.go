// Package config holds the engine's tunables and reads them from the
// environment. A value that cannot be parsed is an error, never a silent
// default: a typo in COLIO_NTHREADS should not quietly run with 8 threads.
package config

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Defaults. The thresholds are the largest request sizes at which running
// inline on the caller still wins or ties against handing the request to
// the pool, measured on a warm local file with BenchmarkCrossover in
// internal/engine on the 2-core reference machine (README "Tuning"): a
// single synchronous request always loses 1.5 to 2 us to the hand-off,
// and a fan-out of requests gains from the pool only from 256 KiB for
// reads (pool/inline 0.81 to 0.89; 0.90 to 1.03 at 128 KiB) and about
// 1 MiB for writes (concurrent pwrites to one file queue on its inode
// lock). Machines with more cores gain from the pool sooner.
const (
	DefaultThreads             = 8
	DefaultTaskSize            = 4 << 20
	DefaultSmallReadThreshold  = 128 << 10
	DefaultSmallWriteThreshold = 256 << 10
	DefaultBounceBufferSize    = 2 << 20

	// DefaultCoalesceHole -1 lets each source choose its hole size
	// (engine/coalesce.go): 0 for local files and memory, derived from
	// measured latency and throughput for the others.
	DefaultCoalesceHole = -1
	// DefaultCoalesceMax is Arrow's ReadRangeCache cap: past it a merged
	// request gains nothing (the engine splits it at task_size anyway) and
	// only the bytes of its holes grow.
	DefaultCoalesceMax = 32 << 20

	// DefaultPythonWorkers is how many parts of Python callable and fsspec
	// sources run at once on the Python package's worker threads
	// (internal/workq), from a sweep of bench/callable_fanout.py on the
	// 2-core reference machine (8, 16 and 24 workers, alternating, 15
	// rounds each, pool time / colio time against ThreadPoolExecutor(8)):
	// 200 x 64 KiB at 0.5 ms 0.77-1.14 with 8, 1.31-2.33 with 16, 1.37-1.40
	// with 24; at 0 ms the same within the noise (0.85-1.13: one worker
	// runs the parts back to back, the others wait for the GIL); 20 x 2 MiB
	// 1.24-1.83 for all three. Callbacks that sleep (a network wait) gain
	// from more threads than cores; 16 is the smallest count that took the
	// 0.5 ms row past the peer, and more gained nothing there.
	DefaultPythonWorkers = 16

	// MaxThreads bounds COLIO_NTHREADS so that a stray huge value cannot
	// start an unbounded number of goroutines doing I/O.
	MaxThreads = 4096
)

// Config is a snapshot of the engine settings.
type Config struct {
	Threads             int
	TaskSize            int64
	SmallReadThreshold  int64
	SmallWriteThreshold int64
	BounceBufferSize    int64
	CoalesceHole        int64 // -1: per source (see DefaultCoalesceHole)
	CoalesceMax         int64
	PythonWorkers       int
}

// Default returns the built-in defaults.
func Default() Config {
	return Config{
		Threads:             DefaultThreads,
		TaskSize:            DefaultTaskSize,
		SmallReadThreshold:  DefaultSmallReadThreshold,
		SmallWriteThreshold: DefaultSmallWriteThreshold,
		BounceBufferSize:    DefaultBounceBufferSize,
		CoalesceHole:        DefaultCoalesceHole,
		CoalesceMax:         DefaultCoalesceMax,
		PythonWorkers:       DefaultPythonWorkers,
	}
}

// Key names one setting. The same names are used by the C API
// (colio_config_set_int) and the Python package (set_config).
type Key string

const (
	KeyThreads             Key = "threads"
	KeyTaskSize            Key = "task_size"
	KeySmallReadThreshold  Key = "small_read_threshold"
	KeySmallWriteThreshold Key = "small_write_threshold"
	KeyBounceBufferSize    Key = "bounce_buffer_size"
	KeyCoalesceHole        Key = "coalesce_hole"
	KeyCoalesceMax         Key = "coalesce_max"
	KeyPythonWorkers       Key = "python_workers"
)

// Keys lists every setting, with the environment variable that sets it.
var Keys = []struct {
	Key Key
	Env string
}{
	{KeyThreads, "COLIO_NTHREADS"},
	{KeyTaskSize, "COLIO_TASK_SIZE"},
	{KeySmallReadThreshold, "COLIO_SMALL_READ_THRESHOLD"},
	{KeySmallWriteThreshold, "COLIO_SMALL_WRITE_THRESHOLD"},
	{KeyBounceBufferSize, "COLIO_BOUNCE_BUFFER_SIZE"},
	{KeyCoalesceHole, "COLIO_COALESCE_HOLE"},
	{KeyCoalesceMax, "COLIO_COALESCE_MAX"},
	{KeyPythonWorkers, "COLIO_PYTHON_WORKERS"},
}

// Error describes a rejected setting.
type Error struct {
	Key    Key
	Source string // environment variable name, or "" for a run-time set
	Value  string
	Reason string
}

func (e *Error) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("colio: invalid %s=%q: %s", e.Source, e.Value, e.Reason)
	}
	return fmt.Sprintf("colio: invalid value %s for %q: %s", e.Value, e.Key, e.Reason)
}

// Get returns the value of key.
func (c Config) Get(key Key) (int64, error) {
	switch key {
	case KeyThreads:
		return int64(c.Threads), nil
	case KeyTaskSize:
		return c.TaskSize, nil
	case KeySmallReadThreshold:
		return c.SmallReadThreshold, nil
	case KeySmallWriteThreshold:
		return c.SmallWriteThreshold, nil
	case KeyBounceBufferSize:
		return c.BounceBufferSize, nil
	case KeyCoalesceHole:
		return c.CoalesceHole, nil
	case KeyCoalesceMax:
		return c.CoalesceMax, nil
	case KeyPythonWorkers:
		return int64(c.PythonWorkers), nil
	}
	return 0, unknownKey(key)
}

func unknownKey(key Key) error {
	names := make([]string, len(Keys))
	for i, k := range Keys {
		names[i] = string(k.Key)
	}
	return &Error{Key: key, Value: string(key), Reason: "unknown setting; known: " + strings.Join(names, ", ")}
}

// Set validates v and stores it under key.
func (c *Config) Set(key Key, v int64) error {
	bad := func(reason string) error {
		return &Error{Key: key, Value: strconv.FormatInt(v, 10), Reason: reason}
	}
	switch key {
	case KeyThreads:
		if v < 1 || v > MaxThreads {
			return bad(fmt.Sprintf("must be between 1 and %d", MaxThreads))
		}
		c.Threads = int(v)
	case KeyTaskSize:
		if v < 1 {
			return bad("must be at least 1 byte")
		}
		c.TaskSize = v
	case KeySmallReadThreshold:
		if v < 0 {
			return bad("must not be negative (0 turns inline reads off)")
		}
		c.SmallReadThreshold = v
	case KeySmallWriteThreshold:
		if v < 0 {
			return bad("must not be negative (0 turns inline writes off)")
		}
		c.SmallWriteThreshold = v
	case KeyBounceBufferSize:
		if v < 4096 {
			return bad("must be at least 4096 bytes")
		}
		c.BounceBufferSize = v
	case KeyCoalesceHole:
		if v < -1 {
			return bad("must be -1 (each source chooses), 0 (merge only overlapping and adjacent ranges) or a size in bytes")
		}
		c.CoalesceHole = v
	case KeyCoalesceMax:
		if v < 1 {
			return bad("must be at least 1 byte")
		}
		c.CoalesceMax = v
	case KeyPythonWorkers:
		if v < 1 || v > MaxThreads {
			return bad(fmt.Sprintf("must be between 1 and %d", MaxThreads))
		}
		c.PythonWorkers = int(v)
	default:
		return unknownKey(key)
	}
	return nil
}

// FromEnv returns the defaults overridden by any COLIO_* variables set in
// the environment. lookup is os.LookupEnv in production.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	c := Default()
	for _, k := range Keys {
		s, ok := lookup(k.Env)
		if !ok {
			continue
		}
		v, err := ParseSize(s)
		if err != nil {
			return c, &Error{Key: k.Key, Source: k.Env, Value: s, Reason: err.Error()}
		}
		if err := c.Set(k.Key, v); err != nil {
			e := err.(*Error)
			e.Source, e.Value = k.Env, s
			return c, e
		}
	}
	return c, nil
}

// ParseSize reads an integer with an optional binary suffix: 4096, 64k,
// 64KiB, 4M, 1g. Suffixes are powers of 1024 whatever their spelling,
// because every size colio takes is a buffer size.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty value")
	}
	lower := strings.ToLower(t)
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
	} {
		if strings.HasSuffix(lower, suf.s) {
			mult = suf.m
			lower = strings.TrimSpace(strings.TrimSuffix(lower, suf.s))
			break
		}
	}
	v, err := strconv.ParseInt(lower, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer (optionally with a k, M or G suffix)")
	}
	if v > 0 && v > math.MaxInt64/mult || v < 0 && v < math.MinInt64/mult {
		return 0, fmt.Errorf("out of range")
	}
	return v * mult, nil
}
