/*
 * colio.h: the C interface of colio, an eager, parallel I/O engine.
 *
 * This header is the contract; it is written by hand. Every function
 * declared here is exported by libcolio.so, and nothing else is.
 *
 * General rules
 * -------------
 * - Every fallible function returns int: COLIO_OK (0) or a negative
 *   COLIO_E* code. colio_last_error() and colio_last_errno() describe the
 *   last failed call made on the calling thread (successful calls leave
 *   them unchanged). An asynchronous failure belongs to its future:
 *   colio_future_wait() returns its code (and also records its message as
 *   the thread's last error) and colio_future_error() its message and errno.
 * - Functions that create a handle set *out to NULL when they fail.
 * - Sizes and offsets are int64_t; negative values and offset + size
 *   overflows are rejected with COLIO_EINVAL. NULL pointers, buffers whose
 *   address range wraps around the address space (buf + size overflows),
 *   freed, stale or forged handles also give COLIO_EINVAL, never a crash.
 * - Handles (colio_source*, colio_sink*, colio_future*) are opaque tokens,
 *   not pointers to memory: never dereference them. Each has a free
 *   function that accepts NULL. Using a handle after freeing it returns
 *   COLIO_EINVAL.
 * - Asynchronous calls start their I/O before they return. Waiting only
 *   waits. Buffers passed to an asynchronous call must stay valid and
 *   untouched until its future completes or is freed.
 * - Thread safety: every function may be called from any thread, and every
 *   handle may be used from many threads at once.
 *
 * Process rules
 * -------------
 * - colio is written in Go. A process can hold only one Go runtime, so
 *   libcolio.so cannot be loaded beside another Go c-shared library.
 * - Never dlclose() libcolio.so: the Go runtime cannot be unloaded.
 * - The Go runtime does not survive fork(). After a fork, every colio call
 *   in the child returns COLIO_EFORK at once (checked before Go is
 *   entered). The child may still exit normally. Use exec, or start
 *   children before the first colio call.
 * - User callbacks run on colio's worker threads, may run concurrently
 *   when their struct says so, and must not throw C++ exceptions or
 *   longjmp across colio. A callback may call back into colio, including
 *   waiting on futures it started itself: nested calls run on a deeper
 *   pool level and cannot deadlock. A callback must not wait for work
 *   started outside it (it may be queued behind the callback), nor flush
 *   or free the source or sink it is serving.
 */
#ifndef COLIO_H
#define COLIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLIO_VERSION_MAJOR 0
#define COLIO_VERSION_MINOR 1
#define COLIO_VERSION_PATCH 0

/* Status codes. */
#define COLIO_OK          0
#define COLIO_EINVAL     (-1)  /* invalid argument, bad or freed handle */
#define COLIO_EIO        (-2)  /* I/O error; colio_last_errno() has errno */
#define COLIO_ENOTFOUND  (-3)  /* no such file */
#define COLIO_ECLOSED    (-4)  /* the source or sink was closed */
#define COLIO_ETIMEDOUT  (-5)  /* a wait timed out; the operation goes on */
#define COLIO_ECANCELLED (-6)  /* the operation was cancelled */
#define COLIO_ENOTSUP    (-7)  /* not supported by this build or handle */
#define COLIO_ECALLBACK  (-8)  /* a user callback reported failure */
#define COLIO_ENOSPC     (-9)  /* out of space (disk full, memory sink full) */
#define COLIO_EFORK      (-10) /* called in a child after fork() */
#define COLIO_EINTERNAL  (-11) /* a bug in colio; the message says where */

/* colio_future_wait: wait without a time limit. */
#define COLIO_WAIT_FOREVER ((int64_t)-1)
/* colio_write_async / colio_write offset: append at the next free offset,
 * reserved in call order at submission. */
#define COLIO_APPEND ((int64_t)-1)

typedef struct colio_source colio_source;
typedef struct colio_sink colio_sink;
typedef struct colio_future colio_future;
typedef struct colio_stream colio_stream;

/* ---- Library --------------------------------------------------------- */

/* The library version, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
const char *colio_version(void);

/* The message of the last failed call on this thread, or "" if none.
 * Never NULL; owned by the library, valid until the next colio call on
 * this thread. Works without entering Go, so also in a forked child. */
const char *colio_last_error(void);

/* The OS errno of the last failed call on this thread, or 0. */
int colio_last_errno(void);

/* Settings, by name. Keys: "threads" (I/O operations in flight per pool
 * level, COLIO_NTHREADS, default 8, at most 4096; see the OS-thread bound
 * below), "task_size" (bytes per task,
 * COLIO_TASK_SIZE, default 4 MiB), "small_read_threshold" and
 * "small_write_threshold" (requests at or under these run inline on the
 * caller, for fast sources and sinks only; 0 turns inlining off),
 * "bounce_buffer_size", "coalesce_hole" and "coalesce_max" (see
 * colio_source_set_coalesce). Environment variables are read at the first call;
 * an invalid one makes every call fail with COLIO_EINVAL and a message
 * naming it. Unknown keys and out-of-range values give COLIO_EINVAL. */
int colio_config_set_int(const char *key, int64_t value);
int colio_config_get_int(const char *key, int64_t *out);

/* The OS-thread bound: threads x nesting levels <= COLIO_MAX_BLOCKED_THREADS.
 * Every pool level runs up to "threads" operations, and each one that
 * blocks (a callback waiting on a nested colio call) holds an OS thread;
 * the Go runtime aborts the process when it runs out of threads. So with
 * threads = T, calls may nest min(64, 16384 / T) levels (level 0 is a call
 * from the program's own thread; a callback's calls are one level deeper):
 * 64 levels up to T = 256, 4 at T = 4096. A call that would nest deeper
 * fails with COLIO_EINVAL (inside a callback: the callback sees that code
 * and decides), and colio_config_set_int("threads", T) is refused with
 * COLIO_EINVAL while calls nested deeper than T allows are in flight.
 * colio raises Go's thread limit to fit; the OS limits (ulimit -u,
 * kernel.threads-max) must allow about 16384 + T threads as well. */
