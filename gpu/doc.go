// Package gpu moves bytes between colio sources and sinks and CUDA device
// memory through pinned bounce buffers.
//
// # Builds
//
// The pipeline (this package without cuda.go) is plain Go written against
// the Device interface, and is tested on any machine with the fake device
// in gpu/fakedev. The CUDA implementation of Device (cuda.go) needs the
// build tag `cuda`, cuda.h and libcuda (scripts/fetch-cuda-headers.sh gets
// the headers and link stubs without installing CUDA):
//
//	dir=$(scripts/fetch-cuda-headers.sh)
//	CGO_CFLAGS=-I$dir/usr/include CGO_LDFLAGS=-L$dir/usr/lib/x86_64-linux-gnu/stubs \
//	    go build -tags cuda ./gpu/...
//
// It uses gorgonia.org/cu v0.9.6 for contexts, streams, events and async
// copies, and its own cgo for what that lacks: cuMemHostAlloc and
// cuPointerGetAttribute. Beware: gorgonia.org/cu's package init calls
// cuInit and exits the process when it fails, so a program (or a
// libcolio_cuda.so) built with the tag must only be started where a driver
// and a GPU exist; probe first. Without the tag, HasCUDA is false and
// Default returns an errs.NotSupported error saying how to get the CUDA
// build.
//
// # The pipeline
//
// A request (Mover.ReadSource, Mover.WriteSink) is split like an engine
// request: tasks of task_size bytes on the mover's pool (bounded by
// threads per level, like the engine's), or one task inline on the caller
// when it is at or under small_read_threshold / small_write_threshold and
// the source or sink is fast. Each task cycles its chunks of
// bounce_buffer_size bytes through a ring of two pinned buffers:
//
//   - Reads: read chunk k from the source into buffer k%2, queue its
//     host-to-device copy on the request's stream and record the buffer's
//     event behind it, go on with chunk k+1 at once. So the source read of
//     chunk k+1 overlaps the copy of chunk k. Before a buffer is refilled
//     the task waits on its event (an event wait), never on the stream.
//   - Writes: queue the device-to-host copy of chunk k+1 before writing
//     chunk k to the sink, so that copy overlaps the sink write; each
//     chunk's write waits on its own event first.
//
// Host memory in every copy is a pinned bounce buffer: no copy ever reads
// or writes pageable memory. Sources and sinks fill and drain the pinned
// buffers directly (pread/pwrite into them), through the engine
// (EngineSource, EngineSink) so close safety, serial queues, end-of-source
// rules, sticky write errors and the engine counters all apply.
//
// # One synchronisation per request
//
// Every task of a request queues its copies on one stream, the request's
// own (taken from a per-context pool of non-blocking streams at submission
// time). A task that has queued all its copies does not wait for them: it
// counts itself out and hands its buffers back to the pool fenced by their
// events (the next user reuses a fenced buffer once cuEventQuery says its
// copy ended; it waits on the event only when the pool is at its soft cap).
// The task that counts out last, after every copy of the request was
// queued, synchronises the stream exactly once and then reports its part,
// so the future completes only after that one synchronisation. Requests
// have separate streams, so concurrent requests never wait for each other.
//
// # Ordering after the caller's stream
//
// Options.After names the stream the caller's device memory was produced
// on (the `stream` of __cuda_array_interface__). At submission, on the
// caller's thread, the mover records an event on it and makes the
// request's stream wait for that event (cuStreamWaitEvent): the device
// orders colio's first copy after the producer's work queued before the
// call, and no host thread blocks. Writes need it (cuDF's eager writes
// relied on a synchronise before pwrite); reads use it too, so that colio
// does not overwrite memory the caller's queued work still uses.
//
// # Closing and appending
//
// Device transfers go through the engine (EngineSource, EngineSink) and
// hold its handles as host requests do. A running read task holds the
// source (engine.Source.Acquire, then ReadHeld per chunk), so closing the
// source lets it finish all its chunks, and tasks that start after Close
// fail with a Closed error. A write holds the sink from submission to the
// end of its last task (engine.Sink.Acquire, WriteHeld per chunk), so
// closing or flushing the sink waits for every accepted device write. A
// write at engine.Append reserves its offset at submission, on the
// caller's thread, after the checks that can refuse it
// (engine.Sink.ReserveAppend): host and device appends land in call order.
//
// # Contexts and threads
//
// The context comes from the destination pointer (cuPointerGetAttribute
// CU_POINTER_ATTRIBUTE_CONTEXT, or the device's primary context where the
// pointer has none, as with memory mapped through the virtual memory API).
// Every goroutine that calls CUDA (the caller during submission and inline
// requests, pool workers for tasks) locks its OS thread and pushes the
// context for the duration, and pops it before unlocking.
//
// # Bounce buffer size
//
// COLIO_BOUNCE_BUFFER_SIZE defaults to 2 MiB: half the 4 MiB default task,
// so every full task pipelines through both buffers of its ring (a source
// read of one chunk overlapping the copy of the other). Measured on an
// H200 (tests/gpu/RESULTS.md), reads ran at 16, 26, 40, 44 and 40 GB/s
// with 0.5, 1, 2, 4 and 8 MiB buffers: below 2 MiB the per-chunk cost (an
// engine read, a copy, an event) dominates, and from 2 MiB the rate is
// flat. Pinned memory held is about 2 buffers per running task (16 with 8
// threads, 32 MiB) plus fenced buffers, up to a soft cap of 4 x threads
// buffers per context before a new request waits on a fenced one.
//
// # Counters
//
// Stats (and Mover.Stats) count requests, tasks, chunks, bytes, stream
// synchronisations and event waits separately, producer waits, and pinned
// buffers allocated and idle. A healthy run has StreamSyncs == Requests.
package gpu
