# colio: see README.md. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
LIB := build/lib/libcolio.so

.PHONY: all lib demo test test-go test-c test-python bench bench-go clean

all: lib

# The Go sources the library is built from; any change rebuilds it.
GO_SRC := $(shell find internal capi -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' 2>/dev/null) go.mod include/colio.h

$(LIB): $(GO_SRC) build.sh
	./build.sh

lib: $(LIB)

demo:
	$(GO) run ./cmd/colio-demo

test: test-go test-c

test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

# C tests against the built library (issue 3).
test-c: lib
	$(MAKE) -C tests/c

bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./internal/engine/

clean:
	rm -rf build $(VENV)