#define COLIO_MAX_BLOCKED_THREADS 16384

/* Engine counters. Set struct_size = sizeof(colio_counters) before the call;
 * the library fills the fields it knows up to that size, so a program
 * built against an older header keeps working. */
typedef struct colio_counters {
  size_t struct_size;
  int64_t ops_submitted;  /* requests accepted */
  int64_t ops_inline;     /* requests run on the calling thread */
  int64_t tasks;          /* tasks handed to the pool */
  int64_t bytes_read;
  int64_t bytes_written;
  int64_t in_flight;      /* source/sink calls running now */
  int64_t peak_in_flight; /* most ever running at once */
  int64_t errors;         /* failed tasks */
  int64_t queued;         /* tasks waiting for a pool slot now */
  /* Device transfers (0 in the CPU build). */
  int64_t device_requests;          /* device reads and writes that moved bytes */
  int64_t device_stream_syncs;      /* cuStreamSynchronize calls: one per device request */
  int64_t device_event_waits;       /* cuEventSynchronize calls (bounce buffer reuse, writes) */
  int64_t device_bytes_to_device;
  int64_t device_bytes_from_device;
  int64_t device_pinned_bytes;      /* pinned bounce buffer memory held now */
} colio_counters;
int colio_stats(colio_counters *out);

/* Stops calling user callbacks, for good: afterwards a read, write or
 * flush callback is not called and its operation fails with
 * COLIO_ECALLBACK (errno ECANCELED), a completion callback is not called
 * (colio_future_wait still sees the future end), and release callbacks
 * are skipped. For a language runtime that is shutting down and can take
 * no more calls (Python's colio package calls it at interpreter exit).
 * It affects every callback in the process and cannot be undone; callbacks
 * already running are not waited for. Returns COLIO_OK. */
int colio_stop_callbacks(void);

/* ---- Sources ---------------------------------------------------------- */

/* Opens a local file for reading. *out receives the handle. path is a C
 * string: it ends at its first NUL byte, so a name with an embedded NUL
 * cannot be passed (bindings must refuse one, as Python's open() does,
 * rather than open the shorter name). Only regular files and block
 * devices are random-access sources: a FIFO, a character device, a socket
 * or a file of /proc, /sys or another pseudo file system gives
 * COLIO_ENOTSUP with errno ESPIPE (it would read as empty), a directory
 * COLIO_EINVAL with errno EISDIR. A file source's size is the file's
 * current size at each request. */
int colio_source_open_file(const char *path, colio_source **out);

/* A source over size bytes at data. Not copied: data must stay valid and
 * unchanged until colio_source_free() returns. */
int colio_source_from_memory(const void *data, int64_t size, colio_source **out);

/* Callback flags. */
#define COLIO_CALLBACK_CONCURRENT 1u /* callbacks may run on many threads at once */
#define COLIO_CALLBACK_FAST       2u /* answers in microseconds: small requests may
                                        run inline on the caller. Never set it for
                                        anything with latency. */

/* A user-defined source. Set struct_size = sizeof(colio_source_callbacks).
 * read: fill up to size bytes of buf from offset; return the bytes filled
 *   (fewer is fine, colio asks again for the rest), or a negative value
 *   for failure (a negated errno if one applies). colio never asks for
 *   bytes past the source's size, so returning 0 says the source ended
 *   before its size: the read fails with COLIO_EIO, naming the offset.
 *   Runs on colio's workers.
 * release: called once when the source is freed, after every read ended;
 *   may be NULL. Not called if creation fails: ctx stays the caller's.
 * The source's size is fixed at creation. colio copies the struct: it
 * need not outlive the call. A larger struct_size (a newer header) is
 * accepted and the fields this library does not know are ignored; one
 * smaller than this version's is COLIO_EINVAL. */
typedef struct colio_source_callbacks {
  size_t struct_size;
  void *ctx;
  int64_t (*read)(void *ctx, void *buf, int64_t size, int64_t offset);
  void (*release)(void *ctx);
  uint32_t flags;
} colio_source_callbacks;
int colio_source_from_callbacks(const colio_source_callbacks *cb, int64_t size,
                                colio_source **out);

/* A source whose reads run on the caller's own threads: colio queues each
 * part of a read (at call time, as for any source) on the process's work
 * queue, and worker threads of the caller take parts with colio_work_take
 * and hand the results back with colio_work_done. For language runtimes
 * whose callbacks must run on their own threads (Python: no Go thread
 * enters the interpreter). flags: COLIO_CALLBACK_CONCURRENT, or 0 for
 * parts given out one at a time, in order. A part no worker has taken can
 * be cancelled; freeing the source fails its untaken parts with
 * COLIO_ECLOSED and waits for the taken ones. */
int colio_source_from_queue(int64_t size, uint32_t flags, void *ctx, colio_source **out);

/* One part to run: fill up to size bytes of buf from offset of the source
 * created with ctx, then call colio_work_done(token, ...). out: the parts
 * taken and not yet handed back, this one included, when it was taken (a
 * pool that keeps out + 1 threads always has one waiting). */
typedef struct colio_work {
  void *ctx;
  void *buf;
  int64_t size;
  int64_t offset;
  int64_t token;
  int64_t out;
} colio_work;

/* Waits up to timeout_ns (COLIO_WAIT_FOREVER; 0 polls) for a part and
 * fills *out. COLIO_ETIMEDOUT if none came; COLIO_ECLOSED when no queued
 * source is open and no part is out (the worker may exit). At most
 * "python_workers" (COLIO_PYTHON_WORKERS) parts are out at once, not
 * counting those whose worker is blocked in colio_future_wait (a nested
 * read), so keep one more thread waiting here than are busy. */
