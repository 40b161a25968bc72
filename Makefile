# colio: see README.md. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
LIB := build/lib/libcolio.so

.PHONY: all lib venv demo test test-go test-c test-python test-arrow-cgocheck2 test-cuda-build test-bench-quick bench bench-go bench-python clean

all: lib

# The Go sources the library is built from; any change rebuilds it.
GO_SRC := $(shell find internal capi gpu -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' 2>/dev/null) go.mod include/colio.h

$(LIB): $(GO_SRC) build.sh
	./build.sh

lib: $(LIB)

# The Python virtual environment: the package (editable, loading
# build/lib/libcolio.so) with its test extras from PyPI. Rebuilt when the
# packaging files change.
VENV_STAMP := $(VENV)/.colio-installed
$(VENV_STAMP): pyproject.toml setup.py
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	COLIO_SKIP_GO_BUILD=1 $(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

venv: $(VENV_STAMP)

# README's first command: build everything, then colio vs a plain Python
# loop on generated data (a local file, and fsspec with 2 ms latency).
demo: lib venv
	$(VPY) -m colio bench

test: test-go test-cuda-build test-c test-python test-arrow-cgocheck2 test-bench-quick

test-go:
	@unformatted=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt: not formatted: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

# The CUDA variant, built against downloaded headers on any machine (no GPU
# needed) and its exports checked; skipped, saying why, only when the header
# download fails (scripts/test-cuda-build.sh). The GPU run itself is
# tests/gpu/run.sh, on a GPU machine.
test-cuda-build:
	scripts/test-cuda-build.sh

# C tests against the built library (issue 3).
test-c: lib
	$(MAKE) -C tests/c

test-python: lib venv
	$(VPY) -m pytest -q tests/python

# The Python Arrow tests (tests/python/test_arrow.py) against a library
# built with GOEXPERIMENT=cgocheck2 (full cgo pointer checks); the C Arrow
# tests run against one in tests/c's asan target.
CGOCHECK2_LIB := build/cgocheck2/lib/libcolio.so
$(CGOCHECK2_LIB): $(GO_SRC) build.sh
	COLIO_BUILD_DIR=build/cgocheck2 COLIO_CUDA=0 GOEXPERIMENT=cgocheck2 ./build.sh

test-arrow-cgocheck2: $(CGOCHECK2_LIB) venv
	COLIO_LIBRARY=$(abspath $(CGOCHECK2_LIB)) $(VPY) -m pytest -q tests/python/test_arrow.py

# The benchmark suite (bench/run.py, BENCHMARKS.md): colio against its peers,
# every workload in one run (bench/run.py lists them); prints the
# tables, writes bench/results/latest.json and plots. BENCH_ARGS=--publish
# also rewrites BENCHMARKS.md and docs/bench/. The peers come from the
# `bench` extra. test-bench-quick (part of `make test`) runs it in --quick
# mode with what the test environment has, so the suite cannot rot.
BENCH_TOOLS := build/bench/libpread_loop.so build/bench/pread_loop build/bench/small_reads build/bench/gobench \
	build/bench/colio-testserver build/bench/remotefloor
BENCH_STAMP := $(VENV)/.colio-bench-installed

build/bench/libpread_loop.so: bench/c/pread_loop.c
	@mkdir -p $(@D)
	$(CC) -O2 -pthread -shared -fPIC -DPREAD_LOOP_LIB $< -o $@

build/bench/pread_loop: bench/c/pread_loop.c
	@mkdir -p $(@D)
	$(CC) -O2 -pthread $< -o $@

build/bench/small_reads: bench/c/small_reads.c $(LIB)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Ibuild/include $< -o $@ -Lbuild/lib -Wl,-rpath,$(abspath build/lib) -lcolio

build/bench/gobench: bench/gobench/main.go $(GO_SRC)
	@mkdir -p $(@D)
	$(GO) build -o $@ ./bench/gobench

# The remote workload (bench/remote.py): the loopback server and the Go
# client floor it compares colio with.
build/bench/colio-testserver: $(wildcard cmd/colio-testserver/*.go) $(GO_SRC)
	@mkdir -p $(@D)
	$(GO) build -o $@ ./cmd/colio-testserver

build/bench/remotefloor: bench/remotefloor/main.go
	@mkdir -p $(@D)
	$(GO) build -o $@ ./bench/remotefloor

$(BENCH_STAMP): $(VENV_STAMP)
	COLIO_SKIP_GO_BUILD=1 $(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
	touch $@

bench: lib venv $(BENCH_STAMP) $(BENCH_TOOLS)
	$(VPY) bench/run.py $(BENCH_ARGS)

test-bench-quick: lib venv $(BENCH_TOOLS)
	$(VPY) bench/run.py --quick --brief

bench-python: lib venv
	$(VPY) bench/python_fanout.py

bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./internal/engine/

# The long reliability run (issue 12), not part of `make test`: about a
# million checked operations from 16 threads through the C ABI, then as
# many through Python (tests/stress/); its last lines give the figures.
# STRESS_SCALE=0.05 for a short pass.
.PHONY: stress
stress: lib venv
	$(MAKE) -C tests/stress

clean:
	rm -rf build $(VENV)
