package config

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"COLIO_NTHREADS": "3", "COLIO_TASK_SIZE": "1MiB", "COLIO_SMALL_READ_THRESHOLD": "0",
		"COLIO_SMALL_WRITE_THRESHOLD": " 8k ", "COLIO_BOUNCE_BUFFER_SIZE": "4m",
		"COLIO_COALESCE_HOLE": "64k", "COLIO_COALESCE_MAX": "8M", "COLIO_PYTHON_WORKERS": "5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Threads: 3, TaskSize: 1 << 20, SmallReadThreshold: 0, SmallWriteThreshold: 8 << 10, BounceBufferSize: 4 << 20,
		CoalesceHole: 64 << 10, CoalesceMax: 8 << 20, PythonWorkers: 5}
	if c != want {
		t.Fatalf("got %+v", c)
	}
	if d, _ := FromEnv(env(nil)); d != Default() {
		t.Fatal("empty environment is not the defaults")
	}
}

func TestFromEnvErrors(t *testing.T) {
	for _, tc := range []struct{ k, v, want string }{
		{"COLIO_NTHREADS", "eight", "COLIO_NTHREADS"},
		{"COLIO_NTHREADS", "0", "between 1"},
		{"COLIO_NTHREADS", "100000", "between 1"},
		{"COLIO_TASK_SIZE", "0", "at least 1"},
		{"COLIO_TASK_SIZE", "", "empty"},
		{"COLIO_SMALL_READ_THRESHOLD", "-1", "negative"},
		{"COLIO_TASK_SIZE", "99999999999G", "out of range"},
		{"COLIO_COALESCE_HOLE", "-2", "-1 (each source chooses)"},
		{"COLIO_COALESCE_MAX", "0", "at least 1"},
	} {
		_, err := FromEnv(env(map[string]string{tc.k: tc.v}))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.k) {
			t.Errorf("%s=%q: %v", tc.k, tc.v, err)
		}
	}
}

func TestGetSet(t *testing.T) {
	c := Default()
	for _, k := range Keys {
		v, err := c.Get(k.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Set(k.Key, v); err != nil {
			t.Fatalf("%s: default %d rejected: %v", k.Key, v, err)
		}
	}
	if _, err := c.Get("bogus"); err == nil || !strings.Contains(err.Error(), "threads") {
		t.Fatalf("unknown key: %v", err)
	}
}