int colio_work_take(int64_t timeout_ns, colio_work *out);

/* Ends the part: result is the bytes filled (all of size unless the
 * source ends there), or a negated errno. COLIO_EINVAL for an unknown
 * token. */
int colio_work_done(int64_t token, int64_t result);

/* colio_work_done(token, result) unless token is 0, then
 * colio_work_take(timeout_ns, out): a worker's loop in one call, so that
 * a runtime with a global lock (Python's GIL) releases and takes it back
 * once per part instead of twice. */
int colio_work_next(int64_t token, int64_t result, int64_t timeout_ns, colio_work *out);

/* A read of a queued source whose end goes to the workers instead of the
 * notifier: when the future ends, the next colio_work_step hands out a
 * note with tag, so a runtime with a global lock completes its own future
 * on the worker that already holds it, with no other thread entering it.
 * Register no callback on such a future (colio_future_on_done). Until
 * its note is collected, wait and cancel work as for colio_read_async;
 * do not free it: the library does when the note of a done or cancelled
 * read goes out (any later use of it is COLIO_EINVAL), and the caller
 * frees a failed one after reading its error. COLIO_EINVAL for a source
 * not made by colio_source_from_queue. */
int colio_read_async_tagged(colio_source *src, void *buf, int64_t size, int64_t offset,
                            uint64_t tag, colio_future **out);

/* The end of a read made with colio_read_async_tagged. The library has
 * freed future already when status is COLIO_OK or COLIO_ECANCELLED; any
 * other status leaves it valid for colio_future_error, and the caller
 * frees it. */
typedef struct colio_work_note {
  uint64_t tag;
  colio_future *future;
  int64_t nbytes;
  int status;
} colio_work_note;

/* colio_work_next that also collects up to max_notes notes into notes
 * (*nnotes of them). With notes collected it does not wait for a part:
 * COLIO_OK with out->token 0 when it took none. COLIO_ETIMEDOUT and
 * COLIO_ECLOSED (only once no note is left) as for colio_work_take, with
 * no note collected. */
int colio_work_step(int64_t token, int64_t result, int64_t timeout_ns, colio_work *out,
                    colio_work_note *notes, int64_t max_notes, int64_t *nnotes);

/* Waits up to timeout_ns until a part may be taken or a note collected,
 * and takes nothing: COLIO_OK (then poll with colio_work_step and timeout
 * 0, which may find it gone to another worker), COLIO_ETIMEDOUT, or
 * COLIO_ECLOSED as colio_work_take. For a runtime with a global lock
 * that should take a part only once it holds the lock. */
int colio_work_wait(int64_t timeout_ns);

/* Opens a remote object: url is http://, https:// (a presigned URL too) or
 * s3://bucket/key. options is NULL or a NULL-terminated array of
 * "key=value" C strings; an unknown key or a bad value is COLIO_EINVAL
 * naming it. The result is an ordinary source: every read, readv, stream,
 * Arrow and device call works on it. Reads are ranged GETs whose bodies
 * land straight in the caller's buffer; they do not hold COLIO_NTHREADS
 * worker slots: each source runs up to max_in_flight requests at once on
 * its own, and splits ranges larger than request_size into parallel
 * requests. The size, ETag and Last-Modified are taken at open (a HEAD,
 * or a GET of byte 0 where HEAD is refused); a read of an object changed
 * since (If-Match refused, another ETag, size or Last-Modified) fails with
 * COLIO_EIO, errno ESTALE, "changed since open". A server that ignores
 * Range, a wrong Content-Range or a body of the wrong length fails with
 * COLIO_EIO, errno EPROTO; nothing is sliced or padded.
 *
 * Options (each also read from its environment variable when not given):
 *   max_in_flight=N        requests in flight for this source
 *                          (COLIO_REMOTE_MAX_IN_FLIGHT, default 256, at most 4096)
 *   request_size=BYTES     part size of large reads (COLIO_REMOTE_REQUEST_SIZE, 8 MiB)
 *   retries=N              attempts per request, the first included (COLIO_REMOTE_RETRIES, 5);
 *                          retried: connection errors, timeouts, 429, 500, 502, 503, 504,
 *                          with exponential backoff and jitter
 *   connect_timeout=S      seconds, fractions allowed (COLIO_REMOTE_CONNECT_TIMEOUT, 10)
 *   first_byte_timeout=S   request sent to response headers (COLIO_REMOTE_FIRST_BYTE_TIMEOUT, 30)
 *   idle_timeout=S         longest gap between body bytes (COLIO_REMOTE_IDLE_TIMEOUT, 30)
 *   request_timeout=S      one attempt overall (COLIO_REMOTE_REQUEST_TIMEOUT, 300)
 *   ca_bundle=PATH         PEM roots added to the system's (COLIO_CA_BUNDLE, else
 *                          AWS_CA_BUNDLE; SSL_CERT_FILE replaces the system roots)
 *   size=BYTES             the object's size, if known: no request at open
 *   etag=VALUE             the ETag the object must have (colio_source_etag of an
 *                          earlier open): the open, and every GET (If-Match), fail
 *                          with COLIO_EIO, errno ESTALE, for another version; with
 *                          size= the open makes no request
 *   prefetch=BYTES         the open is a GET of the first BYTES instead of a HEAD
 *                          (COLIO_REMOTE_PREFETCH, default 0 = HEAD, at most 1 GiB): the
 *                          size and validators come from its answer, its body is kept
 *                          and reads inside it make no request, so an object no larger
 *                          is one request in all; ignored with size=
 *   prefetch_tail=BYTES    the same for the last BYTES (a GET of bytes=-BYTES:
 *                          COLIO_REMOTE_PREFETCH_TAIL, default 0): a Parquet footer or a
 *                          zip directory comes with the open; not with prefetch=
 *   header.NAME=VALUE      an extra request header
 * s3:// only (an S3 option on an http(s) URL is COLIO_EINVAL):
 *   key=, secret=, token=  static credentials; otherwise AWS's default chain
 *                          (AWS_ACCESS_KEY_ID..., shared config and credentials
 *                          files, web identity, instance metadata)
 *   profile=NAME           shared-config profile (AWS_PROFILE)
 *   anon=1                 unsigned requests (a public bucket)
 *   endpoint_url=URL       another S3 (MinIO, R2, a local server; AWS_ENDPOINT_URL)
 *   region=NAME            else AWS_REGION / the profile's, else asked of the bucket
 *                          (x-amz-bucket-region), else us-east-1
 *   path_style=1           path-style addressing (default 1 with an endpoint_url)
 *   requester_pays=1       x-amz-request-payer: requester
 *
 * Errors (messages name the URL without credentials or query signature,
 * the HTTP status and S3's error code and message): 404, NoSuchKey,
 * NoSuchBucket: COLIO_ENOTFOUND, errno ENOENT. 401, 403, AccessDenied,
 * SignatureDoesNotMatch, InvalidAccessKeyId, ExpiredToken, no credentials:
 * COLIO_EIO, errno EACCES. Timeouts: COLIO_ETIMEDOUT, errno ETIMEDOUT.
 * A refused connection (errno ECONNREFUSED) or an unknown host
 * (EHOSTUNREACH): COLIO_EIO at once, not retried. Freeing the source fails
 * its requests in flight with COLIO_ECLOSED instead of waiting for them. */
