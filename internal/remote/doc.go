// Package remote reads HTTP(S) and S3 objects for the engine: ranged GETs
// whose bodies land straight in the caller's buffer.
//
// The bound. A remote request spends almost all of its time waiting on the
// network, so letting it hold one of the COLIO_NTHREADS pool slots would
// cap a fan-out at that many requests in flight (8 by default) however
// many the latency calls for. A remote source therefore declares
// Traits.InFlight, and the engine runs its parts on a pool of the source's
// own, bounded by max_in_flight (COLIO_REMOTE_MAX_IN_FLIGHT) per source.
// A waiting request costs a goroutine and a socket, not an OS thread (Go's
// network poller parks it), so the OS-thread bound of package pool does
// not apply, and remote requests never re-enter colio, so the source's
// pool needs no levels: nothing in it waits on anything queued behind it.
// The transport keeps max_in_flight connections per host alive (HTTP/1.1
// needs one per request in flight; HTTP/2, offered over TLS, multiplexes).
// Ranges larger than request_size are split into parallel requests of
// that size (Traits.PartSize replaces task_size).
//
// The default of 256 in flight comes from a sweep on the 2-core
// reference machine (TestSweepInFlight, COLIO_REMOTE_SWEEP=1; docs/remote.md):
// 1000 reads of 64 KiB against the remotetest server with 20 ms latency,
// best of 3, three runs under other load: 16: 1350 ms, 32: 690, 64: 360,
// 128: 185-215, 192: 130-195, 256: 129-252 (129 and 139 in two runs of
// three, the Go client floor of issue 14 being 134 ms), 384: 142-275,
// 512: 166-254. Time halves with each doubling while latency is the
// bound, up to about 1000 requests / (20 ms / request) in flight; past
// 256 the two cores, not the latency, are the bottleneck and more
// goroutines and sockets only add scheduling noise.
//
// What a read may return is strict. Every response is checked against
// what was asked: a 200 to a ranged GET (a server that ignores Range), a
// Content-Range other than the range asked, a body longer or shorter than
// its range, and an object whose ETag or Last-Modified differs from the
// ones at open (If-Match is sent, and the answer's ETag checked too for
// servers that ignore it) are errors, never sliced, padded or mixed.
//
// Time is bounded. Connect, first-byte (response headers), idle (longest
// gap between body bytes) and per-attempt request timeouts, and at most
// `retries` attempts with exponential backoff and jitter for connection
// errors, timeouts, 429 and 5xx; a retry after a body cut short asks only
// for the bytes still missing. Refused connections and unknown hosts fail
// at once. Closing the source aborts its requests in flight.
//
// Coalesced fan-outs come to the source as one contiguous range and the
// layout of its body (source.Scatterer): one GET streams it into the
// callers' buffers and drops the holes' bytes, so merging ranges costs
// neither a scratch buffer nor a copy. The source times each answer's
// headers and body apart (source.Measurer), which the engine's hole is
// derived from (scatter.go, measure.go).
//
// S3 uses the SDK only for what must not be hand-written: the SigV4
// signer and the credential chain (config.LoadDefaultConfig). Errors name
// the URL without credentials or query signatures, the HTTP status and
// S3's error code and message.
package remote