int colio_source_open_url(const char *url, const char *const *options, colio_source **out);

/* The source's current size in bytes. */
int colio_source_size(colio_source *src, int64_t *out);

/* The ETag of a URL source's object as the server sent it (quotes, and W/
 * for a weak one, included), from the open or the first answer: copied to
 * buf with its NUL when size is larger than its length, else COLIO_EINVAL.
 * *len (may be NULL) receives the length without the NUL; buf NULL with
 * size 0 asks for the length only. Other sources, and an object sent
 * without an ETag, have "". Reading the object again later with the
 * options etag= and size= makes no request at open and never reads
 * another version. *stable (may be NULL) is 1 when a cache may key on the
 * ETag: it is strong and the answer's Last-Modified was at least a second
 * before its Date (RFC 9110 8.8.2.2: a server whose ETag comes from the
 * modification time in seconds, nginx's, can keep it across another write
 * within that second); else 0. */
int colio_source_etag(colio_source *src, char *buf, size_t size, size_t *len, int *stable);

/* Frees the source. Reads that have not started fail with COLIO_ECLOSED;
 * running ones finish first. Accepts NULL. */
int colio_source_free(colio_source *src);

/* ---- Reads ------------------------------------------------------------- */

/* Synchronous read of up to size bytes at offset into buf. *nread (may be
 * NULL) receives the bytes read: fewer than size only at the end of the
 * source, 0 at the end. Starting past the end is COLIO_EINVAL. A source
 * that stops short of its size (a callback returning 0, a file truncated
 * during the read) fails the read with COLIO_EIO, the same for every read
 * call and however the read is split. */
int colio_read(colio_source *src, void *buf, int64_t size, int64_t offset, int64_t *nread);

/* Starts the read and returns its future in *out. Small reads of fast
 * sources complete before this returns. */
int colio_read_async(colio_source *src, void *buf, int64_t size, int64_t offset,
                     colio_future **out);

/* One range of a fan-out read or write. */
typedef struct colio_range {
  int64_t offset; /* COLIO_APPEND allowed for writes */
  int64_t size;
  void *buf;
} colio_range;

/* Starts n reads at once; futures_out[i] receives range i's future. All
 * ranges are checked first: if one is invalid, none starts, no future is
 * made, and the call fails. */
int colio_readv_async(colio_source *src, const colio_range *ranges, int64_t n,
                      colio_future **futures_out);

/* colio_readv_async with flags. COLIO_READV_COALESCE plans the ranges
 * first (issue 16): sorted, contained, overlapping and adjacent ranges
 * merged, and ranges apart by at most the source's hole size merged up to
 * its cap, so a source with latency gets fewer, larger requests. Each
 * range still gets its own future, with the same result, errors and
 * checks as colio_readv_async; ranges may overlap (a range's buffer must
 * not overlap another's). Merged requests are read into the callers'
 * buffers; the bytes between ranges are read and dropped. A range that
 * shares a request with others completes when that request's parts that
 * hold its bytes are done. flags 0 is colio_readv_async; unknown flags
 * are COLIO_EINVAL. */
#define COLIO_READV_COALESCE 1u
int colio_readv_async_ex(colio_source *src, const colio_range *ranges, int64_t n,
                         uint32_t flags, colio_future **futures_out);

/* Coalescing settings of one source: hole is the largest gap between two
 * ranges that is read through rather than split into two requests, max
 * the largest request a merge may make (a single range may be larger).
 * -1 for either returns it to the engine's setting ("coalesce_hole",
 * COLIO_COALESCE_HOLE: -1 by default, which derives the hole per source:
 * 0 for local files and memory, latency x throughput / threads as
 * measured for sources with latency, 1 MiB before any measurement;
 * "coalesce_max", COLIO_COALESCE_MAX: 32 MiB). get gives the values the
 * next coalesced read would use; either pointer may be NULL. */
int colio_source_set_coalesce(colio_source *src, int64_t hole, int64_t max);
int colio_source_get_coalesce(colio_source *src, int64_t *hole, int64_t *max);

/* ---- Batches and completion queues ------------------------------------- */

/* One call per batch (issue 15): a fan-out read whose ranges report into
 * the caller's arrays instead of one future each, for bindings where a
 * call or a callback per range costs more than the read.
 *
 * colio_readv reads every range (on colio's workers, or inline for small
 * reads of fast sources, as colio_readv_async) and returns when all have
 * ended. flags as for colio_readv_async_ex. nread[i] and status[i] (either
 * may be NULL) receive range i's byte count and status. Returns COLIO_OK
 * if every range succeeded, else the status of the lowest-index range
 * that failed (its message is the thread's last error). The ranges are
 * checked first, as for colio_readv_async: if one is invalid, none starts
 * and nread/status are not written. n == 0 returns COLIO_OK. */
int colio_readv(colio_source *src, const colio_range *ranges, int64_t n, uint32_t flags,
                int64_t *nread, int *status);

/* A completion queue: batches post one entry per finished range, and one
 * colio_cq_wait takes many. Any number of batches and threads may share
 * one. */
typedef struct colio_cq colio_cq;
typedef struct colio_cq_entry {
  uint64_t ctx;   /* the batch's ctx + the range's index */
  int64_t nbytes; /* as nread[i] */
  int status;     /* as status[i] */
} colio_cq_entry;
int colio_cq_new(colio_cq **out);

/* Waits up to timeout_ns (COLIO_WAIT_FOREVER, 0 polls) for at least one
 * entry, then moves up to max entries, oldest first, to entries; *count
 * receives how many. COLIO_ETIMEDOUT (and *count 0) if none came,
 * COLIO_ECLOSED once the queue is freed. */
int colio_cq_wait(colio_cq *cq, colio_cq_entry *entries, int64_t max, int64_t timeout_ns,
                  int64_t *count);

/* Frees the queue: waiters return COLIO_ECLOSED, later entries are
 * dropped (the batches themselves go on). Accepts NULL. */
int colio_cq_free(colio_cq *cq);

/* colio_readv, started: *out receives one future for the whole batch, and
 * the call returns without waiting for the I/O, except small reads of fast
 * sources, which run inline as colio_readv_async's do (the caller and a few
 * workers read them in chunks, and they have ended when the call returns).
 * Range i writes nread[i] and status[i] (either
 * may be NULL; both must stay valid until the future completes or is
 * freed) and then, if cq is not NULL, posts {ctx + i, nbytes, status} to
 * it; the future completes after every range did. Its status, message and
 * byte count (the sum) are colio_readv's. colio_future_wait, _done,
 * _on_done, _error and _free work on it as on any future;
 * colio_future_cancel cancels every range not started, and freeing it
 * waits for every range. */
int colio_readv_batch(colio_source *src, const colio_range *ranges, int64_t n, uint32_t flags,
                      int64_t *nread, int *status, colio_cq *cq, uint64_t ctx,
                      colio_future **out);

/* colio_readv_batch with the ranges' buffers end to end in one (for
 * bindings that read many small ranges into one allocation): pairs holds
 * n (offset, size) pairs, and range i is read into buf at the sum of the
 * sizes before it; buf holds buf_size bytes, at least the sum of all sizes
 * (else COLIO_EINVAL, and nothing starts). With out NULL the call is
 * colio_readv (it returns when every range has ended; cq must be NULL);
 * otherwise it is colio_readv_batch. */
int colio_readv_packed(colio_source *src, const int64_t *pairs, int64_t n, uint32_t flags,
                       void *buf, int64_t buf_size, int64_t *nread, int *status, colio_cq *cq,
                       uint64_t ctx, colio_future **out);

/* Range index of a batch future, as colio_future_wait, colio_future_cancel
 * and colio_future_error do for a whole future (the message is owned by
 * the batch until it is freed). A future that is not a batch, or an index
 * out of range, is COLIO_EINVAL. */
int colio_future_wait_part(colio_future *fut, int64_t index, int64_t timeout_ns,
                           int64_t *nbytes);
int colio_future_cancel_part(colio_future *fut, int64_t index, int *cancelled);
int colio_future_error_part(colio_future *fut, int64_t index, const char **message,
                            int *errnum);

/* ---- Whole remote objects ---------------------------------------------- */

/* Fetches n whole remote objects (a zarr array's chunks): urls[i] is
 * opened as colio_source_open_url(urls[i], options) opens it, read whole
 * into memory the library holds, and closed, all by the library; the call
 * returns at once, with every fetch started (at most max_in_flight of
 * them at a time). With prefetch=BYTES in options an object no larger is
 * one GET. When object i ends, {ctx + i, its size or 0, its status} is
 * posted to cq if cq is not NULL. *out receives one future for them all:
 * it completes after every object has ended (and before the last entry is
 * posted), its status and message are those of the failed object of
 * lowest index, its byte count the sum; colio_future_cancel cancels the
 * fetches not started (their status COLIO_ECANCELLED). Options are checked
 * first: an unknown one is COLIO_EINVAL and nothing starts. The bytes
 * stay with the future until colio_fetch_copy takes them or
 * colio_future_free drops them. */
int colio_fetch_urls(const char *const *urls, int64_t n, const char *const *options, colio_cq *cq,
                     uint64_t ctx, colio_future **out);

/* Object index of a fetch: if it failed, its status, and its message as
 * colio_last_error (a 404 is COLIO_ENOTFOUND, errno ENOENT, as for
 * colio_source_open_url). Otherwise its bytes are copied to buf (size
 * must hold them: the size is its entry's nbytes) and *copied (may be
 * NULL) receives their count; the library's copy is dropped, so a second
 * copy is COLIO_EINVAL, as are an object not yet ended and a future not
 * made by colio_fetch_urls. */
int colio_fetch_copy(colio_future *fut, int64_t index, void *buf, int64_t size, int64_t *copied);

/* ---- Arrow C Data Interface ------------------------------------------- */

/* The structs of the Arrow C Data Interface and C Stream Interface,
 * exactly as the Arrow specification declares them, each under its
 * canonical guard (ARROW_C_DATA_INTERFACE: struct ArrowSchema, struct
 * ArrowArray and the ARROW_FLAG_* macros; ARROW_C_STREAM_INTERFACE: struct
 * ArrowArrayStream), so that colio.h, arrow/c/abi.h and nanoarrow.h can be
 * included in any order. colio declares the stream struct although it does
 * not use it: nanoarrow takes ARROW_FLAG_DICTIONARY_ORDERED to mean that
 * both interfaces are declared, and would otherwise skip its own. */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  // Array type description
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  // Release callback
  void (*release)(struct ArrowSchema*);
  // Opaque producer-specific data
  void* private_data;
};

struct ArrowArray {
  // Array data description
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  // Release callback
  void (*release)(struct ArrowArray*);
  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  // Callbacks providing stream functionality
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);

  // Release callback
  void (*release)(struct ArrowArrayStream*);

  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_STREAM_INTERFACE

/* Reads n ranges of src eagerly and in parallel, as colio_readv_async
 * does, and exports the result as one Arrow array of type large_binary
 * (format "Z"): element i holds range i's bytes. ranges[i].buf is ignored:
 * colio allocates the memory. The array has n_buffers == 3: buffers[0]
 * (validity) is NULL and null_count 0, buffers[1] holds n + 1 int64_t
 * offsets, buffers[2] the bytes of every range back to back. The reads
 * land directly in that one data buffer; nothing is copied afterwards.
 *
 * A range that crosses the end of the source gives a shorter element (the
 * bytes that exist), one that starts at the end an empty element, and one
 * that starts past it fails the call (COLIO_EINVAL), as does a negative
 * offset or size. If any read fails, the call fails with its code, every
 * read has ended, and nothing is exported.
 *
 * On success *out (and *out_schema, if it is not NULL: the schema,
 * format "Z", name "", no flags) belong to the caller, who must call
 * out->release(out) once (and out_schema's) when done, from any thread;
 * release sets release to NULL, as the specification says. The structs
 * may be moved (copied bitwise) before release. The buffers come from C's
 * allocator (posix_memalign, 64-byte aligned), never Go's, and are freed by
 * the release callback. On failure, out->release and out_schema->release
 * are NULL and nothing needs releasing. out_schema may be NULL. If the
 * memory cannot be allocated (a huge read), the call fails with
 * COLIO_ENOSPC, colio_last_errno() ENOMEM and the size in the message.
 *
 * After fork(), release callbacks called in the child return without
 * freeing (the child cannot enter colio): the child leaks that memory
 * until it exits; the parent's arrays are unaffected. */
int colio_read_ranges_arrow(colio_source *src, const colio_range *ranges, int64_t n,
                            struct ArrowArray *out, struct ArrowSchema *out_schema);

/* Reads size bytes at offset (eagerly, split into parallel tasks like
 * colio_read) into one C-allocated buffer and exports it as an Arrow uint8
 * array (format "C"; n_buffers == 2: NULL validity, then the bytes). Its
 * length is the bytes read: fewer than size when the range crosses the
 * end of the source, 0 when it starts at the end; starting past the end
 * is COLIO_EINVAL. Ownership, release and failure as for
 * colio_read_ranges_arrow. */
int colio_read_arrow_buffer(colio_source *src, int64_t offset, int64_t size,
                            struct ArrowArray *out, struct ArrowSchema *out_schema);

/* Another reference to an array exported by colio_read_ranges_arrow,
 * colio_read_arrow_buffer or this function: *out shares array's buffers
 * (the same memory, no copy) and has its own release callback; the memory
 * is freed when the last reference is released, each exactly once, from
 * any thread. array must not be released yet (it stays valid: releasing
 * it is still the caller's job). out_schema, if not NULL, receives a new
 * schema of the array's type. For consumers that hand the same data to
 * several owners, such as Python's __arrow_c_array__, which may be called
 * more than once. An array colio did not export, or out == array, is
 * COLIO_EINVAL; on failure out->release (and out_schema->release) are
 * NULL, except when out == array, which is left as it was. */
int colio_arrow_array_ref(const struct ArrowArray *array, struct ArrowArray *out,
                          struct ArrowSchema *out_schema);

/* ---- Sinks ------------------------------------------------------------- */

#define COLIO_SINK_CREATE   1 /* create the file if missing */
#define COLIO_SINK_TRUNCATE 2 /* empty an existing file */
#define COLIO_SINK_APPEND   4 /* COLIO_APPEND writes start at the current end
                                 (otherwise at 0); the file is never opened
                                 with O_APPEND */

/* Opens a local file for writing (mode 0644 when created). path is a C
 * string, as for colio_source_open_file: it ends at its first NUL. */
int colio_sink_open_file(const char *path, int flags, colio_sink **out);

/* A sink that writes into capacity bytes at buf, never past them (a write
 * that does not fit fails with COLIO_ENOSPC). buf must stay valid until
 * colio_sink_free() returns. */
int colio_sink_from_memory(void *buf, int64_t capacity, colio_sink **out);

/* A sink that discards everything, for measurements. */
int colio_sink_void(colio_sink **out);

/* A user-defined sink. Set struct_size = sizeof(colio_sink_callbacks).
 * write: write up to size bytes of buf at offset; return the bytes written
 *   (colio calls again for the rest) or a negative value for failure.
 * flush: may be NULL; return 0 or a negative value.
 * release: called once when the sink is freed; may be NULL. Not called if
 *   creation fails.
 * append_start: the offset the first COLIO_APPEND write goes to.
 * The struct is copied and versioned as colio_source_callbacks is. */
typedef struct colio_sink_callbacks {
  size_t struct_size;
  void *ctx;
  int64_t (*write)(void *ctx, const void *buf, int64_t size, int64_t offset);
  int (*flush)(void *ctx, int fsync);
  void (*release)(void *ctx);
  uint32_t flags;
  int64_t append_start;
} colio_sink_callbacks;
int colio_sink_from_callbacks(const colio_sink_callbacks *cb, colio_sink **out);

/* Waits for the writes in flight, then flushes (fsync != 0: to stable
 * storage). Returns the first write error the sink ever had (errors are
 * sticky), or the flush's own. */
int colio_sink_flush(colio_sink *sink, int fsync);

/* The highest end written so far by completed writes (a memory sink's
 * filled length). It starts at the append start: the file's length for
 * COLIO_SINK_APPEND, append_start for a callback sink, else 0. */
int colio_sink_size(colio_sink *sink, int64_t *out);

/* Waits for every accepted write (queued ones run), flushes, closes and
 * frees the sink. Returns the sticky write error, if any. Accepts NULL. */
int colio_sink_free(colio_sink *sink);

/* An S3 object as a sink: url is s3://bucket/key, options and credentials
 * as for colio_source_open_url, plus
 *   part_size=BYTES    the object is cut at multiples of it into parts
 *                      (COLIO_S3_PART_SIZE, default 8 MiB, at least 5 MiB;
 *                      an object has at most 10,000 parts)
 *   buffer_size=BYTES  complete parts held at once, uploading or waiting
 *                      (COLIO_S3_BUFFER_SIZE, default 512 MiB)
 * flags must be 0. Nothing is sent at open, so wrong credentials show at
 * the first part or at colio_sink_free (COLIO_EIO, errno EACCES).
 *
 * Writes (appends and offsets, any order, from any thread) are copied into
 * their parts; a part whose every byte is written is uploaded at once,
 * with up to max_in_flight uploads at a time. A write's future completes
 * when all its parts are acknowledged: bytes of a part not yet full wait
 * for the writes that fill it or for colio_sink_free, so colio_write (or
 * waiting on such a future) before the sink is freed blocks until then.
 * Memory: (parts being filled + complete parts not acknowledged, at most
 * buffer_size) x part_size; a write that would pass buffer_size waits for
 * an upload to end. Bytes never written read as zeros; writing into a
 * part already uploaded fails the sink (COLIO_ENOTSUP).
 *
 * colio_sink_free publishes the object (the last part and any with holes
 * are sent, then CompleteMultipartUpload; an object that fits in one part
 * is one PUT). Only then does it exist. A failed part (after retries), a
 * sticky write error or a cancelled write aborts the upload instead: the
 * object keeps its old content or stays absent, no upload is left open,
 * and colio_sink_free returns the error. */
int colio_sink_open_url(const char *url, const char *const *options, int flags, colio_sink **out);

/* Frees the sink without publishing what was written: for an S3 sink the
 * multipart upload is aborted (the object keeps its old content or stays
 * absent) and writes not yet durable fail with COLIO_ECANCELLED; other
 * sinks are just freed. Accepts NULL. Returns an error only if the abort
 * itself failed (the store may still hold the upload's parts). */
int colio_sink_abort(colio_sink *sink);

/* ---- Writes ------------------------------------------------------------ */

/* Synchronous write of size bytes of buf at offset (or COLIO_APPEND).
 * *nwritten (may be NULL) receives the bytes written. */
int colio_write(colio_sink *sink, const void *buf, int64_t size, int64_t offset,
                int64_t *nwritten);

/* colio_write that also gives, in *placed (may be NULL), the offset the
 * bytes went to: an append's reserved offset (issue 15). */
int colio_write_ex(colio_sink *sink, const void *buf, int64_t size, int64_t offset,
                   int64_t *nwritten, int64_t *placed);

/* Starts the write and returns its future. An append's offset is reserved
 * now: colio_future_offset() tells where it goes. */
int colio_write_async(colio_sink *sink, const void *buf, int64_t size, int64_t offset,
                      colio_future **out);

/* Starts n writes at once, reserving appends in array order. */
int colio_writev_async(colio_sink *sink, const colio_range *ranges, int64_t n,
                       colio_future **futures_out);

/* ---- Futures ----------------------------------------------------------- */

/* Waits up to timeout_ns nanoseconds (COLIO_WAIT_FOREVER: no limit; 0:
 * poll; other negative values: COLIO_EINVAL). Returns the operation's
 * status, or COLIO_ETIMEDOUT if it is still running (the future stays
 * valid). *nbytes (may be NULL) receives the bytes moved (so far, on a
 * timeout). */
int colio_future_wait(colio_future *fut, int64_t timeout_ns, int64_t *nbytes);

/* 1 if the operation has finished (its bytes are in place), 0 if not, or
 * a negative code for a bad handle. Never starts or blocks. */
int colio_future_done(colio_future *fut);

/* Cancels the parts that have not started. *cancelled (may be NULL)
 * receives 1 if any part was cancelled (the future then ends with
 * COLIO_ECANCELLED), 0 if everything had already started. */
int colio_future_cancel(colio_future *fut, int *cancelled);

/* Registers cb to run once, on colio's notifier thread (never on an I/O
 * worker), when the future completes: at once if it already has. status
 * and nbytes are the operation's. The future must not be freed from inside
 * cb (COLIO_EINVAL); other futures may be (see colio_future_free). One
 * callback per future. */
typedef void (*colio_future_callback)(void *ctx, colio_future *fut, int status, int64_t nbytes);
int colio_future_on_done(colio_future *fut, colio_future_callback cb, void *ctx);

/* The failure of a completed future: *message (may be NULL) receives a
 * string owned by the future, valid until colio_future_free() ("" if it
 * succeeded or has not completed); *errnum (may be NULL) the OS errno or
 * 0 (for COLIO_ECALLBACK, the negated value the callback returned, if it
 * was an errno). Returns the future's status (COLIO_OK if it succeeded,
 * COLIO_ETIMEDOUT if it has not completed). */
int colio_future_error(colio_future *fut, const char **message, int *errnum);

/* Where a write was placed (its reserved offset for appends). */
int colio_future_offset(colio_future *fut, int64_t *out);

/* Frees the future. If the operation is still running this waits for it,
 * so no buffer is written after free returns, and if a completion
 * callback is registered, for the callback to return, so its ctx is not
 * used after free returns. Called from inside another future's callback
 * (say, to free a whole batch), it runs this future's callback there, on
 * the notifier, if it has not run yet, and returns after it. Freeing a
 * future whose callback is running on the calling thread (from inside its
 * own callback, or from the callback that such a free ran) is COLIO_EINVAL
 * and frees nothing. Accepts NULL. */
int colio_future_free(colio_future *fut);

/* ---- Streams ---------------------------------------------------------- */

/* A sequential reader over a source that keeps depth buffers of
 * buffer_size bytes filled ahead of the reader by colio's workers (0 for
 * either takes the default: 1 MiB, 4 buffers). Reads start at offset at
 * once. Each buffer is filled as several pieces, so a reader waiting on a
 * slow source gets its first bytes before the whole buffer lands.
 * The source must outlive the stream: free the stream first (a stream
 * whose source was freed fails its next fill with COLIO_ECLOSED). */
int colio_stream_open(colio_source *src, int64_t offset, int64_t buffer_size, int64_t depth,
                      colio_stream **out);

/* Reads up to size bytes: waits until at least one byte is there, then
 * copies every byte already read ahead, up to size. *nread receives the
 * count: 0 only at the end of the source. A failure (an I/O error at some
 * offset) is returned after the bytes before it were delivered, and again
 * by every later read: errors are sticky. */
int colio_stream_read(colio_stream *stream, void *buf, int64_t size, int64_t *nread);

/* Moves the read position like lseek: whence is SEEK_SET (0), SEEK_CUR (1)
 * or SEEK_END (2). A forward seek into bytes already read ahead uses them;
 * any other seek drops the buffers and refills from the new position.
 * Seeking past the end is allowed (reads there return 0 bytes). *pos (may
 * be NULL) receives the new position. */
int colio_stream_seek(colio_stream *stream, int64_t offset, int whence, int64_t *pos);

/* The offset of the next byte colio_stream_read returns. */
int colio_stream_tell(colio_stream *stream, int64_t *pos);

/* Frees the stream. Safe while another thread waits in colio_stream_read
 * (that read fails with COLIO_ECLOSED); fills in flight are cancelled or
 * finish into buffers that are then freed. Accepts NULL. */
int colio_stream_free(colio_stream *stream);

/* ---- Device memory (CUDA) ----------------------------------------------- */

/* Streams for ordering a device transfer after the caller's GPU work, with
 * the values of __cuda_array_interface__ (v3) and the CUDA driver API. Any
 * other value is a CUstream / cudaStream_t of the buffer's context. */
#define COLIO_STREAM_NONE       ((uintptr_t)0) /* no ordering */
#define COLIO_STREAM_LEGACY     ((uintptr_t)1) /* the legacy default stream */
#define COLIO_STREAM_PER_THREAD ((uintptr_t)2) /* the calling thread's default stream */

/* 1 if this library is the CUDA build (libcolio_cuda.so), 0 if not. In the
 * CPU build (libcolio.so) every device call fails with COLIO_ENOTSUP and a
 * message that says how to get the CUDA build.
 *
 * WARNING: libcolio_cuda.so initialises the CUDA driver when it is loaded
 * and EXITS THE PROCESS (exit status 1) if cuInit fails: no driver, no
 * usable GPU. Load it only after checking, e.g. with dlopen("libcuda.so.1")
 * + cuInit(0) + cuDeviceGetCount() > 0; otherwise load libcolio.so. */
int colio_has_cuda(void);

/* Reads up to size bytes of src at offset into device memory at dev_ptr
 * (any CUDA device pointer: cudaMalloc, CuPy, PyTorch; its context is found
 * from the pointer). Like colio_read_async: a read across the end of the
 * source reads what exists (the future's byte count says how many); small
 * reads of fast sources complete before the call returns. The bytes go
 * through pinned bounce buffers (COLIO_BOUNCE_BUFFER_SIZE); colio
 * synchronises its own stream once, before the future completes, so the
 * data is on the device when colio_future_wait returns.
 * Ordered after the work queued on the legacy default stream before the
 * call; use the _stream variant to name another stream (or none). */
int colio_read_device_async(colio_source *src, void *dev_ptr, int64_t size, int64_t offset,
                            colio_future **out);
int colio_read_device_async_stream(colio_source *src, void *dev_ptr, int64_t size,
                                   int64_t offset, uintptr_t stream, colio_future **out);

/* Writes size bytes of device memory at dev_ptr to sink at offset, or, with
 * offset COLIO_APPEND, at the next append offset, reserved at the call like
 * colio_write_async's (colio_future_offset says where). colio's copies
 * start after the work queued on the given stream before the call (legacy
 * default stream for the short form), so data still being produced there
 * is written complete.
 *
 * Closing: colio_sink_free waits for every accepted device write, as for
 * host writes. colio_source_free during a device read lets the parts that
 * are running finish (each a task of COLIO_TASK_SIZE bytes) and fails the
 * parts that have not started with COLIO_ECLOSED. Freeing the device
 * memory before the future completes is undefined, as for host buffers. */
int colio_write_device_async(colio_sink *sink, const void *dev_ptr, int64_t size, int64_t offset,
                             colio_future **out);
int colio_write_device_async_stream(colio_sink *sink, const void *dev_ptr, int64_t size,
                                    int64_t offset, uintptr_t stream, colio_future **out);

#ifdef __cplusplus
}
#endif

#endif /* COLIO_H */
